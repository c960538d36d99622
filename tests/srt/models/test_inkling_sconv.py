"""The runtime sconv dispatch: reference fallback off CUDA, lazy kernel import on the CUDA branch."""

from types import SimpleNamespace

import pytest
import torch

from sglang.kernels.jit import tolerance
from sglang.kernels.ops.mamba import causal_conv1d_ref
from sglang.kernels.ops.mamba import inkling_sconv as kernel_module
from sglang.srt.models.inkling_common.kernels import sconv


class _CallSpy:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.fixture
def kernel_spy(monkeypatch):
    spy = _CallSpy(kernel_module.causal_conv1d)
    monkeypatch.setattr(kernel_module, "causal_conv1d", spy)
    return spy


def _inputs(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(9, 12, generator=g).to(dtype)
    weight = (torch.randn(12, 4, generator=g) * 0.5).to(dtype)
    state = torch.randn(3, 12, 3, generator=g).to(dtype)
    kw = {
        "query_start_loc": torch.tensor([0, 4, 9]),
        "cache_indices": torch.tensor([2, 0]),
        "has_initial_state": torch.tensor([True, False]),
        "activation": "silu",
    }
    return x, weight, state, kw


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_falls_back_to_the_reference(kernel_spy, dtype):
    x, weight, state, kw = _inputs(dtype)
    ref_state = state.clone()
    out = sconv.causal_conv1d(x, weight, conv_state=state, **kw)
    ref = causal_conv1d_ref(x, weight, conv_state=ref_state, **kw)
    assert torch.equal(out, ref) and torch.equal(state, ref_state)
    assert kernel_spy.calls == 0


def test_cuda_branch_imports_the_kernel_lazily(monkeypatch, kernel_spy):
    assert not hasattr(sconv, "_causal_conv1d_cuda")  # not imported at module level
    monkeypatch.setattr(sconv, "_use_cuda_kernel", lambda x, decode: True)
    x, weight, state, kw = _inputs(torch.bfloat16)
    ref_state = state.clone()
    out = sconv.causal_conv1d(x, weight, conv_state=state, **kw)
    assert (
        kernel_spy.calls == 1
    )  # the in-function import resolved the kernel module's entry point
    ref = causal_conv1d_ref(x, weight, conv_state=ref_state, **kw)
    atol, rtol = tolerance(torch.bfloat16)
    torch.testing.assert_close(out, ref, atol=atol, rtol=rtol)
    assert torch.equal(state, ref_state)


def test_decode_never_takes_the_kernel_branch(kernel_spy):
    x, weight, state, _ = _inputs(torch.bfloat16)
    sconv.causal_conv1d(
        x[:2], weight, conv_state=state, cache_indices=torch.tensor([1, 2]), decode=True
    )
    assert kernel_spy.calls == 0


@pytest.mark.parametrize(
    "is_cuda, dtype, decode, expected",
    [
        (True, torch.bfloat16, False, True),
        (True, torch.bfloat16, True, False),
        (True, torch.float16, False, False),
        (False, torch.bfloat16, False, False),
    ],
)
def test_device_check(is_cuda, dtype, decode, expected):
    fake = SimpleNamespace(is_cuda=is_cuda, dtype=dtype)
    assert sconv._use_cuda_kernel(fake, decode) is expected
