"""Normalization: Hugging Face RMSNorm, the draft heads' e/h norm, residual add + RMSNorm."""

from sglang.kernels.ops.layernorm.fused_eh_norm import (
    fused_eh_norm,
    fused_eh_norm_ref,
    is_supported_fused_eh_norm_hidden_size,
)
from sglang.kernels.ops.layernorm.norm import (
    fused_add_rmsnorm,
    fused_add_rmsnorm_ref,
    is_supported_jit_fused_add_rmsnorm_hidden_size,
)
from sglang.kernels.ops.layernorm.rmsnorm_hf import (
    is_supported_rmsnorm_hf_hidden_size,
    rmsnorm_hf,
    rmsnorm_hf_ref,
)

__all__ = [
    "fused_add_rmsnorm",
    "fused_add_rmsnorm_ref",
    "fused_eh_norm",
    "fused_eh_norm_ref",
    "is_supported_fused_eh_norm_hidden_size",
    "is_supported_jit_fused_add_rmsnorm_hidden_size",
    "is_supported_rmsnorm_hf_hidden_size",
    "rmsnorm_hf",
    "rmsnorm_hf_ref",
]
