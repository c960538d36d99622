"""`tiny_n_gemm_bf16` / `tiny_k_gemm_bf16`: out = x @ w.T for a decode batch (M <= max_m).

Upstream (sglang 0.5.17 `kernels/ops/gemm/tiny_gemm.py`) has two CUDA kernels for skinny GEMMs
of a few tokens: `tiny_n_gemm_bf16` (small N: MoE routers and gates, one block per `split_n`
output columns walking all of K) and `tiny_k_gemm_bf16` (small K, large N: K / 8 lanes of a warp
reduce one output column). Both take x [M, K] and w [N, K] in bf16, write `out` [M, N] (allocated
in `out_dtype`, default bf16, when not given) and return it, and require 1 <= M <= max_m.

    out[m, n] = sum_k float32(x[m, k]) * float32(w[n, k])      (cast to out's dtype)

Here one Triton kernel serves both: a program owns BLOCK_M rows and a BLOCK_N block of columns
and walks K once with an fp32 accumulator, so each x row is read once per column block.

Differs from upstream: `split_n` is a CUDA block-shape knob; it is validated as upstream requires
(a divisor of N) and otherwise unused, since the Triton tiling is chosen from N. fp16 and fp32
inputs are taken as well as bf16 (`is_supported_tiny_gemm` says what is), any N and K (upstream's
vector widths need K % 8 == 0, and `tiny_k_gemm_bf16` K / 8 a power of two <= 32), and any
strides. M = 0 returns the empty `out` (upstream rejects it).
"""

from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import cdiv, next_power_of_2, use_triton
from sglang.kernels.ops.gemm._operands import (
    SUPPORTED_DTYPES,
    accumulate_tile,
    check_operands,
    check_out,
    dot_in_fp32,
)

# Upstream's default largest batch: the kernels are specialized per M up to it.
_MAX_M_DEFAULT: int = 16
# Output dtypes upstream's OutT template takes.
_OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
# 16 rows per program: tl.dot's smallest tile dimension, and a decode batch of max_m = 16 is
# one row block.
_BLOCK_M = 16
# tl.dot needs every tile dimension >= 16, so a smaller N is padded (masked) up to 16.
_MIN_BLOCK_N = 16
# At most 128 columns per program: a 16 x 128 fp32 accumulator is 16 registers per thread at
# 4 warps; a router's N = 256 experts is 2 programs per row block.
_MAX_BLOCK_N = 128
# 32 K-elements per step: the weight tile is then at most 32 x 128 bf16 = 8 KiB of shared memory.
_BLOCK_K = 32
# 4 warps (128 threads).
_NUM_WARPS = 4


@triton.jit
def _tiny_gemm_kernel(
    x_ptr,  # fp16/bf16/fp32 [M, K]
    w_ptr,  # x's dtype [N, K]
    out_ptr,  # bf16/fp16/fp32 [M, N]
    n_rows,  # M
    n_cols,  # N
    k_dim,  # K
    x_row_stride,
    x_col_stride,
    w_row_stride,
    w_col_stride,
    out_row_stride,
    out_col_stride,
    DOT_FP32: tl.constexpr,  # upcast and take an IEEE fp32 dot (see `_operands.dot_in_fp32`)
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    mask_m = offs_m < n_rows
    mask_n = offs_n < n_cols
    # w [N, K] is the [K, N] operand with its strides swapped.
    acc = accumulate_tile(
        x_ptr, w_ptr, offs_m, offs_n, mask_m, mask_n, k_dim,
        x_row_stride, x_col_stride, w_col_stride, w_row_stride,
        DOT_FP32, BLOCK_M, BLOCK_N, BLOCK_K,
    )
    tl.store(
        out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :] * out_col_stride,
        acc.to(out_ptr.dtype.element_ty),
        mask=mask_m[:, None] & mask_n[None, :],
    )


def is_supported_tiny_gemm(x: torch.Tensor, w: torch.Tensor) -> bool:
    """Whether `tiny_n_gemm_bf16` / `tiny_k_gemm_bf16` take these operands on this device."""
    return (
        x.dim() == 2
        and w.dim() == 2
        and x.shape[1] == w.shape[1]
        and x.dtype in SUPPORTED_DTYPES
        and w.dtype == x.dtype
        and use_triton(x, w)
    )


def _ref(x, w, out=None, out_dtype=None):
    result = (x.float() @ w.float().T).to(out.dtype if out is not None else out_dtype or torch.bfloat16)
    if out is not None:
        out.copy_(result)
        return out
    return result


def tiny_n_gemm_bf16_ref(
    x: torch.Tensor,
    w: torch.Tensor,
    out: Optional[torch.Tensor] = None,
    *,
    out_dtype: Optional[torch.dtype] = None,
    split_n: Optional[int] = None,
    max_m: int = _MAX_M_DEFAULT,
) -> torch.Tensor:
    """Pure-torch reference: fp32 matmul, cast to out's dtype."""
    return _ref(x, w, out, out_dtype)


def tiny_k_gemm_bf16_ref(
    x: torch.Tensor,
    w: torch.Tensor,
    out: Optional[torch.Tensor] = None,
    *,
    out_dtype: Optional[torch.dtype] = None,
    split_n: Optional[int] = None,
    max_m: int = _MAX_M_DEFAULT,
) -> torch.Tensor:
    """Pure-torch reference: fp32 matmul, cast to out's dtype."""
    return _ref(x, w, out, out_dtype)


@torch.library.custom_op("sglang::tiny_gemm", mutates_args=("out",))
def _tiny_gemm_op(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
    m, k = x.shape
    n = w.shape[0]
    if m == 0 or n == 0:
        return
    if k == 0:
        out.zero_()  # a sum of nothing
        return
    if not use_triton(x, w, out):
        _ref(x, w, out)
        return
    block_n = min(max(next_power_of_2(n), _MIN_BLOCK_N), _MAX_BLOCK_N)
    _tiny_gemm_kernel[(cdiv(m, _BLOCK_M), cdiv(n, block_n))](
        x,
        w,
        out,
        m,
        n,
        k,
        x.stride(0),
        x.stride(1),
        w.stride(0),
        w.stride(1),
        out.stride(0),
        out.stride(1),
        DOT_FP32=dot_in_fp32(x.dtype),
        BLOCK_M=_BLOCK_M,
        BLOCK_N=block_n,
        BLOCK_K=_BLOCK_K,
        num_warps=_NUM_WARPS,
    )


@_tiny_gemm_op.register_fake
def _(x, w, out) -> None:
    return None


def _tiny_gemm(op, x, w, out, out_dtype, split_n, max_m) -> torch.Tensor:
    check_operands(op, x, w)
    m, n = x.shape[0], w.shape[0]
    if isinstance(max_m, bool) or not isinstance(max_m, int) or max_m < 1:
        raise ValueError(f"{op}: max_m must be a positive int, got {max_m!r}")
    if m > max_m:
        raise ValueError(f"{op}: x must have at most max_m={max_m} rows, got {tuple(x.shape)}")
    if split_n is not None and (
        isinstance(split_n, bool) or not isinstance(split_n, int) or split_n < 1 or n % split_n
    ):
        raise ValueError(f"{op}: split_n must be a positive divisor of N={n}, got {split_n!r}")
    if out is None:
        out_dtype = out_dtype or torch.bfloat16
        if out_dtype not in _OUT_DTYPES:
            raise ValueError(f"{op}: out_dtype must be bf16, fp16 or fp32, got {out_dtype}")
        out = torch.empty((m, n), dtype=out_dtype, device=x.device)
    else:
        if not isinstance(out, torch.Tensor):
            raise ValueError(f"{op}: out must be a torch.Tensor or None, got {type(out).__name__}")  # noqa: TRY004
        if out_dtype is not None and out_dtype != out.dtype:
            raise ValueError(f"{op}: out_dtype {out_dtype} disagrees with out's {out.dtype}")
        if out.dtype not in _OUT_DTYPES:
            raise ValueError(f"{op}: out must be bf16, fp16 or fp32, got {out.dtype}")
        check_out(op, "out", out, (m, n), out.dtype, x.device)
    _tiny_gemm_op(x, w, out)
    return out


def tiny_n_gemm_bf16(
    x: torch.Tensor,
    w: torch.Tensor,
    out: Optional[torch.Tensor] = None,
    *,
    out_dtype: Optional[torch.dtype] = None,
    split_n: Optional[int] = None,
    max_m: int = _MAX_M_DEFAULT,
) -> torch.Tensor:
    """x [M, K] @ w [N, K].T -> out [M, N] (small N), M <= max_m; returns out."""
    return _tiny_gemm("tiny_n_gemm_bf16", x, w, out, out_dtype, split_n, max_m)


def tiny_k_gemm_bf16(
    x: torch.Tensor,
    w: torch.Tensor,
    out: Optional[torch.Tensor] = None,
    *,
    out_dtype: Optional[torch.dtype] = None,
    split_n: Optional[int] = None,
    max_m: int = _MAX_M_DEFAULT,
) -> torch.Tensor:
    """x [M, K] @ w [N, K].T -> out [M, N] (small K, large N), M <= max_m; returns out."""
    return _tiny_gemm("tiny_k_gemm_bf16", x, w, out, out_dtype, split_n, max_m)


__all__ = [
    "is_supported_tiny_gemm",
    "tiny_k_gemm_bf16",
    "tiny_k_gemm_bf16_ref",
    "tiny_n_gemm_bf16",
    "tiny_n_gemm_bf16_ref",
]
