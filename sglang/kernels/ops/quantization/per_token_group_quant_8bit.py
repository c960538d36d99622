"""`per_token_group_quant_8bit` / `per_token_group_dequant_8bit`: 8-bit quantization with one
fp32 scale per (token, group of `group_size` channels), as block-wise FP8 / INT8 GEMMs consume it.

For x [..., H] with H % group_size == 0, and each token t and group g of channels:

    scale[t, g] = max(max_i |x[t, g, i]|, eps) / qmax                 (qmax = 127 int8, 448 fp8)
    scale[t, g] = 2 ** ceil(log2(scale[t, g]))                          (only when scale_ue8m0)
    x_q[t, g, i] = clamp(round_half_even(x[t, g, i] / scale), -qmax, qmax)   int8
    x_q[t, g, i] = float8_e4m3fn(clamp(x[t, g, i] / scale, -qmax, qmax))     fp8 (RNE cast)
    dequant:  y[t, g, i] = float32(x_q[t, g, i]) * scale[t, g]

The kernel exists so that the absmax reduction, the scale and the quantized values of a group are
one pass over x (a torch version reads x three times and materializes x / scale in fp32).

Exactness: every step is an exactly rounded fp32 operation (max, an IEEE division `div_rn`, a
round-half-even, a power-of-two rounding of the scale by its bits), so the kernel reproduces the
reference bit for bit, scales and quantized values alike. Two spots are done by hand for that:
- ue8m0 rounds the scale up by its fp32 bits (exponent + 1 when the mantissa is non-zero), not
  through log2, whose fp32 rounding can give 2**k for a scale just above 2**k;
- fp8 is encoded by hand into uint8 bit patterns (round to the e4m3 grid, then pack the bits):
  the Triton 3.9 interpreter's fp32 -> fp8e4nv cast drops the carry when rounding crosses a
  power of two (1.999 -> 1.0, measured), and the bit pattern also works where the GPU has no
  fp8 conversion instructions. Dequant decodes the bits by hand likewise.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import MAX_FUSED_SIZE, cdiv, next_power_of_2, use_triton

# Largest magnitude each 8-bit format stores: int8 is kept symmetric (+-127, -128 unused);
# 448 = 1.75 * 2**8 is float8_e4m3fn's largest finite value.
_QMAX = {torch.int8: 127.0, torch.float8_e4m3fn: 448.0}
# fp16 / bf16 / fp32 activations: what the upstream callers quantize.
_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# The smallest normal fp32 (2**-126): the scale is kept normal so its bits are exponent+mantissa.
_FP32_TINY = torch.finfo(torch.float32).tiny
# A tile of about 4096 elements (several groups at once): enough work per program to hide the
# load latency, 32 fp32 values per thread at 4 warps.
_TILE_ELEMENTS = 4096
# 4 warps: one 4096-element tile is 32 values per thread.
_NUM_WARPS = 4


@triton.jit
def _round_half_even(y):
    """fp32 round-half-to-even (torch.round), exact for |y| < 2**22: floor, then the tie rule."""
    r = tl.floor(y)
    d = y - r  # exact: r and y are within 1 of each other
    odd = (r.to(tl.int32) & 1) == 1
    up = (d > 0.5) | ((d == 0.5) & odd)
    return tl.where(up, r + 1.0, r)


@triton.jit
def _pow2_from_exponent(e):
    """2.0 ** e as fp32 for an int32 e in [-126, 127], built from the bits (exact)."""
    return ((e + 127) << 23).to(tl.float32, bitcast=True)


@triton.jit
def _encode_e4m3fn(y):
    """uint8 float8_e4m3fn bit patterns of fp32 y, |y| <= 448, rounded to nearest even."""
    bits = y.to(tl.int32, bitcast=True)
    sign = ((bits >> 24) & 0x80).to(tl.int32)  # keeps -0.0 as 0x80, like torch's cast
    a = tl.abs(y)
    e = ((a.to(tl.int32, bitcast=True) >> 23) & 0xFF) - 127  # floor(log2(a)); -127 for 0
    e = tl.maximum(e, -6)  # below 2**-6 the format is subnormal, with a fixed step of 2**-9
    # a / step is exact (a power-of-two scaling) and lies in [0, 16); rounding it is the cast.
    m = _round_half_even(a * _pow2_from_exponent(3 - e))
    v = m * _pow2_from_exponent(e - 3)  # the rounded value, on the e4m3 grid
    vbits = v.to(tl.int32, bitcast=True)
    normal = (((vbits >> 23) & 0xFF) - 120) * 8 + ((vbits >> 20) & 0x7)  # (e + 7) << 3 | 3 bits
    code = tl.where(v >= 0.015625, normal, m.to(tl.int32))  # subnormal: the code is m * 2**-9
    return (code | sign).to(tl.uint8)


@triton.jit
def _decode_e4m3fn(code):
    """fp32 values of uint8 float8_e4m3fn bit patterns (0x7F / 0xFF are NaN)."""
    c = code.to(tl.int32)
    e = (c >> 3) & 0xF
    m = c & 0x7
    normal = (((e + 120) << 23) | (m << 20)).to(tl.float32, bitcast=True)
    mag = tl.where(e == 0, m.to(tl.float32) * 0.001953125, normal)  # subnormal: m * 2**-9
    nan = (c * 0 + 0x7FC00000).to(tl.float32, bitcast=True)  # the canonical fp32 quiet NaN
    mag = tl.where((e == 15) & (m == 7), nan, mag)
    return tl.where((c & 0x80) != 0, -mag, mag)


@triton.jit
def _per_token_group_quant_8bit_kernel(
    x_ptr,  # fp16/bf16/fp32 [n_groups, group_size], contiguous
    q_ptr,  # int8, or uint8 bit patterns of float8_e4m3fn, [n_groups, group_size]
    scale_ptr,  # fp32 [n_groups]
    n_groups,
    group_size,
    eps,  # fp32 floor of the absmax
    qmax,  # 127.0 (int8) or 448.0 (fp8)
    IS_FP8: tl.constexpr,
    SCALE_UE8M0: tl.constexpr,
    BLOCK_G: tl.constexpr,  # groups per program
    BLOCK_SIZE: tl.constexpr,  # next power of two >= group_size
):
    pid = tl.program_id(0)
    offs_g = (pid * BLOCK_G + tl.arange(0, BLOCK_G)).to(tl.int64)
    offs_c = tl.arange(0, BLOCK_SIZE)
    mask_g = offs_g < n_groups
    mask = mask_g[:, None] & (offs_c[None, :] < group_size)
    offs = offs_g[:, None] * group_size + offs_c[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    absmax = tl.maximum(tl.max(tl.abs(x), axis=1), eps)
    scale = tl.math.div_rn(absmax, qmax)
    if SCALE_UE8M0:
        sbits = scale.to(tl.int32, bitcast=True)  # scale > 0 and normal: no sign bit
        exponent = (sbits >> 23) + ((sbits & 0x7FFFFF) != 0).to(tl.int32)
        scale = (exponent << 23).to(tl.float32, bitcast=True)
    y = tl.math.div_rn(x, scale[:, None])
    y = tl.minimum(tl.maximum(y, -qmax), qmax)
    if IS_FP8:
        q = _encode_e4m3fn(y)
    else:
        q = _round_half_even(y).to(tl.int8)
    tl.store(q_ptr + offs, q, mask=mask)
    tl.store(scale_ptr + offs_g, scale, mask=mask_g)


@triton.jit
def _per_token_group_dequant_8bit_kernel(
    q_ptr,  # int8, or uint8 bit patterns of float8_e4m3fn, [n_groups, group_size]
    scale_ptr,  # fp32 [n_groups]
    out_ptr,  # fp16/bf16/fp32 [n_groups, group_size]
    n_groups,
    group_size,
    IS_FP8: tl.constexpr,
    BLOCK_G: tl.constexpr,  # groups per program
    BLOCK_SIZE: tl.constexpr,  # next power of two >= group_size
):
    pid = tl.program_id(0)
    offs_g = (pid * BLOCK_G + tl.arange(0, BLOCK_G)).to(tl.int64)
    offs_c = tl.arange(0, BLOCK_SIZE)
    mask_g = offs_g < n_groups
    mask = mask_g[:, None] & (offs_c[None, :] < group_size)
    offs = offs_g[:, None] * group_size + offs_c[None, :]
    q = tl.load(q_ptr + offs, mask=mask, other=0)
    if IS_FP8:
        qf = _decode_e4m3fn(q)
    else:
        qf = q.to(tl.float32)
    scale = tl.load(scale_ptr + offs_g, mask=mask_g, other=0.0)
    tl.store(out_ptr + offs, (qf * scale[:, None]).to(out_ptr.dtype.element_ty), mask=mask)


def _ceil_pow2_ref(scale: torch.Tensor) -> torch.Tensor:
    """2 ** ceil(log2(scale)) for positive normal fp32 scales, from the bits (exact)."""
    bits = scale.view(torch.int32)
    exponent = (bits >> 23) + ((bits & 0x7FFFFF) != 0).to(torch.int32)
    return (exponent << 23).view(torch.float32)


def per_token_group_quant_8bit_ref(
    x: torch.Tensor,
    group_size: int,
    dtype: torch.dtype = torch.int8,
    eps: float = 1e-10,
    scale_ue8m0: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pure-torch reference: (x_q [..., H] in `dtype`, scales fp32 [..., H // group_size])."""
    qmax = _QMAX[dtype]
    shape = x.shape
    groups = x.float().reshape(*shape[:-1], shape[-1] // group_size, group_size)
    absmax = groups.abs().amax(dim=-1, keepdim=True)
    scale = torch.maximum(absmax, torch.tensor(eps, dtype=torch.float32)) / qmax
    if scale_ue8m0:
        scale = _ceil_pow2_ref(scale)
    y = (groups / scale).clamp(-qmax, qmax)
    q = torch.round(y).to(torch.int8) if dtype == torch.int8 else y.to(dtype)
    return q.reshape(shape), scale.squeeze(-1)


def per_token_group_dequant_8bit_ref(
    x_q: torch.Tensor,
    scales: torch.Tensor,
    group_size: int,
    out_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Pure-torch reference: float32(x_q) * scale of its group, cast to `out_dtype`."""
    shape = x_q.shape
    groups = x_q.float().reshape(*shape[:-1], shape[-1] // group_size, group_size)
    return (groups * scales.float().unsqueeze(-1)).reshape(shape).to(out_dtype)


def _check_group_size(op: str, arg: str, x: torch.Tensor, group_size: int) -> None:
    """`x` (named `arg` in messages) splits into whole groups of `group_size` channels."""
    if x.dim() < 1:
        raise ValueError(f"{op}: {arg} must have a last (hidden) dimension, got {tuple(x.shape)}")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"{op}: group_size must be a positive int, got {group_size!r}")
    if group_size > MAX_FUSED_SIZE:  # one group is reduced inside one program
        raise ValueError(f"{op}: group_size must be <= {MAX_FUSED_SIZE}, got {group_size}")
    if x.shape[-1] % group_size != 0:
        raise ValueError(
            f"{op}: {arg}'s last dimension must be a multiple of group_size={group_size}, "
            f"got {tuple(x.shape)}"
        )


def _launch_shape(n_groups: int, group_size: int) -> tuple[int, int, tuple[int]]:
    """(BLOCK_G, BLOCK_SIZE, grid) for `n_groups` groups of `group_size` elements."""
    block_size = next_power_of_2(group_size)
    block_g = min(max(_TILE_ELEMENTS // block_size, 1), next_power_of_2(n_groups))
    return block_g, block_size, (cdiv(n_groups, block_g),)


def per_token_group_quant_8bit(
    x: torch.Tensor,
    group_size: int,
    dtype: torch.dtype = torch.int8,
    eps: float = 1e-10,
    scale_ue8m0: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize x [..., H] per group of `group_size` channels -> (x_q [..., H], scales fp32)."""
    op = "per_token_group_quant_8bit"
    _check_group_size(op, "x", x, group_size)
    if x.dtype not in _FLOAT_DTYPES:
        raise ValueError(f"{op}: x must be fp16, bf16 or fp32, got {x.dtype}")
    if dtype not in _QMAX:
        raise ValueError(f"{op}: dtype must be torch.int8 or torch.float8_e4m3fn, got {dtype}")
    qmax = _QMAX[dtype]
    # The scale must be a normal fp32 number (ue8m0 rounds it by its exponent bits).
    if not eps >= qmax * _FP32_TINY or eps == float("inf"):
        raise ValueError(f"{op}: eps must be finite and >= {qmax * _FP32_TINY:.3g}, got {eps!r}")
    shape = x.shape
    n_groups = x.numel() // group_size
    x_q = torch.empty(shape, dtype=dtype, device=x.device)
    scales = torch.empty(
        (*shape[:-1], shape[-1] // group_size), dtype=torch.float32, device=x.device
    )
    if n_groups == 0:
        return x_q, scales
    if not use_triton(x):
        return per_token_group_quant_8bit_ref(x, group_size, dtype, eps, scale_ue8m0)
    is_fp8 = dtype == torch.float8_e4m3fn
    block_g, block_size, grid = _launch_shape(n_groups, group_size)
    _per_token_group_quant_8bit_kernel[grid](
        x.contiguous(),
        x_q.view(torch.uint8) if is_fp8 else x_q,
        scales,
        n_groups,
        group_size,
        float(eps),
        qmax,
        IS_FP8=is_fp8,
        SCALE_UE8M0=bool(scale_ue8m0),
        BLOCK_G=block_g,
        BLOCK_SIZE=block_size,
        num_warps=_NUM_WARPS,
    )
    return x_q, scales


def per_token_group_dequant_8bit(
    x_q: torch.Tensor,
    scales: torch.Tensor,
    group_size: int,
    out_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Dequantize x_q [..., H] (int8 or float8_e4m3fn) with fp32 scales [..., H // group_size]."""
    op = "per_token_group_dequant_8bit"
    _check_group_size(op, "x_q", x_q, group_size)
    if x_q.dtype not in _QMAX:
        raise ValueError(f"{op}: x_q must be int8 or float8_e4m3fn, got {x_q.dtype}")
    expected = (*x_q.shape[:-1], x_q.shape[-1] // group_size)
    if tuple(scales.shape) != expected:
        raise ValueError(f"{op}: scales must have shape {expected}, got {tuple(scales.shape)}")
    if scales.dtype != torch.float32:
        raise ValueError(f"{op}: scales must be float32, got {scales.dtype}")
    if scales.device != x_q.device:
        raise ValueError(f"{op}: scales must be on x_q's device {x_q.device}, got {scales.device}")
    if out_dtype not in _FLOAT_DTYPES:
        raise ValueError(f"{op}: out_dtype must be fp16, bf16 or fp32, got {out_dtype}")
    n_groups = x_q.numel() // group_size
    if n_groups == 0:
        return torch.empty(x_q.shape, dtype=out_dtype, device=x_q.device)
    if not use_triton(x_q, scales):
        return per_token_group_dequant_8bit_ref(x_q, scales, group_size, out_dtype)
    is_fp8 = x_q.dtype == torch.float8_e4m3fn
    out = torch.empty(x_q.shape, dtype=out_dtype, device=x_q.device)
    x_q = x_q.contiguous()
    block_g, block_size, grid = _launch_shape(n_groups, group_size)
    _per_token_group_dequant_8bit_kernel[grid](
        x_q.view(torch.uint8) if is_fp8 else x_q,
        scales.contiguous(),
        out,
        n_groups,
        group_size,
        IS_FP8=is_fp8,
        BLOCK_G=block_g,
        BLOCK_SIZE=block_size,
        num_warps=_NUM_WARPS,
    )
    return out


__all__ = [
    "per_token_group_dequant_8bit",
    "per_token_group_dequant_8bit_ref",
    "per_token_group_quant_8bit",
    "per_token_group_quant_8bit_ref",
]
