"""Normalization: Hugging Face RMSNorm, the draft heads' e/h norm, residual add + RMSNorm."""

from sglang.kernels.ops.layernorm.fused_eh_norm import fused_eh_norm, fused_eh_norm_ref
from sglang.kernels.ops.layernorm.norm import fused_add_rmsnorm, fused_add_rmsnorm_ref
from sglang.kernels.ops.layernorm.rmsnorm_hf import rmsnorm_hf, rmsnorm_hf_ref

__all__ = [
    "fused_add_rmsnorm",
    "fused_add_rmsnorm_ref",
    "fused_eh_norm",
    "fused_eh_norm_ref",
    "rmsnorm_hf",
    "rmsnorm_hf_ref",
]
