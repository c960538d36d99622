"""Host mirror of an MHA device KV pool, moving pages with the HiCache transfer kernels.

Layout `layer_first`: `kv_buffer` `[2, layer_num, size, head_num, head_dim]` (K then V), so
`k_buffer[layer]` is one layer's `[size, head_num, head_dim]` pool, and the stacked `k_buffer`
feeds an all-layer transfer in one launch.
"""

from __future__ import annotations

import torch

from sglang.kernels.ops.kvcache.hicache import (
    can_use_hicache_jit_kernel,
    can_use_write_back_jit_kernel,
)
from sglang.kernels.ops.kvcache.hicache import (
    transfer_hicache_all_layer as jit_transfer_hicache_all_layer,
)
from sglang.kernels.ops.kvcache.hicache import (
    transfer_hicache_one_layer as jit_transfer_hicache_one_layer,
)
from sglang.srt.mem_cache.memory_pool_host import HostKVCache, MHATokenToKVPool

__all__ = ["MHATokenToKVPoolHost"]


def _torch_copy(
    src: torch.Tensor, dst: torch.Tensor, src_idx, dst_idx, layered: bool
) -> None:
    """The path without the kernel: gather, move across devices, scatter."""
    src_idx, dst_idx = src_idx.to(src.device), dst_idx.to(dst.device)
    if layered:
        dst[:, dst_idx] = src[:, src_idx].to(dst.device)
    else:
        dst[dst_idx] = src[src_idx].to(dst.device)


class MHATokenToKVPoolHost(HostKVCache):
    """Host K/V pages for an `MHATokenToKVPool`: same layers, heads, head_dim and dtype."""

    def __init__(
        self,
        device_pool: MHATokenToKVPool,
        host_size: int,
        page_size: int = 1,
        pin_memory: bool = True,
        device: str = "cpu",
    ):
        self.layer_num = device_pool.layer_num
        self.head_num, self.head_dim = device_pool.head_num, device_pool.head_dim
        self.dtype = device_pool.dtype
        super().__init__(device_pool, host_size, page_size, pin_memory, device)
        self.element_dim = self.head_num * self.head_dim
        row_bytes = self.element_dim * self.kv_buffer.element_size()
        # Loads: the kernel when it runs for this row size on the device pool's device.
        self.can_use_jit = can_use_hicache_jit_kernel(
            row_bytes, device=device_pool.device
        )
        # Backups store into host memory: on CUDA only when this pool is pinned.
        self.can_use_write_back_jit = can_use_write_back_jit_kernel(
            row_bytes, device=device_pool.device, host_pinned=self.pin_memory
        )

    def init_buffers(self) -> None:
        shape = (2, self.layer_num, self.size, self.head_num, self.head_dim)
        self.kv_buffer = self._alloc_tensor(shape, self.dtype)

    @property
    def k_buffer(self) -> torch.Tensor:
        return self.kv_buffer[0]

    @property
    def v_buffer(self) -> torch.Tensor:
        return self.kv_buffer[1]

    def get_size_per_token(self) -> int:
        return (
            self.head_num
            * self.head_dim
            * self.layer_num
            * self.kv_buffer.element_size()
            * 2
        )

    def load_to_device_per_layer(
        self, device_pool, host_indices, device_indices, layer_id: int
    ):
        src = (self.k_buffer[layer_id], self.v_buffer[layer_id])
        dst = (device_pool.k_buffer[layer_id], device_pool.v_buffer[layer_id])
        if self.can_use_jit:
            jit_transfer_hicache_one_layer(*src, *dst, host_indices, device_indices)
        else:
            for s, d in zip(src, dst):
                _torch_copy(s, d, host_indices, device_indices, layered=False)

    def load_to_device_all_layer(
        self, device_pool, host_indices, device_indices
    ) -> None:
        src = (self.k_buffer, self.v_buffer)
        dst = (device_pool.k_buffer, device_pool.v_buffer)
        if self.can_use_jit:
            jit_transfer_hicache_all_layer(*src, *dst, host_indices, device_indices)
        else:
            for s, d in zip(src, dst):
                _torch_copy(s, d, host_indices, device_indices, layered=True)

    def backup_from_device_per_layer(
        self, device_pool, host_indices, device_indices, layer_id: int
    ) -> None:
        src = (device_pool.k_buffer[layer_id], device_pool.v_buffer[layer_id])
        dst = (self.k_buffer[layer_id], self.v_buffer[layer_id])
        if self.can_use_write_back_jit:
            jit_transfer_hicache_one_layer(*src, *dst, device_indices, host_indices)
        else:
            for s, d in zip(src, dst):
                _torch_copy(s, d, device_indices, host_indices, layered=False)

    def backup_from_device_all_layer(
        self, device_pool, host_indices, device_indices
    ) -> None:
        src = (device_pool.k_buffer, device_pool.v_buffer)
        dst = (self.k_buffer, self.v_buffer)
        if self.can_use_write_back_jit:
            jit_transfer_hicache_all_layer(*src, *dst, device_indices, host_indices)
        else:
            for s, d in zip(src, dst):
                _torch_copy(s, d, device_indices, host_indices, layered=True)
