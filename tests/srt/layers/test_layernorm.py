"""`sglang.srt.layers.layernorm.RMSNorm` against upstream's layer: constructor, `forward_native`, routing.

The reference below is upstream's `RMSNorm.forward_native` (sglang 0.5.17,
`python/sglang/srt/layers/layernorm.py`), written out from reading that file; the tests run
offline, so it is copied as a formula rather than imported.
"""

import inspect

import pytest
import torch

from sglang.kernels.jit import round_like_kernel, tolerance, ulp
from sglang.srt.layers import layernorm as layernorm_module
from sglang.srt.layers.layernorm import RMSNorm

DTYPES = [torch.float16, torch.bfloat16, torch.float32]
MODES = [False, True]  # cast_x_before_out_mul

# upstream 0.5.17 `python/sglang/srt/layers/layernorm.py`, `RMSNorm.__init__`: names and defaults.
UPSTREAM_0_5_17_INIT = [
    ("hidden_size", inspect.Parameter.empty),
    ("eps", 1e-6),
    ("var_hidden_size", None),
    ("cast_x_before_out_mul", False),
    ("fp32_residual", False),
    ("has_weight", True),
    ("weight_dtype", None),
    ("override_orig_dtype", None),
    ("x_pad_to_multiple", 0),
]
# upstream 0.5.23 appends one parameter to 0.5.17's nine (same file, same class).
UPSTREAM_0_5_23_APPENDED = [("force_native", False)]


def _upstream_forward_native(
    x, residual, post, weight, eps, *, cast, fp32_residual=False, override=None, var_size=None
):
    """upstream 0.5.17 `RMSNorm.forward_native`, statement for statement."""
    x = x.contiguous()
    orig_dtype = override or x.dtype
    x = x.to(torch.float32)
    if residual is not None:
        x = x + residual.to(torch.float32)
        if post is not None:
            x = x + post.to(torch.float32)
        residual = x.clone() if fp32_residual else x.to(orig_dtype)
    x_var = x if var_size is None else x[..., :var_size]
    variance = x_var.pow(2).mean(dim=-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    x = weight * x.to(orig_dtype) if cast else (x * weight).to(orig_dtype)
    return x if residual is None else (x, residual)


def _norm(hidden, dtype, eps=1e-6, seed=0, **kwargs):
    gen = torch.Generator().manual_seed(seed)
    kwargs.setdefault("weight_dtype", dtype)
    norm = RMSNorm(hidden, eps, **kwargs)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.5 * torch.randn(hidden, generator=gen))
    return norm


def _activations(shape, dtype, seed=1, scale=2.0):
    gen = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(shape, generator=gen)).to(dtype)


def _pairs(out, expected):
    """[(output, expected)] for a plain call, [(x, x'), (residual, residual')] with a residual."""
    return [(out, expected)] if isinstance(out, torch.Tensor) else list(zip(out, expected))


# --- the constructor -------------------------------------------------------------------------


def test_constructor_takes_upstreams_parameters_in_upstreams_order():
    params = list(inspect.signature(RMSNorm.__init__).parameters.values())[1:]
    got = [(p.name, p.default) for p in params]
    assert got[: len(UPSTREAM_0_5_17_INIT)] == UPSTREAM_0_5_17_INIT
    assert got == UPSTREAM_0_5_17_INIT + UPSTREAM_0_5_23_APPENDED
    assert all(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in params)


def test_third_positional_is_var_hidden_size_as_upstream():
    # The old third parameter was a dtype; upstream's is the variance width.
    norm = RMSNorm(8, 1e-6, 4)
    assert norm.variance_size_override == 4 and norm.weight.dtype == torch.get_default_dtype()
    assert RMSNorm(8, 1e-6, 8).variance_size_override is None  # equal to hidden: no override


def test_has_weight_false_is_a_plain_tensor_as_upstream():
    norm = RMSNorm(8, has_weight=False)
    assert [n for n, _ in norm.named_parameters()] == []
    assert isinstance(norm.weight, torch.Tensor) and torch.equal(norm.weight, torch.ones(8))


def test_x_pad_to_multiple_is_refused_not_ignored():
    with pytest.raises(NotImplementedError, match="x_pad_to_multiple=128"):
        RMSNorm(8, x_pad_to_multiple=128)


# --- forward_native: upstream's formula, bit for bit -------------------------------------------


@pytest.mark.parametrize("cast", MODES, ids=["default", "cast_x_before_out_mul"])
@pytest.mark.parametrize("with_residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_native_is_upstreams_formula_bit_for_bit(dtype, with_residual, cast):
    norm = _norm(256, dtype, cast_x_before_out_mul=cast)
    x = _activations((33, 256), dtype)
    residual = _activations((33, 256), dtype, seed=2) if with_residual else None
    with torch.no_grad():
        out = norm.forward_native(x, residual)
        expected = _upstream_forward_native(x, residual, None, norm.weight, 1e-6, cast=cast)
        other = _upstream_forward_native(x, residual, None, norm.weight, 1e-6, cast=not cast)
    for got, want in _pairs(out, expected):
        assert got.dtype == want.dtype and torch.equal(got, want)
    # The comparison can fail: in fp16/bf16 the other mode differs (in fp32 the two modes are
    # the same computation, so there the test is against the previous layer's order instead:
    # the weight applied before the rstd).
    got = out if residual is None else out[0]
    alt = other if residual is None else other[0]
    if dtype == torch.float32 and with_residual:
        s = x + residual
        alt = s * norm.weight * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6)
    if dtype != torch.float32 or with_residual:
        assert not torch.equal(got, alt)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_default_order_is_not_the_hugging_face_order(dtype):
    # What the issue measured: rounding in the HF order always is off by an ulp on a large share.
    norm = _norm(4096, dtype)
    x = _activations((16, 4096), dtype)
    with torch.no_grad():
        out = norm.forward_native(x)
        hf = norm.weight * _upstream_forward_native(x, None, None, 1.0, 1e-6, cast=True)
    share = (out != hf).float().mean().item()
    assert share > 0.05, share


def test_forward_native_post_residual_addition_fp32_residual_override_and_var_size():
    x, r, post = (_activations((4, 64), torch.bfloat16, seed=s) for s in (1, 2, 3))
    norm = _norm(64, torch.bfloat16, fp32_residual=True, override_orig_dtype=torch.float32)
    with torch.no_grad():
        out, res = norm.forward_native(x, r, post)
        want, want_res = _upstream_forward_native(
            x, r, post, norm.weight, 1e-6, cast=False, fp32_residual=True, override=torch.float32
        )
    assert out.dtype == torch.float32 and res.dtype == torch.float32
    assert torch.equal(out, want) and torch.equal(res, want_res)
    narrow = _norm(64, torch.float32, var_hidden_size=16)
    xf = _activations((4, 64), torch.float32)
    with torch.no_grad():
        got = narrow.forward_native(xf)
        want = _upstream_forward_native(xf, None, None, narrow.weight, 1e-6, cast=False, var_size=16)
    assert torch.equal(got, want)
    with pytest.raises(ValueError, match="at least 128, but found: 64"):
        RMSNorm(64, var_hidden_size=128).forward_native(xf)


def test_hidden_size_mismatch_is_upstreams_error():
    norm = _norm(32, torch.float32)
    with pytest.raises(ValueError, match="Expected hidden_size to be 32, but found: 16"):
        norm(_activations((2, 16), torch.float32))


# --- forward: the kernel path ------------------------------------------------------------------


def _ulp_stats(out, native):
    """(share of elements that differ, largest difference in ulps of the larger magnitude)."""
    got, want = out.float(), native.float()
    diff = got != want
    ulps = (got - want).abs() / ulp(torch.maximum(got.abs(), want.abs()), out.dtype)
    return diff.float().mean().item(), ulps.max().item()


def _kernel_and_native(dtype, cast, with_residual, shape=(64, 4096)):
    norm = _norm(shape[-1], dtype, cast_x_before_out_mul=cast)
    x = _activations(shape, dtype)
    residual = _activations(shape, dtype, seed=2) if with_residual else None
    with torch.no_grad():
        native = norm.forward_native(x, residual)
        out = norm(x, residual.clone() if with_residual else None)
    return out, native


@pytest.mark.parametrize("cast", MODES, ids=["default", "cast_x_before_out_mul"])
@pytest.mark.parametrize("with_residual", [False, True], ids=["plain", "residual"])
def test_kernel_path_fp16_within_one_ulp_on_at_most_one_percent(with_residual, cast):
    # One rounding (the default): a summation order can move it by one ulp. The HF order rounds
    # twice: an ulp of the rounded normalized value, times a weight, is up to two of the output.
    out, native = _kernel_and_native(torch.float16, cast, with_residual)
    for got, want in _pairs(out, native):
        share, worst = _ulp_stats(got, want)
        assert worst <= (2.0 if cast else 1.0), worst
        assert share <= 0.01, share


@pytest.mark.parametrize("cast", MODES, ids=["default", "cast_x_before_out_mul"])
@pytest.mark.parametrize("with_residual", [False, True], ids=["plain", "residual"])
def test_kernel_path_bf16_within_one_ulp_of_native_rounded_like_the_kernel(with_residual, cast):
    # The interpreter rounds fp32 -> bf16 toward zero (sglang.kernels.jit.tolerances): compare
    # with forward_native's formula rounded that way, not with torch's round-to-nearest.
    norm = _norm(4096, torch.bfloat16, cast_x_before_out_mul=cast)
    x = _activations((64, 4096), torch.bfloat16)
    residual = _activations((64, 4096), torch.bfloat16, seed=2) if with_residual else None
    with torch.no_grad():
        out = norm(x.clone(), residual.clone() if with_residual else None)
    s = x.float() + (residual.float() if with_residual else 0)
    s = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6)
    w = norm.weight.detach().float()
    y32 = w * round_like_kernel(s, torch.bfloat16).float() if cast else s * w
    got = out if residual is None else out[0]
    share, worst = _ulp_stats(got, round_like_kernel(y32, torch.bfloat16))
    assert worst <= (2.0 if cast else 1.0) and share <= 0.01, (share, worst)


@pytest.mark.parametrize("with_residual", [False, True], ids=["plain", "residual"])
def test_kernel_path_fp32_close_to_native(with_residual):
    out, native = _kernel_and_native(torch.float32, False, with_residual, shape=(8, 512))
    atol, rtol = tolerance(torch.float32)
    for got, want in _pairs(out, native):
        torch.testing.assert_close(got, want, atol=atol, rtol=rtol)


def test_residual_path_updates_in_place_and_returns_the_buffers():
    norm = _norm(96, torch.float16)
    x, residual = _activations((5, 96), torch.float16), _activations((5, 96), torch.float16, seed=2)
    with torch.no_grad():
        native_x, native_r = norm.forward_native(x, residual)
        out, new_r = norm(x, residual)
    assert out is x and new_r is residual
    assert torch.equal(new_r, native_r)


# --- routing: which kernel upstream's conditions pick ----------------------------------------


@pytest.fixture
def calls(monkeypatch):
    """Every kernel the layer may launch, replaced by a recorder that still runs it."""
    seen = []
    for name in ("rmsnorm", "fused_add_rmsnorm", "rmsnorm_hf", "_jit_fused_add_rmsnorm"):
        real = getattr(layernorm_module, name)

        def record(*args, _name=name, _real=real, **kwargs):
            seen.append((_name, args, kwargs))
            return _real(*args, **kwargs)

        monkeypatch.setattr(layernorm_module, name, record)
    return seen


@pytest.mark.parametrize(
    "dtype, hidden, kwargs, with_residual, expected",
    [
        (torch.float16, 512, {}, False, "rmsnorm"),
        (torch.float16, 512, {}, True, "fused_add_rmsnorm"),
        (torch.bfloat16, 100, {}, True, "fused_add_rmsnorm"),  # sgl_kernel's op: any size
        (torch.float16, 512, {"cast_x_before_out_mul": True}, False, "rmsnorm_hf"),
        (torch.float16, 512, {"cast_x_before_out_mul": True}, True, "_jit_fused_add_rmsnorm"),
        # Upstream's predicates say no (100 is neither a multiple of 32 nor of 16): native.
        (torch.float16, 100, {"cast_x_before_out_mul": True}, False, None),
        (torch.float16, 100, {"cast_x_before_out_mul": True}, True, None),
        # The HF kernels take fp16/bf16 with a weight of that dtype only, as upstream's.
        (torch.float32, 512, {"cast_x_before_out_mul": True}, False, None),
        (torch.float16, 512, {"cast_x_before_out_mul": True, "weight_dtype": torch.float32}, False, None),
        (torch.float16, 512, {"var_hidden_size": 256}, False, None),
        (torch.float16, 512, {"fp32_residual": True}, True, None),
        (torch.float16, 512, {"override_orig_dtype": torch.float32}, False, None),
        (torch.float16, 512, {"force_native": True}, False, None),
    ],
)
def test_routing_follows_upstreams_conditions(calls, dtype, hidden, kwargs, with_residual, expected):
    norm = _norm(hidden, dtype, **kwargs)
    x = _activations((3, hidden), dtype)
    residual = _activations((3, hidden), dtype, seed=2) if with_residual else None
    with torch.no_grad():
        native = norm.forward_native(x, residual)
        out = norm(x.clone(), residual.clone() if with_residual else None)
    assert [name for name, _, _ in calls] == ([expected] if expected else [])
    if expected == "_jit_fused_add_rmsnorm":
        assert calls[0][2] == {"cast_x_before_out_mul": True}
    if expected is None:  # forward_native's own result
        for got, want in _pairs(out, native):
            assert torch.equal(got, want)


def test_eps_reaches_the_kernel(calls):
    norm = _norm(32, torch.float32, eps=0.25)
    x = _activations((3, 32), torch.float32, scale=1e-2)  # mean square 1e-4: eps dominates
    with torch.no_grad():
        out = norm(x)
    ((name, args, _),) = calls
    assert name == "rmsnorm" and args[2] == 0.25
    assert out.abs().max() < 0.2  # with eps 1e-6 the rows would be normalized to ~1


def test_post_residual_addition_is_added_to_the_residual_first_as_upstream():
    norm = _norm(64, torch.float32)
    x, r, post = (_activations((2, 64), torch.float32, seed=s) for s in (1, 2, 3))
    with torch.no_grad():
        out, new_r = norm(x.clone(), r.clone(), post)
        want, want_r = norm.forward_native(x, r + post)
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(out, want, atol=atol, rtol=rtol)
    torch.testing.assert_close(new_r, want_r, atol=atol, rtol=rtol)


def test_empty_input_launches_nothing(calls):
    norm = _norm(16, torch.float16)
    x = torch.empty(0, 16, dtype=torch.float16)
    assert norm(x) is x
    out, res = norm(x, torch.empty(0, 16, dtype=torch.float16))
    assert out is x and res.shape == (0, 16) and calls == []


def test_bad_residual_is_rejected_before_any_write():
    norm = _norm(32, torch.float32)
    x, residual = _activations((4, 32), torch.float32), _activations((4, 31), torch.float32)
    x_before, residual_before = x.clone(), residual.clone()
    with torch.no_grad(), pytest.raises(ValueError, match="residual"):
        norm(x, residual)
    assert torch.equal(x, x_before) and torch.equal(residual, residual_before)


def test_weight_is_a_learned_parameter_that_matters():
    norm = _norm(16, torch.float32)
    assert [name for name, _ in norm.named_parameters()] == ["weight"]
    x = _activations((3, 16), torch.float32)
    with torch.no_grad():
        before = norm(x)
        norm.weight.mul_(2)
        after = norm(x)
    torch.testing.assert_close(after, 2 * before, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("cast", MODES, ids=["default", "cast_x_before_out_mul"])
def test_forward_compiles_without_a_graph_break(cast):
    norm = _norm(64, torch.float16, cast_x_before_out_mul=cast)
    x, residual = _activations((3, 64), torch.float16), _activations((3, 64), torch.float16, seed=2)
    with torch.no_grad():
        expected = norm(x.clone())
        expected_x, expected_r = norm(x.clone(), residual.clone())
        compiled = torch.compile(
            lambda a, r: (norm(a * 1), *norm(a, r)), fullgraph=True, backend="aot_eager"
        )
        plain, got_x, got_r = compiled(x.clone(), residual.clone())
    assert torch.equal(plain, expected)
    assert torch.equal(got_x, expected_x) and torch.equal(got_r, expected_r)
