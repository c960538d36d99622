"""Mamba state-slot transfer: copy whole per-request state slots between two state pools.

    dst_states[j][dst_indices[i]] = src_states[j][src_indices[i]]    for every state tensor j

A state pool is a tensor `[num_slots, ...]` (conv state `[num_slots, dim, W-1]`, SSM state
`[num_slots, heads, head_dim, d_state]`, ...) or a list of them; src and dst lists pair up and
each pair has one slot shape and dtype. Source and destination may be the same pool (copying a
prefix's state into a new request's slot), two device pools, or a device pool and a host pool.

Why a kernel: a request's state is a few hundred KB spread over several tensors and layers;
moving N slots with torch is a gather, a temporary and a scatter per tensor. The kernel copies
each slot straight from its source to its destination, one launch per state tensor (the tensors
differ in shape and dtype, so one launch cannot address them all without a pointer table).
"""

from __future__ import annotations

import contextlib

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import check_index, check_index_range, copy_kernel_device, next_power_of_2

# Dtypes the Triton path copies (it loads and stores the element type); others (int8 states,
# fp8 stored as uint8, ...) take the torch path, which is a byte copy.
_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# At most 4096 elements per program: a slot is often tens of thousands of elements, so each
# program moves 8-16 KiB, long enough to hide the two index loads; 4 warps x 32 threads x 8
# elements per 16-byte vector cover 1024 elements a pass, so a block is four passes.
_MAX_BLOCK = 4096


@triton.jit
def _transfer_mamba_states_kernel(
    src_ptr,  # [S_src, n_cols] source state pool, each slot contiguous
    dst_ptr,  # [S_dst, n_cols] destination state pool, same dtype
    src_idx_ptr,  # int64 [N] source slot of each copy
    dst_idx_ptr,  # int64 [N] destination slot of each copy (no duplicates)
    src_row_stride,  # elements between src slots
    dst_row_stride,  # elements between dst slots
    n_cols,  # elements per slot
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    pid = tl.program_id(0)  # which index pair
    col_block = tl.program_id(1)  # which BLOCK_SIZE slice of the slot
    offsets = col_block.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_cols

    src = tl.load(src_idx_ptr + pid)
    dst = tl.load(dst_idx_ptr + pid)
    # A move, not arithmetic: no fp32 upcast, the bits go out as they came in.
    vals = tl.load(src_ptr + src * src_row_stride + offsets, mask=mask)
    tl.store(dst_ptr + dst * dst_row_stride + offsets, vals, mask=mask)


def _as_list(states) -> list:
    return list(states) if isinstance(states, (list, tuple)) else [states]


def transfer_mamba_states_ref(src_states, dst_states, src_indices, dst_indices) -> None:
    """Pure-torch reference: gather the slots, move them to dst's device, scatter them in place.

    A copy, so nothing to upcast; it reads every source slot before writing, so a same-pool copy
    whose sources and destinations overlap is still well defined here (the public function
    rejects that case, because a parallel copy is not).
    """
    for src, dst in zip(_as_list(src_states), _as_list(dst_states)):
        rows = src[src_indices.to(src.device)]
        dst[dst_indices.to(dst.device)] = rows.to(dst.device)


def _slot_is_contiguous(t: torch.Tensor) -> bool:
    if t.numel() == 0:
        return True
    return t.as_strided(t.shape[1:], t.stride()[1:]).is_contiguous()


def _validate(srcs: list, dsts: list, src_indices, dst_indices) -> None:
    op = "transfer_mamba_states"
    if not srcs or len(srcs) != len(dsts):
        raise ValueError(
            f"{op}: dst_states must pair up with src_states, got {len(srcs)} source and "
            f"{len(dsts)} destination tensors"
        )
    for j, (src, dst) in enumerate(zip(srcs, dsts)):
        for name, t in ((f"src_states[{j}]", src), (f"dst_states[{j}]", dst)):
            if not isinstance(t, torch.Tensor):
                raise ValueError(  # noqa: TRY004 - validation raises ValueError only
                    f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}"
                )
            if t.dim() < 1:
                raise ValueError(
                    f"{op}: {name} must have shape [num_slots, ...], got {tuple(t.shape)}"
                )
            if not _slot_is_contiguous(t):
                raise ValueError(
                    f"{op}: {name} must be contiguous within each slot, got shape "
                    f"{tuple(t.shape)} strides {t.stride()}"
                )
        if tuple(dst.shape[1:]) != tuple(src.shape[1:]):
            raise ValueError(
                f"{op}: dst_states[{j}] slots must have shape {tuple(src.shape[1:])} like "
                f"src_states[{j}]'s, got {tuple(dst.shape)}"
            )
        if dst.dtype != src.dtype:
            raise ValueError(
                f"{op}: dst_states[{j}] must have dtype {src.dtype} like src_states[{j}], "
                f"got {dst.dtype}"
            )
        for name, t, ref in (
            ("src_states", src, srcs[0]),
            ("dst_states", dst, dsts[0]),
        ):
            if t.shape[0] != ref.shape[0] or t.device != ref.device:
                raise ValueError(
                    f"{op}: {name}[{j}] must have {ref.shape[0]} slots on {ref.device} like "
                    f"{name}[0], got {tuple(t.shape)} on {t.device}"
                )
    src_indices = check_index(op, "src_indices", src_indices)
    dst_indices = check_index(op, "dst_indices", dst_indices)
    if src_indices.numel() != dst_indices.numel():
        raise ValueError(
            f"{op}: dst_indices must have the length of src_indices {tuple(src_indices.shape)}, "
            f"got {tuple(dst_indices.shape)}"
        )
    pool_devices = {srcs[0].device, dsts[0].device}
    for name, idx in (("src_indices", src_indices), ("dst_indices", dst_indices)):
        if idx.device not in pool_devices:
            raise ValueError(
                f"{op}: {name} must be on a pool's device ({sorted(map(str, pool_devices))}), "
                f"got {idx.device}"
            )
    check_index_range(op, "src_indices", src_indices, srcs[0].shape[0], unique=False)
    check_index_range(op, "dst_indices", dst_indices, dsts[0].shape[0], unique=True)
    same_pool = any(
        s.untyped_storage().data_ptr() == d.untyped_storage().data_ptr()
        for s, d in zip(srcs, dsts)
        if s.numel() and d.numel()
    )
    if same_pool and src_indices.numel():
        overlap = torch.isin(dst_indices, src_indices.to(dst_indices.device))
        if bool(overlap.any()):
            raise ValueError(
                f"{op}: dst_indices must not overlap src_indices within one pool (the result "
                f"would depend on copy order), got {int(overlap.sum())} shared slots"
            )




def transfer_mamba_states(src_states, dst_states, src_indices, dst_indices) -> None:
    """Copy state slots `src_indices` of `src_states` into slots `dst_indices` of `dst_states`.

    `src_states`/`dst_states`: one tensor `[num_slots, ...]` or a list of them, paired
    (same slot shape and dtype per pair; all sources on one device, all destinations on one).
    Indices int64 `[N]`, in range; `dst_indices` without repeats, and disjoint from
    `src_indices` when both sides are the same pool. Writes `dst_states` in place; returns None.
    """
    srcs, dsts = _as_list(src_states), _as_list(dst_states)
    _validate(srcs, dsts, src_indices, dst_indices)
    n = src_indices.numel()
    if n == 0:
        return
    for src, dst in zip(srcs, dsts):
        n_cols = src[0].numel()  # n > 0, so the range check saw a slot
        device = copy_kernel_device(src, dst)
        if device is None or src.dtype not in _KERNEL_DTYPES or n_cols == 0:
            transfer_mamba_states_ref(src, dst, src_indices, dst_indices)
            continue
        block = min(next_power_of_2(n_cols), _MAX_BLOCK)
        src_idx = src_indices.to(device, non_blocking=True)
        dst_idx = dst_indices.to(device, non_blocking=True)
        grid = (n, triton.cdiv(n_cols, block))
        on_device = (
            torch.cuda.device(device)
            if device.type == "cuda"
            else contextlib.nullcontext()
        )
        with on_device:
            _transfer_mamba_states_kernel[grid](
                src,
                dst,
                src_idx,
                dst_idx,
                src.stride(0),
                dst.stride(0),
                n_cols,
                BLOCK_SIZE=block,
            )
    return


__all__ = ["transfer_mamba_states", "transfer_mamba_states_ref"]
