"""Benchmark the communication group on CUDA: `fused_parallel_qknorm` against its torch reference.

Run from the repo root: `python benchmarks/bench_communication.py`. One process, world size 1
(`torch.distributed` not initialized), so no all-reduce runs: this measures the two kernels (local
sum of squares, then normalize) at the per-rank widths of MiniMax-M2's q/k (6144 / 1024 in full)
under tensor-parallel sizes 1 and 8, against the pure-torch reference. It checks the outputs
against the reference first and prints the median times, the speedup and the occupancy the
kernel layer reports for each width. Without a CUDA device it says so and exits 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from _kernel_bench import median_ms as _median_ms  # benchmarks/ is sys.path[0] when run

NAME = "bench_communication"
DTYPE = torch.bfloat16
# Full q/k widths of MiniMax-M2 (48 heads x 128 for q, 8 x 128 for k), and the TP sizes sharded.
Q_DIM, K_DIM = 6144, 1024
TP_SIZES = [1, 8]
TOKENS = [1, 64, 1024, 8192]


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    from sglang.kernels.jit import tolerance
    from sglang.kernels.ops.communication import (
        TorchCommunicator,
        fused_parallel_qknorm,
        fused_parallel_qknorm_ref,
        get_fused_parallel_qknorm_max_occupancy,
    )

    comm = TorchCommunicator()  # world size 1: a shard's width as a TP rank sees it

    atol, rtol = tolerance(DTYPE)
    print(f"\nfused_parallel_qknorm ({DTYPE}, world size 1: the two kernels, no all-reduce)")
    print(
        f"{'tokens x q x k':>18} {'occupancy':>10} {'triton ms':>10} {'torch ref ms':>13} "
        f"{'speedup':>8}"
    )
    for tp in TP_SIZES:
        q_cols, k_cols = Q_DIM // tp, K_DIM // tp
        occupancy = get_fused_parallel_qknorm_max_occupancy(DTYPE, tp, Q_DIM, K_DIM)
        for tokens in TOKENS:
            q = torch.randn(tokens, q_cols, device="cuda", dtype=DTYPE)
            k = torch.randn(tokens, k_cols, device="cuda", dtype=DTYPE)
            qw = 1 + 0.1 * torch.randn(q_cols, device="cuda", dtype=DTYPE)
            kw = 1 + 0.1 * torch.randn(k_cols, device="cuda", dtype=DTYPE)
            got, want = (q.clone(), k.clone()), (q.clone(), k.clone())
            fused_parallel_qknorm(comm, *got, qw, kw)
            fused_parallel_qknorm_ref(comm, *want, qw, kw)
            for a, b in zip(got, want):
                torch.testing.assert_close(a, b, atol=atol, rtol=rtol)
            # In place: each timed call normalizes the previous output again (same cost).
            t_triton = _median_ms(fused_parallel_qknorm, comm, q, k, qw, kw)
            t_ref = _median_ms(fused_parallel_qknorm_ref, comm, q, k, qw, kw)
            label = f"{tokens}x{q_cols}x{k_cols}"
            print(
                f"{label:>18} {occupancy:>10} {t_triton:>10.4f} {t_ref:>13.4f} "
                f"{t_ref / t_triton:>7.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
