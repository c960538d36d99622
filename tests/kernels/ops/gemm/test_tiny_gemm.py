"""tiny_n_gemm_bf16 / tiny_k_gemm_bf16 against an fp64 product, under the CPU interpreter."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import assert_close_rounded
from sglang.kernels.ops.gemm import (
    can_use_tiny_gemm,
    is_supported_tiny_gemm,
    tiny_gemm_bf16,
    tiny_gemm_bf16_ref,
    tiny_k_gemm_bf16,
    tiny_k_gemm_bf16_ref,
    tiny_n_gemm_bf16,
    tiny_n_gemm_bf16_ref,
)
from tests.kernels.spy import spy_launches

tiny_module = importlib.import_module("sglang.kernels.ops.gemm.tiny_gemm")

OPS_0517 = [tiny_n_gemm_bf16, tiny_k_gemm_bf16]  # their block knob is `split_n`
OPS = [*OPS_0517, tiny_gemm_bf16]  # 0.5.23's one entry point (`n_split`)
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


def _operands(m, n, k, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g).to(dtype)
    w = (torch.randn(n, k, generator=g) / k**0.5).to(dtype)
    return x, w


def _expected32(x, w):
    return (x.double() @ w.double().T).float()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "m, n, k",
    [
        (1, 1, 1),  # one row, one column, K = 1: N padded (masked) up to the 16-wide dot
        (5, 8, 100),  # a decode batch routed to 8 experts; K not a multiple of 32
        (16, 256, 48),  # max_m rows, a 256-expert router: two 128-column programs
        (3, 300, 128),  # tiny_k's class: small K, large N not a multiple of the column block
    ],
)
def test_matches_fp64_product(op, m, n, k, dtype):
    x, w = _operands(m, n, k, dtype)
    out = op(x, w)
    assert out.shape == (m, n) and out.dtype == torch.bfloat16  # upstream's default out_dtype
    assert_close_rounded(out, _expected32(x, w))


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.float16])
def test_out_dtype(out_dtype):
    x, w = _operands(4, 24, 70, torch.bfloat16)
    out = tiny_n_gemm_bf16(x, w, out_dtype=out_dtype)
    assert out.dtype == out_dtype
    assert_close_rounded(out, _expected32(x, w))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_every_tensor_strided_differently(dtype):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(40, 9, generator=g).to(dtype).T  # [9, 40], strides (1, 9)
    w = (torch.randn(10, 120, generator=g) / 6).to(dtype)[:, ::3]  # [10, 40], strides (120, 3)
    out = torch.full((10, 9), 3.0).T  # [9, 10] fp32, strides (1, 9)
    assert tiny_n_gemm_bf16(x, w, out) is out
    assert_close_rounded(out, _expected32(x, w))


@pytest.mark.parametrize("m, k", [(0, 16), (4, 0)])
def test_empty(m, k, monkeypatch):
    grids = spy_launches(monkeypatch, tiny_module, "_tiny_gemm_kernel")
    x, w = _operands(m, 8, k, torch.bfloat16)
    out = tiny_n_gemm_bf16(x, w, torch.full((m, 8), 2.0, dtype=torch.bfloat16))
    assert torch.equal(out, torch.zeros(m, 8, dtype=torch.bfloat16))
    assert grids == []


def test_triton_path_runs_and_agrees_with_torch_path(monkeypatch):
    x, w = _operands(16, 200, 70, torch.float32)
    grids = spy_launches(monkeypatch, tiny_module, "_tiny_gemm_kernel")
    triton_out = tiny_n_gemm_bf16(x, w, out_dtype=torch.float32)
    assert grids == [(1, 2)]  # one 16-row block x two 128-column blocks
    monkeypatch.setattr(tiny_module, "use_triton", lambda *t: False)
    torch_out = tiny_n_gemm_bf16(x, w, out_dtype=torch.float32)
    assert len(grids) == 1
    torch.testing.assert_close(triton_out, torch_out)


def test_compiles_fullgraph_without_a_graph_break():
    x, w = _operands(5, 24, 40, torch.float16)
    torch._dynamo.reset()
    fn = torch.compile(
        lambda x, w: tiny_k_gemm_bf16(x, w, out_dtype=torch.float32), fullgraph=True,
        backend="aot_eager",
    )
    assert_close_rounded(fn(x, w), _expected32(x, w))


@pytest.mark.parametrize("op", OPS_0517)
def test_rejects_what_upstream_rejects(op):
    x, w = _operands(17, 8, 16, torch.bfloat16)
    with pytest.raises(ValueError, match="at most max_m=16 rows"):
        op(x, w)
    assert op(x, w, max_m=17).shape == (17, 8)
    with pytest.raises(ValueError, match="split_n must be a positive divisor of N=8"):
        op(x[:4], w, split_n=3)
    assert op(x[:4], w, split_n=4).shape == (4, 8)
    with pytest.raises(ValueError, match="out_dtype torch.float16 disagrees"):
        op(x[:4], w, torch.empty(4, 8, dtype=torch.bfloat16), out_dtype=torch.float16)
    with pytest.raises(ValueError, match=r"out must have shape \(4, 8\)"):
        op(x[:4], w, torch.empty(4, 9, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="w must have K = 16"):
        op(x[:4], w[:, :15])
    with pytest.raises(ValueError, match="out must be a torch.Tensor or None, got list"):
        op(x[:4], w, [0.0])
    with pytest.raises(ValueError, match="x must be a torch.Tensor, got list"):
        op([[1.0]], w)


def test_support_predicate():
    x, w = _operands(2, 4, 8, torch.bfloat16)
    assert is_supported_tiny_gemm(x, w)
    assert not is_supported_tiny_gemm(x, w.float())
    assert not is_supported_tiny_gemm(x.to(torch.int8), w.to(torch.int8))


def test_registry_entries():
    assert registry.load("gemm.tiny_n_gemm_bf16") is tiny_n_gemm_bf16
    assert registry.load("gemm.tiny_n_gemm_bf16", "torch") is tiny_n_gemm_bf16_ref
    assert registry.load("gemm.tiny_k_gemm_bf16", "torch") is tiny_k_gemm_bf16_ref


def test_tiny_gemm_bf16_takes_fp32_weights_without_downcasting():
    # 0.5.23: a bf16 x beside fp32 weights multiplies fp32 by fp32 (x's upcast is exact).
    x, w = _operands(3, 8, 96, torch.bfloat16)
    w32 = w.float() + 1e-4  # values bf16 cannot hold: a downcast would change the result
    out = tiny_gemm_bf16(x, w32, out_dtype=torch.float32)
    assert_close_rounded(out, (x.double() @ w32.double().T).float())
    assert not torch.equal(out, tiny_gemm_bf16(x, w32.bfloat16(), out_dtype=torch.float32))
    torch.testing.assert_close(out, tiny_gemm_bf16_ref(x, w32, out_dtype=torch.float32))


def test_tiny_gemm_bf16_checks_n_split_and_max_m():
    x, w = _operands(4, 12, 32, torch.bfloat16)
    tiny_gemm_bf16(x, w, n_split=3)
    with pytest.raises(ValueError, match="n_split must be a positive divisor of N=12"):
        tiny_gemm_bf16(x, w, n_split=5)
    with pytest.raises(ValueError, match="at most max_m=2 rows"):
        tiny_gemm_bf16(x, w, max_m=2)
    with pytest.raises(TypeError):
        tiny_gemm_bf16(x, w, None, None)  # out_dtype is keyword-only, as upstream


# (n, k, max_m) -> upstream 0.5.23's `can_use_tiny_gemm` (its python, run on these values from
# the 0.5.23 wheel's kernels/ops/gemm/tiny_gemm.py): the N variant (K > N) needs K % 16 == 0 and
# K / 16 threads in whole warps, at most 1024 and >= max_m; the K variant (K <= N) needs K % 8
# == 0, K > 8, K / 8 lanes dividing 32 and N a multiple of 32 / lanes.
UPSTREAM_CAN_USE = [
    ((256, 7168, 16), True), ((8, 64, 16), False), ((7168, 512, 16), False),
    ((7168, 128, 16), True), ((100, 64, 16), True), ((102, 64, 16), False),
    ((8, 16384, 16), True), ((8, 32768, 16), False), ((8, 1024, 16), True),
    ((8, 1024, 128), False), ((128, 8, 16), False), ((64, 16, 16), True),
]


@pytest.mark.parametrize("shape, want", UPSTREAM_CAN_USE)
def test_can_use_tiny_gemm_answers_as_upstream(shape, want):
    assert can_use_tiny_gemm(*shape) is want


def test_can_use_tiny_gemm_rejects_nonsense_and_needs_triton(monkeypatch):
    for bad in ((0, 64), (8, -16), (8.0, 64), (True, 64)):
        assert can_use_tiny_gemm(*bad) is False
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert can_use_tiny_gemm(256, 7168) is False
