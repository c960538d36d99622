"""HiCache K/V transfers: copy token rows between a device KV pool and a host KV pool.

    k_cache_dst[indices_dst[i]] = k_cache_src[indices_src[i]]     (V likewise)

upstream 0.5.17's API, destination first, tuning arguments keyword-only:

- `transfer_hicache_one_layer(k_cache_dst, v_cache_dst, indices_dst, k_cache_src, v_cache_src,
  indices_src, *, element_dim=None, unroll=None, block_quota=None)`: one layer's pools, seen as
  `[-1, element_dim]` rows (`element_dim` defaults to the last dim); slot strides are free, so
  per-layer views of a `page_first` host buffer work.
- `transfer_hicache_all_layer(k_ptr_dst, v_ptr_dst, indices_dst, k_ptr_src, v_ptr_src,
  indices_src, *, kv_cache_src_stride_bytes, kv_cache_dst_stride_bytes, element_size=None, ...)`:
  every layer in one launch, each side given as a uint64 `[num_layers]` table of the layers'
  base addresses (`torch.tensor([t.data_ptr() for t in layers], dtype=torch.uint64)`, built once
  by the pool), with the byte stride between slots and `element_size` bytes copied per row.
  upstream's CUDA kernel dereferences the table; this Triton kernel does the same
  (`tl.load(table + layer)` bitcast to a pointer), so it runs over whatever pools the
  addresses point at. What it cannot do is check them: the addresses are device data, and the
  pools' sizes are not passed, so slot ranges are the caller's contract, as upstream's.

Why a kernel: hierarchical caching moves thousands of scattered token rows per layer between
GPU memory and pinned host memory (the GPU addresses pinned memory directly). Torch would
stage them through `index_select` + `index_copy_` per tensor and layer; the kernel reads each
row where it lies and writes it in place, K and V (and every layer) in one launch. It moves
raw 4-byte words (bytes when a row or stride is not a whole number of words), never values, so
it is bit-exact for every dtype (bf16, fp8 stored as uint8, ...).

`unroll` and `block_quota` are upstream's CUDA tuning knobs (loop unrolling, a cap on CTAs so
a transfer does not crowd out compute); they are accepted and checked, and the Triton launch
does not need them (its block size is set from the row). `page_size` (added in 0.5.23, on the
predicate and both transfers) only decides whether upstream takes its TMA kernel (pages must
tile a TMA chunk; None trusts the indices); the rows copied are the same, so it is accepted and
checked (None or a positive int) and changes nothing here. Index tensors may have any stride:
the kernel reads `indices[i]` at `i * stride` (upstream's wants them dense); the uint64 layer
tables must be dense (stride 1), as upstream's, or the call raises `ValueError`.

Index ranges of the one-layer copy are checked on the device (`torch._assert_async`), never by reading the indices on the host;
a repeated destination slot is the caller's contract (two writes race), as upstream's.

Differs from upstream: `can_use_hicache_jit_kernel` answers whether Triton can run here (CUDA
present or the interpreter on) for any positive row size, where upstream's asks whether its CUDA
kernel builds for a multiple of 128 bytes; the one-layer copy lets K and V of one side have
different slot strides (upstream's needs one per side); the MLA and staged variants are not
implemented. One addition, `layer_pointer_table(layers, device=None)`, the uint64
table of layer base addresses the all-layer copy takes; upstream's host pool builds it inline
(`torch.tensor([t.data_ptr() for t in layers], dtype=torch.uint64)`), here the pools and tests
share one helper. `can_use_write_back_jit_kernel` is always False: upstream's staged write-back
kernels do not exist here, and callers take the all-layer backup instead.
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

# upstream's default CTA quota (accepted; see the module docstring).
DEFAULT_BLOCK_QUOTA = 2

# At most 1024 words (4 KiB) per program: 4 warps x 32 threads x 4 words (one 16-byte vector
# per thread) cover 512 words a pass, so a block is two passes, enough to amortize the two index
# loads; a typical row (8 heads x 128 dims x 2 bytes = 512 words) is one program.
_MAX_BLOCK_WORDS = 1024


@triton.jit
def _transfer_hicache_kernel(
    k_dst,  # FROM_TABLE: uint64 [L] layer base addresses; else the K destination pool
    v_dst,  # likewise for V
    idx_dst_ptr,  # int32/int64 [N] destination slot of each row
    idx_dst_stride,  # elements between rows' destination slots
    k_src,  # FROM_TABLE: uint64 [L] layer base addresses; else the K source pool
    v_src,  # likewise for V
    idx_src_ptr,  # int32/int64 [N] source slot of each row
    idx_src_stride,  # elements between rows' source slots
    k_src_stride,  # words between slots of the K source
    v_src_stride,  # words between slots of the V source
    k_dst_stride,  # words between slots of the K destination
    v_dst_stride,  # words between slots of the V destination
    n_words,  # words per row
    WORD: tl.constexpr,  # tl.int32 (4-byte words) or tl.uint8 (bytes)
    FROM_TABLE: tl.constexpr,  # the pools are per-layer address tables
    BLOCK_SIZE: tl.constexpr,  # words per program, a power of two
):
    pid = tl.program_id(0)  # which index pair
    col_block = tl.program_id(1)  # which BLOCK_SIZE slice of the row
    layer = tl.program_id(2)
    offsets = col_block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_words

    # 64-bit slot offsets: host pools exceed 2**31 words.
    src = tl.load(idx_src_ptr + pid.to(tl.int64) * idx_src_stride).to(tl.int64)
    dst = tl.load(idx_dst_ptr + pid.to(tl.int64) * idx_dst_stride).to(tl.int64)
    if FROM_TABLE:
        k_src_base = tl.load(k_src + layer).to(tl.pointer_type(WORD), bitcast=True)
        v_src_base = tl.load(v_src + layer).to(tl.pointer_type(WORD), bitcast=True)
        k_dst_base = tl.load(k_dst + layer).to(tl.pointer_type(WORD), bitcast=True)
        v_dst_base = tl.load(v_dst + layer).to(tl.pointer_type(WORD), bitcast=True)
    else:
        k_src_base = k_src.to(tl.pointer_type(WORD))
        v_src_base = v_src.to(tl.pointer_type(WORD))
        k_dst_base = k_dst.to(tl.pointer_type(WORD))
        v_dst_base = v_dst.to(tl.pointer_type(WORD))
    # Both loads before either store: K's destination may be V's source in a same-pool move.
    k = tl.load(k_src_base + src * k_src_stride + offsets, mask=mask)
    v = tl.load(v_src_base + src * v_src_stride + offsets, mask=mask)
    tl.store(k_dst_base + dst * k_dst_stride + offsets, k, mask=mask)
    tl.store(v_dst_base + dst * v_dst_stride + offsets, v, mask=mask)


def transfer_hicache_one_layer_ref(
    k_cache_dst: torch.Tensor,
    v_cache_dst: torch.Tensor,
    indices_dst: torch.Tensor,
    k_cache_src: torch.Tensor,
    v_cache_src: torch.Tensor,
    indices_src: torch.Tensor,
    *,
    element_dim: int | None = None,
    unroll: int | None = None,
    block_quota: int | None = None,
) -> None:
    """Pure-torch reference: gather the rows, move them to dst's device, scatter them in place.

    A copy, not a computation: nothing to upcast, and it is bit-exact.
    """
    element_dim = element_dim or k_cache_dst.size(-1)
    for src_pool, dst_pool in ((k_cache_src, k_cache_dst), (v_cache_src, v_cache_dst)):
        src_rows = src_pool.view(-1, element_dim)
        dst_rows = dst_pool.view(-1, element_dim)
        rows = src_rows[indices_src.to(src_rows.device)]
        dst_rows[indices_dst.to(dst_rows.device)] = rows.to(dst_rows.device)


def transfer_hicache_all_layer_ref(
    k_layers_dst,
    v_layers_dst,
    indices_dst: torch.Tensor,
    k_layers_src,
    v_layers_src,
    indices_src: torch.Tensor,
) -> None:
    """Pure-torch reference of the all-layer copy over the layers themselves (lists of `[S, ...]`
    tensors, or stacked `[L, S, ...]` ones) instead of tables of their addresses."""
    for k_dst, v_dst, k_src, v_src in zip(k_layers_dst, v_layers_dst, k_layers_src, v_layers_src):
        transfer_hicache_one_layer_ref(
            k_dst,
            v_dst,
            indices_dst,
            k_src,
            v_src,
            indices_src,
            element_dim=k_dst[0].numel() if k_dst.dim() > 1 else 1,
        )


def _check_tuning(op: str, **knobs) -> None:
    for name, value in knobs.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            raise ValueError(f"{op}: {name} must be None or a positive int, got {value!r}")


def can_use_hicache_jit_kernel(
    *,
    element_size: int,
    unroll: int | None = None,  # can be tuned for performance
    block_quota: int | None = None,  # can be tuned for less interference
    page_size: int | None = None,  # 0.5.23: picks upstream's TMA kernel; the copy is the same
) -> bool:
    """Whether rows of `element_size` bytes can go through the Triton transfer kernel here.

    upstream asks whether its CUDA kernel builds for that row size (a multiple of 128 bytes).
    The Triton kernel takes any positive row (words or bytes), so this asks whether Triton can
    run: installed, and a CUDA device present or the CPU interpreter on. When False, the
    one-layer copy still works through its torch path; the all-layer copy (raw addresses) does
    not, and raises.
    """
    if isinstance(element_size, bool) or not isinstance(element_size, int) or element_size <= 0:
        return False
    for value in (unroll, block_quota, page_size):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
            return False
    return triton_available() and (has_cuda() or interpreter_enabled())


def can_use_write_back_jit_kernel(
    *,
    element_size: int,
    unroll: int | None = None,  # can be tuned for performance
    block_quota: int | None = None,  # can be tuned for less interference
) -> bool:
    """Whether upstream's staged write-back kernels can run: never here.

    upstream's `transfer_hicache_all_layer_staged_lf_pf` (a device staging buffer, then one
    page-first host write per chunk) has no Triton version in this repository, so this is False
    for every row size and callers take the plain all-layer backup, as upstream's do when it is
    False.
    """
    return False


def _launch_grid(n: int, n_words: int, n_layers: int) -> tuple[tuple[int, int, int], int]:
    block = min(next_power_of_2(n_words), _MAX_BLOCK_WORDS)
    return (n, triton.cdiv(n_words, block), n_layers), block


def _device_context(device: torch.device):
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


def _rows(op: str, name: str, t, element_dim: int) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")  # noqa: TRY004
    try:
        rows = t.view(-1, element_dim)
    except RuntimeError:
        raise ValueError(
            f"{op}: {name} must be viewable as [-1, {element_dim}] rows (each row contiguous), "
            f"got shape {tuple(t.shape)} strides {t.stride()}"
        ) from None
    if element_dim > 1 and rows.stride(1) != 1:
        raise ValueError(f"{op}: {name} rows must be contiguous, got strides {t.stride()}")
    return rows


@torch.library.custom_op("sglang::transfer_hicache_one_layer", mutates_args=("k_cache_dst", "v_cache_dst"))
def _transfer_hicache_one_layer_op(
    k_cache_dst: torch.Tensor,
    v_cache_dst: torch.Tensor,
    indices_dst: torch.Tensor,
    k_cache_src: torch.Tensor,
    v_cache_src: torch.Tensor,
    indices_src: torch.Tensor,
    element_dim: int,
) -> None:
    pools = [t.view(-1, element_dim) for t in (k_cache_dst, v_cache_dst, k_cache_src, v_cache_src)]
    kd, vd, ks, vs = pools
    check_index_range("transfer_hicache_one_layer", "indices_dst", indices_dst, kd.shape[0])
    check_index_range("transfer_hicache_one_layer", "indices_src", indices_src, ks.shape[0])
    device = copy_kernel_device(*pools)
    if device is None:
        # No kernel can address both sides (a pageable host pool with a CUDA pool, or a CPU
        # without the interpreter): the reference, which the driver stages.
        transfer_hicache_one_layer_ref(kd, vd, indices_dst, ks, vs, indices_src, element_dim=element_dim)
        return
    esize = kd.element_size()
    strides = [t.stride(0) * esize for t in (ks, vs, kd, vd)]
    word_ty, word = copy_word(element_dim * esize, *strides, *(t.data_ptr() for t in pools))
    n_words = element_dim * esize // word
    grid, block = _launch_grid(indices_src.numel(), n_words, 1)
    # A move to the kernel's device may make a strided index contiguous: pass the strides of
    # the tensors the kernel reads.
    idx_dst, idx_src = (i.to(device, non_blocking=True) for i in (indices_dst, indices_src))
    with _device_context(device):
        _transfer_hicache_kernel[grid](
            kd,
            vd,
            idx_dst,
            idx_dst.stride(0),
            ks,
            vs,
            idx_src,
            idx_src.stride(0),
            *(b // word for b in strides),
            n_words,
            WORD=word_ty,
            FROM_TABLE=False,
            BLOCK_SIZE=block,
        )


@_transfer_hicache_one_layer_op.register_fake
def _(k_cache_dst, v_cache_dst, indices_dst, k_cache_src, v_cache_src, indices_src, element_dim) -> None:
    return None


def _check_indices(op: str, indices_dst, indices_src, devices) -> None:
    for name, idx in (("indices_dst", indices_dst), ("indices_src", indices_src)):
        check_index(op, name, idx, (torch.int32, torch.int64))
        if idx.device not in devices:
            raise ValueError(
                f"{op}: {name} must be on a pool's device ({sorted(map(str, devices))}), got {idx.device}"
            )
    if indices_src.shape != indices_dst.shape:
        raise ValueError(
            f"{op}: indices_src must have the shape of indices_dst {tuple(indices_dst.shape)}, "
            f"got {tuple(indices_src.shape)}"
        )


def transfer_hicache_one_layer(
    k_cache_dst: torch.Tensor,
    v_cache_dst: torch.Tensor,
    indices_dst: torch.Tensor,
    k_cache_src: torch.Tensor,
    v_cache_src: torch.Tensor,
    indices_src: torch.Tensor,
    *,
    element_dim: int | None = None,
    unroll: int | None = None,  # can be tuned for performance
    block_quota: int | None = None,  # can be tuned for less interference
    page_size: int | None = None,  # 0.5.23: picks upstream's TMA kernel; the copy is the same
) -> None:
    """Copy rows `indices_src` of one layer's K/V pools into rows `indices_dst` of another's.

    Pools are seen as `[-1, element_dim]` rows of one dtype (each row contiguous; K and V of a
    side on one device); indices int32/int64 `[N]`. Writes the destinations in place; returns None.
    """
    op = "transfer_hicache_one_layer"
    _check_tuning(op, unroll=unroll, block_quota=block_quota, page_size=page_size)
    if not isinstance(k_cache_dst, torch.Tensor):
        raise ValueError(f"{op}: k_cache_dst must be a torch.Tensor, got {type(k_cache_dst).__name__}")  # noqa: TRY004
    element_dim = element_dim or k_cache_dst.size(-1)
    if isinstance(element_dim, bool) or not isinstance(element_dim, int) or element_dim <= 0:
        raise ValueError(f"{op}: element_dim must be a positive int, got {element_dim!r}")
    named = {
        "k_cache_dst": k_cache_dst,
        "v_cache_dst": v_cache_dst,
        "k_cache_src": k_cache_src,
        "v_cache_src": v_cache_src,
    }
    for name, t in named.items():
        _rows(op, name, t, element_dim)
        if t.dtype != k_cache_dst.dtype:
            raise ValueError(f"{op}: {name} must have k_cache_dst's dtype {k_cache_dst.dtype}, got {t.dtype}")
    if v_cache_dst.device != k_cache_dst.device:
        raise ValueError(
            f"{op}: v_cache_dst must be on {k_cache_dst.device} like k_cache_dst, got {v_cache_dst.device}"
        )
    if v_cache_src.device != k_cache_src.device:
        raise ValueError(
            f"{op}: v_cache_src must be on {k_cache_src.device} like k_cache_src, got {v_cache_src.device}"
        )
    _check_indices(op, indices_dst, indices_src, {k_cache_dst.device, k_cache_src.device})
    if indices_src.numel() == 0:
        return None
    _transfer_hicache_one_layer_op(
        k_cache_dst, v_cache_dst, indices_dst, k_cache_src, v_cache_src, indices_src, element_dim
    )
    return None


@torch.library.custom_op("sglang::transfer_hicache_all_layer", mutates_args=("k_ptr_dst", "v_ptr_dst"))
def _transfer_hicache_all_layer_op(
    k_ptr_dst: torch.Tensor,
    v_ptr_dst: torch.Tensor,
    indices_dst: torch.Tensor,
    k_ptr_src: torch.Tensor,
    v_ptr_src: torch.Tensor,
    indices_src: torch.Tensor,
    src_stride_bytes: int,
    dst_stride_bytes: int,
    element_size: int,
) -> None:
    # The tables are declared mutated because the memory they address is: that keeps a
    # compiler from dropping or reordering this call (it returns nothing a graph would use).
    if not can_use_hicache_jit_kernel(element_size=element_size) or (
        k_ptr_dst.device.type == "cpu" and not interpreter_enabled()
    ):
        # Raw addresses have no torch equivalent: there is no fallback to take.
        raise ValueError(
            f"transfer_hicache_all_layer: no Triton kernel can run on {k_ptr_dst.device} "
            "(`can_use_hicache_jit_kernel` is False); copy per layer with "
            "`transfer_hicache_one_layer` instead"
        )
    word_ty, word = copy_word(element_size, src_stride_bytes, dst_stride_bytes)
    n_words = element_size // word
    device = k_ptr_dst.device
    grid, block = _launch_grid(indices_src.numel(), n_words, k_ptr_dst.numel())
    idx_dst, idx_src = (i.to(device, non_blocking=True) for i in (indices_dst, indices_src))
    with _device_context(device):
        _transfer_hicache_kernel[grid](
            k_ptr_dst,
            v_ptr_dst,
            idx_dst,
            idx_dst.stride(0),
            k_ptr_src,
            v_ptr_src,
            idx_src,
            idx_src.stride(0),
            src_stride_bytes // word,
            src_stride_bytes // word,  # upstream: one slot stride per side, K and V alike
            dst_stride_bytes // word,
            dst_stride_bytes // word,
            n_words,
            WORD=word_ty,
            FROM_TABLE=True,
            BLOCK_SIZE=block,
        )


@_transfer_hicache_all_layer_op.register_fake
def _(k_ptr_dst, v_ptr_dst, indices_dst, k_ptr_src, v_ptr_src, indices_src, s, d, e) -> None:
    return None


def transfer_hicache_all_layer(
    k_ptr_dst: torch.Tensor,
    v_ptr_dst: torch.Tensor,
    indices_dst: torch.Tensor,
    k_ptr_src: torch.Tensor,
    v_ptr_src: torch.Tensor,
    indices_src: torch.Tensor,
    *,
    kv_cache_src_stride_bytes: int,
    kv_cache_dst_stride_bytes: int,
    element_size: int | None = None,
    unroll: int | None = None,  # can be tuned for performance
    block_quota: int | None = None,  # can be tuned for less interference
    page_size: int | None = None,  # 0.5.23: picks upstream's TMA kernel; the copy is the same
) -> None:
    """For every layer l: row `indices_src[i]` of the pools at `*_ptr_src[l]` -> `indices_dst[i]` at `*_ptr_dst[l]`.

    `*_ptr_*` are uint64 `[num_layers]` tables of layer base addresses on one device (the
    kernel's: CUDA, or the CPU under the interpreter); slot `s` of layer `l` starts at
    `table[l] + s * stride_bytes`; `element_size` bytes are copied (default: the stride, which
    then must be equal on both sides, i.e. contiguous pools). Every address must be aligned to
    the copy word (4 bytes when `element_size` and both strides are multiples of 4; torch's
    per-layer views of a pool are). Returns None.
    """
    op = "transfer_hicache_all_layer"
    _check_tuning(op, unroll=unroll, block_quota=block_quota, page_size=page_size)
    tables = {"k_ptr_dst": k_ptr_dst, "v_ptr_dst": v_ptr_dst, "k_ptr_src": k_ptr_src, "v_ptr_src": v_ptr_src}
    for name, t in tables.items():
        if not isinstance(t, torch.Tensor) or t.dtype != torch.uint64 or t.dim() != 1:
            got = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{op}: {name} must be a 1-D uint64 table of layer addresses, got {got}")
        if t.stride(0) != 1 and t.numel() > 1:
            # The kernel reads `table + layer`, as upstream's (its TensorMatcher wants a dense
            # table); a strided view would hand it other layers' addresses.
            raise ValueError(
                f"{op}: {name} must be a contiguous table (stride 1), got stride {t.stride(0)}; "
                "pass `.contiguous()` or build it with `layer_pointer_table`"
            )
        if t.shape != k_ptr_dst.shape or t.device != k_ptr_dst.device:
            raise ValueError(
                f"{op}: {name} must have k_ptr_dst's {k_ptr_dst.numel()} layers on {k_ptr_dst.device}, "
                f"got {tuple(t.shape)} on {t.device}"
            )
    for name, value in (
        ("kv_cache_src_stride_bytes", kv_cache_src_stride_bytes),
        ("kv_cache_dst_stride_bytes", kv_cache_dst_stride_bytes),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{op}: {name} must be a positive int, got {value!r}")
    if element_size is None:  # assume both contiguous, as upstream does
        if kv_cache_dst_stride_bytes != kv_cache_src_stride_bytes:
            raise ValueError(
                f"{op}: element_size is needed when the strides differ "
                f"({kv_cache_src_stride_bytes} != {kv_cache_dst_stride_bytes})"
            )
        element_size = kv_cache_dst_stride_bytes
    if isinstance(element_size, bool) or not isinstance(element_size, int) or element_size <= 0:
        raise ValueError(f"{op}: element_size must be a positive int, got {element_size!r}")
    if element_size > min(kv_cache_src_stride_bytes, kv_cache_dst_stride_bytes):
        raise ValueError(
            f"{op}: element_size {element_size} exceeds a slot stride "
            f"({kv_cache_src_stride_bytes}, {kv_cache_dst_stride_bytes}): rows would overlap"
        )
    _check_indices(op, indices_dst, indices_src, {k_ptr_dst.device})
    if indices_src.numel() == 0 or k_ptr_dst.numel() == 0:
        return None
    _transfer_hicache_all_layer_op(
        k_ptr_dst,
        v_ptr_dst,
        indices_dst,
        k_ptr_src,
        v_ptr_src,
        indices_src,
        kv_cache_src_stride_bytes,
        kv_cache_dst_stride_bytes,
        element_size,
    )
    return None


def layer_pointer_table(layers, device=None) -> torch.Tensor:
    """uint64 `[L]` table of the base addresses of `layers` (tensors or one stacked tensor), as pools build once."""
    seq = list(layers.unbind(0)) if isinstance(layers, torch.Tensor) else list(layers)
    device = device or (seq[0].device if seq else "cpu")
    return torch.tensor([t.data_ptr() for t in seq], dtype=torch.uint64, device=device)


__all__ = [
    "DEFAULT_BLOCK_QUOTA",
    "can_use_hicache_jit_kernel",
    "can_use_write_back_jit_kernel",
    "layer_pointer_table",
    "transfer_hicache_all_layer",
    "transfer_hicache_all_layer_ref",
    "transfer_hicache_one_layer",
    "transfer_hicache_one_layer_ref",
]
