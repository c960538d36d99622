"""How far the runtime `RMSNorm`'s kernel path is from its `forward_native` (upstream's formula), in ulps.

Run from the repo root: `python benchmarks/rmsnorm_ulps.py` (a few seconds on the CPU, through
Triton's interpreter unless a GPU is there). For fp16 and bf16, both rounding modes
(`cast_x_before_out_mul`), with and without a residual, it prints the share of outputs where
`RMSNorm.forward` and `forward_native` differ and the largest difference in ulps, on 64 rows of
4096 with a random weight. On the interpreter, bf16 is compared with `forward_native`'s formula
rounded toward zero, as the interpreter rounds (`sglang.kernels.jit.tolerances`); on a GPU both
round to nearest. The markdown table goes to docs/kernels.md; tests/srt/layers/test_layernorm.py
asserts the bounds. A second table gives the share of outputs where the two rounding orders
themselves differ (what a layer that always used the HF order was off by).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TRITON_INTERPRET", "1")  # before Triton is first imported

import torch  # noqa: E402

from sglang.kernels.jit import round_like_kernel, ulp  # noqa: E402
from sglang.srt.layers.layernorm import RMSNorm  # noqa: E402

ROWS, HIDDEN, EPS = 64, 4096, 1e-6  # a decode batch at Llama-3-8B's width


def _inputs(dtype, device, with_residual):
    gen = torch.Generator().manual_seed(1)
    x = (2 * torch.randn(ROWS, HIDDEN, generator=gen)).to(dtype).to(device)
    residual = (2 * torch.randn(ROWS, HIDDEN, generator=gen)).to(dtype).to(device)
    return x, residual if with_residual else None


def _norm(dtype, device, cast):
    norm = RMSNorm(HIDDEN, EPS, cast_x_before_out_mul=cast, weight_dtype=dtype).to(device)
    with torch.no_grad():
        norm.weight.copy_(1 + 0.5 * torch.randn(HIDDEN, generator=torch.Generator().manual_seed(0)))
    return norm


def _expected(norm, x, residual, cast):
    """forward_native's formula in fp32, rounded the way the kernel's device rounds."""
    s = x.float() + (residual.float() if residual is not None else 0)
    s = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + EPS)
    w = norm.weight.detach().float()
    y = w * round_like_kernel(s, x.dtype).float() if cast else s * w
    return round_like_kernel(y, x.dtype)


def measure(dtype, cast, with_residual, device):
    norm = _norm(dtype, device, cast)
    x, residual = _inputs(dtype, device, with_residual)
    with torch.no_grad():
        out = norm(x.clone(), residual.clone() if residual is not None else None)
    got = (out if residual is None else out[0]).float()
    want = _expected(norm, x, residual, cast).float()
    ulps = (got - want).abs() / ulp(torch.maximum(got.abs(), want.abs()), dtype)
    return (got != want).float().mean().item(), ulps.max().item()


def order_gap(dtype, with_residual, device):
    """Share of `forward_native` outputs where the two rounding orders differ (same data)."""
    x, residual = _inputs(dtype, device, with_residual)
    outs = []
    for cast in (False, True):
        with torch.no_grad():
            out = _norm(dtype, device, cast).forward_native(x, residual)
        outs.append(out if residual is None else out[0])
    return (outs[0] != outs[1]).float().mean().item()


def main() -> int:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"RMSNorm.forward vs forward_native, {ROWS} x {HIDDEN}, on {device}\n")
    print("| dtype | mode | residual | elements that differ | max ulps |")
    print("|---|---|---|---|---|")
    for dtype in (torch.float16, torch.bfloat16):
        for cast in (False, True):
            for with_residual in (False, True):
                share, worst = measure(dtype, cast, with_residual, device)
                mode = "cast_x_before_out_mul" if cast else "default"
                print(f"| {str(dtype).removeprefix('torch.')} | {mode} | {'yes' if with_residual else 'no'} "
                      f"| {100 * share:.3f} % | {worst:.0f} |")
    print("\n| dtype | residual | default order != HF order (forward_native) |")
    print("|---|---|---|")
    for dtype in (torch.float16, torch.bfloat16):
        for with_residual in (False, True):
            gap = order_gap(dtype, with_residual, device)
            print(f"| {str(dtype).removeprefix('torch.')} | {'yes' if with_residual else 'no'} | {100 * gap:.1f} % |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
