"""The rounding-aware comparison: it models the interpreter's bf16 truncation and is one ulp tight."""

import pytest
import torch
import triton
import triton.language as tl

from sglang.kernels.jit import (
    assert_close_rounded,
    kernel_rounding,
    round_like_kernel,
    tolerance,
    ulp,
)


@triton.jit
def _cast_kernel(
    y_ptr,  # [n] fp16/bf16
    x_ptr,  # [n] fp32
    n,  # elements
    BLOCK_SIZE: tl.constexpr,  # next power of two >= n
):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets, mask=mask).to(y_ptr.dtype.element_ty), mask=mask)


def _kernel_cast(x32, dtype):
    y = torch.empty(x32.shape, dtype=dtype)
    _cast_kernel[(triton.cdiv(x32.numel(), 1024),)](y, x32, x32.numel(), BLOCK_SIZE=1024)
    return y


def _values(n=4096):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, generator=gen) * torch.logspace(-3, 3, n)
    # No fp32 subnormals: the interpreter's bf16 conversion mangles them (1e-40 -> 1.01e-39),
    # and no kernel here produces them from normal inputs.
    return torch.cat([x, torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 1.2e-38, 3e38])])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_round_like_kernel_is_bit_exact_with_the_interpreter(dtype):
    x = _values()
    assert torch.equal(
        round_like_kernel(x, dtype).view(torch.int16), _kernel_cast(x, dtype).view(torch.int16)
    )


def test_interpreter_truncates_bf16_where_torch_rounds_to_nearest():
    # The fact the helper exists for: if a Triton upgrade fixes it, kernel_rounding must change.
    x = _values()
    assert kernel_rounding(x.device) == "rtz"
    kernel = _kernel_cast(x, torch.bfloat16)
    assert not torch.equal(kernel, x.to(torch.bfloat16))
    assert kernel_rounding("cuda") == "rtne"


def test_one_ulp_passes_two_ulps_fail():
    x = _values(256)[:256]
    expected = round_like_kernel(x, torch.bfloat16).float()
    one_up = expected + ulp(expected, torch.bfloat16)
    assert_close_rounded(one_up.to(torch.bfloat16), x)
    two_up = expected + 2 * ulp(expected, torch.bfloat16)
    with pytest.raises(AssertionError, match="more than 1 ulp"):
        assert_close_rounded(two_up.to(torch.bfloat16), x)


def test_torch_rounding_is_what_a_loose_tolerance_hid():
    # Rounding the expected value by torch instead of the kernel's way is off by one ulp on about
    # half the values: the old bf16 atol of 2e-2 accepted that, the exact check does not.
    x = _values(1024)[:1024]
    kernel = _kernel_cast(x, torch.bfloat16)
    atol, rtol = tolerance(torch.bfloat16)
    torch.testing.assert_close(kernel, x.to(torch.bfloat16), atol=atol, rtol=rtol)
    assert_close_rounded(kernel, x, ulps=0)
    with pytest.raises(AssertionError):
        assert_close_rounded(kernel, round_like_kernel(x, torch.bfloat16, "cuda").float(), ulps=0)


def test_zero_expected_needs_exact_zero():
    got = torch.tensor([0.0, 1e-3], dtype=torch.bfloat16)
    with pytest.raises(AssertionError, match="1 of 2"):
        assert_close_rounded(got, torch.zeros(2))


def test_fp32_uses_the_table_and_shapes_must_match():
    assert_close_rounded(torch.ones(3), torch.ones(3) + 1e-7)
    with pytest.raises(AssertionError, match="shape"):
        assert_close_rounded(torch.ones(3), torch.ones(4))
