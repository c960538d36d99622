"""Benchmark the mamba group on CUDA: the Triton kernels against their torch references.

Run from the repo root: `python benchmarks/bench_mamba.py`. Cases (bf16 activations):
- `causal_conv1d` prefill: 8 packed sequences of a few lengths, dim 2048, width 4, half of them
  continuing from a cached state, SiLU; and `fused_causal_conv1d_update_decode` (one token per
  sequence, the conv and the cache shift in one launch) for a few batches.
- `transfer_kv_mamba_lf_pf` / `_pf_lf`: backing up request slots of a 4-layer SSM state pool
  into a page-first pinned host pool (every layer in one launch, through the layers' address
  table), and loading one layer back.
Each case first checks the kernel against the reference (outputs within the bf16 tolerance,
states bit-identical), then prints the median times, the speedup. Without a CUDA device it says
so and exits 0.
"""

from __future__ import annotations

import sys
from functools import partial
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
    from sglang.kernels.ops.mamba import (
        causal_conv1d,
        causal_conv1d_ref,
        fused_causal_conv1d_update_decode,
        fused_causal_conv1d_update_decode_ref,
    )
    from sglang.srt.models.inkling_common.kernels.sconv import (
        decode_sconv_metadata,
        extend_sconv_metadata,
    )

    weight = torch.randn(DIM, WIDTH, dtype=DTYPE, device=device) * 0.5
    cache = torch.randn(CACHE_LINES, WIDTH - 1, DIM, dtype=DTYPE, device=device)
    for seqlen in PREFILL_SEQLENS:
        x = torch.randn(PREFILL_BATCH * seqlen, DIM, dtype=DTYPE, device=device)
        meta = extend_sconv_metadata(
            torch.arange(PREFILL_BATCH + 1, device=device, dtype=torch.int32) * seqlen,
            torch.randperm(CACHE_LINES, device=device)[:PREFILL_BATCH],
            torch.arange(PREFILL_BATCH, device=device) % 2 == 0,
            x.shape[0],
        )
        args = (x, weight, cache, meta["cache_mask"], meta["safe_idx"], meta["cu"], meta["si"], "silu")
        yield (
            f"conv prefill {PREFILL_BATCH}x{seqlen}",
            partial(causal_conv1d, *args),
            partial(causal_conv1d_ref, *args),
            cache,
        )
    for batch in DECODE_BATCHES:
        x = torch.randn(batch, DIM, dtype=DTYPE, device=device)
        meta = decode_sconv_metadata(torch.randperm(CACHE_LINES, device=device)[:batch])
        args = (x, weight, cache, meta["cache_indices"], meta["cache_mask"], "silu")
        yield (
            f"conv decode B={batch}",
            partial(fused_causal_conv1d_update_decode, *args),
            partial(fused_causal_conv1d_update_decode_ref, *args),
            cache,
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
    from sglang.kernels.ops.kvcache import layer_pointer_table
    from sglang.kernels.ops.mamba import (
        transfer_kv_mamba_lf_pf,
        transfer_kv_mamba_lf_pf_ref,
        transfer_kv_mamba_pf_lf,
        transfer_kv_mamba_pf_lf_ref,
    )

    # Device: layer-first per-layer SSM states; host: page-first [slots, layers, ...], pinned.
    layers = _state_pool(device)[STATE_LAYERS:]
    item = layers[0][0].numel() * layers[0].element_size()
    host = torch.empty(
        (STATE_SLOTS, STATE_LAYERS, *layers[0].shape[1:]), dtype=layers[0].dtype, pin_memory=True
    )
    host.copy_(torch.randn(host.shape, device=device).to(host.dtype))
    table = layer_pointer_table(layers, device)
    for n in STATE_COPIES:
        dev_idx = torch.randperm(STATE_SLOTS, device=device)[:n]
        host_idx = torch.randperm(STATE_SLOTS, device=device)[:n]
        backup = (dev_idx, host_idx, item, item * STATE_LAYERS, STATE_LAYERS)
        yield (
            f"ssm backup d->h n={n}",
            partial(transfer_kv_mamba_lf_pf, table, host, *backup),
            partial(transfer_kv_mamba_lf_pf_ref, layers, host, *backup),
            host,
        )
        load = (host_idx, dev_idx, 1, item, item * STATE_LAYERS)
        yield (
            f"ssm load h->d layer 1 n={n}",
            partial(transfer_kv_mamba_pf_lf, host, layers[1], *load),
            partial(transfer_kv_mamba_pf_lf_ref, host, layers[1], *load),
            layers[1],
        )


def _check(run, run_ref, states) -> None:
    """From one starting point: outputs within one bf16 ulp (rounding-aware), states bit-identical."""
    from sglang.kernels.jit import assert_close_rounded

    states = states if isinstance(states, list) else [states]
    start = [t.clone() for t in states]
    ref_out = run_ref()
    want = [t.clone() for t in states]
    for t, s0 in zip(states, start):
        t.copy_(s0)
    out = run()
    if ref_out is not None:
        assert_close_rounded(out, ref_out.float(), ulps=2)  # both rounded once from fp32
    for got, expected in zip(states, want):
        if not torch.equal(got, expected):
            raise AssertionError("kernel and reference left different states")


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    device = torch.device("cuda")
    print(f"\nmamba ({DTYPE}; conv dim {DIM}, width {WIDTH}; states {STATE_LAYERS} layers)")
    print(f"{'case':>28} {'triton ms':>10} {'torch ref ms':>13} {'speedup':>8}")
    for cases in (_conv_cases(device), _transfer_cases(device)):
        for label, run, run_ref, states in cases:
            _check(run, run_ref, states)
            t_triton, t_ref = _median_ms(run), _median_ms(run_ref)
            print(f"{label:>28} {t_triton:>10.4f} {t_ref:>13.4f} {t_ref / t_triton:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
