"""Mamba-style operators: the short causal conv with its state cache, and state transfers between pools."""

from sglang.kernels.ops.mamba.inkling_sconv import causal_conv1d, causal_conv1d_ref
from sglang.kernels.ops.mamba.transfer_mamba import (
    can_use_transfer_kv_mamba_kernel,
    transfer_kv_mamba_lf_pf,
    transfer_kv_mamba_lf_pf_ref,
    transfer_kv_mamba_pf_lf,
    transfer_kv_mamba_pf_lf_ref,
)

__all__ = [
    "can_use_transfer_kv_mamba_kernel",
    "causal_conv1d",
    "causal_conv1d_ref",
    "transfer_kv_mamba_lf_pf",
    "transfer_kv_mamba_lf_pf_ref",
    "transfer_kv_mamba_pf_lf",
    "transfer_kv_mamba_pf_lf_ref",
]
