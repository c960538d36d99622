"""`sglang.srt.layers.layernorm.RMSNorm`: the kernel-backed forward against `forward_native`."""

import pytest
import torch

from sglang.kernels.jit import assert_close_rounded, round_like_kernel, tolerance
from sglang.kernels.ops.layernorm import fused_add_rmsnorm_ref, rmsnorm_hf_ref
from sglang.srt.layers import layernorm as layernorm_module
from sglang.srt.layers.layernorm import RMSNorm

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _norm(hidden, dtype, eps=1e-6, seed=0, **kwargs):
    gen = torch.Generator().manual_seed(seed)
    norm = RMSNorm(hidden, eps=eps, params_dtype=dtype, **kwargs)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.5 * torch.randn(hidden, generator=gen))
    return norm


def _hf32(x, weight, eps):
    """The kernel's fp32 value before its last cast (the HF rounding done the kernel's way)."""
    x32 = x.float()
    normed = x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + eps)
    return round_like_kernel(normed, x.dtype).float() * weight.float()


def _add32(x, residual, weight, eps, cast):
    s = x.float() + residual.float()
    rstd = torch.rsqrt((s * s).mean(-1, keepdim=True) + eps)
    if cast:
        return round_like_kernel(s * rstd, x.dtype).float() * weight.float()
    return round_like_kernel(s, x.dtype).float() * weight.float() * rstd


def _activations(shape, dtype, seed=1, scale=2.0):
    gen = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(shape, generator=gen)).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 8), (2, 3, 64)])
def test_forward_matches_native_and_reference(shape, dtype):
    norm = _norm(shape[-1], dtype, eps=1e-5)
    x = _activations(shape, dtype)
    with torch.no_grad():
        out = norm(x)
        native = norm.forward_native(x)
    assert out.shape == shape and out.dtype == dtype
    assert_close_rounded(out, _hf32(x, norm.weight.data, 1e-5))
    # forward_native rounds as torch does (to nearest), the interpreter truncates: the table.
    atol, rtol = tolerance(dtype)
    torch.testing.assert_close(out, native, atol=atol, rtol=rtol)
    torch.testing.assert_close(out, rmsnorm_hf_ref(x, norm.weight, 1e-5), atol=atol, rtol=rtol)


@pytest.mark.parametrize("cast", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_with_residual_updates_in_place(dtype, cast):
    norm = _norm(96, dtype, cast_x_before_out_mul=cast)
    x, residual = _activations((5, 96), dtype), _activations((5, 96), dtype, seed=2)
    x_before, residual_before = x.clone(), residual.clone()
    with torch.no_grad():
        native_x, native_residual = norm.forward_native(x, residual)
        # forward_native leaves its inputs alone...
        assert torch.equal(x, x_before) and torch.equal(residual, residual_before)
        out, new_residual = norm(x, residual)
    # ...the kernel path writes both buffers in place and returns them.
    assert out is x and new_residual is residual
    assert_close_rounded(new_residual, x_before.float() + residual_before.float(), ulps=0)
    assert_close_rounded(out, _add32(x_before, residual_before, norm.weight.data, 1e-6, cast))
    atol, rtol = tolerance(dtype)
    torch.testing.assert_close(new_residual, native_residual, atol=atol, rtol=rtol)
    torch.testing.assert_close(out, native_x, atol=atol, rtol=rtol)


@pytest.mark.parametrize("with_residual", [False, True])
def test_eps_and_the_rounding_flag_reach_the_kernel(monkeypatch, with_residual):
    calls = []
    real_hf, real_add = layernorm_module.rmsnorm_hf, layernorm_module.fused_add_rmsnorm
    monkeypatch.setattr(
        layernorm_module, "rmsnorm_hf", lambda *a, **k: calls.append((a, k)) or real_hf(*a, **k)
    )
    monkeypatch.setattr(
        layernorm_module,
        "fused_add_rmsnorm",
        lambda *a, **k: calls.append((a, k)) or real_add(*a, **k),
    )
    norm = _norm(32, torch.float32, eps=0.25, cast_x_before_out_mul=True)
    x = _activations((3, 32), torch.float32, scale=1e-2)  # mean square 1e-4: eps dominates
    residual = _activations((3, 32), torch.float32, seed=3, scale=1e-2)
    with torch.no_grad():
        if with_residual:
            expected, _ = fused_add_rmsnorm_ref(
                x, residual, norm.weight.data, 0.25, cast_x_before_out_mul=True
            )
            out, _ = norm(x, residual)
        else:
            expected = rmsnorm_hf_ref(x, norm.weight.data, 0.25)
            out = norm(x)
    (args, kwargs), = calls
    assert args[3 if with_residual else 2] == 0.25
    if with_residual:
        assert kwargs == {"cast_x_before_out_mul": True}
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)
    assert out.abs().max() < 0.2  # with eps 1e-6 the rows would be normalized to ~1


def test_unsupported_hidden_size_falls_back_to_native_like_upstream(monkeypatch):
    monkeypatch.setattr(layernorm_module, "is_supported_rmsnorm_hf_hidden_size", lambda h: False)
    monkeypatch.setattr(
        layernorm_module, "is_supported_jit_fused_add_rmsnorm_hidden_size", lambda h: False
    )
    monkeypatch.setattr(layernorm_module, "rmsnorm_hf", None)  # would raise if called
    monkeypatch.setattr(layernorm_module, "fused_add_rmsnorm", None)
    norm = _norm(16, torch.bfloat16)
    x, residual = _activations((2, 16), torch.bfloat16), _activations((2, 16), torch.bfloat16, seed=5)
    with torch.no_grad():
        assert torch.equal(norm(x), norm.forward_native(x))
        native_x, native_r = norm.forward_native(x, residual)
        out, new_r = norm(x, residual)
    assert out is x and new_r is residual
    assert torch.equal(out, native_x) and torch.equal(new_r, native_r)


def test_weight_is_a_learned_parameter_that_matters():
    norm = _norm(16, torch.float32)
    assert [name for name, _ in norm.named_parameters()] == ["weight"]
    x = _activations((3, 16), torch.float32)
    with torch.no_grad():
        before = norm(x)
        norm.weight.mul_(2)
        after = norm(x)
    torch.testing.assert_close(after, 2 * before, atol=1e-5, rtol=1e-5)


def test_bad_residual_is_rejected_before_any_write():
    norm = _norm(32, torch.float32)
    x, residual = _activations((4, 32), torch.float32), _activations((4, 31), torch.float32)
    x_before, residual_before = x.clone(), residual.clone()
    with torch.no_grad(), pytest.raises(ValueError, match="residual"):
        norm(x, residual)
    assert torch.equal(x, x_before) and torch.equal(residual, residual_before)
