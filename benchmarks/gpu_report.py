"""One GPU report over every kernel operator: correctness, then speed against the alternatives.

Run from the repo root on a machine with a CUDA device: `python benchmarks/gpu_report.py`
(`--group gemm` for one group, `--markdown FILE` to also write the table, `--json FILE` for the
raw rows). For each operator case, at shapes taken from real models (Llama-3-8B/70B,
DeepSeek-V3, MiniMax-M2):

1. correctness: the Triton entry point against the operator's torch reference on the device
   (the registry's `torch` backend), compared exactly or rounding-aware (one ulp after the
   device's rounding, `sglang.kernels.jit.assert_close_rounded`), before anything is timed;
2. speed: the median time (`triton.testing.do_bench`) of the Triton entry point, of the torch
   reference, and of "upstream-shaped eager code" -- what upstream runs when its fused kernel is
   off (cuBLAS for the GEMMs, the HF / `forward_native` torch code for the norms, index copies
   for the caches); for decode-sized cases also the Triton call captured in a CUDA graph and
   replayed (what a decode step pays once launch overhead is gone);
3. throughput: GB/s of the bytes each case must move (memory-bound operators) or TFLOP/s
   (GEMMs), and the percentage of the device's peak, read from `PEAKS` by the device's name.

Without a CUDA device it says so and exits 0. `--cpu-smoke` builds every case at its tiny
smoke shape on the CPU and runs only the correctness step (through Triton's interpreter when
`TRITON_INTERPRET=1`): the test suite does that, so the script's argument builders are checked
without a GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NAME = "gpu_report"

# Device name substring -> (HBM bandwidth GB/s, dense bf16 tensor-core TFLOP/s), from the vendors'
# data sheets (SXM parts unless named). First match wins, so the more specific names come first.
PEAKS: list[tuple[str, float, float]] = [
    ("H200", 4800.0, 989.0),
    ("H100 PCIe", 2000.0, 756.0),
    ("H100 NVL", 3900.0, 835.0),
    ("H100", 3350.0, 989.0),
    ("H800", 3350.0, 989.0),
    ("H20", 4000.0, 148.0),
    ("GH200", 4000.0, 989.0),
    ("B200", 8000.0, 2250.0),
    ("A100-SXM4-80GB", 2039.0, 312.0),
    ("A100 80GB PCIe", 1935.0, 312.0),
    ("A100", 1555.0, 312.0),
    ("A800", 2039.0, 312.0),
    ("L40S", 864.0, 362.0),
    ("L40", 864.0, 181.0),
    ("L4", 300.0, 121.0),
    ("A10", 600.0, 125.0),
    ("RTX 4090", 1008.0, 165.0),
]


def peaks_for(device_name: str) -> tuple[float, float] | None:
    """(GB/s, TFLOP/s) of the first `PEAKS` entry whose name occurs in `device_name`."""
    for key, gbps, tflops in PEAKS:
        if key.lower() in device_name.lower():
            return gbps, tflops
    return None


@dataclass
class Run:
    """One built case: callables over tensors already on the device, and what they move."""

    triton: Callable[[], object]
    reference: Callable[[], object]
    check: Callable[[], None]  # raises AssertionError when the Triton result is wrong
    bytes_moved: int = 0
    flops: int = 0
    eager: Callable[[], object] | None = None  # upstream-shaped eager code, where it differs


@dataclass
class Case:
    op_id: str  # the registry id
    label: str  # model and shape
    build: Callable[[str], Run]
    decode: bool = False  # decode-sized: also timed as a CUDA-graph replay
    smoke: Callable[[str], Run] | None = None  # a tiny shape for --cpu-smoke
    tags: dict = field(default_factory=dict)


def _nbytes(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _rounded(got, want32, two_step=False):
    """One ulp after the device's rounding. On the CPU smoke run the interpreter rounds
    intermediate bf16 values toward zero where a torch reference rounds to nearest, so an output
    rounded twice (HF's norm, the residual add) takes the loose per-dtype tolerance there."""
    from sglang.kernels.jit import assert_close_rounded, tolerance

    if two_step and got.device.type == "cpu":
        import torch

        atol, rtol = tolerance(got.dtype)
        torch.testing.assert_close(got.float(), want32.float(), atol=atol, rtol=rtol)
        return
    assert_close_rounded(got, want32)


# ----------------------------------------------------------------------------- the cases


def _gemm_case(op_id, label, m, n, k, decode):
    def build(device, m=m, n=n, k=k):
        import torch

        from sglang.kernels import registry

        g = torch.Generator(device="cpu").manual_seed(0)
        x = torch.randn(m, k, generator=g).to(device, torch.bfloat16)
        w = (torch.randn(n, k, generator=g) / k**0.5).to(device, torch.bfloat16)
        fn, ref = registry.load(op_id), registry.load(op_id, "torch")
        if op_id == "gemm.dsv3_fused_a_gemm":
            args, kwargs = (x, w.T), {}  # upstream passes weight.T (column-major [K, N])
        else:
            args, kwargs = (x, w), {"max_m": max(m, 16)}

        def check():
            _rounded(fn(*args, **kwargs), (x.double() @ w.double().T).float())

        return Run(lambda: fn(*args, **kwargs), lambda: ref(*args, **kwargs), check,
                   bytes_moved=_nbytes(x, w) + m * n * 2, flops=2 * m * n * k,
                   eager=lambda: torch.nn.functional.linear(x, w))

    small = (3, 40, 70) if op_id != "gemm.dsv3_fused_a_gemm" else (3, 48, 256)
    return Case(op_id, label, build, decode, smoke=lambda d: build(d, *small))


def _quant_case(label, tokens, hidden, out_dtype_name, ue8m0):
    def build(device, tokens=tokens, hidden=hidden):
        import torch

        from sglang.kernels.ops.quantization import per_token_group_quant, per_token_group_quant_ref

        out_dtype = getattr(torch, out_dtype_name)
        x = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
        kw = dict(group_size=128, out_dtype=out_dtype, scale_ue8m0=ue8m0)

        def check():
            got, want = per_token_group_quant(x, **kw), per_token_group_quant_ref(x, **kw)
            for a, b in zip(got, want):
                a8 = a.view(torch.uint8) if a.dtype == torch.float8_e4m3fn else a
                b8 = b.view(torch.uint8) if b.dtype == torch.float8_e4m3fn else b
                # The GPU's fp32 multiply may differ from the reference by a rounding at a
                # code boundary; allow one code step on at most 0.1 % of the codes.
                mismatch = (a8.int() - b8.int()).abs()
                assert int(mismatch.max()) <= 1 and float((mismatch > 0).float().mean()) <= 1e-3

        return Run(lambda: per_token_group_quant(x, **kw), lambda: per_token_group_quant_ref(x, **kw),
                   check, bytes_moved=_nbytes(x) + tokens * hidden + tokens * hidden // 128 * 4)

    return Case("quantization.per_token_group_quant", label, build, tokens <= 64,
                smoke=lambda d: build(d, 5, 256))


def _rmsnorm_case(label, tokens, hidden):
    def build(device, tokens=tokens, hidden=hidden):
        import torch

        from sglang.kernels.ops.layernorm import rmsnorm_hf, rmsnorm_hf_ref

        x = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
        w = (1 + 0.1 * torch.randn(hidden, device=device)).to(torch.bfloat16)

        def hf_eager():  # transformers' LlamaRMSNorm.forward
            h = x.to(torch.float32)
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
            return w * h.to(torch.bfloat16)

        def check():
            _rounded(rmsnorm_hf(x, w), rmsnorm_hf_ref(x, w).float(), two_step=True)

        return Run(lambda: rmsnorm_hf(x, w), lambda: rmsnorm_hf_ref(x, w), check,
                   bytes_moved=2 * _nbytes(x) + _nbytes(w), eager=hf_eager)

    return Case("layernorm.rmsnorm_hf", label, build, tokens <= 64, smoke=lambda d: build(d, 3, 96))


def _add_rmsnorm_case(label, tokens, hidden):
    def build(device, tokens=tokens, hidden=hidden):
        import torch

        from sglang.kernels.ops.layernorm import fused_add_rmsnorm, fused_add_rmsnorm_ref

        x = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
        r = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
        w = (1 + 0.1 * torch.randn(hidden, device=device)).to(torch.bfloat16)
        work_x, work_r = x.clone(), r.clone()

        def triton_call():
            work_x.copy_(x)
            work_r.copy_(r)
            fused_add_rmsnorm(work_x, work_r, w)

        def native():  # upstream RMSNorm.forward_native with a residual
            h = x.to(torch.float32) + r.to(torch.float32)
            res = h.to(torch.bfloat16)
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
            return (h * w.to(torch.float32)).to(torch.bfloat16), res

        def check():
            triton_call()
            normed, residual = fused_add_rmsnorm_ref(x, r, w)
            _rounded(work_r, residual.float(), two_step=True)
            _rounded(work_x, normed.float(), two_step=True)

        return Run(triton_call, lambda: fused_add_rmsnorm_ref(x, r, w), check,
                   bytes_moved=4 * _nbytes(x) + _nbytes(w), eager=native)

    return Case("layernorm.fused_add_rmsnorm", label, build, tokens <= 64,
                smoke=lambda d: build(d, 3, 96))


def _eh_norm_case(label, tokens, hidden):
    def build(device, tokens=tokens, hidden=hidden):
        import torch

        from sglang.kernels.ops.layernorm import fused_eh_norm, fused_eh_norm_ref

        e = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
        h = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
        we = (1 + 0.1 * torch.randn(hidden, device=device)).to(torch.bfloat16)
        wh = (1 + 0.1 * torch.randn(hidden, device=device)).to(torch.bfloat16)
        args = (e, h, we, wh, 1e-6)

        def check():
            _rounded(fused_eh_norm(*args), fused_eh_norm_ref(*args).float())

        return Run(lambda: fused_eh_norm(*args), lambda: fused_eh_norm_ref(*args), check,
                   bytes_moved=4 * _nbytes(e) + 2 * _nbytes(we))

    return Case("layernorm.fused_eh_norm", label, build, tokens <= 64, smoke=lambda d: build(d, 3, 96))


def _store_cache_case(label, tokens, heads, head_dim, slots):
    def build(device, tokens=tokens, heads=heads, head_dim=head_dim, slots=slots):
        import torch

        from sglang.kernels.ops.kvcache import store_cache, store_cache_ref

        k = torch.randn(tokens, heads, head_dim, device=device).to(torch.bfloat16)
        v = torch.randn(tokens, heads, head_dim, device=device).to(torch.bfloat16)
        kc = torch.zeros(slots, heads, head_dim, device=device, dtype=torch.bfloat16)
        vc = torch.zeros_like(kc)
        idx = torch.randperm(slots - 1, device=device)[:tokens] + 1  # slot 0 is reserved
        kc2, vc2 = kc.clone(), vc.clone()

        def eager():  # upstream's torch fallback: two index copies
            kc2[idx] = k
            vc2[idx] = v

        def check():
            store_cache(k, v, kc, vc, idx)
            want_k, want_v = kc.clone().zero_(), vc.clone().zero_()
            store_cache_ref(k, v, want_k, want_v, idx)
            assert torch.equal(kc, want_k) and torch.equal(vc, want_v)

        return Run(lambda: store_cache(k, v, kc, vc, idx),
                   lambda: store_cache_ref(k, v, kc, vc, idx), check,
                   bytes_moved=2 * (2 * _nbytes(k)) + _nbytes(idx), eager=eager)

    return Case("kvcache.store_cache", label, build, tokens <= 64,
                smoke=lambda d: build(d, 5, 2, 16, 32))


def _hicache_case(label, tokens, heads, head_dim, slots):
    def build(device, tokens=tokens, heads=heads, head_dim=head_dim, slots=slots):
        import torch

        from sglang.kernels.ops.kvcache import transfer_hicache_one_layer, transfer_hicache_one_layer_ref

        host = "cpu"
        pin = device != "cpu"
        src_k = torch.randn(slots, heads, head_dim, device=device).to(torch.bfloat16)
        src_v = torch.randn_like(src_k)
        dst_k = torch.zeros(slots, heads, head_dim, dtype=torch.bfloat16, device=host,
                            pin_memory=pin)
        dst_v = torch.zeros_like(dst_k, pin_memory=pin) if pin else torch.zeros_like(dst_k)
        i_src = torch.randperm(slots, device=device)[:tokens]
        i_dst = torch.randperm(slots, device=device)[:tokens]
        args = (dst_k, dst_v, i_dst, src_k, src_v, i_src)

        def check():
            transfer_hicache_one_layer(*args)
            want_k, want_v = torch.zeros_like(dst_k), torch.zeros_like(dst_v)
            transfer_hicache_one_layer_ref(want_k, want_v, i_dst, src_k, src_v, i_src)
            assert torch.equal(dst_k, want_k) and torch.equal(dst_v, want_v)

        def eager():  # device gather, one copy to the host, host scatter
            dst_k[i_dst.cpu()] = src_k[i_src].cpu()
            dst_v[i_dst.cpu()] = src_v[i_src].cpu()

        return Run(lambda: transfer_hicache_one_layer(*args),
                   lambda: transfer_hicache_one_layer_ref(*args), check,
                   bytes_moved=2 * 2 * tokens * heads * head_dim * 2, eager=eager)

    return Case("kvcache.transfer_hicache_one_layer", label, build, False,
                smoke=lambda d: build(d, 5, 2, 16, 32))


def _ngram_case(label, batch, decode):
    def build(device, batch=batch):
        import torch

        from sglang.kernels.ops.speculative import (
            compute_n_gram_ids,
            compute_n_gram_ids_decode,
            compute_n_gram_ids_decode_ref,
            compute_n_gram_ids_ref,
        )

        ne_n, ne_k, ctx = 3, 4, 8192 if device != "cpu" else 64
        g = torch.Generator(device="cpu").manual_seed(0)
        w = torch.randint(1, 2**31 - 1, (ne_n - 1, ne_k, ne_n), generator=g, dtype=torch.int32)
        mods = torch.randint(2**20, 2**31 - 1, (ne_n - 1, ne_k), generator=g, dtype=torch.int32)
        w, mods = w.to(device), mods.to(device)
        sums = torch.zeros((ne_n - 1) * ne_k, dtype=torch.int32, device=device)
        table = torch.randint(0, 150_000, (batch, ctx), dtype=torch.int32, device=device)
        rows = torch.arange(batch, device=device)
        if decode:
            cols = torch.randint(0, ctx, (batch,), dtype=torch.int32, device=device)
            out = torch.empty(batch, (ne_n - 1) * ne_k, dtype=torch.int32, device=device)
            args = (ne_n, ne_k, w, mods, sums, table, rows, cols, out, 2)
            fn, ref = compute_n_gram_ids_decode, compute_n_gram_ids_decode_ref
            n_tokens = batch
        else:
            per = ctx // 2
            cols = torch.zeros(batch, dtype=torch.int32, device=device)
            starts = torch.arange(0, batch * per + 1, per, dtype=torch.int32, device=device)
            n_tokens = batch * per
            ids = torch.zeros(n_tokens, dtype=torch.int32, device=device)
            out = torch.empty(n_tokens, (ne_n - 1) * ne_k, dtype=torch.int32, device=device)
            args = (ne_n, ne_k, w, mods, sums, ids, starts, table, rows, cols, out, 2)
            fn, ref = compute_n_gram_ids, compute_n_gram_ids_ref

        def check():
            fn(*args)
            got = out.clone()
            ref(*args)
            assert torch.equal(got, out)

        return Run(lambda: fn(*args), lambda: ref(*args), check,
                   bytes_moved=n_tokens * (ne_n * 4 + (ne_n - 1) * ne_k * 4))

    op = "speculative.compute_n_gram_ids_decode" if decode else "speculative.compute_n_gram_ids"
    return Case(op, label, build, decode, smoke=lambda d: build(d, 3))


def _token_table_case(label, batch):
    def build(device, batch=batch):
        import torch

        from sglang.kernels.ops.speculative import update_token_table_decode, update_token_table_decode_ref

        ctx = 8192 if device != "cpu" else 64
        table = torch.zeros(batch, ctx, dtype=torch.int32, device=device)
        rows = torch.randperm(batch, device=device)
        cols = torch.randint(0, ctx, (batch,), dtype=torch.int32, device=device)
        tokens = torch.randint(0, 150_000, (batch,), dtype=torch.int32, device=device)
        args = (tokens, table, rows, cols)

        def check():
            update_token_table_decode(*args)
            want = torch.zeros_like(table)
            update_token_table_decode_ref(tokens, want, rows, cols)
            assert torch.equal(table, want)

        def eager():  # one advanced-index store
            table[rows, cols.long()] = tokens

        return Run(lambda: update_token_table_decode(*args),
                   lambda: update_token_table_decode_ref(*args), check,
                   bytes_moved=batch * (4 + 4 + 8 + 4), eager=eager)

    return Case("speculative.update_token_table_decode", label, build, True,
                smoke=lambda d: build(d, 5))


def _sconv_decode_case(label, batch, dim, width):
    def build(device, batch=batch, dim=dim, width=width):
        import torch

        from sglang.kernels.ops.mamba import (
            fused_causal_conv1d_update_decode,
            fused_causal_conv1d_update_decode_ref,
        )

        slots = 2 * batch
        x = torch.randn(batch, dim, device=device).to(torch.bfloat16)
        w = (torch.randn(dim, width, device=device) / width).to(torch.bfloat16)
        cache = torch.randn(slots, width - 1, dim, device=device).to(torch.bfloat16)
        ci = torch.randperm(slots, device=device)[:batch]
        mask = torch.ones(batch, dtype=torch.bool, device=device)
        args = (x, w, cache, ci, mask, "silu", True)
        work = cache.clone()

        def check():
            got_cache, want_cache = cache.clone(), cache.clone()
            got = fused_causal_conv1d_update_decode(x, w, got_cache, ci, mask, "silu", True)
            want = fused_causal_conv1d_update_decode_ref(x, w, want_cache, ci, mask, "silu", True)
            _rounded(got, want.float())
            assert torch.equal(got_cache, want_cache)

        return Run(lambda: fused_causal_conv1d_update_decode(x, w, work, ci, mask, "silu", True),
                   lambda: fused_causal_conv1d_update_decode_ref(*args), check,
                   bytes_moved=2 * _nbytes(x) + 2 * batch * (width - 1) * dim * 2 + _nbytes(w))

    return Case("mamba.fused_causal_conv1d_update_decode", label, build, True,
                smoke=lambda d: build(d, 3, 40, 4))


def _sconv_prefill_case(label, seqs, seq_len, dim, width):
    def build(device, seqs=seqs, seq_len=seq_len, dim=dim, width=width):
        import torch

        from sglang.kernels.ops.mamba import causal_conv1d, causal_conv1d_ref

        n_tokens, slots = seqs * seq_len, 2 * seqs
        x = torch.randn(n_tokens, dim, device=device).to(torch.bfloat16)
        w = (torch.randn(dim, width, device=device) / width).to(torch.bfloat16)
        cache = torch.randn(slots, width - 1, dim, device=device).to(torch.bfloat16)
        mask = (torch.arange(seqs, device=device) % 2 == 0).view(seqs, 1, 1)  # half continue
        safe_idx = torch.randperm(slots, device=device)[:seqs]
        cu = torch.arange(0, n_tokens + 1, seq_len, device=device)
        si = torch.arange(seqs, device=device, dtype=torch.int32).repeat_interleave(seq_len)
        args = (x, w, cache, mask, safe_idx, cu, si, "silu", True, False)

        def check():
            _rounded(causal_conv1d(*args), causal_conv1d_ref(*args).float())

        return Run(lambda: causal_conv1d(*args), lambda: causal_conv1d_ref(*args), check,
                   bytes_moved=2 * _nbytes(x) + _nbytes(w) + seqs * (width - 1) * dim * 2)

    return Case("mamba.causal_conv1d", label, build, False, smoke=lambda d: build(d, 3, 5, 40, 4))


def _hicache_all_layer_case(label, layers, tokens, heads, head_dim, slots):
    def build(device, layers=layers, tokens=tokens, heads=heads, head_dim=head_dim, slots=slots):
        import torch

        from sglang.kernels.ops.kvcache import (
            layer_pointer_table,
            transfer_hicache_all_layer,
            transfer_hicache_all_layer_ref,
        )

        row = heads * head_dim
        pin = device != "cpu"
        dev_k = torch.randn(layers, slots, row, device=device).to(torch.bfloat16)
        dev_v = torch.randn(layers, slots, row, device=device).to(torch.bfloat16)
        host_k = torch.zeros(layers, slots, row, dtype=torch.bfloat16, pin_memory=pin)
        host_v = torch.zeros(layers, slots, row, dtype=torch.bfloat16, pin_memory=pin)
        tables = [layer_pointer_table(t, device=device) for t in (host_k, host_v, dev_k, dev_v)]
        src = torch.randperm(slots, device=device)[:tokens]
        dst = torch.randperm(slots, device=device)[:tokens]
        stride = row * 2
        kw = dict(kv_cache_src_stride_bytes=stride, kv_cache_dst_stride_bytes=stride,
                  element_size=stride)

        def run():
            transfer_hicache_all_layer(tables[0], tables[1], dst, tables[2], tables[3], src, **kw)

        def ref():
            transfer_hicache_all_layer_ref(host_k, host_v, dst, dev_k, dev_v, src)

        def check():
            run()
            want_k, want_v = torch.zeros_like(host_k), torch.zeros_like(host_v)
            transfer_hicache_all_layer_ref(want_k, want_v, dst, dev_k, dev_v, src)
            assert torch.equal(host_k, want_k) and torch.equal(host_v, want_v)

        return Run(run, ref, check, bytes_moved=2 * 2 * layers * tokens * stride)

    return Case("kvcache.transfer_hicache_all_layer", label, build, False,
                smoke=lambda d: build(d, 3, 5, 2, 8, 16))


def _mamba_transfer_case(label, op, slots, layers, state_shape, n_items):
    """Mamba state pages between a device pool (a tensor per layer) and a page-first host pool."""

    def build(device, slots=slots, layers=layers, state_shape=state_shape, n_items=n_items):
        import torch

        from sglang.kernels.ops.kvcache import layer_pointer_table
        from sglang.kernels.ops.mamba import (
            transfer_kv_mamba_lf_pf,
            transfer_kv_mamba_lf_pf_ref,
            transfer_kv_mamba_pf_lf,
            transfer_kv_mamba_pf_lf_ref,
        )

        pin = device != "cpu"
        dev_layers = [torch.randn(slots, *state_shape, device=device).to(torch.bfloat16)
                      for _ in range(layers)]
        host = torch.randn(slots, layers, *state_shape).to(torch.bfloat16)
        host = host.pin_memory() if pin else host
        item = dev_layers[0][0].numel() * 2
        dev_idx = torch.randperm(slots, device=device)[:n_items]
        host_idx = torch.randperm(slots, device=device)[:n_items]
        if op == "mamba.transfer_kv_mamba_lf_pf":  # back every layer up into host pages
            table = layer_pointer_table(dev_layers)
            args = (table, host, dev_idx, host_idx, item, item * layers, layers)

            def run():
                transfer_kv_mamba_lf_pf(*args)

            def ref():
                transfer_kv_mamba_lf_pf_ref(dev_layers, host, dev_idx, host_idx, item, item * layers,
                                            layers)

            def check():
                got, want = host.clone(), host.clone()
                transfer_kv_mamba_lf_pf(table, got, dev_idx, host_idx, item, item * layers, layers)
                transfer_kv_mamba_lf_pf_ref(dev_layers, want, dev_idx, host_idx, item,
                                            item * layers, layers)
                assert torch.equal(got, want)

            moved = 2 * n_items * item * layers
        else:  # load one layer's items from host pages
            dst = dev_layers[1]
            args = (host, dst, host_idx, dev_idx, 1, item, item * layers)

            def run():
                transfer_kv_mamba_pf_lf(*args)

            def ref():
                transfer_kv_mamba_pf_lf_ref(*args)

            def check():
                got, want = dst.clone(), dst.clone()
                transfer_kv_mamba_pf_lf(host, got, host_idx, dev_idx, 1, item, item * layers)
                transfer_kv_mamba_pf_lf_ref(host, want, host_idx, dev_idx, 1, item, item * layers)
                assert torch.equal(got, want)

            moved = 2 * n_items * item
        return Run(run, ref, check, bytes_moved=moved)

    return Case(op, label, build, False, smoke=lambda d: build(d, 8, 3, (2, 5), 3))


def _sconv_cache_case(label, seqs, seq_len, dim, width):
    def build(device, seqs=seqs, seq_len=seq_len, dim=dim, width=width):
        import torch

        from sglang.kernels.ops.mamba import update_sconv_cache, update_sconv_cache_ref

        n_tokens, slots = seqs * seq_len, 2 * seqs
        x = torch.randn(n_tokens, dim, device=device).to(torch.bfloat16)
        cache = torch.randn(slots, width - 1, dim, device=device).to(torch.bfloat16)
        ci = torch.randperm(slots, device=device)[:seqs]
        has_init = torch.arange(seqs, device=device) % 2 == 0
        qsl = torch.arange(0, n_tokens + 1, seq_len, device=device, dtype=torch.int32)
        work = cache.clone()

        def check():
            got, want = cache.clone(), cache.clone()
            update_sconv_cache(x, got, ci, has_init, qsl)
            update_sconv_cache_ref(x, want, ci, has_init, qsl)
            assert torch.equal(got, want)

        return Run(lambda: update_sconv_cache(x, work, ci, has_init, qsl),
                   lambda: update_sconv_cache_ref(x, work, ci, has_init, qsl), check,
                   bytes_moved=2 * seqs * (width - 1) * dim * 2 * 2)

    return Case("mamba.update_sconv_cache", label, build, False, smoke=lambda d: build(d, 3, 5, 40, 4))


def _token_table_prefill_case(label, reqs, per_req):
    def build(device, reqs=reqs, per_req=per_req):
        import torch

        from sglang.kernels.ops.speculative import update_token_table, update_token_table_ref

        ctx = 2 * per_req
        table = torch.zeros(reqs, ctx, dtype=torch.int32, device=device)
        rows = torch.randperm(reqs, device=device)
        cols = torch.zeros(reqs, dtype=torch.int32, device=device)
        lens = torch.full((reqs,), per_req, dtype=torch.int32, device=device)
        tokens = torch.randint(0, 150_000, (reqs * per_req,), dtype=torch.int32, device=device)
        ignore = tokens[:4].clone()
        args = (tokens, table, rows, cols, lens, ignore)

        def check():
            got, want = table.clone(), table.clone()
            update_token_table(tokens, got, rows, cols, lens, ignore)
            update_token_table_ref(tokens, want, rows, cols, lens, ignore)
            assert torch.equal(got, want)

        return Run(lambda: update_token_table(*args), lambda: update_token_table_ref(*args), check,
                   bytes_moved=2 * _nbytes(tokens))

    return Case("speculative.update_token_table", label, build, False, smoke=lambda d: build(d, 3, 5))


def _qknorm_case(label, tokens, q_dim, k_dim, tp):
    def build(device, tokens=tokens, q_dim=q_dim, k_dim=k_dim):
        import torch

        from sglang.kernels.ops.communication import (
            TorchCommunicator,
            fused_parallel_qknorm,
            fused_parallel_qknorm_ref,
        )

        comm = TorchCommunicator()  # one rank's shard; the all-reduce itself is not timed
        q = torch.randn(tokens, q_dim // tp, device=device).to(torch.bfloat16)
        k = torch.randn(tokens, k_dim // tp, device=device).to(torch.bfloat16)
        qw = (1 + 0.1 * torch.randn(q.shape[1], device=device)).to(torch.bfloat16)
        kw = (1 + 0.1 * torch.randn(k.shape[1], device=device)).to(torch.bfloat16)

        def check():
            got, want = (q.clone(), k.clone()), (q.clone(), k.clone())
            fused_parallel_qknorm(comm, *got, qw, kw)
            fused_parallel_qknorm_ref(comm, *want, qw, kw)
            for a, b in zip(got, want):
                _rounded(a, b.float())

        def eager():  # upstream's MiniMaxM2RMSNormTP, per tensor
            for x, wt in ((q, qw), (k, kw)):
                x32 = x.float()
                var = x32.pow(2).mean(-1, keepdim=True)
                (x32 * torch.rsqrt(var + 1e-6) * wt).to(x.dtype)

        return Run(lambda: fused_parallel_qknorm(comm, q, k, qw, kw),
                   lambda: fused_parallel_qknorm_ref(comm, q, k, qw, kw), check,
                   bytes_moved=2 * (_nbytes(q) + _nbytes(k)) + _nbytes(qw, kw), eager=eager)

    return Case("communication.fused_parallel_qknorm", label, build, tokens <= 64,
                smoke=lambda d: build(d, 3, 64, 16))


def cases() -> list[Case]:
    """Every case, grouped by operator; shapes from the named models' configs."""
    out = [
        # DeepSeek-V3 fused q_a / kv_a projection: K = 7168, N = 1536 + 512 + 64.
        *[_gemm_case("gemm.dsv3_fused_a_gemm", f"DeepSeek-V3 fused A, M={m}", m, 2112, 7168, True)
          for m in (1, 4, 16)],
        # Routers / small projections: DeepSeek-V3 (256 experts of 7168), Llama-3-70B-sized K.
        _gemm_case("gemm.tiny_n_gemm_bf16", "DeepSeek-V3 router, M=16", 16, 256, 7168, True),
        _gemm_case("gemm.tiny_n_gemm_bf16", "Llama-3-70B K, N=64, M=8", 8, 64, 8192, True),
        _gemm_case("gemm.tiny_k_gemm_bf16", "small K=256, N=1536, M=16", 16, 1536, 256, True),
        _quant_case("DeepSeek-V3 7168, 16 tokens, fp8", 16, 7168, "float8_e4m3fn", False),
        _quant_case("DeepSeek-V3 7168, 4096 tokens, fp8", 4096, 7168, "float8_e4m3fn", False),
        _quant_case("DeepSeek-V3 7168, 4096 tokens, fp8 ue8m0", 4096, 7168, "float8_e4m3fn", True),
        _quant_case("Llama-3-8B 14336, 4096 tokens, int8", 4096, 14336, "int8", False),
        _rmsnorm_case("Llama-3-8B 4096, 32 tokens", 32, 4096),
        _rmsnorm_case("Llama-3-70B 8192, 4096 tokens", 4096, 8192),
        _add_rmsnorm_case("Llama-3-8B 4096, 32 tokens", 32, 4096),
        _add_rmsnorm_case("Llama-3-70B 8192, 4096 tokens", 4096, 8192),
        _eh_norm_case("DeepSeek-V3 MTP 7168, 16 tokens", 16, 7168),
        _store_cache_case("Llama-3-8B 8 kv heads x 128, 64 tokens", 64, 8, 128, 65536),
        _store_cache_case("Llama-3-70B 8 kv heads x 128, 8192 tokens", 8192, 8, 128, 65536),
        _hicache_case("Llama-3-8B layer, 4096 tokens to host", 4096, 8, 128, 65536),
        _hicache_all_layer_case("Llama-3-8B 32 layers, 1024 tokens to host", 32, 1024, 8, 128, 16384),
        _ngram_case("n-gram ids decode, batch 256", 256, True),
        _ngram_case("n-gram ids prefill, 4 x 4096 tokens", 4, False),
        _token_table_case("n-gram token table decode, batch 256", 256),
        # Inkling's short conv (W = 4) at decode, over a Llama-3-8B-wide hidden state.
        _sconv_decode_case("sconv decode W=4, 4096 channels, batch 64", 64, 4096, 4),
        _sconv_prefill_case("sconv prefill W=4, 4096 channels, 8 x 1024 tokens", 8, 1024, 4096, 4),
        _sconv_cache_case("sconv cache update W=4, 4096 channels, 8 x 1024 tokens", 8, 1024, 4096, 4),
        # Mamba2-style state (conv [4096, 3] bf16) of 48 layers, 64 requests paged to the host.
        _mamba_transfer_case("mamba state backup, 48 layers x 64 items", "mamba.transfer_kv_mamba_lf_pf",
                             256, 48, (4096, 3), 64),
        _mamba_transfer_case("mamba state load, 1 layer x 64 items", "mamba.transfer_kv_mamba_pf_lf",
                             256, 48, (4096, 3), 64),
        _token_table_prefill_case("n-gram token table prefill, 8 x 2048 tokens", 8, 2048),
        # MiniMax-M2: 48 q heads and 8 kv heads of 128, TP 8 shards.
        _qknorm_case("MiniMax-M2 TP8 shard, 32 tokens", 32, 6144, 1024, 8),
        _qknorm_case("MiniMax-M2 TP8 shard, 8192 tokens", 8192, 6144, 1024, 8),
    ]
    return out


# ----------------------------------------------------------------------------- measuring


def _graph_ms(fn) -> float:
    import torch
    import triton.testing

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm up: compile and autotune outside the capture
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return triton.testing.do_bench(graph.replay, return_mode="median")


def measure(case: Case, peaks) -> dict:
    import triton.testing

    from sglang.kernels import registry

    row = {"op": case.op_id, "case": case.label, "registered": case.op_id in registry.REGISTRY}
    run = case.build("cuda")
    try:
        run.check()
        row["check"] = "ok"
    except AssertionError as exc:
        row["check"] = f"FAILED: {str(exc).splitlines()[0][:120]}"
        return row
    row["triton_ms"] = triton.testing.do_bench(run.triton, return_mode="median")
    row["torch_ms"] = triton.testing.do_bench(run.reference, return_mode="median")
    if run.eager is not None:
        row["eager_ms"] = triton.testing.do_bench(run.eager, return_mode="median")
    if case.decode:
        try:
            row["graph_ms"] = _graph_ms(run.triton)
        except Exception as exc:  # noqa: BLE001 - a capture failure is a finding, reported
            row["graph_ms"] = None
            row["graph_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
    seconds = row["triton_ms"] / 1e3
    if run.flops:
        row["tflops"] = run.flops / seconds / 1e12
        if peaks:
            row["pct_peak"] = 100 * row["tflops"] / peaks[1]
    if run.bytes_moved:
        row["gbps"] = run.bytes_moved / seconds / 1e9
        if peaks and not run.flops:
            row["pct_peak"] = 100 * row["gbps"] / peaks[0]
    return row


def _fmt(value, spec=".4f") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def markdown(rows: list[dict], device_name: str, peaks) -> str:
    peak_text = f"{peaks[0]:.0f} GB/s, {peaks[1]:.0f} bf16 TFLOP/s" if peaks else "unknown peaks"
    lines = [
        f"Device: {device_name} ({peak_text}). Times are medians in ms (triton.testing.do_bench).",
        "",
        "| op | case | check | Triton | torch ref | upstream-shaped eager | CUDA graph | GB/s | TFLOP/s | % peak |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| `{r['op']}` | {r['case']} | {r['check']} | {_fmt(r.get('triton_ms'))} | "
            f"{_fmt(r.get('torch_ms'))} | {_fmt(r.get('eager_ms'))} | {_fmt(r.get('graph_ms'))} | "
            f"{_fmt(r.get('gbps'), '.0f')} | {_fmt(r.get('tflops'), '.1f')} | "
            f"{_fmt(r.get('pct_peak'), '.0f')} |"
        )
    return "\n".join(lines) + "\n"


def cpu_smoke(selected: list[Case]) -> int:
    """Build every case at its smoke shape on the CPU and run its correctness check."""
    failures = 0
    for case in selected:
        try:
            (case.smoke or case.build)("cpu").check()
            print(f"ok      {case.op_id}: {case.label}")
        except Exception as exc:  # noqa: BLE001 - every case is reported
            failures += 1
            print(f"FAILED  {case.op_id}: {case.label}: {type(exc).__name__}: {exc}")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__.split("\n")[0])
    parser.add_argument("--group", help="only the operators of this group (e.g. gemm)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--json", type=Path, help="also write the raw rows to this file")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="build each case at a tiny shape on the CPU and check it; no timing")
    args = parser.parse_args(argv)
    selected = [c for c in cases() if args.group is None or c.op_id.split(".")[0] == args.group]
    if args.cpu_smoke:
        return cpu_smoke(selected)
    import torch

    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure (run it on a GPU machine; "
              "--cpu-smoke checks the cases on the CPU)")
        return 0
    device_name = torch.cuda.get_device_name()
    peaks = peaks_for(device_name)
    rows = []
    for case in selected:
        rows.append(measure(case, peaks))
        print(json.dumps(rows[-1]), flush=True)
    if args.group is None:
        from sglang.kernels import registry

        covered = {c.op_id for c in selected}
        for op_id in registry.op_ids():
            if op_id not in covered:  # said, not hidden: the table names what it did not time
                rows.append({"op": op_id, "case": "no case in this script yet", "check": "-"})
    table = markdown(rows, device_name, peaks)
    print(table)
    if args.markdown:
        args.markdown.write_text(table, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"device": device_name, "rows": rows}, indent=1), encoding="utf-8")
    return 1 if any(r["check"] not in ("ok", "-") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
