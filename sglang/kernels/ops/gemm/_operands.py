"""What the gemm operators share: their operand checks, the dot-precision choice, the custom ops' glue."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import interpreter_enabled

# fp16 / bf16 / fp32: the dtypes tl.dot takes (after the fp32 upcast below) and the tests cover.
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def check_operands(op: str, x: torch.Tensor, weight: torch.Tensor, names=("x", "w")) -> None:
    """x [M, K] and weight [N, K]: 2-D, the same K, dtype and device; a supported dtype."""
    xn, wn = names
    for name, t in ((xn, x), (wn, weight)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")  # noqa: TRY004
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
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(out).__name__}")  # noqa: TRY004
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


@triton.jit
def accumulate_tile(
    a_ptr,  # [M, K]
    b_ptr,  # [K, N] (a row-major [N, K] weight passes its strides swapped)
    offs_m,  # int64 [BLOCK_M] rows of this tile
    offs_n,  # int64 [BLOCK_N] columns of this tile
    mask_m,
    mask_n,
    k_dim,
    a_m_stride,
    a_k_stride,
    b_k_stride,
    b_n_stride,
    DOT_FP32: tl.constexpr,  # upcast and take an IEEE fp32 dot (see `dot_in_fp32`)
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """The fp32 [BLOCK_M, BLOCK_N] tile of a @ b, walking K in masked BLOCK_K steps."""
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, k_dim, BLOCK_K):
        offs_k = (k0 + tl.arange(0, BLOCK_K)).to(tl.int64)
        mask_k = offs_k < k_dim
        a = tl.load(
            a_ptr + offs_m[:, None] * a_m_stride + offs_k[None, :] * a_k_stride,
            mask=mask_m[:, None] & mask_k[None, :],
            other=0.0,
        )  # [BLOCK_M, BLOCK_K]
        b = tl.load(
            b_ptr + offs_k[:, None] * b_k_stride + offs_n[None, :] * b_n_stride,
            mask=mask_k[:, None] & mask_n[None, :],
            other=0.0,
        )  # [BLOCK_K, BLOCK_N]
        if DOT_FP32:
            acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
    return acc
