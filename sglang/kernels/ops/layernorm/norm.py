"""Residual add fused with RMSNorm, in place: the pre-norm of every decoder layer after the first.

    s        = input.float() + residual.float()
    residual = round(s)                                                         (in place)
    rstd     = rsqrt(mean(s ** 2, dim=-1) + eps)               (over the fp32 sum s)
    input    = round(round(s).float() * weight * rstd)          cast_x_before_out_mul=False
    input    = round(round(s * rstd).float() * weight)          cast_x_before_out_mul=True   (in place)
    input    = round(s * rstd * weight)                          the fp32-sum mode (below)

upstream 0.5.17's `fused_add_rmsnorm.cuh`, both modes: by default the normalized value is the
*rounded* residual (what the next layer reads back), scaled by an rstd taken over the fp32 sum;
`cast_x_before_out_mul=True` is the Hugging Face order (`LlamaRMSNorm`: round the normalized
fp32 sum to the activation dtype, then apply the weight), which the runtime uses for models
checked against transformers. The two disagree on about a fifth of bf16 outputs.

A third mode, the fp32-sum mode, is what upstream's runtime `RMSNorm` computes by default
(`forward_native`, and `sgl_kernel.fused_add_rmsnorm` on its CUDA path): the fp32 sum itself is
normalized and multiplied by the weight in fp32 before the one rounding. `fused_add_rmsnorm`
here keeps the JIT kernel's two modes (its name and signature are upstream's `norm.py`); the
package-level `sglang.kernels.ops.layernorm.fused_add_rmsnorm` (`rmsnorm_op.py`, upstream's
0.5.17 op) launches this kernel in the fp32-sum mode through `launch_fused_add_rmsnorm`.

Unfused, this is an add that writes the new residual and a norm that reads it back. One program
per row reads `input` and `residual` once and writes both once; the buffers are updated in place
so the residual stream needs no allocation per layer. Registered as `sglang::fused_add_rmsnorm`.

Differs from upstream: upstream's CUDA kernel takes 2-D fp16/bf16 input with a weight of the same
dtype and hidden sizes that are multiples of 16 up to 8192; this Triton kernel also takes fp32,
`[..., hidden]` input, a weight of another float dtype, and any hidden size up to 16384
(`fits_one_block`). `is_supported_jit_fused_add_rmsnorm_hidden_size` answers as upstream's does
(multiples of 16 up to 8192), so upstream's routing picks the same path here as there. The
rounding of both modes is upstream's. Three public helpers upstream does not have serve the
package-level op in `rmsnorm_op.py`, which launches this kernel in the fp32-sum mode:
`fits_one_block` (the row limit), `validate_fused_add_rmsnorm` (the checks before any launch)
and `launch_fused_add_rmsnorm` (the launch in any of the three modes).
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
    NORMALIZE_FP32_SUM: tl.constexpr,  # upstream RMSNorm's default order (see the docstring)
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
    elif NORMALIZE_FP32_SUM:
        y = (s * rstd) * w
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
    normalize_fp32_sum: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pure-torch reference; returns new `(normed, new_residual)` and leaves its inputs alone.

    `normalize_fp32_sum=True` is the fp32-sum mode (upstream `RMSNorm.forward_native`'s order);
    upstream's `norm.fused_add_rmsnorm` has no such parameter, hence keyword-only and only here.
    """
    s = input.to(torch.float32) + residual.to(torch.float32)
    new_residual = s.to(residual.dtype)
    rstd = torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps)
    if cast_x_before_out_mul:
        y = (s * rstd).to(input.dtype).to(torch.float32) * weight.to(torch.float32)
    elif normalize_fp32_sum:
        y = (s * rstd) * weight.to(torch.float32)
    else:
        y = new_residual.to(torch.float32) * weight.to(torch.float32) * rstd
    return y.to(input.dtype), new_residual


def is_supported_jit_fused_add_rmsnorm_hidden_size(hidden_size: int) -> bool:
    """Upstream's answer, as its `norm.py` (0.5.17 and 0.5.23) gives it: a multiple of 16 in (0, 8192].

    The name is upstream's, so the answer is too: code written for upstream routes on it (the
    runtime `RMSNorm` sends other sizes to `forward_native`). The Triton kernel takes more sizes
    (`fits_one_block`); those are an extension nobody is routed to by this name.
    """
    return hidden_size > 0 and hidden_size % 16 == 0 and hidden_size <= 8192


def fits_one_block(hidden_size: int) -> bool:
    """Whether this Triton kernel takes rows of `hidden_size`: one row must fit one program's block."""
    return 0 < hidden_size <= MAX_FUSED_SIZE


def _launch_row_norm(kernel, input: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor) -> None:
    """Run a one-row-per-program normalization `kernel(y, y_row_stride, x, x_row_stride, w, n_cols,
    eps, BLOCK_SIZE)` over `input` [..., hidden] into `out`: the layout work the plain rmsnorm
    ops share (a strided row becomes contiguous; a non-contiguous `out` gets a buffer copied back)."""
    hidden = input.shape[-1]
    x2d = input.reshape(-1, hidden)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    y2d = out.view(-1, hidden) if out.is_contiguous() else None
    target = y2d if y2d is not None else torch.empty(x2d.shape, dtype=out.dtype, device=out.device)
    block_size = next_power_of_2(hidden)
    kernel[(x2d.shape[0],)](
        target,
        target.stride(0),
        x2d,
        x2d.stride(0),
        weight.contiguous(),
        hidden,
        float(eps),
        BLOCK_SIZE=block_size,
        num_warps=row_num_warps(block_size),
    )
    if y2d is None:
        out.copy_(target.view(out.shape))


def validate_fused_add_rmsnorm(
    input, residual, weight, eps, op: str = "fused_add_rmsnorm", *, row_limit: bool = True
) -> None:
    """The checks every entry point to this kernel runs before any launch; `op` names the caller.

    `row_limit=False` is for a caller that takes rows longer than one block (the op then runs
    the reference formula for them, as it does where Triton cannot run).
    """
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
    if row_limit and input.numel() and not fits_one_block(hidden):
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
    normalize_fp32_sum: bool,
) -> None:
    # Storage identity is a host fact (no device read), checked here because tracing cannot.
    if input.untyped_storage().data_ptr() == residual.untyped_storage().data_ptr():
        raise ValueError("fused_add_rmsnorm: residual must not share input's storage (both are written)")
    hidden = input.shape[-1]
    if not use_triton(input, residual, weight) or not fits_one_block(hidden):
        # No Triton on this device (a CPU without the interpreter), or a row longer than one
        # block (only the package-level op lets one through): the reference, in place.
        normed, new_residual = fused_add_rmsnorm_ref(
            input,
            residual,
            weight,
            eps,
            cast_x_before_out_mul=cast_x_before_out_mul,
            normalize_fp32_sum=normalize_fp32_sum,
        )
        residual.copy_(new_residual)
        input.copy_(normed)
        return
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
        NORMALIZE_FP32_SUM=normalize_fp32_sum,
        BLOCK_SIZE=block_size,
        num_warps=row_num_warps(block_size),
    )


@_fused_add_rmsnorm_op.register_fake
def _(input, residual, weight, eps, cast_x_before_out_mul, normalize_fp32_sum) -> None:
    return None


def launch_fused_add_rmsnorm(
    input: torch.Tensor,
    residual: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    *,
    cast_x_before_out_mul: bool,
    normalize_fp32_sum: bool,
) -> None:
    """Launch in any of the three modes on inputs `validate_fused_add_rmsnorm` accepted."""
    if input.numel() == 0:
        return
    _fused_add_rmsnorm_op(
        input, residual, weight, float(eps), bool(cast_x_before_out_mul), bool(normalize_fp32_sum)
    )


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
    validate_fused_add_rmsnorm(input, residual, weight, eps)
    launch_fused_add_rmsnorm(
        input,
        residual,
        weight,
        eps,
        cast_x_before_out_mul=cast_x_before_out_mul,
        normalize_fp32_sum=False,
    )


__all__ = [
    "fits_one_block",
    "fused_add_rmsnorm",
    "fused_add_rmsnorm_ref",
    "is_supported_jit_fused_add_rmsnorm_hidden_size",
    "launch_fused_add_rmsnorm",
    "validate_fused_add_rmsnorm",
]
