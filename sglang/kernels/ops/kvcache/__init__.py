"""KV-cache operators: storing new K/V rows into the paged cache, and HiCache host <-> device transfers."""

from sglang.kernels.ops.kvcache.hicache import (
    can_use_hicache_jit_kernel,
    can_use_write_back_jit_kernel,
    transfer_hicache_all_layer,
    transfer_hicache_all_layer_ref,
    transfer_hicache_one_layer,
    transfer_hicache_one_layer_ref,
)
from sglang.kernels.ops.kvcache.triton_store_cache import store_cache, store_cache_ref

__all__ = [
    "can_use_hicache_jit_kernel",
    "can_use_write_back_jit_kernel",
    "store_cache",
    "store_cache_ref",
    "transfer_hicache_all_layer",
    "transfer_hicache_all_layer_ref",
    "transfer_hicache_one_layer",
    "transfer_hicache_one_layer_ref",
]
