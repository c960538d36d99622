"""KV-cache operators: storing new K/V rows into the paged cache (`kvcache`), and HiCache host <-> device transfers (`hicache`)."""

from sglang.kernels.ops.kvcache.hicache import (
    can_use_hicache_jit_kernel,
    can_use_write_back_jit_kernel,
    layer_pointer_table,
    transfer_hicache_all_layer,
    transfer_hicache_all_layer_ref,
    transfer_hicache_one_layer,
    transfer_hicache_one_layer_ref,
)
from sglang.kernels.ops.kvcache.kvcache import can_use_store_cache, store_cache, store_cache_ref

__all__ = [
    "can_use_hicache_jit_kernel",
    "can_use_store_cache",
    "can_use_write_back_jit_kernel",
    "layer_pointer_table",
    "store_cache",
    "store_cache_ref",
    "transfer_hicache_all_layer",
    "transfer_hicache_all_layer_ref",
    "transfer_hicache_one_layer",
    "transfer_hicache_one_layer_ref",
]
