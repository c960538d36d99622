"""Benchmark the speculative group on CUDA: the Triton kernels against their torch references.

Run from the repo root: `python benchmarks/bench_speculative.py`. Prints, per size, the median
time of the Triton entry point and of the pure-torch reference, and the speedup. Both entry
points are graph-safe (no host sync).
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
# Batch sizes: a decode batch, a large decode batch, a prefill chunk split over 8 requests.
DECODE_BATCHES = [64, 1024]
PREFILL = (16384, 8)
# Longcat-Flash-style n-gram embedding: n up to 3 (2 configurations of n), k = 4 hashes each.
NE_N, NE_K, MAX_CONTEXT = 3, 4, 8192


def _config(device):
    g = torch.Generator(device="cpu").manual_seed(0)
    weights = torch.randint(1, 2**31 - 1, (NE_N - 1, NE_K, NE_N), generator=g, dtype=torch.int32)
    mods = torch.randint(2**20, 2**31 - 1, (NE_N - 1, NE_K), generator=g, dtype=torch.int32)
    sums = torch.zeros((NE_N - 1) * NE_K, dtype=torch.int32)
    return weights.to(device), mods.to(device), sums.to(device)


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    from sglang.kernels.ops.speculative import (
        compute_n_gram_ids,
        compute_n_gram_ids_decode,
        compute_n_gram_ids_decode_ref,
        compute_n_gram_ids_ref,
    )

    weights, mods, sums = _config("cuda")
    print(f"{'op':>26} {'size':>12} {'triton ms':>10} {'torch ms':>9} {'speedup':>8}")
    for batch in DECODE_BATCHES:
        table = torch.randint(0, 150_000, (batch, MAX_CONTEXT), device="cuda", dtype=torch.int32)
        rows = torch.arange(batch, device="cuda")
        cols = torch.randint(0, MAX_CONTEXT, (batch,), device="cuda", dtype=torch.int32)
        out = torch.empty(batch, (NE_N - 1) * NE_K, device="cuda", dtype=torch.int32)
        args = (NE_N, NE_K, weights, mods, sums, table, rows, cols, out, 2)
        t_triton = _median_ms(lambda a=args: compute_n_gram_ids_decode(*a))
        t_torch = _median_ms(lambda a=args: compute_n_gram_ids_decode_ref(*a))
        print(f"{'compute_n_gram_ids_decode':>26} {batch:>12} {t_triton:>10.4f} {t_torch:>9.4f} "
              f"{t_torch / t_triton:>7.2f}x")
    tokens, reqs = PREFILL
    table = torch.randint(0, 150_000, (reqs, MAX_CONTEXT), device="cuda", dtype=torch.int32)
    rows = torch.arange(reqs, device="cuda")
    cols = torch.zeros(reqs, device="cuda", dtype=torch.int32)
    starts = torch.arange(0, tokens + 1, tokens // reqs, device="cuda", dtype=torch.int32)
    ids = torch.zeros(tokens, device="cuda", dtype=torch.int32)
    out = torch.empty(tokens, (NE_N - 1) * NE_K, device="cuda", dtype=torch.int32)
    args = (NE_N, NE_K, weights, mods, sums, ids, starts, table, rows, cols, out, 2)
    t_triton = _median_ms(lambda: compute_n_gram_ids(*args))
    t_torch = _median_ms(lambda: compute_n_gram_ids_ref(*args))
    print(f"{'compute_n_gram_ids':>26} {f'{tokens}/{reqs}':>12} {t_triton:>10.4f} {t_torch:>9.4f} "
          f"{t_torch / t_triton:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
