"""Short causal depthwise convolution (the "sconv" of Inkling / Mamba-style blocks) over packed
variable-length sequences, with a per-request convolution-state cache.

For channel d, token t of sequence b (tokens `bos_b <= t < eos_b` of x `[T, dim]`), width W:

    y[t, d] = act(bias[d] + sum_{k<W} weight[d, k] * h_b[t - (W-1) + k, d])  (+ x[t, d] if residual)

where `h_b[s] = x[s]` for `s >= bos_b`, and the W-1 positions before `bos_b` come from the
sequence's cached state `conv_state[cache_indices[b], d, :]` (oldest first) when
`has_initial_state[b]`, zeros otherwise. Afterwards the state holds the last W-1 inputs of the
sequence (state and inputs concatenated, so a sequence shorter than W-1 keeps part of its old
state). Decode is the same with one token per sequence (x `[batch, dim]`, state always read
unless `has_initial_state[b]` is False), so prefill then decode equals one longer prefill.

Why a kernel: the conv runs in every such layer on every step over tiny widths (W = 4), so it is
memory bound: torch would pad each sequence with its state, run `conv1d` per sequence and
write the states back with separate gathers. The kernel reads every tap straight from x or the
cache, accumulates in fp32 and fuses bias, SiLU and the residual; a second small launch writes
the new states after the first has read the old ones.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from sglang.kernels.jit import next_power_of_2, use_triton

# Activations the kernel fuses.
_ACTIVATIONS = (None, "silu")

# Input dtypes (x, conv_state); weights and bias may be any of them too.
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# The taps are unrolled at compile time; 16 covers every short conv in use (W = 2..4) with room,
# and bounds the unrolled body.
_MAX_WIDTH = 16

# 16 tokens per program: each tile re-reads W-1 halo rows, (W-1)/16 = 19% extra traffic at W=4.
_BLOCK_T = 16
# Up to 128 channels per program: channels are the contiguous axis, 128 bf16 = 256 bytes, two
# full 128-byte lines per token row; narrower layers use their own power of two.
_MAX_BLOCK_D = 128


@triton.jit
def _causal_conv1d_kernel(
    x_ptr,  # [T, D] packed input tokens
    w_ptr,  # [D, W] depthwise weights
    bias_ptr,  # [D] bias (unused unless HAS_BIAS)
    state_ptr,  # [C, D, W-1] conv-state cache, oldest input first (unused unless HAS_STATE)
    out_ptr,  # [T, D] output, contiguous
    seq_idx_ptr,  # int32 [T] sequence of each token
    qsl_ptr,  # int64 [B+1] sequence start offsets
    line_ptr,  # int64 [B] cache line of each sequence
    init_ptr,  # int8 [B] 1 when the sequence starts from its cached state
    x_row_stride,
    x_col_stride,
    w_row_stride,
    w_col_stride,
    state_line_stride,
    state_dim_stride,
    state_w_stride,
    n_tokens,  # T
    n_cols,  # D
    W: tl.constexpr,  # kernel width
    HAS_BIAS: tl.constexpr,
    HAS_STATE: tl.constexpr,
    SILU: tl.constexpr,
    RESIDUAL: tl.constexpr,
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

    seq = tl.load(seq_idx_ptr + t_offs, mask=t_mask, other=0)
    bos = tl.load(qsl_ptr + seq, mask=t_mask, other=0)
    if HAS_STATE:
        line = tl.load(line_ptr + seq, mask=t_mask, other=0)
        init = tl.load(init_ptr + seq, mask=t_mask, other=0) != 0

    acc = tl.zeros([BLOCK_T, BLOCK_D], dtype=tl.float32)
    for k in tl.static_range(W):
        src = t_offs.to(tl.int64) - (W - 1) + k  # input position of tap k
        in_x = src >= bos
        tap = tl.load(
            x_ptr + src[:, None] * x_row_stride + d_offs[None, :] * x_col_stride,
            mask=td_mask & in_x[:, None],
            other=0.0,
        ).to(tl.float32)
        if HAS_STATE and k < W - 1:  # only the first W-1 taps can reach before bos
            pos = src - bos + (W - 1)  # position in the cached state, in [0, W-1) there
            from_state = (~in_x) & init
            tap += tl.load(
                state_ptr
                + line[:, None] * state_line_stride
                + d_offs[None, :] * state_dim_stride
                + pos[:, None] * state_w_stride,
                mask=td_mask & from_state[:, None],
                other=0.0,
            ).to(tl.float32)
        w = tl.load(
            w_ptr + d_offs * w_row_stride + k * w_col_stride, mask=d_mask, other=0.0
        )
        acc += tap * w.to(tl.float32)[None, :]

    if HAS_BIAS:
        acc += tl.load(bias_ptr + d_offs, mask=d_mask, other=0.0).to(tl.float32)[
            None, :
        ]
    if SILU:
        acc = acc * tl.sigmoid(acc)
    if RESIDUAL:
        x_cur = tl.load(
            x_ptr
            + t_offs[:, None].to(tl.int64) * x_row_stride
            + d_offs[None, :] * x_col_stride,
            mask=td_mask,
            other=0.0,
        )
        acc += x_cur.to(tl.float32)
    out_offs = t_offs[:, None].to(tl.int64) * n_cols + d_offs[None, :]
    tl.store(out_ptr + out_offs, acc.to(out_ptr.dtype.element_ty), mask=td_mask)


@triton.jit
def _conv_state_update_kernel(
    x_ptr,  # [T, D] packed input tokens
    state_ptr,  # [C, D, W-1] conv-state cache, updated in place
    qsl_ptr,  # int64 [B+1] sequence start offsets
    line_ptr,  # int64 [B] cache line of each sequence (no duplicates)
    init_ptr,  # int8 [B] 1 when the old state is part of the sequence's history
    x_row_stride,
    x_col_stride,
    state_line_stride,
    state_dim_stride,
    state_w_stride,
    n_cols,  # D
    W: tl.constexpr,  # kernel width
    BLOCK_W: tl.constexpr,  # next power of two >= W-1
    BLOCK_D: tl.constexpr,  # channels per program, a power of two
):
    pid = tl.program_id(0)  # sequence
    pid_d = tl.program_id(1)  # channel tile
    d_offs = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    j = tl.arange(0, BLOCK_W)  # slot of the new state
    d_mask = d_offs < n_cols
    dj_mask = d_mask[:, None] & (j < W - 1)[None, :]

    bos = tl.load(qsl_ptr + pid)
    seqlen = tl.load(qsl_ptr + pid + 1) - bos
    line = tl.load(line_ptr + pid)
    init = (
        tl.load(init_ptr + pid + tl.zeros_like(j)) != 0
    )  # [BLOCK_W], a tensor mask for load

    p = (
        seqlen - (W - 1) + j
    )  # sequence position that lands in slot j; < 0 reaches the old state
    from_x = p >= 0
    new = tl.load(
        x_ptr + (bos + p)[None, :] * x_row_stride + d_offs[:, None] * x_col_stride,
        mask=dj_mask & from_x[None, :],
        other=0.0,
    ).to(tl.float32)
    state_row = (
        state_ptr + line * state_line_stride + d_offs[:, None] * state_dim_stride
    )
    old = tl.load(
        state_row + (j + seqlen)[None, :] * state_w_stride,
        mask=dj_mask & ((~from_x) & init)[None, :],
        other=0.0,
    ).to(tl.float32)
    # Every read above precedes this store, and this program alone owns (line, d_offs).
    tl.store(
        state_row + j[None, :] * state_w_stride,
        tl.where(from_x[None, :], new, old).to(state_ptr.dtype.element_ty),
        mask=dj_mask,
    )


def _metadata(x, conv_state, query_start_loc, cache_indices, has_initial_state, decode):
    """(query_start_loc int64 [B+1], cache lines int64 [B] or None, has_initial_state bool [B])."""
    n_tokens, device = x.shape[0], x.device
    if decode:
        qsl = torch.arange(n_tokens + 1, dtype=torch.int64, device=device)
    elif query_start_loc is None:
        qsl = torch.tensor([0, n_tokens], dtype=torch.int64, device=device)
    else:
        qsl = query_start_loc.to(torch.int64)
    n_seqs = qsl.numel() - 1
    lines = None
    if conv_state is not None:
        lines = (
            torch.arange(n_seqs, dtype=torch.int64, device=device)
            if cache_indices is None
            else cache_indices.to(torch.int64)
        )
    if has_initial_state is None:
        init = torch.full(
            (n_seqs,), bool(decode and conv_state is not None), device=device
        )
    else:
        init = has_initial_state.to(torch.bool)
    return qsl, lines, init


def causal_conv1d_ref(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    conv_state: torch.Tensor | None = None,
    query_start_loc: torch.Tensor | None = None,
    cache_indices: torch.Tensor | None = None,
    has_initial_state: torch.Tensor | None = None,
    activation: str | None = None,
    residual: bool = False,
    decode: bool = False,
) -> torch.Tensor:
    """Pure-torch reference, one sequence at a time in fp32; updates `conv_state` in place."""
    if x.shape[0] == 0:
        return torch.empty_like(x)
    qsl, lines, init = _metadata(
        x, conv_state, query_start_loc, cache_indices, has_initial_state, decode
    )
    dim, width = x.shape[1], weight.shape[1]
    xf, wf = x.float(), weight.float()
    out = torch.empty_like(xf)
    bounds, starts_from_state = qsl.tolist(), init.tolist()
    new_states = []
    for b in range(len(bounds) - 1):
        bos, eos = bounds[b], bounds[b + 1]
        history = torch.zeros(dim, width - 1, dtype=torch.float32, device=x.device)
        if conv_state is not None and starts_from_state[b]:
            history = conv_state[lines[b]].float()
        padded = torch.cat([history, xf[bos:eos].t()], dim=1)  # [D, W-1+L]
        if eos > bos:
            windows = padded.unfold(
                1, width, 1
            )  # [D, L, W]: window l ends at token bos+l
            y = (windows * wf[:, None, :]).sum(-1)  # [D, L]
            if bias is not None:
                y = y + bias.float()[:, None]
            out[bos:eos] = y.t()
        if conv_state is not None:
            new_states.append((lines[b], padded[:, padded.shape[1] - (width - 1) :]))
    if activation == "silu":
        out = F.silu(out)
    if residual:
        out = out + xf
    for line, state in new_states:  # after every read, as the kernel does
        conv_state[line] = state.to(conv_state.dtype)
    return out.to(x.dtype)


def _fail(arg: str, must: str, t) -> None:
    got = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) else repr(t)
    raise ValueError(f"causal_conv1d: {arg} must {must}, got {got}")


def _validate(
    x,
    weight,
    bias,
    conv_state,
    query_start_loc,
    cache_indices,
    has_initial_state,
    activation,
    residual,
    decode,
) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.dtype not in _DTYPES:
        _fail("x", "be a 2-D float32/float16/bfloat16 tensor [tokens, dim]", x)
    if x.stride(1) != 1 and x.shape[1] > 1:
        _fail("x", "be contiguous along dim (stride 1)", x)
    n_tokens, dim = x.shape
    if (
        not isinstance(weight, torch.Tensor)
        or weight.dim() != 2
        or weight.shape[0] != dim
        or weight.dtype not in _DTYPES
    ):
        _fail("weight", f"be a float tensor [{dim}, width]", weight)
    width = weight.shape[1]
    if not 2 <= width <= _MAX_WIDTH:
        _fail("weight", f"have a width in [2, {_MAX_WIDTH}]", weight)
    if bias is not None and (
        not isinstance(bias, torch.Tensor)
        or tuple(bias.shape) != (dim,)
        or bias.dtype not in _DTYPES
    ):
        _fail("bias", f"be None or a float tensor [{dim}]", bias)
    if activation not in _ACTIVATIONS:
        _fail("activation", "be None or 'silu'", activation)
    if not isinstance(residual, bool):
        _fail("residual", "be a bool", residual)
    if not isinstance(decode, bool):
        _fail("decode", "be a bool", decode)

    if conv_state is not None:
        if (
            not isinstance(conv_state, torch.Tensor)
            or conv_state.dim() != 3
            or tuple(conv_state.shape[1:]) != (dim, width - 1)
        ):
            _fail(
                "conv_state",
                f"be a tensor [num_cache_lines, {dim}, {width - 1}]",
                conv_state,
            )
        if conv_state.dtype != x.dtype:
            _fail("conv_state", f"have x's dtype {x.dtype}", conv_state)
    elif decode:
        _fail("conv_state", "be given in decode mode", conv_state)
    else:
        for arg, t in (
            ("cache_indices", cache_indices),
            ("has_initial_state", has_initial_state),
        ):
            if t is not None:
                _fail(arg, "be None when conv_state is None", t)

    if decode:
        if query_start_loc is not None:
            _fail(
                "query_start_loc",
                "be None in decode mode (one token per sequence)",
                query_start_loc,
            )
        n_seqs = n_tokens
    elif query_start_loc is not None:
        qsl = query_start_loc
        if (
            not isinstance(qsl, torch.Tensor)
            or qsl.dim() != 1
            or qsl.numel() < 1
            or qsl.dtype not in (torch.int32, torch.int64)
        ):
            _fail("query_start_loc", "be a 1-D int32/int64 tensor [batch + 1]", qsl)
        if qsl.numel() and (
            int(qsl[0]) != 0
            or int(qsl[-1]) != n_tokens
            or bool((qsl[1:] < qsl[:-1]).any())
        ):
            _fail("query_start_loc", f"rise from 0 to {n_tokens} (x's tokens)", qsl)
        n_seqs = qsl.numel() - 1
    else:
        n_seqs = 1

    if cache_indices is not None:
        ci = cache_indices
        if (
            not isinstance(ci, torch.Tensor)
            or tuple(ci.shape) != (n_seqs,)
            or ci.dtype not in (torch.int32, torch.int64)
        ):
            _fail("cache_indices", f"be a 1-D int32/int64 tensor [{n_seqs}]", ci)
        if n_seqs:
            lo, hi = int(ci.min()), int(ci.max())
            if lo < 0 or hi >= conv_state.shape[0]:
                _fail("cache_indices", f"lie in [0, {conv_state.shape[0]})", ci)
            if torch.unique(ci).numel() != n_seqs:
                _fail(
                    "cache_indices",
                    "not repeat a cache line (two sequences would race)",
                    ci,
                )
    elif conv_state is not None and conv_state.shape[0] < n_seqs:
        _fail(
            "conv_state",
            f"have a cache line per sequence ({n_seqs}) when cache_indices is None",
            conv_state,
        )
    if has_initial_state is not None:
        hs = has_initial_state
        if (
            not isinstance(hs, torch.Tensor)
            or tuple(hs.shape) != (n_seqs,)
            or hs.is_floating_point()
        ):
            _fail("has_initial_state", f"be a 1-D bool/int tensor [{n_seqs}]", hs)

    named = {
        "weight": weight,
        "bias": bias,
        "conv_state": conv_state,
        "query_start_loc": query_start_loc,
        "cache_indices": cache_indices,
        "has_initial_state": has_initial_state,
    }
    for arg, t in named.items():
        if t is not None and t.device != x.device:
            raise ValueError(
                f"causal_conv1d: {arg} must be on {x.device} like x, got {t.device}"
            )


def causal_conv1d(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    conv_state: torch.Tensor | None = None,
    query_start_loc: torch.Tensor | None = None,
    cache_indices: torch.Tensor | None = None,
    has_initial_state: torch.Tensor | None = None,
    activation: str | None = None,
    residual: bool = False,
    decode: bool = False,
) -> torch.Tensor:
    """Causal depthwise conv over packed sequences; returns `out` (x's shape and dtype).

    x `[T, dim]` (decode: `[batch, dim]`), weight `[dim, W]`, bias `[dim]`; `query_start_loc`
    int32/int64 `[batch+1]` (None: one sequence; must be None in decode); `conv_state`
    `[num_cache_lines, dim, W-1]` in x's dtype, read where `has_initial_state[b]` (default: False
    in prefill, True in decode) and overwritten with each sequence's last W-1 inputs;
    `cache_indices` `[batch]` distinct lines (default `arange(batch)`).
    """
    _validate(
        x,
        weight,
        bias,
        conv_state,
        query_start_loc,
        cache_indices,
        has_initial_state,
        activation,
        residual,
        decode,
    )
    if x.shape[0] == 0:
        return torch.empty_like(x)
    tensors = [t for t in (x, weight, bias, conv_state) if t is not None]
    if not use_triton(*tensors):
        return causal_conv1d_ref(
            x,
            weight,
            bias,
            conv_state=conv_state,
            query_start_loc=query_start_loc,
            cache_indices=cache_indices,
            has_initial_state=has_initial_state,
            activation=activation,
            residual=residual,
            decode=decode,
        )

    qsl, lines, init = _metadata(
        x, conv_state, query_start_loc, cache_indices, has_initial_state, decode
    )
    n_tokens, dim = x.shape
    n_seqs, width = qsl.numel() - 1, weight.shape[1]
    positions = torch.arange(n_tokens, dtype=torch.int64, device=x.device)
    seq_idx = (torch.searchsorted(qsl, positions, right=True) - 1).to(torch.int32)
    init8 = init.to(torch.int8)
    has_state = conv_state is not None
    state = (
        conv_state if has_state else x
    )  # a placeholder pointer the kernel never reads
    state_strides = conv_state.stride() if has_state else (0, 0, 0)
    line_arg = lines if has_state else qsl
    out = torch.empty((n_tokens, dim), dtype=x.dtype, device=x.device)
    block_d = min(next_power_of_2(dim), _MAX_BLOCK_D)

    with torch.cuda.device(x.device) if x.is_cuda else contextlib.nullcontext():
        _causal_conv1d_kernel[
            (triton.cdiv(n_tokens, _BLOCK_T), triton.cdiv(dim, block_d))
        ](
            x,
            weight,
            bias if bias is not None else weight,
            state,
            out,
            seq_idx,
            qsl,
            line_arg,
            init8,
            x.stride(0),
            x.stride(1),
            weight.stride(0),
            weight.stride(1),
            *state_strides,
            n_tokens,
            dim,
            W=width,
            HAS_BIAS=bias is not None,
            HAS_STATE=has_state,
            SILU=activation == "silu",
            RESIDUAL=residual,
            BLOCK_T=_BLOCK_T,
            BLOCK_D=block_d,
        )
        if has_state and n_seqs:
            _conv_state_update_kernel[(n_seqs, triton.cdiv(dim, block_d))](
                x,
                conv_state,
                qsl,
                lines,
                init8,
                x.stride(0),
                x.stride(1),
                *state_strides,
                dim,
                W=width,
                BLOCK_W=next_power_of_2(width - 1),
                BLOCK_D=block_d,
            )
    return out


__all__ = ["causal_conv1d", "causal_conv1d_ref"]
