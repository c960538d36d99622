"""Host mirror of an MHA device KV pool, moving pages with the HiCache transfer kernels.

Layout `layer_first`: `kv_buffer` `[2, layer_num, size, head_num, head_dim]` (K then V), so
`k_buffer[layer]` is one layer's `[size, head_num, head_dim]` pool. As upstream's host pool, it
tabulates its layers' addresses once (`k_data_ptrs`, `v_data_ptrs`, on the device pool's
device) and moves every layer in one launch with `transfer_hicache_all_layer`; per-layer moves
use `transfer_hicache_one_layer`. Where the kernels cannot address both pools (`can_use_jit`
False: a pageable host pool beside a CUDA pool, or a CPU without Triton's interpreter) it copies
with torch. upstream's staged write-back kernel does not exist here
(`can_use_write_back_jit_kernel` is False), so backups take the all-layer kernel, as upstream's
`layer_first` pool does.
"""

from __future__ import annotations

import torch

from sglang.kernels.ops.kvcache.hicache import (
    can_use_hicache_jit_kernel,
    can_use_write_back_jit_kernel,
    layer_pointer_table,
)
from sglang.kernels.ops.kvcache.hicache import (
    transfer_hicache_all_layer as jit_transfer_hicache_all_layer,
)
from sglang.kernels.ops.kvcache.hicache import (
    transfer_hicache_one_layer as jit_transfer_hicache_one_layer,
)
from sglang.srt.mem_cache.memory_pool_host import (
    HostKVCache,
    MHATokenToKVPool,
    indices_to,
    kernel_runs_on,
)

__all__ = ["MHATokenToKVPoolHost"]


def _torch_copy(src: torch.Tensor, dst: torch.Tensor, src_idx, dst_idx, layered: bool) -> None:
    """The path without the kernel: gather, move across devices, scatter."""
    src_idx, dst_idx = indices_to(src_idx, src.device), indices_to(dst_idx, dst.device)
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
        self.row_bytes = self.element_dim * self.kv_buffer.element_size()
        self.can_use_jit = can_use_hicache_jit_kernel(element_size=self.row_bytes) and kernel_runs_on(
            device_pool.device, self.pin_memory
        )
        self.can_use_write_back_jit = can_use_write_back_jit_kernel(element_size=self.row_bytes)
        self.k_data_ptrs = layer_pointer_table(self.k_buffer, device_pool.device)
        self.v_data_ptrs = layer_pointer_table(self.v_buffer, device_pool.device)

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
        return self.head_num * self.head_dim * self.layer_num * self.kv_buffer.element_size() * 2

    def _all_layer(self, dst_tables, dst_idx, src_tables, src_idx, device) -> None:
        jit_transfer_hicache_all_layer(
            k_ptr_dst=dst_tables[0],
            v_ptr_dst=dst_tables[1],
            indices_dst=indices_to(dst_idx, device),
            k_ptr_src=src_tables[0],
            v_ptr_src=src_tables[1],
            indices_src=indices_to(src_idx, device),
            kv_cache_src_stride_bytes=self.row_bytes,
            kv_cache_dst_stride_bytes=self.row_bytes,
            element_size=self.row_bytes,
        )

    def load_to_device_per_layer(self, device_pool, host_indices, device_indices, layer_id: int):
        self._check_host_indices(host_indices)
        src = (self.k_buffer[layer_id], self.v_buffer[layer_id])
        dst = (device_pool.k_buffer[layer_id], device_pool.v_buffer[layer_id])
        if self.can_use_jit:
            jit_transfer_hicache_one_layer(
                k_cache_dst=dst[0],
                v_cache_dst=dst[1],
                indices_dst=device_indices,
                k_cache_src=src[0],
                v_cache_src=src[1],
                indices_src=host_indices,
                element_dim=self.element_dim,
            )
        else:
            for s, d in zip(src, dst):
                _torch_copy(s, d, host_indices, device_indices, layered=False)

    def load_to_device_all_layer(self, device_pool, host_indices, device_indices) -> None:
        self._check_host_indices(host_indices)
        if self.can_use_jit:
            self._all_layer(
                (device_pool.k_data_ptrs, device_pool.v_data_ptrs),
                device_indices,
                (self.k_data_ptrs, self.v_data_ptrs),
                host_indices,
                device_pool.device,
            )
        else:
            src = (self.k_buffer, self.v_buffer)
            dst = (device_pool.k_buffer, device_pool.v_buffer)
            for s, d in zip(src, dst):
                _torch_copy(s, d, host_indices, device_indices, layered=True)

    def backup_from_device_per_layer(self, device_pool, host_indices, device_indices, layer_id: int) -> None:
        self._check_host_indices(host_indices)
        src = (device_pool.k_buffer[layer_id], device_pool.v_buffer[layer_id])
        dst = (self.k_buffer[layer_id], self.v_buffer[layer_id])
        if self.can_use_jit:
            jit_transfer_hicache_one_layer(
                k_cache_dst=dst[0],
                v_cache_dst=dst[1],
                indices_dst=host_indices,
                k_cache_src=src[0],
                v_cache_src=src[1],
                indices_src=device_indices,
                element_dim=self.element_dim,
            )
        else:
            for s, d in zip(src, dst):
                _torch_copy(s, d, device_indices, host_indices, layered=False)

    def backup_from_device_all_layer(self, device_pool, host_indices, device_indices) -> None:
        self._check_host_indices(host_indices)
        if self.can_use_jit:
            self._all_layer(
                (self.k_data_ptrs, self.v_data_ptrs),
                host_indices,
                (device_pool.k_data_ptrs, device_pool.v_data_ptrs),
                device_indices,
                device_pool.device,
            )
        else:
            src = (device_pool.k_buffer, device_pool.v_buffer)
            dst = (self.k_buffer, self.v_buffer)
            for s, d in zip(src, dst):
                _torch_copy(s, d, device_indices, host_indices, layered=True)
