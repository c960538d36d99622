"""`layernorm.rmsnorm_hf`: the Triton kernel (interpreted on CPU) against the HF forward, rounding-aware."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import assert_close_rounded, round_like_kernel, use_triton
from sglang.kernels.ops.layernorm.rmsnorm_hf import (
    is_supported_rmsnorm_hf_hidden_size,
    rmsnorm_hf,
    rmsnorm_hf_ref,
)
from tests.kernels.spy import spy_launches as _spy_launches

# By module path: the group's `__init__` re-exports the function under the module's own name.
rmsnorm_hf_module = importlib.import_module("sglang.kernels.ops.layernorm.rmsnorm_hf")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _inputs(shape, dtype, weight_dtype=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen) * 3).to(dtype)
    weight = (1 + 0.5 * torch.randn(shape[-1], generator=gen)).to(weight_dtype or dtype)
    return x, weight


def _expected(x, weight, eps, device="cpu"):
    """fp32 value before the final cast: the normalized row rounded to x's dtype, times weight."""
    x32 = x.float()
    normed = x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + eps)
    return round_like_kernel(normed, x.dtype, device).float() * weight.float()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (3, 123), (2, 3, 48)])
def test_matches_hugging_face_rounding(shape, dtype):
    x, weight = _inputs(shape, dtype)
    out = rmsnorm_hf(x, weight, eps=1e-5)
    assert out.shape == x.shape and out.dtype == dtype
    assert_close_rounded(out, _expected(x, weight, 1e-5))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_rounding_step_is_there(dtype):
    # Without the round before the weight, an fp32 weight gives the unrounded product: compare
    # exactly with the rounded one and the unrounded one must be off on most elements.
    x, weight = _inputs((8, 96), dtype, weight_dtype=torch.float32)
    out = rmsnorm_hf(x, weight)
    assert out.dtype == torch.float32  # HF promotes: weight * x_normed.to(input_dtype)
    expected = _expected(x, weight, 1e-6)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-6)
    x32 = x.float()
    unrounded = x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + 1e-6) * weight
    assert (out - unrounded).abs().gt(1e-5).float().mean() > 0.5


def test_all_zero_row_is_zero_through_eps():
    x, weight = _inputs((3, 64), torch.bfloat16)
    x[2] = 0.0
    out = rmsnorm_hf(x, weight)
    assert torch.isfinite(out).all() and torch.equal(out[2], torch.zeros_like(out[2]))


def test_eps_reaches_the_kernel():
    x, weight = _inputs((4, 32), torch.float32)
    x = x * 1e-3  # mean square ~1e-5: eps=0.1 dominates it
    out = rmsnorm_hf(x, weight, 0.1)
    assert_close_rounded(out, _expected(x, weight, 0.1))
    assert out.abs().max() < 0.1


def test_reference_is_the_hugging_face_formula():
    # Pins the reference to the textbook HF forward, written out independently.
    x, weight = _inputs((3, 40), torch.bfloat16)
    ref = rmsnorm_hf_ref(x, weight)
    torch.testing.assert_close(ref, _expected(x, weight, 1e-6, device="cuda").to(torch.bfloat16), atol=0, rtol=2**-7)


def test_strided_input_and_out():
    # Row strides of input (a column slice of a wider buffer) and out (rows of another) differ.
    base, weight = _inputs((6, 100), torch.bfloat16)
    _, weight = _inputs((6, 48), torch.bfloat16)
    x = base[:, 10:58]
    out_buf = torch.full((6, 64), 7.0, dtype=torch.bfloat16)
    out = out_buf[:, :48]
    assert x.stride(0) != out.stride(0)
    assert rmsnorm_hf(x, weight, 1e-6, out) is out
    assert_close_rounded(out, _expected(x, weight, 1e-6))
    assert torch.equal(out_buf[:, 48:], torch.full((6, 16), 7.0, dtype=torch.bfloat16))


@pytest.mark.parametrize("shape", [(0, 64), (4, 0), (2, 0, 8)])
def test_empty_input_returns_empty(shape, monkeypatch):
    grids = _spy_launches(monkeypatch, rmsnorm_hf_module, "_rmsnorm_hf_kernel")
    x = torch.empty(shape, dtype=torch.bfloat16)
    out = rmsnorm_hf(x, torch.ones(shape[-1], dtype=torch.bfloat16))
    assert out.shape == shape and out.dtype == torch.bfloat16
    assert grids == []


def test_triton_path_runs_and_the_explicit_torch_path_agrees(monkeypatch):
    x, weight = _inputs((5, 77), torch.float16)
    assert use_triton(x, weight)  # the interpreter is on (tests/conftest.py)
    grids = _spy_launches(monkeypatch, rmsnorm_hf_module, "_rmsnorm_hf_kernel")
    triton_out = rmsnorm_hf(x, weight)
    assert grids == [(5,)]
    monkeypatch.setattr(rmsnorm_hf_module, "use_triton", lambda *tensors: False)
    torch_out = rmsnorm_hf(x, weight)
    assert grids == [(5,)]  # no second launch
    assert_close_rounded(torch_out, triton_out.float())


def test_every_size_the_predicate_accepts_runs_longer_rows_by_the_formula():
    # 20480 is a multiple of 512, so upstream's predicate says yes; it exceeds one Triton block.
    assert is_supported_rmsnorm_hf_hidden_size(20480)
    x, weight = _inputs((2, 20480), torch.bfloat16)
    assert torch.equal(rmsnorm_hf(x, weight), rmsnorm_hf_ref(x, weight))


@pytest.mark.parametrize(
    "make_args, arg",
    [
        (lambda x, w: (x, w[:-1]), "weight"),
        (lambda x, w: (x, w.view(1, -1)), "weight"),
        (lambda x, w: (x.to(torch.int32), w), "input"),
        (lambda x, w: (x, w.to(torch.float64)), "weight"),
        (lambda x, w: (x[0, 0], w[:1]), "input"),
    ],
    ids=["weight-short", "weight-2d", "x-int", "weight-fp64", "x-0d"],
)
def test_rejects_bad_inputs(make_args, arg):
    x, weight = _inputs((4, 32), torch.float32)
    bad_x, bad_weight = make_args(x, weight)
    with pytest.raises(ValueError, match=rf"rmsnorm_hf: {arg}"):
        rmsnorm_hf(bad_x, bad_weight)


def test_rejects_bad_out_and_negative_eps():
    x, weight = _inputs((2, 8), torch.float32)
    with pytest.raises(ValueError, match="rmsnorm_hf: eps"):
        rmsnorm_hf(x, weight, eps=-1.0)
    with pytest.raises(ValueError, match="rmsnorm_hf: out"):
        rmsnorm_hf(x, weight, 1e-6, torch.empty(2, 8, dtype=torch.float16))


def test_is_a_custom_op_that_compiles_without_a_graph_break():
    x, weight = _inputs((3, 16), torch.float32)
    compiled = torch.compile(lambda a, w: rmsnorm_hf(a, w, 1e-5) + 0, fullgraph=True, backend="eager")
    assert torch.equal(compiled(x, weight), rmsnorm_hf(x, weight, 1e-5))
    assert hasattr(torch.ops.sglang, "rmsnorm_hf")


def test_registry_targets():
    assert registry.load("layernorm.rmsnorm_hf") is rmsnorm_hf
    assert registry.load("layernorm.rmsnorm_hf", "torch") is rmsnorm_hf_ref
