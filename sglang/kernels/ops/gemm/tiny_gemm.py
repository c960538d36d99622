"""`tiny_n_gemm_bf16` / `tiny_k_gemm_bf16` (0.5.17) and `tiny_gemm_bf16` (0.5.23): out = x @ w.T
for a decode batch (M <= max_m).

Upstream (sglang 0.5.17 `kernels/ops/gemm/tiny_gemm.py`) has two CUDA kernels for skinny GEMMs
of a few tokens: `tiny_n_gemm_bf16` (small N: MoE routers and gates, one block per `split_n`
output columns walking all of K) and `tiny_k_gemm_bf16` (small K, large N: K / 8 lanes of a warp
reduce one output column). Both take x [M, K] and w [N, K] in bf16, write `out` [M, N] (allocated
in `out_dtype`, default bf16, when not given) and return it, and require 1 <= M <= max_m.

    out[m, n] = sum_k float32(x[m, k]) * float32(w[n, k])      (cast to out's dtype)

Upstream 0.5.23 replaced the pair with one entry point, `tiny_gemm_bf16(x, w, out=None, *,
out_dtype=None, n_split=None, max_m=16)`, which picks the variant by the tiny dimension, and
`can_use_tiny_gemm(n, k, max_m=16)`, which says whether its CUDA kernels take the shape (callers
fall back to a general GEMM when False). It also takes fp32 weights beside a bf16 x (for N < K),
"never downcast": the products are fp32 x fp32. All four are here, so both releases' calls work.

Here one Triton kernel serves all three: a program owns BLOCK_M rows and a BLOCK_N block of
columns and walks K once with an fp32 accumulator, so each x row is read once per column block.
`can_use_tiny_gemm` gives upstream's answer (the same shape arithmetic, so a caller routes the
same shapes to it), though `tiny_gemm_bf16` serves any shape.

Differs from upstream: `split_n` is a CUDA block-shape knob; it is validated as upstream requires
(a divisor of N) and otherwise unused, since the Triton tiling is chosen from N. fp16 and fp32
inputs are taken as well as bf16 (`is_supported_tiny_gemm` says what is), any N and K (upstream's
vector widths need K % 8 == 0, and `tiny_k_gemm_bf16` K / 8 a power of two <= 32), and any
strides. M = 0 returns the empty `out` (upstream rejects it). `tiny_gemm_bf16` takes fp32
weights for any N and K (upstream's need N < K) by upcasting x (exact), and serves shapes
`can_use_tiny_gemm` rejects, where upstream's raises.
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


# Upstream 0.5.23's CUDA shape rules (`tiny_gemm.py`, mirroring `tiny_gemm.cuh`): the N variant
# gives each thread 16 K-elements (32 bytes) and needs whole warps, at most 1024 threads and
# one thread per row; the K variant reduces K / 8 lanes inside a warp.
_WARP_THREADS = 32
_MAX_BLOCK_THREADS = 1024
_N_GEMM_ELEMS_PER_THREAD = 16
_K_GEMM_ELEMS_PER_THREAD = 8


def _upstream_takes(n: int, k: int, max_m: int) -> bool:
    """Whether upstream's CUDA kernels take `[m <= max_m, k] @ [n, k].T` (its shape arithmetic)."""
    if k <= n:  # the K variant: K is the tiny dimension
        lanes = k // _K_GEMM_ELEMS_PER_THREAD
        return (k % _K_GEMM_ELEMS_PER_THREAD == 0 and k > _K_GEMM_ELEMS_PER_THREAD
                and _WARP_THREADS % lanes == 0 and n % (_WARP_THREADS // lanes) == 0)
    block = k // _N_GEMM_ELEMS_PER_THREAD
    return (k % _N_GEMM_ELEMS_PER_THREAD == 0 and block % _WARP_THREADS == 0
            and block <= _MAX_BLOCK_THREADS and block >= max_m)


def can_use_tiny_gemm(n: int, k: int, max_m: int = 16) -> bool:
    """Upstream 0.5.23's answer: whether `tiny_gemm_bf16` serves `[m, k] @ [n, k].T` for m <= max_m.

    The same shape rules as upstream's CUDA kernels, so callers route the same shapes here, and
    Triton must be able to run (CUDA, or the CPU interpreter). Non-positive or non-int sizes: False.
    """
    from sglang.kernels.jit import has_cuda, interpreter_enabled, triton_available

    if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in (n, k, max_m)):
        return False
    return _upstream_takes(n, k, max_m) and triton_available() and (has_cuda() or interpreter_enabled())


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


def tiny_gemm_bf16_ref(
    x: torch.Tensor,
    w: torch.Tensor,
    out: Optional[torch.Tensor] = None,
    *,
    out_dtype: Optional[torch.dtype] = None,
    n_split: Optional[int] = None,
    max_m: int = 16,
) -> torch.Tensor:
    """Pure-torch reference: fp32 matmul (fp32 weights as they are), cast to out's dtype."""
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


def _tiny_gemm(op, x, w, out, out_dtype, split_n, max_m, split_name="split_n") -> torch.Tensor:
    check_operands(op, x, w)
    m, n = x.shape[0], w.shape[0]
    if isinstance(max_m, bool) or not isinstance(max_m, int) or max_m < 1:
        raise ValueError(f"{op}: max_m must be a positive int, got {max_m!r}")
    if m > max_m:
        raise ValueError(f"{op}: x must have at most max_m={max_m} rows, got {tuple(x.shape)}")
    if split_n is not None and (
        isinstance(split_n, bool) or not isinstance(split_n, int) or split_n < 1 or n % split_n
    ):
        raise ValueError(f"{op}: {split_name} must be a positive divisor of N={n}, got {split_n!r}")
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


def tiny_gemm_bf16(
    x: torch.Tensor,
    w: torch.Tensor,
    out: Optional[torch.Tensor] = None,
    *,
    out_dtype: Optional[torch.dtype] = None,
    n_split: Optional[int] = None,
    max_m: int = 16,
) -> torch.Tensor:
    """x [M, K] @ w [N, K].T -> out [M, N], M <= max_m (upstream 0.5.23's one entry point); returns out.

    `w` has x's dtype, or is fp32 beside a bf16 x (never downcast: x is upcast, exactly);
    `n_split` is upstream's block-shape knob, a positive divisor of N, otherwise unused.
    """
    op = "tiny_gemm_bf16"
    if (isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor)
            and x.dtype == torch.bfloat16 and w.dtype == torch.float32):
        x = x.float()  # bf16 -> fp32 is exact: the products are upstream's fp32 x fp32
    return _tiny_gemm(op, x, w, out, out_dtype, n_split, max_m, split_name="n_split")


__all__ = [
    "can_use_tiny_gemm",
    "is_supported_tiny_gemm",
    "tiny_gemm_bf16",
    "tiny_gemm_bf16_ref",
    "tiny_k_gemm_bf16",
    "tiny_k_gemm_bf16_ref",
    "tiny_n_gemm_bf16",
    "tiny_n_gemm_bf16_ref",
]
