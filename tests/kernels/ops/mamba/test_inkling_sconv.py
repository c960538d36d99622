"""causal_conv1d: packed varlen prefill and decode with a conv-state cache; kernel vs reference."""

import pytest
import torch
import torch.nn.functional as F

from sglang.kernels import registry
from sglang.kernels.jit import tolerance, use_triton
from sglang.kernels.ops import mamba
from sglang.kernels.ops.mamba import inkling_sconv
from sglang.kernels.ops.mamba.inkling_sconv import causal_conv1d, causal_conv1d_ref
from tests.kernels.spy import LaunchSpy as _LaunchSpy

DTYPES = [torch.float32, torch.bfloat16, torch.float16]




@pytest.fixture
def spy(monkeypatch):
    s = _LaunchSpy(inkling_sconv._causal_conv1d_kernel)
    monkeypatch.setattr(inkling_sconv, "_causal_conv1d_kernel", s)
    return s


def _rand(shape, dtype, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale).to(dtype)


def _qsl(lengths):
    return torch.tensor(
        [0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32
    )


def _run_both(x, weight, bias, conv_state, **kw):
    """(out, state) from the public function and from the reference, each on its own state clone."""
    state_a = None if conv_state is None else conv_state.clone()
    state_b = None if conv_state is None else conv_state.clone()
    out = causal_conv1d(x, weight, bias, conv_state=state_a, **kw)
    ref = causal_conv1d_ref(x, weight, bias, conv_state=state_b, **kw)
    return out, state_a, ref, state_b


def _assert_close(out, ref, dtype):
    atol, rtol = tolerance(dtype)
    torch.testing.assert_close(out, ref, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [1, 5, 64, 130])
@pytest.mark.parametrize("width", [2, 4])
def test_prefill_matches_reference(spy, width, dim, dtype):
    lengths = [3, 1, 0, 17, 2]  # shorter than W-1, empty, longer than a token tile
    x = _rand((sum(lengths), dim), dtype, 1)
    weight, bias = _rand((dim, width), dtype, 2, 0.5), _rand((dim,), dtype, 3)
    conv_state = _rand((7, dim, width - 1), dtype, 4)
    out, state, ref, ref_state = _run_both(
        x,
        weight,
        bias,
        conv_state,
        query_start_loc=_qsl(lengths),
        cache_indices=torch.tensor([6, 0, 3, 1, 4]),
        has_initial_state=torch.tensor([True, False, True, True, False]),
        activation="silu",
    )
    assert out.shape == x.shape and out.dtype == dtype
    _assert_close(out, ref, dtype)
    torch.testing.assert_close(
        state, ref_state, atol=0, rtol=0
    )  # states are copies: exact
    assert torch.equal(
        state[[2, 5]], conv_state[[2, 5]]
    )  # unused cache lines untouched
    assert spy.launches == 1


@pytest.mark.parametrize("activation", [None, "silu"])
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_epilogue_variants(spy, activation, residual, with_bias):
    lengths = [4, 6]
    x, weight = _rand((10, 7), torch.float32, 1), _rand((7, 4), torch.float32, 2)
    bias = _rand((7,), torch.float32, 3) if with_bias else None
    out, _, ref, _ = _run_both(
        x,
        weight,
        bias,
        _rand((2, 7, 3), torch.float32, 4),
        query_start_loc=_qsl(lengths),
        has_initial_state=torch.tensor([1, 0]),
        activation=activation,
        residual=residual,
    )
    _assert_close(out, ref, torch.float32)
    # The formula written out for the second sequence, which starts from zeros.
    padded = F.pad(x[4:].t(), (3, 0))[None]
    y = F.conv1d(padded, weight[:, None, :], bias, groups=7)[0].t()
    y = F.silu(y) if activation == "silu" else y
    y = y + x[4:] if residual else y
    _assert_close(out[4:], y, torch.float32)


@pytest.mark.parametrize("dtype", DTYPES)
def test_without_any_state(spy, dtype):
    """No conv_state: every sequence starts from zeros; query_start_loc None is one sequence."""
    x, weight = _rand((9, 12), dtype, 1), _rand((12, 4), dtype, 2)
    out, _, ref, _ = _run_both(x, weight, None, None, query_start_loc=_qsl([2, 7]))
    _assert_close(out, ref, dtype)
    whole, _, whole_ref, _ = _run_both(x, weight, None, None)
    _assert_close(whole, whole_ref, dtype)
    assert not torch.equal(whole[2:], out[2:])  # the boundary matters
    assert spy.launches == 2


@pytest.mark.parametrize(
    "has_initial_state", [None, [True, False, True], [False, False, False]]
)
def test_initial_state_flags(spy, has_initial_state):
    x, weight = _rand((3, 6), torch.bfloat16, 1), _rand((6, 4), torch.bfloat16, 2)
    conv_state = _rand((3, 6, 3), torch.bfloat16, 3)
    flags = None if has_initial_state is None else torch.tensor(has_initial_state)
    out, state, ref, ref_state = _run_both(
        x,
        weight,
        None,
        conv_state,
        query_start_loc=_qsl([1, 1, 1]),
        has_initial_state=flags,
    )
    _assert_close(out, ref, torch.bfloat16)
    assert torch.equal(state, ref_state)
    # A one-token sequence keeps the newest W-2 old inputs (or zeros) and appends its token.
    started = [False] * 3 if has_initial_state is None else has_initial_state
    for b in range(3):
        old = (
            conv_state[b, :, 1:]
            if started[b]
            else torch.zeros(6, 2, dtype=torch.bfloat16)
        )
        assert torch.equal(state[b], torch.cat([old, x[b, :, None]], dim=1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [1, 5, 33])
def test_decode_matches_reference(spy, batch, dtype):
    dim = 24
    x, weight, bias = (
        _rand((batch, dim), dtype, 1),
        _rand((dim, 4), dtype, 2, 0.5),
        _rand((dim,), dtype, 3),
    )
    conv_state = _rand((batch + 2, dim, 3), dtype, 4)
    cache_indices = torch.randperm(
        batch + 2, generator=torch.Generator().manual_seed(5)
    )[:batch]
    out, state, ref, ref_state = _run_both(
        x,
        weight,
        bias,
        conv_state,
        cache_indices=cache_indices,
        activation="silu",
        residual=True,
        decode=True,
    )
    _assert_close(out, ref, dtype)
    assert torch.equal(state, ref_state)
    assert torch.equal(state[cache_indices, :, -1], x)  # the newest input lands last
    assert spy.launches == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("split", [1, 2, 5])
def test_prefill_then_decode_equals_full_prefill(spy, split, dtype):
    """Chunk a sequence: prefill `split` tokens, then decode the rest one by one."""
    dim, width, total = 10, 4, 8
    x = _rand((total, dim), dtype, 1)
    weight, bias = _rand((dim, width), dtype, 2, 0.5), _rand((dim,), dtype, 3)
    start = _rand((2, dim, width - 1), dtype, 4)
    line = torch.tensor([1])

    full_state = start.clone()
    full = causal_conv1d(
        x,
        weight,
        bias,
        conv_state=full_state,
        cache_indices=line,
        has_initial_state=torch.tensor([True]),
        activation="silu",
    )

    state = start.clone()
    pieces = [
        causal_conv1d(
            x[:split],
            weight,
            bias,
            conv_state=state,
            cache_indices=line,
            has_initial_state=torch.tensor([True]),
            activation="silu",
        )
    ]
    for t in range(split, total):
        pieces.append(
            causal_conv1d(
                x[t : t + 1],
                weight,
                bias,
                conv_state=state,
                cache_indices=line,
                activation="silu",
                decode=True,
            )
        )
    _assert_close(torch.cat(pieces), full, dtype)
    assert torch.equal(state, full_state)
    assert torch.equal(state[0], start[0])


def test_chunked_prefill_equals_full_prefill(spy):
    x, weight = _rand((11, 9), torch.float32, 1), _rand((9, 3), torch.float32, 2)
    full_state = torch.zeros(1, 9, 2)
    full = causal_conv1d(x, weight, conv_state=full_state)
    state = torch.zeros(1, 9, 2)
    first = causal_conv1d(x[:6], weight, conv_state=state)
    second = causal_conv1d(
        x[6:], weight, conv_state=state, has_initial_state=torch.tensor([True])
    )
    _assert_close(torch.cat([first, second]), full, torch.float32)
    assert torch.equal(state, full_state)


def test_empty_input_writes_nothing(spy):
    conv_state = _rand((2, 4, 3), torch.float32, 1)
    before = conv_state.clone()
    out = causal_conv1d(
        torch.empty(0, 4),
        _rand((4, 4), torch.float32, 2),
        conv_state=conv_state,
        query_start_loc=torch.tensor([0, 0]),
    )
    assert out.shape == (0, 4) and torch.equal(conv_state, before) and spy.launches == 0


def test_torch_path_matches_kernel_path(monkeypatch, spy):
    x, weight = _rand((7, 20), torch.float16, 1), _rand((20, 4), torch.float16, 2)
    state = _rand((2, 20, 3), torch.float16, 3)
    kw = {
        "query_start_loc": _qsl([5, 2]),
        "has_initial_state": torch.tensor([1, 1]),
        "activation": "silu",
    }
    kernel_state = state.clone()
    kernel_out = causal_conv1d(x, weight, conv_state=kernel_state, **kw)
    assert spy.launches == 1 and use_triton(x)  # the interpreter ran the kernel
    monkeypatch.setattr(inkling_sconv, "use_triton", lambda *tensors: False)
    torch_out = causal_conv1d(x, weight, conv_state=state, **kw)
    assert spy.launches == 1
    _assert_close(kernel_out, torch_out, torch.float16)
    assert torch.equal(kernel_state, state)


def _good_args():
    return {
        "x": _rand((6, 8), torch.float32, 1),
        "weight": _rand((8, 4), torch.float32, 2),
        "bias": _rand((8,), torch.float32, 3),
        "conv_state": _rand((3, 8, 3), torch.float32, 4),
        "query_start_loc": torch.tensor([0, 2, 6]),
        "cache_indices": torch.tensor([2, 0]),
        "has_initial_state": torch.tensor([True, False]),
    }


BAD = [
    ("x", lambda a: a.update(x=a["x"].long())),
    ("x", lambda a: a.update(x=a["x"][None])),
    ("x", lambda a: a.update(x=torch.zeros(8, 6).t())),
    ("weight", lambda a: a.update(weight=torch.zeros(8, 1, 4))),
    ("weight", lambda a: a.update(weight=torch.zeros(8, 1))),
    ("weight", lambda a: a.update(weight=torch.zeros(7, 4))),
    ("bias", lambda a: a.update(bias=torch.zeros(9))),
    ("activation", lambda a: a.update(activation="gelu")),
    ("query_start_loc", lambda a: a.update(query_start_loc=torch.tensor([0, 2, 5]))),
    ("query_start_loc", lambda a: a.update(query_start_loc=torch.tensor([0, 4, 2, 6]))),
    ("query_start_loc", lambda a: a.update(query_start_loc=torch.tensor([0.0, 6.0]))),
    ("cache_indices", lambda a: a.update(cache_indices=torch.tensor([3, 0]))),
    ("cache_indices", lambda a: a.update(cache_indices=torch.tensor([1, 1]))),
    ("cache_indices", lambda a: a.update(cache_indices=torch.tensor([1]))),
    ("conv_state", lambda a: a.update(conv_state=torch.zeros(3, 8, 4))),
    ("conv_state", lambda a: a.update(conv_state=a["conv_state"].double())),
    (
        "has_initial_state",
        lambda a: a.update(has_initial_state=torch.tensor([1.0, 0.0])),
    ),
    (
        "conv_state",
        lambda a: a.update(
            decode=True,
            query_start_loc=None,
            x=torch.zeros(2, 8),
            conv_state=None,
            cache_indices=None,
            has_initial_state=None,
        ),
    ),
    ("query_start_loc", lambda a: a.update(decode=True, x=torch.zeros(2, 8))),
    ("cache_indices", lambda a: a.update(conv_state=None, has_initial_state=None)),
    ("weight", lambda a: a.update(weight=torch.zeros(8, 4, device="meta"))),
]


@pytest.mark.parametrize("arg, mutate", BAD)
def test_rejects_bad_input_without_writing(arg, mutate):
    args = _good_args()
    state = args["conv_state"]
    mutate(args)
    before = state.clone()
    with pytest.raises(ValueError, match=arg):
        causal_conv1d(args.pop("x"), args.pop("weight"), args.pop("bias"), **args)
    assert torch.equal(state, before)


def test_registry_and_group_surface():
    assert registry.load("mamba.causal_conv1d") is causal_conv1d
    assert registry.load("mamba.causal_conv1d", "torch") is causal_conv1d_ref
    assert (
        mamba.causal_conv1d is causal_conv1d
        and mamba.causal_conv1d_ref is causal_conv1d_ref
    )
