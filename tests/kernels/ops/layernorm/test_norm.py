"""`layernorm.fused_add_rmsnorm`: residual add + RMSNorm, updating both buffers in place."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import tolerance, use_triton
from sglang.kernels.ops.layernorm.norm import fused_add_rmsnorm, fused_add_rmsnorm_ref
from tests.kernels.spy import spy_launches as _spy_launches

norm_module = importlib.import_module("sglang.kernels.ops.layernorm.norm")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _inputs(shape, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(dtype)
    residual = (2 * torch.randn(shape, generator=gen)).to(dtype)
    weight = (1 + 0.5 * torch.randn(shape[-1], generator=gen)).to(dtype)
    return x, residual, weight


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 123), (64, 256), (2, 3, 40)])
def test_updates_in_place_and_matches_reference(shape, dtype):
    x, residual, weight = _inputs(shape, dtype)
    expected_x, expected_residual = fused_add_rmsnorm_ref(x, residual, weight, eps=1e-5)
    x_ptr, residual_ptr = x.data_ptr(), residual.data_ptr()

    out, new_residual = fused_add_rmsnorm(x, residual, weight, eps=1e-5)

    assert out is x and new_residual is residual
    assert x.data_ptr() == x_ptr and residual.data_ptr() == residual_ptr
    atol, rtol = tolerance(dtype)
    torch.testing.assert_close(residual, expected_residual, atol=atol, rtol=rtol)
    torch.testing.assert_close(x, expected_x, atol=atol, rtol=rtol)


def test_reference_does_not_mutate_and_is_add_then_norm():
    x, residual, weight = _inputs((4, 24), torch.float32)
    x_before, residual_before = x.clone(), residual.clone()
    normed, new_residual = fused_add_rmsnorm_ref(x, residual, weight)
    assert torch.equal(x, x_before) and torch.equal(residual, residual_before)
    s = x_before + residual_before
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(new_residual, s, atol=atol, rtol=rtol)
    expected = s / torch.sqrt((s * s).mean(-1, keepdim=True) + 1e-6) * weight
    torch.testing.assert_close(normed, expected, atol=atol, rtol=rtol)


@pytest.mark.parametrize("shape", [(0, 16), (2, 0)])
def test_empty_input_is_left_alone(shape, monkeypatch):
    grids = _spy_launches(monkeypatch, norm_module, "_fused_add_rmsnorm_kernel")
    x, residual, weight = _inputs(shape, torch.bfloat16)
    out, new_residual = fused_add_rmsnorm(x, residual, weight)
    assert out is x and new_residual is residual and grids == []


def test_triton_path_runs_and_torch_path_also_updates_in_place(monkeypatch):
    x, residual, weight = _inputs((7, 50), torch.bfloat16)
    assert use_triton(x, residual, weight)  # the interpreter is on (tests/conftest.py)
    grids = _spy_launches(monkeypatch, norm_module, "_fused_add_rmsnorm_kernel")
    x_torch, residual_torch = x.clone(), residual.clone()

    fused_add_rmsnorm(x, residual, weight)
    assert grids == [(7,)]

    monkeypatch.setattr(norm_module, "use_triton", lambda *tensors: False)
    out, new_residual = fused_add_rmsnorm(x_torch, residual_torch, weight)
    assert grids == [(7,)] and out is x_torch and new_residual is residual_torch
    atol, rtol = tolerance(torch.bfloat16)
    torch.testing.assert_close(x, x_torch, atol=atol, rtol=rtol)
    torch.testing.assert_close(residual, residual_torch, atol=atol, rtol=rtol)


@pytest.mark.parametrize(
    "make_args, arg",
    [
        (lambda x, r, w: (x, r[:-1], w), "residual"),
        (lambda x, r, w: (x, r.to(torch.float16), w), "residual"),
        (lambda x, r, w: (x, r, w[:-1]), "weight"),
        (lambda x, r, w: (x.t(), r.t(), w), "x"),
        (lambda x, r, w: (x, x, w), "residual"),
        (lambda x, r, w: (x.to(torch.int32), r.to(torch.int32), w), "x"),
    ],
    ids=[
        "residual-shape",
        "residual-dtype",
        "weight-shape",
        "x-non-contiguous",
        "aliased",
        "x-int",
    ],
)
def test_rejects_bad_inputs_and_writes_nothing(make_args, arg):
    x, residual, weight = _inputs((8, 8), torch.float32)
    x_before, residual_before = x.clone(), residual.clone()
    with pytest.raises(ValueError, match=rf"fused_add_rmsnorm: {arg}"):
        fused_add_rmsnorm(*make_args(x, residual, weight))
    assert torch.equal(x, x_before) and torch.equal(residual, residual_before)


def test_registry_targets():
    assert registry.load("layernorm.fused_add_rmsnorm") is fused_add_rmsnorm
    assert registry.load("layernorm.fused_add_rmsnorm", "torch") is fused_add_rmsnorm_ref
