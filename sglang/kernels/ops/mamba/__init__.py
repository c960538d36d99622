"""Mamba-style operators: the short causal conv with its state cache, and state-slot transfers."""

from sglang.kernels.ops.mamba.inkling_sconv import causal_conv1d, causal_conv1d_ref
from sglang.kernels.ops.mamba.transfer_mamba import (
    transfer_mamba_states,
    transfer_mamba_states_ref,
)

__all__ = [
    "causal_conv1d",
    "causal_conv1d_ref",
    "transfer_mamba_states",
    "transfer_mamba_states_ref",
]
