"""`layernorm.fused_eh_norm`: both draft-head norms in one launch, against two RMSNorms + cat."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import tolerance, use_triton
from sglang.kernels.ops.layernorm.fused_eh_norm import fused_eh_norm, fused_eh_norm_ref
from tests.kernels.spy import spy_launches as _spy_launches

# By module path: the group's `__init__` re-exports the function under the module's own name.
fused_eh_norm_module = importlib.import_module("sglang.kernels.ops.layernorm.fused_eh_norm")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _inputs(n_rows, n_cols, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    embedding = torch.randn(n_rows, n_cols, generator=gen).to(dtype)
    hidden = (4 * torch.randn(n_rows, n_cols, generator=gen)).to(dtype)
    enorm_weight = (1 + 0.5 * torch.randn(n_cols, generator=gen)).to(dtype)
    hnorm_weight = (1 + 0.5 * torch.randn(n_cols, generator=gen)).to(dtype)
    return embedding, hidden, enorm_weight, hnorm_weight


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n_cols", [(1, 1), (1, 7), (5, 123), (64, 256)])
def test_matches_reference(n_rows, n_cols, dtype):
    args = _inputs(n_rows, n_cols, dtype)
    atol, rtol = tolerance(dtype)
    out = fused_eh_norm(*args, eps=1e-5)
    assert out.shape == (n_rows, 2 * n_cols) and out.dtype == dtype
    torch.testing.assert_close(out, fused_eh_norm_ref(*args, eps=1e-5), atol=atol, rtol=rtol)


def test_each_half_is_its_own_norm():
    # A zero enorm weight zeroes exactly the first half; the second is the norm of `hidden` alone.
    embedding, hidden, _, hnorm_weight = _inputs(6, 40, torch.float32)
    out = fused_eh_norm(embedding, hidden, torch.zeros(40), hnorm_weight)
    assert torch.equal(out[:, :40], torch.zeros(6, 40))
    expected = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + 1e-6) * hnorm_weight
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(out[:, 40:], expected, atol=atol, rtol=rtol)


def test_strided_rows():
    # Row views of wider buffers (row stride != H), as slices of a packed activation would be.
    embedding, hidden, enorm_weight, hnorm_weight = _inputs(5, 96, torch.bfloat16)
    wide = torch.cat([embedding, hidden], dim=1)
    e_view, h_view = wide[:, :48], wide[:, 96:144]  # row stride 192
    args = (e_view, h_view, enorm_weight[:48], hnorm_weight[:48])
    atol, rtol = tolerance(torch.bfloat16)
    torch.testing.assert_close(fused_eh_norm(*args), fused_eh_norm_ref(*args), atol=atol, rtol=rtol)


@pytest.mark.parametrize("n_rows, n_cols", [(0, 32), (3, 0)])
def test_empty_input_returns_empty(n_rows, n_cols, monkeypatch):
    grids = _spy_launches(monkeypatch, fused_eh_norm_module, "_fused_eh_norm_kernel")
    out = fused_eh_norm(*_inputs(n_rows, n_cols, torch.float16))
    assert out.shape == (n_rows, 2 * n_cols) and out.dtype == torch.float16
    assert grids == []


def test_one_launch_and_torch_path_agrees(monkeypatch):
    args = _inputs(9, 100, torch.bfloat16)
    assert use_triton(*args)  # the interpreter is on (tests/conftest.py)
    grids = _spy_launches(monkeypatch, fused_eh_norm_module, "_fused_eh_norm_kernel")
    triton_out = fused_eh_norm(*args)
    assert grids == [(9,)]  # one launch writes both halves

    monkeypatch.setattr(fused_eh_norm_module, "use_triton", lambda *tensors: False)
    torch_out = fused_eh_norm(*args)
    assert grids == [(9,)]
    atol, rtol = tolerance(torch.bfloat16)
    torch.testing.assert_close(triton_out, torch_out, atol=atol, rtol=rtol)


@pytest.mark.parametrize(
    "make_args, arg",
    [
        (lambda e, h, ew, hw: (e[None], h[None], ew, hw), "embedding"),
        (lambda e, h, ew, hw: (e, h[:-1], ew, hw), "hidden"),
        (lambda e, h, ew, hw: (e, h.to(torch.float16), ew, hw), "hidden"),
        (lambda e, h, ew, hw: (e.to(torch.int64), h.to(torch.int64), ew, hw), "embedding"),
        (lambda e, h, ew, hw: (e, h, ew[:-1], hw), "enorm_weight"),
        (lambda e, h, ew, hw: (e, h, ew, hw.to(torch.int32)), "hnorm_weight"),
    ],
    ids=[
        "embedding-3d",
        "hidden-shape",
        "hidden-dtype",
        "embedding-int",
        "enorm-shape",
        "hnorm-int",
    ],
)
def test_rejects_bad_inputs(make_args, arg):
    args = _inputs(4, 16, torch.float32)
    before = [t.clone() for t in args]
    with pytest.raises(ValueError, match=rf"fused_eh_norm: {arg}"):
        fused_eh_norm(*make_args(*args))
    assert all(torch.equal(t, b) for t, b in zip(args, before, strict=True))


def test_registry_targets():
    assert registry.load("layernorm.fused_eh_norm") is fused_eh_norm
    assert registry.load("layernorm.fused_eh_norm", "torch") is fused_eh_norm_ref
