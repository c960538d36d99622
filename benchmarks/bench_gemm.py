"""Benchmark the gemm group on CUDA: the Triton kernels against their torch references.

Run from the repo root: `python benchmarks/bench_gemm.py`. Prints, per shape, the median time of
the Triton entry point, of the pure-torch reference (fp32 upcast, what `registry.load(id,
"torch")` returns) and of a plain cuBLAS `x @ weight.T` in the input dtype, with the speedup of
Triton over the reference. Without a CUDA device it says so and exits 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from _kernel_bench import median_ms as _median_ms  # benchmarks/ is sys.path[0] when run

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NAME = "bench_gemm"
# (M, N, K): decode batches of the DeepSeek-V3 fused A projection (N = 1536 + 576, K = 7168),
# then a prefill-sized M.
FUSED_A_SHAPES = [(1, 2112, 7168), (8, 2112, 7168), (16, 2112, 7168), (128, 2112, 7168)]
# (M, N, K): MoE routers (gpt-oss: 32 and 128 experts of K = 2880; DeepSeek-V3: 256 of 7168).
TINY_SHAPES = [(1, 32, 2880), (64, 128, 2880), (16, 256, 7168), (1024, 256, 7168)]


def _print_table(title: str, rows: list[tuple[str, float, float, float]]) -> None:
    print(f"\n{title}")
    print(f"{'shape':>22} {'triton ms':>10} {'torch ref ms':>13} {'cuBLAS ms':>10} {'speedup':>8}")
    for shape, t_triton, t_ref, t_cublas in rows:
        speedup = t_ref / t_triton
        print(f"{shape:>22} {t_triton:>10.4f} {t_ref:>13.4f} {t_cublas:>10.4f} {speedup:>7.2f}x")


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    from sglang.kernels.ops.gemm import (
        dsv3_fused_a_gemm,
        dsv3_fused_a_gemm_ref,
        tiny_n_gemm_bf16,
        tiny_n_gemm_bf16_ref,
    )

    dtype = torch.bfloat16
    rows = []
    for m, n, k in FUSED_A_SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        w = torch.randn(n, k, device="cuda", dtype=dtype) / k**0.5
        rows.append(
            (
                f"{m}x{n}x{k}",
                _median_ms(lambda x=x, w=w: dsv3_fused_a_gemm(x, w.T)),
                _median_ms(lambda x=x, w=w: dsv3_fused_a_gemm_ref(x, w.T)),
                _median_ms(lambda x=x, w=w: x @ w.T),
            )
        )
    _print_table("dsv3_fused_a_gemm (bf16, M x N x K)", rows)

    rows = []
    for m, n, k in TINY_SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        w = torch.randn(n, k, device="cuda", dtype=dtype) / k**0.5
        rows.append(
            (
                f"{m}x{n}x{k}",
                _median_ms(lambda x=x, w=w, m=m: tiny_n_gemm_bf16(x, w, max_m=m)),
                _median_ms(lambda x=x, w=w: tiny_n_gemm_bf16_ref(x, w)),
                _median_ms(lambda x=x, w=w: torch.nn.functional.linear(x, w)),
            )
        )
    _print_table("tiny_n_gemm_bf16 (bf16, M x N x K)", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
