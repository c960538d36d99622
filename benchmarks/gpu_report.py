"""One GPU report over every kernel operator: correctness, then speed against the alternatives.

Run from the repo root on a machine with a CUDA device: `python benchmarks/gpu_report.py`
(`--group gemm` for one group, `--markdown FILE` to also write the table, `--json FILE` for the
raw rows, `--upstream DIR` for upstream's kernels, `--peaks` for a device not in `DEVICES`).
For each operator case, at shapes taken from real models (Llama-3-8B/70B, DeepSeek-V3,
MiniMax-M2):

1. correctness: the Triton entry point against the operator's torch reference on the device
   (the registry's `torch` backend), compared exactly or rounding-aware (one ulp after the
   device's rounding; GEMMs one ulp plus an accumulation term that grows with K,
   `gemm_check`), before anything is timed;
2. speed: the median time (`bench`: CUDA events, L2 flushed before each call, an in-place
   operator's inputs restored by its `setup` before each call, both outside the timed region)
   of the Triton entry point, of the torch reference, of "upstream-shaped eager code" -- what
   upstream runs when its fused kernel is off (cuBLAS for the GEMMs, the HF / `forward_native`
   torch code for the norms, index copies for the caches) -- and of upstream's own kernel
   where one can run (its Triton kernels from an unpacked wheel, `sgl_kernel` when installed;
   `_upstream_kernels.py`); for decode-sized cases also the Triton call captured in a CUDA
   graph and replayed, its warm-up under `torch.cuda.set_sync_debug_mode("error")`;
3. throughput: GB/s of the bytes each case must move, TFLOP/s for GEMMs, and each as a
   percentage of its own peak from `DEVICES` (matched by the full device name): host<->device
   transfers against the host link (PCIe or NVLink-C2C), other memory-bound cases against HBM,
   GEMMs against both HBM and compute; "% roofline" is the binding one.

Any exception in a case is that case's row; the run goes on. Without a CUDA device it says so
and exits 0. `--cpu-smoke` runs every case at its tiny smoke shape on the CPU through the same
`measure` (check, each variant called once, throughput, upstream), through Triton's interpreter
when `TRITON_INTERPRET=1`; its times mean nothing. The test suite runs it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

# `sglang` lives at the repo root, one level above this script's folder; `_upstream_kernels`
# beside this script (the folder is sys.path[0] when run, not when a test loads it by path).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _upstream_kernels as upstream_kernels  # noqa: E402
from _upstream_kernels import UpstreamUnavailable  # noqa: E402

NAME = "gpu_report"

# Upstream's Triton kernels for this library's operators, inside an unpacked sglang wheel (the
# same in 0.5.17 and 0.5.23 where named): Inkling's short conv (its Triton path; upstream's CUDA
# path is the JIT module this library's `inkling_sconv` mirrors) and the int8 group quantizer.
SCONV_FILE = "sglang/srt/models/inkling_common/kernels/sconv.py"
INT8_KERNEL_FILE = "sglang/kernels/ops/quantization/int8_kernel.py"

class Peaks(NamedTuple):
    """A device's data-sheet peaks: HBM GB/s, dense bf16 tensor-core TFLOP/s, and the host link
    (GB/s in one direction, and its name): what host<->device copies are bound by."""

    hbm_gbps: float
    tflops: float
    link_gbps: float
    link: str


# Per-direction host link bandwidth: PCIe Gen5 x16 moves 64 GB/s each way (128 GB/s both),
# Gen4 x16 32 GB/s; GH200's NVLink-C2C 450 GB/s each way (900 GB/s both).
_PCIE5, _PCIE4, _C2C = (64.0, "PCIe Gen5 x16"), (32.0, "PCIe Gen4 x16"), (450.0, "NVLink-C2C")

# The full name `torch.cuda.get_device_name()` returns -> peaks, from the vendors' data sheets.
# Matched exactly (case and runs of spaces aside, see `peaks_for`): a substring rule let
# "NVIDIA GH200 480GB" take the H200 entry. A device not listed gets no percentage (or give
# `--peaks`), never a neighbour's.
DEVICES: dict[str, Peaks] = {
    "NVIDIA H100 80GB HBM3": Peaks(3350.0, 989.0, *_PCIE5),
    "NVIDIA H100 PCIe": Peaks(2000.0, 756.0, *_PCIE5),
    "NVIDIA H100 NVL": Peaks(3900.0, 835.0, *_PCIE5),
    "NVIDIA H200": Peaks(4800.0, 989.0, *_PCIE5),
    "NVIDIA H200 NVL": Peaks(4800.0, 835.0, *_PCIE5),
    "NVIDIA GH200 480GB": Peaks(4000.0, 989.0, *_C2C),
    "NVIDIA GH200 144G HBM3e": Peaks(4900.0, 989.0, *_C2C),
    "NVIDIA H800": Peaks(3350.0, 989.0, *_PCIE5),
    "NVIDIA H20": Peaks(4000.0, 148.0, *_PCIE5),
    "NVIDIA B200": Peaks(8000.0, 2250.0, *_PCIE5),
    "NVIDIA A100-SXM4-80GB": Peaks(2039.0, 312.0, *_PCIE4),
    "NVIDIA A100-SXM4-40GB": Peaks(1555.0, 312.0, *_PCIE4),
    "NVIDIA A100 80GB PCIe": Peaks(1935.0, 312.0, *_PCIE4),
    "NVIDIA A100-PCIE-40GB": Peaks(1555.0, 312.0, *_PCIE4),
    "NVIDIA A800-SXM4-80GB": Peaks(2039.0, 312.0, *_PCIE4),
    "NVIDIA L40S": Peaks(864.0, 362.0, *_PCIE4),
    "NVIDIA L40": Peaks(864.0, 181.0, *_PCIE4),
    "NVIDIA L4": Peaks(300.0, 121.0, *_PCIE4),
    "NVIDIA A10": Peaks(600.0, 125.0, *_PCIE4),
    "NVIDIA GeForce RTX 4090": Peaks(1008.0, 165.0, *_PCIE4),
}


def _device_key(name: str) -> str:
    return " ".join(name.split()).casefold()


_DEVICE_KEYS = {_device_key(name): peaks for name, peaks in DEVICES.items()}


def peaks_for(device_name: str) -> Peaks | None:
    """The `DEVICES` entry whose full name is `device_name` (case and spacing aside), else None."""
    return _DEVICE_KEYS.get(_device_key(device_name))


@dataclass
class Run:
    """One built case: callables over tensors already on the device, and what they move.

    `setup` restores the buffers an in-place operator overwrites; it runs before every timed
    call of every variant (Triton, reference, eager, upstream), outside the timed region, so no
    variant pays for a copy and all run on the same inputs. `link_bytes` are the bytes that
    cross the host link (a host<->device transfer): such a case is measured against the link's
    peak, not HBM's. `upstream(root)` binds upstream's own kernel for this case: it returns
    (the call to time, a check that raises AssertionError when upstream's result differs from
    the reference), or raises `UpstreamUnavailable`.
    """

    triton: Callable[[], object]
    reference: Callable[[], object]
    check: Callable[[], None]  # raises AssertionError when the Triton result is wrong
    bytes_moved: int = 0
    flops: int = 0
    eager: Callable[[], object] | None = None  # upstream-shaped eager code, where it differs
    setup: Callable[[], None] | None = None
    link_bytes: int = 0
    upstream: Callable[[Path | None], tuple[Callable[[], object], Callable[[], None]]] | None = None


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


def _codes_close(got, want) -> None:
    """Quantizer outputs (codes, scales): the GPU's fp32 multiply may differ from the reference
    by a rounding at a code boundary, so one code step is allowed on at most 0.1 % of codes."""
    import torch

    for a, b in zip(got, want):
        a8 = a.view(torch.uint8) if a.dtype == torch.float8_e4m3fn else a
        b8 = b.view(torch.uint8) if b.dtype == torch.float8_e4m3fn else b
        if a.dtype == torch.float32:  # the scales: one rounding of the same amax
            torch.testing.assert_close(a, b, rtol=2**-23, atol=0.0)
            continue
        mismatch = (a8.int() - b8.int()).abs()
        if mismatch.numel() and (int(mismatch.max()) > 1 or float((mismatch > 0).float().mean()) > 1e-3):
            raise AssertionError(f"{int((mismatch > 0).sum())} of {mismatch.numel()} codes differ, "
                                 f"by up to {int(mismatch.max())} (allowed: 1, on 0.1 %)")


def _need(root):
    if root is None:
        raise UpstreamUnavailable("no --upstream directory (an unpacked sglang wheel) given")
    return root


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


# An fp32-accumulated dot product of length K is off by about sqrt(K) roundings (2^-24 each) of
# the magnitudes it sums (|x| @ |w|^T): that is the absolute term, which matters where the
# result cancels to near zero and one ulp of it is tiny. The output's own rounding is the one
# ulp. A sequential fp32-accumulation emulation at K = 7168 stays under a tenth of the absolute
# term (tests/kernels/test_gpu_report.py, 10 seeds), while a 1 % error or bf16 accumulation is
# still rejected; 1 ulp alone rejected a correct kernel on most seeds.
GEMM_ACCUMULATION_ROUNDING = 2.0**-24


def gemm_check(got, x, w) -> None:
    """Raise AssertionError unless `got` (x @ w.T) is within one ulp of its dtype plus the
    K-aware accumulation term of the fp64 product."""
    from sglang.kernels.jit import ulp

    ref = x.double() @ w.double().T
    magnitude = x.double().abs() @ w.double().abs().T
    k = x.shape[-1]
    allowed = ulp(ref.float(), got.dtype).double() + math.sqrt(k) * GEMM_ACCUMULATION_ROUNDING * magnitude
    err = (got.double() - ref).abs()
    bad = ~(err <= allowed)
    if bool(bad.any()):
        idx = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(
            f"gemm: {int(bad.sum())} of {bad.numel()} outputs beyond 1 ulp + sqrt(K) * 2^-24 * "
            f"|x| @ |w| (K = {k}); at {idx}: got {float(got[idx])}, want {float(ref[idx])}"
        )


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
            gemm_check(fn(*args, **kwargs), x, w)

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
            _codes_close(per_token_group_quant(x, **kw), per_token_group_quant_ref(x, **kw))

        def upstream(root):
            if out_dtype is not torch.int8 or ue8m0:
                raise UpstreamUnavailable("upstream's Triton quantizer here is the int8 one")
            mod = upstream_kernels.load_file(_need(root), INT8_KERNEL_FILE)
            call = lambda: mod.per_token_group_quant_int8(x, 128)  # noqa: E731
            return call, lambda: _codes_close(call(), per_token_group_quant_ref(x, **kw))

        return Run(lambda: per_token_group_quant(x, **kw), lambda: per_token_group_quant_ref(x, **kw),
                   check, bytes_moved=_nbytes(x) + tokens * hidden + tokens * hidden // 128 * 4,
                   upstream=upstream)

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

        def upstream(root):  # sgl_kernel's rmsnorm: what upstream's RMSNorm.forward_cuda calls
            kernels = upstream_kernels.sgl_kernel()
            call = lambda: kernels.rmsnorm(x, w, 1e-6)  # noqa: E731
            return call, lambda: _rounded(call(), rmsnorm_hf_ref(x, w).float(), two_step=True)

        return Run(lambda: rmsnorm_hf(x, w), lambda: rmsnorm_hf_ref(x, w), check,
                   bytes_moved=2 * _nbytes(x) + _nbytes(w), eager=hf_eager, upstream=upstream)

    return Case("layernorm.rmsnorm_hf", label, build, tokens <= 64, smoke=lambda d: build(d, 3, 96))


def _add_rmsnorm_case(label, tokens, hidden):
    def build(device, tokens=tokens, hidden=hidden):
        import torch

        from sglang.kernels.ops.layernorm import fused_add_rmsnorm, fused_add_rmsnorm_ref

        x = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
        r = torch.randn(tokens, hidden, device=device).to(torch.bfloat16)
        w = (1 + 0.1 * torch.randn(hidden, device=device)).to(torch.bfloat16)
        work_x, work_r = x.clone(), r.clone()

        def setup():  # fresh inputs for the in-place op, outside the timed region
            work_x.copy_(x)
            work_r.copy_(r)

        def triton_call():
            fused_add_rmsnorm(work_x, work_r, w)

        def native():  # upstream RMSNorm.forward_native with a residual
            h = x.to(torch.float32) + r.to(torch.float32)
            res = h.to(torch.bfloat16)
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
            return (h * w.to(torch.float32)).to(torch.bfloat16), res

        def check():
            setup()
            triton_call()
            normed, residual = fused_add_rmsnorm_ref(x, r, w)
            _rounded(work_r, residual.float(), two_step=True)
            _rounded(work_x, normed.float(), two_step=True)

        def upstream(root):  # sgl_kernel's fused_add_rmsnorm (in place), as forward_cuda calls it
            kernels = upstream_kernels.sgl_kernel()
            call = lambda: kernels.fused_add_rmsnorm(work_x, work_r, w, 1e-6)  # noqa: E731

            def same():
                setup()
                call()
                normed, residual = fused_add_rmsnorm_ref(x, r, w)
                _rounded(work_r, residual.float(), two_step=True)
                _rounded(work_x, normed.float(), two_step=True)

            return call, same

        return Run(triton_call, lambda: fused_add_rmsnorm_ref(x, r, w), check,
                   bytes_moved=4 * _nbytes(x) + _nbytes(w), eager=native, setup=setup,
                   upstream=upstream)

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
        i_dst_host = i_dst.cpu()  # the eager path indexes the host pool with host indices

        def check():
            transfer_hicache_one_layer(*args)
            want_k, want_v = torch.zeros_like(dst_k), torch.zeros_like(dst_v)
            transfer_hicache_one_layer_ref(want_k, want_v, i_dst, src_k, src_v, i_src)
            assert torch.equal(dst_k, want_k) and torch.equal(dst_v, want_v)

        def eager():  # device gather, one copy to the host, host scatter
            dst_k[i_dst_host] = src_k[i_src].cpu()
            dst_v[i_dst_host] = src_v[i_src].cpu()

        crossing = 2 * tokens * heads * head_dim * 2  # K and V rows, bf16, device -> host
        return Run(lambda: transfer_hicache_one_layer(*args),
                   lambda: transfer_hicache_one_layer_ref(*args), check,
                   bytes_moved=2 * crossing, eager=eager, link_bytes=crossing)

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

        def upstream(root):
            mod = upstream_kernels.load_file(_need(root), SCONV_FILE)
            up_work = cache.clone()

            def same():
                got_cache, want_cache = cache.clone(), cache.clone()
                got = mod.fused_causal_conv1d_update_decode(x, w, got_cache, ci, mask, "silu", True)
                want = fused_causal_conv1d_update_decode_ref(x, w, want_cache, ci, mask, "silu", True)
                _rounded(got, want.float())
                assert torch.equal(got_cache, want_cache)

            return (lambda: mod.fused_causal_conv1d_update_decode(x, w, up_work, ci, mask, "silu", True),
                    same)

        return Run(lambda: fused_causal_conv1d_update_decode(x, w, work, ci, mask, "silu", True),
                   lambda: fused_causal_conv1d_update_decode_ref(*args), check,
                   bytes_moved=2 * _nbytes(x) + 2 * batch * (width - 1) * dim * 2 + _nbytes(w),
                   upstream=upstream)

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

        def upstream(root):
            mod = upstream_kernels.load_file(_need(root), SCONV_FILE)
            return (lambda: mod.causal_conv1d(*args),
                    lambda: _rounded(mod.causal_conv1d(*args), causal_conv1d_ref(*args).float()))

        return Run(lambda: causal_conv1d(*args), lambda: causal_conv1d_ref(*args), check,
                   bytes_moved=2 * _nbytes(x) + _nbytes(w) + seqs * (width - 1) * dim * 2,
                   upstream=upstream)

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

        crossing = 2 * layers * tokens * stride  # K and V rows of every layer, device -> host
        return Run(run, ref, check, bytes_moved=2 * crossing, link_bytes=crossing)

    return Case("kvcache.transfer_hicache_all_layer", label, build, False,
                smoke=lambda d: build(d, 3, 5, 2, 8, 16))


def _host_pool_load_case(label, layers, tokens, heads, head_dim, slots):
    """The runtime's `MHATokenToKVPoolHost.load_to_device_all_layer`, host indices on the host
    as its allocator gives them: the index copy (pinned, non-blocking) and the all-layer
    kernel. On a GPU its check runs under `torch.cuda.set_sync_debug_mode("error")`, so a
    host sync anywhere on that path fails the check."""

    def build(device, layers=layers, tokens=tokens, heads=heads, head_dim=head_dim, slots=slots):
        import torch

        from sglang.srt.mem_cache.memory_pool_host import MHATokenToKVPool
        from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost

        pool = MHATokenToKVPool(slots, heads, head_dim, layers, torch.bfloat16, device)
        pool.k_buffer.normal_()
        pool.v_buffer.normal_()
        host = MHATokenToKVPoolHost(pool, host_size=slots, page_size=1, pin_memory=True)
        host_idx = host.alloc(tokens)  # int64 on the host, as the runtime's allocator gives
        device_idx = torch.randperm(slots, device=device)[:tokens] + 1  # slot 0 is padding
        host.backup_from_device_all_layer(pool, host_idx, device_idx)
        target = MHATokenToKVPool(slots, heads, head_dim, layers, torch.bfloat16, device)

        def load():
            host.load_to_device_all_layer(target, host_idx, device_idx)

        def torch_path():
            jit, host.can_use_jit = host.can_use_jit, False
            try:
                load()
            finally:
                host.can_use_jit = jit

        def check():
            if device == "cuda":
                torch.cuda.set_sync_debug_mode("error")
            try:
                load()
            finally:
                if device == "cuda":
                    torch.cuda.set_sync_debug_mode("default")
            for got, want in ((target.k_buffer, pool.k_buffer), (target.v_buffer, pool.v_buffer)):
                assert torch.equal(got[:, device_idx], want[:, device_idx])

        crossing = 2 * layers * tokens * heads * head_dim * 2  # K and V, bf16, host -> device
        return Run(load, torch_path, check, bytes_moved=2 * crossing, link_bytes=crossing)

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
        return Run(run, ref, check, bytes_moved=moved, link_bytes=moved // 2)

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

        def upstream(root):
            mod = upstream_kernels.load_file(_need(root), SCONV_FILE)
            up_work = cache.clone()

            def same():
                got, want = cache.clone(), cache.clone()
                mod.update_sconv_cache(x, got, ci, has_init, qsl)
                update_sconv_cache_ref(x, want, ci, has_init, qsl)
                assert torch.equal(got, want)

            return lambda: mod.update_sconv_cache(x, up_work, ci, has_init, qsl), same

        return Run(lambda: update_sconv_cache(x, work, ci, has_init, qsl),
                   lambda: update_sconv_cache_ref(x, work, ci, has_init, qsl), check,
                   bytes_moved=2 * seqs * (width - 1) * dim * 2 * 2, upstream=upstream)

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
        _host_pool_load_case("runtime host pool load, Llama-3-8B 32 layers, 1024 tokens", 32, 1024,
                             8, 128, 8192),
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


class CudaClock:
    """CUDA events; before each timed call L2 is flushed, as `triton.testing.do_bench` does."""

    def __init__(self):
        import torch

        self.torch = torch
        self.flush = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")  # > any L2

    def before(self) -> None:
        self.flush.zero_()

    def mark(self):
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def sync(self) -> None:
        self.torch.cuda.synchronize()

    @staticmethod
    def elapsed_ms(start, end) -> float:
        return start.elapsed_time(end)


class CpuClock:
    """Wall time, for the CPU smoke run (whose times mean nothing: the interpreter runs)."""

    def before(self) -> None:
        pass

    def mark(self) -> float:
        return time.perf_counter()

    def sync(self) -> None:
        pass

    @staticmethod
    def elapsed_ms(start, end) -> float:
        return (end - start) * 1e3


@dataclass
class Timing:
    """How `bench` times: a clock, and how long to run (ms of warm-up and of measuring)."""

    clock: object
    warmup_ms: float = 25.0  # do_bench's defaults
    measure_ms: float = 100.0
    min_reps: int = 5  # at least this many timed calls, however slow
    max_reps: int = 1000


def bench(fn, setup, timing: Timing) -> float:
    """Median ms of `fn()`; `setup()` (when given) runs before each call, outside the timed
    region, and so does the clock's L2 flush: only `fn` lies between the two marks."""
    clock = timing.clock

    def once():
        if setup is not None:
            setup()
        clock.before()
        start = clock.mark()
        fn()
        return start, clock.mark()

    first = once()
    clock.sync()
    estimate = max(clock.elapsed_ms(*first), 1e-3)
    for _ in range(int(timing.warmup_ms / estimate)):
        once()
    reps = max(timing.min_reps, min(timing.max_reps, int(timing.measure_ms / estimate)))
    marks = [once() for _ in range(reps)]
    clock.sync()
    return statistics.median(clock.elapsed_ms(a, b) for a, b in marks)


def _graph_ms(fn, setup, timing: Timing) -> float:
    """`fn` captured once in a CUDA graph and replayed. The warm-up runs with torch's sync
    debug mode at "error", so a host sync on the launch path fails here, not silently."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    torch.cuda.set_sync_debug_mode("error")
    try:
        with torch.cuda.stream(stream):
            for _ in range(3):  # warm up: compile and autotune outside the capture
                fn()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return bench(graph.replay, setup, timing)


def throughput(run: Run, ms: float, peaks: Peaks | None) -> dict:
    """GB/s, TFLOP/s and host-link GB/s of `run` done in `ms`, each as a percentage of its own
    peak: a host transfer of the host link (not HBM), a GEMM of HBM and of compute (decode
    GEMMs are memory-bound); `pct_peak` is the roofline's: the time the binding peak allows,
    over the time taken."""
    seconds = ms / 1e3
    row: dict = {}
    if run.flops:
        row["tflops"] = run.flops / seconds / 1e12
    if run.bytes_moved:
        row["gbps"] = run.bytes_moved / seconds / 1e9
    if run.link_bytes:
        row["link_gbps"] = run.link_bytes / seconds / 1e9
    if peaks is None or seconds <= 0:
        return row
    bound_s = []
    if run.link_bytes:
        row["pct_link"] = 100 * row["link_gbps"] / peaks.link_gbps
        bound_s.append(run.link_bytes / (peaks.link_gbps * 1e9))
    elif run.bytes_moved:
        row["pct_hbm"] = 100 * row["gbps"] / peaks.hbm_gbps
        bound_s.append(run.bytes_moved / (peaks.hbm_gbps * 1e9))
    if run.flops:
        row["pct_compute"] = 100 * row["tflops"] / peaks.tflops
        bound_s.append(run.flops / (peaks.tflops * 1e12))
    if bound_s:
        row["pct_peak"] = 100 * max(bound_s) / seconds
    return row


def _first_line(exc: BaseException, limit=120) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:limit]


def _upstream_row(run: Run, root: Path | None, timing: Timing) -> dict:
    """Upstream's own kernel for this case: checked against the reference, then timed."""
    if run.upstream is None:
        return {"upstream": "not available: no upstream kernel bound for this case"}
    try:
        call, same = run.upstream(root)
        same()
    except UpstreamUnavailable as exc:
        return {"upstream": f"not available: {exc}"}
    except AssertionError as exc:
        return {"upstream": f"differs: {_first_line(exc)}"}
    except Exception as exc:  # noqa: BLE001 - upstream's failure is a finding, reported
        return {"upstream": f"error: {_first_line(exc)}"}
    row = {"upstream": "ok"}
    row["upstream_ms"] = bench(call, run.setup, timing)
    return row


def _timed(case: Case, run: Run, timing: Timing, device: str) -> dict:
    row = {"triton_ms": bench(run.triton, run.setup, timing),
           "torch_ms": bench(run.reference, run.setup, timing)}
    if run.eager is not None:
        row["eager_ms"] = bench(run.eager, run.setup, timing)
    if case.decode and device == "cuda":
        try:
            row["graph_ms"] = _graph_ms(run.triton, run.setup, timing)
        except Exception as exc:  # noqa: BLE001 - a capture failure is a finding, reported
            row["graph_ms"] = None
            row["graph_error"] = _first_line(exc, 100)
    return row


def measure(case: Case, peaks: Peaks | None, device: str = "cuda", timing: Timing | None = None,
            upstream_root: Path | None = None, smoke: bool = False) -> dict:
    """One row: check, then times, throughput and upstream's kernel. Any exception in any step
    becomes the row's `check` ("ERROR: ..."), so one case never ends the run."""
    from sglang.kernels import registry

    row = {"op": case.op_id, "case": case.label, "registered": case.op_id in registry.REGISTRY}
    timing = timing or Timing(CudaClock())
    try:
        run = ((case.smoke or case.build) if smoke else case.build)(device)
        try:
            run.check()
        except AssertionError as exc:
            row["check"] = f"FAILED: {_first_line(exc)}"
            return row
        row["check"] = "ok"
        row.update(_timed(case, run, timing, device))
        row.update(throughput(run, row["triton_ms"], peaks))
        row.update(_upstream_row(run, upstream_root, timing))
    except Exception as exc:  # noqa: BLE001 - every case is isolated: its error is its row
        row["check"] = f"ERROR: {_first_line(exc)}"
    return row


def _fmt(value, spec=".4f") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def _peak_text(peaks: Peaks | None) -> str:
    if peaks is None:
        return "not in DEVICES: no % columns (give --peaks)"
    return (f"HBM {peaks.hbm_gbps:.0f} GB/s, {peaks.tflops:.0f} bf16 TFLOP/s, host link "
            f"{peaks.link_gbps:.0f} GB/s per direction ({peaks.link})")


def _upstream_cell(r: dict) -> str:
    status = r.get("upstream", "-")
    return _fmt(r.get("upstream_ms")) if status == "ok" else status


def markdown(rows: list[dict], device_name: str, peaks) -> str:
    lines = [
        f"Device: {device_name} ({_peak_text(peaks)}). Times are medians in ms.",
        "",
        "| op | case | check | Triton | torch ref | upstream-shaped eager | upstream kernel | "
        "CUDA graph | GB/s | TFLOP/s | % HBM | % compute | % host link | % roofline |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        pct = [_fmt(r.get(k), ".0f") for k in ("pct_hbm", "pct_compute", "pct_link", "pct_peak")]
        gbps = r.get("link_gbps", r.get("gbps"))
        lines.append(
            f"| `{r['op']}` | {r['case']} | {r['check']} | {_fmt(r.get('triton_ms'))} | "
            f"{_fmt(r.get('torch_ms'))} | {_fmt(r.get('eager_ms'))} | {_upstream_cell(r)} | "
            f"{_fmt(r.get('graph_ms'))} | {_fmt(gbps, '.0f')} | {_fmt(r.get('tflops'), '.1f')} | "
            + " | ".join(pct) + " |"
        )
    return "\n".join(lines) + "\n"


# The CPU smoke run calls each variant once or twice: enough to run every code path.
SMOKE_TIMING = Timing(CpuClock(), warmup_ms=0.0, measure_ms=0.0, min_reps=1)


def cpu_smoke(selected: list[Case], upstream_root: Path | None = None) -> int:
    """Every case at its smoke shape on the CPU, through the same `measure` as on a GPU."""
    failures = 0
    for case in selected:
        row = measure(case, None, "cpu", SMOKE_TIMING, upstream_root, smoke=True)
        if row["check"] == "ok":
            print(f"ok      {case.op_id}: {case.label} (upstream: {row.get('upstream')})")
        else:
            failures += 1
            print(f"FAILED  {case.op_id}: {case.label}: {row['check']}")
    return 1 if failures else 0


def _peaks_arg(text: str) -> Peaks:
    try:
        hbm, tflops, link = (float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected HBM_GBPS,TFLOPS,LINK_GBPS (three numbers, e.g. 3350,989,64), got {text!r}"
        ) from None
    return Peaks(hbm, tflops, link, "given with --peaks")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__.split("\n")[0])
    parser.add_argument("--group", help="only the operators of this group (e.g. gemm)")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    parser.add_argument("--json", type=Path, help="also write the raw rows to this file")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="run each case at a tiny shape on the CPU (check, every variant once); "
                             "its times mean nothing")
    parser.add_argument("--upstream", type=Path, metavar="DIR",
                        help="an unpacked sglang wheel (the folder holding sglang/): its Triton "
                             "kernels are loaded by file as a baseline; never installed or imported "
                             "as a package")
    parser.add_argument("--peaks", type=_peaks_arg, metavar="HBM_GBPS,TFLOPS,LINK_GBPS",
                        help="the device's peaks, for a device not in DEVICES")
    args = parser.parse_args(argv)
    if args.upstream is not None and not (args.upstream / "sglang").is_dir():
        parser.error(f"--upstream {args.upstream}: no sglang/ folder there; give the folder an "
                     "unpacked sglang wheel was extracted into")
    return args


def _uncovered(selected: list[Case]) -> list[dict]:
    """A row for each registered operator without a case: the table names what it did not time."""
    from sglang.kernels import registry

    covered = {c.op_id for c in selected}
    return [{"op": op_id, "case": "no case in this script yet", "check": "-"}
            for op_id in registry.op_ids() if op_id not in covered]


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    selected = [c for c in cases() if args.group is None or c.op_id.split(".")[0] == args.group]
    if args.cpu_smoke:
        return cpu_smoke(selected, args.upstream)
    import torch

    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure (run it on a GPU machine; "
              "--cpu-smoke checks the cases on the CPU)")
        return 0
    device_name = torch.cuda.get_device_name()
    peaks = args.peaks or peaks_for(device_name)
    timing = Timing(CudaClock())
    rows = []
    for case in selected:
        rows.append(measure(case, peaks, "cuda", timing, args.upstream))
        print(json.dumps(rows[-1]), flush=True)
    if args.group is None:
        rows += _uncovered(selected)
    _write(args, rows, device_name, peaks)
    return 1 if any(r["check"] not in ("ok", "-") for r in rows) else 0


def _write(args: argparse.Namespace, rows: list[dict], device_name: str, peaks) -> None:
    table = markdown(rows, device_name, peaks)
    print(table)
    if args.markdown:
        args.markdown.write_text(table, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps({"device": device_name, "rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
