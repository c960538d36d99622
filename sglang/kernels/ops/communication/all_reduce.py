"""Q/K RMSNorm over the full hidden dim when q and k are sharded across tensor-parallel ranks.

MiniMax-M2 normalizes the flattened q (all heads, `D_q = n_heads * head_dim`) and k with one
RMSNorm each, but under tensor parallelism every rank holds only `D_q / W` columns. The norm needs
the sum of squares of the whole row, so each rank

    1. computes its local per-row sums   sumsq[t] = (sum_j q[t, j]^2, sum_j k[t, j]^2)   (kernel 1)
    2. all-reduces `sumsq` ([T, 2] fp32, one collective for q and k) over the TP group
    3. normalizes its shard              q_out = q * rsqrt(sumsq_q / D_q + eps) * q_weight_shard
                                         k_out = k * rsqrt(sumsq_k / D_k + eps) * k_weight_shard
                                                                                        (kernel 2)

with `D = local_dim * world_size` (every rank holds an equal shard). Only `2 * T` floats cross the
interconnect instead of the `T * (D_q + D_k)` an all-gather of q and k would move. Arithmetic is in
fp32, the weight is applied in fp32 and the result rounded once (sglang's `RMSNorm` convention).

With `group=None` and `torch.distributed` not initialized the world size is 1 and no collective
runs. All ranks must call with the same number of tokens: the collective is skipped only when
`T == 0`, which then holds on every rank.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import triton
import triton.language as tl

from sglang.kernels.jit import MAX_FUSED_SIZE, cdiv, next_power_of_2, row_num_warps, use_triton

# The dtypes the kernels load and store; all are upcast to fp32 for the reduction.
_SUPPORTED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# Occupancy model for `get_fused_parallel_qknorm_max_occupancy`. Per-SM limits shared by sm_80
# (A100) and sm_90 (H100/H200), from the CUDA occupancy tables:
_REGISTERS_PER_SM = 65536  # 32-bit registers in one SM's register file
_MAX_THREADS_PER_SM = 2048  # resident threads per SM
_MAX_PROGRAMS_PER_SM = 32  # resident thread blocks per SM
_MAX_REGISTERS_PER_THREAD = 255  # the ISA limit; past it the compiler spills to local memory
_THREADS_PER_WARP = 32
# Registers a thread of the apply kernel needs besides its share of the rows: row pointers,
# offsets, the mask, eps and the two rstd scalars (what ptxas reports for such row kernels).
_BASE_REGISTERS_PER_THREAD = 32


@triton.jit
def _fused_parallel_qknorm_sumsq_kernel(
    sumsq_ptr,  # [n_rows, 2] fp32, contiguous: (sum q^2, sum k^2) of this rank's shard
    q_ptr,  # [n_rows, q_cols], fp32/fp16/bf16, last dim contiguous
    q_row_stride,  # elements between rows of q
    k_ptr,  # [n_rows, k_cols], q's dtype, last dim contiguous
    k_row_stride,  # elements between rows of k
    q_cols,  # local q width (D_q / world_size)
    k_cols,  # local k width (D_k / world_size)
    BLOCK_Q: tl.constexpr,  # next power of two >= q_cols
    BLOCK_K: tl.constexpr,  # next power of two >= k_cols
):
    pid = tl.program_id(0)
    q_offsets = tl.arange(0, BLOCK_Q)
    q_mask = q_offsets < q_cols
    k_offsets = tl.arange(0, BLOCK_K)
    k_mask = k_offsets < k_cols

    q = tl.load(q_ptr + pid * q_row_stride + q_offsets, mask=q_mask, other=0.0).to(tl.float32)
    k = tl.load(k_ptr + pid * k_row_stride + k_offsets, mask=k_mask, other=0.0).to(tl.float32)
    tl.store(sumsq_ptr + pid * 2, tl.sum(q * q, axis=0))
    tl.store(sumsq_ptr + pid * 2 + 1, tl.sum(k * k, axis=0))


@triton.jit
def _fused_parallel_qknorm_apply_kernel(
    q_out_ptr,  # [n_rows, q_cols], q's dtype, contiguous
    k_out_ptr,  # [n_rows, k_cols], q's dtype, contiguous
    q_ptr,  # [n_rows, q_cols], fp32/fp16/bf16, last dim contiguous
    q_row_stride,  # elements between rows of q
    k_ptr,  # [n_rows, k_cols], q's dtype, last dim contiguous
    k_row_stride,  # elements between rows of k
    q_w_ptr,  # [q_cols] this rank's shard of the q norm weight, fp32/fp16/bf16
    k_w_ptr,  # [k_cols] this rank's shard of the k norm weight, fp32/fp16/bf16
    sumsq_ptr,  # [n_rows, 2] fp32, contiguous: all-reduced (sum q^2, sum k^2) of the full rows
    q_cols,  # local q width
    k_cols,  # local k width
    q_full_dim,  # D_q = q_cols * world_size
    k_full_dim,  # D_k = k_cols * world_size
    eps,  # fp32 variance epsilon
    BLOCK_Q: tl.constexpr,  # next power of two >= q_cols
    BLOCK_K: tl.constexpr,  # next power of two >= k_cols
):
    pid = tl.program_id(0)
    q_offsets = tl.arange(0, BLOCK_Q)
    q_mask = q_offsets < q_cols
    k_offsets = tl.arange(0, BLOCK_K)
    k_mask = k_offsets < k_cols

    q_rstd = tl.rsqrt(tl.load(sumsq_ptr + pid * 2) / q_full_dim + eps)
    k_rstd = tl.rsqrt(tl.load(sumsq_ptr + pid * 2 + 1) / k_full_dim + eps)

    q = tl.load(q_ptr + pid * q_row_stride + q_offsets, mask=q_mask, other=0.0).to(tl.float32)
    q_w = tl.load(q_w_ptr + q_offsets, mask=q_mask, other=0.0).to(tl.float32)
    q_out = (q * q_rstd * q_w).to(q_out_ptr.dtype.element_ty)
    tl.store(q_out_ptr + pid * q_cols + q_offsets, q_out, mask=q_mask)

    k = tl.load(k_ptr + pid * k_row_stride + k_offsets, mask=k_mask, other=0.0).to(tl.float32)
    k_w = tl.load(k_w_ptr + k_offsets, mask=k_mask, other=0.0).to(tl.float32)
    k_out = (k * k_rstd * k_w).to(k_out_ptr.dtype.element_ty)
    tl.store(k_out_ptr + pid * k_cols + k_offsets, k_out, mask=k_mask)



def _world_size(group) -> int:
    if not dist.is_available() or not dist.is_initialized():
        if group is not None:
            raise ValueError(
                "fused_parallel_qknorm: group was given but torch.distributed is not initialized"
            )
        return 1
    return dist.get_world_size(group)


def get_fused_parallel_qknorm_max_occupancy(
    hidden_q: int, hidden_k: int, dtype: torch.dtype
) -> int:
    """How many programs (one token row each) of the apply kernel one SM keeps resident.

    `hidden_q` and `hidden_k` are the per-rank row widths the kernel sees. The model: a program
    has `row_num_warps(max block)` warps and holds, spread over its threads, every element of its q
    and k row blocks as an fp32 value and an fp32 weight plus the raw loaded bits of both
    (`dtype.itemsize / 4` registers each), on top of `_BASE_REGISTERS_PER_THREAD`. The answer is
    the tightest of the register file, the thread and the block limits of one SM, at least 1.
    It depends only on its arguments (no device query), and never grows with either width.
    """
    for name, value in (("hidden_q", hidden_q), ("hidden_k", hidden_k)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(
                f"get_fused_parallel_qknorm_max_occupancy: {name} must be a positive int, "
                f"got {value!r}"
            )
    if dtype not in _SUPPORTED_DTYPES:
        raise ValueError(
            "get_fused_parallel_qknorm_max_occupancy: dtype must be fp32, fp16 or bf16, "
            f"got {dtype}"
        )
    block_q, block_k = next_power_of_2(hidden_q), next_power_of_2(hidden_k)
    threads = row_num_warps(max(block_q, block_k)) * _THREADS_PER_WARP
    # Per element: its fp32 value and fp32 weight (2 registers) plus the raw loaded bits of both
    # (itemsize / 4 registers each), counted in quarter registers to stay in integers.
    quarter_registers = (block_q + block_k) * (2 * 4 + 2 * dtype.itemsize)
    row_registers = cdiv(quarter_registers, 4 * threads)
    per_thread = min(_BASE_REGISTERS_PER_THREAD + row_registers, _MAX_REGISTERS_PER_THREAD)
    by_registers = _REGISTERS_PER_SM // (per_thread * threads)
    by_threads = _MAX_THREADS_PER_SM // threads
    return max(1, min(_MAX_PROGRAMS_PER_SM, by_registers, by_threads))


def fused_parallel_qknorm_ref(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    eps: float = 1e-6,
    group=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pure-torch reference, the same math (and the same all_reduce when world size > 1)."""
    world_size = _world_size(group)
    q32, k32 = q.to(torch.float32), k.to(torch.float32)
    sumsq = torch.stack([q32.pow(2).sum(-1), k32.pow(2).sum(-1)], dim=-1)
    if world_size > 1:
        dist.all_reduce(sumsq, group=group)
    q_rstd = torch.rsqrt(sumsq[:, 0:1] / (q.shape[-1] * world_size) + eps)
    k_rstd = torch.rsqrt(sumsq[:, 1:2] / (k.shape[-1] * world_size) + eps)
    q_out = (q32 * q_rstd * q_weight.to(torch.float32)).to(q.dtype)
    k_out = (k32 * k_rstd * k_weight.to(torch.float32)).to(k.dtype)
    return q_out, k_out


def _validate(
    q: torch.Tensor, k: torch.Tensor, q_weight: torch.Tensor, k_weight: torch.Tensor, eps: float
) -> None:
    for name, t in (("q", q), ("k", k)):
        if t.dim() != 2 or t.shape[1] == 0:
            raise ValueError(
                f"fused_parallel_qknorm: {name} must be 2-D [T, local_dim] with local_dim > 0, "
                f"got {tuple(t.shape)}"
            )
    if k.shape[0] != q.shape[0]:
        raise ValueError(
            f"fused_parallel_qknorm: k must have q's {q.shape[0]} rows, got {tuple(k.shape)}"
        )
    if q.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"fused_parallel_qknorm: q must be fp32, fp16 or bf16, got {q.dtype}")
    if k.dtype != q.dtype:
        raise ValueError(f"fused_parallel_qknorm: k must have q's dtype {q.dtype}, got {k.dtype}")
    for name, w, cols in (("q_weight", q_weight, q.shape[1]), ("k_weight", k_weight, k.shape[1])):
        if w.shape != (cols,):
            raise ValueError(
                f"fused_parallel_qknorm: {name} must have shape ({cols},), got {tuple(w.shape)}"
            )
        if w.dtype not in _SUPPORTED_DTYPES:
            raise ValueError(
                f"fused_parallel_qknorm: {name} must be fp32, fp16 or bf16, got {w.dtype}"
            )
    for name, t in (("k", k), ("q_weight", q_weight), ("k_weight", k_weight)):
        if t.device != q.device:
            raise ValueError(
                f"fused_parallel_qknorm: {name} must be on {q.device} like q, got {t.device}"
            )
    if not eps >= 0.0:
        raise ValueError(f"fused_parallel_qknorm: eps must be a non-negative float, got {eps!r}")


def fused_parallel_qknorm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    eps: float = 1e-6,
    group=None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm of this rank's q `[T, D_q / W]` and k `[T, D_k / W]` shards over the full rows.

    `q_weight` / `k_weight` are this rank's shards (`[D_q / W]`, `[D_k / W]`); `group` is the
    tensor-parallel process group (None: the default group, or world size 1 when
    `torch.distributed` is not initialized). Returns new `(q_out, k_out)` of q's dtype.
    """
    _validate(q, k, q_weight, k_weight, eps)
    world_size = _world_size(group)
    n_rows, q_cols = q.shape
    k_cols = k.shape[1]
    if n_rows == 0:
        return torch.empty_like(q), torch.empty_like(k)
    if not use_triton(q, k, q_weight, k_weight) or max(q_cols, k_cols) > MAX_FUSED_SIZE:
        # Rows wider than one fused block do not fit the one-program-per-row kernels.
        return fused_parallel_qknorm_ref(q, k, q_weight, k_weight, eps, group)

    if q.stride(-1) != 1:
        q = q.contiguous()
    if k.stride(-1) != 1:
        k = k.contiguous()
    q_weight, k_weight = q_weight.contiguous(), k_weight.contiguous()
    block_q, block_k = next_power_of_2(q_cols), next_power_of_2(k_cols)
    num_warps = row_num_warps(max(block_q, block_k))

    sumsq = torch.empty((n_rows, 2), dtype=torch.float32, device=q.device)
    _fused_parallel_qknorm_sumsq_kernel[(n_rows,)](
        sumsq,
        q,
        q.stride(0),
        k,
        k.stride(0),
        q_cols,
        k_cols,
        BLOCK_Q=block_q,
        BLOCK_K=block_k,
        num_warps=num_warps,
    )
    if world_size > 1:
        dist.all_reduce(sumsq, group=group)

    q_out = torch.empty((n_rows, q_cols), dtype=q.dtype, device=q.device)
    k_out = torch.empty((n_rows, k_cols), dtype=q.dtype, device=q.device)
    _fused_parallel_qknorm_apply_kernel[(n_rows,)](
        q_out,
        k_out,
        q,
        q.stride(0),
        k,
        k.stride(0),
        q_weight,
        k_weight,
        sumsq,
        q_cols,
        k_cols,
        q_cols * world_size,
        k_cols * world_size,
        float(eps),
        BLOCK_Q=block_q,
        BLOCK_K=block_k,
        num_warps=num_warps,
    )
    return q_out, k_out


__all__ = [
    "fused_parallel_qknorm",
    "fused_parallel_qknorm_ref",
    "get_fused_parallel_qknorm_max_occupancy",
]
