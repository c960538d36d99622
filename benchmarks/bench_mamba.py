"""Benchmark the mamba group on CUDA: the Triton kernels against their torch references.

Run from the repo root: `python benchmarks/bench_mamba.py`. Cases (bf16 activations):
- `causal_conv1d` prefill: 8 packed sequences of a few lengths, dim 2048, width 4, half of them
  continuing from a cached state, SiLU; and decode (one token per sequence) for a few batches.
- `transfer_mamba_states`: copying request slots of a 4-layer [conv, ssm] state pool, device to
  device (forking cached prefixes) and device to pinned host (a backup).
Each case first checks the kernel against the reference (outputs within the bf16 tolerance,
states bit-identical), then prints the median times, the speedup. Without a CUDA device it says
so and exits 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from _kernel_bench import median_ms as _median_ms  # benchmarks/ is sys.path[0] when run

NAME = "bench_mamba"
DTYPE = torch.bfloat16
DIM, WIDTH, CACHE_LINES = 2048, 4, 512
PREFILL_SEQLENS = [64, 512, 2048]  # tokens per sequence, 8 sequences
PREFILL_BATCH = 8
DECODE_BATCHES = [1, 64, 256]
# Mamba state pool: 4 layers; conv [slots, 4096, 3] bf16, ssm [slots, 32, 64, 64] fp32.
STATE_LAYERS, STATE_SLOTS = 4, 256
CONV_SHAPE, SSM_SHAPE = (4096, WIDTH - 1), (32, 64, 64)
STATE_COPIES = [1, 16, 64]


def _conv_cases(device):
    from sglang.kernels.ops.mamba import causal_conv1d, causal_conv1d_ref

    weight = torch.randn(DIM, WIDTH, dtype=DTYPE, device=device) * 0.5
    bias = torch.randn(DIM, dtype=DTYPE, device=device)
    state = torch.randn(CACHE_LINES, DIM, WIDTH - 1, dtype=DTYPE, device=device)
    for seqlen in PREFILL_SEQLENS:
        x = torch.randn(PREFILL_BATCH * seqlen, DIM, dtype=DTYPE, device=device)
        kw = {
            "conv_state": state,
            "query_start_loc": torch.arange(
                PREFILL_BATCH + 1, device=device, dtype=torch.int32
            )
            * seqlen,
            "cache_indices": torch.randperm(CACHE_LINES, device=device)[:PREFILL_BATCH],
            "has_initial_state": torch.arange(PREFILL_BATCH, device=device) % 2 == 0,
            "activation": "silu",
        }
        yield (
            f"conv prefill {PREFILL_BATCH}x{seqlen}",
            (lambda a=(x, weight, bias), k=kw: causal_conv1d(*a, **k)),
            (lambda a=(x, weight, bias), k=kw: causal_conv1d_ref(*a, **k)),
            state,
        )
    for batch in DECODE_BATCHES:
        x = torch.randn(batch, DIM, dtype=DTYPE, device=device)
        kw = {
            "conv_state": state,
            "cache_indices": torch.randperm(CACHE_LINES, device=device)[:batch],
            "activation": "silu",
            "decode": True,
        }
        yield (
            f"conv decode B={batch}",
            (lambda a=(x, weight, bias), k=kw: causal_conv1d(*a, **k)),
            (lambda a=(x, weight, bias), k=kw: causal_conv1d_ref(*a, **k)),
            state,
        )


def _state_pool(device, pinned=False):
    conv = torch.empty(
        (STATE_LAYERS, STATE_SLOTS, *CONV_SHAPE),
        dtype=DTYPE,
        pin_memory=pinned,
        device=device if not pinned else "cpu",
    )
    ssm = torch.empty(
        (STATE_LAYERS, STATE_SLOTS, *SSM_SHAPE),
        dtype=torch.float32,
        pin_memory=pinned,
        device=device if not pinned else "cpu",
    )
    conv.copy_(torch.randn(conv.shape, dtype=DTYPE, device=device))
    ssm.copy_(torch.randn(ssm.shape, device=device))
    return [*conv.unbind(0), *ssm.unbind(0)]


def _transfer_cases(device):
    from sglang.kernels.ops.mamba import (
        transfer_mamba_states,
        transfer_mamba_states_ref,
    )

    pool, host = _state_pool(device), _state_pool(device, pinned=True)
    for n in STATE_COPIES:
        src = torch.randperm(STATE_SLOTS // 2, device=device)[:n]
        dst = src + STATE_SLOTS // 2  # disjoint halves of one pool
        args = (pool, pool, src, dst)
        yield (
            f"states fork d->d n={n}",
            (lambda a=args: transfer_mamba_states(*a)),
            (lambda a=args: transfer_mamba_states_ref(*a)),
            pool,
        )
        args = (pool, host, src, dst.cpu())
        yield (
            f"states backup d->h n={n}",
            (lambda a=args: transfer_mamba_states(*a)),
            (lambda a=args: transfer_mamba_states_ref(*a)),
            host,
        )


def _check(run, run_ref, states) -> None:
    """From one starting point: outputs within the bf16 tolerance, states bit-identical."""
    from sglang.kernels.jit import tolerance

    states = states if isinstance(states, list) else [states]
    start = [t.clone() for t in states]
    ref_out = run_ref()
    want = [t.clone() for t in states]
    for t, s0 in zip(states, start):
        t.copy_(s0)
    out = run()
    if ref_out is not None:
        atol, rtol = tolerance(DTYPE)
        torch.testing.assert_close(out, ref_out, atol=atol, rtol=rtol)
    for got, expected in zip(states, want):
        if not torch.equal(got, expected):
            raise AssertionError("kernel and reference left different states")


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    device = torch.device("cuda")
    print(
        f"\nmamba ({DTYPE}; conv dim {DIM}, width {WIDTH}; states {STATE_LAYERS} layers)"
    )
    print(f"{'case':>28} {'triton ms':>10} {'torch ref ms':>13} {'speedup':>8}")
    for cases in (_conv_cases(device), _transfer_cases(device)):
        for label, run, run_ref, states in cases:
            _check(run, run_ref, states)
            t_triton, t_ref = _median_ms(run), _median_ms(run_ref)
            print(
                f"{label:>28} {t_triton:>10.4f} {t_ref:>13.4f} {t_ref / t_triton:>7.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
