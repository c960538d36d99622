"""Quantization group: 8-bit (int8 / float8_e4m3fn) quantization with per-token-group scales.

- `per_token_group_quant_8bit(x, group_size, dtype, eps, scale_ue8m0)` -> (x_q, scales)
- `per_token_group_dequant_8bit(x_q, scales, group_size, out_dtype)` -> x
"""

from sglang.kernels.ops.quantization.per_token_group_quant_8bit import (
    per_token_group_dequant_8bit,
    per_token_group_dequant_8bit_ref,
    per_token_group_quant_8bit,
    per_token_group_quant_8bit_ref,
)

__all__ = [
    "per_token_group_dequant_8bit",
    "per_token_group_dequant_8bit_ref",
    "per_token_group_quant_8bit",
    "per_token_group_quant_8bit_ref",
]
