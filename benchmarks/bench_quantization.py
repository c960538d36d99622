"""Benchmark the quantization group on CUDA: the Triton kernels against their torch references.

Run from the repo root: `python benchmarks/bench_quantization.py`. Prints, per shape and format,
the median time of the Triton entry point and of the pure-torch reference, and the speedup.
Without a CUDA device it says so and exits 0.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from _kernel_bench import median_ms as _median_ms  # benchmarks/ is sys.path[0] when run

# `sglang` lives at the repo root, one level above this script's folder.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NAME = "bench_quantization"
# (tokens, hidden): decode and prefill batches at DeepSeek-V3's hidden size, and its MoE
# intermediate size; group 128 is the block size of its FP8 weights.
SHAPES = [(16, 7168), (512, 7168), (4096, 7168), (4096, 2048)]
GROUP_SIZE = 128


def main() -> int:
    if not torch.cuda.is_available():
        print(f"{NAME}: no CUDA device, nothing to measure")
        return 0
    from sglang.kernels.ops.quantization import per_token_group_quant, per_token_group_quant_ref

    print(f"group_size={GROUP_SIZE}, bf16 activations")
    print(f"{'format':>20} {'shape':>11} {'triton ms':>10} {'torch ms':>9} {'speedup':>8}")
    for qdtype, ue8m0 in ((torch.float8_e4m3fn, False), (torch.float8_e4m3fn, True), (torch.int8, False)):
        fmt = str(qdtype).removeprefix("torch.") + (" ue8m0" if ue8m0 else "")
        for tokens, hidden in SHAPES:
            x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
            kw = dict(group_size=GROUP_SIZE, out_dtype=qdtype, scale_ue8m0=ue8m0)
            t_triton = _median_ms(lambda x=x, kw=kw: per_token_group_quant(x, **kw))
            t_torch = _median_ms(lambda x=x, kw=kw: per_token_group_quant_ref(x, **kw))
            print(
                f"{fmt:>20} {f'{tokens}x{hidden}':>11} {t_triton:>10.4f} "
                f"{t_torch:>9.4f} {t_torch / t_triton:>7.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
