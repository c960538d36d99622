"""Per-dtype comparison tolerances: the one place tests (and benchmarks) take them from.

Values are what `torch.testing.assert_close` uses by default for each dtype, widened for
reductions: a Triton kernel accumulates in fp32 in another order than torch does, and bf16
keeps only 8 bits of mantissa (one ulp at 1.0 is 2**-7 = 0.0078).
"""

from __future__ import annotations

__all__ = ["TOLERANCES", "tolerance"]

# dtype name -> (atol, rtol)
TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1.3e-6 * 10),  # torch default rtol, x10 for reduction order
    "float16": (1e-3, 1e-3),  # torch default for fp16
    "bfloat16": (2e-2, 1.6e-2),  # two bf16 ulps at 1.0 (torch default rtol is 1.6e-2)
}


def tolerance(dtype) -> tuple[float, float]:
    """(atol, rtol) for a torch dtype or its name (`torch.bfloat16` or "bfloat16")."""
    name = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
    try:
        return TOLERANCES[name]
    except KeyError:
        raise ValueError(f"no tolerance defined for dtype {name!r}") from None
