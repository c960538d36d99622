"""Mamba state transfers between a layer-first device pool and a page-first host pool.

upstream 0.5.17's two entry points, its argument order and byte-address contract:

- `transfer_kv_mamba_pf_lf(src, dst, src_indices, dst_indices, layer_id, item_size,
  src_layout_dim, num_warps_per_item=32)` (load, one layer): for each i,
  `item_size` bytes at `src + src_indices[i] * src_layout_dim + layer_id * item_size` (a page-first
  host buffer `[pages, layers, item]`) go to `dst + dst_indices[i] * item_size` (that layer's
  device pool `[slots, item]`).
- `transfer_kv_mamba_lf_pf(src_ptrs, dst, src_indices, dst_indices, item_size, dst_layout_dim,
  num_layers, num_warps_per_item=32)` (backup, every layer in one launch): `src_ptrs` is a
  uint64 `[num_layers]` table of the device layers' base addresses; for each i and layer l,
  `item_size` bytes at `src_ptrs[l] + src_indices[i] * item_size` go to
  `dst + dst_indices[i] * dst_layout_dim + l * item_size`.

Addresses are the tensors' `data_ptr()` (the first element), as upstream's kernel reads them;
the kernel moves 4-byte words (bytes when a size is not a whole number of words), so any state
dtype is copied bit-exact. upstream's CUDA kernel needs `item_size % 16 == 0`; this one does not.

Why a kernel: a request's conv and SSM states are a few hundred KB over several layers; moving
them with torch is a gather, a temporary and a scatter per layer. The kernel copies each item
straight from its source to its destination (pinned host memory is addressable by the GPU).
`num_warps_per_item` is upstream's CUDA tuning knob; it is accepted and checked. Index tensors
may have any stride (the kernel reads `indices[i]` at `i * stride`; upstream's wants them
dense); the `src_ptrs` table must be dense, as upstream's, or the call raises `ValueError`. The page range
of the page-first side and the slot range of a tensor side are checked on the device
(`torch._assert_async`); the table side's ranges are the caller's contract (its pools' sizes are
not passed), as upstream's.

Differs from upstream: `item_size` need not be a multiple of 16 bytes (words or bytes are
copied); `transfer_kv_mamba_pf_lf` falls back to its torch reference where no kernel can address
both buffers (a pageable host buffer beside a CUDA one, or a CPU without the interpreter), where
upstream's requires CUDA index tensors; `can_use_transfer_kv_mamba_kernel` is an added predicate
that says where the table-based backup can run.
"""

from __future__ import annotations

import contextlib

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import (
    check_index,
    check_index_range,
    copy_kernel_device,
    copy_word,
    has_cuda,
    interpreter_enabled,
    next_power_of_2,
    triton_available,
)

# At most 4096 words (16 KiB) per program: a state item is often tens of KB, so each program
# moves a long run, hiding the two index loads; 4 warps x 32 threads x 4 words (16-byte vectors)
# cover 512 words a pass, so a block is eight passes.
_MAX_BLOCK_WORDS = 4096


@triton.jit
def _transfer_kv_mamba_kernel(
    src,  # FROM_TABLE: uint64 [L] layer base addresses; else the source buffer
    dst,  # the destination buffer
    src_idx_ptr,  # int64 [N] source slot / page of each item
    dst_idx_ptr,  # int64 [N] destination slot / page of each item
    src_idx_stride,  # elements between items' source indices
    dst_idx_stride,  # elements between items' destination indices
    src_stride,  # words between source slots / pages
    src_offset,  # words from a source page to its item (layer_id * item on a page-first side)
    dst_stride,  # words between destination slots / pages
    dst_layer_stride,  # words between the layers' items on a page-first destination
    n_words,  # words per item
    WORD: tl.constexpr,  # tl.int32 (4-byte words) or tl.uint8 (bytes)
    FROM_TABLE: tl.constexpr,  # the source is a table of per-layer addresses
    BLOCK_SIZE: tl.constexpr,  # words per program, a power of two
):
    pid = tl.program_id(0)  # which index pair
    col_block = tl.program_id(1)  # which BLOCK_SIZE slice of the item
    layer = tl.program_id(2)
    offsets = col_block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_words

    # 64-bit: host pools exceed 2**31 words
    s = tl.load(src_idx_ptr + pid.to(tl.int64) * src_idx_stride).to(tl.int64)
    d = tl.load(dst_idx_ptr + pid.to(tl.int64) * dst_idx_stride).to(tl.int64)
    if FROM_TABLE:
        src_base = tl.load(src + layer).to(tl.pointer_type(WORD), bitcast=True)
    else:
        src_base = src.to(tl.pointer_type(WORD))
    dst_base = dst.to(tl.pointer_type(WORD))
    # A move, not arithmetic: the words go out as they came in.
    vals = tl.load(src_base + s * src_stride + src_offset + offsets, mask=mask)
    tl.store(dst_base + d * dst_stride + layer.to(tl.int64) * dst_layer_stride + offsets, vals, mask=mask)


def _byte_rows(t: torch.Tensor, row_bytes: int) -> torch.Tensor:
    """`t`'s bytes as `[-1, row_bytes]` (t contiguous)."""
    return t.reshape(-1).view(torch.uint8).view(-1, row_bytes)


def transfer_kv_mamba_pf_lf_ref(
    src: torch.Tensor,
    dst: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
    layer_id: int,
    item_size: int,
    src_layout_dim: int,
    num_warps_per_item: int = 32,
) -> None:
    """Pure-torch reference over byte views: gather the layer's items, move them, scatter them."""
    pages = _byte_rows(src, src_layout_dim)[:, layer_id * item_size : (layer_id + 1) * item_size]
    rows = pages[src_indices.to(src.device)]
    _byte_rows(dst, item_size)[dst_indices.to(dst.device)] = rows.to(dst.device)


def transfer_kv_mamba_lf_pf_ref(
    src_layers,
    dst: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
    item_size: int,
    dst_layout_dim: int,
    num_layers: int,
    num_warps_per_item: int = 32,
) -> None:
    """Pure-torch reference over the layers themselves (a list of `[slots, ...]` tensors) instead
    of a table of their addresses."""
    pages = _byte_rows(dst, dst_layout_dim)
    for layer, src in enumerate(list(src_layers)[:num_layers]):
        rows = _byte_rows(src, item_size)[src_indices.to(src.device)]
        pages[dst_indices.to(dst.device), layer * item_size : (layer + 1) * item_size] = rows.to(dst.device)


def _positive(op: str, **values) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{op}: {name} must be a positive int, got {value!r}")


def _buffer(op: str, name: str, t, row_bytes: int) -> int:
    """Checks a byte-addressed buffer; returns its row count (slots or pages)."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")  # noqa: TRY004
    if not t.is_contiguous():
        raise ValueError(
            f"{op}: {name} must be contiguous (it is addressed in bytes from its start), "
            f"got shape {tuple(t.shape)} strides {t.stride()}"
        )
    n_bytes = t.numel() * t.element_size()
    if n_bytes % row_bytes != 0:
        raise ValueError(f"{op}: {name} must hold whole rows of {row_bytes} bytes, got {n_bytes} bytes")
    return n_bytes // row_bytes


def _indices(op: str, src_indices, dst_indices, devices) -> None:
    for name, idx in (("src_indices", src_indices), ("dst_indices", dst_indices)):
        check_index(op, name, idx)
        if idx.device not in devices:
            raise ValueError(
                f"{op}: {name} must be on a buffer's device ({sorted(map(str, devices))}), got {idx.device}"
            )
    if src_indices.shape != dst_indices.shape:
        raise ValueError(
            f"{op}: dst_indices must have the shape of src_indices {tuple(src_indices.shape)}, "
            f"got {tuple(dst_indices.shape)}"
        )


def _on_device(device, *indices) -> list:
    """The indices on the kernel's device; the kernel is given these tensors' strides (a move
    may make a strided index contiguous)."""
    return [idx.to(device, non_blocking=True) for idx in indices]


def _launch(device, grid_n, n_layers, item_size, args, word, word_ty, from_table):
    n_words = item_size // word
    block = min(next_power_of_2(n_words), _MAX_BLOCK_WORDS)
    grid = (grid_n, triton.cdiv(n_words, block), n_layers)
    on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    with on_device:
        _transfer_kv_mamba_kernel[grid](*args, n_words, WORD=word_ty, FROM_TABLE=from_table, BLOCK_SIZE=block)


@torch.library.custom_op("sglang::transfer_kv_mamba_pf_lf", mutates_args=("dst",))
def _transfer_kv_mamba_pf_lf_op(
    src: torch.Tensor,
    dst: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
    layer_id: int,
    item_size: int,
    src_layout_dim: int,
) -> None:
    op = "transfer_kv_mamba_pf_lf"
    check_index_range(op, "src_indices", src_indices, _buffer(op, "src", src, src_layout_dim))
    check_index_range(op, "dst_indices", dst_indices, _buffer(op, "dst", dst, item_size))
    device = copy_kernel_device(src, dst)
    if device is None:
        # No kernel can address both buffers (a pageable host buffer with a CUDA one, or a CPU
        # without the interpreter): the reference, which the driver stages.
        transfer_kv_mamba_pf_lf_ref(src, dst, src_indices, dst_indices, layer_id, item_size, src_layout_dim)
        return
    word_ty, word = copy_word(item_size, src_layout_dim, src.data_ptr(), dst.data_ptr())
    src_idx, dst_idx = _on_device(device, src_indices, dst_indices)
    args = (
        src,
        dst,
        src_idx,
        dst_idx,
        src_idx.stride(0),
        dst_idx.stride(0),
        src_layout_dim // word,
        layer_id * item_size // word,
        item_size // word,
        0,
    )
    _launch(device, src_indices.numel(), 1, item_size, args, word, word_ty, False)


@_transfer_kv_mamba_pf_lf_op.register_fake
def _(src, dst, src_indices, dst_indices, layer_id, item_size, src_layout_dim) -> None:
    return None


def transfer_kv_mamba_pf_lf(
    src: torch.Tensor,
    dst: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
    layer_id: int,
    item_size: int,
    src_layout_dim: int,
    num_warps_per_item: int = 32,
):
    """Load layer `layer_id`'s items of pages `src_indices` (page-first `src`) into slots `dst_indices` of `dst`.

    `src` and `dst` are contiguous buffers addressed in bytes; indices int64 `[N]`. Writes `dst`
    in place; returns None.
    """
    op = "transfer_kv_mamba_pf_lf"
    _positive(op, item_size=item_size, src_layout_dim=src_layout_dim, num_warps_per_item=num_warps_per_item)
    if isinstance(layer_id, bool) or not isinstance(layer_id, int) or layer_id < 0:
        raise ValueError(f"{op}: layer_id must be a non-negative int, got {layer_id!r}")
    if (layer_id + 1) * item_size > src_layout_dim:
        raise ValueError(
            f"{op}: layer_id {layer_id}'s item of {item_size} bytes does not fit a page of "
            f"src_layout_dim={src_layout_dim} bytes"
        )
    _buffer(op, "src", src, src_layout_dim)
    _buffer(op, "dst", dst, item_size)
    _indices(op, src_indices, dst_indices, {src.device, dst.device})
    if src_indices.numel() == 0:
        return None
    _transfer_kv_mamba_pf_lf_op(src, dst, src_indices, dst_indices, layer_id, item_size, src_layout_dim)
    return None


def can_use_transfer_kv_mamba_kernel(device) -> bool:
    """Whether the Triton transfer kernel can run on `device` (CUDA, or the CPU under the interpreter).

    `transfer_kv_mamba_lf_pf` (addresses in a table) has no torch path and needs it;
    `transfer_kv_mamba_pf_lf` takes its torch path where it is False.
    """
    device_type = torch.device(device).type
    if device_type == "cuda":
        return triton_available() and has_cuda()
    return device_type == "cpu" and triton_available() and interpreter_enabled()


@torch.library.custom_op("sglang::transfer_kv_mamba_lf_pf", mutates_args=("dst",))
def _transfer_kv_mamba_lf_pf_op(
    src_ptrs: torch.Tensor,
    dst: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
    item_size: int,
    dst_layout_dim: int,
    num_layers: int,
) -> None:
    op = "transfer_kv_mamba_lf_pf"
    check_index_range(op, "dst_indices", dst_indices, _buffer(op, "dst", dst, dst_layout_dim))
    device = src_ptrs.device
    if not can_use_transfer_kv_mamba_kernel(device) or copy_kernel_device(src_ptrs, dst) is None:
        # Raw addresses have no torch equivalent: there is no fallback to take.
        raise ValueError(
            f"{op}: no Triton kernel can run on {device} with dst on {dst.device} "
            "(`can_use_transfer_kv_mamba_kernel`; a CUDA table needs a CUDA or pinned dst)"
        )
    word_ty, word = copy_word(item_size, dst_layout_dim, dst.data_ptr())
    src_idx, dst_idx = _on_device(device, src_indices, dst_indices)
    args = (
        src_ptrs,
        dst,
        src_idx,
        dst_idx,
        src_idx.stride(0),
        dst_idx.stride(0),
        item_size // word,
        0,
        dst_layout_dim // word,
        item_size // word,
    )
    _launch(device, src_indices.numel(), num_layers, item_size, args, word, word_ty, True)


@_transfer_kv_mamba_lf_pf_op.register_fake
def _(src_ptrs, dst, src_indices, dst_indices, item_size, dst_layout_dim, num_layers) -> None:
    return None


def transfer_kv_mamba_lf_pf(
    src_ptrs: torch.Tensor,
    dst: torch.Tensor,
    src_indices: torch.Tensor,
    dst_indices: torch.Tensor,
    item_size: int,
    dst_layout_dim: int,
    num_layers: int,
    num_warps_per_item: int = 32,
):
    """Back up slots `src_indices` of every layer (addresses in `src_ptrs`) into pages `dst_indices` of page-first `dst`.

    `src_ptrs` is a uint64 `[num_layers]` table on the kernel's device (each address aligned to
    the copy word: 4 bytes when `item_size` is a multiple of 4); `dst` a contiguous buffer of
    pages of `dst_layout_dim` bytes; indices int64 `[N]`. Writes `dst` in place; returns None.
    """
    op = "transfer_kv_mamba_lf_pf"
    _positive(
        op,
        item_size=item_size,
        dst_layout_dim=dst_layout_dim,
        num_layers=num_layers,
        num_warps_per_item=num_warps_per_item,
    )
    if (
        not isinstance(src_ptrs, torch.Tensor)
        or src_ptrs.dtype != torch.uint64
        or src_ptrs.shape != (num_layers,)
    ):
        got = (
            f"{tuple(src_ptrs.shape)} {src_ptrs.dtype}"
            if isinstance(src_ptrs, torch.Tensor)
            else type(src_ptrs).__name__
        )
        raise ValueError(
            f"{op}: src_ptrs must be a uint64 table of num_layers={num_layers} addresses, got {got}"
        )
    if num_layers > 1 and src_ptrs.stride(0) != 1:
        # The kernel reads `src_ptrs + layer`, as upstream's: a strided view would hand it
        # other layers' addresses.
        raise ValueError(
            f"{op}: src_ptrs must be a contiguous table (stride 1), got stride {src_ptrs.stride(0)}; "
            "pass `.contiguous()`"
        )
    if num_layers * item_size > dst_layout_dim:
        raise ValueError(
            f"{op}: {num_layers} layers of {item_size} bytes do not fit a page of "
            f"dst_layout_dim={dst_layout_dim} bytes"
        )
    _buffer(op, "dst", dst, dst_layout_dim)
    _indices(op, src_indices, dst_indices, {src_ptrs.device, dst.device})
    if src_indices.numel() == 0:
        return None
    _transfer_kv_mamba_lf_pf_op(
        src_ptrs, dst, src_indices, dst_indices, item_size, dst_layout_dim, num_layers
    )
    return None


__all__ = [
    "can_use_transfer_kv_mamba_kernel",
    "transfer_kv_mamba_lf_pf",
    "transfer_kv_mamba_lf_pf_ref",
    "transfer_kv_mamba_pf_lf",
    "transfer_kv_mamba_pf_lf_ref",
]
