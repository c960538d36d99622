"""Operators whose computation spans tensor-parallel ranks: the sharded Q/K RMSNorm."""

from sglang.kernels.ops.communication.all_reduce import (
    fused_parallel_qknorm,
    fused_parallel_qknorm_ref,
    get_fused_parallel_qknorm_max_occupancy,
)

__all__ = [
    "fused_parallel_qknorm",
    "fused_parallel_qknorm_ref",
    "get_fused_parallel_qknorm_max_occupancy",
]
