"""dsv3_fused_a_gemm (and upstream's `fused_a_gemm.py` dispatcher) against an fp64 product."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import assert_close_rounded
from sglang.kernels.ops.gemm import dsv3_fused_a_gemm, dsv3_fused_a_gemm_ref
from sglang.kernels.ops.gemm._operands import dot_in_fp32
from sglang.kernels.ops.gemm.fused_a_gemm import (
    FusedAGemmBackend,
    fused_a_gemm_weight_eligible,
)
from sglang.kernels.ops.gemm.fused_a_gemm import dsv3_fused_a_gemm as dispatch
from tests.kernels.spy import spy_launches

kernel_module = importlib.import_module("sglang.kernels.ops.gemm.dsv3_fused_a_gemm")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _operands(m, n, k, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    mat_a = torch.randn(m, k, generator=g).to(dtype)
    weight = (torch.randn(n, k, generator=g) / k**0.5).to(dtype)
    return mat_a, weight.T  # mat_b: column-major [K, N], as upstream passes weight.T


def _expected32(mat_a, mat_b):
    return (mat_a.double() @ mat_b.double()).float()


def test_fp16_takes_the_tensor_core_dot_in_the_interpreter():
    # The GPU's bf16/fp16 tl.dot branch: fp16 runs it under the interpreter (its fp16 dot is
    # right), bf16 cannot (the interpreter's bf16 dot is wrong), fp32 never does (tf32).
    assert dot_in_fp32(torch.float16) is False
    assert dot_in_fp32(torch.bfloat16) is True and dot_in_fp32(torch.float32) is True


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "m, n, k",
    [
        (1, 1, 1),  # one element: every tile dimension masked down to 1
        (3, 70, 100),  # decode-sized M; N and K not multiples of the 64 tiles
        (17, 33, 130),  # M just over one 16-row tile, K over three K-steps
        (16, 2112 // 16, 256),  # upstream's shape class: M = 16, K % 256 == 0, N % 16 == 0
    ],
)
def test_matches_fp64_product(m, n, k, dtype):
    mat_a, mat_b = _operands(m, n, k, dtype)
    out = dsv3_fused_a_gemm(mat_a, mat_b)
    assert out.shape == (m, n) and out.dtype == dtype
    assert_close_rounded(out, _expected32(mat_a, mat_b))


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_tensor_strided_differently(dtype):
    # mat_a a transposed view, mat_b row-major (not upstream's column-major) with a column step,
    # output a column slice: six different strides, each used by the kernel.
    g = torch.Generator().manual_seed(1)
    mat_a = torch.randn(70, 9, generator=g).to(dtype).T  # [9, 70], strides (1, 9)
    mat_b = (torch.randn(70, 66, generator=g) / 8).to(dtype)[:, ::3]  # [70, 22], strides (66, 3)
    buffer = torch.full((9, 50), 7.0, dtype=dtype)
    output = buffer[:, 3:25]  # [9, 22], strides (50, 1)
    got = dsv3_fused_a_gemm(mat_a, mat_b, output)
    assert got is output
    assert_close_rounded(output, _expected32(mat_a, mat_b))
    assert torch.all(buffer[:, :3] == 7) and torch.all(buffer[:, 25:] == 7)


def test_output_is_written_and_returned():
    mat_a, mat_b = _operands(4, 24, 40, torch.float32)
    output = torch.zeros(4, 24)
    assert dsv3_fused_a_gemm(mat_a, mat_b, output) is output
    assert_close_rounded(output, _expected32(mat_a, mat_b))


@pytest.mark.parametrize("m, n, k", [(0, 8, 16), (4, 0, 16), (4, 8, 0)])
def test_empty(m, n, k, monkeypatch):
    grids = spy_launches(monkeypatch, kernel_module, "_dsv3_fused_a_gemm_kernel")
    mat_a, mat_b = _operands(m, n, k, torch.float32)
    out = dsv3_fused_a_gemm(mat_a, mat_b, torch.full((m, n), 5.0))
    assert torch.equal(out, torch.zeros(m, n))  # K = 0: a sum of nothing
    assert grids == []


def test_triton_path_runs_and_agrees_with_torch_path(monkeypatch):
    mat_a, mat_b = _operands(20, 70, 65, torch.float32)
    grids = spy_launches(monkeypatch, kernel_module, "_dsv3_fused_a_gemm_kernel")
    triton_out = dsv3_fused_a_gemm(mat_a, mat_b)
    assert grids == [(2,)]  # one 32-row block x two 64-column blocks
    monkeypatch.setattr(kernel_module, "use_triton", lambda *t: False)
    torch_out = dsv3_fused_a_gemm(mat_a, mat_b)
    assert len(grids) == 1
    torch.testing.assert_close(triton_out, torch_out)


def test_compiles_fullgraph_without_a_graph_break():
    mat_a, mat_b = _operands(5, 24, 40, torch.float16)
    torch._dynamo.reset()
    fn = torch.compile(dsv3_fused_a_gemm, fullgraph=True, backend="aot_eager")
    assert_close_rounded(fn(mat_a, mat_b), _expected32(mat_a, mat_b))


@pytest.mark.parametrize(
    "a_shape, b_shape, a_dtype, b_dtype, match",
    [
        ((4,), (4, 8), torch.float32, torch.float32, "mat_a must be 2-D"),
        ((4, 16), (8,), torch.float32, torch.float32, "mat_b must be 2-D"),
        ((4, 16), (15, 8), torch.float32, torch.float32, "must have K = 16"),
        ((4, 16), (16, 8), torch.int32, torch.int32, "mat_a must be bf16"),
        ((4, 16), (16, 8), torch.float32, torch.bfloat16, "must have mat_a's dtype"),
    ],
)
def test_rejects_bad_inputs(a_shape, b_shape, a_dtype, b_dtype, match):
    with pytest.raises(ValueError, match=match):
        dsv3_fused_a_gemm(torch.ones(a_shape).to(a_dtype), torch.ones(b_shape).to(b_dtype))


def test_rejects_a_bad_output_and_mixed_devices():
    mat_a, mat_b = _operands(4, 8, 16, torch.float32)
    with pytest.raises(ValueError, match=r"output must have shape \(4, 8\)"):
        dsv3_fused_a_gemm(mat_a, mat_b, torch.empty(4, 9))
    with pytest.raises(ValueError, match="output must be torch.float32"):
        dsv3_fused_a_gemm(mat_a, mat_b, torch.empty(4, 8, dtype=torch.float16))
    with pytest.raises(ValueError, match="mat_b.T must be on mat_a's device"):
        dsv3_fused_a_gemm(mat_a, torch.ones(16, 8, device="meta"))


def test_dispatcher_takes_upstreams_backends():
    mat_a, mat_b = _operands(3, 20, 30, torch.float32)
    expected = dsv3_fused_a_gemm_ref(mat_a, mat_b)
    for backend in ("auto", "jit", "cutedsl", FusedAGemmBackend.JIT):
        torch.testing.assert_close(dispatch(mat_a, mat_b, backend=backend), expected)
    with pytest.raises(ValueError, match="'tvm'"):
        dispatch(mat_a, mat_b, backend="tvm")


def test_weight_eligibility():
    assert fused_a_gemm_weight_eligible(torch.nn.Linear(16, 8, dtype=torch.bfloat16))
    assert not fused_a_gemm_weight_eligible(torch.nn.Identity())  # no weight
    int_layer = torch.nn.Module()
    int_layer.weight = torch.ones(8, 16, dtype=torch.int8)
    assert not fused_a_gemm_weight_eligible(int_layer)


def test_registry_entry():
    assert registry.load("gemm.dsv3_fused_a_gemm") is dsv3_fused_a_gemm
    assert registry.load("gemm.dsv3_fused_a_gemm", "torch") is dsv3_fused_a_gemm_ref
