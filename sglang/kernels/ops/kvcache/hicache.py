"""HiCache K/V page transfer: copy token rows between a device KV pool and a host KV pool.

    k_dst[dst_indices[i]] = k_src[src_indices[i]]    v_dst[dst_indices[i]] = v_src[src_indices[i]]

for every i (one layer), or for every layer l of stacked `[L, num_slots, ...]` pools at once
(`k_dst[l, dst_indices[i]] = k_src[l, src_indices[i]]`). A row (one token slot) is everything after
the slot axis: `[head_num, head_dim]` or `[item_size]`, contiguous within the slot; the slot and
layer strides are free, so per-layer views of a `page_first` host buffer work too.

Why a kernel: hierarchical caching moves thousands of scattered token rows per layer between
GPU memory and pinned host memory ("load back" host -> device, "backup" device -> host). A torch
`index_select` + `index_copy_` pair stages the rows through a temporary and issues one launch per
tensor and layer; the kernel reads each row where it lies (pinned host memory is addressable by
the GPU) and writes it in place, K and V and all layers in one launch. The copy moves raw 4-byte
words, never values, so it is bit-exact for every dtype (bf16, fp8 stored as uint8, ...).

Both directions use the same function: pass the host tensors as `*_src` to load back and as
`*_dst` to back up. The public functions write `*_dst` in place and return None; so do the refs.
"""

from __future__ import annotations

import contextlib
import math

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import (
    check_index,
    check_index_range,
    copy_kernel_device,
    interpreter_enabled,
    next_power_of_2,
    triton_available,
)

# The kernel copies rows as 4-byte words (int32), so a row must be a whole number of words:
# word copies are bit-exact for any element type and let Triton emit 16-byte vector accesses
# when the row stride is a multiple of 16 bytes.
_WORD_BYTES = 4

# At most 1024 words (4 KiB) per program: 4 warps x 32 threads x 4 words (one 16-byte vector
# per thread) cover 512 words a pass, so a block is two passes, enough to amortize the two index
# loads; a typical row (8 heads x 128 dims x 2 bytes = 512 words) is one program.
_MAX_BLOCK_WORDS = 1024


@triton.jit
def _transfer_hicache_kernel(
    k_src_ptr,  # int32 words [L, S_src, n_words] (L = 1 for one layer)
    v_src_ptr,  # int32 words [L, S_src, n_words]
    k_dst_ptr,  # int32 words [L, S_dst, n_words]
    v_dst_ptr,  # int32 words [L, S_dst, n_words]
    src_idx_ptr,  # int64 [N] source slot of each copied row
    dst_idx_ptr,  # int64 [N] destination slot of each copied row (no duplicates)
    k_src_layer_stride,  # words between layers of k_src
    k_src_row_stride,  # words between slots of k_src
    v_src_layer_stride,
    v_src_row_stride,
    k_dst_layer_stride,
    k_dst_row_stride,
    v_dst_layer_stride,
    v_dst_row_stride,
    n_words,  # words per row
    BLOCK_SIZE: tl.constexpr,  # words per program, a power of two
):
    pid = tl.program_id(0)  # which index pair
    col_block = tl.program_id(1)  # which BLOCK_SIZE slice of the row
    layer = tl.program_id(2).to(
        tl.int64
    )  # host pools exceed 2**31 words: 64-bit offsets
    offsets = col_block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_words

    src = tl.load(src_idx_ptr + pid)
    dst = tl.load(dst_idx_ptr + pid)

    k = tl.load(
        k_src_ptr + layer * k_src_layer_stride + src * k_src_row_stride + offsets,
        mask=mask,
    )
    tl.store(
        k_dst_ptr + layer * k_dst_layer_stride + dst * k_dst_row_stride + offsets,
        k,
        mask=mask,
    )
    v = tl.load(
        v_src_ptr + layer * v_src_layer_stride + src * v_src_row_stride + offsets,
        mask=mask,
    )
    tl.store(
        v_dst_ptr + layer * v_dst_layer_stride + dst * v_dst_row_stride + offsets,
        v,
        mask=mask,
    )


def transfer_hicache_one_layer_ref(
    k_src: torch.Tensor,
    v_src: torch.Tensor,
    k_dst: torch.Tensor,
    v_dst: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
) -> None:
    """Pure-torch reference: gather the rows, move them to dst's device, scatter them in place.

    A copy, not a computation: there is nothing to upcast, and it is bit-exact.
    """
    src = src_indices.to(k_src.device)
    dst = dst_indices.to(k_dst.device)
    k_dst[dst] = k_src[src].to(k_dst.device)
    v_dst[dst] = v_src[src].to(v_dst.device)


def transfer_hicache_all_layer_ref(
    k_src_layers: torch.Tensor,
    v_src_layers: torch.Tensor,
    k_dst_layers: torch.Tensor,
    v_dst_layers: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
) -> None:
    """Pure-torch reference for stacked `[L, num_slots, ...]` pools (every layer, same rows)."""
    src = src_indices.to(k_src_layers.device)
    dst = dst_indices.to(k_dst_layers.device)
    k_dst_layers[:, dst] = k_src_layers[:, src].to(k_dst_layers.device)
    v_dst_layers[:, dst] = v_src_layers[:, src].to(v_dst_layers.device)


def can_use_hicache_jit_kernel(
    element_size_bytes: int, *, device: str | torch.device = "cuda"
) -> bool:
    """Whether rows of `element_size_bytes` bytes can go through the Triton copy kernel on `device`.

    It decides two things, both needed:
    - Triton can run there: on CUDA, Triton is installed and a CUDA device is present; on the
      CPU, only under Triton's interpreter (`TRITON_INTERPRET=1`); never on other devices.
    - The row is a positive whole number of 4-byte words (the kernel copies words).
    When it is False the public functions still work: they take the torch path.
    """
    if isinstance(element_size_bytes, bool) or not isinstance(element_size_bytes, int):
        return False
    if element_size_bytes <= 0 or element_size_bytes % _WORD_BYTES != 0:
        return False
    device_type = torch.device(device).type
    if device_type == "cuda":
        return triton_available() and torch.cuda.is_available()
    if device_type == "cpu":
        return triton_available() and interpreter_enabled()
    return False


def can_use_write_back_jit_kernel(
    element_size_bytes: int,
    *,
    device: str | torch.device = "cuda",
    host_pinned: bool = True,
) -> bool:
    """Whether a backup (device -> host) of such rows can go through the Triton kernel.

    Everything `can_use_hicache_jit_kernel` asks, and, on CUDA, that the host pool is pinned:
    the kernel stores straight into host memory, which a GPU can address only when it is
    page-locked (a pageable host pool takes the torch path, staged by the driver). On the CPU
    (interpreter) both pools are host memory and pinning does not matter.
    """
    if not can_use_hicache_jit_kernel(element_size_bytes, device=device):
        return False
    return torch.device(device).type != "cuda" or bool(host_pinned)



def _row_is_contiguous(t: torch.Tensor, lead: int) -> bool:
    """Whether each slot's row (the dims after the first `lead`) is one contiguous run."""
    if t.numel() == 0:
        return True
    return t.as_strided(t.shape[lead:], t.stride()[lead:]).is_contiguous()


def _validate(op: str, lead: int, pools: dict, src_indices, dst_indices) -> None:
    """Every check, before any write. `lead` = 1 (slot axis) or 2 (layer, slot axes)."""
    for name, t in pools.items():
        if not isinstance(t, torch.Tensor):
            raise ValueError(  # noqa: TRY004 - validation raises ValueError only
                f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}"
            )
        if t.dim() < lead + 1:
            axes = "[num_slots, ...]" if lead == 1 else "[num_layers, num_slots, ...]"
            raise ValueError(
                f"{op}: {name} must have shape {axes}, got {tuple(t.shape)}"
            )
    k_src, v_src, k_dst, v_dst = pools.values()
    names = list(pools)
    row = tuple(k_src.shape[lead:])
    for name, t in pools.items():
        if tuple(t.shape[lead:]) != row:
            raise ValueError(
                f"{op}: {name} rows must have shape {row} like {names[0]}'s, "
                f"got {tuple(t.shape)}"
            )
        if t.dtype != k_src.dtype:
            raise ValueError(
                f"{op}: {name} must have dtype {k_src.dtype} like {names[0]}, got {t.dtype}"
            )
        if not _row_is_contiguous(t, lead):
            raise ValueError(
                f"{op}: {name} must be contiguous within each row, got shape {tuple(t.shape)} "
                f"strides {t.stride()}"
            )
    if v_src.shape[:lead] != k_src.shape[:lead]:
        raise ValueError(
            f"{op}: {names[1]} must have the leading shape {tuple(k_src.shape[:lead])} of "
            f"{names[0]}, got {tuple(v_src.shape)}"
        )
    if v_dst.shape[:lead] != k_dst.shape[:lead]:
        raise ValueError(
            f"{op}: {names[3]} must have the leading shape {tuple(k_dst.shape[:lead])} of "
            f"{names[2]}, got {tuple(v_dst.shape)}"
        )
    if lead == 2 and k_dst.shape[0] != k_src.shape[0]:
        raise ValueError(
            f"{op}: {names[2]} must have {k_src.shape[0]} layers like {names[0]}, "
            f"got {tuple(k_dst.shape)}"
        )
    if v_src.device != k_src.device:
        raise ValueError(
            f"{op}: {names[1]} must be on {k_src.device} like {names[0]}, got {v_src.device}"
        )
    if v_dst.device != k_dst.device:
        raise ValueError(
            f"{op}: {names[3]} must be on {k_dst.device} like {names[2]}, got {v_dst.device}"
        )

    src_indices = check_index(op, "src_indices", src_indices)
    dst_indices = check_index(op, "dst_indices", dst_indices)
    if src_indices.numel() != dst_indices.numel():
        raise ValueError(
            f"{op}: dst_indices must have the length of src_indices {tuple(src_indices.shape)}, "
            f"got {tuple(dst_indices.shape)}"
        )
    pool_devices = {k_src.device, k_dst.device}
    for name, idx in (("src_indices", src_indices), ("dst_indices", dst_indices)):
        if idx.device not in pool_devices:
            raise ValueError(
                f"{op}: {name} must be on a pool's device ({sorted(map(str, pool_devices))}), "
                f"got {idx.device}"
            )
    check_index_range(op, "src_indices", src_indices, k_src.shape[lead - 1], unique=False)
    check_index_range(op, "dst_indices", dst_indices, k_dst.shape[lead - 1], unique=True)
    if src_indices.numel() and (
        _same_storage(k_src, k_dst) or _same_storage(v_src, v_dst)
    ):
        overlap = torch.isin(dst_indices, src_indices.to(dst_indices.device))
        if bool(overlap.any()):
            raise ValueError(
                f"{op}: dst_indices must not overlap src_indices within one pool (the result "
                f"would depend on copy order), got {int(overlap.sum())} shared slots"
            )


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()




def _as_words(t: torch.Tensor, lead: int) -> torch.Tensor | None:
    """`t` seen as int32 words `[*t.shape[:lead], row_words]`, or None if it is misaligned."""
    row = math.prod(t.shape[lead:])
    flat = t.as_strided(tuple(t.shape[:lead]) + (row,), tuple(t.stride()[:lead]) + (1,))
    try:
        return flat.view(torch.int32)
    except RuntimeError:  # a stride or offset that is not a whole number of words
        return None


def _launch(lead: int, pools: tuple, src_indices, dst_indices) -> bool:
    """Run the kernel if it can run here; False sends the caller to the torch path."""
    k_src = pools[0]
    device = copy_kernel_device(*pools)  # indices are moved to it below
    row_bytes = math.prod(k_src.shape[lead:]) * k_src.element_size()
    if device is None or not can_use_hicache_jit_kernel(row_bytes, device=device):
        return False
    words = [_as_words(t, lead) for t in pools]
    if any(w is None for w in words):
        return False
    if lead == 1:  # one layer: a unit layer axis, so the kernel has one body
        words = [w.unsqueeze(0) for w in words]
    n_layers, n_words = words[0].shape[0], words[0].shape[-1]
    block = min(next_power_of_2(n_words), _MAX_BLOCK_WORDS)
    src = src_indices.to(device, non_blocking=True)
    dst = dst_indices.to(device, non_blocking=True)
    grid = (src.numel(), triton.cdiv(n_words, block), n_layers)
    with (
        torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    ):
        _transfer_hicache_kernel[grid](
            *words,
            src,
            dst,
            *(s for w in words for s in (w.stride(0), w.stride(1))),
            n_words,
            BLOCK_SIZE=block,
        )
    return True


def transfer_hicache_one_layer(
    k_src: torch.Tensor,
    v_src: torch.Tensor,
    k_dst: torch.Tensor,
    v_dst: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
) -> None:
    """Copy rows `src_indices` of one layer's K/V pools into rows `dst_indices` of another's.

    Pools are `[num_slots, ...]` (same row shape and dtype; K and V of one side on one device);
    indices int64 `[N]`, in range, `dst_indices` without repeats. Writes k_dst/v_dst in place.
    """
    op = "transfer_hicache_one_layer"
    pools = {"k_src": k_src, "v_src": v_src, "k_dst": k_dst, "v_dst": v_dst}
    _validate(op, 1, pools, src_indices, dst_indices)
    if src_indices.numel() == 0:
        return
    if not _launch(1, (k_src, v_src, k_dst, v_dst), src_indices, dst_indices):
        transfer_hicache_one_layer_ref(
            k_src, v_src, k_dst, v_dst, src_indices, dst_indices
        )
    return


def transfer_hicache_all_layer(
    k_src_layers: torch.Tensor,
    v_src_layers: torch.Tensor,
    k_dst_layers: torch.Tensor,
    v_dst_layers: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
) -> None:
    """`transfer_hicache_one_layer` for every layer of stacked `[L, num_slots, ...]` pools, one launch."""
    op = "transfer_hicache_all_layer"
    pools = {
        "k_src_layers": k_src_layers,
        "v_src_layers": v_src_layers,
        "k_dst_layers": k_dst_layers,
        "v_dst_layers": v_dst_layers,
    }
    _validate(op, 2, pools, src_indices, dst_indices)
    if src_indices.numel() == 0 or k_src_layers.shape[0] == 0:
        return
    layers = (k_src_layers, v_src_layers, k_dst_layers, v_dst_layers)
    if not _launch(2, layers, src_indices, dst_indices):
        transfer_hicache_all_layer_ref(*layers, src_indices, dst_indices)
    return


__all__ = [
    "can_use_hicache_jit_kernel",
    "can_use_write_back_jit_kernel",
    "transfer_hicache_all_layer",
    "transfer_hicache_all_layer_ref",
    "transfer_hicache_one_layer",
    "transfer_hicache_one_layer_ref",
]
