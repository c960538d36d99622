"""RMSNorm exactly as Hugging Face's `LlamaRMSNorm` computes it.

    x_normed = x.float() * rsqrt(mean(x.float() ** 2, dim=-1) + eps)
    y        = weight * x_normed.to(x.dtype)

The normalized row is rounded back to the input dtype BEFORE the weight is applied, and the
product is taken in `torch.promote_types(x.dtype, weight.dtype)`. sglang's own `RMSNorm` (and
`fused_add_rmsnorm` in `norm.py`) multiplies by the weight in fp32 and rounds once, so in bf16 the
two conventions disagree by an ulp. Models checked against the Hugging Face forward need this
rounding bit for bit, hence its own kernel: one program per row, the whole row in registers, one
read of `x` and one write of `y`.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import MAX_FUSED_SIZE, next_power_of_2, row_num_warps, use_triton

# The dtypes the kernel loads and stores; all are upcast to fp32 for the reduction.
_SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit
def _rmsnorm_hf_kernel(
    y_ptr,  # [n_rows, n_cols], promote(x.dtype, w.dtype), contiguous
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

    x = tl.load(x_ptr + pid * x_row_stride + offsets, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    variance = tl.sum(x * x, axis=0) / n_cols
    x_normed = x * tl.rsqrt(variance + eps)
    # Round to the input dtype first (the Hugging Face order), then apply the weight.
    x_normed = x_normed.to(x_ptr.dtype.element_ty).to(tl.float32)
    y = w * x_normed
    tl.store(y_ptr + pid * y_row_stride + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)



def rmsnorm_hf_ref(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Pure-torch reference: the Hugging Face `LlamaRMSNorm.forward`."""
    input_dtype = x.dtype
    x32 = x.to(torch.float32)
    variance = x32.pow(2).mean(-1, keepdim=True)
    x32 = x32 * torch.rsqrt(variance + eps)
    return weight * x32.to(input_dtype)


def _validate(x: torch.Tensor, weight: torch.Tensor, eps: float) -> None:
    if x.dim() < 1:
        raise ValueError(
            f"rmsnorm_hf: x must have at least 1 dim [..., hidden], got {tuple(x.shape)}"
        )
    if x.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"rmsnorm_hf: x must be fp32, fp16 or bf16, got {x.dtype}")
    if weight.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"rmsnorm_hf: weight must be fp32, fp16 or bf16, got {weight.dtype}")
    hidden = x.shape[-1]
    if weight.shape != (hidden,):
        raise ValueError(
            f"rmsnorm_hf: weight must have shape ({hidden},), got {tuple(weight.shape)}"
        )
    if weight.device != x.device:
        raise ValueError(f"rmsnorm_hf: weight must be on {x.device} like x, got {weight.device}")
    if not eps >= 0.0:
        raise ValueError(f"rmsnorm_hf: eps must be a non-negative float, got {eps!r}")


def rmsnorm_hf(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Hugging Face RMSNorm of `x` [..., hidden] with `weight` [hidden]; returns a new tensor.

    The result has `x`'s shape and dtype `torch.promote_types(x.dtype, weight.dtype)`.
    """
    _validate(x, weight, eps)
    hidden = x.shape[-1]
    out_dtype = torch.promote_types(x.dtype, weight.dtype)
    if x.numel() == 0:
        return torch.empty(x.shape, dtype=out_dtype, device=x.device)
    if not use_triton(x, weight) or hidden > MAX_FUSED_SIZE:
        # Rows wider than one fused block do not fit the one-program-per-row kernel.
        return rmsnorm_hf_ref(x, weight, eps)

    x2d = x.reshape(-1, hidden)
    if x2d.stride(-1) != 1:
        x2d = x2d.contiguous()
    weight = weight.contiguous()
    y = torch.empty(x.shape, dtype=out_dtype, device=x.device)
    y2d = y.view(-1, hidden)
    block_size = next_power_of_2(hidden)
    _rmsnorm_hf_kernel[(x2d.shape[0],)](
        y2d,
        y2d.stride(0),
        x2d,
        x2d.stride(0),
        weight,
        hidden,
        float(eps),
        BLOCK_SIZE=block_size,
        num_warps=row_num_warps(block_size),
    )
    return y


__all__ = ["rmsnorm_hf", "rmsnorm_hf_ref"]
