"""Benchmark the layernorm group on CUDA: the Triton kernels against their torch references.

Run from the repo root: `python benchmarks/bench_layernorm.py`. For `rmsnorm_hf`, `fused_eh_norm`
and `fused_add_rmsnorm` it first checks the Triton output against the reference (the shared
rounding-aware check: one bf16 ulp), then prints per shape the median time of the Triton entry point and of the
pure-torch reference (what `registry.load(id, "torch")` returns) and the speedup. Without a CUDA
device it says so and exits 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from _kernel_bench import median_ms as _median_ms  # benchmarks/ is sys.path[0] when run

NAME = "bench_layernorm"
DTYPE = torch.bfloat16
# (tokens, hidden): decode batches and a prefill chunk at Llama-3-8B's and DeepSeek-V3's widths.
SHAPES = [(1, 4096), (64, 4096), (1024, 4096), (8192, 4096), (64, 7168), (4096, 7168)]


def _print_table(title: str, rows: list[tuple[str, float, float]]) -> None:
    print(f"\n{title}")
    print(f"{'tokens x hidden':>16} {'triton ms':>10} {'torch ref ms':>13} {'speedup':>8}")
    for shape, t_triton, t_ref in rows:
        print(f"{shape:>16} {t_triton:>10.4f} {t_ref:>13.4f} {t_ref / t_triton:>7.2f}x")


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    from sglang.kernels.jit import assert_close_rounded
    from sglang.kernels.ops.layernorm import (
        fused_add_rmsnorm,
        fused_add_rmsnorm_ref,
        fused_eh_norm,
        fused_eh_norm_ref,
        rmsnorm_hf,
        rmsnorm_hf_ref,
    )

    eps = 1e-6
    rms_rows, eh_rows, add_rows = [], [], []
    for tokens, hidden in SHAPES:
        label = f"{tokens}x{hidden}"
        x = torch.randn(tokens, hidden, device="cuda", dtype=DTYPE)
        h = torch.randn(tokens, hidden, device="cuda", dtype=DTYPE)
        w = 1 + 0.1 * torch.randn(hidden, device="cuda", dtype=DTYPE)
        w2 = 1 + 0.1 * torch.randn(hidden, device="cuda", dtype=DTYPE)

        # Two roundings in a row (HF's) can differ by an ulp each from the reference's order.
        assert_close_rounded(rmsnorm_hf(x, w, eps), rmsnorm_hf_ref(x, w, eps).float(), ulps=2)
        rms_rows.append((label, _median_ms(rmsnorm_hf, x, w), _median_ms(rmsnorm_hf_ref, x, w)))

        assert_close_rounded(
            fused_eh_norm(x, h, w, w2, eps), fused_eh_norm_ref(x, h, w, w2, eps).float()
        )
        eh_rows.append(
            (
                label,
                _median_ms(fused_eh_norm, x, h, w, w2, eps),
                _median_ms(fused_eh_norm_ref, x, h, w, w2, eps),
            )
        )

        expected_x, expected_r = fused_add_rmsnorm_ref(x, h, w)
        got_x, got_r = x.clone(), h.clone()
        fused_add_rmsnorm(got_x, got_r, w)  # in place, returns None (upstream's contract)
        assert_close_rounded(got_r, expected_r.float(), ulps=0)
        assert_close_rounded(got_x, expected_x.float(), ulps=2)
        # The Triton entry point updates its buffers in place: time it on copies, repeatedly
        # normalizing the same buffers (the values stay finite; the work per call is the same).
        x_buf, r_buf = x.clone(), h.clone()
        add_rows.append(
            (
                label,
                _median_ms(fused_add_rmsnorm, x_buf, r_buf, w),
                _median_ms(fused_add_rmsnorm_ref, x, h, w),
            )
        )

    _print_table(f"rmsnorm_hf ({DTYPE})", rms_rows)
    _print_table(f"fused_eh_norm ({DTYPE}, output tokens x 2*hidden)", eh_rows)
    _print_table(f"fused_add_rmsnorm ({DTYPE}, in place)", add_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
