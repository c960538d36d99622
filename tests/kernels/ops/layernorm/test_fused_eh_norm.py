"""`layernorm.fused_eh_norm`: both draft-head norms in one launch, against two RMSNorms + cat."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import assert_close_rounded, use_triton
from sglang.kernels.ops.layernorm.fused_eh_norm import (
    fused_eh_norm,
    fused_eh_norm_ref,
)
from tests.kernels.spy import spy_launches as _spy_launches

# By module path: the group's `__init__` re-exports the function under the module's own name.
fused_eh_norm_module = importlib.import_module("sglang.kernels.ops.layernorm.fused_eh_norm")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
EPS = 1e-6


def _inputs(n_rows, n_cols, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    embedding = torch.randn(n_rows, n_cols, generator=gen).to(dtype)
    hidden = (4 * torch.randn(n_rows, n_cols, generator=gen)).to(dtype)
    enorm_weight = (1 + 0.5 * torch.randn(n_cols, generator=gen)).to(dtype)
    hnorm_weight = (1 + 0.5 * torch.randn(n_cols, generator=gen)).to(dtype)
    return embedding, hidden, enorm_weight, hnorm_weight


def _norm32(x, w, eps):
    """fp32 value before the kernel's one cast: x * rstd * w."""
    x32 = x.float()
    return x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + eps) * w.float()


def _expected(e, h, ew, hw, eps):
    return torch.cat([_norm32(e, ew, eps), _norm32(h, hw, eps)], dim=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_rows, n_cols", [(1, 1), (1, 7), (5, 123)])
def test_matches_two_norms_rounding_aware(n_rows, n_cols, dtype):
    args = _inputs(n_rows, n_cols, dtype)
    out = fused_eh_norm(*args, 1e-5)
    assert out.shape == (n_rows, 2 * n_cols) and out.dtype == dtype
    assert_close_rounded(out, _expected(*args, 1e-5))


def test_each_half_is_its_own_norm_with_its_own_weight():
    embedding, hidden, enorm_weight, hnorm_weight = _inputs(6, 40, torch.float32)
    out = fused_eh_norm(embedding, hidden, torch.zeros(40), hnorm_weight, EPS)
    assert torch.equal(out[:, :40], torch.zeros(6, 40))
    assert_close_rounded(out[:, 40:], _norm32(hidden, hnorm_weight, EPS))
    swapped = fused_eh_norm(embedding, hidden, hnorm_weight, enorm_weight, EPS)
    assert not torch.allclose(swapped, fused_eh_norm(embedding, hidden, enorm_weight, hnorm_weight, EPS))


def test_all_zero_rows_and_eps():
    e, h, ew, hw = _inputs(3, 32, torch.bfloat16)
    e[0], h[1] = 0.0, 0.0
    out = fused_eh_norm(e, h, ew, hw, EPS)
    assert torch.isfinite(out).all()
    assert torch.equal(out[0, :32], torch.zeros(32, dtype=torch.bfloat16))
    assert torch.equal(out[1, 32:], torch.zeros(32, dtype=torch.bfloat16))
    small = [t * 1e-3 if i < 2 else t for i, t in enumerate(_inputs(3, 32, torch.float32))]
    out = fused_eh_norm(*small, 0.1)  # eps dominates a mean square of ~1e-6..1e-5
    assert_close_rounded(out, _expected(*small, 0.1))


def test_strided_rows_differ_from_each_other_and_from_out():
    embedding, hidden, enorm_weight, hnorm_weight = _inputs(5, 96, torch.bfloat16)
    wide = torch.cat([embedding, hidden], dim=1)  # row stride 192
    e_view = wide[:, :48]
    h_view = torch.cat([hidden, hidden, hidden], dim=1)[:, 100:148]  # row stride 288
    args = (e_view, h_view, enorm_weight[:48], hnorm_weight[:48])
    out = fused_eh_norm(*args, EPS)
    assert len({e_view.stride(0), h_view.stride(0), out.stride(0)}) == 3
    assert_close_rounded(out, _expected(*args, EPS))


@pytest.mark.parametrize("n_rows, n_cols", [(0, 32), (3, 0)])
def test_empty_input_returns_empty(n_rows, n_cols, monkeypatch):
    grids = _spy_launches(monkeypatch, fused_eh_norm_module, "_fused_eh_norm_kernel")
    out = fused_eh_norm(*_inputs(n_rows, n_cols, torch.float16), EPS)
    assert out.shape == (n_rows, 2 * n_cols) and out.dtype == torch.float16
    assert grids == []


def test_one_launch_and_the_explicit_torch_path_agrees(monkeypatch):
    args = _inputs(9, 100, torch.float16)
    assert use_triton(*args)  # the interpreter is on (tests/conftest.py)
    grids = _spy_launches(monkeypatch, fused_eh_norm_module, "_fused_eh_norm_kernel")
    triton_out = fused_eh_norm(*args, EPS)
    assert grids == [(9,)]  # one launch writes both halves
    monkeypatch.setattr(fused_eh_norm_module, "use_triton", lambda *tensors: False)
    torch_out = fused_eh_norm(*args, EPS)
    assert grids == [(9,)]
    assert_close_rounded(torch_out, triton_out.float())
    assert torch.equal(torch_out, fused_eh_norm_ref(*args, EPS))


def test_refuses_rows_beyond_its_block():
    x = torch.zeros(1, 1 << 15)
    with pytest.raises(ValueError, match="is_supported_fused_eh_norm_hidden_size"):
        fused_eh_norm(x, x, x[0], x[0], EPS)


@pytest.mark.parametrize(
    "make_args, arg",
    [
        (lambda e, h, ew, hw: (e[None], h[None], ew, hw), "inputs_embeds"),
        (lambda e, h, ew, hw: (e, h[:-1], ew, hw), "previous_hidden"),
        (lambda e, h, ew, hw: (e, h.to(torch.float16), ew, hw), "previous_hidden"),
        (lambda e, h, ew, hw: (e.to(torch.int64), h.to(torch.int64), ew, hw), "inputs_embeds"),
        (lambda e, h, ew, hw: (e, h, ew[:-1], hw), "enorm_weight"),
        (lambda e, h, ew, hw: (e, h, ew, hw.to(torch.int32)), "hnorm_weight"),
    ],
    ids=["embeds-3d", "hidden-shape", "hidden-dtype", "embeds-int", "enorm-shape", "hnorm-int"],
)
def test_rejects_bad_inputs(make_args, arg):
    args = _inputs(4, 16, torch.float32)
    with pytest.raises(ValueError, match=rf"fused_eh_norm: {arg}"):
        fused_eh_norm(*make_args(*args), EPS)


def test_is_a_custom_op_that_compiles_without_a_graph_break():
    args = _inputs(3, 16, torch.float32)
    compiled = torch.compile(lambda *a: fused_eh_norm(*a, 1e-5) * 1, fullgraph=True, backend="eager")
    assert torch.equal(compiled(*args), fused_eh_norm(*args, 1e-5))


def test_registry_targets():
    assert registry.load("layernorm.fused_eh_norm") is fused_eh_norm
    assert registry.load("layernorm.fused_eh_norm", "torch") is fused_eh_norm_ref
