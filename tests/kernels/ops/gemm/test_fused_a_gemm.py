"""fused_a_gemm: the tiled Triton GEMM against its fp32 reference, under the CPU interpreter."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import tolerance
from sglang.kernels.ops.gemm.fused_a_gemm import fused_a_gemm, fused_a_gemm_ref
from tests.kernels.spy import LaunchSpy as _LaunchSpy

# The module itself (the package re-exports a function of the same name, which shadows it).
fused_a_gemm_module = importlib.import_module("sglang.kernels.ops.gemm.fused_a_gemm")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]




def _operands(m, n, k, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g).to(dtype)
    weight = (torch.randn(n, k, generator=g) / k**0.5).to(dtype)
    return x, weight


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "m, n, k",
    [
        (1, 1, 1),  # one element: every tile dimension masked down to 1
        (3, 70, 100),  # decode-sized M; N and K not multiples of the 64 tiles
        (17, 33, 130),  # M just over one 16-row tile, K over two K-steps
        (64, 129, 64),  # full 64-row tile, N one past two column tiles
    ],
)
def test_matches_reference(m, n, k, dtype):
    x, weight = _operands(m, n, k, dtype)
    atol, rtol = tolerance(dtype)
    out = fused_a_gemm(x, weight)
    assert out.shape == (m, n) and out.dtype == dtype
    torch.testing.assert_close(out, fused_a_gemm_ref(x, weight), atol=atol, rtol=rtol)


def test_reference_is_a_matmul():
    # The reference itself, against an independent float64 product.
    x, weight = _operands(5, 7, 9, torch.float32)
    atol, rtol = tolerance(torch.float32)
    expected = (x.double() @ weight.double().T).float()
    torch.testing.assert_close(fused_a_gemm_ref(x, weight), expected, atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_strided_operands(dtype):
    # x is a transposed view and weight takes every other column: the kernel uses both strides.
    g = torch.Generator().manual_seed(1)
    x = torch.randn(24, 20, generator=g).to(dtype).T  # [20, 24], strides (1, 20)
    weight = (torch.randn(16, 48, generator=g) / 5).to(dtype)[:, ::2]  # [16, 24], strides (48, 2)
    assert not x.is_contiguous() and not weight.is_contiguous()
    atol, rtol = tolerance(dtype)
    torch.testing.assert_close(
        fused_a_gemm(x, weight), fused_a_gemm_ref(x, weight), atol=atol, rtol=rtol
    )


@pytest.mark.parametrize("m, n, k", [(0, 8, 16), (4, 0, 16), (4, 8, 0)])
def test_empty(m, n, k, monkeypatch):
    spy = _LaunchSpy(fused_a_gemm_module._fused_a_gemm_kernel)
    monkeypatch.setattr(fused_a_gemm_module, "_fused_a_gemm_kernel", spy)
    x, weight = _operands(m, n, k, torch.float32)
    out = fused_a_gemm(x, weight)
    assert out.shape == (m, n)
    assert torch.equal(out, torch.zeros(m, n))  # K = 0: a sum of nothing
    assert spy.grids == []  # nothing launched


def test_triton_path_runs_and_agrees_with_torch_path(monkeypatch):
    x, weight = _operands(20, 70, 65, torch.float32)
    assert fused_a_gemm_module.use_triton(x, weight)  # the interpreter is on for CPU tensors
    spy = _LaunchSpy(fused_a_gemm_module._fused_a_gemm_kernel)
    monkeypatch.setattr(fused_a_gemm_module, "_fused_a_gemm_kernel", spy)
    triton_out = fused_a_gemm(x, weight)
    assert spy.grids == [(2,)]  # one 32-row block x two 64-column blocks
    monkeypatch.setattr(fused_a_gemm_module, "use_triton", lambda *t: False)
    torch_out = fused_a_gemm(x, weight)
    assert len(spy.grids) == 1  # the torch path launched nothing
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(triton_out, torch_out, atol=atol, rtol=rtol)


@pytest.mark.parametrize(
    "x_shape, w_shape, x_dtype, w_dtype, match",
    [
        ((4,), (8, 4), torch.float32, torch.float32, "x must be 2-D"),
        ((4, 16), (8,), torch.float32, torch.float32, "weight must be 2-D"),
        ((4, 16), (8, 15), torch.float32, torch.float32, "weight must have K = 16"),
        ((4, 16), (8, 16), torch.int32, torch.int32, "x must be fp16"),
        ((4, 16), (8, 16), torch.float32, torch.bfloat16, "weight must have x's dtype"),
    ],
)
def test_rejects_bad_inputs(x_shape, w_shape, x_dtype, w_dtype, match):
    x = torch.ones(x_shape).to(x_dtype)
    weight = torch.ones(w_shape).to(w_dtype)
    x_before, w_before = x.clone(), weight.clone()
    with pytest.raises(ValueError, match=match):
        fused_a_gemm(x, weight)
    assert torch.equal(x, x_before) and torch.equal(weight, w_before)


def test_rejects_mixed_devices():
    x = torch.ones(4, 16)
    weight = torch.ones(8, 16, device="meta")
    with pytest.raises(ValueError, match="weight must be on x's device"):
        fused_a_gemm(x, weight)


def test_registry_entry():
    assert registry.load("gemm.fused_a_gemm") is fused_a_gemm
    assert registry.load("gemm.fused_a_gemm", "torch") is fused_a_gemm_ref
