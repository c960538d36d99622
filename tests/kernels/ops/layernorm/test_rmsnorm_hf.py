"""`layernorm.rmsnorm_hf`: the Triton kernel (interpreted on CPU) against the HF forward."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import tolerance, use_triton
from sglang.kernels.ops.layernorm.rmsnorm_hf import rmsnorm_hf, rmsnorm_hf_ref
from tests.kernels.spy import spy_launches as _spy_launches

# By module path: the group's `__init__` re-exports the function under the module's own name.
rmsnorm_hf_module = importlib.import_module("sglang.kernels.ops.layernorm.rmsnorm_hf")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _inputs(shape, dtype, weight_dtype=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen) * 3).to(dtype)
    weight = (1 + 0.5 * torch.randn(shape[-1], generator=gen)).to(weight_dtype or dtype)
    return x, weight


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (3, 123), (64, 256), (2, 3, 48)])
def test_matches_reference(shape, dtype):
    x, weight = _inputs(shape, dtype)
    atol, rtol = tolerance(dtype)
    out = rmsnorm_hf(x, weight, eps=1e-5)
    assert out.shape == x.shape and out.dtype == dtype
    torch.testing.assert_close(out, rmsnorm_hf_ref(x, weight, eps=1e-5), atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fp32_weight_promotes_like_hugging_face(dtype):
    # HF multiplies `weight * x_normed.to(input_dtype)`: an fp32 weight gives an fp32 result,
    # whose error is the rounding of x_normed to the input dtype, hence that dtype's tolerance.
    x, weight = _inputs((4, 96), dtype, weight_dtype=torch.float32)
    out = rmsnorm_hf(x, weight)
    assert out.dtype == torch.float32
    atol, rtol = tolerance(dtype)
    torch.testing.assert_close(out, rmsnorm_hf_ref(x, weight), atol=atol, rtol=rtol)


def test_reference_is_the_hugging_face_formula():
    # Pins the reference to the textbook HF forward, written out independently.
    x, weight = _inputs((3, 40), torch.float32)
    variance = (x * x).sum(-1, keepdim=True) / 40
    expected = weight * (x / torch.sqrt(variance + 1e-6))
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(rmsnorm_hf_ref(x, weight), expected, atol=atol, rtol=rtol)


def test_non_contiguous_rows():
    base, _ = _inputs((48, 6), torch.float32)
    _, weight = _inputs((6, 48), torch.float32)
    x = base.t()  # [6, 48], last-dim stride 6
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(
        rmsnorm_hf(x, weight), rmsnorm_hf_ref(x, weight), atol=atol, rtol=rtol
    )


@pytest.mark.parametrize("shape", [(0, 64), (4, 0), (2, 0, 8)])
def test_empty_input_returns_empty(shape, monkeypatch):
    grids = _spy_launches(monkeypatch, rmsnorm_hf_module, "_rmsnorm_hf_kernel")
    x = torch.empty(shape, dtype=torch.bfloat16)
    out = rmsnorm_hf(x, torch.ones(shape[-1], dtype=torch.bfloat16))
    assert out.shape == shape and out.dtype == torch.bfloat16
    assert grids == []


def test_triton_path_runs_and_torch_path_agrees(monkeypatch):
    x, weight = _inputs((5, 77), torch.float16)
    assert use_triton(x, weight)  # the interpreter is on (tests/conftest.py)
    grids = _spy_launches(monkeypatch, rmsnorm_hf_module, "_rmsnorm_hf_kernel")
    triton_out = rmsnorm_hf(x, weight)
    assert grids == [(5,)]

    monkeypatch.setattr(rmsnorm_hf_module, "use_triton", lambda *tensors: False)
    torch_out = rmsnorm_hf(x, weight)
    assert grids == [(5,)]  # no second launch
    atol, rtol = tolerance(torch.float16)
    torch.testing.assert_close(triton_out, torch_out, atol=atol, rtol=rtol)


@pytest.mark.parametrize(
    "make_args, arg",
    [
        (lambda x, w: (x, w[:-1]), "weight"),
        (lambda x, w: (x, w.view(1, -1)), "weight"),
        (lambda x, w: (x.to(torch.int32), w), "x"),
        (lambda x, w: (x, w.to(torch.float64)), "weight"),
        (lambda x, w: (x[0, 0], w[:1]), "x"),
    ],
    ids=["weight-short", "weight-2d", "x-int", "weight-fp64", "x-0d"],
)
def test_rejects_bad_inputs(make_args, arg):
    x, weight = _inputs((4, 32), torch.float32)
    x_before, weight_before = x.clone(), weight.clone()
    bad_x, bad_weight = make_args(x, weight)
    with pytest.raises(ValueError, match=rf"rmsnorm_hf: {arg}"):
        rmsnorm_hf(bad_x, bad_weight)
    assert torch.equal(x, x_before) and torch.equal(weight, weight_before)


def test_rejects_negative_eps():
    x, weight = _inputs((2, 8), torch.float32)
    with pytest.raises(ValueError, match="rmsnorm_hf: eps"):
        rmsnorm_hf(x, weight, eps=-1.0)


def test_registry_targets():
    assert registry.load("layernorm.rmsnorm_hf") is rmsnorm_hf
    assert registry.load("layernorm.rmsnorm_hf", "torch") is rmsnorm_hf_ref
