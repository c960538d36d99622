"""Inkling's short causal depthwise convolution ("sconv") over packed sequences, with its state cache.

upstream 0.5.17's three entry points, their signatures and cache layout
(`sconv_cache` `[max_slots, W-1, D]`, oldest input first; `PAD_SLOT_ID = -1`):

- `causal_conv1d(x, weight, sconv_cache, cache_mask, safe_idx, cu, si, activation=None,
  use_residual=True, is_decode=False) -> y` (prefill/extend). For token t of sequence s
  (`bos = cu[s]`, `s = si[t]`) and tap k of width W (`weight` `[D, W]`):

      src = t - (W-1) + k
      tap = x[src]                                     if src >= bos
          = sconv_cache[safe_idx[s], src - bos + W-1] * cache_mask[s]   if that is in [0, W-1)
      y[t] = act(sum_k tap * weight[:, k]) (+ x[t] if use_residual)     fp32 accumulation

  The cache is read, not written (`update_sconv_cache` does that after); `cache_mask` (bool
  `[B, 1, 1]`) zeroes the prefix of sequences without an initial state; `is_decode` drops the
  mask (upstream's decode metadata is all ones).
- `update_sconv_cache(x, sconv_cache, cache_indices, has_initial_state, query_start_loc)`: each
  sequence's state becomes the last W-1 inputs of `[old_state (x has_initial_state) ++ x_seq]`,
  in place; a PAD slot (-1) or an empty sequence is left untouched.
- `fused_causal_conv1d_update_decode(x, weight, sconv_cache, cache_indices, cache_mask,
  activation=None, use_residual=True, track_mask=None, track_indices=None) -> y` (decode, one
  token per sequence): the conv over `[cache (x cache_mask) ++ x[b]]` and the cache shift in one
  launch; with `track_mask`/`track_indices` the new window is also written to slot
  `track_indices[b]` where `track_mask[b]` (prefix caching).

Why kernels: the conv runs in every such layer on every step over tiny widths (W = 4), so it
is memory bound; torch would gather each sequence's prefix, pad, convolve per sequence and
scatter the states back (at decode: a thousand small ops and a host sync per step). Each kernel
reads every tap straight from `x` or the cache, accumulates in fp32 and fuses SiLU and the
residual. All three are registered custom ops (`sglang::inkling_*`) and read no tensor values
on the host: the metadata is device data that the kernels index with; slots are clamped
(`max(ci, 0)`) and masked as upstream's, so PAD lanes of a CUDA-graph padded batch are harmless.
Every metadata tensor may have any stride (`cache_indices`, `cache_mask`, `safe_idx`, `cu`,
`si`, `has_initial_state`, `query_start_loc`, `track_mask`, `track_indices`): each is read at
its own stride, as upstream's `stride_cm` and `track_idx_stride`.

Differs from upstream: these take fp32 and fp16 activations as well as bf16 and any channel
count (upstream's CUDA kernels need bf16 with an even D); upstream's
`fused_gather_scatter_to_sconv_cache` and `fused_draft_extend_sconv_cache` (speculative-decoding
cache maintenance) are not implemented here; the semantics of the three that are follow
upstream's Triton kernels in `srt/models/inkling_common/kernels/sconv.py`.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from sglang.kernels.jit import next_power_of_2, use_triton

PAD_SLOT_ID = -1

# Activations the kernels fuse ("swish" is upstream's alias of "silu").
_ACTIVATIONS = (None, "silu", "swish")

# Activation dtypes (x, sconv_cache); the weight may be any of them too.
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# The taps are unrolled at compile time; 16 covers every short conv in use (W = 2..4) with room.
_MAX_WIDTH = 16

# 16 tokens per prefill program: each tile re-reads W-1 halo rows, (W-1)/16 = 19% extra traffic
# at W=4. Decode programs take 2 tokens (one per sequence), as upstream's heuristic for T <= 2048.
_BLOCK_T = 16
_DECODE_BLOCK_T = 2
# Up to 128 channels per program: channels are the contiguous axis, 128 bf16 = 256 bytes, two
# full 128-byte lines per token row; narrower layers use their own power of two.
_MAX_BLOCK_D = 128


@triton.jit
def _causal_conv1d_kernel(
    x_ptr,  # [T, D] packed input tokens
    w_ptr,  # [D, W] depthwise weights
    cache_ptr,  # [max_slots, W-1, D] conv states, oldest input first (read only)
    y_ptr,  # [T, D] output, contiguous
    safe_idx_ptr,  # int [B] cache slot of each sequence (clamped >= 0)
    cache_mask_ptr,  # bool [B, 1, 1] 1 where the sequence continues its cached state
    cu_ptr,  # int [B+1] sequence start offsets
    si_ptr,  # int32 [T] sequence of each token
    x_t_stride,
    x_d_stride,
    w_d_stride,
    w_k_stride,
    cache_slot_stride,
    cache_w_stride,
    cache_d_stride,
    cm_stride,  # cache_mask stride between sequences
    safe_idx_stride,  # safe_idx stride between sequences
    cu_stride,  # cu stride between offsets
    si_stride,  # si stride between tokens
    n_tokens,  # T
    n_cols,  # D
    W: tl.constexpr,  # kernel width
    SILU: tl.constexpr,
    RESIDUAL: tl.constexpr,
    IS_DECODE: tl.constexpr,  # the prefix mask is all ones: not read
    BLOCK_T: tl.constexpr,  # tokens per program
    BLOCK_D: tl.constexpr,  # channels per program, a power of two
):
    pid = tl.program_id(0)  # token tile
    pid_d = tl.program_id(1)  # channel tile
    t_offs = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    d_offs = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    t_mask = t_offs < n_tokens
    d_mask = d_offs < n_cols
    td_mask = t_mask[:, None] & d_mask[None, :]

    seq = tl.load(si_ptr + t_offs.to(tl.int64) * si_stride, mask=t_mask, other=0).to(tl.int64)
    bos = tl.load(cu_ptr + seq * cu_stride, mask=t_mask, other=0).to(tl.int64)
    slot = tl.load(safe_idx_ptr + seq * safe_idx_stride, mask=t_mask, other=0).to(tl.int64)
    if IS_DECODE:
        use_prefix = t_mask
    else:
        use_prefix = tl.load(cache_mask_ptr + seq * cm_stride, mask=t_mask, other=0) != 0

    acc = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
    for k in tl.static_range(W):
        src = t_offs.to(tl.int64) - (W - 1) + k  # input position of tap k
        in_x = src >= bos
        tap = tl.load(
            x_ptr + src[:, None] * x_t_stride + d_offs[None, :] * x_d_stride,
            mask=td_mask & in_x[:, None],
            other=0.0,
        ).to(tl.float32)
        if k < W - 1:  # only the first W-1 taps can reach before bos
            pos = src - bos + (W - 1)  # position in the cached state, in [0, W-1) there
            from_cache = (~in_x) & (pos >= 0) & use_prefix
            tap += tl.load(
                cache_ptr
                + slot[:, None] * cache_slot_stride
                + pos[:, None] * cache_w_stride
                + d_offs[None, :] * cache_d_stride,
                mask=td_mask & from_cache[:, None],
                other=0.0,
            ).to(tl.float32)
        w = tl.load(w_ptr + d_offs * w_d_stride + k * w_k_stride, mask=d_mask, other=0.0)
        acc += tap * w.to(tl.float32)[None, :]

    if SILU:
        acc = acc * tl.sigmoid(acc)
    if RESIDUAL:
        x_cur = tl.load(
            x_ptr + t_offs[:, None].to(tl.int64) * x_t_stride + d_offs[None, :] * x_d_stride,
            mask=td_mask,
            other=0.0,
        )
        acc += x_cur.to(tl.float32)
    out_offs = t_offs[:, None].to(tl.int64) * n_cols + d_offs[None, :]
    tl.store(y_ptr + out_offs, acc.to(y_ptr.dtype.element_ty), mask=td_mask)


@triton.jit
def _update_sconv_cache_kernel(
    x_ptr,  # [T, D] packed input tokens
    cache_ptr,  # [max_slots, W-1, D] conv states, updated in place
    ci_ptr,  # int [B] cache slot of each sequence (PAD_SLOT_ID = -1: skipped)
    init_ptr,  # bool [B] the old state is part of the sequence's history
    qsl_ptr,  # int [B+1] sequence start offsets
    ci_stride,  # cache_indices stride between sequences
    init_stride,  # has_initial_state stride between sequences
    qsl_stride,  # query_start_loc stride between offsets
    x_t_stride,
    x_d_stride,
    cache_slot_stride,
    cache_w_stride,
    cache_d_stride,
    n_cols,  # D
    W1: tl.constexpr,  # W - 1, the state length
    BLOCK_W: tl.constexpr,  # next power of two >= W - 1
    BLOCK_D: tl.constexpr,  # channels per program, a power of two
):
    pid = tl.program_id(0)  # sequence
    pid_d = tl.program_id(1)  # channel tile
    d_offs = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    j = tl.arange(0, BLOCK_W)  # position in the new state
    d_mask = d_offs < n_cols
    jd_mask = (j < W1)[:, None] & d_mask[None, :]

    seq = pid.to(tl.int64)
    ci = tl.load(ci_ptr + seq * ci_stride + tl.zeros_like(j)).to(tl.int64)  # [BLOCK_W], a tensor mask
    start = tl.load(qsl_ptr + seq * qsl_stride).to(tl.int64)
    # As a [BLOCK_W] tensor: the interpreter rejects masks that mix tensors with scalar bools.
    seqlen = tl.load(qsl_ptr + (seq + 1) * qsl_stride + tl.zeros_like(j)).to(tl.int64) - start
    init = tl.load(init_ptr + seq * init_stride + tl.zeros_like(j)) != 0
    valid = (ci != -1) & (seqlen > 0)
    slot = tl.maximum(ci, 0)

    p = seqlen - W1 + j  # sequence position landing in state slot j; < 0 reaches the old state
    from_x = p >= 0
    new = tl.load(
        x_ptr + (start + p)[:, None] * x_t_stride + d_offs[None, :] * x_d_stride,
        mask=jd_mask & from_x[:, None],
        other=0.0,
    )
    row = cache_ptr + slot[:, None] * cache_slot_stride + d_offs[None, :] * cache_d_stride
    old = tl.load(
        row + (j + seqlen)[:, None] * cache_w_stride,
        mask=jd_mask & ((~from_x) & init & valid)[:, None],
        other=0.0,
    )
    # Every read above precedes this store, and this program alone owns (slot, d_offs).
    tl.store(
        row + j[:, None] * cache_w_stride,
        tl.where(from_x[:, None], new, old).to(cache_ptr.dtype.element_ty),
        mask=jd_mask & valid[:, None],
    )


@triton.jit
def _fused_causal_conv1d_update_decode_kernel(
    x_ptr,  # [B, D] one token per sequence
    w_ptr,  # [D, W] depthwise weights
    cache_ptr,  # [max_slots, W-1, D] conv states, shifted in place
    y_ptr,  # [B, D] output, contiguous
    ci_ptr,  # int [B] cache slot of each sequence (PAD_SLOT_ID = -1: not written)
    cm_ptr,  # bool [B] the cached state is used
    track_mask_ptr,  # bool [B] also snapshot the new window (read only if DO_TRACK)
    track_idx_ptr,  # int [B] snapshot slot (read only if DO_TRACK)
    x_t_stride,
    x_d_stride,
    w_d_stride,
    w_k_stride,
    cache_slot_stride,
    cache_w_stride,
    cache_d_stride,
    ci_stride,  # cache_indices stride
    cm_stride,  # cache_mask stride
    track_mask_stride,  # track_mask stride
    track_stride,  # track_indices stride
    n_tokens,  # B
    n_cols,  # D
    W: tl.constexpr,  # kernel width
    SILU: tl.constexpr,
    RESIDUAL: tl.constexpr,
    DO_TRACK: tl.constexpr,
    BLOCK_T: tl.constexpr,  # sequences per program
    BLOCK_D: tl.constexpr,  # channels per program, a power of two
):
    pid = tl.program_id(0)
    pid_d = tl.program_id(1)
    t_offs = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    d_offs = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    t_mask = t_offs < n_tokens
    d_mask = d_offs < n_cols
    td_mask = t_mask[:, None] & d_mask[None, :]

    t64 = t_offs.to(tl.int64)
    ci = tl.load(ci_ptr + t64 * ci_stride, mask=t_mask, other=-1).to(tl.int64)
    valid = ci != -1
    slot = tl.maximum(ci, 0)
    cm = tl.load(cm_ptr + t64 * cm_stride, mask=t_mask, other=0) != 0
    row = cache_ptr + slot[:, None] * cache_slot_stride + d_offs[None, :] * cache_d_stride
    tap_mask = td_mask & cm[:, None]

    acc = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
    for k in tl.static_range(W - 1):  # the cached history
        tap = tl.load(row + k * cache_w_stride, mask=tap_mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + d_offs * w_d_stride + k * w_k_stride, mask=d_mask, other=0.0)
        acc += tap * w.to(tl.float32)[None, :]
    x = tl.load(
        x_ptr + t_offs[:, None].to(tl.int64) * x_t_stride + d_offs[None, :] * x_d_stride,
        mask=td_mask,
        other=0.0,
    )
    w_last = tl.load(w_ptr + d_offs * w_d_stride + (W - 1) * w_k_stride, mask=d_mask, other=0.0)
    acc += x.to(tl.float32) * w_last.to(tl.float32)[None, :]
    if SILU:
        acc = acc * tl.sigmoid(acc)
    if RESIDUAL:
        acc += x.to(tl.float32)
    out_offs = t_offs[:, None].to(tl.int64) * n_cols + d_offs[None, :]
    tl.store(y_ptr + out_offs, acc.to(y_ptr.dtype.element_ty), mask=td_mask)

    # Shift: state[k] = state[k+1] (x cm) for k < W-2, state[W-2] = x. Increasing k reads k+1
    # before the store of step k+1 overwrites it, and this program alone owns (slot, d_offs).
    write_mask = td_mask & valid[:, None]
    if DO_TRACK:
        real = t_mask & valid
        track = tl.load(track_mask_ptr + t64 * track_mask_stride, mask=real, other=0) != 0
        track_slot = tl.load(track_idx_ptr + t64 * track_stride, mask=real, other=0).to(tl.int64)
        track_row = cache_ptr + track_slot[:, None] * cache_slot_stride + d_offs[None, :] * cache_d_stride
        track_write = write_mask & track[:, None]
    for k in tl.static_range(W - 2):
        shifted = tl.load(row + (k + 1) * cache_w_stride, mask=tap_mask, other=0.0)
        tl.store(row + k * cache_w_stride, shifted, mask=write_mask)
        if DO_TRACK:
            tl.store(track_row + k * cache_w_stride, shifted, mask=track_write)
    tl.store(row + (W - 2) * cache_w_stride, x.to(cache_ptr.dtype.element_ty), mask=write_mask)
    if DO_TRACK:
        tl.store(track_row + (W - 2) * cache_w_stride, x.to(cache_ptr.dtype.element_ty), mask=track_write)


def _act(y: torch.Tensor, activation) -> torch.Tensor:
    return F.silu(y) if activation in ("silu", "swish") else y


def causal_conv1d_ref(
    x: torch.Tensor,
    weight: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_mask: torch.Tensor,
    safe_idx: torch.Tensor,
    cu: torch.Tensor,
    si: torch.Tensor,
    activation: str | None = None,
    use_residual: bool = True,
    is_decode: bool = False,
) -> torch.Tensor:
    """Pure-torch reference in fp32, vectorized over tokens (no host read of the metadata)."""
    n_tokens, width = x.shape[0], weight.shape[1]
    if n_tokens == 0:
        return torch.empty_like(x)
    xf, wf = x.float(), weight.float()
    seq = si.long()
    bos = cu.long()[seq]  # [T]
    slot = safe_idx.long()[seq]
    use_prefix = torch.ones_like(seq, dtype=torch.bool) if is_decode else cache_mask.reshape(-1)[seq].bool()
    t = torch.arange(n_tokens, device=x.device)
    acc = torch.zeros_like(xf)
    for k in range(width):
        src = t - (width - 1) + k
        in_x = src >= bos
        tap = torch.where(in_x[:, None], xf[src.clamp(min=0)], 0.0)
        if k < width - 1:
            pos = src - bos + (width - 1)
            from_cache = ~in_x & (pos >= 0) & use_prefix
            cached = sconv_cache[slot, pos.clamp(0, width - 2)].float()
            tap = tap + torch.where(from_cache[:, None], cached, 0.0)
        acc = acc + tap * wf[:, k]
    acc = _act(acc, activation)
    if use_residual:
        acc = acc + xf
    return acc.to(x.dtype)


def update_sconv_cache_ref(
    x: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_indices: torch.Tensor,
    has_initial_state: torch.Tensor,
    query_start_loc: torch.Tensor,
) -> None:
    """Pure-torch reference, one sequence at a time (it reads the metadata on the host)."""
    width1 = sconv_cache.shape[1]
    bounds = query_start_loc.long().tolist()
    for b, (slot, init) in enumerate(zip(cache_indices.tolist(), has_initial_state.tolist())):
        start, end = bounds[b], bounds[b + 1]
        if slot == PAD_SLOT_ID or end == start:
            continue
        old = sconv_cache[slot] if init else torch.zeros_like(sconv_cache[slot])
        stream = torch.cat([old, x[start:end].to(sconv_cache.dtype)], dim=0)
        sconv_cache[slot] = stream[stream.shape[0] - width1 :]


def fused_causal_conv1d_update_decode_ref(
    x: torch.Tensor,
    weight: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_indices: torch.Tensor,
    cache_mask: torch.Tensor,
    activation: str | None = None,
    use_residual: bool = True,
    track_mask: torch.Tensor | None = None,
    track_indices: torch.Tensor | None = None,
) -> torch.Tensor:
    """Pure-torch reference: the conv over `[cache x cache_mask ++ x]`, then the shift (and the snapshot)."""
    ci = cache_indices.long()
    valid = ci != PAD_SLOT_ID
    slot = ci.clamp(min=0)
    cm = cache_mask.reshape(-1).bool()
    window = torch.where(cm[:, None, None], sconv_cache[slot].float(), 0.0)  # [B, W-1, D]
    taps = torch.cat([window, x.float()[:, None]], dim=1)  # [B, W, D]
    y = (taps * weight.float().t()[None]).sum(1)
    y = _act(y, activation)
    if use_residual:
        y = y + x.float()
    new = taps[:, 1:].to(sconv_cache.dtype)
    rows = valid.nonzero().flatten()  # a reference: the host read is fine here
    sconv_cache[slot[rows]] = new[rows]
    if track_mask is not None:
        snap = rows[track_mask.reshape(-1).bool()[rows]]
        sconv_cache[track_indices.long()[snap]] = new[snap]
    return y.to(x.dtype)


def _fail(op: str, arg: str, must: str, t) -> None:
    got = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) else repr(t)
    raise ValueError(f"{op}: {arg} must {must}, got {got}")


def _check_common(op, x, weight, sconv_cache, activation, use_residual) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype not in _DTYPES:
        _fail(op, "x", "be a 2-D float32/float16/bfloat16 tensor [tokens, dim]", x)
    dim = x.shape[1]
    if (
        not isinstance(weight, torch.Tensor)
        or weight.dim() != 2
        or weight.shape[0] != dim
        or weight.dtype not in _DTYPES
    ):
        _fail(op, "weight", f"be a float tensor [{dim}, width]", weight)
    width = weight.shape[1]
    if not 2 <= width <= _MAX_WIDTH:
        _fail(op, "weight", f"have a width in [2, {_MAX_WIDTH}]", weight)
    if (
        not isinstance(sconv_cache, torch.Tensor)
        or sconv_cache.dim() != 3
        or tuple(sconv_cache.shape[1:]) != (width - 1, dim)
    ):
        _fail(op, "sconv_cache", f"be a tensor [max_slots, {width - 1}, {dim}]", sconv_cache)
    if sconv_cache.dtype != x.dtype:
        _fail(op, "sconv_cache", f"have x's dtype {x.dtype}", sconv_cache)
    if activation not in _ACTIVATIONS:
        _fail(op, "activation", "be None, 'silu' or 'swish'", activation)
    if not isinstance(use_residual, bool):
        _fail(op, "use_residual", "be a bool", use_residual)
    for arg, t in (("weight", weight), ("sconv_cache", sconv_cache)):
        if t.device != x.device:
            raise ValueError(f"{op}: {arg} must be on {x.device} like x, got {t.device}")


def _check_meta(op: str, x, named: dict) -> None:
    """Metadata: integer/bool tensors of the given lengths on x's device (shapes only)."""
    for arg, (t, shape, kinds) in named.items():
        ok = isinstance(t, torch.Tensor) and t.numel() == shape and t.dim() >= 1 and not t.is_floating_point()
        if ok and kinds == "int":
            ok = t.dtype in (torch.int32, torch.int64)
        if ok and kinds == "bool":
            ok = t.dtype in (torch.bool, torch.int8, torch.uint8, torch.int32, torch.int64)
        if not ok:
            _fail(op, arg, f"be a {kinds} tensor of {shape} elements", t)
        if t.device != x.device:
            raise ValueError(f"{op}: {arg} must be on {x.device} like x, got {t.device}")


def _block_d(dim: int) -> int:
    return min(next_power_of_2(dim), _MAX_BLOCK_D)


def _on(device: torch.device):
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


@torch.library.custom_op("sglang::inkling_causal_conv1d", mutates_args=("y",))
def _causal_conv1d_op(
    x: torch.Tensor,
    weight: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_mask: torch.Tensor,
    safe_idx: torch.Tensor,
    cu: torch.Tensor,
    si: torch.Tensor,
    silu: bool,
    use_residual: bool,
    is_decode: bool,
    y: torch.Tensor,
) -> None:
    if not use_triton(x, weight, sconv_cache):
        y.copy_(
            causal_conv1d_ref(
                x,
                weight,
                sconv_cache,
                cache_mask,
                safe_idx,
                cu,
                si,
                "silu" if silu else None,
                use_residual,
                is_decode,
            )
        )
        return
    n_tokens, dim = x.shape
    block_d = _block_d(dim)
    # Flat views of the metadata (a copy only where no view exists); the kernel reads each at
    # its own stride.
    cm, safe_idx, cu, si = (t.reshape(-1) for t in (cache_mask, safe_idx, cu, si))
    with _on(x.device):
        _causal_conv1d_kernel[(triton.cdiv(n_tokens, _BLOCK_T), triton.cdiv(dim, block_d))](
            x,
            weight,
            sconv_cache,
            y,
            safe_idx,
            cm,
            cu,
            si,
            x.stride(0),
            x.stride(1),
            weight.stride(0),
            weight.stride(1),
            *sconv_cache.stride(),
            cm.stride(0),
            safe_idx.stride(0),
            cu.stride(0),
            si.stride(0),
            n_tokens,
            dim,
            W=weight.shape[1],
            SILU=silu,
            RESIDUAL=use_residual,
            IS_DECODE=is_decode,
            BLOCK_T=_BLOCK_T,
            BLOCK_D=block_d,
        )


@_causal_conv1d_op.register_fake
def _(x, weight, sconv_cache, cache_mask, safe_idx, cu, si, silu, use_residual, is_decode, y) -> None:
    return None


def causal_conv1d(
    x: torch.Tensor,
    weight: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_mask: torch.Tensor,
    safe_idx: torch.Tensor,
    cu: torch.Tensor,
    si: torch.Tensor,
    activation: str | None = None,
    use_residual: bool = True,
    is_decode: bool = False,
) -> torch.Tensor:
    """Depthwise causal conv over packed `[T, D]` tokens, prefix taps read from `sconv_cache`.

    Metadata (computed once per forward and reused across layers): `cache_mask` bool `[B, 1, 1]`,
    `safe_idx` int `[B]` (slots, PAD clamped to 0), `cu` int `[B+1]` (starts), `si` int32 `[T]`
    (each token's sequence). Returns a new contiguous `[T, D]` tensor of x's dtype.
    """
    op = "causal_conv1d"
    _check_common(op, x, weight, sconv_cache, activation, use_residual)
    n_tokens = x.shape[0]
    if n_tokens == 0:
        return torch.empty_like(x)
    n_seqs = safe_idx.numel() if isinstance(safe_idx, torch.Tensor) else -1
    _check_meta(
        op,
        x,
        {
            "cache_mask": (cache_mask, n_seqs, "bool"),
            "safe_idx": (safe_idx, n_seqs, "int"),
            "cu": (cu, n_seqs + 1, "int"),
            "si": (si, n_tokens, "int"),
        },
    )
    if not isinstance(is_decode, bool):
        _fail(op, "is_decode", "be a bool", is_decode)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _causal_conv1d_op(
        x,
        weight,
        sconv_cache,
        cache_mask,
        safe_idx,
        cu,
        si,
        activation in ("silu", "swish"),
        use_residual,
        is_decode,
        y,
    )
    return y


@torch.library.custom_op("sglang::inkling_update_sconv_cache", mutates_args=("sconv_cache",))
def _update_sconv_cache_op(
    x: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_indices: torch.Tensor,
    has_initial_state: torch.Tensor,
    query_start_loc: torch.Tensor,
) -> None:
    if not use_triton(x, sconv_cache):
        update_sconv_cache_ref(x, sconv_cache, cache_indices, has_initial_state, query_start_loc)
        return
    n_seqs, dim, width1 = cache_indices.numel(), x.shape[1], sconv_cache.shape[1]
    block_d = _block_d(dim)
    ci, init, qsl = (t.reshape(-1) for t in (cache_indices, has_initial_state, query_start_loc))
    with _on(x.device):
        _update_sconv_cache_kernel[(n_seqs, triton.cdiv(dim, block_d))](
            x,
            sconv_cache,
            ci,
            init,
            qsl,
            ci.stride(0),
            init.stride(0),
            qsl.stride(0),
            x.stride(0),
            x.stride(1),
            *sconv_cache.stride(),
            dim,
            W1=width1,
            BLOCK_W=next_power_of_2(width1),
            BLOCK_D=block_d,
        )


@_update_sconv_cache_op.register_fake
def _(x, sconv_cache, cache_indices, has_initial_state, query_start_loc) -> None:
    return None


def update_sconv_cache(
    x: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_indices: torch.Tensor,
    has_initial_state: torch.Tensor,
    query_start_loc: torch.Tensor,
) -> None:
    """Shift each sequence's conv state to the last W-1 entries of `[old_state ++ x_seq]`, in place.

    `cache_indices` int `[B]` (PAD_SLOT_ID = -1: untouched), `has_initial_state` bool `[B]`,
    `query_start_loc` int `[B+1]`; `sconv_cache` `[max_slots, W-1, D]` of x's dtype. Returns None.
    """
    op = "update_sconv_cache"
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype not in _DTYPES:
        _fail(op, "x", "be a 2-D float32/float16/bfloat16 tensor [tokens, dim]", x)
    if (
        not isinstance(sconv_cache, torch.Tensor)
        or sconv_cache.dim() != 3
        or sconv_cache.shape[2] != x.shape[1]
    ):
        _fail(op, "sconv_cache", f"be a tensor [max_slots, W-1, {x.shape[1]}]", sconv_cache)
    if sconv_cache.dtype != x.dtype or sconv_cache.device != x.device:
        _fail(op, "sconv_cache", f"have x's dtype {x.dtype} and device {x.device}", sconv_cache)
    n_seqs = cache_indices.numel() if isinstance(cache_indices, torch.Tensor) else -1
    _check_meta(
        op,
        x,
        {
            "cache_indices": (cache_indices, n_seqs, "int"),
            "has_initial_state": (has_initial_state, n_seqs, "bool"),
            "query_start_loc": (query_start_loc, n_seqs + 1, "int"),
        },
    )
    if n_seqs == 0 or sconv_cache.shape[1] == 0:
        return None
    _update_sconv_cache_op(x, sconv_cache, cache_indices, has_initial_state, query_start_loc)
    return None


@torch.library.custom_op(
    "sglang::inkling_fused_causal_conv1d_update_decode", mutates_args=("sconv_cache", "y")
)
def _fused_decode_op(
    x: torch.Tensor,
    weight: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_indices: torch.Tensor,
    cache_mask: torch.Tensor,
    silu: bool,
    use_residual: bool,
    track_mask: torch.Tensor | None,
    track_indices: torch.Tensor | None,
    y: torch.Tensor,
) -> None:
    if not use_triton(x, weight, sconv_cache):
        y.copy_(
            fused_causal_conv1d_update_decode_ref(
                x,
                weight,
                sconv_cache,
                cache_indices,
                cache_mask,
                "silu" if silu else None,
                use_residual,
                track_mask,
                track_indices,
            )
        )
        return
    n_tokens, dim = x.shape
    block_d = _block_d(dim)
    do_track = track_mask is not None
    ci, cm = cache_indices.reshape(-1), cache_mask.reshape(-1)
    tm = track_mask.reshape(-1) if do_track else cm  # placeholders are never read
    ti = track_indices.reshape(-1) if do_track else ci
    with _on(x.device):
        _fused_causal_conv1d_update_decode_kernel[
            (triton.cdiv(n_tokens, _DECODE_BLOCK_T), triton.cdiv(dim, block_d))
        ](
            x,
            weight,
            sconv_cache,
            y,
            ci,
            cm,
            tm,
            ti,
            x.stride(0),
            x.stride(1),
            weight.stride(0),
            weight.stride(1),
            *sconv_cache.stride(),
            ci.stride(0),
            cm.stride(0),
            tm.stride(0),
            ti.stride(0),
            n_tokens,
            dim,
            W=weight.shape[1],
            SILU=silu,
            RESIDUAL=use_residual,
            DO_TRACK=do_track,
            BLOCK_T=_DECODE_BLOCK_T,
            BLOCK_D=block_d,
        )


@_fused_decode_op.register_fake
def _(
    x, weight, sconv_cache, cache_indices, cache_mask, silu, use_residual, track_mask, track_indices, y
) -> None:
    return None


def fused_causal_conv1d_update_decode(
    x: torch.Tensor,
    weight: torch.Tensor,
    sconv_cache: torch.Tensor,
    cache_indices: torch.Tensor,
    cache_mask: torch.Tensor,
    activation: str | None = None,
    use_residual: bool = True,
    track_mask: torch.Tensor | None = None,
    track_indices: torch.Tensor | None = None,
) -> torch.Tensor:
    """Decode conv (W-1 cached taps + the current token) fused with the cache shift; returns `[B, D]`.

    `x` `[B, D]` (one token per sequence), `cache_indices` int `[B]` (PAD_SLOT_ID = -1: computed
    but not written), `cache_mask` bool `[B]` (or `[B, 1, 1]`); `track_mask` bool `[B]` and
    `track_indices` int `[B]` together or not at all (slots distinct from the working slots).
    """
    op = "fused_causal_conv1d_update_decode"
    _check_common(op, x, weight, sconv_cache, activation, use_residual)
    n_tokens = x.shape[0]
    meta = {
        "cache_indices": (cache_indices, n_tokens, "int"),
        "cache_mask": (cache_mask, n_tokens, "bool"),
    }
    if (track_mask is None) != (track_indices is None):
        _fail(op, "track_indices", "be given together with track_mask", track_indices)
    if track_mask is not None:
        meta["track_mask"] = (track_mask, n_tokens, "bool")
        meta["track_indices"] = (track_indices, n_tokens, "int")
    _check_meta(op, x, meta)
    y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if n_tokens == 0:
        return y
    _fused_decode_op(
        x,
        weight,
        sconv_cache,
        cache_indices,
        cache_mask,
        activation in ("silu", "swish"),
        use_residual,
        track_mask,
        track_indices,
        y,
    )
    return y


__all__ = [
    "PAD_SLOT_ID",
    "causal_conv1d",
    "causal_conv1d_ref",
    "fused_causal_conv1d_update_decode",
    "fused_causal_conv1d_update_decode_ref",
    "update_sconv_cache",
    "update_sconv_cache_ref",
]
