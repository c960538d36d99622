"""Inkling sconv (upstream's `causal_conv1d`, `update_sconv_cache`, `fused_causal_conv1d_update_decode`):
the Triton kernels against an independent per-sequence oracle, rounding-aware."""

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import assert_close_rounded
from sglang.kernels.ops import mamba
from sglang.kernels.ops.mamba import inkling_sconv
from sglang.kernels.ops.mamba.inkling_sconv import (
    causal_conv1d,
    causal_conv1d_ref,
    fused_causal_conv1d_update_decode,
    fused_causal_conv1d_update_decode_ref,
    update_sconv_cache,
    update_sconv_cache_ref,
)
from tests.kernels.spy import LaunchSpy as _LaunchSpy
from tests.kernels.strided import stride2

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _spy(monkeypatch, name):
    s = _LaunchSpy(getattr(inkling_sconv, name))
    monkeypatch.setattr(inkling_sconv, name, s)
    return s


def _rand(shape, dtype, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale).to(dtype)


def _meta(lengths, slots, has_init):
    """upstream's extend metadata, built the way its metadata kernels build it."""
    qsl = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    ci = torch.tensor(slots)
    init = torch.tensor(has_init)
    return {
        "cache_mask": (init & (ci != -1)).view(-1, 1, 1),
        "safe_idx": ci.clamp(min=0).long(),
        "cu": qsl.long(),
        "si": torch.repeat_interleave(torch.arange(len(lengths), dtype=torch.int32), torch.tensor(lengths)),
        "qsl": qsl,
        "ci": ci,
        "init": init,
    }


def _oracle(x, weight, cache, meta, silu, residual):
    """fp32 output and new states, one sequence at a time, written out independently."""
    width = weight.shape[1]
    out = torch.zeros(x.shape, dtype=torch.float32)
    states = {}
    bounds = meta["qsl"].tolist()
    for b, (slot, init) in enumerate(zip(meta["ci"].tolist(), meta["init"].tolist())):
        start, end = bounds[b], bounds[b + 1]
        use = init and slot != -1
        hist = cache[max(slot, 0)].float() if use else torch.zeros(width - 1, x.shape[1])
        stream = torch.cat([hist, x[start:end].float()])
        for t in range(start, end):
            i = t - start + width - 1  # the token's position in the stream
            y = (stream[i - width + 1 : i + 1] * weight.float().t()).sum(0)
            y = y * torch.sigmoid(y) if silu else y
            out[t] = y + x[t].float() if residual else y
        if slot != -1 and end > start:
            states[slot] = stream[-(width - 1) :]
    return out, states


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim, width", [(1, 2), (5, 4), (130, 4), (16, 3)])
def test_extend_conv_and_update_match_the_oracle(monkeypatch, width, dim, dtype):
    conv_spy = _spy(monkeypatch, "_causal_conv1d_kernel")
    update_spy = _spy(monkeypatch, "_update_sconv_cache_kernel")
    lengths = [3, 1, 0, 17, 2]  # shorter than W-1, empty, longer than a token tile
    meta = _meta(lengths, [4, 0, 6, 2, -1], [True, False, True, True, True])  # a PAD lane last
    x = _rand((sum(lengths), dim), dtype, 1)
    weight = _rand((dim, width), dtype, 2, 0.5)
    cache = _rand((7, width - 1, dim), dtype, 4)
    want, states = _oracle(x, weight, cache, meta, True, True)

    y = causal_conv1d(
        x, weight, cache, meta["cache_mask"], meta["safe_idx"], meta["cu"], meta["si"], activation="silu"
    )
    assert_close_rounded(y, want)
    before = cache.clone()
    update_sconv_cache(x, cache, meta["ci"], meta["init"], meta["qsl"])
    for slot in range(7):
        if slot in states:
            assert_close_rounded(cache[slot], states[slot], ulps=0)
        else:  # slot 6 (empty sequence), slots no sequence owns, and the PAD lane's
            assert torch.equal(cache[slot], before[slot])
    assert conv_spy.launches == 1 and update_spy.launches == 1


def test_the_cache_mask_zeroes_the_prefix_and_is_decode_ignores_it():
    dim, width = 8, 4
    meta = _meta([2], [1], [False])
    x, weight = _rand((2, dim), torch.float32, 1), _rand((dim, width), torch.float32, 2)
    cache = _rand((2, width - 1, dim), torch.float32, 3)
    args = (meta["safe_idx"], meta["cu"], meta["si"])
    fresh = causal_conv1d(x, weight, cache, meta["cache_mask"], *args, use_residual=False)
    want, _ = _oracle(x, weight, cache, meta, False, False)
    assert_close_rounded(fresh, want)
    decode_like = causal_conv1d(
        x, weight, cache, meta["cache_mask"], *args, use_residual=False, is_decode=True
    )
    want_cached, _ = _oracle(x, weight, cache, {**meta, "init": torch.tensor([True])}, False, False)
    assert_close_rounded(decode_like, want_cached)
    assert not torch.allclose(fresh, decode_like)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("track", [False, True])
def test_decode_runs_the_triton_kernel_and_matches_the_oracle(monkeypatch, dtype, track):
    spy = _spy(monkeypatch, "_fused_causal_conv1d_update_decode_kernel")
    dim, width, batch = 40, 4, 5
    x = _rand((batch, dim), dtype, 1)
    weight = _rand((dim, width), dtype, 2, 0.5)
    cache = _rand((12, width - 1, dim), dtype, 3)
    # One PAD lane of a CUDA-graph padded batch: it reads the clamped slot 0, writes nothing.
    ci = torch.tensor([3, 7, -1, 6, 9])
    cm = torch.tensor([True, False, False, True, True])
    meta = {"ci": ci, "init": cm, "qsl": torch.arange(batch + 1)}
    want, states = _oracle(x, weight, cache, meta, True, True)
    before = cache.clone()
    kwargs = {}
    if track:
        kwargs = {
            "track_mask": torch.tensor([True, False, True, True, False]),
            "track_indices": torch.tensor([10, 11, 1, 2, 5]),
        }
    y = fused_causal_conv1d_update_decode(
        x, weight, cache, ci, cm.view(-1, 1, 1), activation="silu", **kwargs
    )
    assert spy.launches == 1  # decode through Triton, not the reference
    assert_close_rounded(y, want)
    touched = {3, 7, 6, 9} | ({10, 2} if track else set())
    for slot, state in states.items():
        assert_close_rounded(cache[slot], state, ulps=0)
    if track:
        assert torch.equal(cache[10], cache[3]) and torch.equal(cache[2], cache[6])
    for slot in set(range(12)) - touched:
        assert torch.equal(cache[slot], before[slot])


def test_decode_after_prefill_equals_one_longer_prefill():
    dim, width = 24, 4
    x = _rand((9, dim), torch.float32, 1)
    weight = _rand((dim, width), torch.float32, 2, 0.5)
    cache = torch.zeros(3, width - 1, dim)
    full = _meta([9], [1], [False])
    whole = causal_conv1d(x, weight, cache, full["cache_mask"], full["safe_idx"], full["cu"], full["si"])
    head = _meta([6], [1], [False])
    causal_conv1d(x[:6], weight, cache, head["cache_mask"], head["safe_idx"], head["cu"], head["si"])
    update_sconv_cache(x[:6], cache, head["ci"], head["init"], head["qsl"])
    steps = [
        fused_causal_conv1d_update_decode(
            x[t : t + 1], weight, cache, torch.tensor([1]), torch.tensor([True])
        )
        for t in range(6, 9)
    ]
    torch.testing.assert_close(torch.cat(steps), whole[6:], atol=1e-5, rtol=1e-5)


def test_strides_differ_for_every_pair():
    # x is a column slice of a wider projection; the cache is a [slots, D, W-1] buffer seen as
    # [slots, W-1, D] (its D stride is W-1, not 1); the weight is a transposed [W, D] buffer.
    dim, width = 16, 4
    x = _rand((7, 3 * dim), torch.bfloat16, 1)[:, dim : 2 * dim]
    weight = _rand((width, dim), torch.bfloat16, 2, 0.5).t()
    cache = _rand((4, dim, width - 1), torch.bfloat16, 3).transpose(1, 2)
    assert x.stride() != weight.stride() and cache.stride(2) != 1
    meta = _meta([4, 3], [2, 0], [True, True])
    want, states = _oracle(x, weight, cache, meta, False, True)
    y = causal_conv1d(x, weight, cache, meta["cache_mask"], meta["safe_idx"], meta["cu"], meta["si"])
    assert_close_rounded(y, want)
    update_sconv_cache(x, cache, meta["ci"], meta["init"], meta["qsl"])
    assert_close_rounded(cache[2], states[2], ulps=0)
    dec_want, dec_states = _oracle(
        x[:2],
        weight,
        cache,
        {"ci": torch.tensor([2, 0]), "init": torch.tensor([True, True]), "qsl": torch.arange(3)},
        False,
        True,
    )
    y = fused_causal_conv1d_update_decode(
        x[:2], weight, cache, torch.tensor([2, 0]), torch.tensor([True, True])
    )
    assert_close_rounded(y, dec_want)
    assert_close_rounded(cache[0], dec_states[0], ulps=0)


def test_references_agree_with_the_kernels(monkeypatch):
    dim, width = 12, 4
    meta = _meta([5, 2], [1, 3], [True, False])
    x, weight = _rand((7, dim), torch.float16, 1), _rand((dim, width), torch.float16, 2, 0.5)
    cache = _rand((4, width - 1, dim), torch.float16, 3)
    args = (meta["cache_mask"], meta["safe_idx"], meta["cu"], meta["si"])
    assert_close_rounded(
        causal_conv1d_ref(x, weight, cache, *args), causal_conv1d(x, weight, cache, *args).float()
    )
    a, b = cache.clone(), cache.clone()
    update_sconv_cache(x, a, meta["ci"], meta["init"], meta["qsl"])
    update_sconv_cache_ref(x, b, meta["ci"], meta["init"], meta["qsl"])
    assert torch.equal(a, b)
    ci, cm = torch.tensor([1, -1]), torch.tensor([True, True])
    b0 = b.clone()
    ya = fused_causal_conv1d_update_decode(x[:2], weight, a, ci, cm)
    yb = fused_causal_conv1d_update_decode_ref(x[:2], weight, b, ci, cm)
    assert_close_rounded(ya, yb.float()) and torch.equal(a, b)
    # The explicit torch path (a device Triton cannot run on) is the same references.
    monkeypatch.setattr(inkling_sconv, "use_triton", lambda *t: False)
    assert torch.equal(fused_causal_conv1d_update_decode(x[:2], weight, b0, ci, cm), yb)
    assert torch.equal(b0, b)


BAD = [
    ("x", lambda a: a.update(x=a["x"].int())),
    ("weight", lambda a: a.update(weight=a["weight"][:, :1])),
    ("sconv_cache", lambda a: a.update(sconv_cache=torch.zeros(3, 8, 3))),
    ("sconv_cache", lambda a: a.update(sconv_cache=a["sconv_cache"].half())),
    ("activation", lambda a: a.update(activation="gelu")),
    ("si", lambda a: a.update(si=a["si"][:-1])),
    ("cu", lambda a: a.update(cu=a["cu"].float())),
    ("safe_idx", lambda a: a.update(safe_idx=a["safe_idx"].to("meta"))),
]


@pytest.mark.parametrize("arg, mutate", BAD)
def test_rejects_bad_inputs(arg, mutate):
    meta = _meta([2, 3], [0, 1], [True, True])
    args = {
        "x": _rand((5, 8), torch.float32, 1),
        "weight": _rand((8, 4), torch.float32, 2),
        "sconv_cache": torch.zeros(3, 3, 8),
        "cache_mask": meta["cache_mask"],
        "safe_idx": meta["safe_idx"],
        "cu": meta["cu"],
        "si": meta["si"],
    }
    mutate(args)
    with pytest.raises(ValueError, match=rf"causal_conv1d: {arg}"):
        causal_conv1d(**args)


def test_decode_rejects_half_a_track():
    x, w, c = _rand((2, 8), torch.float32, 1), _rand((8, 4), torch.float32, 2), torch.zeros(3, 3, 8)
    with pytest.raises(ValueError, match="track_indices"):
        fused_causal_conv1d_update_decode(
            x, w, c, torch.tensor([0, 1]), torch.tensor([True, True]), track_mask=torch.tensor([True, True])
        )


def test_ops_compile_without_a_graph_break():
    dim, width = 8, 4
    meta = _meta([3, 2], [0, 2], [True, False])
    x, weight = _rand((5, dim), torch.float32, 1), _rand((dim, width), torch.float32, 2)
    cache = _rand((3, width - 1, dim), torch.float32, 3)
    want_cache = cache.clone()
    want = causal_conv1d(x, weight, want_cache, meta["cache_mask"], meta["safe_idx"], meta["cu"], meta["si"])
    update_sconv_cache(x, want_cache, meta["ci"], meta["init"], meta["qsl"])
    want_dec = fused_causal_conv1d_update_decode(
        x[:2], weight, want_cache, torch.tensor([0, 2]), torch.tensor([True, True])
    )

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step(x, weight, cache, m):
        y = causal_conv1d(x, weight, cache, m["cache_mask"], m["safe_idx"], m["cu"], m["si"])
        update_sconv_cache(x, cache, m["ci"], m["init"], m["qsl"])
        d = fused_causal_conv1d_update_decode(
            x[:2], weight, cache, m["ci"][::2][:2] * 0 + torch.tensor([0, 2]), m["init"][:2] | True
        )
        return y, d

    y, d = step(x, weight, cache, meta)
    assert torch.equal(y, want) and torch.equal(d, want_dec) and torch.equal(cache, want_cache)


@pytest.mark.parametrize("name", ["causal_conv1d", "update_sconv_cache", "fused_causal_conv1d_update_decode"])
def test_registry_and_group_surface(name):
    assert registry.load(f"mamba.{name}") is getattr(inkling_sconv, name)
    assert registry.load(f"mamba.{name}", "torch") is getattr(inkling_sconv, f"{name}_ref")
    assert getattr(mamba, name) is getattr(inkling_sconv, name)


def _strided(t, decoys):
    """`t` (any shape) as a stride-2 view holding `decoys` in its gaps."""
    return stride2(t.reshape(-1), torch.tensor(decoys, dtype=t.dtype)).view(t.shape)


def test_every_metadata_tensor_is_read_at_its_stride(monkeypatch):
    # The same metadata as stride-2 views, other valid values in their gaps (slots, offsets,
    # sequence ids, flags): a kernel that read any of them at `ptr + i` would take a decoy.
    spies = [_spy(monkeypatch, name) for name in (
        "_causal_conv1d_kernel", "_update_sconv_cache_kernel", "_fused_causal_conv1d_update_decode_kernel")]
    dim, width = 8, 4
    x = _rand((9, dim), torch.float32, 1)
    weight = _rand((dim, width), torch.float32, 2, 0.5)
    cache = _rand((8, width - 1, dim), torch.float32, 3)
    m = _meta([3, 2, 4], [4, 0, 2], [True, False, True])
    strided = {
        "cache_mask": _strided(m["cache_mask"], [False, True, False]),
        "safe_idx": _strided(m["safe_idx"], [1, 3, 5]),
        "cu": _strided(m["cu"], [1, 2, 6, 7]),
        "si": _strided(m["si"], [2, 1, 0, 2, 0, 1, 0, 0, 1]),
        "ci": _strided(m["ci"], [1, 3, 5]),
        "init": _strided(m["init"], [True, True, False]),  # sequence 1 (2 < W-1 tokens) reads it
        "qsl": _strided(m["qsl"], [1, 2, 6, 7]),
    }
    assert all(t.reshape(-1).stride(0) == 2 and torch.equal(t, m[k]) for k, t in strided.items())
    for meta in (m, strided):
        meta["y"] = causal_conv1d(x, weight, cache, meta["cache_mask"], meta["safe_idx"], meta["cu"], meta["si"])
        meta["cache"] = cache.clone()
        update_sconv_cache(x, meta["cache"], meta["ci"], meta["init"], meta["qsl"])
    assert torch.equal(strided["y"], m["y"]) and torch.equal(strided["cache"], m["cache"])

    ci, cm = torch.tensor([3, 7, -1, 6]), torch.tensor([True, False, True, True])
    track_mask, track_idx = torch.tensor([True, True, False, True]), torch.tensor([1, 2, 0, 5])
    plain = (ci, cm, track_mask, track_idx)
    views = (_strided(ci, [0, 1, 2, 4]), _strided(cm, [False, True, False, False]),
             _strided(track_mask, [False, False, True, False]), _strided(track_idx, [4, 0, 1, 2]))
    outs = []
    for c, mask, tm, ti in (plain, views):
        state = cache.clone()
        y = fused_causal_conv1d_update_decode(x[:4], weight, state, c, mask, track_mask=tm, track_indices=ti)
        outs.append((y, state))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    assert [s.launches for s in spies] == [2, 2, 2]
