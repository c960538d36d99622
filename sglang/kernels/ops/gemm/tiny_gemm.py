"""`tiny_gemm`: out = x @ weight.T (+ bias) for a small N, as in MoE router / gate projections.

A router projects every token's hidden state (K = a few thousand) onto the N experts (N <= 256).
A general GEMM tiles N too, and for N this small most of its programs are idle or its tiles
mostly masked; here one program owns a block of rows and computes all N outputs of each, walking
K once, so each x row is read exactly once and the bias is added in the fp32 accumulator.

    out[m, n] = sum_k float32(x[m, k]) * float32(weight[n, k]) + float32(bias[n])

N above `TINY_GEMM_MAX_N` is rejected: the whole [BLOCK_M, N] accumulator lives in registers.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import cdiv, next_power_of_2, use_triton
from sglang.kernels.ops.gemm._operands import check_operands, dot_in_fp32

# The largest N one program holds: a 16 x 256 fp32 accumulator is 32 registers per thread at
# 4 warps; 256 also covers the expert counts of current MoE routers (DeepSeek-V3: 256).
TINY_GEMM_MAX_N = 256
# 16 rows per program: tl.dot's smallest tile dimension, and a decode batch fits one program.
_BLOCK_M = 16
# tl.dot needs every tile dimension >= 16, so a smaller N is padded (masked) up to 16.
_MIN_BLOCK_N = 16
# 32 K-elements per step: the weight tile is then at most 32 x 256 bf16 = 16 KiB of shared memory.
_BLOCK_K = 32
# 4 warps (128 threads) spread the 16 x 256 accumulator over 32 registers each.
_NUM_WARPS = 4


@triton.jit
def _tiny_gemm_kernel(
    x_ptr,  # fp16/bf16/fp32 [M, K]
    w_ptr,  # same dtype [N, K]
    bias_ptr,  # same dtype [N] (unused when HAS_BIAS is False)
    out_ptr,  # same dtype [M, N], contiguous
    n_rows,  # M
    n_cols,  # N <= BLOCK_N
    k_dim,  # K
    x_row_stride,
    x_col_stride,
    w_row_stride,
    w_col_stride,
    out_row_stride,
    HAS_BIAS: tl.constexpr,
    DOT_FP32: tl.constexpr,  # upcast operands and take an IEEE fp32 dot (see `_operands.dot_in_fp32`)
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,  # next power of two >= N: the program computes every column
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    offs_m = (pid * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = tl.arange(0, BLOCK_N).to(tl.int64)
    mask_m = offs_m < n_rows
    mask_n = offs_n < n_cols
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k_dim, BLOCK_K):
        offs_k = (k0 + tl.arange(0, BLOCK_K)).to(tl.int64)
        mask_k = offs_k < k_dim
        a = tl.load(
            x_ptr + offs_m[:, None] * x_row_stride + offs_k[None, :] * x_col_stride,
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        )  # [BLOCK_M, BLOCK_K]
        b = tl.load(
            w_ptr + offs_n[None, :] * w_row_stride + offs_k[:, None] * w_col_stride,
            mask=mask_n[None, :] & mask_k[:, None],
            other=0.0,
        )  # [BLOCK_K, BLOCK_N]: weight tile read transposed
        if DOT_FP32:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)
        acc = acc + bias[None, :]
    tl.store(
        out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :],
        acc.to(out_ptr.dtype.element_ty),
        mask=mask_m[:, None] & mask_n[None, :],
    )


def tiny_gemm_ref(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """Pure-torch reference: fp32 matmul plus fp32 bias, cast back to x's dtype."""
    out = x.float() @ weight.float().T
    if bias is not None:
        out = out + bias.float()
    return out.to(x.dtype)


def tiny_gemm(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """x [M, K] @ weight[N, K].T (+ bias [N]) -> [M, N] in x's dtype, for N <= TINY_GEMM_MAX_N."""
    check_operands("tiny_gemm", x, weight)
    n = weight.shape[0]
    if n > TINY_GEMM_MAX_N:
        raise ValueError(
            f"tiny_gemm: weight must have at most {TINY_GEMM_MAX_N} rows (N, the output width "
            f"one program holds), got {tuple(weight.shape)}; use fused_a_gemm for a wide N"
        )
    if bias is not None:
        if bias.shape != (n,):
            raise ValueError(f"tiny_gemm: bias must have shape ({n},), got {tuple(bias.shape)}")
        if bias.dtype != x.dtype:
            raise ValueError(f"tiny_gemm: bias must have x's dtype {x.dtype}, got {bias.dtype}")
        if bias.device != x.device:
            raise ValueError(f"tiny_gemm: bias must be on x's device {x.device}, got {bias.device}")
    m, k = x.shape
    if m == 0 or n == 0 or k == 0:
        return tiny_gemm_ref(x, weight, bias)  # empty, or K = 0 (bias only): nothing to launch
    tensors = (x, weight) if bias is None else (x, weight, bias)
    if not use_triton(*tensors):
        return tiny_gemm_ref(x, weight, bias)
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _tiny_gemm_kernel[(cdiv(m, _BLOCK_M),)](
        x,
        weight,
        bias if bias is not None else out,  # a valid pointer the kernel never reads
        out,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        weight.stride(0),
        weight.stride(1),
        out.stride(0),
        HAS_BIAS=bias is not None,
        DOT_FP32=dot_in_fp32(x.dtype),
        BLOCK_M=_BLOCK_M,
        BLOCK_N=max(next_power_of_2(n), _MIN_BLOCK_N),
        BLOCK_K=_BLOCK_K,
        num_warps=_NUM_WARPS,
    )
    return out


__all__ = ["TINY_GEMM_MAX_N", "tiny_gemm", "tiny_gemm_ref"]
