"""`per_token_group_quant`: 8-bit quantization with one scale per (token, group of channels).

Upstream's successor of `per_token_group_quant_8bit` (0.5.16 `jit_kernel/`; gone from
`kernels/ops` in 0.5.17, whose `per_token_group_quant.py` is this operator). Its contract, read
from sglang 0.5.17 `kernels/ops/quantization/per_token_group_quant.py` and the kernel it launches
(`jit/csrc/gemm/per_token_group_quant.cuh`): input bf16/fp16, `group_size` in 16..256 (a power
of two), output int8 or float8_e4m3fn (default), written into `output_q` / `output_s` when
given, else allocated; `(output_q, output_s)` is returned. For each token t and group g of
`group_size` channels, with qmax = 127 (int8) or 448 (fp8):

    amax      = max(max_i |x[t, g, i]|, 1e-10)
    scale     = amax * float32(1 / qmax)                  the dequant scale, stored in output_s
    int8:     q = trunc(clamp(x * float32(qmax / amax), -128, 127))   (truncation, as upstream)
    fp8:      q = e4m3(min(x * float32(qmax / amax), 448))           (RNE, saturating to +-448)
    ue8m0:    e = biased exponent of scale, + 1 if its mantissa is non-zero (2**ceil(log2))
              q = e4m3(min(x * 2**(127 - e), 448)); output_s holds the byte e, four groups per
              int32 (byte b of int32 j is group 4j + b; bytes past the last group are 0)

NaN is left out of the absmax (upstream's `__hmax` returns the non-NaN operand; a group of NaN
gets the 1e-10 floor), and a NaN product quantizes to +448 (fp8) or -128 (int8), as upstream's
fminf/fmaxf clamps give: a NaN input, and also +-inf, whose group has amax = inf, so the
multiplier qmax / inf is 0 and inf * 0 is NaN (the group's finite values give 0, its scale inf).

0.5.23's additions, with its semantics: fp32 input (without `fuse_silu_and_mul`, as upstream's
`run_fp32`: the same absmax, scale and clamps on fp32 loads); `sorted_token_ids` (int32 `[>= T]`, any stride),
`num_tokens_post_padded` (int32 device scalar) and `num_valid_tokens` select the sorted MoE
layout of a flat input: a row at or past the count, or whose id is `>= num_valid_tokens`, is
padding and left unwritten (upstream: "may be skipped"). `silu_and_mul_mode="dense"` rounds
`silu(gate) * up` once (fp32 silu and product) instead of rounding the silu first; upstream
allows it only with `fuse_silu_and_mul`, a flat input, fp8 output and group 128, and so does
this (ValueError otherwise).
`fuse_silu_and_mul`: input [..., 2 * hidden] is (gate, up) and x = T(T(silu(gate)) * up), T the
input dtype. `masked_m` [E] (int32/int64) with input [E, T_pad, ...]: only tokens t < masked_m[e]
of expert e are written (read on the device; the host never sees the counts). `expected_m` is a
launch hint and unused here. Scale layouts follow `output_s`: fp32 row-major (contiguous) or
column-major (token stride < group stride), int32 packed ue8m0 in either; when allocated,
`column_major_scales` picks the column-major (TMA-aligned) one.

The kernel: one program per token row and block of groups; the absmax, the scale and the codes
of a group are one pass over x. Rounding is done by hand where Triton's interpreter and GPU
disagree, so both give the reference's bits: bf16 rounding (silu-and-mul) by its bits, and fp8
encoded into uint8 patterns (the Triton 3.9 interpreter's fp32 -> fp8e4nv cast drops the carry
when rounding crosses a power of two, 1.999 -> 1.0, measured).

Differs from upstream: (1) `qmax / amax` is an IEEE division (`div_rn`); upstream compiles with
`--use_fast_math`, whose division may be an ulp off, which can move an int8 code across a
truncation boundary. (2) The ue8m0 multiply is done in fp32, where upstream multiplies in the
input dtype: for bf16 the two agree bit for bit (a power-of-two scaling of a bf16 value is exact),
for fp16 upstream's multiplier 2**(127 - e) overflows to inf once amax < 448 * 2**-15 and every
code saturates to 448; here it does not. (3) silu uses an exact exp (upstream: `__expf`; its
dense mode also divides `qmax / amax` with `__fdividef`). (4) `output_q`, the input and the
index tensors (`masked_m`, `sorted_token_ids`) may have any strides. (5) NaN follows 0.5.17:
0.5.23 keeps a NaN as an fp8 NaN code for bf16 input (no clamp on its bf16 -> fp8 path and
`__hmin2_nan` under ue8m0), where this, like 0.5.17, writes +448.
"""

from __future__ import annotations

from typing import Literal, Optional, Tuple

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import cdiv, use_triton

# Largest magnitude of each output format: int8 clamps to [-128, 127] (its full range, as
# upstream), float8_e4m3fn's largest finite value is 448 = 1.75 * 2**8.
_QMAX = {torch.int8: 127.0, torch.float8_e4m3fn: 448.0}
_QMIN = {torch.int8: -128.0, torch.float8_e4m3fn: -448.0}
# 0.5.17's kernel takes 16-bit inputs; 0.5.23 adds fp32 (without the fused silu), the same
# math on fp32 loads.
_INPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
# Upstream's template instantiations: a group is 1 to 32 lanes of 8 or 16 values.
_SUPPORTED_GROUP_SIZES = (16, 32, 64, 128, 256)
# The absmax floor upstream bakes in (so an all-zero group has a finite, positive scale).
_EPS = 1e-10
# About 2048 elements per program (several groups of one token): 16 values per thread at 4
# warps, enough to hide the load latency without spilling.
_TILE_ELEMENTS = 2048
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
def _round_to_bf16(x):
    """fp32 x rounded to the nearest bf16 (ties to even), as an fp32 value (finite x)."""
    bits = x.to(tl.int32, bitcast=True)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    return (bits & -65536).to(tl.float32, bitcast=True)


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
def _per_token_group_quant_kernel(
    x_ptr,  # bf16/fp16 [E, T, H_in] (H_in = 2 * H with FUSE_SILU_AND_MUL)
    q_ptr,  # int8, or uint8 bit patterns of float8_e4m3fn, [E, T, H]
    s_ptr,  # fp32 scales, or uint8 bytes of the int32-packed ue8m0 scales
    masked_m_ptr,  # int32/int64 [E] tokens to write per expert (unused unless MASKED)
    masked_m_stride,  # elements between experts' counts
    sorted_ptr,  # int32 [>= T] sorted_token_ids (unused unless SORTED)
    sorted_stride,  # elements between rows' sorted ids
    n_post_ptr,  # int32 [1] num_tokens_post_padded (unused unless SORTED)
    n_valid,  # num_valid_tokens: a sorted id at or past it is padding
    n_tokens,  # T (per expert)
    n_groups,  # G = H / GROUP_SIZE
    hidden,  # H
    x_e_stride,
    x_t_stride,
    x_c_stride,
    q_e_stride,
    q_t_stride,
    q_c_stride,
    s_e_stride,  # fp32: elements; ue8m0: bytes
    s_t_stride,  # fp32: elements; ue8m0: bytes
    s_g_stride,  # fp32: elements per group; ue8m0: bytes per int32 of 4 groups
    qmax,  # 127.0 or 448.0
    qmin,  # -128.0 or -448.0
    inv_qmax,  # float32(1 / qmax)
    eps,  # the absmax floor
    IS_FP8: tl.constexpr,
    UE8M0: tl.constexpr,
    FUSE_SILU_AND_MUL: tl.constexpr,
    X_IS_BF16: tl.constexpr,
    MASKED: tl.constexpr,
    SORTED: tl.constexpr,  # skip the padding rows of the sorted MoE layout
    DENSE: tl.constexpr,  # silu_and_mul_mode="dense": one rounding of silu(gate) * up
    GROUP_SIZE: tl.constexpr,
    BLOCK_G: tl.constexpr,  # groups per program
):
    row = tl.program_id(0)  # e * T + t
    pid_g = tl.program_id(1)
    e = (row // n_tokens).to(tl.int64)
    t = (row % n_tokens).to(tl.int64)
    offs_g = (pid_g * BLOCK_G + tl.arange(0, BLOCK_G)).to(tl.int64)
    n_live = tl.zeros_like(offs_g) + n_tokens  # tokens of this expert to write
    if MASKED:
        n_live = tl.zeros_like(offs_g) + tl.load(masked_m_ptr + e * masked_m_stride).to(tl.int64)
    live = t < n_live  # [BLOCK_G], all equal
    if SORTED:  # upstream: rows at or past *num_tokens_post_padded, or padding ids, are skipped
        n_post = tl.load(n_post_ptr + tl.zeros_like(offs_g)).to(tl.int64)
        sorted_id = tl.load(sorted_ptr + t * sorted_stride + tl.zeros_like(offs_g)).to(tl.int64)
        live = live & (t < n_post) & (sorted_id < n_valid)
    offs_i = tl.arange(0, GROUP_SIZE).to(tl.int64)
    mask_g = (offs_g < n_groups) & live
    cols = offs_g[:, None] * GROUP_SIZE + offs_i[None, :]  # [BLOCK_G, GROUP_SIZE] channels
    mask = mask_g[:, None] & (cols < hidden)
    x_row = x_ptr + e * x_e_stride + t * x_t_stride
    x = tl.load(x_row + cols * x_c_stride, mask=mask, other=0.0).to(tl.float32)
    if FUSE_SILU_AND_MUL:
        up = tl.load(x_row + (cols + hidden) * x_c_stride, mask=mask, other=0.0).to(tl.float32)
        act = x / (1.0 + tl.exp(-x))
        if DENSE:  # fp32 silu and product, one rounding to the input dtype
            x = _round_to_bf16(act * up) if X_IS_BF16 else (act * up).to(tl.float16).to(tl.float32)
        elif X_IS_BF16:
            x = _round_to_bf16(_round_to_bf16(act) * up)
        else:
            x = (act.to(tl.float16).to(tl.float32) * up).to(tl.float16).to(tl.float32)
    # NaN does not count in the absmax: upstream's __hmax returns the non-NaN operand.
    amax = tl.maximum(tl.max(tl.where(x != x, 0.0, tl.abs(x)), axis=1), eps)  # [BLOCK_G]
    scale = amax * inv_qmax
    if UE8M0:
        sbits = scale.to(tl.int32, bitcast=True)  # scale > 0 and normal: no sign bit
        expo = ((sbits >> 23) & 0xFF) + ((sbits & 0x7FFFFF) != 0).to(tl.int32)
        y = x * ((254 - expo) << 23).to(tl.float32, bitcast=True)[:, None]  # 2 ** (127 - e)
    else:
        y = x * tl.math.div_rn(tl.zeros_like(amax) + qmax, amax)[:, None]
    # A NaN product (a NaN input, or +-inf times the 0 multiplier of an inf absmax) takes
    # upstream's clamps: fminf(NaN, 448) = 448 for fp8, fmaxf(NaN, -128) = -128 for int8.
    if IS_FP8:
        q = _encode_e4m3fn(tl.minimum(tl.maximum(tl.where(y != y, qmax, y), qmin), qmax))
    else:
        q = tl.where(y != y, qmin, tl.minimum(tl.maximum(y, qmin), qmax)).to(tl.int8)
    q_row = q_ptr + e * q_e_stride + t * q_t_stride
    tl.store(q_row + cols * q_c_stride, q, mask=mask)
    s_row = s_ptr + e * s_e_stride + t * s_t_stride
    if UE8M0:
        # Groups up to the next multiple of 4 own a byte; those past the last group get 0.
        pad = (offs_g < (n_groups + 3) // 4 * 4) & live
        byte = tl.where(offs_g < n_groups, expo, 0).to(tl.uint8)
        tl.store(s_row + (offs_g // 4) * s_g_stride + offs_g % 4, byte, mask=pad)
    else:
        tl.store(s_row + offs_g * s_g_stride, scale, mask=mask_g)


def _round_to(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return x.to(dtype).to(torch.float32)


def _quantize_ref(x: torch.Tensor, qdtype: torch.dtype, ue8m0: bool, group_size: int):
    """fp32 x [..., H] -> (codes in qdtype, fp32 scales, int32 ue8m0 exponents)."""
    qmax, qmin = _QMAX[qdtype], _QMIN[qdtype]
    groups = x.reshape(*x.shape[:-1], x.shape[-1] // group_size, group_size)
    # NaN does not count in the absmax, as in the kernel and upstream's (__hmax).
    amax = torch.where(torch.isnan(groups), 0.0, groups.abs()).amax(-1).clamp(min=_EPS)
    scale = amax * torch.tensor(1.0 / qmax, dtype=torch.float32)
    sbits = scale.view(torch.int32)
    expo = ((sbits >> 23) & 0xFF) + ((sbits & 0x7FFFFF) != 0).to(torch.int32)
    if ue8m0:
        mult = ((254 - expo) << 23).view(torch.float32)
    else:
        mult = torch.tensor(qmax, dtype=torch.float32) / amax
    y = groups * mult.unsqueeze(-1)
    # A NaN product takes upstream's clamps: +448 (fp8, fminf) or -128 (int8, fmaxf).
    y = torch.where(torch.isnan(y), torch.tensor(qmax if qdtype != torch.int8 else qmin), y)
    y = y.clamp(qmin, qmax)
    if qdtype == torch.int8:
        codes = torch.trunc(y).to(torch.int8)
    else:
        codes = y.to(torch.float8_e4m3fn)
    return codes.reshape(x.shape), scale, expo


def per_token_group_quant_ref(
    input: torch.Tensor,
    output_q: Optional[torch.Tensor] = None,
    output_s: Optional[torch.Tensor] = None,
    group_size: int = 128,
    scale_ue8m0: bool = False,
    fuse_silu_and_mul: bool = False,
    masked_m: Optional[torch.Tensor] = None,
    expected_m: Optional[int] = None,
    *,
    out_dtype: Optional[torch.dtype] = None,
    column_major_scales: bool = False,
    sorted_token_ids: Optional[torch.Tensor] = None,
    num_tokens_post_padded: Optional[torch.Tensor] = None,
    num_valid_tokens: int = 0,
    silu_and_mul_mode: str = "legacy",
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Pure-torch reference with the same contract (the GPU's rounding: round to nearest)."""
    op = "per_token_group_quant_ref"
    output_q, output_s = _prepare(
        op, input, output_q, output_s, group_size, scale_ue8m0,
        fuse_silu_and_mul, masked_m, out_dtype, column_major_scales,
    )
    sorted_rows = _check_sorted(op, input, masked_m, sorted_token_ids, num_tokens_post_padded, num_valid_tokens)
    dense = _check_mode(op, silu_and_mul_mode, input, output_q, group_size, fuse_silu_and_mul, masked_m,
                        sorted_rows)
    _quant_torch(input, output_q, output_s, group_size, scale_ue8m0, fuse_silu_and_mul, masked_m,
                 sorted_rows, num_valid_tokens, dense)
    return output_q, output_s


def _live_rows(q3, masked_m, sorted_rows, num_valid_tokens) -> torch.Tensor:
    """[E, T] bool: the rows the op writes (masked_m's counts; the sorted layout's real rows)."""
    rows = torch.arange(q3.shape[1], device=q3.device)
    live = torch.ones(q3.shape[:2], dtype=torch.bool, device=q3.device)
    if masked_m is not None:
        live = rows[None, :] < masked_m[:, None]
    if sorted_rows is not None:
        sorted_token_ids, num_tokens_post_padded = sorted_rows
        n_post = num_tokens_post_padded.reshape(-1)[0]
        live = live & ((rows < n_post) & (sorted_token_ids[: q3.shape[1]] < num_valid_tokens))[None, :]
    return live


def _quant_torch(input, output_q, output_s, group_size, scale_ue8m0, fuse_silu_and_mul, masked_m,
                 sorted_rows=None, num_valid_tokens=0, dense=False):
    x3, q3, s3 = _as_3d(input), _as_3d(output_q), _as_3d(output_s)
    hidden = q3.shape[-1]
    x = x3.float()
    if fuse_silu_and_mul:
        gate, up = x[..., :hidden], x[..., hidden:]
        act = torch.nn.functional.silu(gate)
        # legacy: silu rounded to the input dtype, then the product; dense: one rounding.
        x = _round_to((act if dense else _round_to(act, input.dtype)) * up, input.dtype)
    codes, scale, expo = _quantize_ref(x, q3.dtype, scale_ue8m0, group_size)
    live = _live_rows(q3, masked_m, sorted_rows, num_valid_tokens)
    q3.copy_(torch.where(live[..., None], codes, q3))
    n_groups = hidden // group_size
    if scale_ue8m0:
        n_pad = (n_groups + 3) // 4 * 4
        expo = torch.nn.functional.pad(expo, (0, n_pad - n_groups)).to(torch.uint8)
        packed = expo.reshape(*expo.shape[:-1], n_pad // 4, 4).view(torch.int32).squeeze(-1)
        s3.copy_(torch.where(live[..., None], packed, s3))
    else:
        s3.copy_(torch.where(live[..., None], scale, s3))


def _as_3d(t: torch.Tensor) -> torch.Tensor:
    return t if t.dim() == 3 else t.unsqueeze(0)


def _allocate_outputs(input, group_size, out_dtype, scale_ue8m0, column_major_scales, hidden):
    """Upstream's layouts (`_allocate_outputs` and `create_per_token_group_quant_fp8_output_scale`)."""
    out_shape = (*input.shape[:-1], hidden)
    output_q = torch.empty(out_shape, device=input.device, dtype=out_dtype)
    n_groups = hidden // group_size
    *batch, n_tok = out_shape[:-1]
    dev = input.device
    if scale_ue8m0 and not column_major_scales:
        output_s = torch.empty((*out_shape[:-1], (n_groups + 3) // 4), device=dev, dtype=torch.int32)
    elif scale_ue8m0:
        aligned_mn, aligned_k = cdiv(n_tok, 4) * 4, cdiv(n_groups, 4) * 4
        output_s = torch.empty((*batch, aligned_k // 4, aligned_mn), device=dev, dtype=torch.int32)
        output_s = output_s.transpose(-1, -2)[..., :n_tok, :]
    elif column_major_scales:
        aligned = cdiv(n_tok, 4) * 4
        output_s = torch.empty((*batch, n_groups, aligned), device=dev, dtype=torch.float32)
        output_s = output_s.transpose(-1, -2)[..., :n_tok, :]
    else:
        output_s = torch.empty((*out_shape[:-1], n_groups), device=dev, dtype=torch.float32)
    return output_q, output_s


def _prepare(op, input, output_q, output_s, group_size, scale_ue8m0, fuse_silu_and_mul,
             masked_m, out_dtype, column_major_scales):
    """Host-side checks (shapes, dtypes, devices; never a tensor value) and the outputs."""
    if not isinstance(input, torch.Tensor) or input.dim() not in (2, 3):
        raise ValueError(f"{op}: input must be a 2-D [T, H] or 3-D [E, T, H] tensor, got "
                         f"{tuple(getattr(input, 'shape', ()))}")
    if input.dtype not in _INPUT_DTYPES:
        raise ValueError(f"{op}: input must be bf16, fp16 or fp32, got {input.dtype}")
    if fuse_silu_and_mul and input.dtype == torch.float32:
        raise ValueError(f"{op}: fuse_silu_and_mul needs a bf16 or fp16 input (upstream's fp32 path "
                         "has no fused silu), got float32")
    if isinstance(group_size, bool) or group_size not in _SUPPORTED_GROUP_SIZES:
        raise ValueError(f"{op}: group_size must be one of {_SUPPORTED_GROUP_SIZES}, got {group_size!r}")
    in_hidden = input.shape[-1]
    if fuse_silu_and_mul and in_hidden % 2:
        raise ValueError(f"{op}: fuse_silu_and_mul needs an even last dimension, got {tuple(input.shape)}")
    hidden = in_hidden // 2 if fuse_silu_and_mul else in_hidden
    if hidden % group_size:
        raise ValueError(f"{op}: the quantized width {hidden} must be a multiple of "
                         f"group_size={group_size} (input {tuple(input.shape)})")
    for name, t in (("output_q", output_q), ("output_s", output_s), ("masked_m", masked_m)):
        if t is not None and not isinstance(t, torch.Tensor):
            raise ValueError(f"{op}: {name} must be a torch.Tensor or None, got {type(t).__name__}")  # noqa: TRY004
    if masked_m is not None:
        if input.dim() != 3:
            raise ValueError(f"{op}: masked_m needs a 3-D [E, T, H] input, got {tuple(input.shape)}")
        if masked_m.shape != (input.shape[0],) or masked_m.dtype not in (torch.int32, torch.int64):
            raise ValueError(f"{op}: masked_m must be int32 [{input.shape[0]}], got "
                             f"{tuple(masked_m.shape)} {masked_m.dtype}")
        if masked_m.device != input.device:
            raise ValueError(f"{op}: masked_m must be on {input.device}, got {masked_m.device}")
    if output_q is None:
        if output_s is not None:
            raise ValueError(f"{op}: output_s was given without output_q; pass both or neither")
        out_dtype = out_dtype or torch.float8_e4m3fn
        if out_dtype not in _QMAX:
            raise ValueError(f"{op}: out_dtype must be torch.float8_e4m3fn or torch.int8, got {out_dtype}")
        return _allocate_outputs(input, group_size, out_dtype, scale_ue8m0, column_major_scales, hidden)
    if output_s is None:
        raise ValueError(f"{op}: output_q was given without output_s; pass both or neither")
    if out_dtype is not None and out_dtype != output_q.dtype:
        raise ValueError(f"{op}: out_dtype {out_dtype} disagrees with output_q's {output_q.dtype}")
    if output_q.dtype not in _QMAX:
        raise ValueError(f"{op}: output_q must be float8_e4m3fn or int8, got {output_q.dtype}")
    expected_q = (*input.shape[:-1], hidden)
    if tuple(output_q.shape) != expected_q:
        raise ValueError(f"{op}: output_q must have shape {expected_q}, got {tuple(output_q.shape)}")
    n_groups = hidden // group_size
    if output_s.dtype == torch.int32:
        if not scale_ue8m0:
            raise ValueError(f"{op}: int32-packed scale buffers require scale_ue8m0=True")
        if output_q.dtype != torch.float8_e4m3fn:
            raise ValueError(f"{op}: ue8m0 scales imply a float8_e4m3fn output_q, got {output_q.dtype}")
        expected_s = (*input.shape[:-1], (n_groups + 3) // 4)
    elif output_s.dtype == torch.float32:
        if scale_ue8m0:
            raise ValueError(f"{op}: scale_ue8m0=True requires an int32-packed output_s")
        expected_s = (*input.shape[:-1], n_groups)
    else:
        raise ValueError(f"{op}: output_s must be float32 or int32 (packed ue8m0), got {output_s.dtype}")
    if tuple(output_s.shape) != expected_s:
        raise ValueError(f"{op}: output_s must have shape {expected_s}, got {tuple(output_s.shape)}")
    for name, t in (("output_q", output_q), ("output_s", output_s)):
        if t.device != input.device:
            raise ValueError(f"{op}: {name} must be on {input.device}, got {t.device}")
    return output_q, output_s


def _check_sorted(op, input, masked_m, sorted_token_ids, num_tokens_post_padded, num_valid_tokens):
    """0.5.23's sorted MoE layout: (sorted_token_ids, num_tokens_post_padded), or None. Host-side
    checks of metadata only (upstream's: int32 ids covering every row, an int32 device count)."""
    if sorted_token_ids is None:
        if num_tokens_post_padded is not None:
            raise ValueError(f"{op}: num_tokens_post_padded was given without sorted_token_ids; "
                             "pass both (the sorted layout) or neither")
        return None
    if masked_m is not None:
        raise ValueError(f"{op}: sorted_token_ids and masked_m select two layouts; pass one")
    if input.dim() != 2:
        raise ValueError(f"{op}: sorted_token_ids needs a 2-D [T, H] input, got {tuple(input.shape)}")
    for name, t, length in (("sorted_token_ids", sorted_token_ids, input.shape[0]),
                            ("num_tokens_post_padded", num_tokens_post_padded, 1)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.int32 or t.numel() < length:
            got = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{op}: {name} must be an int32 tensor of at least {length} elements, got {got}")
        if t.device != input.device:
            raise ValueError(f"{op}: {name} must be on {input.device}, got {t.device}")
    if sorted_token_ids.dim() != 1:
        raise ValueError(f"{op}: sorted_token_ids must be 1-D, got {tuple(sorted_token_ids.shape)}")
    if isinstance(num_valid_tokens, bool) or not isinstance(num_valid_tokens, int) or not (
            0 <= num_valid_tokens <= 2**31 - 1):
        raise ValueError(f"{op}: num_valid_tokens must be an int in [0, 2**31), got {num_valid_tokens!r}")
    return sorted_token_ids, num_tokens_post_padded


def _check_mode(op, mode, input, output_q, group_size, fuse_silu_and_mul, masked_m, sorted_rows) -> bool:
    """0.5.23's `silu_and_mul_mode`: True for "dense"; upstream's limits on it, as ValueErrors."""
    if mode not in ("legacy", "dense"):
        raise ValueError(f"{op}: silu_and_mul_mode must be 'legacy' or 'dense', got {mode!r}")
    if mode == "legacy":
        return False
    if not (fuse_silu_and_mul and output_q.dtype == torch.float8_e4m3fn and group_size == 128
            and masked_m is None and sorted_rows is None):
        raise ValueError(f"{op}: silu_and_mul_mode='dense' requires fuse_silu_and_mul=True, a flat "
                         "(not masked, not sorted) input, float8_e4m3fn output and group_size=128, as "
                         "upstream's; use silu_and_mul_mode='legacy'")
    return True


def _bytes_of(t: torch.Tensor) -> torch.Tensor:
    """A flat uint8 tensor starting at `t`'s first byte (a view of its storage, any strides)."""
    storage = t.untyped_storage()
    start = t.storage_offset() * t.element_size()
    out = torch.empty(0, dtype=torch.uint8, device=t.device)
    return out.set_(storage, start, (storage.nbytes() - start,), (1,))


@torch.library.custom_op("sglang::per_token_group_quant", mutates_args=("output_q", "output_s"))
def _per_token_group_quant_op(
    input: torch.Tensor,
    output_q: torch.Tensor,
    output_s: torch.Tensor,
    group_size: int,
    scale_ue8m0: bool,
    fuse_silu_and_mul: bool,
    masked_m: Optional[torch.Tensor],
    sorted_token_ids: Optional[torch.Tensor],
    num_tokens_post_padded: Optional[torch.Tensor],
    num_valid_tokens: int,
    dense: bool,
) -> None:
    meta = [t for t in (masked_m, sorted_token_ids, num_tokens_post_padded) if t is not None]
    if output_q.numel() == 0:
        return
    sorted_rows = (sorted_token_ids, num_tokens_post_padded) if sorted_token_ids is not None else None
    if not use_triton(input, output_q, output_s, *meta):
        _quant_torch(input, output_q, output_s, group_size, scale_ue8m0, fuse_silu_and_mul, masked_m,
                     sorted_rows, num_valid_tokens, dense)
        return
    x3, q3, s3 = _as_3d(input), _as_3d(output_q), _as_3d(output_s)
    n_exp, n_tok, hidden = q3.shape
    n_groups = hidden // group_size
    is_fp8 = q3.dtype == torch.float8_e4m3fn
    if scale_ue8m0:  # bytes of the int32 words: 4 per stride step, group byte g % 4 in a word
        s_ptr, s_strides = _bytes_of(s3), [4 * s for s in s3.stride()]
    else:
        s_ptr, s_strides = s3, list(s3.stride())
    block_g = min(max(_TILE_ELEMENTS // group_size, 1), triton.next_power_of_2(cdiv(n_groups, 4) * 4))
    qmax = _QMAX[q3.dtype]
    _per_token_group_quant_kernel[(n_exp * n_tok, cdiv(cdiv(n_groups, 4) * 4, block_g))](
        x3,
        q3.view(torch.uint8) if is_fp8 else q3,
        s_ptr,
        masked_m if masked_m is not None else s3,  # a valid pointer the kernel never reads
        masked_m.stride(0) if masked_m is not None else 0,
        sorted_token_ids if sorted_token_ids is not None else s3,  # likewise
        sorted_token_ids.stride(0) if sorted_token_ids is not None else 0,
        num_tokens_post_padded if num_tokens_post_padded is not None else s3,  # likewise
        num_valid_tokens,
        n_tok,
        n_groups,
        hidden,
        *x3.stride(),
        *q3.stride(),
        *s_strides,
        qmax,
        _QMIN[q3.dtype],
        1.0 / qmax,
        _EPS,
        IS_FP8=is_fp8,
        UE8M0=bool(scale_ue8m0),
        FUSE_SILU_AND_MUL=bool(fuse_silu_and_mul),
        X_IS_BF16=input.dtype == torch.bfloat16,
        MASKED=masked_m is not None,
        SORTED=sorted_token_ids is not None,
        DENSE=bool(dense),
        GROUP_SIZE=group_size,
        BLOCK_G=block_g,
        num_warps=_NUM_WARPS,
    )


@_per_token_group_quant_op.register_fake
def _(input, output_q, output_s, group_size, scale_ue8m0, fuse_silu_and_mul, masked_m, sorted_token_ids,
      num_tokens_post_padded, num_valid_tokens, dense) -> None:
    return None


def per_token_group_quant(
    input: torch.Tensor,
    output_q: Optional[torch.Tensor] = None,
    output_s: Optional[torch.Tensor] = None,
    group_size: int = 128,
    scale_ue8m0: bool = False,
    fuse_silu_and_mul: bool = False,
    masked_m: Optional[torch.Tensor] = None,
    expected_m: Optional[int] = None,
    *,
    out_dtype: Optional[torch.dtype] = None,
    column_major_scales: bool = False,
    sorted_token_ids: Optional[torch.Tensor] = None,
    num_tokens_post_padded: Optional[torch.Tensor] = None,
    num_valid_tokens: int = 0,
    silu_and_mul_mode: Literal["legacy", "dense"] = "legacy",
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Per-token-group quantization of input [T, H] / [E, T, H]; returns (output_q, output_s).

    The last four keywords are 0.5.23's, with its semantics: `sorted_token_ids` (int32, at least
    T ids, any stride) with `num_tokens_post_padded` (int32 device scalar) and `num_valid_tokens`
    selects the sorted MoE layout, whose padding rows (at or past the count, or with an id >=
    `num_valid_tokens`) are left unwritten; `silu_and_mul_mode="dense"` rounds `silu(gate) * up`
    once (fp32 silu and product) instead of rounding the silu first.
    """
    op = "per_token_group_quant"
    output_q, output_s = _prepare(
        op, input, output_q, output_s, group_size, scale_ue8m0,
        fuse_silu_and_mul, masked_m, out_dtype, column_major_scales,
    )
    sorted_rows = _check_sorted(op, input, masked_m, sorted_token_ids, num_tokens_post_padded, num_valid_tokens)
    dense = _check_mode(op, silu_and_mul_mode, input, output_q, group_size, fuse_silu_and_mul, masked_m,
                        sorted_rows)
    _per_token_group_quant_op(
        input, output_q, output_s, group_size, bool(scale_ue8m0), bool(fuse_silu_and_mul), masked_m,
        sorted_token_ids, num_tokens_post_padded, num_valid_tokens, dense,
    )
    return output_q, output_s


__all__ = ["per_token_group_quant", "per_token_group_quant_ref"]
