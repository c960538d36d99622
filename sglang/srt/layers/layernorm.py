"""The runtime's RMSNorm layer: parameters here, the arithmetic in `sglang.kernels.ops.layernorm`.

`RMSNorm.forward(x)` is the Hugging Face RMSNorm (`rmsnorm_hf`); `RMSNorm.forward(x, residual)`
is the decoder's fused residual add + norm (`fused_add_rmsnorm`, with this layer's
`cast_x_before_out_mul`), which updates `x` and `residual` in place and returns them. Shapes or
dtypes the kernels do not take (their `is_supported_*` predicates, a weight of another dtype for
the fused add) go to `forward_native`, as upstream's layer does. `forward_native` is the same
computation in plain torch, rounding exactly as each kernel does.
"""

from __future__ import annotations

import torch
from torch import nn

from sglang.kernels.ops.layernorm import (
    fused_add_rmsnorm,
    is_supported_jit_fused_add_rmsnorm_hidden_size,
    is_supported_rmsnorm_hf_hidden_size,
    rmsnorm_hf,
)

# The activation dtypes the kernels take.
_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


class RMSNorm(nn.Module):
    """Root-mean-square norm over the last dim with a learned per-channel `weight`."""

    def __init__(
        self,
        hidden_size: int,
        eps: float = 1e-6,
        params_dtype: torch.dtype | None = None,
        *,
        cast_x_before_out_mul: bool = False,
    ) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.variance_epsilon = eps
        self.cast_x_before_out_mul = cast_x_before_out_mul
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=params_dtype))

    def forward(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        weight = self.weight.data
        if residual is None:
            if x.dtype in _KERNEL_DTYPES and is_supported_rmsnorm_hf_hidden_size(x.shape[-1]):
                return rmsnorm_hf(x, weight, self.variance_epsilon)
            return self.forward_native(x)
        if (
            x.dtype in _KERNEL_DTYPES
            and weight.dtype == x.dtype
            and is_supported_jit_fused_add_rmsnorm_hidden_size(x.shape[-1])
        ):
            fused_add_rmsnorm(
                x,
                residual,
                weight,
                self.variance_epsilon,
                cast_x_before_out_mul=self.cast_x_before_out_mul,
            )
            return x, residual
        x_out, residual_out = self.forward_native(x, residual)
        residual.copy_(residual_out)
        x.copy_(x_out)
        return x, residual

    def forward_native(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Plain torch; with `residual` it returns new tensors instead of updating in place."""
        orig_dtype = x.dtype
        x = x.to(torch.float32)
        if residual is None:
            # Hugging Face order: round the normalized row back, then apply the weight.
            variance = x.pow(2).mean(dim=-1, keepdim=True)
            x = x * torch.rsqrt(variance + self.variance_epsilon)
            return self.weight * x.to(orig_dtype)
        x = x + residual.to(torch.float32)
        residual = x.to(residual.dtype)
        rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.variance_epsilon)
        weight = self.weight.to(torch.float32)
        if self.cast_x_before_out_mul:
            out = (x * rstd).to(orig_dtype).to(torch.float32) * weight
        else:  # the rounded residual, normalized by the rstd of the fp32 sum (the kernel's default)
            out = residual.to(torch.float32) * weight * rstd
        return out.to(orig_dtype), residual

    def extra_repr(self) -> str:
        return f"{self.hidden_size}, eps={self.variance_epsilon}"


__all__ = ["RMSNorm"]
