"""Store one forward step's new K/V rows into the paged KV cache.

    k_cache[indices[t]] = k[t]    v_cache[indices[t]] = v[t]    for t with indices[t] != reserved_skip_index

upstream 0.5.17's `kvcache.store_cache(k, v, k_cache, v_cache, indices, *, row_bytes=0,
v_row_bytes=0, num_split=0, size_limit=0, reserved_skip_index=0)`, registered as the custom
op `sglang::store_cache`. `k` is `[T, *k_item]` (upstream: `[T, H * D]`), `k_cache` is
`[num_slots, *k_item]`; V likewise with its own row width (V's head_dim may differ from K's).
`indices` (int32/int64) holds the slot the allocator gave each token; any stride, read at
`t * indices.stride(0)` as upstream's `stride_indices`. Slot 0 is the reserved
CUDA-graph padding slot: a padded batch's extra tokens all point at it, so writes there are
skipped (`reserved_skip_index=-1` disables the skip). An index outside `[0, size_limit)`
(default: the cache's row count) fails on the device (`torch._assert_async`, no host read).

Why a kernel: every attention layer does this on every step. The torch form is two scatter
launches, and two more when `k`/`v` are strided slices of a fused QKV output; the kernel reads
the rows where they lie and writes K and V in one launch. It moves 4-byte words (bytes when a
row is not a whole number of words), never values, so fp8 caches stored as uint8 (or
`float8_e4m3fn`) go through the same kernel, bit-exact. `num_split` is upstream's CUDA tuning
knob (warps per row); it is accepted and the Triton launch splits rows by its block size.

Differs from upstream: `k`/`v` and the caches may be `[rows, *item]` with each row contiguous
(upstream's are 2-D), rows need not be whole 4-byte words (bytes are copied then), and
`can_use_store_cache` is True for any positive widths wherever Triton runs, where upstream's asks
whether its CUDA kernel builds; on a device without Triton the torch reference runs, with the
same skip of the reserved slot.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import (
    check_index,
    check_index_range,
    copy_word,
    next_power_of_2,
    use_triton,
)

# At most 1024 words per program: 4 warps x 32 threads x 8 words cover it in two 16-byte
# vectors per thread; a typical row (8 heads x 128 dims x 2 bytes = 512 words) is one program,
# and wider rows split across programs on the grid's second axis instead of looping.
_MAX_BLOCK = 1024


@triton.jit
def _store_cache_kernel(
    k_ptr,  # [T, k_words] new keys, rows contiguous
    v_ptr,  # [T, v_words] new values
    k_cache_ptr,  # [num_slots, k_words] key cache
    v_cache_ptr,  # [num_slots, v_words] value cache
    idx_ptr,  # int32/int64 [T] destination slot of each token
    idx_stride,  # elements between tokens' slots (a strided view of the slots is read as such)
    k_row_stride,  # words between tokens of k
    v_row_stride,  # words between tokens of v
    k_cache_row_stride,  # words between slots of k_cache
    v_cache_row_stride,  # words between slots of v_cache
    k_words,  # words per key row
    v_words,  # words per value row
    reserved_skip_index,  # slot whose writes are dropped (-1: none)
    WORD: tl.constexpr,  # tl.int32 (4-byte words) or tl.uint8 (bytes)
    BLOCK_SIZE: tl.constexpr,  # words per program, a power of two
):
    pid = tl.program_id(0)  # token
    col_block = tl.program_id(1)  # which BLOCK_SIZE slice of the row
    offsets = col_block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    slot = tl.load(idx_ptr + pid.to(tl.int64) * idx_stride).to(tl.int64)
    # A token on the reserved slot copies nothing: its rows' limits drop to zero.
    keep = slot != reserved_skip_index
    k_mask = offsets < tl.where(keep, k_words, 0)
    v_mask = offsets < tl.where(keep, v_words, 0)
    token = pid.to(tl.int64)

    # A move, not arithmetic: the words go out exactly as they came in.
    k = tl.load(k_ptr.to(tl.pointer_type(WORD)) + token * k_row_stride + offsets, mask=k_mask)
    v = tl.load(v_ptr.to(tl.pointer_type(WORD)) + token * v_row_stride + offsets, mask=v_mask)
    tl.store(k_cache_ptr.to(tl.pointer_type(WORD)) + slot * k_cache_row_stride + offsets, k, mask=k_mask)
    tl.store(v_cache_ptr.to(tl.pointer_type(WORD)) + slot * v_cache_row_stride + offsets, v, mask=v_mask)


def store_cache_ref(
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    indices: torch.Tensor,
    *,
    row_bytes: int = 0,
    v_row_bytes: int = 0,
    num_split: int = 0,
    size_limit: int = 0,
    reserved_skip_index: int = 0,
) -> None:
    """Pure-torch reference: scatter the rows in place, dropping the reserved slot's. Returns None."""
    keep = (
        indices != reserved_skip_index
        if reserved_skip_index >= 0
        else torch.ones_like(indices, dtype=torch.bool)
    )
    # A masked scatter without a host read: dropped rows write their slot's own old value back.
    idx = indices.to(torch.int64)
    for new, cache in ((k, k_cache), (v, v_cache)):
        rows = new.reshape(new.shape[0], -1)
        flat = cache.view(cache.shape[0], -1)
        old = flat[idx]
        flat[idx] = torch.where(keep[:, None], rows.to(flat.dtype), old)


@functools.lru_cache(maxsize=None)
def can_use_store_cache(k_row_bytes: int, v_row_bytes: int = 0, num_threads: int = 0) -> bool:
    """Whether the Triton store_cache kernel serves these row widths (`v_row_bytes=0`: same as K).

    upstream's CUDA kernel needs multiples of 4 bytes; this one copies bytes when a row is not
    whole words, so any positive width works wherever Triton runs (CUDA, or the CPU
    interpreter). Elsewhere `store_cache` still works through its torch reference.
    `num_threads` (added in 0.5.23) is upstream's threads-per-row tuning knob, 0 picking its
    heuristic; the Triton launch sizes its blocks from the row, so any int >= 0 is accepted and
    a negative or non-int one answers False (upstream's module would not build).
    """
    from sglang.kernels.jit import has_cuda, interpreter_enabled, triton_available

    v_row_bytes = v_row_bytes or k_row_bytes
    if any(isinstance(b, bool) or not isinstance(b, int) or b <= 0 for b in (k_row_bytes, v_row_bytes)):
        return False
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 0:
        return False
    return triton_available() and (has_cuda() or interpreter_enabled())


def _rows(op: str, name: str, t) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")  # noqa: TRY004
    if t.dim() < 2:
        raise ValueError(f"{op}: {name} must have shape [rows, ...], got {tuple(t.shape)}")
    rows = (
        t.as_strided((t.shape[0], t[0].numel()), (t.stride(0), 1)) if t.numel() else t.reshape(t.shape[0], -1)
    )
    if t.numel() and not t.as_strided(t.shape[1:], t.stride()[1:]).is_contiguous():
        raise ValueError(
            f"{op}: {name} must be contiguous within each row, got shape {tuple(t.shape)} strides {t.stride()}"
        )
    return rows


def _validate(
    k, v, k_cache, v_cache, indices, row_bytes, v_row_bytes, num_split, size_limit, reserved_skip_index
):
    op = "store_cache"
    rows = {
        name: _rows(op, name, t)
        for name, t in (("k", k), ("v", v), ("k_cache", k_cache), ("v_cache", v_cache))
    }
    if v.shape[0] != k.shape[0]:
        raise ValueError(f"{op}: v must have {k.shape[0]} rows like k, got {tuple(v.shape)}")
    if v_cache.shape[0] != k_cache.shape[0]:
        raise ValueError(
            f"{op}: v_cache must have {k_cache.shape[0]} slots like k_cache, got {tuple(v_cache.shape)}"
        )
    for name, new, cache in (("k_cache", k, k_cache), ("v_cache", v, v_cache)):
        if tuple(cache.shape[1:]) != tuple(new.shape[1:]):
            raise ValueError(
                f"{op}: {name} rows must have shape {tuple(new.shape[1:])} like {name[0]}'s, got {tuple(cache.shape)}"
            )
        if cache.dtype != new.dtype:
            raise ValueError(f"{op}: {name} must have dtype {new.dtype} like {name[0]}, got {cache.dtype}")
    for name, t in (("v", v), ("k_cache", k_cache), ("v_cache", v_cache), ("indices", indices)):
        if isinstance(t, torch.Tensor) and t.device != k.device:
            raise ValueError(f"{op}: {name} must be on {k.device} like k, got {t.device}")
    check_index(op, "indices", indices, (torch.int32, torch.int64))
    if indices.shape[0] != k.shape[0]:
        raise ValueError(
            f"{op}: indices must have {k.shape[0]} slots (one per token), got {tuple(indices.shape)}"
        )
    for name, value, actual in (
        ("row_bytes", row_bytes, rows["k"].shape[1] * k.element_size()),
        ("v_row_bytes", v_row_bytes, rows["v"].shape[1] * v.element_size()),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value not in (0, actual):
            raise ValueError(f"{op}: {name} must be 0 (inferred) or the row's {actual} bytes, got {value!r}")
    for name, value in (
        ("num_split", num_split),
        ("size_limit", size_limit),
        ("reserved_skip_index", reserved_skip_index),
    ):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{op}: {name} must be an int, got {value!r}")
    if size_limit > k_cache.shape[0]:
        raise ValueError(
            f"{op}: size_limit must not exceed the cache's {k_cache.shape[0]} rows, got {size_limit}"
        )
    return rows


@torch.library.custom_op("sglang::store_cache", mutates_args=("k_cache", "v_cache"))
def _store_cache_op(
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    indices: torch.Tensor,
    size_limit: int,
    reserved_skip_index: int,
) -> None:
    check_index_range("store_cache", "indices", indices, size_limit)
    kr, vr, kcr, vcr = (
        _rows("store_cache", n, t)
        for n, t in (("k", k), ("v", v), ("k_cache", k_cache), ("v_cache", v_cache))
    )
    k_bytes, v_bytes = kr.shape[1] * k.element_size(), vr.shape[1] * v.element_size()
    if not (can_use_store_cache(k_bytes, v_bytes) and use_triton(k, v, k_cache, v_cache, indices)):
        # No Triton on this device (a CPU without the interpreter): the reference.
        store_cache_ref(k, v, k_cache, v_cache, indices, reserved_skip_index=reserved_skip_index)
        return
    esize = k.element_size()
    offsets = [k_bytes, v_bytes] + [t.stride(0) * esize for t in (kr, vr, kcr, vcr)]
    offsets += [t.data_ptr() for t in (kr, vr, kcr, vcr)]
    word_ty, word = copy_word(*offsets)
    k_words, v_words = k_bytes // word, v_bytes // word
    block = min(next_power_of_2(max(k_words, v_words)), _MAX_BLOCK)
    grid = (k.shape[0], triton.cdiv(max(k_words, v_words), block))
    _store_cache_kernel[grid](
        kr,
        vr,
        kcr,
        vcr,
        indices,
        indices.stride(0),
        kr.stride(0) * esize // word,
        vr.stride(0) * esize // word,
        kcr.stride(0) * esize // word,
        vcr.stride(0) * esize // word,
        k_words,
        v_words,
        reserved_skip_index if reserved_skip_index >= 0 else -1,
        WORD=word_ty,
        BLOCK_SIZE=block,
    )


@_store_cache_op.register_fake
def _(k, v, k_cache, v_cache, indices, size_limit, reserved_skip_index) -> None:
    return None


def store_cache(
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    indices: torch.Tensor,
    *,
    row_bytes: int = 0,
    v_row_bytes: int = 0,
    num_split: int = 0,  # can be tuned for performance
    size_limit: int = 0,
    reserved_skip_index: int = 0,
) -> None:
    """Store key and value rows into the KV cache at `indices`, in place; returns None.

    Args (upstream's):
        k: `[T, *k_item]` keys (upstream `[T, H * D]`); rows contiguous, row stride free.
        v: `[T, *v_item]` values.
        k_cache / v_cache: `[num_slots, *k_item]` / `[num_slots, *v_item]`, k's / v's dtype.
        indices: int32/int64 `[T]` slots.
        row_bytes / v_row_bytes: row widths in bytes; 0 infers them (a non-zero one must match).
        num_split: upstream's warps-per-row tuning; accepted.
        size_limit: valid slot bound; an index outside `[0, size_limit)` fails on the device.
            0 means the cache's row count.
        reserved_skip_index: writes to this slot are skipped (default 0, the CUDA-graph padding
            slot); -1 disables skipping.
    """
    _validate(
        k, v, k_cache, v_cache, indices, row_bytes, v_row_bytes, num_split, size_limit, reserved_skip_index
    )
    if k.shape[0] == 0:
        return None
    _store_cache_op(
        k,
        v,
        k_cache,
        v_cache,
        indices,
        size_limit if size_limit > 0 else k_cache.shape[0],
        reserved_skip_index,
    )
    return None


__all__ = ["can_use_store_cache", "store_cache", "store_cache_ref"]
