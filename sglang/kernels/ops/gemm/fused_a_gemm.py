"""`fused_a_gemm`: out = x @ weight.T for x [M, K] and weight [N, K], accumulated in fp32.

DeepSeek-V3 style attention fuses the two "A" down-projections (q_a_proj and kv_a_proj_with_mqa)
into one weight, so a decode step runs one skinny GEMM (M = a few tokens, K = 7168, N = 2112)
instead of two. This is a plain tiled Triton GEMM: each program owns a BLOCK_M x BLOCK_N tile of
the output and walks K in BLOCK_K steps with an fp32 accumulator; every load and store is masked,
so M, N and K need not be multiples of the tiles. The result is cast back to the input dtype.

    out[m, n] = sum_k float32(x[m, k]) * float32(weight[n, k])
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import cdiv, next_power_of_2, use_triton
from sglang.kernels.ops.gemm._operands import check_operands, dot_in_fp32

# tl.dot needs every tile dimension >= 16; 16 rows is also one decode batch of the fused A
# projection, so small M wastes no rows.
_MIN_BLOCK_M = 16
# 64 rows per tile once M is larger: a 64 x 64 fp32 accumulator is 32 registers per thread
# at 4 warps, the usual Triton tutorial tile.
_MAX_BLOCK_M = 64
# 64 output columns per tile: N = 2112 is 33 tiles, enough programs to fill an SM-count's worth.
_BLOCK_N = 64
# 64 K-elements per step: 64 x 64 bf16 tiles of x and weight are 8 KiB each in shared memory.
_BLOCK_K = 64
# 4 warps (128 threads): the tile above is 4096 outputs, 32 per thread.
_NUM_WARPS = 4


@triton.jit
def _fused_a_gemm_kernel(
    x_ptr,  # fp16/bf16/fp32 [M, K]
    w_ptr,  # same dtype [N, K]
    out_ptr,  # same dtype [M, N], contiguous
    n_rows,  # M
    n_cols,  # N
    k_dim,  # K
    x_row_stride,
    x_col_stride,
    w_row_stride,
    w_col_stride,
    out_row_stride,
    DOT_FP32: tl.constexpr,  # upcast operands and take an IEEE fp32 dot (see `_operands.dot_in_fp32`)
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(n_cols, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
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
    tl.store(
        out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :],
        acc.to(out_ptr.dtype.element_ty),
        mask=mask_m[:, None] & mask_n[None, :],
    )


def fused_a_gemm_ref(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Pure-torch reference: fp32 matmul, cast back to x's dtype."""
    return (x.float() @ weight.float().T).to(x.dtype)


def fused_a_gemm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x [M, K] @ weight[N, K].T -> [M, N] in x's dtype, accumulated in fp32."""
    check_operands("fused_a_gemm", x, weight)
    m, k = x.shape
    n = weight.shape[0]
    if m == 0 or n == 0 or k == 0:
        return torch.zeros((m, n), dtype=x.dtype, device=x.device)
    if not use_triton(x, weight):
        return fused_a_gemm_ref(x, weight)
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    block_m = min(max(next_power_of_2(m), _MIN_BLOCK_M), _MAX_BLOCK_M)
    grid = (cdiv(m, block_m) * cdiv(n, _BLOCK_N),)
    _fused_a_gemm_kernel[grid](
        x,
        weight,
        out,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        weight.stride(0),
        weight.stride(1),
        out.stride(0),
        DOT_FP32=dot_in_fp32(x.dtype),
        BLOCK_M=block_m,
        BLOCK_N=_BLOCK_N,
        BLOCK_K=_BLOCK_K,
        num_warps=_NUM_WARPS,
    )
    return out


__all__ = ["fused_a_gemm", "fused_a_gemm_ref"]
