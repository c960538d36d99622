"""Store one forward step's new K/V rows into the paged KV cache.

    k_cache[loc[t]] = k[t]    v_cache[loc[t]] = v[t]    for t in [0, T)

`k` is `[T, *k_item]` (e.g. `[T, head_num, head_dim]`), `k_cache` is `[num_slots, *k_item]`; V
likewise with its own item shape (V's head_dim may differ from K's). `loc` holds the slot the
allocator gave each token.

Why a kernel: every attention layer does this on every step. The torch form
`k_cache[loc] = k; v_cache[loc] = v` is two scatter launches and, when `k`/`v` are strided slices
of a fused QKV output, two more to make them contiguous first; the kernel reads the rows where
they lie and writes K and V in one launch.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import next_power_of_2, use_triton

# Dtypes the Triton path copies (the kernel loads and stores the element type); other caches
# (fp8 stored as uint8, ...) take the torch path, which is a byte copy.
_KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# At most 1024 elements per program: 4 warps x 32 threads x 8 bf16 (one 16-byte vector each)
# are 1024, one pass; a typical row (8 heads x 128 dims) is one program, and bigger rows split
# across programs on the grid's second axis instead of looping.
_MAX_BLOCK = 1024


@triton.jit
def _store_cache_kernel(
    k_ptr,  # [T, k_cols] new keys, rows contiguous (k_row_stride between tokens)
    v_ptr,  # [T, v_cols] new values
    k_cache_ptr,  # [num_slots, k_cols] key cache, same dtype as k
    v_cache_ptr,  # [num_slots, v_cols] value cache, same dtype as v
    loc_ptr,  # int64 [T] destination slot of each token (no duplicates)
    k_row_stride,
    v_row_stride,
    k_cache_row_stride,
    v_cache_row_stride,
    k_cols,  # elements per key row
    v_cols,  # elements per value row
    BLOCK_SIZE: tl.constexpr,  # elements per program, a power of two
):
    pid = tl.program_id(0)  # token
    col_block = tl.program_id(1)  # which BLOCK_SIZE slice of the row
    offsets = col_block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    k_mask = offsets < k_cols
    v_mask = offsets < v_cols

    slot = tl.load(loc_ptr + pid)
    token = pid.to(tl.int64)

    # A move, not arithmetic: the values go out exactly as they came in, so no fp32 upcast.
    k = tl.load(k_ptr + token * k_row_stride + offsets, mask=k_mask)
    tl.store(k_cache_ptr + slot * k_cache_row_stride + offsets, k, mask=k_mask)
    v = tl.load(v_ptr + token * v_row_stride + offsets, mask=v_mask)
    tl.store(v_cache_ptr + slot * v_cache_row_stride + offsets, v, mask=v_mask)


def store_cache_ref(
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    loc: torch.Tensor,
) -> None:
    """Pure-torch reference: scatter the rows in place (a copy; nothing to upcast). Returns None."""
    k_cache[loc] = k
    v_cache[loc] = v


def _row_is_contiguous(t: torch.Tensor) -> bool:
    if t.numel() == 0:
        return True
    return t.as_strided(t.shape[1:], t.stride()[1:]).is_contiguous()


def _validate(k, v, k_cache, v_cache, loc) -> None:
    op = "store_cache"
    tensors = {"k": k, "v": v, "k_cache": k_cache, "v_cache": v_cache, "loc": loc}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise ValueError(  # noqa: TRY004 - validation raises ValueError only
                f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}"
            )
    for name, t in (("k", k), ("v", v), ("k_cache", k_cache), ("v_cache", v_cache)):
        if t.dim() < 2:
            raise ValueError(
                f"{op}: {name} must have shape [rows, ...], got {tuple(t.shape)}"
            )
        if not _row_is_contiguous(t):
            raise ValueError(
                f"{op}: {name} must be contiguous within each row, got shape {tuple(t.shape)} "
                f"strides {t.stride()}"
            )
    if v.shape[0] != k.shape[0]:
        raise ValueError(
            f"{op}: v must have {k.shape[0]} rows like k, got {tuple(v.shape)}"
        )
    if v_cache.shape[0] != k_cache.shape[0]:
        raise ValueError(
            f"{op}: v_cache must have {k_cache.shape[0]} slots like k_cache, "
            f"got {tuple(v_cache.shape)}"
        )
    for name, new, cache in (("k_cache", k, k_cache), ("v_cache", v, v_cache)):
        src = name[0]
        if tuple(cache.shape[1:]) != tuple(new.shape[1:]):
            raise ValueError(
                f"{op}: {name} rows must have shape {tuple(new.shape[1:])} like {src}'s, "
                f"got {tuple(cache.shape)}"
            )
        if cache.dtype != new.dtype:
            raise ValueError(
                f"{op}: {name} must have dtype {new.dtype} like {src}, got {cache.dtype}"
            )
    for name, t in tensors.items():
        if t.device != k.device:
            raise ValueError(
                f"{op}: {name} must be on {k.device} like k, got {t.device}"
            )
    if loc.dtype != torch.int64 or loc.dim() != 1 or loc.shape[0] != k.shape[0]:
        raise ValueError(
            f"{op}: loc must be a 1-D int64 tensor of {k.shape[0]} slots, "
            f"got {tuple(loc.shape)} {loc.dtype}"
        )
    if loc.numel():
        lo, hi = int(loc.min()), int(loc.max())
        if lo < 0 or hi >= k_cache.shape[0]:
            raise ValueError(
                f"{op}: loc must lie in [0, {k_cache.shape[0]}), got values in [{lo}, {hi}]"
            )
        if torch.unique(loc).numel() != loc.numel():
            raise ValueError(
                f"{op}: loc must not repeat a slot (two tokens would race for one slot), "
                f"got {tuple(loc.shape)} with duplicates"
            )


def store_cache(
    k: torch.Tensor,
    v: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    loc: torch.Tensor,
) -> None:
    """Write rows `k[t]`, `v[t]` into slots `loc[t]` of `k_cache`, `v_cache` in place; returns None.

    Shapes `k` `[T, *k_item]`, `k_cache` `[S, *k_item]` (V likewise), `loc` int64 `[T]` in
    `[0, S)` without repeats; all on one device; rows contiguous, row strides free.
    """
    _validate(k, v, k_cache, v_cache, loc)
    n_tokens = k.shape[0]
    if n_tokens == 0:
        return
    k_cols, v_cols = k[0].numel(), v[0].numel()
    kernel_ok = (
        k.dtype in _KERNEL_DTYPES and v.dtype in _KERNEL_DTYPES and k_cols and v_cols
    )
    if not (kernel_ok and use_triton(k, v, k_cache, v_cache, loc)):
        store_cache_ref(k, v, k_cache, v_cache, loc)
        return
    block = min(next_power_of_2(max(k_cols, v_cols)), _MAX_BLOCK)
    grid = (n_tokens, triton.cdiv(max(k_cols, v_cols), block))
    _store_cache_kernel[grid](
        k,
        v,
        k_cache,
        v_cache,
        loc,
        k.stride(0),
        v.stride(0),
        k_cache.stride(0),
        v_cache.stride(0),
        k_cols,
        v_cols,
        BLOCK_SIZE=block,
    )
    return


__all__ = ["store_cache", "store_cache_ref"]
