"""Operators whose computation spans tensor-parallel ranks: the sharded Q/K RMSNorm and the all-reduce."""

from sglang.kernels.ops.communication.all_reduce import (
    AllReduceAlgo,
    TorchCommunicator,
    custom_all_reduce,
    fused_parallel_qknorm,
    fused_parallel_qknorm_ref,
    get_fused_parallel_qknorm_max_occupancy,
)

__all__ = [
    "AllReduceAlgo",
    "TorchCommunicator",
    "custom_all_reduce",
    "fused_parallel_qknorm",
    "fused_parallel_qknorm_ref",
    "get_fused_parallel_qknorm_max_occupancy",
]
