"""tiny_gemm: the one-program-per-row-block small-N GEMM against its fp32 reference."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import tolerance
from sglang.kernels.ops.gemm import TINY_GEMM_MAX_N
from sglang.kernels.ops.gemm.tiny_gemm import tiny_gemm, tiny_gemm_ref
from tests.kernels.spy import LaunchSpy as _LaunchSpy

# The module itself (the package re-exports a function of the same name, which shadows it).
tiny_gemm_module = importlib.import_module("sglang.kernels.ops.gemm.tiny_gemm")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]




def _operands(m, n, k, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g).to(dtype)
    weight = (torch.randn(n, k, generator=g) / k**0.5).to(dtype)
    bias = torch.randn(n, generator=g).to(dtype)
    return x, weight, bias


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize(
    "m, n, k",
    [
        (1, 1, 1),  # one row, one expert, K = 1: N padded (masked) up to the 16-wide dot
        (5, 8, 100),  # a decode batch routed to 8 experts; K not a multiple of 32
        (33, 256, 48),  # N at the limit, M over two 16-row blocks
    ],
)
def test_matches_reference(m, n, k, with_bias, dtype):
    x, weight, bias = _operands(m, n, k, dtype)
    bias = bias if with_bias else None
    atol, rtol = tolerance(dtype)
    out = tiny_gemm(x, weight, bias)
    assert out.shape == (m, n) and out.dtype == dtype
    torch.testing.assert_close(out, tiny_gemm_ref(x, weight, bias), atol=atol, rtol=rtol)


def test_bias_is_added():
    # Against an independent float64 computation, so a dropped bias cannot pass.
    x, weight, bias = _operands(6, 12, 20, torch.float32, seed=3)
    atol, rtol = tolerance(torch.float32)
    expected = (x.double() @ weight.double().T + bias.double()).float()
    torch.testing.assert_close(tiny_gemm(x, weight, bias), expected, atol=atol, rtol=rtol)


def test_strided_x():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(40, 9, generator=g).T  # [9, 40], strides (1, 9)
    weight = torch.randn(10, 40, generator=g) / 6
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(tiny_gemm(x, weight), tiny_gemm_ref(x, weight), atol=atol, rtol=rtol)


@pytest.mark.parametrize("m, k", [(0, 16), (4, 0)])
def test_empty(m, k, monkeypatch):
    spy = _LaunchSpy(tiny_gemm_module._tiny_gemm_kernel)
    monkeypatch.setattr(tiny_gemm_module, "_tiny_gemm_kernel", spy)
    x, weight, bias = _operands(m, 8, k, torch.float32)
    out = tiny_gemm(x, weight, bias)
    assert out.shape == (m, 8)
    torch.testing.assert_close(out, bias.expand(m, 8))  # K = 0: the bias alone
    assert spy.grids == []


def test_triton_path_runs_and_agrees_with_torch_path(monkeypatch):
    x, weight, bias = _operands(40, 24, 70, torch.float32)
    assert tiny_gemm_module.use_triton(x, weight, bias)
    spy = _LaunchSpy(tiny_gemm_module._tiny_gemm_kernel)
    monkeypatch.setattr(tiny_gemm_module, "_tiny_gemm_kernel", spy)
    triton_out = tiny_gemm(x, weight, bias)
    assert spy.grids == [(3,)]  # one program per 16-row block, each computing all 24 columns
    monkeypatch.setattr(tiny_gemm_module, "use_triton", lambda *t: False)
    torch_out = tiny_gemm(x, weight, bias)
    assert len(spy.grids) == 1
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(triton_out, torch_out, atol=atol, rtol=rtol)


def test_rejects_n_over_the_limit():
    x = torch.ones(2, 8)
    weight = torch.ones(TINY_GEMM_MAX_N + 1, 8)
    with pytest.raises(ValueError, match=r"weight must have at most 256 rows.*\(257, 8\)"):
        tiny_gemm(x, weight)


@pytest.mark.parametrize(
    "x_shape, w_shape, b_shape, dtypes, match",
    [
        ((2, 3, 8), (4, 8), None, (torch.float32,) * 3, "x must be 2-D"),
        ((2, 8), (4, 7), None, (torch.float32,) * 3, "weight must have K = 8"),
        ((2, 8), (4, 8), (5,), (torch.float32,) * 3, r"bias must have shape \(4,\)"),
        ((2, 8), (4, 8), (4,), (torch.float32, torch.float32, torch.float16), "bias must have"),
        ((2, 8), (4, 8), None, (torch.float64,) * 3, "x must be fp16"),
        ((2, 8), (4, 8), None, (torch.float16, torch.float32, None), "weight must have x's"),
    ],
)
def test_rejects_bad_inputs(x_shape, w_shape, b_shape, dtypes, match):
    x = torch.ones(x_shape, dtype=dtypes[0])
    weight = torch.ones(w_shape, dtype=dtypes[1])
    bias = None if b_shape is None else torch.ones(b_shape, dtype=dtypes[2])
    before = [t.clone() for t in (x, weight) + (() if bias is None else (bias,))]
    with pytest.raises(ValueError, match=match):
        tiny_gemm(x, weight, bias)
    after = [x, weight] + ([] if bias is None else [bias])
    assert all(torch.equal(a, b) for a, b in zip(after, before))


def test_rejects_mixed_devices():
    with pytest.raises(ValueError, match="bias must be on x's device"):
        tiny_gemm(torch.ones(2, 8), torch.ones(4, 8), torch.ones(4, device="meta"))


def test_registry_entry():
    assert registry.load("gemm.tiny_gemm") is tiny_gemm
    assert registry.load("gemm.tiny_gemm", "torch") is tiny_gemm_ref
