"""Benchmark the speculative group on CUDA: the Triton kernels against their torch references.

Run from the repo root: `python benchmarks/bench_speculative.py`. Prints, per size, the median
time of the Triton entry point and of the pure-torch reference, and the speedup. Both entry
points check their index ranges on the device first (one sync each), and that is timed too.
Without a CUDA device it says so and exits 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from _kernel_bench import median_ms as _median_ms  # benchmarks/ is sys.path[0] when run

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NAME = "bench_speculative"
# Batch sizes of token ids: a decode batch, a large decode batch, a prefill chunk.
RESOLVE_SIZES = [64, 1024, 16384]
# (T tokens, B sequences): embedding table of 2**20 rows of 1024 bf16 columns, trigrams.
NGRAM_SIZES = [(64, 64), (2048, 16), (16384, 8)]
NGRAM_ROWS, NGRAM_DIM, NGRAM_N = 2**20, 1024, 3


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    from sglang.kernels.ops.speculative import (
        ngram_embedding,
        ngram_embedding_ref,
        resolve_future_token_ids,
        resolve_future_token_ids_ref,
    )

    print(f"{'op':>26} {'size':>12} {'triton ms':>10} {'torch ms':>9} {'speedup':>8}")
    future_map = torch.randint(0, 150_000, (65536,), device="cuda")
    for n in RESOLVE_SIZES:
        ids = torch.where(
            torch.rand(n, device="cuda") < 0.5,
            -torch.randint(1, 65536, (n,), device="cuda"),
            torch.randint(0, 150_000, (n,), device="cuda"),
        )
        work = ids.clone()
        # The Triton call resolves `work` in place; reset it each time so every run has work.
        t_triton = _median_ms(
            lambda w=work, i=ids: resolve_future_token_ids(w.copy_(i), future_map)
        )
        t_torch = _median_ms(
            lambda w=work, i=ids: w.copy_(resolve_future_token_ids_ref(i, future_map))
        )
        print(
            f"{'resolve_future_token_ids':>26} {n:>12} {t_triton:>10.4f} {t_torch:>9.4f} "
            f"{t_torch / t_triton:>7.2f}x"
        )

    weight = torch.randn(NGRAM_ROWS, NGRAM_DIM, device="cuda", dtype=torch.bfloat16)
    for tokens, seqs in NGRAM_SIZES:
        ids = torch.randint(0, 150_000, (tokens,), device="cuda")
        qsl = torch.arange(0, tokens + 1, tokens // seqs, device="cuda", dtype=torch.int32)
        t_triton = _median_ms(
            lambda i=ids, q=qsl: ngram_embedding(i, weight, NGRAM_N, query_start_loc=q)
        )
        t_torch = _median_ms(
            lambda i=ids, q=qsl: ngram_embedding_ref(i, weight, NGRAM_N, query_start_loc=q)
        )
        print(
            f"{'ngram_embedding':>26} {f'{tokens}/{seqs}':>12} {t_triton:>10.4f} "
            f"{t_torch:>9.4f} {t_torch / t_triton:>7.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
