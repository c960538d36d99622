"""Residual add fused with RMSNorm, in place: the pre-norm of every decoder layer after the first.

    s        = x.float() + residual.float()
    residual = s.to(residual.dtype)                                          (in place)
    x        = (s * rsqrt(mean(s ** 2, dim=-1) + eps) * weight.float()).to(x.dtype)   (in place)

Unfused, this is an add that writes the new residual and a norm that reads it back. One program
per row reads `x` and `residual` once and writes both once, and the variance is taken over the
fp32 sum (before it is rounded into `residual`), as sglang's `RMSNorm.forward_native` does. The
buffers are updated in place so the caller's residual stream needs no new allocation per layer.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import MAX_FUSED_SIZE, next_power_of_2, row_num_warps, use_triton

# The dtypes the kernel loads and stores; all are upcast to fp32 for the reduction.
_SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _fused_add_rmsnorm_kernel(
    x_ptr,  # [n_rows, n_cols], fp32/fp16/bf16, contiguous; read, then overwritten with the norm
    x_row_stride,  # elements between rows of x
    r_ptr,  # [n_rows, n_cols] residual, x's dtype, contiguous; overwritten with x + residual
    r_row_stride,  # elements between rows of residual
    w_ptr,  # [n_cols], fp32/fp16/bf16
    n_cols,  # hidden size
    eps,  # fp32 variance epsilon
    BLOCK_SIZE: tl.constexpr,  # next power of two >= n_cols
):
    pid = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x_row = x_ptr + pid * x_row_stride
    r_row = r_ptr + pid * r_row_stride

    # Both rows are fully loaded before either is written, so the in-place update is safe.
    x = tl.load(x_row + offsets, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_row + offsets, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    s = x + r
    tl.store(r_row + offsets, s.to(r_ptr.dtype.element_ty), mask=mask)
    rstd = tl.rsqrt(tl.sum(s * s, axis=0) / n_cols + eps)
    tl.store(x_row + offsets, (s * rstd * w).to(x_ptr.dtype.element_ty), mask=mask)



def fused_add_rmsnorm_ref(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pure-torch reference; returns new `(normed, new_residual)` and leaves its inputs alone."""
    s = x.to(torch.float32) + residual.to(torch.float32)
    new_residual = s.to(residual.dtype)
    s = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps)
    return (s * weight.to(torch.float32)).to(x.dtype), new_residual


def _validate(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    if x.dim() < 1:
        raise ValueError(
            f"fused_add_rmsnorm: x must have at least 1 dim [..., hidden], got {tuple(x.shape)}"
        )
    if residual.shape != x.shape:
        raise ValueError(
            f"fused_add_rmsnorm: residual must have x's shape {tuple(x.shape)}, "
            f"got {tuple(residual.shape)}"
        )
    if x.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"fused_add_rmsnorm: x must be fp32, fp16 or bf16, got {x.dtype}")
    if residual.dtype != x.dtype:
        raise ValueError(
            f"fused_add_rmsnorm: residual must have x's dtype {x.dtype}, got {residual.dtype}"
        )
    hidden = x.shape[-1]
    if weight.shape != (hidden,):
        raise ValueError(
            f"fused_add_rmsnorm: weight must have shape ({hidden},), got {tuple(weight.shape)}"
        )
    if weight.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(
            f"fused_add_rmsnorm: weight must be fp32, fp16 or bf16, got {weight.dtype}"
        )
    for name, t in (("residual", residual), ("weight", weight)):
        if t.device != x.device:
            raise ValueError(
                f"fused_add_rmsnorm: {name} must be on {x.device} like x, got {t.device}"
            )
    # Both are written in place through a flat [rows, hidden] view of their storage.
    for name, t in (("x", x), ("residual", residual)):
        if not t.is_contiguous():
            raise ValueError(
                f"fused_add_rmsnorm: {name} must be contiguous (it is updated in place), "
                f"got strides {t.stride()} for shape {tuple(t.shape)}"
            )
    if x.numel() > 0 and x.data_ptr() == residual.data_ptr():
        raise ValueError(
            "fused_add_rmsnorm: residual must not share x's storage (both are written)"
        )
    if not eps >= 0.0:
        raise ValueError(f"fused_add_rmsnorm: eps must be a non-negative float, got {eps!r}")


def fused_add_rmsnorm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6
) -> tuple[torch.Tensor, torch.Tensor]:
    """`residual += x; x = rmsnorm(residual) * weight`, both in place; returns `(x, residual)`.

    `x` and `residual` are contiguous `[..., hidden]` tensors of one dtype; `weight` is `[hidden]`.
    """
    _validate(x, residual, weight, eps)
    if x.numel() == 0:
        return x, residual
    hidden = x.shape[-1]
    if not use_triton(x, residual, weight) or hidden > MAX_FUSED_SIZE:
        # Rows wider than one fused block do not fit the one-program-per-row kernel.
        normed, new_residual = fused_add_rmsnorm_ref(x, residual, weight, eps)
        residual.copy_(new_residual)
        x.copy_(normed)
        return x, residual

    x2d = x.view(-1, hidden)
    r2d = residual.view(-1, hidden)
    block_size = next_power_of_2(hidden)
    _fused_add_rmsnorm_kernel[(x2d.shape[0],)](
        x2d,
        x2d.stride(0),
        r2d,
        r2d.stride(0),
        weight.contiguous(),
        hidden,
        float(eps),
        BLOCK_SIZE=block_size,
        num_warps=row_num_warps(block_size),
    )
    return x, residual


__all__ = ["fused_add_rmsnorm", "fused_add_rmsnorm_ref"]
