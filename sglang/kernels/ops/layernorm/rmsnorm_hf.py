"""RMSNorm exactly as Hugging Face's `LlamaRMSNorm` computes it.

    x_normed = input.float() * rsqrt(mean(input.float() ** 2, dim=-1) + eps)
    out      = weight * x_normed.to(input.dtype)

The normalized row is rounded back to the input dtype BEFORE the weight is applied, and the
product is taken in `torch.promote_types(x.dtype, weight.dtype)`. sglang's own `RMSNorm` (and
`fused_add_rmsnorm` in `norm.py`) multiplies by the weight in fp32 and rounds once, so in bf16 the
two conventions disagree by an ulp. Models checked against the Hugging Face forward need this
rounding bit for bit, hence its own kernel: one program per row, the whole row in registers, one
read of `x` and one write of `y`.

upstream 0.5.17's signature `rmsnorm_hf(input, weight, eps=1e-6, out=None) -> out`, registered
as `sglang::rmsnorm_hf`.

Differs from upstream: upstream takes 2-D fp16/bf16 input with a weight of its dtype and hidden
sizes that are multiples of 32 (below 512) or of 512 (`is_supported_rmsnorm_hf_hidden_size`
answers as upstream's does); this one also takes `[..., hidden]`, fp32, any hidden size (rows up
to 16384 in the Triton kernel, longer rows by the reference formula), and a weight of another
float dtype, in which case the product is in `torch.promote_types(input.dtype, weight.dtype)`,
as Hugging Face's is (with equal dtypes that is upstream's output dtype).
"""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import MAX_FUSED_SIZE, use_triton
from sglang.kernels.ops.layernorm.norm import _launch_row_norm

# The dtypes the kernel loads and stores; all are upcast to fp32 for the reduction.
_SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
# Upstream's two launch configs (its `rmsnorm_hf.py`): a warp per row below 512 columns, in
# multiples of a warp; a CTA per row from 512 up, in multiples of 512. Only the predicate uses them.
_WARP_SIZE = 32
_CTA_BLOCK_SIZE = 512


@triton.jit
def _rmsnorm_hf_kernel(
    y_ptr,  # [n_rows, n_cols], promote(x.dtype, w.dtype), last dim contiguous
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
    variance = tl.sum(x * x, axis=0) / n_cols
    x_normed = x * tl.rsqrt(variance + eps)
    # Round to the input dtype first (the Hugging Face order), then apply the weight.
    x_normed = x_normed.to(x_ptr.dtype.element_ty).to(tl.float32)
    y = w * x_normed
    tl.store(y_ptr + pid.to(tl.int64) * y_row_stride + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm_hf_ref(
    input: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Pure-torch reference: the Hugging Face `LlamaRMSNorm.forward` (into `out` when given)."""
    x32 = input.to(torch.float32)
    variance = x32.pow(2).mean(-1, keepdim=True)
    x32 = x32 * torch.rsqrt(variance + eps)
    result = weight * x32.to(input.dtype)
    if out is None:
        return result
    out.copy_(result)
    return out


def is_supported_rmsnorm_hf_hidden_size(hidden_size: int) -> bool:
    """Upstream's answer, as its `rmsnorm_hf.py` (0.5.17 and 0.5.23) gives it.

    A multiple of 32 in [32, 512) (upstream's warp kernel) or a multiple of 512 (its CTA kernel,
    no upper bound). The name is upstream's, so the answer is too: code written for upstream
    (the runtime `RMSNorm`) routes on it. Every size it accepts runs here: rows up to
    `MAX_FUSED_SIZE` in the Triton kernel, longer ones by the reference formula in the same op.
    """
    if _WARP_SIZE <= hidden_size < _CTA_BLOCK_SIZE and hidden_size % _WARP_SIZE == 0:
        return True
    return hidden_size >= _CTA_BLOCK_SIZE and hidden_size % _CTA_BLOCK_SIZE == 0


def _fits_one_block(hidden_size: int) -> bool:
    """Whether the Triton kernel takes rows of `hidden_size`: one row must fit one program's block."""
    return 0 < hidden_size <= MAX_FUSED_SIZE


def _validate(input, weight, eps, out) -> torch.dtype:
    op = "rmsnorm_hf"
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(  # noqa: TRY004 - validation raises ValueError only
                f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}"
            )
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
    out_dtype = torch.promote_types(input.dtype, weight.dtype)
    if out is not None:
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"{op}: out must be None or a torch.Tensor, got {type(out).__name__}")  # noqa: TRY004
        if out.shape != input.shape or out.dtype != out_dtype or out.device != input.device:
            raise ValueError(
                f"{op}: out must be {tuple(input.shape)} {out_dtype} on {input.device}, "
                f"got {tuple(out.shape)} {out.dtype} on {out.device}"
            )
        if out.numel() and out.stride(-1) != 1:
            raise ValueError(f"{op}: out must be contiguous along the last dim, got strides {out.stride()}")
    if not isinstance(eps, (int, float)) or not eps >= 0.0:
        raise ValueError(f"{op}: eps must be a non-negative float, got {eps!r}")
    return out_dtype


@torch.library.custom_op("sglang::rmsnorm_hf", mutates_args=("out",))
def _rmsnorm_hf_op(input: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor) -> None:
    hidden = input.shape[-1]
    if not use_triton(input, weight, out) or not _fits_one_block(hidden):
        # No Triton on this device, or a row longer than one block: the same formula in torch.
        rmsnorm_hf_ref(input, weight, eps, out)
        return
    _launch_row_norm(_rmsnorm_hf_kernel, input, weight, eps, out)


@_rmsnorm_hf_op.register_fake
def _(input, weight, eps, out) -> None:
    return None


def rmsnorm_hf(
    input: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Hugging Face RMSNorm of `input` [..., hidden] with `weight` [hidden]; returns `out`.

    `out` (optional) is written and returned; otherwise a new tensor of `input`'s shape and dtype
    `torch.promote_types(input.dtype, weight.dtype)`. Empty inputs launch nothing.
    """
    out_dtype = _validate(input, weight, eps, out)
    if out is None:
        out = torch.empty(input.shape, dtype=out_dtype, device=input.device)
    if input.numel() == 0:
        return out
    _rmsnorm_hf_op(input, weight, float(eps), out)
    return out


__all__ = ["is_supported_rmsnorm_hf_hidden_size", "rmsnorm_hf", "rmsnorm_hf_ref"]
