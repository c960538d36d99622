"""The runtime's RMSNorm layer, as upstream's (`python/sglang/srt/layers/layernorm.py`, 0.5.17).

`forward_native` is upstream's formula line for line: x (plus the residual, plus
`post_residual_addition`) summed in fp32, the **fp32 sum** normalized, then
`(x * weight).to(dtype)` -- one rounding after the weight multiply. Only with
`cast_x_before_out_mul=True` is it the Hugging Face order `weight * x.to(dtype)`.

`forward` routes as upstream's CUDA path (`forward_cuda`) does, onto this library's kernels:
- the default path is the package-level `rmsnorm` / `fused_add_rmsnorm` (upstream's
  `sgl_kernel` ops: the fp32 sum normalized and multiplied by the weight in fp32, one rounding),
  the latter updating `x` and `residual` in place and returning them;
- `cast_x_before_out_mul=True` takes the Hugging Face kernels (`rmsnorm_hf`, and the JIT
  `norm.fused_add_rmsnorm` in its cast mode) only where upstream does: fp16/bf16 activations,
  a weight of their dtype, a hidden size upstream's `is_supported_*` predicate accepts;
- everything else (`var_hidden_size`, other dtypes or shapes) is `forward_native`, as upstream.

Where upstream's CUDA path would drop a flag, `forward` sends the call to `forward_native`
instead, so a flag is never ignored: `fp32_residual` with a residual (upstream's fused kernel
returns the residual in x's dtype) and an `override_orig_dtype` other than x's (its kernels
return x's dtype). `x_pad_to_multiple` is upstream's aiter (ROCm) padded-output path only; a
value other than 0 raises `NotImplementedError` rather than being ignored. 0.5.23 appended
`force_native` (every call takes `forward_native`); it is accepted here in that place.
"""

from __future__ import annotations

from typing import Optional, Union

import torch
from torch import nn

from sglang.kernels.ops.layernorm import (
    fused_add_rmsnorm,
    is_supported_jit_fused_add_rmsnorm_hidden_size,
    is_supported_rmsnorm_hf_hidden_size,
    rmsnorm,
    rmsnorm_hf,
)
from sglang.kernels.ops.layernorm.norm import fused_add_rmsnorm as _jit_fused_add_rmsnorm

# The activation dtypes upstream's Hugging Face kernels take (both `cast_x_before_out_mul` paths).
_HF_KERNEL_DTYPES = (torch.float16, torch.bfloat16)
# The dtypes this library's default-path kernels load (a superset of upstream's fp16/bf16).
_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

Output = Union[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]


def _empty(x: torch.Tensor, residual, post_residual_addition) -> Output:
    """Upstream's early return for an empty batch: nothing launched, the residual still summed."""
    if residual is None:
        return x
    if post_residual_addition is not None:
        residual = residual + post_residual_addition
    return x, residual


class RMSNorm(nn.Module):
    """Root-mean-square norm over the last dim with a per-channel `weight` (upstream's parameters, in its order)."""

    def __init__(
        self,
        hidden_size: int,
        eps: float = 1e-6,
        var_hidden_size: Optional[int] = None,
        cast_x_before_out_mul: bool = False,
        fp32_residual: bool = False,
        has_weight: bool = True,
        weight_dtype: Optional[torch.dtype] = None,
        override_orig_dtype: Optional[torch.dtype] = None,
        x_pad_to_multiple: int = 0,
        force_native: bool = False,
    ) -> None:
        super().__init__()
        if x_pad_to_multiple != 0:
            raise NotImplementedError(
                f"RMSNorm: x_pad_to_multiple={x_pad_to_multiple!r} pads the output on upstream's "
                "aiter (ROCm) path only, which this library does not have; pass 0 and pad after"
            )
        self.has_weight = has_weight
        self.cast_x_before_out_mul = cast_x_before_out_mul
        self.fp32_residual = fp32_residual
        self.override_orig_dtype = override_orig_dtype
        if self.has_weight:
            self.weight = nn.Parameter(torch.ones(hidden_size, dtype=weight_dtype))
        else:
            # Upstream's choice: a plain tensor attribute, neither a parameter nor a buffer.
            self.weight = torch.ones(hidden_size, dtype=weight_dtype)
        self.variance_epsilon = eps
        self.hidden_size = hidden_size
        self.variance_size_override = None if var_hidden_size == hidden_size else var_hidden_size
        self.x_pad_to_multiple = x_pad_to_multiple
        self.force_native = force_native  # 0.5.23's addition: every call takes forward_native

    def forward(
        self,
        x: torch.Tensor,
        residual: Optional[torch.Tensor] = None,
        post_residual_addition: Optional[torch.Tensor] = None,
    ) -> Output:
        if self.force_native:  # upstream binds forward_native as the forward method
            return self.forward_native(x, residual, post_residual_addition)
        if x.numel() == 0:
            return _empty(x, residual, post_residual_addition)
        if self.variance_size_override is not None or self._flag_needs_native(x, residual):
            return self.forward_native(x, residual, post_residual_addition)
        if self.cast_x_before_out_mul:
            return self._forward_hf(x, residual, post_residual_addition)
        return self._forward_default(x, residual, post_residual_addition)

    def _flag_needs_native(self, x: torch.Tensor, residual: Optional[torch.Tensor]) -> bool:
        """Flags the kernels cannot honour (upstream's CUDA kernels would drop them)."""
        if self.override_orig_dtype is not None and self.override_orig_dtype != x.dtype:
            return True
        return residual is not None and self.fp32_residual

    def _forward_default(self, x, residual, post_residual_addition) -> Output:
        """The default order: upstream's `sgl_kernel.rmsnorm` / `fused_add_rmsnorm` (in place)."""
        weight = self.weight.data
        if not self._default_kernel_takes(x, residual):
            return self.forward_native(x, residual, post_residual_addition)
        if residual is None:
            return rmsnorm(x, weight, self.variance_epsilon)
        # Upstream adds post_residual_addition to the residual first (its TODO says why).
        if post_residual_addition is not None:
            residual = residual + post_residual_addition
        fused_add_rmsnorm(x, residual, weight, self.variance_epsilon)
        return x, residual

    def _default_kernel_takes(self, x, residual) -> bool:
        """Whether the default-path kernels take these tensors (else `forward_native`)."""
        weight = self.weight.data
        if x.dtype not in _KERNEL_DTYPES or weight.dtype not in _KERNEL_DTYPES:
            return False
        if x.shape[-1] != self.hidden_size:
            return False  # forward_native raises upstream's "Expected hidden_size" error
        if residual is None:
            return True
        # A residual of another shape goes to the kernel, whose check names it before any write.
        return residual.dtype == x.dtype and x.is_contiguous() and residual.is_contiguous()

    def _forward_hf(self, x, residual, post_residual_addition) -> Output:
        """`cast_x_before_out_mul=True`: upstream's Hugging Face kernels, under upstream's conditions."""
        weight = self.weight.data
        if residual is None:
            if self._hf_dtypes(x) and is_supported_rmsnorm_hf_hidden_size(x.shape[-1]):
                return rmsnorm_hf(x, weight, self.variance_epsilon)
            return self.forward_native(x, None, None)
        if not self._hf_fused_add_takes(x, residual, post_residual_addition):
            return self.forward_native(x, residual, post_residual_addition)
        if post_residual_addition is not None:
            residual = residual + post_residual_addition
        _jit_fused_add_rmsnorm(x, residual, weight, self.variance_epsilon, cast_x_before_out_mul=True)
        return x, residual

    def _hf_dtypes(self, x: torch.Tensor) -> bool:
        """Upstream's dtype condition for its HF kernels: fp16/bf16, and a weight of that dtype."""
        return x.dtype in _HF_KERNEL_DTYPES and self.weight.dtype == x.dtype

    def _hf_fused_add_takes(self, x, residual, post_residual_addition) -> bool:
        """Upstream's conditions for its JIT fused add in the HF order, plus this kernel's own."""
        return (
            self._hf_dtypes(x)
            and (post_residual_addition is None or post_residual_addition.dtype == x.dtype)
            and is_supported_jit_fused_add_rmsnorm_hidden_size(x.shape[-1])
            and residual.dtype == x.dtype
            and x.is_contiguous()
            and residual.is_contiguous()
        )

    def forward_native(
        self,
        x: torch.Tensor,
        residual: Optional[torch.Tensor] = None,
        post_residual_addition: Optional[torch.Tensor] = None,
    ) -> Output:
        """Upstream's `forward_native`, statement for statement; returns new tensors."""
        if not x.is_contiguous():
            x = x.contiguous()
        orig_dtype = self.override_orig_dtype or x.dtype
        x = x.to(torch.float32)
        if residual is not None:
            x = x + residual.to(torch.float32)
            if post_residual_addition is not None:
                x = x + post_residual_addition.to(torch.float32)
            if self.fp32_residual:
                residual = x.clone()
            else:
                residual = x.to(orig_dtype)

        variance = self._variance_input(x).pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.variance_epsilon)

        if self.cast_x_before_out_mul:
            x = self.weight * x.to(orig_dtype)
        else:
            x = (x * self.weight).to(orig_dtype)

        if residual is None:
            return x
        return x, residual

    def _variance_input(self, x: torch.Tensor) -> torch.Tensor:
        """The columns the variance is taken over (upstream's checks and messages)."""
        hidden_size = x.shape[-1]
        if hidden_size != self.hidden_size:
            raise ValueError(f"Expected hidden_size to be {self.hidden_size}, but found: {hidden_size}")
        if self.variance_size_override is None:
            return x
        if hidden_size < self.variance_size_override:
            raise ValueError(
                "Expected hidden_size to be at least "
                f"{self.variance_size_override}, but found: {hidden_size}"
            )
        return x[..., : self.variance_size_override]

    def extra_repr(self) -> str:
        return f"{self.hidden_size}, eps={self.variance_epsilon}"


__all__ = ["RMSNorm"]
