"""`dsv3_fused_a_gemm`: output = mat_a @ mat_b for mat_a [M, K] and mat_b [K, N], in fp32.

DeepSeek-V3 attention fuses its two "A" down-projections (q_a_proj and kv_a_proj_with_mqa) into
one weight, so a decode step runs one skinny GEMM (M = a few tokens, K = 7168, N = 2112) instead
of two. Upstream's contract (sglang 0.5.17 `kernels/ops/gemm/dsv3_fused_a_gemm.py`): mat_a is the
row-major activation [num_tokens, hd_in], mat_b the column-major weight [hd_in, hd_out] (that is
`weight.T` of a row-major [hd_out, hd_in] weight), `output` an optional [num_tokens, hd_out]
buffer that is written and returned; without it a new tensor is returned.

    output[m, n] = sum_k float32(mat_a[m, k]) * float32(mat_b[k, n])     (cast to mat_a's dtype)

This is a plain tiled Triton GEMM: each program owns a BLOCK_M x BLOCK_N tile of the output and
walks K in BLOCK_K steps with an fp32 accumulator; every load and store is masked and strided.

Differs from upstream: upstream's CUDA kernel takes bf16 only, 1 <= num_tokens <= 16, hd_in a
multiple of 256 and hd_out a multiple of 16 (its tiles are compile-time); this Triton kernel
masks its tiles, so it takes any M, N, K, fp16 and fp32 as well, and any strides of all three
tensors. On what upstream accepts, the result is upstream's up to the order of the fp32
accumulation (one bf16 rounding step at most).
"""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import cdiv, next_power_of_2, use_triton
from sglang.kernels.ops.gemm._operands import (
    accumulate_tile,
    check_operands,
    check_out,
    dot_in_fp32,
)

# tl.dot needs every tile dimension >= 16; 16 rows is also one decode batch of the fused A
# projection (upstream's largest num_tokens), so small M wastes no rows.
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
def _dsv3_fused_a_gemm_kernel(
    a_ptr,  # fp16/bf16/fp32 [M, K]
    b_ptr,  # same dtype [K, N] (upstream: column-major, weight.T)
    out_ptr,  # same dtype [M, N]
    n_rows,  # M
    n_cols,  # N
    k_dim,  # K
    a_row_stride,
    a_col_stride,
    b_k_stride,
    b_n_stride,
    out_row_stride,
    out_col_stride,
    DOT_FP32: tl.constexpr,  # upcast and take an IEEE fp32 dot (see `_operands.dot_in_fp32`)
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
    acc = accumulate_tile(
        a_ptr, b_ptr, offs_m, offs_n, mask_m, mask_n, k_dim,
        a_row_stride, a_col_stride, b_k_stride, b_n_stride,
        DOT_FP32, BLOCK_M, BLOCK_N, BLOCK_K,
    )
    tl.store(
        out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :] * out_col_stride,
        acc.to(out_ptr.dtype.element_ty),
        mask=mask_m[:, None] & mask_n[None, :],
    )


def dsv3_fused_a_gemm_ref(
    mat_a: torch.Tensor, mat_b: torch.Tensor, output: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """Pure-torch reference: fp32 matmul, cast to mat_a's dtype (into `output` when given)."""
    result = (mat_a.float() @ mat_b.float()).to(mat_a.dtype)
    if output is not None:
        output.copy_(result)
        return output
    return result


@torch.library.custom_op("sglang::dsv3_fused_a_gemm", mutates_args=("output",))
def _dsv3_fused_a_gemm_op(mat_a: torch.Tensor, mat_b: torch.Tensor, output: torch.Tensor) -> None:
    m, k = mat_a.shape
    n = mat_b.shape[1]
    if m == 0 or n == 0:
        return
    if k == 0:
        output.zero_()  # a sum of nothing
        return
    if not use_triton(mat_a, mat_b, output):
        dsv3_fused_a_gemm_ref(mat_a, mat_b, output)
        return
    block_m = min(max(next_power_of_2(m), _MIN_BLOCK_M), _MAX_BLOCK_M)
    grid = (cdiv(m, block_m) * cdiv(n, _BLOCK_N),)
    _dsv3_fused_a_gemm_kernel[grid](
        mat_a,
        mat_b,
        output,
        m,
        n,
        k,
        mat_a.stride(0),
        mat_a.stride(1),
        mat_b.stride(0),
        mat_b.stride(1),
        output.stride(0),
        output.stride(1),
        DOT_FP32=dot_in_fp32(mat_a.dtype),
        BLOCK_M=block_m,
        BLOCK_N=_BLOCK_N,
        BLOCK_K=_BLOCK_K,
        num_warps=_NUM_WARPS,
    )


@_dsv3_fused_a_gemm_op.register_fake
def _(mat_a, mat_b, output) -> None:
    return None


def dsv3_fused_a_gemm(
    mat_a: torch.Tensor,
    mat_b: torch.Tensor,
    output: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """mat_a [M, K] @ mat_b [K, N] -> [M, N] in mat_a's dtype, accumulated in fp32.

    `output` (optional, [M, N], mat_a's dtype and device): written and returned.
    """
    op = "dsv3_fused_a_gemm"
    if not isinstance(mat_b, torch.Tensor):
        raise ValueError(f"{op}: mat_b must be a torch.Tensor, got {type(mat_b).__name__}")  # noqa: TRY004
    if mat_b.dim() != 2:
        raise ValueError(f"{op}: mat_b must be 2-D [K, N] (weight.T), got {tuple(mat_b.shape)}")
    # mat_b.T is the [N, K] weight, so the shared [M, K] x [N, K] checks apply.
    check_operands(op, mat_a, mat_b.T, names=("mat_a", "mat_b.T"))
    shape = (mat_a.shape[0], mat_b.shape[1])
    if output is None:
        output = torch.empty(shape, dtype=mat_a.dtype, device=mat_a.device)
    else:
        check_out(op, "output", output, shape, mat_a.dtype, mat_a.device)
    _dsv3_fused_a_gemm_op(mat_a, mat_b, output)
    return output


__all__ = ["dsv3_fused_a_gemm", "dsv3_fused_a_gemm_ref"]
