"""The two RMSNorms of an MTP / EAGLE draft head, fused into one launch that writes `[T, 2H]`.

    out[:, :H] = rmsnorm(inputs_embeds,   enorm_weight)
    out[:, H:] = rmsnorm(previous_hidden, hnorm_weight)
    rmsnorm(x, w) = (x.float() * rsqrt(mean(x.float() ** 2, dim=-1) + eps) * w.float()).to(x.dtype)

A draft head normalizes the token embedding and the target model's hidden state, concatenates
them and projects `[T, 2H] -> [T, H]` with its `fc`. Done with two `RMSNorm` modules and
`torch.cat` that is three launches and an extra round trip of `[T, 2H]` through memory; here one
program per token normalizes both rows and stores them straight into their halves of the output.
The weight is applied in fp32 and the result rounded once (sglang's `RMSNorm` convention, and
upstream 0.5.17's `fused_eh_norm.cuh`: `x * rstd * w` in fp32, one cast).

upstream's signature `fused_eh_norm(inputs_embeds, previous_hidden, enorm_weight, hnorm_weight,
eps)` (no default eps), registered as `sglang::fused_eh_norm`.

Differs from upstream: upstream takes fp16/bf16 and hidden sizes in (256, 8192] that are
multiples of 256, which `is_supported_fused_eh_norm_hidden_size` answers as upstream's does;
this kernel takes fp32 too and any hidden size up to one program's block (16384); weights may be
of another float dtype (they are upcast to fp32 before the product, as upstream's are).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import MAX_FUSED_SIZE, next_power_of_2, row_num_warps, use_triton

# The dtypes the kernel loads and stores; all are upcast to fp32 for the reduction.
_SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _fused_eh_norm_kernel(
    out_ptr,  # [n_rows, 2 * n_cols], embedding dtype, contiguous
    out_row_stride,  # elements between rows of out
    e_ptr,  # [n_rows, n_cols] embeddings, fp32/fp16/bf16, last dim contiguous
    e_row_stride,  # elements between rows of e
    h_ptr,  # [n_rows, n_cols] hidden states, e's dtype, last dim contiguous
    h_row_stride,  # elements between rows of h
    ew_ptr,  # [n_cols] enorm weight, fp32/fp16/bf16
    hw_ptr,  # [n_cols] hnorm weight, fp32/fp16/bf16
    n_cols,  # hidden size H
    eps,  # fp32 variance epsilon
    BLOCK_SIZE: tl.constexpr,  # next power of two >= n_cols
):
    pid = tl.program_id(0)
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols
    out_row = out_ptr + pid.to(tl.int64) * out_row_stride

    e = tl.load(e_ptr + pid.to(tl.int64) * e_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    ew = tl.load(ew_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    e_rstd = tl.rsqrt(tl.sum(e * e, axis=0) / n_cols + eps)
    tl.store(out_row + offsets, (e * e_rstd * ew).to(out_ptr.dtype.element_ty), mask=mask)

    h = tl.load(h_ptr + pid.to(tl.int64) * h_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    hw = tl.load(hw_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    h_rstd = tl.rsqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    tl.store(out_row + n_cols + offsets, (h * h_rstd * hw).to(out_ptr.dtype.element_ty), mask=mask)


def _rmsnorm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x32 = x.to(torch.float32)
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (x32 * weight.to(torch.float32)).to(x.dtype)


def fused_eh_norm_ref(
    inputs_embeds: torch.Tensor,
    previous_hidden: torch.Tensor,
    enorm_weight: torch.Tensor,
    hnorm_weight: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """Pure-torch reference: two sglang RMSNorms and a `torch.cat` on the last dim."""
    return torch.cat(
        [
            _rmsnorm_ref(inputs_embeds, enorm_weight, eps),
            _rmsnorm_ref(previous_hidden, hnorm_weight, eps),
        ],
        dim=-1,
    )


def is_supported_fused_eh_norm_hidden_size(hidden_size: int) -> bool:
    """Upstream's answer, as its `fused_eh_norm.py` (0.5.17 and 0.5.23) gives it: a multiple of 256 in (256, 8192].

    The name is upstream's, so the answer is too; the Triton kernel takes any size up to
    `MAX_FUSED_SIZE` (`_fits_one_block`), an extension nobody is routed to by this name.
    """
    return hidden_size > 256 and hidden_size <= 8192 and hidden_size % 256 == 0


def _fits_one_block(hidden_size: int) -> bool:
    """Whether the kernel takes rows of `hidden_size`: one row must fit one program's block."""
    return 0 < hidden_size <= MAX_FUSED_SIZE


def _validate(inputs_embeds, previous_hidden, enorm_weight, hnorm_weight, eps) -> None:
    op = "fused_eh_norm"
    named = (
        ("inputs_embeds", inputs_embeds),
        ("previous_hidden", previous_hidden),
        ("enorm_weight", enorm_weight),
        ("hnorm_weight", hnorm_weight),
    )
    for name, t in named:
        if not isinstance(t, torch.Tensor):
            raise ValueError(  # noqa: TRY004 - validation raises ValueError only
                f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}"
            )
    if inputs_embeds.dim() != 2:
        raise ValueError(f"{op}: inputs_embeds must be 2-D [T, H], got {tuple(inputs_embeds.shape)}")
    if previous_hidden.shape != inputs_embeds.shape:
        raise ValueError(
            f"{op}: previous_hidden must have inputs_embeds' shape {tuple(inputs_embeds.shape)}, "
            f"got {tuple(previous_hidden.shape)}"
        )
    if inputs_embeds.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"{op}: inputs_embeds must be fp32, fp16 or bf16, got {inputs_embeds.dtype}")
    if previous_hidden.dtype != inputs_embeds.dtype:
        raise ValueError(
            f"{op}: previous_hidden must have inputs_embeds' dtype {inputs_embeds.dtype}, "
            f"got {previous_hidden.dtype}"
        )
    n_cols = inputs_embeds.shape[1]
    for name, w in named[2:]:
        if w.shape != (n_cols,):
            raise ValueError(f"{op}: {name} must have shape ({n_cols},), got {tuple(w.shape)}")
        if w.dtype not in _SUPPORTED_DTYPES:
            raise ValueError(f"{op}: {name} must be fp32, fp16 or bf16, got {w.dtype}")
    for name, t in named[1:]:
        if t.device != inputs_embeds.device:
            raise ValueError(
                f"{op}: {name} must be on {inputs_embeds.device} like inputs_embeds, got {t.device}"
            )
    if inputs_embeds.numel() and not _fits_one_block(n_cols):
        raise ValueError(
            f"{op}: hidden size {n_cols} exceeds the kernel's row limit {MAX_FUSED_SIZE} "
            "(check `is_supported_fused_eh_norm_hidden_size` and use the torch path)"
        )
    if not isinstance(eps, (int, float)) or not eps >= 0.0:
        raise ValueError(f"{op}: eps must be a non-negative float, got {eps!r}")


@torch.library.custom_op("sglang::fused_eh_norm", mutates_args=("output",))
def _fused_eh_norm_op(
    inputs_embeds: torch.Tensor,
    previous_hidden: torch.Tensor,
    enorm_weight: torch.Tensor,
    hnorm_weight: torch.Tensor,
    eps: float,
    output: torch.Tensor,
) -> None:
    tensors = (inputs_embeds, previous_hidden, enorm_weight, hnorm_weight)
    if not use_triton(*tensors):
        output.copy_(fused_eh_norm_ref(*tensors, eps))  # no Triton on this device
        return
    if inputs_embeds.stride(-1) != 1:
        inputs_embeds = inputs_embeds.contiguous()
    if previous_hidden.stride(-1) != 1:
        previous_hidden = previous_hidden.contiguous()
    n_rows, n_cols = inputs_embeds.shape
    block_size = next_power_of_2(n_cols)
    _fused_eh_norm_kernel[(n_rows,)](
        output,
        output.stride(0),
        inputs_embeds,
        inputs_embeds.stride(0),
        previous_hidden,
        previous_hidden.stride(0),
        enorm_weight.contiguous(),
        hnorm_weight.contiguous(),
        n_cols,
        float(eps),
        BLOCK_SIZE=block_size,
        num_warps=row_num_warps(block_size),
    )


@_fused_eh_norm_op.register_fake
def _(inputs_embeds, previous_hidden, enorm_weight, hnorm_weight, eps, output) -> None:
    return None


def fused_eh_norm(
    inputs_embeds: torch.Tensor,
    previous_hidden: torch.Tensor,
    enorm_weight: torch.Tensor,
    hnorm_weight: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """`cat([rmsnorm(inputs_embeds, enorm_weight), rmsnorm(previous_hidden, hnorm_weight)], -1)`.

    `inputs_embeds` and `previous_hidden` are `[T, H]` of one dtype; the weights are `[H]`.
    Returns a new contiguous `[T, 2H]` tensor of the inputs' dtype, in one launch.
    """
    _validate(inputs_embeds, previous_hidden, enorm_weight, hnorm_weight, eps)
    n_rows, n_cols = inputs_embeds.shape
    output = torch.empty((n_rows, 2 * n_cols), dtype=inputs_embeds.dtype, device=inputs_embeds.device)
    if output.numel() == 0:
        return output
    _fused_eh_norm_op(inputs_embeds, previous_hidden, enorm_weight, hnorm_weight, float(eps), output)
    return output


__all__ = ["fused_eh_norm", "fused_eh_norm_ref", "is_supported_fused_eh_norm_hidden_size"]
