"""Benchmark the kvcache group on CUDA: the Triton kernels against their torch references.

Run from the repo root: `python benchmarks/bench_kvcache.py`. Cases (bf16, 8 KV heads x 128):
- `store_cache`: one step's new K/V rows into a 64K-slot cache, for a few token counts.
- `store_cache` on an fp8 (`float8_e4m3fn`) cache: the same byte-copy kernel.
- `transfer_hicache_all_layer` (per-layer address tables, built once), load back: pinned host
  pool -> device pool, 16 layers, scattered pages; the backup direction; device -> device.
- `transfer_hicache_one_layer`, load back of one layer.
Each case first checks that both paths write the same bytes, then prints the median times of
the public function (validation included) and of the reference, and the speedup. Without a CUDA
device it says so and exits 0.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from _kernel_bench import median_ms as _median_ms  # benchmarks/ is sys.path[0] when run

NAME = "bench_kvcache"
DTYPE = torch.bfloat16
HEADS, HEAD_DIM = 8, 128
CACHE_SLOTS = 65536
STORE_TOKENS = [1, 256, 4096, 32768]
# HiCache: a 16-layer slice of a model, 16K device slots, 32K host slots, 64-token pages.
LAYERS, DEVICE_SLOTS, HOST_SLOTS, PAGE = 16, 16384, 32768, 64
TRANSFER_TOKENS = [64, 1024, 8192]


def _scattered_pages(n_tokens: int, n_slots: int, device, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    pages = torch.randperm(n_slots // PAGE, generator=g)[: n_tokens // PAGE]
    return (pages[:, None] * PAGE + torch.arange(PAGE)).flatten().to(device)


def _store_cases(device, dtype=None):
    from sglang.kernels.ops.kvcache import store_cache, store_cache_ref

    dtype = dtype or DTYPE
    k_cache = torch.zeros(CACHE_SLOTS, HEADS, HEAD_DIM, dtype=dtype, device=device)
    v_cache = torch.zeros_like(k_cache)
    for tokens in STORE_TOKENS:
        qkv = torch.randn(tokens, 3, HEADS, HEAD_DIM, device=device).to(dtype)
        k, v = (
            qkv[:, 1],
            qkv[:, 2],
        )  # strided slices of a fused projection, as in a model
        loc = torch.randperm(CACHE_SLOTS, device=device)[:tokens]
        args = (k, v, k_cache, v_cache, loc)
        yield (
            f"store_cache {str(dtype).removeprefix('torch.')} T={tokens}",
            (lambda a=args: store_cache(*a)),
            (lambda a=args: store_cache_ref(*a)),
            (k_cache, v_cache),
        )


def _transfer_cases(device, pinned: bool):
    from sglang.kernels.ops.kvcache import (
        layer_pointer_table,
        transfer_hicache_all_layer,
        transfer_hicache_all_layer_ref,
        transfer_hicache_one_layer,
        transfer_hicache_one_layer_ref,
    )

    shape = (LAYERS, DEVICE_SLOTS, HEADS, HEAD_DIM)
    dev_k = torch.randn(shape, dtype=DTYPE, device=device)
    dev_v = torch.randn(shape, dtype=DTYPE, device=device)
    host_shape = (LAYERS, HOST_SLOTS, HEADS, HEAD_DIM)
    host_k, host_v = (torch.empty(host_shape, dtype=DTYPE, pin_memory=pinned) for _ in range(2))
    for t in (host_k, host_v):  # random bytes drawn on the GPU: fast even for 1 GiB
        t.copy_(torch.randn(host_shape, dtype=DTYPE, device=device))
    # The pools' layer address tables, built once as the runtime's pools do.
    tables = {
        name: layer_pointer_table(t, device)
        for name, t in (("dk", dev_k), ("dv", dev_v), ("hk", host_k), ("hv", host_v))
    }
    row = HEADS * HEAD_DIM * dev_k.element_size()
    strides = {"kv_cache_src_stride_bytes": row, "kv_cache_dst_stride_bytes": row}
    for tokens in TRANSFER_TOKENS:
        host_idx = _scattered_pages(tokens, HOST_SLOTS, device, seed=tokens)
        dev_idx = _scattered_pages(tokens, DEVICE_SLOTS, device, seed=tokens + 1)
        dev_src = _scattered_pages(tokens, DEVICE_SLOTS // 2, device, seed=tokens + 2)
        dev_dst = dev_src + DEVICE_SLOTS // 2  # disjoint halves of one pool
        t = tables
        one_layer = {"element_dim": HEADS * HEAD_DIM}
        cases = [
            (
                "all-layer load h->d",
                partial(
                    transfer_hicache_all_layer,
                    t["dk"],
                    t["dv"],
                    dev_idx,
                    t["hk"],
                    t["hv"],
                    host_idx,
                    **strides,
                ),
                partial(transfer_hicache_all_layer_ref, dev_k, dev_v, dev_idx, host_k, host_v, host_idx),
                (dev_k, dev_v),
            ),
            (
                "all-layer backup d->h",
                partial(
                    transfer_hicache_all_layer,
                    t["hk"],
                    t["hv"],
                    host_idx,
                    t["dk"],
                    t["dv"],
                    dev_idx,
                    **strides,
                ),
                partial(transfer_hicache_all_layer_ref, host_k, host_v, host_idx, dev_k, dev_v, dev_idx),
                (host_k, host_v),
            ),
            (
                "all-layer d->d",
                partial(
                    transfer_hicache_all_layer,
                    t["dk"],
                    t["dv"],
                    dev_dst,
                    t["dk"],
                    t["dv"],
                    dev_src,
                    **strides,
                ),
                partial(transfer_hicache_all_layer_ref, dev_k, dev_v, dev_dst, dev_k, dev_v, dev_src),
                (dev_k, dev_v),
            ),
            (
                "one-layer load h->d",
                partial(
                    transfer_hicache_one_layer,
                    dev_k[0],
                    dev_v[0],
                    dev_idx,
                    host_k[0],
                    host_v[0],
                    host_idx,
                    **one_layer,
                ),
                partial(
                    transfer_hicache_one_layer_ref,
                    dev_k[0],
                    dev_v[0],
                    dev_idx,
                    host_k[0],
                    host_v[0],
                    host_idx,
                    **one_layer,
                ),
                (dev_k, dev_v),
            ),
        ]
        for label, run, run_ref, outs in cases:
            yield f"{label} T={tokens}", run, run_ref, outs


def _check(run, run_ref, outs) -> None:
    """Both paths write the same bytes: from one starting point, run each and compare."""
    start = [t.clone() for t in outs]
    run_ref()
    want = [t.clone() for t in outs]
    for t, s0 in zip(outs, start):
        t.copy_(s0)
    run()
    for got, expected in zip(outs, want):
        if not torch.equal(got, expected):
            raise AssertionError("kernel and reference wrote different bytes")


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    device = torch.device("cuda")
    print(f"\nkvcache ({DTYPE}, {HEADS} heads x {HEAD_DIM}; hicache: {LAYERS} layers, pinned host)")
    print(f"{'case':>32} {'triton ms':>10} {'torch ref ms':>13} {'speedup':>8}")
    fp8 = _store_cases(device, torch.float8_e4m3fn)  # byte caches: the same kernel
    for cases in (_store_cases(device), fp8, _transfer_cases(device, pinned=True)):
        for label, run, run_ref, outs in cases:
            _check(run, run_ref, outs)
            t_triton, t_ref = _median_ms(run), _median_ms(run_ref)
            print(f"{label:>32} {t_triton:>10.4f} {t_ref:>13.4f} {t_ref / t_triton:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
