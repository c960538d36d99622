"""The two RMSNorms of an MTP / EAGLE draft head, fused into one launch that writes `[T, 2H]`.

    out[:, :H] = rmsnorm(embedding, enorm_weight)
    out[:, H:] = rmsnorm(hidden,    hnorm_weight)
    rmsnorm(x, w) = (x.float() * rsqrt(mean(x.float() ** 2, dim=-1) + eps) * w.float()).to(x.dtype)

A draft head normalizes the token embedding and the target model's hidden state, concatenates
them and projects `[T, 2H] -> [T, H]` with its `fc`. Done with two `RMSNorm` modules and
`torch.cat` that is three launches and an extra round trip of `[T, 2H]` through memory; here one
program per token normalizes both rows and stores them straight into their halves of the output.
The weight is applied in fp32 and the result rounded once (sglang's `RMSNorm` convention).
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
    out_row = out_ptr + pid * out_row_stride

    e = tl.load(e_ptr + pid * e_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    ew = tl.load(ew_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    e_rstd = tl.rsqrt(tl.sum(e * e, axis=0) / n_cols + eps)
    tl.store(out_row + offsets, (e * e_rstd * ew).to(out_ptr.dtype.element_ty), mask=mask)

    h = tl.load(h_ptr + pid * h_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    hw = tl.load(hw_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    h_rstd = tl.rsqrt(tl.sum(h * h, axis=0) / n_cols + eps)
    tl.store(out_row + n_cols + offsets, (h * h_rstd * hw).to(out_ptr.dtype.element_ty), mask=mask)



def _rmsnorm_ref(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x32 = x.to(torch.float32)
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (x32 * weight.to(torch.float32)).to(x.dtype)


def fused_eh_norm_ref(
    embedding: torch.Tensor,
    hidden: torch.Tensor,
    enorm_weight: torch.Tensor,
    hnorm_weight: torch.Tensor,
    eps: float = 1e-6,
) -> torch.Tensor:
    """Pure-torch reference: two sglang RMSNorms and a `torch.cat` on the last dim."""
    return torch.cat(
        [_rmsnorm_ref(embedding, enorm_weight, eps), _rmsnorm_ref(hidden, hnorm_weight, eps)],
        dim=-1,
    )


def _validate(
    embedding: torch.Tensor,
    hidden: torch.Tensor,
    enorm_weight: torch.Tensor,
    hnorm_weight: torch.Tensor,
    eps: float,
) -> None:
    if embedding.dim() != 2:
        raise ValueError(
            f"fused_eh_norm: embedding must be 2-D [T, H], got {tuple(embedding.shape)}"
        )
    if hidden.shape != embedding.shape:
        raise ValueError(
            f"fused_eh_norm: hidden must have embedding's shape {tuple(embedding.shape)}, "
            f"got {tuple(hidden.shape)}"
        )
    if embedding.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(
            f"fused_eh_norm: embedding must be fp32, fp16 or bf16, got {embedding.dtype}"
        )
    if hidden.dtype != embedding.dtype:
        raise ValueError(
            f"fused_eh_norm: hidden must have embedding's dtype {embedding.dtype}, "
            f"got {hidden.dtype}"
        )
    n_cols = embedding.shape[1]
    for name, w in (("enorm_weight", enorm_weight), ("hnorm_weight", hnorm_weight)):
        if w.shape != (n_cols,):
            raise ValueError(
                f"fused_eh_norm: {name} must have shape ({n_cols},), got {tuple(w.shape)}"
            )
        if w.dtype not in _SUPPORTED_DTYPES:
            raise ValueError(f"fused_eh_norm: {name} must be fp32, fp16 or bf16, got {w.dtype}")
    for name, t in (
        ("hidden", hidden),
        ("enorm_weight", enorm_weight),
        ("hnorm_weight", hnorm_weight),
    ):
        if t.device != embedding.device:
            raise ValueError(
                f"fused_eh_norm: {name} must be on {embedding.device} like embedding, "
                f"got {t.device}"
            )
    if not eps >= 0.0:
        raise ValueError(f"fused_eh_norm: eps must be a non-negative float, got {eps!r}")


def fused_eh_norm(
    embedding: torch.Tensor,
    hidden: torch.Tensor,
    enorm_weight: torch.Tensor,
    hnorm_weight: torch.Tensor,
    eps: float = 1e-6,
) -> torch.Tensor:
    """`cat([rmsnorm(embedding, enorm_weight), rmsnorm(hidden, hnorm_weight)], -1)` in one launch.

    `embedding` and `hidden` are `[T, H]` of one dtype; the weights are `[H]`. Returns a new
    `[T, 2H]` tensor of the inputs' dtype.
    """
    _validate(embedding, hidden, enorm_weight, hnorm_weight, eps)
    n_rows, n_cols = embedding.shape
    out = torch.empty((n_rows, 2 * n_cols), dtype=embedding.dtype, device=embedding.device)
    if out.numel() == 0:
        return out
    if not use_triton(embedding, hidden, enorm_weight, hnorm_weight) or n_cols > MAX_FUSED_SIZE:
        # Rows wider than one fused block do not fit the one-program-per-row kernel.
        return fused_eh_norm_ref(embedding, hidden, enorm_weight, hnorm_weight, eps)

    if embedding.stride(-1) != 1:
        embedding = embedding.contiguous()
    if hidden.stride(-1) != 1:
        hidden = hidden.contiguous()
    block_size = next_power_of_2(n_cols)
    _fused_eh_norm_kernel[(n_rows,)](
        out,
        out.stride(0),
        embedding,
        embedding.stride(0),
        hidden,
        hidden.stride(0),
        enorm_weight.contiguous(),
        hnorm_weight.contiguous(),
        n_cols,
        float(eps),
        BLOCK_SIZE=block_size,
        num_warps=row_num_warps(block_size),
    )
    return out


__all__ = ["fused_eh_norm", "fused_eh_norm_ref"]
