"""N-gram embedding ids (`compute_n_gram_ids[_decode]`) and their token table (`update_token_table[_decode]`).

Upstream's API (sglang 0.5.17 `kernels/ops/speculative/ngram_embedding.py` and its kernel
`jit/csrc/ngram_embedding.cuh`), used by `srt/layers/n_gram_embedding.py`: the model keeps, per
running request, a row of `ne_token_table` [max_running_reqs, max_context_len] (int32) holding
the request's tokens (an ignored token is stored negated), and embeds each position with
(ne_n - 1) * ne_k hashed n-gram ids, one per (n, k) configuration, n = 2..ne_n, k = 1..ne_k.

`update_token_table(tokens, ne_token_table, row_indices, column_starts, req_lens, ignore_tokens)`
writes the req_lens[b] tokens of request b (packed one request after another in `tokens`) at
`ne_token_table[row_indices[b], column_starts[b] + i]`, negated when in `ignore_tokens`.
`update_token_table_decode` writes one token per request.

`compute_n_gram_ids(...)` gives, for token i of request b (positions exclusive_req_len_sums[b] ..
[b + 1] of the packed batch, at table column column_starts[b] + offset) and configuration
c = n_idx * ne_k + k_idx (n = n_idx + 2):

    id = 0
    for j in 0 .. n - 1:                        walking back from the token itself
        stop at the start of the request's row, at a negative (ignored) token, or at
        eos_token_id when j > 0 (the n-gram does not cross an eos)
        id += (tok_j * ne_weights[n_idx, k_idx, j]) mod ne_mods[n_idx, k_idx]
    n_gram_ids[i, c] = id mod ne_mods[n_idx, k_idx] + exclusive_ne_embedder_size_sums[c]

`compute_n_gram_ids_decode` is the same with one token per request, at column_starts[b].
Everything is in int64 here (upstream: uint64): tokens and weights are non-negative int32, so a
product stays below 2**62 and the sums below 2**36; results fit upstream's int32 output.

The kernels read every count and index on the device (a program per request walks its own
token range, whose bounds it loads), so a launch never waits on the host and can be captured in
a CUDA graph. Outputs are written in place; every function returns None, as upstream.

Differs from upstream: the input tensors may have any strides (upstream: contiguous), and shapes
are checked against ne_n / ne_k on the host (upstream checks ranks only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import next_power_of_2, use_triton

if TYPE_CHECKING:
    pass

# 64 tokens per step of a request's loop: a decode step is one step; an [64, C] id tile with
# C <= 64 configurations is 4096 int64 values, 32 per thread at 4 warps.
_BLOCK_T = 64
# 128 request lengths per step of the prefix sum that finds a request's first token.
_BLOCK_B = 128
# 64 ignored tokens compared per step (sglang ignores a handful of special tokens).
_BLOCK_I = 64
# ne_n is unrolled at compile time (one specialization per value); 16 is far above practice.
_MAX_NE_N = 16
_NUM_WARPS = 4


@triton.jit
def _compute_n_gram_ids_kernel(
    w_ptr,  # int32 [ne_n - 1, ne_k, ne_n]
    mods_ptr,  # int32 [ne_n - 1, ne_k]
    sums_ptr,  # int32 [(ne_n - 1) * ne_k] exclusive sums of the embedders' sizes
    starts_ptr,  # int32 [B + 1] exclusive_req_len_sums (unused when DECODE)
    table_ptr,  # int32 [R, C]
    rows_ptr,  # int64 [B] row_indices
    cols_ptr,  # int32 [B] column_starts
    out_ptr,  # int32 [T, n_configs] (decode: [B, n_configs])
    ne_k,
    n_configs,  # (ne_n - 1) * ne_k
    eos_token_id,
    w_s0,
    w_s1,
    w_s2,
    mods_s0,
    mods_s1,
    sums_stride,
    starts_stride,
    table_s0,
    table_s1,
    rows_stride,
    cols_stride,
    out_s0,
    out_s1,
    NE_N: tl.constexpr,
    DECODE: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_C: tl.constexpr,  # next power of two >= n_configs
):
    b = tl.program_id(0).to(tl.int64)
    if DECODE:
        first = b
        last = b + 1
    else:
        first = tl.load(starts_ptr + b * starts_stride).to(tl.int64)
        last = tl.load(starts_ptr + (b + 1) * starts_stride).to(tl.int64)
    row = tl.load(rows_ptr + b * rows_stride).to(tl.int64)
    col0 = tl.load(cols_ptr + b * cols_stride).to(tl.int64)
    offs_c = tl.arange(0, BLOCK_C).to(tl.int64)
    mask_c = offs_c < n_configs
    n_idx = offs_c // ne_k
    k_idx = offs_c % ne_k
    mod = tl.load(mods_ptr + n_idx * mods_s0 + k_idx * mods_s1, mask=mask_c, other=1).to(tl.int64)
    base = tl.load(sums_ptr + offs_c * sums_stride, mask=mask_c, other=0).to(tl.int64)
    for i0 in range(first, last, BLOCK_T):
        offs_t = i0 + tl.arange(0, BLOCK_T).to(tl.int64)
        mask_t = offs_t < last
        col = col0 + (offs_t - first)  # this token's column in the request's row
        n_gram_id = tl.zeros([BLOCK_T, BLOCK_C], dtype=tl.int64)
        alive = mask_t[:, None] & mask_c[None, :]
        for j in tl.static_range(NE_N):
            alive = alive & (j < n_idx + 2)[None, :] & (col >= j)[:, None]
            tok = tl.load(table_ptr + row * table_s0 + (col - j) * table_s1, mask=mask_t & (col >= j),
                          other=0).to(tl.int64)
            alive = alive & (tok >= 0)[:, None]
            if j > 0:
                alive = alive & (tok != eos_token_id)[:, None]
            w = tl.load(w_ptr + n_idx * w_s0 + k_idx * w_s1 + j * w_s2, mask=mask_c & (j < n_idx + 2),
                        other=0).to(tl.int64)
            term = (tok[:, None] * w[None, :]) % mod[None, :]
            n_gram_id += tl.where(alive, term, 0)
        result = n_gram_id % mod[None, :] + base[None, :]
        tl.store(out_ptr + offs_t[:, None] * out_s0 + offs_c[None, :] * out_s1, result.to(tl.int32),
                 mask=mask_t[:, None] & mask_c[None, :])


@triton.jit
def _update_token_table_kernel(
    tokens_ptr,  # int32 [N] (decode: [B])
    table_ptr,  # int32 [R, C], written
    rows_ptr,  # int64 [B]
    cols_ptr,  # int32 [B]
    lens_ptr,  # int32 [B] req_lens (unused when DECODE)
    ignore_ptr,  # int32 [n_ignore]
    n_ignore,
    tokens_stride,
    table_s0,
    table_s1,
    rows_stride,
    cols_stride,
    lens_stride,
    ignore_stride,
    DECODE: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    b = tl.program_id(0).to(tl.int64)
    if DECODE:
        first = b
        count = b * 0 + 1
    else:
        # This request's first token: the sum of the lengths before it.
        first = b * 0
        for b0 in range(0, b, BLOCK_B):
            offs_b = b0 + tl.arange(0, BLOCK_B).to(tl.int64)
            lens = tl.load(lens_ptr + offs_b * lens_stride, mask=offs_b < b, other=0).to(tl.int64)
            first += tl.sum(lens, axis=0)
        count = tl.load(lens_ptr + b * lens_stride).to(tl.int64)
    row = tl.load(rows_ptr + b * rows_stride).to(tl.int64)
    col0 = tl.load(cols_ptr + b * cols_stride).to(tl.int64)
    for t0 in range(0, count, BLOCK_T):
        offs = t0 + tl.arange(0, BLOCK_T).to(tl.int64)
        mask = offs < count
        tok = tl.load(tokens_ptr + (first + offs) * tokens_stride, mask=mask, other=0)
        ignored = offs < 0  # all False
        for i0 in range(0, n_ignore, BLOCK_I):
            offs_i = i0 + tl.arange(0, BLOCK_I)
            ign = tl.load(ignore_ptr + offs_i * ignore_stride, mask=offs_i < n_ignore, other=0)
            hit = (tok[:, None] == ign[None, :]) & (offs_i < n_ignore)[None, :]
            ignored = ignored | (tl.max(hit.to(tl.int32), axis=1) > 0)
        tl.store(table_ptr + row * table_s0 + (col0 + offs) * table_s1,
                 tl.where(ignored, -tok, tok), mask=mask)


# ----------------------------------------------------------------------------- references


def _n_gram_ids_torch(ne_n, ne_k, ne_weights, ne_mods, sums, table, rows, cols, token_req,
                      token_offset, eos_token_id):
    """int32 [T, configs] ids for tokens at (row_indices[token_req], cols + token_offset)."""
    n_configs = (ne_n - 1) * ne_k
    dev = table.device
    c = torch.arange(n_configs, device=dev)
    n_idx, k_idx = c // ne_k, c % ne_k
    mod = ne_mods.long()[n_idx, k_idx]
    row = rows.long()[token_req]
    col = cols.long()[token_req] + token_offset
    n_gram_id = torch.zeros(row.shape[0], n_configs, dtype=torch.int64, device=dev)
    alive = torch.ones(row.shape[0], n_configs, dtype=torch.bool, device=dev)
    flat = table.long()
    for j in range(ne_n):
        inside = col >= j
        tok = torch.where(inside, flat[row, (col - j).clamp(0, table.shape[1] - 1)], 0)
        alive = alive & (j < n_idx + 2)[None, :] & inside[:, None] & (tok >= 0)[:, None]
        if j > 0:
            alive = alive & (tok != eos_token_id)[:, None]
        w = ne_weights.long()[n_idx, k_idx, min(j, ne_n - 1)]
        n_gram_id += torch.where(alive, (tok[:, None] * w[None, :]) % mod[None, :], 0)
    return (n_gram_id % mod[None, :] + sums.long()[c][None, :]).to(torch.int32)


def compute_n_gram_ids_ref(
    ne_n: int,
    ne_k: int,
    ne_weights: torch.Tensor,
    ne_mods: torch.Tensor,
    exclusive_ne_embedder_size_sums: torch.Tensor,
    tokens: torch.Tensor,
    exclusive_req_len_sums: torch.Tensor,
    ne_token_table: torch.Tensor,
    row_indices: torch.Tensor,
    column_starts: torch.Tensor,
    n_gram_ids: torch.Tensor,
    eos_token_id: int,
) -> None:
    """Pure-torch reference (no host sync): tokens past the last request are left as they are."""
    n_tokens = n_gram_ids.shape[0]
    starts = exclusive_req_len_sums.long()
    i = torch.arange(n_tokens, device=n_gram_ids.device)
    req = (torch.searchsorted(starts[1:], i, right=True)).clamp(max=row_indices.shape[0] - 1)
    ids = _n_gram_ids_torch(ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums,
                            ne_token_table, row_indices, column_starts, req, i - starts[req],
                            eos_token_id)
    inside = (i >= starts[0]) & (i < starts[-1])
    n_gram_ids.copy_(torch.where(inside[:, None], ids, n_gram_ids))


def compute_n_gram_ids_decode_ref(
    ne_n: int,
    ne_k: int,
    ne_weights: torch.Tensor,
    ne_mods: torch.Tensor,
    exclusive_ne_embedder_size_sums: torch.Tensor,
    ne_token_table: torch.Tensor,
    row_indices: torch.Tensor,
    column_starts: torch.Tensor,
    n_gram_ids: torch.Tensor,
    eos_token_id: int,
) -> None:
    """Pure-torch reference: one token per request, at its column start."""
    b = torch.arange(row_indices.shape[0], device=n_gram_ids.device)
    n_gram_ids.copy_(_n_gram_ids_torch(ne_n, ne_k, ne_weights, ne_mods,
                                       exclusive_ne_embedder_size_sums, ne_token_table,
                                       row_indices, column_starts, b, torch.zeros_like(b),
                                       eos_token_id))


def _scatter_tokens(table, rows, cols, req, offset, values, valid):
    """table[rows[req], cols[req] + offset] = values where valid (others go to a spare slot)."""
    n_cols = table.shape[1]
    flat_pos = rows.long()[req] * n_cols + cols.long()[req] + offset
    spare = table.numel()
    buf = torch.cat([table.reshape(-1), table.new_zeros(1)])
    buf[torch.where(valid, flat_pos, spare)] = values
    table.copy_(buf[:-1].view(table.shape))


def update_token_table_ref(
    tokens: torch.Tensor,
    ne_token_table: torch.Tensor,
    row_indices: torch.Tensor,
    column_starts: torch.Tensor,
    req_lens: torch.Tensor,
    ignore_tokens: torch.Tensor | None = None,
) -> None:
    """Pure-torch reference (no host sync)."""
    ends = req_lens.long().cumsum(0)
    i = torch.arange(tokens.shape[0], device=tokens.device)
    req = torch.searchsorted(ends, i, right=True).clamp(max=req_lens.shape[0] - 1)
    offset = i - (ends[req] - req_lens.long()[req])
    values = tokens
    if ignore_tokens is not None and ignore_tokens.numel():
        values = torch.where(torch.isin(tokens, ignore_tokens), -tokens, tokens)
    valid = i < ends[-1] if req_lens.numel() else i < 0
    _scatter_tokens(ne_token_table, row_indices, column_starts, req, offset, values, valid)


def update_token_table_decode_ref(
    tokens: torch.Tensor,
    ne_token_table: torch.Tensor,
    row_indices: torch.Tensor,
    column_starts: torch.Tensor,
) -> None:
    """Pure-torch reference: table[row_indices[b], column_starts[b]] = tokens[b]."""
    b = torch.arange(tokens.shape[0], device=tokens.device)
    _scatter_tokens(ne_token_table, row_indices, column_starts, b, torch.zeros_like(b), tokens,
                    torch.ones_like(b, dtype=torch.bool))


# ----------------------------------------------------------------------------- host checks


def _check(op: str, name: str, t, dim: int, dtype: torch.dtype, device, shape=None):
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")  # noqa: TRY004
    if t.dim() != dim or t.dtype != dtype:
        raise ValueError(f"{op}: {name} must be a {dim}-D {dtype} tensor, got "
                         f"{tuple(t.shape)} {t.dtype}")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError(f"{op}: {name} must have shape {tuple(shape)}, got {tuple(t.shape)}")
    if device is not None and t.device != device:
        raise ValueError(f"{op}: {name} must be on {device} like ne_token_table, got {t.device}")


def _check_config(op, ne_n, ne_k, ne_weights, ne_mods, sums, table):
    for name, v in (("ne_n", ne_n), ("ne_k", ne_k)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{op}: {name} must be an int, got {v!r}")
    if not 2 <= ne_n <= _MAX_NE_N or ne_k < 1:
        raise ValueError(f"{op}: need 2 <= ne_n <= {_MAX_NE_N} and ne_k >= 1, got ne_n={ne_n}, ne_k={ne_k}")
    _check(op, "ne_token_table", table, 2, torch.int32, None)
    dev = table.device
    _check(op, "ne_weights", ne_weights, 3, torch.int32, dev, (ne_n - 1, ne_k, ne_n))
    _check(op, "ne_mods", ne_mods, 2, torch.int32, dev, (ne_n - 1, ne_k))
    if sums.dim() != 1 or sums.shape[0] < (ne_n - 1) * ne_k:
        raise ValueError(f"{op}: exclusive_ne_embedder_size_sums must be 1-D with at least "
                         f"{(ne_n - 1) * ne_k} entries, got {tuple(sums.shape)}")
    _check(op, "exclusive_ne_embedder_size_sums", sums, 1, torch.int32, dev)


def _check_requests(op, table, row_indices, column_starts):
    dev = table.device
    _check(op, "row_indices", row_indices, 1, torch.int64, dev)
    _check(op, "column_starts", column_starts, 1, torch.int32, dev, row_indices.shape)


# ----------------------------------------------------------------------------- custom ops


def _launch_ids(decode, ne_n, ne_k, w, mods, sums, starts, table, rows, cols, out, eos):
    n_configs = (ne_n - 1) * ne_k
    batch = rows.shape[0]
    if batch == 0 or out.numel() == 0:
        return
    _compute_n_gram_ids_kernel[(batch,)](
        w, mods, sums, starts, table, rows, cols, out,
        ne_k, n_configs, eos,
        *w.stride(), *mods.stride(), sums.stride(0), starts.stride(0), *table.stride(),
        rows.stride(0), cols.stride(0), *out.stride(),
        NE_N=ne_n, DECODE=decode, BLOCK_T=_BLOCK_T, BLOCK_C=next_power_of_2(n_configs),
        num_warps=_NUM_WARPS,
    )


@torch.library.custom_op("sglang::compute_n_gram_ids", mutates_args=("n_gram_ids",))
def _compute_n_gram_ids_op(
    ne_n: int, ne_k: int, ne_weights: torch.Tensor, ne_mods: torch.Tensor,
    exclusive_ne_embedder_size_sums: torch.Tensor, tokens: torch.Tensor,
    exclusive_req_len_sums: torch.Tensor, ne_token_table: torch.Tensor,
    row_indices: torch.Tensor, column_starts: torch.Tensor, n_gram_ids: torch.Tensor,
    eos_token_id: int,
) -> None:
    args = (ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums, tokens,
            exclusive_req_len_sums, ne_token_table, row_indices, column_starts, n_gram_ids,
            eos_token_id)
    if not use_triton(ne_weights, ne_mods, exclusive_req_len_sums, ne_token_table, n_gram_ids):
        compute_n_gram_ids_ref(*args)
        return
    _launch_ids(False, ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums,
                exclusive_req_len_sums, ne_token_table, row_indices, column_starts, n_gram_ids,
                eos_token_id)


@_compute_n_gram_ids_op.register_fake
def _(ne_n, ne_k, ne_weights, ne_mods, sums, tokens, starts, table, rows, cols, out, eos) -> None:
    return None


@torch.library.custom_op("sglang::compute_n_gram_ids_decode", mutates_args=("n_gram_ids",))
def _compute_n_gram_ids_decode_op(
    ne_n: int, ne_k: int, ne_weights: torch.Tensor, ne_mods: torch.Tensor,
    exclusive_ne_embedder_size_sums: torch.Tensor, ne_token_table: torch.Tensor,
    row_indices: torch.Tensor, column_starts: torch.Tensor, n_gram_ids: torch.Tensor,
    eos_token_id: int,
) -> None:
    if not use_triton(ne_weights, ne_mods, ne_token_table, n_gram_ids):
        compute_n_gram_ids_decode_ref(ne_n, ne_k, ne_weights, ne_mods,
                                      exclusive_ne_embedder_size_sums, ne_token_table,
                                      row_indices, column_starts, n_gram_ids, eos_token_id)
        return
    _launch_ids(True, ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums,
                column_starts, ne_token_table, row_indices, column_starts, n_gram_ids,
                eos_token_id)


@_compute_n_gram_ids_decode_op.register_fake
def _(ne_n, ne_k, ne_weights, ne_mods, sums, table, rows, cols, out, eos) -> None:
    return None


def _launch_table(decode, tokens, table, rows, cols, lens, ignore):
    batch = rows.shape[0]
    if batch == 0:
        return
    _update_token_table_kernel[(batch,)](
        tokens, table, rows, cols, lens, ignore, ignore.numel(),
        tokens.stride(0), *table.stride(), rows.stride(0), cols.stride(0), lens.stride(0),
        ignore.stride(0) if ignore.numel() else 1,
        DECODE=decode, BLOCK_T=_BLOCK_T, BLOCK_B=_BLOCK_B, BLOCK_I=_BLOCK_I,
        num_warps=_NUM_WARPS,
    )


@torch.library.custom_op("sglang::update_token_table", mutates_args=("ne_token_table",))
def _update_token_table_op(
    tokens: torch.Tensor, ne_token_table: torch.Tensor, row_indices: torch.Tensor,
    column_starts: torch.Tensor, req_lens: torch.Tensor, ignore_tokens: torch.Tensor,
) -> None:
    if not use_triton(tokens, ne_token_table, row_indices, column_starts, req_lens):
        update_token_table_ref(tokens, ne_token_table, row_indices, column_starts, req_lens,
                               ignore_tokens)
        return
    _launch_table(False, tokens, ne_token_table, row_indices, column_starts, req_lens,
                  ignore_tokens)


@_update_token_table_op.register_fake
def _(tokens, table, rows, cols, lens, ignore) -> None:
    return None


@torch.library.custom_op("sglang::update_token_table_decode", mutates_args=("ne_token_table",))
def _update_token_table_decode_op(
    tokens: torch.Tensor, ne_token_table: torch.Tensor, row_indices: torch.Tensor,
    column_starts: torch.Tensor,
) -> None:
    if not use_triton(tokens, ne_token_table, row_indices, column_starts):
        update_token_table_decode_ref(tokens, ne_token_table, row_indices, column_starts)
        return
    _launch_table(True, tokens, ne_token_table, row_indices, column_starts, column_starts,
                  tokens[:0])


@_update_token_table_decode_op.register_fake
def _(tokens, table, rows, cols) -> None:
    return None


# ----------------------------------------------------------------------------- public API


def compute_n_gram_ids(
    ne_n: int,
    ne_k: int,
    ne_weights: torch.Tensor,
    ne_mods: torch.Tensor,
    exclusive_ne_embedder_size_sums: torch.Tensor,
    tokens: torch.Tensor,
    exclusive_req_len_sums: torch.Tensor,
    ne_token_table: torch.Tensor,
    row_indices: torch.Tensor,
    column_starts: torch.Tensor,
    n_gram_ids: torch.Tensor,
    eos_token_id: int,
) -> None:
    """Write the n-gram ids of every packed token into n_gram_ids [T, (ne_n - 1) * ne_k]."""
    op = "compute_n_gram_ids"
    _check_config(op, ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums, ne_token_table)
    _check_requests(op, ne_token_table, row_indices, column_starts)
    dev = ne_token_table.device
    _check(op, "tokens", tokens, 1, torch.int32, dev)
    _check(op, "exclusive_req_len_sums", exclusive_req_len_sums, 1, torch.int32, dev,
           (row_indices.shape[0] + 1,))
    _check(op, "n_gram_ids", n_gram_ids, 2, torch.int32, dev,
           (tokens.shape[0], (ne_n - 1) * ne_k))
    _compute_n_gram_ids_op(ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums,
                           tokens, exclusive_req_len_sums, ne_token_table, row_indices,
                           column_starts, n_gram_ids, int(eos_token_id))


def compute_n_gram_ids_decode(
    ne_n: int,
    ne_k: int,
    ne_weights: torch.Tensor,
    ne_mods: torch.Tensor,
    exclusive_ne_embedder_size_sums: torch.Tensor,
    ne_token_table: torch.Tensor,
    row_indices: torch.Tensor,
    column_starts: torch.Tensor,
    n_gram_ids: torch.Tensor,
    eos_token_id: int,
) -> None:
    """Write the n-gram ids of each request's one decode token into n_gram_ids [B, configs]."""
    op = "compute_n_gram_ids_decode"
    _check_config(op, ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums, ne_token_table)
    _check_requests(op, ne_token_table, row_indices, column_starts)
    _check(op, "n_gram_ids", n_gram_ids, 2, torch.int32, ne_token_table.device,
           (row_indices.shape[0], (ne_n - 1) * ne_k))
    _compute_n_gram_ids_decode_op(ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums,
                                  ne_token_table, row_indices, column_starts, n_gram_ids,
                                  int(eos_token_id))


def update_token_table(
    tokens: torch.Tensor,
    ne_token_table: torch.Tensor,
    row_indices: torch.Tensor,
    column_starts: torch.Tensor,
    req_lens: torch.Tensor,
    ignore_tokens: torch.Tensor | None = None,
) -> None:
    """Write each request's tokens into its table row (ignored tokens negated)."""
    op = "update_token_table"
    _check(op, "ne_token_table", ne_token_table, 2, torch.int32, None)
    _check_requests(op, ne_token_table, row_indices, column_starts)
    dev = ne_token_table.device
    _check(op, "tokens", tokens, 1, torch.int32, dev)
    _check(op, "req_lens", req_lens, 1, torch.int32, dev, row_indices.shape)
    if ignore_tokens is None:
        ignore_tokens = tokens.new_empty(0)
    _check(op, "ignore_tokens", ignore_tokens, 1, torch.int32, dev)
    _update_token_table_op(tokens, ne_token_table, row_indices, column_starts, req_lens,
                           ignore_tokens)


def update_token_table_decode(
    tokens: torch.Tensor,
    ne_token_table: torch.Tensor,
    row_indices: torch.Tensor,
    column_starts: torch.Tensor,
) -> None:
    """Write one decoded token per request: table[row_indices[b], column_starts[b]] = tokens[b]."""
    op = "update_token_table_decode"
    _check(op, "ne_token_table", ne_token_table, 2, torch.int32, None)
    _check_requests(op, ne_token_table, row_indices, column_starts)
    _check(op, "tokens", tokens, 1, torch.int32, ne_token_table.device, row_indices.shape)
    _update_token_table_decode_op(tokens, ne_token_table, row_indices, column_starts)


__all__ = [
    "compute_n_gram_ids",
    "compute_n_gram_ids_decode",
    "compute_n_gram_ids_decode_ref",
    "compute_n_gram_ids_ref",
    "update_token_table",
    "update_token_table_decode",
    "update_token_table_decode_ref",
    "update_token_table_ref",
]
