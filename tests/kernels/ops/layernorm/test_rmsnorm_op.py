"""Upstream's names mean upstream's things: the package-level `rmsnorm` / `fused_add_rmsnorm`, the
JIT `norm.fused_add_rmsnorm`, and the three `is_supported_*` predicates.

The expected signatures and answers are upstream's, read from the sglang wheels (files named at
each table) and written down here, because the tests run offline.
"""

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import MAX_FUSED_SIZE, round_like_kernel, ulp
from sglang.kernels.ops import layernorm
from sglang.kernels.ops.layernorm import (
    fused_add_rmsnorm,
    fused_add_rmsnorm_ref,
    is_supported_fused_eh_norm_hidden_size,
    is_supported_jit_fused_add_rmsnorm_hidden_size,
    is_supported_rmsnorm_hf_hidden_size,
    rmsnorm,
    rmsnorm_ref,
)
from tests.kernels.spy import spy_launches as _spy_launches

norm_module = importlib.import_module("sglang.kernels.ops.layernorm.norm")
op_module = importlib.import_module("sglang.kernels.ops.layernorm.rmsnorm_op")

# sglang 0.5.17 `sglang/kernels/ops/layernorm/__init__.py`: the package-level functions.
UPSTREAM_PACKAGE_SIGNATURES = {
    "rmsnorm": [("input", None), ("weight", None), ("eps", 1e-6), ("out", None), ("enable_pdl", None)],
    "fused_add_rmsnorm": [
        ("input", None), ("residual", None), ("weight", None), ("eps", 1e-6), ("enable_pdl", None)
    ],
}
# sglang 0.5.17 and 0.5.23 `sglang/kernels/ops/layernorm/norm.py`: `fused_add_rmsnorm`.
UPSTREAM_NORM_FUSED_ADD = [
    ("input", None), ("residual", None), ("weight", None), ("eps", 1e-6),
    ("cast_x_before_out_mul", False),
]
# hidden size -> upstream's answer, from the predicates' code in sglang 0.5.17 and 0.5.23:
# `rmsnorm_hf.py` (a multiple of 32 in [32, 512), or of 512), `norm.py` (a multiple of 16 in
# (0, 8192]), `fused_eh_norm.py` (a multiple of 256 in (256, 8192]).
UPSTREAM_ANSWERS = {
    "is_supported_rmsnorm_hf_hidden_size": {
        0: False, 16: False, 32: True, 100: False, 480: True, 500: False, 512: True, 768: False,
        4096: True, 8192: True, 16384: True, 20480: True, 1 << 20: True,
    },
    "is_supported_jit_fused_add_rmsnorm_hidden_size": {
        0: False, 16: True, 100: False, 112: True, 4096: True, 8192: True, 8208: False,
        16384: False, 20480: False,
    },
    "is_supported_fused_eh_norm_hidden_size": {
        0: False, 100: False, 256: False, 512: True, 768: True, 7168: True, 8192: True,
        8448: False, 20480: False,
    },
}
PREDICATES = {
    "is_supported_rmsnorm_hf_hidden_size": is_supported_rmsnorm_hf_hidden_size,
    "is_supported_jit_fused_add_rmsnorm_hidden_size": is_supported_jit_fused_add_rmsnorm_hidden_size,
    "is_supported_fused_eh_norm_hidden_size": is_supported_fused_eh_norm_hidden_size,
}


def _signature(fn):
    return [
        (p.name, None if p.default is inspect.Parameter.empty else p.default)
        for p in inspect.signature(fn).parameters.values()
    ]


def _inputs(shape, dtype, seed=0, weight_dtype=None):
    gen = torch.Generator().manual_seed(seed)
    x = (2 * torch.randn(shape, generator=gen)).to(dtype)
    residual = (2 * torch.randn(shape, generator=gen)).to(dtype)
    weight = (1 + 0.5 * torch.randn(shape[-1], generator=gen)).to(weight_dtype or dtype)
    return x, residual, weight


def _upstream_fused_add(x, residual, weight, eps):
    """sglang 0.5.17 `FusedAddRMSNormOp.forward_native` (fp32 values before its last cast)."""
    acc = x.to(torch.float32) + residual.to(torch.float32)
    normed = acc * torch.rsqrt(acc.pow(2).mean(dim=-1, keepdim=True) + eps)
    return normed * weight, acc


def _upstream_rmsnorm(x, weight, eps):
    """sglang 0.5.17 `RMSNormOp.forward_native` (fp32 values before its last cast)."""
    x = x.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    return x * weight


def _share_and_worst(got, expected32):
    """Share of elements off the kernel-rounded expectation, and the worst distance in ulps."""
    want = round_like_kernel(expected32, got.dtype).float()
    g = got.float()
    ulps = (g - want).abs() / ulp(torch.maximum(g.abs(), want.abs()), got.dtype)
    return (g != want).float().mean().item(), ulps.max().item()


# --- names and signatures ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UPSTREAM_PACKAGE_SIGNATURES))
def test_package_level_names_have_upstreams_signature(name):
    assert _signature(getattr(layernorm, name)) == UPSTREAM_PACKAGE_SIGNATURES[name]


def test_norm_fused_add_rmsnorm_keeps_upstreams_jit_signature():
    assert _signature(norm_module.fused_add_rmsnorm) == UPSTREAM_NORM_FUSED_ADD
    kinds = [p.kind for p in inspect.signature(norm_module.fused_add_rmsnorm).parameters.values()]
    assert kinds[-1] is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("name", sorted(PREDICATES))
def test_is_supported_predicates_answer_as_upstreams(name):
    answers = {h: PREDICATES[name](h) for h in UPSTREAM_ANSWERS[name]}
    assert answers == UPSTREAM_ANSWERS[name]


# Every `is_supported_*` upstream defines (sglang 0.5.17 and 0.5.23: only the three above, in
# `sglang/kernels/ops/layernorm/`); ours named otherwise (`is_supported_tiny_gemm`) upstream lacks.
UPSTREAM_IS_SUPPORTED = set(UPSTREAM_ANSWERS)


def test_every_is_supported_predicate_of_ours_is_checked_or_has_no_upstream_namesake():
    ops_dir = Path(layernorm.__file__).resolve().parents[1]
    ours = {
        node.name
        for path in ops_dir.rglob("*.py")
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("is_supported_")
    }
    assert UPSTREAM_IS_SUPPORTED <= ours  # the walk found the three
    # A new predicate with one of upstream's names must be added to UPSTREAM_ANSWERS above.
    assert ours - UPSTREAM_IS_SUPPORTED <= {"is_supported_tiny_gemm"}


def test_the_registry_ids_are_upstreams_package_level_ops():
    assert registry.load("layernorm.rmsnorm") is rmsnorm
    assert registry.load("layernorm.rmsnorm", "torch") is rmsnorm_ref
    assert registry.load("layernorm.fused_add_rmsnorm") is fused_add_rmsnorm
    assert registry.load("layernorm.fused_add_rmsnorm", "torch") is fused_add_rmsnorm_ref


# --- fused_add_rmsnorm: upstream's call, upstream's rounding ----------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_upstream_style_call_gives_upstreams_values(dtype):
    x, residual, weight = _inputs((64, 4096), dtype)
    expected32, acc = _upstream_fused_add(x, residual, weight, 1e-6)
    assert fused_add_rmsnorm(x, residual, weight, 1e-6, None) is None  # enable_pdl positional
    assert torch.equal(residual, round_like_kernel(acc, dtype))
    share, worst = _share_and_worst(x, expected32)
    assert worst <= 1.0 and share <= 0.01, (share, worst)


def test_normalizes_the_fp32_sum_not_the_rounded_residual():
    # The JIT kernel's default normalizes round(sum); upstream's package op the fp32 sum. On
    # fp16 rows the two differ on a measurable share, so this test tells them apart.
    x, residual, weight = _inputs((16, 1024), torch.float16)
    jit_x, jit_r = x.clone(), residual.clone()
    norm_module.fused_add_rmsnorm(jit_x, jit_r, weight, 1e-6)
    fused_add_rmsnorm(x, residual, weight, 1e-6)
    expected32, _ = _upstream_fused_add(*_inputs((16, 1024), torch.float16), 1e-6)
    assert _share_and_worst(x, expected32)[0] < _share_and_worst(jit_x, expected32)[0]
    assert torch.equal(residual, jit_r)


def test_reference_is_upstreams_formula_and_leaves_inputs_alone():
    x, residual, weight = _inputs((3, 96), torch.bfloat16)
    before = (x.clone(), residual.clone())
    normed, new_residual = fused_add_rmsnorm_ref(x, residual, weight, 1e-5)
    expected32, acc = _upstream_fused_add(x, residual, weight, 1e-5)
    assert torch.equal(normed, expected32.to(torch.bfloat16))
    assert torch.equal(new_residual, acc.to(torch.bfloat16))
    assert torch.equal(x, before[0]) and torch.equal(residual, before[1])


def test_fused_add_rows_beyond_a_block_use_the_formula_in_the_same_op(monkeypatch):
    # Upstream's sgl_kernel op takes any hidden size; the JIT `norm.fused_add_rmsnorm` refuses.
    x, residual, weight = _inputs((2, MAX_FUSED_SIZE + 16), torch.float16)
    expected = fused_add_rmsnorm_ref(x, residual, weight)
    grids = _spy_launches(monkeypatch, norm_module, "_fused_add_rmsnorm_kernel")
    fused_add_rmsnorm(x, residual, weight)
    assert grids == [] and torch.equal(x, expected[0]) and torch.equal(residual, expected[1])
    with pytest.raises(ValueError, match="row limit"):
        norm_module.fused_add_rmsnorm(x, residual, weight)


def test_fused_add_refuses_bad_input_before_writing():
    x, residual, weight = _inputs((4, 32), torch.float32)
    before = (x.clone(), residual.clone())
    with pytest.raises(ValueError, match="fused_add_rmsnorm: residual"):
        fused_add_rmsnorm(x, residual[:, :16], weight)
    with pytest.raises(ValueError, match="fused_add_rmsnorm: enable_pdl"):
        fused_add_rmsnorm(x, residual, weight, 1e-6, "yes")
    assert torch.equal(x, before[0]) and torch.equal(residual, before[1])


# --- rmsnorm -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rmsnorm_within_one_ulp_of_upstream_on_at_most_one_percent(dtype):
    x, _, weight = _inputs((64, 4096), dtype)
    out = rmsnorm(x, weight)
    assert out.dtype == dtype and out.shape == x.shape
    share, worst = _share_and_worst(out, _upstream_rmsnorm(x, weight, 1e-6))
    assert worst <= 1.0 and share <= 0.01, (share, worst)


def test_rmsnorm_weight_of_another_dtype_multiplies_in_fp32_and_returns_inputs_dtype():
    x, _, weight = _inputs((5, 123), torch.bfloat16, weight_dtype=torch.float32)
    out = rmsnorm(x, weight)
    assert out.dtype == torch.bfloat16
    share, worst = _share_and_worst(out, _upstream_rmsnorm(x, weight, 1e-6))
    assert worst <= 1.0, worst


def test_rmsnorm_writes_out_and_returns_it():
    x, _, weight = _inputs((3, 40), torch.float16)
    out = torch.full_like(x, float("nan"))
    assert rmsnorm(x, weight, 1e-6, out, None) is out
    assert torch.equal(out, rmsnorm(x, weight))


def test_rmsnorm_eps_reaches_the_kernel():
    x = torch.full((2, 32), 1e-2)
    out = rmsnorm(x, torch.ones(32), 0.25)
    torch.testing.assert_close(out, x * torch.rsqrt(torch.tensor(1e-4 + 0.25)))


def test_rmsnorm_rows_beyond_a_block_use_the_formula_in_the_same_op(monkeypatch):
    hidden = MAX_FUSED_SIZE + 512
    x, _, weight = _inputs((2, hidden), torch.float16)
    grids = _spy_launches(monkeypatch, op_module, "_rmsnorm_kernel")
    assert torch.equal(rmsnorm(x, weight), rmsnorm_ref(x, weight))
    assert grids == []  # no launch: the row does not fit one program


def test_rmsnorm_launches_one_program_per_row(monkeypatch):
    x, _, weight = _inputs((2, 3, 64), torch.float32)
    grids = _spy_launches(monkeypatch, op_module, "_rmsnorm_kernel")
    rmsnorm(x, weight)
    assert grids == [(6,)]


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda x, w: rmsnorm(x, w[:-1]), "weight"),
        (lambda x, w: rmsnorm(x.to(torch.int32), w), "input"),
        (lambda x, w: rmsnorm(x, w, -1.0), "eps"),
        (lambda x, w: rmsnorm(x, w, 1e-6, torch.empty(4, 32, dtype=torch.float16)), "out"),
        (lambda x, w: rmsnorm(x, w, 1e-6, None, 1), "enable_pdl"),
    ],
    ids=["weight-short", "x-int", "eps-negative", "out-dtype", "pdl-int"],
)
def test_rmsnorm_rejects_bad_inputs(call, arg):
    x, _, weight = _inputs((4, 32), torch.float32)
    with pytest.raises(ValueError, match=rf"rmsnorm: {arg}"):
        call(x, weight)


def test_both_are_custom_ops_that_compile_without_a_graph_break():
    x, residual, weight = _inputs((3, 16), torch.float32)
    expected_x, expected_r = x.clone(), residual.clone()
    fused_add_rmsnorm(expected_x, expected_r, weight, 1e-5)

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step(a, b, w):
        fused_add_rmsnorm(a, b, w, 1e-5)
        return rmsnorm(a, w, 1e-5) * 1, b * 1

    got, got_r = step(x, residual, weight)
    assert torch.equal(got, rmsnorm(expected_x, weight, 1e-5)) and torch.equal(got_r, expected_r)
    assert hasattr(torch.ops.sglang, "rmsnorm")
