"""Mamba-style operators: the short causal conv with its state cache, and state transfers between pools."""

from sglang.kernels.ops.mamba.inkling_sconv import (
    PAD_SLOT_ID,
    causal_conv1d,
    causal_conv1d_ref,
    fused_causal_conv1d_update_decode,
    fused_causal_conv1d_update_decode_ref,
    update_sconv_cache,
    update_sconv_cache_ref,
)
from sglang.kernels.ops.mamba.transfer_mamba import (
    can_use_transfer_kv_mamba_kernel,
    transfer_kv_mamba_lf_pf,
    transfer_kv_mamba_lf_pf_ref,
    transfer_kv_mamba_pf_lf,
    transfer_kv_mamba_pf_lf_ref,
)

__all__ = [
    "PAD_SLOT_ID",
    "can_use_transfer_kv_mamba_kernel",
    "causal_conv1d",
    "causal_conv1d_ref",
    "fused_causal_conv1d_update_decode",
    "fused_causal_conv1d_update_decode_ref",
    "transfer_kv_mamba_lf_pf",
    "transfer_kv_mamba_lf_pf_ref",
    "transfer_kv_mamba_pf_lf",
    "transfer_kv_mamba_pf_lf_ref",
    "update_sconv_cache",
    "update_sconv_cache_ref",
]
