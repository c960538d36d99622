"""What the gemm operators share: their operand checks and the dot-precision choice."""

from __future__ import annotations

import torch

from sglang.kernels.jit import interpreter_enabled

# fp16 / bf16 / fp32: the dtypes tl.dot takes (after the fp32 upcast below) and the tests cover.
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def check_operands(op: str, x: torch.Tensor, weight: torch.Tensor) -> None:
    """x [M, K] and weight [N, K]: 2-D, the same K, dtype and device; a supported dtype."""
    if x.dim() != 2:
        raise ValueError(f"{op}: x must be 2-D [M, K], got {tuple(x.shape)}")
    if weight.dim() != 2:
        raise ValueError(f"{op}: weight must be 2-D [N, K], got {tuple(weight.shape)}")
    if weight.shape[1] != x.shape[1]:
        raise ValueError(
            f"{op}: weight must have K = {x.shape[1]} columns like x, got {tuple(weight.shape)}"
        )
    if x.dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"{op}: x must be fp16, bf16 or fp32, got {x.dtype}")
    if weight.dtype != x.dtype:
        raise ValueError(f"{op}: weight must have x's dtype {x.dtype}, got {weight.dtype}")
    if weight.device != x.device:
        raise ValueError(f"{op}: weight must be on x's device {x.device}, got {weight.device}")


def dot_in_fp32(dtype: torch.dtype) -> bool:
    """Whether the kernel upcasts its tiles and takes an IEEE fp32 dot.

    fp32 inputs: always, since tl.dot would otherwise round them to tf32 (10-bit mantissa) on the
    GPU. Under the CPU interpreter: always, since its bf16 dot is wrong (Triton 3.9, measured).
    fp16/bf16 on the GPU: never; their products are exact in the fp32 accumulator either way, so
    the tensor-core dot gives the same sums.
    """
    return dtype == torch.float32 or interpreter_enabled()
