"""What the gemm operators share: their operand checks, the dot-precision choice, the custom ops' glue."""

from __future__ import annotations

import torch

from sglang.kernels.jit import interpreter_enabled

# fp16 / bf16 / fp32: the dtypes tl.dot takes (after the fp32 upcast below) and the tests cover.
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def check_operands(op: str, x: torch.Tensor, weight: torch.Tensor, names=("x", "w")) -> None:
    """x [M, K] and weight [N, K]: 2-D, the same K, dtype and device; a supported dtype."""
    xn, wn = names
    if x.dim() != 2:
        raise ValueError(f"{op}: {xn} must be 2-D [M, K], got {tuple(x.shape)}")
    if weight.dim() != 2:
        raise ValueError(f"{op}: {wn} must be 2-D, got {tuple(weight.shape)}")
    if weight.shape[1] != x.shape[1]:
        raise ValueError(
            f"{op}: {wn} must have K = {x.shape[1]} like {xn}, got {tuple(weight.shape)}"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"{op}: {xn} must be bf16, fp16 or fp32, got {x.dtype}")
    if weight.dtype != x.dtype:
        raise ValueError(f"{op}: {wn} must have {xn}'s dtype {x.dtype}, got {weight.dtype}")
    if weight.device != x.device:
        raise ValueError(f"{op}: {wn} must be on {xn}'s device {x.device}, got {weight.device}")


def check_out(op: str, name: str, out: torch.Tensor, shape, dtype, device) -> None:
    """A caller-owned output: the expected shape, dtype and device (any strides)."""
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{op}: {name} must have shape {tuple(shape)}, got {tuple(out.shape)}")
    if out.dtype != dtype:
        raise ValueError(f"{op}: {name} must be {dtype}, got {out.dtype}")
    if out.device != device:
        raise ValueError(f"{op}: {name} must be on {device}, got {out.device}")


def dot_in_fp32(dtype: torch.dtype) -> bool:
    """Whether the kernel upcasts its tiles and takes an IEEE fp32 dot.

    fp32 inputs: always, since tl.dot would otherwise round them to tf32 (10-bit mantissa) on the
    GPU. bf16 under the CPU interpreter: always, since the interpreter's bf16 dot is wrong (Triton
    3.9: errors of 1e10 on a 16 x 16 product, measured), while its fp16 dot is right (1e-6), so
    fp16 takes the tensor-core branch in the tests too. fp16/bf16 on the GPU: the tensor-core dot;
    their products are exact in the fp32 accumulator either way, so it gives the same sums.
    """
    return dtype == torch.float32 or (dtype == torch.bfloat16 and interpreter_enabled())
