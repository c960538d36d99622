"""Upstream 0.5.17's package-level `rmsnorm` and `fused_add_rmsnorm`: RMSNorm as sglang's runtime computes it.

    s   = input.float()                       (+ residual.float() for the fused add)
    rstd = rsqrt(mean(s ** 2, dim=-1) + eps)
    out = round(s * rstd * weight.float())    one rounding, after the weight multiply in fp32

This is `RMSNorm.forward_native` of upstream's runtime layer and what its CUDA path runs
(`sgl_kernel.rmsnorm` / `sgl_kernel.fused_add_rmsnorm`); upstream 0.5.17 binds these two names
in `sglang.kernels.ops.layernorm` with the signatures below (`RMSNormOp` / `FusedAddRMSNormOp`),
so the names here mean what they mean there. The Hugging Face order (round, then multiply) is
`rmsnorm_hf`; the JIT kernel's own two orders are `norm.fused_add_rmsnorm`.

`rmsnorm` is one program per row, the whole row in registers: one read of `x`, one write of `y`.
`fused_add_rmsnorm` launches `norm.py`'s kernel in its fp32-sum mode (in place: `residual`
becomes the rounded sum, `input` the norm).

Differs from upstream: upstream's backends take fp16/bf16; these also take fp32 and a weight of
another float dtype (the product is in fp32 either way; the output has `input`'s dtype, as
upstream's `forward_native` gives). `enable_pdl` (programmatic dependent launch, a Hopper launch
ordering) is accepted and has no effect: upstream honours it on its AOT backend only, and it
does not change a value. Rows longer than one Triton block (`fits_one_block`) are computed by
the torch formula above inside the same custom op, for both ops (upstream's CUDA kernels take any
size).
"""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import use_triton
from sglang.kernels.ops.layernorm.norm import (
    _launch_row_norm,
    fits_one_block,
    launch_fused_add_rmsnorm,
    validate_fused_add_rmsnorm,
)

# The dtypes the kernel loads and stores; all are upcast to fp32 for the reduction.
_SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _rmsnorm_kernel(
    y_ptr,  # [n_rows, n_cols], x's dtype, last dim contiguous
    y_row_stride,  # elements between rows of y
    x_ptr,  # [n_rows, n_cols], fp32/fp16/bf16, last dim contiguous
    x_row_stride,  # elements between rows of x
    w_ptr,  # [n_cols], fp32/fp16/bf16
    n_cols,  # hidden size
    eps,  # fp32 variance epsilon
    BLOCK_SIZE: tl.constexpr,  # next power of two >= n_cols
):
    pid = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols

    x = tl.load(x_ptr + pid.to(tl.int64) * x_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    # Normalize, multiply by the weight in fp32, round once (upstream's forward_native order).
    y = (x * rstd) * w
    tl.store(y_ptr + pid.to(tl.int64) * y_row_stride + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def _rmsnorm_torch(input: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x = input.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (x * weight.to(torch.float32)).to(input.dtype)


def rmsnorm_ref(
    input: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
    enable_pdl: Optional[bool] = None,
) -> torch.Tensor:
    """Pure-torch reference: upstream 0.5.17's `RMSNormOp.forward_native` (into `out` when given)."""
    result = _rmsnorm_torch(input, weight, eps)
    if out is None:
        return result
    out.copy_(result)
    return out


def fused_add_rmsnorm_ref(
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    enable_pdl: Optional[bool] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pure-torch reference of the fused add; returns new `(normed, new_residual)`, inputs untouched.

    Upstream's `FusedAddRMSNormOp.forward_native` computes this and writes it in place.
    """
    acc = input.to(torch.float32) + residual.to(torch.float32)
    normed = acc * torch.rsqrt(acc.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.to(torch.float32)).to(input.dtype), acc.to(residual.dtype)


def _check_tensor(op: str, name: str, t) -> None:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")  # noqa: TRY004


def _check_enable_pdl(op: str, enable_pdl) -> None:
    if enable_pdl is not None and not isinstance(enable_pdl, bool):
        raise ValueError(f"{op}: enable_pdl must be None or a bool, got {enable_pdl!r}")


def _validate_out(op: str, input: torch.Tensor, out) -> None:
    if out is None:
        return
    _check_tensor(op, "out", out)
    if out.shape != input.shape or out.dtype != input.dtype or out.device != input.device:
        raise ValueError(
            f"{op}: out must be {tuple(input.shape)} {input.dtype} on {input.device}, "
            f"got {tuple(out.shape)} {out.dtype} on {out.device}"
        )


def _validate_rmsnorm(input, weight, eps, out, enable_pdl) -> None:
    op = "rmsnorm"
    _check_tensor(op, "input", input)
    _check_tensor(op, "weight", weight)
    if input.dim() < 1:
        raise ValueError(f"{op}: input must have at least 1 dim [..., hidden], got {tuple(input.shape)}")
    if input.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"{op}: input must be fp32, fp16 or bf16, got {input.dtype}")
    if weight.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"{op}: weight must be fp32, fp16 or bf16, got {weight.dtype}")
    hidden = input.shape[-1]
    if weight.shape != (hidden,):
        raise ValueError(f"{op}: weight must have shape ({hidden},), got {tuple(weight.shape)}")
    if weight.device != input.device:
        raise ValueError(f"{op}: weight must be on {input.device} like input, got {weight.device}")
    _validate_out(op, input, out)
    if not isinstance(eps, (int, float)) or not eps >= 0.0:
        raise ValueError(f"{op}: eps must be a non-negative float, got {eps!r}")
    _check_enable_pdl(op, enable_pdl)


@torch.library.custom_op("sglang::rmsnorm", mutates_args=("out",))
def _rmsnorm_op(input: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor) -> None:
    hidden = input.shape[-1]
    if not use_triton(input, weight, out) or not fits_one_block(hidden):
        # No Triton on this device, or a row longer than one block: the same formula in torch.
        out.copy_(_rmsnorm_torch(input, weight, eps))
        return
    _launch_row_norm(_rmsnorm_kernel, input, weight, eps, out)


@_rmsnorm_op.register_fake
def _(input, weight, eps, out) -> None:
    return None


def rmsnorm(
    input: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
    enable_pdl: Optional[bool] = None,
) -> torch.Tensor:
    """RMS normalization `out = round(input / RMS(input) * weight)` of `input` [..., hidden]; returns `out`.

    upstream 0.5.17's `sglang.kernels.ops.layernorm.rmsnorm`: `out` (optional) has `input`'s
    shape and dtype; otherwise a new tensor. Empty inputs launch nothing.
    """
    _validate_rmsnorm(input, weight, eps, out, enable_pdl)
    if out is None:
        out = torch.empty_like(input, memory_format=torch.contiguous_format)
    if input.numel() == 0:
        return out
    _rmsnorm_op(input, weight, float(eps), out)
    return out


def fused_add_rmsnorm(
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    enable_pdl: Optional[bool] = None,
) -> None:
    """`residual = input + residual; input = rmsnorm(fp32 sum) * weight`, both in place; returns None.

    upstream 0.5.17's `sglang.kernels.ops.layernorm.fused_add_rmsnorm`: the fp32 sum (not the
    rounded residual) is normalized, and the weight multiply is in fp32 before one rounding.
    `input` and `residual` are contiguous `[..., hidden]` of one dtype.
    """
    validate_fused_add_rmsnorm(input, residual, weight, eps, row_limit=False)
    _check_enable_pdl("fused_add_rmsnorm", enable_pdl)
    launch_fused_add_rmsnorm(
        input, residual, weight, eps, cast_x_before_out_mul=False, normalize_fp32_sum=True
    )


__all__ = ["fused_add_rmsnorm", "fused_add_rmsnorm_ref", "rmsnorm", "rmsnorm_ref"]
