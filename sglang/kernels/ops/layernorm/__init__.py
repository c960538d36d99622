"""Normalization: RMSNorm (sglang's and Hugging Face's), the draft heads' e/h norm, residual add + RMSNorm.

`rmsnorm` and `fused_add_rmsnorm` here are upstream 0.5.17's package-level ops (same signatures,
same rounding: `rmsnorm_op.py`); the JIT kernel's own `fused_add_rmsnorm` (upstream's
`norm.fused_add_rmsnorm`, with `cast_x_before_out_mul`) stays in `norm`, as upstream has it.
"""

from sglang.kernels.ops.layernorm.fused_eh_norm import (
    fused_eh_norm,
    fused_eh_norm_ref,
    is_supported_fused_eh_norm_hidden_size,
)
from sglang.kernels.ops.layernorm.norm import is_supported_jit_fused_add_rmsnorm_hidden_size
from sglang.kernels.ops.layernorm.rmsnorm_hf import (
    is_supported_rmsnorm_hf_hidden_size,
    rmsnorm_hf,
    rmsnorm_hf_ref,
)
from sglang.kernels.ops.layernorm.rmsnorm_op import (
    fused_add_rmsnorm,
    fused_add_rmsnorm_ref,
    rmsnorm,
    rmsnorm_ref,
)

__all__ = [
    "fused_add_rmsnorm",
    "fused_add_rmsnorm_ref",
    "fused_eh_norm",
    "fused_eh_norm_ref",
    "is_supported_fused_eh_norm_hidden_size",
    "is_supported_jit_fused_add_rmsnorm_hidden_size",
    "is_supported_rmsnorm_hf_hidden_size",
    "rmsnorm",
    "rmsnorm_hf",
    "rmsnorm_hf_ref",
    "rmsnorm_ref",
]
