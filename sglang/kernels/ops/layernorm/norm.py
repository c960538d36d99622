"""Residual add fused with RMSNorm, in place: the pre-norm of every decoder layer after the first.

    s        = input.float() + residual.float()
    residual = round(s)                                                         (in place)
    rstd     = rsqrt(mean(s ** 2, dim=-1) + eps)               (over the fp32 sum s)
    input    = round(round(s).float() * weight * rstd)          cast_x_before_out_mul=False
    input    = round(round(s * rstd).float() * weight)          cast_x_before_out_mul=True   (in place)

upstream 0.5.17's `fused_add_rmsnorm.cuh`, both modes: by default the normalized value is the
*rounded* residual (what the next layer reads back), scaled by an rstd taken over the fp32 sum;
`cast_x_before_out_mul=True` is the Hugging Face order (`LlamaRMSNorm`: round the normalized
fp32 sum to the activation dtype, then apply the weight), which the runtime uses for models
checked against transformers. The two disagree on about a fifth of bf16 outputs.

Unfused, this is an add that writes the new residual and a norm that reads it back. One program
per row reads `input` and `residual` once and writes both once; the buffers are updated in place
so the residual stream needs no allocation per layer. Registered as `sglang::fused_add_rmsnorm`.

Differs from upstream: upstream's CUDA kernel takes 2-D fp16/bf16 input with a weight of the same
dtype and hidden sizes that are multiples of 16 up to 8192; this Triton kernel also takes fp32,
`[..., hidden]` input, a weight of another float dtype, and any hidden size up to 16384, which
`is_supported_jit_fused_add_rmsnorm_hidden_size` reports. The rounding of both modes is upstream's.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import MAX_FUSED_SIZE, next_power_of_2, row_num_warps, use_triton

# The dtypes the kernel loads and stores; all are upcast to fp32 for the reduction. A superset of
# upstream's (fp16/bf16), so the predicate below only bounds the hidden size.
_SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _fused_add_rmsnorm_kernel(
    x_ptr,  # [n_rows, n_cols] input, fp32/fp16/bf16; read, then overwritten with the norm
    x_row_stride,  # elements between rows of input
    r_ptr,  # [n_rows, n_cols] residual, input's dtype; overwritten with round(input + residual)
    r_row_stride,  # elements between rows of residual
    w_ptr,  # [n_cols] weight, fp32/fp16/bf16
    n_cols,  # hidden size
    eps,  # fp32 variance epsilon
    CAST_X_BEFORE_OUT_MUL: tl.constexpr,  # Hugging Face order (see the module docstring)
    BLOCK_SIZE: tl.constexpr,  # next power of two >= n_cols
):
    pid = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    x_row = x_ptr + pid.to(tl.int64) * x_row_stride
    r_row = r_ptr + pid.to(tl.int64) * r_row_stride

    # Both rows are fully loaded before either is written, so the in-place update is safe.
    x = tl.load(x_row + offsets, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(r_row + offsets, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    s = x + r
    s_rounded = s.to(r_ptr.dtype.element_ty)
    tl.store(r_row + offsets, s_rounded, mask=mask)
    rstd = tl.rsqrt(tl.sum(s * s, axis=0) / n_cols + eps)
    if CAST_X_BEFORE_OUT_MUL:
        y = (s * rstd).to(x_ptr.dtype.element_ty).to(tl.float32) * w
    else:
        y = s_rounded.to(tl.float32) * w * rstd
    tl.store(x_row + offsets, y.to(x_ptr.dtype.element_ty), mask=mask)


def fused_add_rmsnorm_ref(
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    cast_x_before_out_mul: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pure-torch reference; returns new `(normed, new_residual)` and leaves its inputs alone."""
    s = input.to(torch.float32) + residual.to(torch.float32)
    new_residual = s.to(residual.dtype)
    rstd = torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps)
    if cast_x_before_out_mul:
        y = (s * rstd).to(input.dtype).to(torch.float32) * weight.to(torch.float32)
    else:
        y = new_residual.to(torch.float32) * weight.to(torch.float32) * rstd
    return y.to(input.dtype), new_residual


def is_supported_jit_fused_add_rmsnorm_hidden_size(hidden_size: int) -> bool:
    """Whether the kernel takes rows of `hidden_size`: one row must fit one program's block."""
    return 0 < hidden_size <= MAX_FUSED_SIZE


def _validate(input, residual, weight, eps) -> None:
    op = "fused_add_rmsnorm"
    for name, t in (("input", input), ("residual", residual), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(  # noqa: TRY004 - validation raises ValueError only
                f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}"
            )
    if input.dim() < 1:
        raise ValueError(f"{op}: input must have at least 1 dim [..., hidden], got {tuple(input.shape)}")
    if residual.shape != input.shape:
        raise ValueError(
            f"{op}: residual must have input's shape {tuple(input.shape)}, got {tuple(residual.shape)}"
        )
    if input.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"{op}: input must be fp32, fp16 or bf16, got {input.dtype}")
    if residual.dtype != input.dtype:
        raise ValueError(f"{op}: residual must have input's dtype {input.dtype}, got {residual.dtype}")
    hidden = input.shape[-1]
    if weight.shape != (hidden,):
        raise ValueError(f"{op}: weight must have shape ({hidden},), got {tuple(weight.shape)}")
    if weight.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"{op}: weight must be fp32, fp16 or bf16, got {weight.dtype}")
    for name, t in (("residual", residual), ("weight", weight)):
        if t.device != input.device:
            raise ValueError(f"{op}: {name} must be on {input.device} like input, got {t.device}")
    # Both are written in place through a flat [rows, hidden] view of their storage.
    for name, t in (("input", input), ("residual", residual)):
        if not t.is_contiguous():
            raise ValueError(
                f"{op}: {name} must be contiguous (it is updated in place), "
                f"got strides {t.stride()} for shape {tuple(t.shape)}"
            )
    if input.numel() and not is_supported_jit_fused_add_rmsnorm_hidden_size(hidden):
        raise ValueError(
            f"{op}: hidden size {hidden} exceeds the kernel's row limit {MAX_FUSED_SIZE} "
            "(check `is_supported_jit_fused_add_rmsnorm_hidden_size` and use the torch path)"
        )
    if not isinstance(eps, (int, float)) or not eps >= 0.0:
        raise ValueError(f"{op}: eps must be a non-negative float, got {eps!r}")


@torch.library.custom_op("sglang::fused_add_rmsnorm", mutates_args=("input", "residual"))
def _fused_add_rmsnorm_op(
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    cast_x_before_out_mul: bool,
) -> None:
    # Storage identity is a host fact (no device read), checked here because tracing cannot.
    if input.untyped_storage().data_ptr() == residual.untyped_storage().data_ptr():
        raise ValueError("fused_add_rmsnorm: residual must not share input's storage (both are written)")
    if not use_triton(input, residual, weight):
        # No Triton on this device (a CPU without the interpreter): the reference, in place.
        normed, new_residual = fused_add_rmsnorm_ref(
            input, residual, weight, eps, cast_x_before_out_mul=cast_x_before_out_mul
        )
        residual.copy_(new_residual)
        input.copy_(normed)
        return
    hidden = input.shape[-1]
    x2d = input.view(-1, hidden)
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
        CAST_X_BEFORE_OUT_MUL=cast_x_before_out_mul,
        BLOCK_SIZE=block_size,
        num_warps=row_num_warps(block_size),
    )


@_fused_add_rmsnorm_op.register_fake
def _(input, residual, weight, eps, cast_x_before_out_mul) -> None:
    return None


def fused_add_rmsnorm(
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    cast_x_before_out_mul: bool = False,
) -> None:
    """`residual = input + residual; input = rmsnorm(residual) * weight`, both in place; returns None.

    upstream's contract: `input` and `residual` are contiguous `[..., hidden]` of one dtype (here
    fp32/fp16/bf16; upstream fp16/bf16), `weight` is `[hidden]`; see the module docstring for
    the two rounding orders `cast_x_before_out_mul` picks between.
    """
    _validate(input, residual, weight, eps)
    if input.numel() == 0:
        return None
    _fused_add_rmsnorm_op(input, residual, weight, float(eps), bool(cast_x_before_out_mul))
    return None


__all__ = [
    "fused_add_rmsnorm",
    "fused_add_rmsnorm_ref",
    "is_supported_jit_fused_add_rmsnorm_hidden_size",
]
