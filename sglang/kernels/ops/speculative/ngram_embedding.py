"""`ngram_embedding`: look up an embedding row for the n-gram of token ids ending at each position.

N-gram embeddings (as speculative draft heads and n-gram-augmented embeddings use them) give each
position t the row of a hashed table picked by its last n tokens, ids[t-n+1 .. t]. Positions
before the start of t's sequence read `pad_id`. With `query_start_loc` [B+1] (cumulative sequence
starts, as the attention backends keep them), the flat ids [T] hold B sequences and no n-gram
crosses a sequence boundary. The hash is a polynomial rolling hash, oldest token first:

    R = num_rows (embedding_weight.shape[0]),  b = base
    h = 0
    for j in 0 .. n-1:   h = (h * b + (tok_j mod R)) mod R      tok_j = id at t-n+1+j, or pad_id
    out[t, :] = embedding_weight[h, :]

All in int64, with no overflow: h < R <= 2**31 and b < 2**31, so h * b + (tok mod R) <
2**62 + 2**31 < 2**63. Ids and pad_id must be non-negative (so `mod` is the same in Python,
torch and Triton). The kernel fuses the n loads, the hash and the row gather in one pass, where
torch materializes n shifted copies of the ids and the hash before gathering.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import cdiv, next_power_of_2, use_triton

# The hash multiplier: a prime below 2**31 (the no-overflow bound above), large enough that
# consecutive tokens spread over the table.
NGRAM_HASH_BASE = 1_000_003
# The no-overflow bound of the hash: R and the base stay below 2**31 (see the docstring).
_MAX_HASH_OPERAND = 2**31
# n is unrolled at compile time (one specialization per n); 16 is far above practical n-grams.
_MAX_N = 16
# Token ids: int32 or int64.
_ID_DTYPES = (torch.int32, torch.int64)
# 16 positions per program: a decode batch is a program or two, and the [16, 128] row tile is
# 2048 elements, 16 per thread at 4 warps.
_BLOCK_T = 16
# Up to 128 embedding columns per step of the gather loop (a power of two for tl.arange).
_MAX_BLOCK_D = 128
# 64 sequence starts per step of the loop that finds each position's sequence start.
_BLOCK_B = 64
# 4 warps: the [16, 128] tile is 16 elements per thread.
_NUM_WARPS = 4


@triton.jit
def _ngram_embedding_kernel(
    ids_ptr,  # int32/int64 [T]
    qsl_ptr,  # int32/int64 [B+1] cumulative sequence starts (unused when HAS_QSL is False)
    weight_ptr,  # any dtype [num_rows, D]
    out_ptr,  # weight's dtype [T, D], contiguous
    n_tokens,  # T
    n_starts,  # B + 1
    n_cols,  # D
    num_rows,  # R
    base,  # hash multiplier, < 2**31
    pad_id,  # id read before a sequence's start, >= 0
    ids_stride,
    weight_row_stride,
    weight_col_stride,
    out_row_stride,
    N: tl.constexpr,  # n-gram length
    HAS_QSL: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_B: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    offs_t = (pid * BLOCK_T + tl.arange(0, BLOCK_T)).to(tl.int64)
    mask_t = offs_t < n_tokens
    # Each position's sequence start: the largest query_start_loc entry <= t.
    start = tl.zeros([BLOCK_T], dtype=tl.int64)
    if HAS_QSL:
        for b0 in range(0, n_starts, BLOCK_B):
            offs_b = b0 + tl.arange(0, BLOCK_B)
            mask_b = offs_b < n_starts
            s = tl.load(qsl_ptr + offs_b, mask=mask_b, other=0).to(tl.int64)
            hit = mask_b[None, :] & (s[None, :] <= offs_t[:, None])
            start = tl.maximum(start, tl.max(tl.where(hit, s[None, :], 0), axis=1))
    # The rolling hash; h is int64, so every product and sum below is int64 (scalars promote).
    h = tl.zeros([BLOCK_T], dtype=tl.int64)
    for j in tl.static_range(N):
        pos = offs_t - (N - 1 - j)
        inside = mask_t & (pos >= start)
        tok = tl.load(ids_ptr + pos * ids_stride, mask=inside, other=0).to(tl.int64)
        tok = tl.where(inside, tok, pad_id)
        h = (h * base + tok % num_rows) % num_rows
    for d0 in range(0, n_cols, BLOCK_D):
        offs_d = (d0 + tl.arange(0, BLOCK_D)).to(tl.int64)
        mask = mask_t[:, None] & (offs_d[None, :] < n_cols)
        # A pure copy (no arithmetic), so the row keeps its dtype and bits.
        row = tl.load(
            weight_ptr + h[:, None] * weight_row_stride + offs_d[None, :] * weight_col_stride,
            mask=mask,
        )
        tl.store(out_ptr + offs_t[:, None] * out_row_stride + offs_d[None, :], row, mask=mask)


def _sequence_starts_ref(
    n_tokens: int, query_start_loc: torch.Tensor | None, device
) -> torch.Tensor:
    """int64 [T]: the start of the sequence each position belongs to."""
    t = torch.arange(n_tokens, device=device)
    if query_start_loc is None:
        return torch.zeros_like(t)
    qsl = query_start_loc.long()
    return qsl[torch.searchsorted(qsl, t, right=True) - 1]


def ngram_embedding_ref(
    input_ids: torch.Tensor,
    embedding_weight: torch.Tensor,
    n: int,
    *,
    query_start_loc: torch.Tensor | None = None,
    pad_id: int = 0,
    base: int = NGRAM_HASH_BASE,
) -> torch.Tensor:
    """Pure-torch reference: the same hash in int64 torch ops, then a row gather."""
    num_rows = embedding_weight.shape[0]
    n_tokens = input_ids.shape[0]
    ids = input_ids.long()
    t = torch.arange(n_tokens, device=input_ids.device)
    start = _sequence_starts_ref(n_tokens, query_start_loc, input_ids.device)
    h = torch.zeros(n_tokens, dtype=torch.int64, device=input_ids.device)
    for j in range(n):
        pos = t - (n - 1 - j)
        tok = torch.where(pos >= start, ids[pos.clamp(min=0)], pad_id)
        h = (h * base + tok % num_rows) % num_rows
    return embedding_weight[h]


def ngram_embedding(
    input_ids: torch.Tensor,
    embedding_weight: torch.Tensor,
    n: int,
    *,
    query_start_loc: torch.Tensor | None = None,
    pad_id: int = 0,
    base: int = NGRAM_HASH_BASE,
) -> torch.Tensor:
    """Rows of embedding_weight [R, D] picked by the hashed n-gram ending at each of input_ids [T].

    query_start_loc [B+1] (optional): cumulative sequence starts, 0 first and T last; without it
    the ids are one sequence. Returns [T, D] in embedding_weight's dtype.
    """
    op = "ngram_embedding"
    if input_ids.dim() != 1:
        raise ValueError(f"{op}: input_ids must be 1-D [T], got {tuple(input_ids.shape)}")
    if input_ids.dtype not in _ID_DTYPES:
        raise ValueError(f"{op}: input_ids must be int32 or int64, got {input_ids.dtype}")
    if embedding_weight.dim() != 2:
        raise ValueError(
            f"{op}: embedding_weight must be 2-D [num_rows, D], got {tuple(embedding_weight.shape)}"
        )
    num_rows, n_cols = embedding_weight.shape
    if not 1 <= num_rows <= _MAX_HASH_OPERAND:
        raise ValueError(
            f"{op}: embedding_weight must have 1 to 2**31 rows (the hash's no-overflow bound), "
            f"got {tuple(embedding_weight.shape)}"
        )
    if embedding_weight.device != input_ids.device:
        raise ValueError(
            f"{op}: embedding_weight must be on input_ids' device {input_ids.device}, "
            f"got {embedding_weight.device}"
        )
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= _MAX_N:
        raise ValueError(f"{op}: n must be an int in [1, {_MAX_N}], got {n!r}")
    if isinstance(pad_id, bool) or not isinstance(pad_id, int) or pad_id < 0:
        raise ValueError(f"{op}: pad_id must be a non-negative int, got {pad_id!r}")
    if isinstance(base, bool) or not isinstance(base, int) or not 1 <= base < _MAX_HASH_OPERAND:
        raise ValueError(f"{op}: base must be an int in [1, 2**31), got {base!r}")
    n_tokens = input_ids.shape[0]
    if query_start_loc is not None:
        if query_start_loc.dim() != 1 or query_start_loc.shape[0] < 1:
            raise ValueError(
                f"{op}: query_start_loc must be 1-D [B+1], got {tuple(query_start_loc.shape)}"
            )
        if query_start_loc.dtype not in _ID_DTYPES:
            raise ValueError(
                f"{op}: query_start_loc must be int32 or int64, got {query_start_loc.dtype}"
            )
        if query_start_loc.device != input_ids.device:
            raise ValueError(
                f"{op}: query_start_loc must be on input_ids' device {input_ids.device}, "
                f"got {query_start_loc.device}"
            )
        # Value checks (a device sync): 0 first, T last, non-decreasing.
        first, last = int(query_start_loc[0]), int(query_start_loc[-1])
        if first != 0 or last != n_tokens or bool((query_start_loc.diff() < 0).any()):
            raise ValueError(
                f"{op}: query_start_loc must be non-decreasing from 0 to T={n_tokens}, "
                f"got {query_start_loc.tolist() if query_start_loc.numel() <= 16 else 'values'} "
                f"of shape {tuple(query_start_loc.shape)}"
            )
    if n_tokens > 0 and int(input_ids.min()) < 0:
        raise ValueError(f"{op}: input_ids must be non-negative, got min {int(input_ids.min())}")
    out = torch.empty((n_tokens, n_cols), dtype=embedding_weight.dtype, device=input_ids.device)
    if n_tokens == 0 or n_cols == 0:
        return out
    tensors = (input_ids, embedding_weight)
    if query_start_loc is not None:
        tensors += (query_start_loc,)
    if not use_triton(*tensors):
        return ngram_embedding_ref(
            input_ids,
            embedding_weight,
            n,
            query_start_loc=query_start_loc,
            pad_id=pad_id,
            base=base,
        )
    qsl = query_start_loc.contiguous() if query_start_loc is not None else input_ids
    _ngram_embedding_kernel[(cdiv(n_tokens, _BLOCK_T),)](
        input_ids,
        qsl,  # a valid pointer the kernel never reads when HAS_QSL is False
        embedding_weight,
        out,
        n_tokens,
        qsl.numel(),
        n_cols,
        num_rows,
        base,
        pad_id,
        input_ids.stride(0),
        embedding_weight.stride(0),
        embedding_weight.stride(1),
        out.stride(0),
        N=n,
        HAS_QSL=query_start_loc is not None,
        BLOCK_T=_BLOCK_T,
        BLOCK_B=_BLOCK_B,
        BLOCK_D=min(next_power_of_2(n_cols), _MAX_BLOCK_D),
        num_warps=_NUM_WARPS,
    )
    return out


__all__ = ["NGRAM_HASH_BASE", "ngram_embedding", "ngram_embedding_ref"]
