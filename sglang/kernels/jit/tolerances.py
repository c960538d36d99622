"""Per-dtype comparison tolerances and the rounding-aware check: the one place tests (and benchmarks) take them from.

Two ways to compare a kernel's output with an expected value:

- `tolerance(dtype)` -> `(atol, rtol)` for `torch.testing.assert_close`: torch's per-dtype
  defaults, widened for reductions. Loose in bf16 (two ulps at 1.0), so use it only where the
  expected value cannot be computed with the kernel's rounding.
- `assert_close_rounded(actual, expected32)`: `expected32` is the fp32 value the kernel computes
  before its final cast (with the kernel's intermediate casts done by `round_like_kernel`); it
  is rounded to `actual.dtype` exactly as the kernel rounds on `actual`'s device, and every
  element must then lie within `ulps` (default 1) ulp of it. The one ulp is what a different
  fp32 summation order can move a value across a rounding boundary; anything a wrong formula
  does (a dropped eps, a dropped rounding step, a swapped stride) is far larger.

Why the rounding depends on the device: Triton 3.9's CPU interpreter (`TRITON_INTERPRET=1`,
how the tests run) converts fp32 -> bf16 by dropping the low 16 bits (round toward zero,
`_convert_float(..., rounding_mode=None)` in `triton/runtime/interpreter.py`; it ignores
`fp_downcast_rounding` for this pair), while the GPU rounds to nearest even. Measured on 4096
standard-normal values: 49 % of the interpreter's bf16 stores differ from `x.to(torch.bfloat16)`.
fp32 -> fp16 goes through numpy's `astype` and rounds to nearest even on both. So an expected
value rounded by torch (`.to(torch.bfloat16)`) is one ulp off half the time on the interpreter;
`round_like_kernel` rounds it the kernel's way instead, and the tolerance stays at one ulp.
(The interpreter also mangles fp32 subnormals in that conversion, 1e-40 -> 1.01e-39; the
helper does not model that, and no test input produces them.)

Also seen in the interpreter: bf16 * bf16 on loaded values multiplies the raw uint16 words
(garbage); every kernel here upcasts to fp32 before arithmetic, as it must on the GPU anyway.
"""

from __future__ import annotations

__all__ = [
    "ROUNDED_ULPS",
    "TOLERANCES",
    "assert_close_rounded",
    "kernel_rounding",
    "round_like_kernel",
    "tolerance",
    "ulp",
]

# dtype name -> (atol, rtol)
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1.3e-6 * 10),  # torch default rtol, x10 for reduction order
    "float16": (1e-3, 1e-3),  # torch default for fp16
    "bfloat16": (2e-2, 1.6e-2),  # two bf16 ulps at 1.0 (torch default rtol is 1.6e-2)
}

# dtype name -> ulps `assert_close_rounded` allows after rounding the expected value the
# kernel's way: one, for a summation order that moves a value across a rounding boundary.
# fp32 outputs are not rounded after the fp32 math, so they are compared with TOLERANCES.
ROUNDED_ULPS: dict[str, int] = {"float16": 1, "bfloat16": 1}

# Explicit mantissa bits of the dtypes the rounding-aware check knows.
_MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23}


def _name(dtype) -> str:
    return dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")


def tolerance(dtype) -> tuple[float, float]:
    """(atol, rtol) for a torch dtype or its name (`torch.bfloat16` or "bfloat16")."""
    name = _name(dtype)
    try:
        return TOLERANCES[name]
    except KeyError:
        raise ValueError(f"no tolerance defined for dtype {name!r}") from None


def kernel_rounding(device) -> str:
    """How a Triton kernel on `device` rounds fp32 -> bf16: "rtz" (interpreter) or "rtne" (GPU)."""
    from sglang.kernels.jit.device import interpreter_enabled

    device_type = device if isinstance(device, str) else device.type
    if device_type.split(":")[0] == "cpu" and interpreter_enabled():
        return "rtz"
    return "rtne"


def round_like_kernel(x, dtype, device=None):
    """`x` cast to `dtype` the way a Triton kernel on `device` (default: `x`'s) casts its fp32 values.

    For bf16 under the interpreter that is round toward zero (the low 16 bits of the fp32 word
    dropped; NaN and inf kept); otherwise torch's round-to-nearest-even cast.
    """
    import torch

    x32 = x.to(torch.float32)
    if dtype == torch.bfloat16 and kernel_rounding(device or x.device) == "rtz":
        truncated = (x32.contiguous().view(torch.int32) & ~0xFFFF).view(torch.float32)
        x32 = torch.where(torch.isnan(x32), x32, truncated.view(x32.shape))
    return x32.to(dtype)


def ulp(x, dtype):
    """fp32 tensor: the spacing of `dtype` at each |x| (at least the spacing of its smallest normal)."""
    import torch

    bits = _MANTISSA_BITS.get(_name(dtype))
    if bits is None:
        raise ValueError(f"no ulp defined for dtype {_name(dtype)!r}")
    info = torch.finfo(dtype)
    mag = x.to(torch.float32).abs().clamp(min=info.tiny)
    _, exponent = torch.frexp(mag)  # mag = m * 2**exponent, m in [0.5, 1)
    return torch.ldexp(torch.ones_like(mag), (exponent - 1 - bits).to(torch.int32))


def assert_close_rounded(actual, expected32, *, ulps: int | None = None, atol: float = 0.0, msg: str = ""):
    """Assert `actual` (fp16/bf16) equals `expected32` rounded like the kernel, within `ulps` ulp.

    `expected32` is the kernel's value before its final cast (fp32, computed with the kernel's
    intermediate roundings via `round_like_kernel`). `atol` is for results that are a small
    difference of large terms (cancellation), where an ulp of the result means nothing; 0 by
    default. fp32 `actual` is compared with `torch.testing.assert_close` and `TOLERANCES`.
    """
    import torch

    if actual.shape != expected32.shape:
        raise AssertionError(f"{msg}shape {tuple(actual.shape)} != expected {tuple(expected32.shape)}")
    name = _name(actual.dtype)
    if name == "float32":
        a, r = tolerance(torch.float32)
        torch.testing.assert_close(
            actual, expected32.to(torch.float32), atol=max(a, atol), rtol=r, msg=msg or None
        )
        return
    if name not in ROUNDED_ULPS:
        raise ValueError(f"assert_close_rounded: no rounding-aware check for dtype {name!r}")
    n_ulps = ROUNDED_ULPS[name] if ulps is None else ulps
    expected = round_like_kernel(expected32, actual.dtype, actual.device).to(torch.float32)
    got = actual.to(torch.float32)
    both_nan = torch.isnan(got) & torch.isnan(expected)
    same = (got == expected) | both_nan
    err = (got - expected).abs()
    allowed = n_ulps * ulp(torch.maximum(got.abs(), expected.abs()), actual.dtype) + atol
    bad = ~same & ~(err <= allowed)
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(
            f"{msg}{int(bad.sum())} of {bad.numel()} {name} elements are more than {n_ulps} ulp"
            f"{f' + {atol}' if atol else ''} from the expected value rounded "
            f"{kernel_rounding(actual.device)}; first at {idx}: got {got[idx].item()!r}, "
            f"expected {expected[idx].item()!r} (fp32 {expected32[idx].item()!r})"
        )
