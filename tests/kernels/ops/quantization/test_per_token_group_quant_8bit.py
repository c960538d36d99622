"""per_token_group_quant_8bit / per_token_group_dequant_8bit against their references.

The quantization is exact: every step of the kernel is an exactly rounded fp32 operation (an IEEE
division, round-half-even, fp8 encoding by hand), so scales and quantized values are compared for
bit equality, not within a unit. fp8 outputs are compared as uint8 bit patterns.
"""

import importlib
import math

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import tolerance
from sglang.kernels.ops.quantization.per_token_group_quant_8bit import (
    per_token_group_dequant_8bit,
    per_token_group_dequant_8bit_ref,
    per_token_group_quant_8bit,
    per_token_group_quant_8bit_ref,
)
from tests.kernels.spy import LaunchSpy as _LaunchSpy

# The module itself (the package re-exports a function of the same name, which shadows it).
quant_module = importlib.import_module("sglang.kernels.ops.quantization.per_token_group_quant_8bit")

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
QUANT_DTYPES = [torch.int8, torch.float8_e4m3fn]
QMAX = {torch.int8: 127.0, torch.float8_e4m3fn: 448.0}




def _bits(q):
    """Comparable bits of a quantized tensor (fp8 has no torch.equal of its own everywhere)."""
    return q.view(torch.uint8) if q.dtype == torch.float8_e4m3fn else q


def _activations(shape, dtype, seed=0):
    # Channels spanning 8 decades, so groups have very different scales (and fp8 subnormals).
    g = torch.Generator().manual_seed(seed)
    spread = torch.logspace(-4, 4, shape[-1])
    return (torch.randn(shape, generator=g) * spread).to(dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("scale_ue8m0", [False, True])
@pytest.mark.parametrize(
    "shape, group_size",
    [
        ((1, 16), 16),  # one token, one group
        ((5, 3, 96), 32),  # 3-D activations, three groups per token
        ((7, 100), 25),  # a group size that is not a power of two (masked lanes)
    ],
)
def test_quant_matches_reference_exactly(shape, group_size, scale_ue8m0, qdtype, dtype):
    x = _activations(shape, dtype)
    x_q, scales = per_token_group_quant_8bit(x, group_size, qdtype, scale_ue8m0=scale_ue8m0)
    ref_q, ref_scales = per_token_group_quant_8bit_ref(
        x, group_size, qdtype, scale_ue8m0=scale_ue8m0
    )
    assert x_q.dtype == qdtype and x_q.shape == x.shape
    assert scales.dtype == torch.float32
    assert scales.shape == (*shape[:-1], shape[-1] // group_size)
    assert torch.equal(scales, ref_scales)
    assert torch.equal(_bits(x_q), _bits(ref_q))


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
def test_scales_follow_the_formula(qdtype):
    # Independent of the reference: float64 absmax / qmax, and ue8m0 as 2 ** ceil(log2) in float64.
    x = _activations((4, 64), torch.float32, seed=5)
    _, scales = per_token_group_quant_8bit(x, 16, qdtype)
    absmax = x.double().reshape(4, 4, 16).abs().amax(-1)
    torch.testing.assert_close(scales.double(), absmax / QMAX[qdtype], atol=0.0, rtol=2**-23)
    _, ue8m0 = per_token_group_quant_8bit(x, 16, qdtype, scale_ue8m0=True)
    expected = [[2.0 ** math.ceil(math.log2(s)) for s in row] for row in scales.double().tolist()]
    assert ue8m0.tolist() == expected


def test_ue8m0_rounds_a_scale_just_above_a_power_of_two_up():
    # absmax one ulp above 127 * 2**-7: scale = absmax / 127 lands just above 2**-7, where fp32
    # log2 rounds to exactly -7 and a log2-based rounding would leave the scale at 2**-7.
    absmax = torch.nextafter(torch.tensor(127.0 * 2**-7), torch.tensor(1.0))
    x = torch.stack([absmax, torch.tensor(0.0)]).reshape(1, 2)
    assert per_token_group_quant_8bit_ref(x, 2)[1].item() > 2**-7
    _, ue8m0 = per_token_group_quant_8bit(x, 2, scale_ue8m0=True)
    assert ue8m0.item() == 2**-6


def test_ue8m0_keeps_a_scale_that_is_a_power_of_two():
    # absmax 127 * 2**-7 (and 448 * 2**3 for fp8) gives a scale of exactly 2**-7 (2**3).
    x = torch.tensor([[127.0 * 2**-7, -0.25], [448.0 * 8, 1.0]])
    _, int8_scales = per_token_group_quant_8bit(x[:1], 2, torch.int8, scale_ue8m0=True)
    _, fp8_scales = per_token_group_quant_8bit(x[1:], 2, torch.float8_e4m3fn, scale_ue8m0=True)
    assert int8_scales.item() == 2**-7 and fp8_scales.item() == 8.0


def test_int8_rounds_half_to_even():
    # absmax 127 makes the scale exactly 1, so x / scale = x and the ties are exact.
    x = torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -2.5, -126.5, 3.49]])
    x_q, scales = per_token_group_quant_8bit(x, 8, torch.int8)
    assert scales.item() == 1.0
    assert x_q.tolist() == [[127, 0, 2, 2, 0, -2, -126, 3]]


def test_fp8_rounding_carries_into_the_exponent():
    # absmax 448 makes the scale exactly 1. 1.999 rounds up to 2.0 and 31.5 to 32.0: the carry
    # the interpreter's own fp8 cast drops (it gives 1.0 and 16.0); 2.125 is a tie between 2.0
    # and 2.25 (-> 2.0, the even mantissa); 0.001 rounds to the smallest subnormal, 2**-9.
    values = [448.0, 1.999, 31.5, -1.999, 2.125, 0.001, -0.0, 0.0]
    x = torch.tensor([values])
    x_q, scales = per_token_group_quant_8bit(x, 8, torch.float8_e4m3fn)
    assert scales.item() == 1.0
    assert x_q.float().tolist() == [[448.0, 2.0, 32.0, -2.0, 2.0, 2**-9, -0.0, 0.0]]
    assert torch.equal(_bits(x_q), _bits(x.to(torch.float8_e4m3fn)))


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_dequant_matches_reference(dtype, qdtype):
    x = _activations((6, 80), torch.float32, seed=1)
    x_q, scales = per_token_group_quant_8bit(x, 40, qdtype)
    atol, rtol = tolerance(dtype)
    out = per_token_group_dequant_8bit(x_q, scales, 40, dtype)
    assert out.dtype == dtype and out.shape == x.shape
    expected = per_token_group_dequant_8bit_ref(x_q, scales, 40, dtype)
    torch.testing.assert_close(out, expected, atol=atol, rtol=rtol)


@pytest.mark.parametrize("qdtype", QUANT_DTYPES)
def test_round_trip_error_is_within_one_quantization_step(qdtype):
    # int8: |x - dequant(quant(x))| <= scale / 2 (half a step). fp8 e4m3 (3 mantissa bits): half
    # an ulp, |x| * 2**-4, or half the subnormal step, scale * 2**-10. A 2**-20 relative slack
    # covers the fp32 rounding of x / scale and of q * scale.
    x = _activations((8, 128), torch.float32, seed=2)
    x_q, scales = per_token_group_quant_8bit(x, 64, qdtype)
    back = per_token_group_dequant_8bit(x_q, scales, 64, torch.float32)
    step = scales.repeat_interleave(64, dim=-1)
    if qdtype == torch.int8:
        bound = step / 2
    else:
        bound = torch.maximum(x.abs() * 2**-4, step * 2**-10)
    assert ((back - x).abs() <= bound * (1 + 2**-20)).all()


def test_empty(monkeypatch):
    spy = _LaunchSpy(quant_module._per_token_group_quant_8bit_kernel)
    monkeypatch.setattr(quant_module, "_per_token_group_quant_8bit_kernel", spy)
    x_q, scales = per_token_group_quant_8bit(torch.empty(0, 64), 32)
    assert x_q.shape == (0, 64) and scales.shape == (0, 2)
    back = per_token_group_dequant_8bit(x_q, scales, 32)
    assert back.shape == (0, 64)
    assert spy.grids == []


def test_triton_path_runs_and_agrees_with_torch_path(monkeypatch):
    x = _activations((9, 64), torch.bfloat16, seed=4)
    assert quant_module.use_triton(x)
    spy = _LaunchSpy(quant_module._per_token_group_quant_8bit_kernel)
    monkeypatch.setattr(quant_module, "_per_token_group_quant_8bit_kernel", spy)
    triton_q, triton_s = per_token_group_quant_8bit(x, 16, torch.float8_e4m3fn)
    assert spy.grids == [(1,)]  # 36 groups of 16 fit one 4096-element tile
    monkeypatch.setattr(quant_module, "use_triton", lambda *t: False)
    torch_q, torch_s = per_token_group_quant_8bit(x, 16, torch.float8_e4m3fn)
    assert len(spy.grids) == 1
    assert torch.equal(triton_s, torch_s) and torch.equal(_bits(triton_q), _bits(torch_q))


@pytest.mark.parametrize(
    "shape, group_size, kwargs, match",
    [
        ((4, 48), 32, {}, r"x's last dimension must be a multiple of group_size=32.*\(4, 48\)"),
        ((4, 48), 0, {}, "group_size must be a positive int"),
        ((1, 32768), 32768, {}, "group_size must be <= 16384"),
        ((4, 48), 16, {"dtype": torch.float16}, "dtype must be torch.int8"),
        ((4, 48), 16, {"eps": 0.0}, "eps must be"),
    ],
)
def test_quant_rejects_bad_inputs(shape, group_size, kwargs, match):
    x = torch.randn(shape)
    before = x.clone()
    with pytest.raises(ValueError, match=match):
        per_token_group_quant_8bit(x, group_size, **kwargs)
    assert torch.equal(x, before)


def test_quant_rejects_integer_x():
    with pytest.raises(ValueError, match="x must be fp16, bf16 or fp32"):
        per_token_group_quant_8bit(torch.ones(2, 16, dtype=torch.int32), 16)


@pytest.mark.parametrize(
    "width, scales_shape, scales_dtype, x_dtype, match",
    [
        (48, (4, 2), torch.float32, torch.int8, r"scales must have shape \(4, 3\)"),
        (48, (4, 3), torch.float16, torch.int8, "scales must be float32"),
        (48, (4, 3), torch.float32, torch.float16, "x_q must be int8 or float8_e4m3fn"),
        (
            47,
            (4, 3),
            torch.float32,
            torch.int8,
            "x_q's last dimension must be a multiple of group_size=16",
        ),
    ],
)
def test_dequant_rejects_bad_inputs(width, scales_shape, scales_dtype, x_dtype, match):
    x_q = torch.ones(4, width).to(x_dtype)
    scales = torch.ones(scales_shape, dtype=scales_dtype)
    q_before, s_before = x_q.clone(), scales.clone()
    with pytest.raises(ValueError, match=match):
        per_token_group_dequant_8bit(x_q, scales, 16)
    assert torch.equal(x_q, q_before) and torch.equal(scales, s_before)


def test_dequant_rejects_mixed_devices():
    with pytest.raises(ValueError, match="scales must be on x_q's device"):
        per_token_group_dequant_8bit(
            torch.ones(2, 16, dtype=torch.int8), torch.ones(2, 1, device="meta"), 16
        )


def test_registry_entries():
    assert registry.load("quantization.per_token_group_quant_8bit") is per_token_group_quant_8bit
    assert (
        registry.load("quantization.per_token_group_quant_8bit", "torch")
        is per_token_group_quant_8bit_ref
    )
    assert (
        registry.load("quantization.per_token_group_dequant_8bit") is per_token_group_dequant_8bit
    )
    assert (
        registry.load("quantization.per_token_group_dequant_8bit", "torch")
        is per_token_group_dequant_8bit_ref
    )
