"""The custom all-reduce's operators: `fused_parallel_qknorm` (a sharded Q/K RMSNorm whose sum of
squares crosses the tensor-parallel ranks) and `custom_all_reduce`, with upstream's API.

Upstream's contract (sglang 0.5.17 `kernels/ops/communication/all_reduce.py` and
`jit/csrc/distributed/tp_qknorm.cuh`): `fused_parallel_qknorm(comm, q, k, q_weight, k_weight,
eps=1e-6) -> None` normalizes this rank's shards q [T, D_q / W] and k [T, D_k / W] IN PLACE over
the full rows. Each rank adds eps / W to its local sums of squares, the ranks exchange them (one
push of 2 floats per token through the communicator's IPC buffers), and

    q <- float(q) * rsqrt((sum_all_ranks q^2 + eps) / D_q) * float(q_weight)   (cast to q's dtype)

and k alike; D = local width * W. Note the eps: it is added to the SUM (eps / D on the mean),
where upstream's unfused `MiniMaxM2RMSNormTP` adds it to the mean; this operator keeps the
fused kernel's semantics. `get_fused_parallel_qknorm_max_occupancy(dtype, world_size, q_dim,
k_dim)` (full dims) is how many token rows one SM keeps resident, which upstream's MiniMax-M2
uses to size the all-reduce push buffer. `custom_all_reduce(comm, input, algo, pull_arg)` returns
the sum of `input` over the ranks.

Differs from upstream: upstream's `Communicator` is a tvm-ffi object over CUDA IPC symmetric
memory, which this repository does not have. Here `comm` is anything with `world_size` (and
optionally `group`, a `torch.distributed` process group, and `rank`), e.g. `TorchCommunicator`;
the exchange is one `torch.distributed.all_reduce` of a [T, 2] fp32 tensor (2 T floats, as
upstream pushes), between two Triton kernels (local sums; normalize in place). With world size 1
no collective runs. `custom_all_reduce` likewise is `torch.distributed.all_reduce` on a copy;
`algo` is validated (an `AllReduceAlgo`) and `pull_arg` accepted, both otherwise unused (they
pick upstream's IPC schedule). `custom_all_reduce` takes both releases' calls: `pull_arg` is
optional (0.5.23 dropped it) and 0.5.23's keyword-only `graph_params` and `use_multicast` are
accepted and checked, likewise unused. Any strides are taken (upstream: last dim contiguous).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Union

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
    sumsq_ptr,  # [n_rows, 2] fp32, contiguous: (sum q^2, sum k^2) of this rank's shard + eps / W
    q_ptr,  # [n_rows, q_cols], fp32/fp16/bf16
    q_row_stride,
    q_col_stride,
    k_ptr,  # [n_rows, k_cols], q's dtype
    k_row_stride,
    k_col_stride,
    q_cols,  # local q width (D_q / world_size)
    k_cols,  # local k width (D_k / world_size)
    eps_share,  # eps / world_size: the ranks' shares add up to eps
    BLOCK_Q: tl.constexpr,  # next power of two >= q_cols
    BLOCK_K: tl.constexpr,  # next power of two >= k_cols
):
    pid = tl.program_id(0).to(tl.int64)
    q_offsets = tl.arange(0, BLOCK_Q).to(tl.int64)
    k_offsets = tl.arange(0, BLOCK_K).to(tl.int64)
    q = tl.load(q_ptr + pid * q_row_stride + q_offsets * q_col_stride, mask=q_offsets < q_cols,
                other=0.0).to(tl.float32)
    k = tl.load(k_ptr + pid * k_row_stride + k_offsets * k_col_stride, mask=k_offsets < k_cols,
                other=0.0).to(tl.float32)
    tl.store(sumsq_ptr + pid * 2, tl.sum(q * q, axis=0) + eps_share)
    tl.store(sumsq_ptr + pid * 2 + 1, tl.sum(k * k, axis=0) + eps_share)


@triton.jit
def _fused_parallel_qknorm_apply_kernel(
    q_ptr,  # [n_rows, q_cols], fp32/fp16/bf16, normalized in place
    q_row_stride,
    q_col_stride,
    k_ptr,  # [n_rows, k_cols], q's dtype, normalized in place
    k_row_stride,
    k_col_stride,
    q_w_ptr,  # [q_cols] this rank's shard of the q norm weight, q's dtype
    q_w_stride,
    k_w_ptr,  # [k_cols] this rank's shard of the k norm weight, q's dtype
    k_w_stride,
    sumsq_ptr,  # [n_rows, 2] fp32, contiguous: all-reduced (sum q^2 + eps, sum k^2 + eps)
    q_cols,
    k_cols,
    q_full_dim,  # D_q = q_cols * world_size
    k_full_dim,  # D_k = k_cols * world_size
    BLOCK_Q: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    q_offsets = tl.arange(0, BLOCK_Q).to(tl.int64)
    q_mask = q_offsets < q_cols
    k_offsets = tl.arange(0, BLOCK_K).to(tl.int64)
    k_mask = k_offsets < k_cols
    q_scale = tl.rsqrt(tl.load(sumsq_ptr + pid * 2) / q_full_dim)
    k_scale = tl.rsqrt(tl.load(sumsq_ptr + pid * 2 + 1) / k_full_dim)

    q_addr = q_ptr + pid * q_row_stride + q_offsets * q_col_stride
    q = tl.load(q_addr, mask=q_mask, other=0.0).to(tl.float32)
    q_w = tl.load(q_w_ptr + q_offsets * q_w_stride, mask=q_mask, other=0.0).to(tl.float32)
    tl.store(q_addr, (q * q_scale * q_w).to(q_ptr.dtype.element_ty), mask=q_mask)

    k_addr = k_ptr + pid * k_row_stride + k_offsets * k_col_stride
    k = tl.load(k_addr, mask=k_mask, other=0.0).to(tl.float32)
    k_w = tl.load(k_w_ptr + k_offsets * k_w_stride, mask=k_mask, other=0.0).to(tl.float32)
    tl.store(k_addr, (k * k_scale * k_w).to(k_ptr.dtype.element_ty), mask=k_mask)


class AllReduceAlgo(enum.Enum):
    ONE_SHOT_PUSH = enum.auto()
    ONE_SHOT_PULL = enum.auto()
    TWO_SHOT_PULL = enum.auto()

    def is_push(self) -> bool:
        return self == AllReduceAlgo.ONE_SHOT_PUSH

    @property
    def algo_name(self) -> str:
        return _ALGO_NAMES[self]


_ALGO_NAMES = {
    AllReduceAlgo.ONE_SHOT_PUSH: "1shot_push",
    AllReduceAlgo.ONE_SHOT_PULL: "1shot_pull",
    AllReduceAlgo.TWO_SHOT_PULL: "2shot_pull",
}

# `pull_arg` of upstream's all-reduce kernel: a graph-params pointer-table row, or a bool.
PullArg = Union[torch.Tensor, bool]


@dataclass(frozen=True)
class TorchCommunicator:
    """The `comm` of these operators over `torch.distributed`: (rank, world size, process group).

    `TorchCommunicator.from_group(group)` reads both from an initialized group (None: the
    default group), or gives rank 0 of 1 when `torch.distributed` is not initialized.
    """

    rank: int = 0
    world_size: int = 1
    group: Any = None

    @classmethod
    def from_group(cls, group=None) -> "TorchCommunicator":
        if not dist.is_available() or not dist.is_initialized():
            if group is not None:
                raise ValueError("TorchCommunicator: group was given but torch.distributed is "
                                 "not initialized")
            return cls()
        return cls(dist.get_rank(group), dist.get_world_size(group), group)


def _comm_world(op: str, comm) -> tuple[int, Any]:
    world_size = getattr(comm, "world_size", None)
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"{op}: comm must have a positive int `world_size` (e.g. a "
                         f"`TorchCommunicator`), got {type(comm).__name__} with {world_size!r}")
    group = getattr(comm, "group", None)
    if world_size > 1 and (not dist.is_available() or not dist.is_initialized()):
        raise ValueError(f"{op}: comm has world_size {world_size} but torch.distributed is not "
                         "initialized")
    return world_size, group


def get_fused_parallel_qknorm_max_occupancy(
    dtype: torch.dtype, world_size: int, q_dim: int, k_dim: int
) -> int:
    """How many programs (one token row each) of the apply kernel one SM keeps resident.

    `q_dim` / `k_dim` are the FULL widths (as upstream passes them); each rank's kernel sees
    `q_dim / world_size` and `k_dim / world_size`. The model: a program has
    `row_num_warps(max block)` warps and holds, spread over its threads, every element of its q
    and k row blocks as an fp32 value and an fp32 weight plus the raw loaded bits of both
    (`dtype.itemsize / 4` registers each), on top of `_BASE_REGISTERS_PER_THREAD`. The answer is
    the tightest of the register file, the thread and the block limits of one SM, at least 1.
    It depends only on its arguments (no device query), and never grows with either width.
    """
    op = "get_fused_parallel_qknorm_max_occupancy"
    for name, value in (("world_size", world_size), ("q_dim", q_dim), ("k_dim", k_dim)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{op}: {name} must be a positive int, got {value!r}")
    for name, value in (("q_dim", q_dim), ("k_dim", k_dim)):
        if value % world_size:
            raise ValueError(f"{op}: {name} {value} must divide by world_size {world_size}")
    if dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"{op}: dtype must be fp32, fp16 or bf16, got {dtype}")
    block_q, block_k = next_power_of_2(q_dim // world_size), next_power_of_2(k_dim // world_size)
    threads = row_num_warps(max(block_q, block_k)) * _THREADS_PER_WARP
    # Per element: its fp32 value and fp32 weight (2 registers) plus the raw loaded bits of both
    # (itemsize / 4 registers each), counted in quarter registers to stay in integers.
    quarter_registers = (block_q + block_k) * (2 * 4 + 2 * dtype.itemsize)
    row_registers = cdiv(quarter_registers, 4 * threads)
    per_thread = min(_BASE_REGISTERS_PER_THREAD + row_registers, _MAX_REGISTERS_PER_THREAD)
    by_registers = _REGISTERS_PER_SM // (per_thread * threads)
    by_threads = _MAX_THREADS_PER_SM // threads
    return max(1, min(_MAX_PROGRAMS_PER_SM, by_registers, by_threads))


def _sumsq_torch(q, k, eps_share):
    q32, k32 = q.to(torch.float32), k.to(torch.float32)
    return torch.stack([q32.pow(2).sum(-1), k32.pow(2).sum(-1)], dim=-1) + eps_share


def _apply_torch(q, k, q_weight, k_weight, sumsq, world_size):
    q_scale = torch.rsqrt(sumsq[:, 0:1] / (q.shape[-1] * world_size))
    k_scale = torch.rsqrt(sumsq[:, 1:2] / (k.shape[-1] * world_size))
    q.copy_((q.to(torch.float32) * q_scale * q_weight.to(torch.float32)).to(q.dtype))
    k.copy_((k.to(torch.float32) * k_scale * k_weight.to(torch.float32)).to(k.dtype))


def fused_parallel_qknorm_ref(
    comm,
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    eps: float = 1e-6,
) -> None:
    """Pure-torch reference: the same math and collective, q and k normalized in place."""
    world_size, group = _comm_world("fused_parallel_qknorm_ref", comm)
    sumsq = _sumsq_torch(q, k, eps / world_size)
    if world_size > 1:
        dist.all_reduce(sumsq, group=group)
    _apply_torch(q, k, q_weight, k_weight, sumsq, world_size)


@torch.library.custom_op("sglang::fused_parallel_qknorm_sumsq", mutates_args=("sumsq",))
def _sumsq_op(q: torch.Tensor, k: torch.Tensor, sumsq: torch.Tensor, eps_share: float) -> None:
    if not use_triton(q, k, sumsq) or max(q.shape[1], k.shape[1]) > MAX_FUSED_SIZE:
        sumsq.copy_(_sumsq_torch(q, k, eps_share))  # rows wider than one fused block
        return
    block_q, block_k = next_power_of_2(q.shape[1]), next_power_of_2(k.shape[1])
    _fused_parallel_qknorm_sumsq_kernel[(q.shape[0],)](
        sumsq, q, *q.stride(), k, *k.stride(), q.shape[1], k.shape[1], eps_share,
        BLOCK_Q=block_q, BLOCK_K=block_k, num_warps=row_num_warps(max(block_q, block_k)),
    )


@_sumsq_op.register_fake
def _(q, k, sumsq, eps_share) -> None:
    return None


@torch.library.custom_op("sglang::fused_parallel_qknorm", mutates_args=("q", "k"))
def _apply_op(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    sumsq: torch.Tensor,
    world_size: int,
) -> None:
    if not use_triton(q, k, q_weight, k_weight, sumsq) or max(q.shape[1], k.shape[1]) > MAX_FUSED_SIZE:
        _apply_torch(q, k, q_weight, k_weight, sumsq, world_size)
        return
    block_q, block_k = next_power_of_2(q.shape[1]), next_power_of_2(k.shape[1])
    _fused_parallel_qknorm_apply_kernel[(q.shape[0],)](
        q, *q.stride(), k, *k.stride(), q_weight, q_weight.stride(0), k_weight, k_weight.stride(0),
        sumsq, q.shape[1], k.shape[1], q.shape[1] * world_size, k.shape[1] * world_size,
        BLOCK_Q=block_q, BLOCK_K=block_k, num_warps=row_num_warps(max(block_q, block_k)),
    )


@_apply_op.register_fake
def _(q, k, q_weight, k_weight, sumsq, world_size) -> None:
    return None


def _validate(q, k, q_weight, k_weight, eps) -> None:
    for name, t in (("q", q), ("k", k)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2 or t.shape[1] == 0:
            raise ValueError(
                f"fused_parallel_qknorm: {name} must be 2-D [T, local_dim] with local_dim > 0, "
                f"got {tuple(getattr(t, 'shape', ()))}"
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
        if not isinstance(w, torch.Tensor):
            raise ValueError(f"fused_parallel_qknorm: {name} must be a torch.Tensor, got {type(w).__name__}")  # noqa: TRY004
        if w.shape != (cols,):
            raise ValueError(
                f"fused_parallel_qknorm: {name} must have shape ({cols},), got {tuple(w.shape)}"
            )
        if w.dtype != q.dtype:
            raise ValueError(
                f"fused_parallel_qknorm: {name} must have q's dtype {q.dtype}, got {w.dtype}"
            )
    for name, t in (("k", k), ("q_weight", q_weight), ("k_weight", k_weight)):
        if t.device != q.device:
            raise ValueError(
                f"fused_parallel_qknorm: {name} must be on {q.device} like q, got {t.device}"
            )
    if not eps > 0.0:
        # Upstream's ranks wait for a non-zero sum: eps > 0 is what makes it non-zero.
        raise ValueError(f"fused_parallel_qknorm: eps must be a positive float, got {eps!r}")


def fused_parallel_qknorm(
    comm,
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor,
    k_weight: torch.Tensor,
    eps: float = 1e-6,
) -> None:
    """RMSNorm of this rank's q [T, D_q / W] and k [T, D_k / W] shards over the full rows, in place.

    `comm.world_size` is W (`comm.group` the process group); all ranks call with the same T.
    """
    _validate(q, k, q_weight, k_weight, eps)
    world_size, group = _comm_world("fused_parallel_qknorm", comm)
    if q.shape[0] == 0:
        return  # T == 0 on every rank, so every rank skips the collective
    sumsq = torch.empty((q.shape[0], 2), dtype=torch.float32, device=q.device)
    _sumsq_op(q, k, sumsq, float(eps) / world_size)
    if world_size > 1:
        dist.all_reduce(sumsq, group=group)
    _apply_op(q, k, q_weight, k_weight, sumsq, world_size)


def custom_all_reduce(
    comm,
    input: torch.Tensor,
    algo: AllReduceAlgo,
    pull_arg: PullArg | None = None,
    *,
    graph_params: torch.Tensor | None = None,
    use_multicast: bool = False,
):
    """The sum of `input` over `comm`'s ranks, as a new tensor (`input` is left as it is).

    Both releases' calls: 0.5.17's `(comm, input, algo, pull_arg)` and 0.5.23's `(comm, input,
    algo, *, graph_params=None, use_multicast=False)`. `pull_arg` / `graph_params` (a CUDA-graph
    pointer-table row) and `use_multicast` (NVLink multicast) pick upstream's IPC schedule;
    they are checked and do not change the sum.
    """
    op = "custom_all_reduce"
    if not isinstance(algo, AllReduceAlgo):
        raise ValueError(f"{op}: algo must be an AllReduceAlgo, got {algo!r}")
    if pull_arg is not None and graph_params is not None:
        raise ValueError(f"{op}: pass pull_arg (0.5.17) or graph_params (0.5.23), not both")
    if graph_params is not None and not isinstance(graph_params, torch.Tensor):
        raise ValueError(f"{op}: graph_params must be a torch.Tensor or None, got {type(graph_params).__name__}")  # noqa: TRY004
    if not isinstance(use_multicast, bool):
        raise ValueError(f"{op}: use_multicast must be a bool, got {use_multicast!r}")
    world_size, group = _comm_world("custom_all_reduce", comm)
    out = input.clone()
    if world_size > 1:
        dist.all_reduce(out, group=group)
    return out


__all__ = [
    "AllReduceAlgo",
    "TorchCommunicator",
    "custom_all_reduce",
    "fused_parallel_qknorm",
    "fused_parallel_qknorm_ref",
    "get_fused_parallel_qknorm_max_occupancy",
]
