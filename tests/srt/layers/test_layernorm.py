"""`sglang.srt.layers.layernorm.RMSNorm`: the kernel-backed forward against `forward_native`."""

import pytest
import torch

from sglang.kernels.jit import tolerance
from sglang.kernels.ops.layernorm import fused_add_rmsnorm_ref, rmsnorm_hf_ref
from sglang.srt.layers.layernorm import RMSNorm

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _norm(hidden, dtype, eps=1e-6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    norm = RMSNorm(hidden, eps=eps, params_dtype=dtype)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.5 * torch.randn(hidden, generator=gen))
    return norm


def _activations(shape, dtype, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return (2 * torch.randn(shape, generator=gen)).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 8), (7, 100), (2, 3, 64)])
def test_forward_matches_native_and_reference(shape, dtype):
    norm = _norm(shape[-1], dtype, eps=1e-5)
    x = _activations(shape, dtype)
    atol, rtol = tolerance(dtype)
    with torch.no_grad():
        out = norm(x)
        native = norm.forward_native(x)
    assert out.shape == shape and out.dtype == dtype
    torch.testing.assert_close(out, native, atol=atol, rtol=rtol)
    torch.testing.assert_close(out, rmsnorm_hf_ref(x, norm.weight, 1e-5), atol=atol, rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_with_residual_updates_in_place(dtype):
    norm = _norm(96, dtype)
    x, residual = _activations((5, 96), dtype), _activations((5, 96), dtype, seed=2)
    x_before, residual_before = x.clone(), residual.clone()
    with torch.no_grad():
        native_x, native_residual = norm.forward_native(x, residual)
        # forward_native leaves its inputs alone...
        assert torch.equal(x, x_before) and torch.equal(residual, residual_before)
        out, new_residual = norm(x, residual)
    # ...the kernel path writes both buffers in place and returns them.
    assert out is x and new_residual is residual
    atol, rtol = tolerance(dtype)
    torch.testing.assert_close(new_residual, native_residual, atol=atol, rtol=rtol)
    torch.testing.assert_close(out, native_x, atol=atol, rtol=rtol)
    ref_x, ref_residual = fused_add_rmsnorm_ref(x_before, residual_before, norm.weight)
    torch.testing.assert_close(out, ref_x, atol=atol, rtol=rtol)
    torch.testing.assert_close(new_residual, ref_residual, atol=atol, rtol=rtol)


def test_weight_is_a_learned_parameter_that_matters():
    norm = _norm(16, torch.float32)
    assert [name for name, _ in norm.named_parameters()] == ["weight"]
    x = _activations((3, 16), torch.float32)
    with torch.no_grad():
        before = norm(x)
        norm.weight.mul_(2)
        after = norm(x)
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(after, 2 * before, atol=atol, rtol=rtol)


def test_bad_residual_is_rejected_before_any_write():
    norm = _norm(32, torch.float32)
    x, residual = _activations((4, 32), torch.float32), _activations((4, 31), torch.float32)
    x_before, residual_before = x.clone(), residual.clone()
    with torch.no_grad(), pytest.raises(ValueError, match="residual"):
        norm(x, residual)
    assert torch.equal(x, x_before) and torch.equal(residual, residual_before)
