"""Quantization group: 8-bit (int8 / float8_e4m3fn) quantization with per-token-group scales.

- `per_token_group_quant(input, output_q=None, output_s=None, group_size=128, ...)` ->
  `(output_q, output_s)`: upstream 0.5.17's successor of `per_token_group_quant_8bit`.
"""

from sglang.kernels.ops.quantization.per_token_group_quant import (
    per_token_group_quant,
    per_token_group_quant_ref,
)

__all__ = ["per_token_group_quant", "per_token_group_quant_ref"]
