"""Host memory pools for hierarchical caching (HiCache), and the small device pools they mirror.

A host pool keeps evicted KV pages (or mamba states) in CPU memory, pinned when a GPU is present
so kernels can address it, and moves them back and forth with the kernel layer's transfer ops:
`backup_from_device_*` copies device slots into host slots, `load_to_device_*` copies them back.

- `HostKVCache`: the base: slot allocator (page granular) and the backup/load interface.
- `MHATokenToKVPool` / `MambaPool`: minimal device pools (K/V per layer; conv and SSM states per
  layer) with the device-side operations the runtime needs from them. Like upstream's, each
  keeps uint64 tables of its layers' base addresses (`k_data_ptrs`, ...), built once, for the
  all-layer transfer kernels; the KV pool's slot 0 is the reserved CUDA-graph padding slot
  (`size` real slots are 1..size), whose writes `store_cache` skips.
- `MambaPoolHost`: the host mirror of a `MambaPool`, page-first (`[size, layers, ...]`) as
  upstream's, moved with `transfer_kv_mamba_lf_pf` / `_pf_lf`. The MHA host pool lives in
  `pool_host/mha.py`.
- `host_pool_class`: the registry that picks the host pool for a device pool.
"""

from __future__ import annotations

import abc
import os

import torch

from sglang.kernels.ops.kvcache import (
    can_use_hicache_jit_kernel,
    layer_pointer_table,
    store_cache,
    transfer_hicache_all_layer,
)
from sglang.kernels.ops.mamba import (
    can_use_transfer_kv_mamba_kernel,
    transfer_kv_mamba_lf_pf,
    transfer_kv_mamba_pf_lf,
)

__all__ = [
    "HostKVCache",
    "MHATokenToKVPool",
    "MambaPool",
    "MambaPoolHost",
    "host_pool_class",
    "indices_to",
]


def _pin_ok(pin_memory: bool) -> bool:
    """Pinning needs a CUDA driver; on a CPU-only machine host pools are plain memory."""
    return bool(pin_memory) and torch.cuda.is_available()


def indices_to(indices: torch.Tensor, device: str | torch.device) -> torch.Tensor:
    """`indices` on `device`, copied to an accelerator without a host sync, as upstream does.

    Upstream's host pools and cache controller move index tensors with `.to(device,
    non_blocking=True)`; a blocking `.to(device)` waits for the whole stream on every transfer.
    Towards CUDA the host side is pinned first, so the copy is truly asynchronous (from pageable
    memory the driver stages it through a bounce buffer on the host); torch's pinned allocator
    keeps the block alive until the copy has run. Towards the CPU the copy stays blocking: the
    host indexes with them right after, so they must have arrived.
    """
    device = torch.device(device)
    if indices.device.type == device.type and device.index in (None, indices.device.index):
        return indices
    if device.type == "cpu":
        return indices.to(device)
    if indices.device.type == "cpu" and device.type == "cuda" and not indices.is_pinned():
        indices = indices.pin_memory()
    return indices.to(device, non_blocking=True)


def kernel_runs_on(device: torch.device, host_pinned: bool = True) -> bool:
    """Whether the transfer kernels can address a pool on `device` and its host mirror.

    On CUDA the host side must be pinned (the GPU addresses only page-locked host memory); on
    the CPU the kernels run only under Triton's interpreter (`TRITON_INTERPRET=1`).
    """
    if device.type == "cuda":
        return bool(host_pinned)
    return device.type == "cpu" and os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


class MHATokenToKVPool:
    """Device K/V pool: `k_buffer`, `v_buffer` `[layer_num, size + 1, head_num, head_dim]`.

    Stacked per layer, so `k_buffer[layer]` is one layer's pool; row 0 is the padding slot a
    CUDA-graph padded batch writes to (skipped by `store_cache`), rows 1..size are real slots.
    `k_data_ptrs` / `v_data_ptrs` tabulate the layers' addresses for all-layer transfers.
    """

    def __init__(
        self,
        size: int,
        head_num: int,
        head_dim: int,
        layer_num: int,
        dtype: torch.dtype,
        device: str | torch.device = "cpu",
    ):
        self.size, self.head_num, self.head_dim = size, head_num, head_dim
        self.layer_num, self.dtype, self.device = layer_num, dtype, torch.device(device)
        shape = (layer_num, size + 1, head_num, head_dim)
        self.k_buffer = torch.zeros(shape, dtype=dtype, device=self.device)
        self.v_buffer = torch.zeros(shape, dtype=dtype, device=self.device)
        self.row_bytes = head_num * head_dim * self.k_buffer.element_size()
        self.k_data_ptrs = layer_pointer_table(self.k_buffer)
        self.v_data_ptrs = layer_pointer_table(self.v_buffer)
        self.can_use_jit = can_use_hicache_jit_kernel(element_size=self.row_bytes) and kernel_runs_on(
            self.device
        )

    def set_kv_buffer(self, layer_id: int, loc: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        """Store a step's new rows `k`, `v` `[T, head_num, head_dim]` at slots `loc` (slot 0: dropped)."""
        store_cache(k, v, self.k_buffer[layer_id], self.v_buffer[layer_id], loc)

    def get_key_buffer(self, layer_id: int) -> torch.Tensor:
        return self.k_buffer[layer_id]

    def get_value_buffer(self, layer_id: int) -> torch.Tensor:
        return self.v_buffer[layer_id]

    def move_kv_cache(self, tgt_loc: torch.Tensor, src_loc: torch.Tensor) -> None:
        """Copy slots `src_loc` to slots `tgt_loc` in every layer (the two sets must not overlap)."""
        if self.can_use_jit:
            transfer_hicache_all_layer(
                self.k_data_ptrs,
                self.v_data_ptrs,
                indices_to(tgt_loc, self.device),
                self.k_data_ptrs,
                self.v_data_ptrs,
                indices_to(src_loc, self.device),
                kv_cache_src_stride_bytes=self.row_bytes,
                kv_cache_dst_stride_bytes=self.row_bytes,
            )
        else:
            self.k_buffer[:, tgt_loc] = self.k_buffer[:, src_loc]
            self.v_buffer[:, tgt_loc] = self.v_buffer[:, src_loc]


class MambaPool:
    """Device mamba state pool: `conv_state` `[layer_num, size, dim, W-1]` and `ssm_state`
    `[layer_num, size, heads, head_dim, state_dim]`; one slot per request."""

    def __init__(
        self,
        size: int,
        layer_num: int,
        conv_shape: tuple,
        ssm_shape: tuple,
        conv_dtype: torch.dtype,
        ssm_dtype: torch.dtype,
        device: str | torch.device = "cpu",
    ):
        self.size, self.layer_num, self.device = size, layer_num, torch.device(device)
        self.conv_state = torch.zeros((layer_num, size, *conv_shape), dtype=conv_dtype, device=self.device)
        self.ssm_state = torch.zeros((layer_num, size, *ssm_shape), dtype=ssm_dtype, device=self.device)
        self.conv_ptrs = layer_pointer_table(self.conv_state)
        self.ssm_ptrs = layer_pointer_table(self.ssm_state)

    def states(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(layer-first state `[layer_num, size, ...]`, its layers' address table) per state kind."""
        return [(self.conv_state, self.conv_ptrs), (self.ssm_state, self.ssm_ptrs)]

    def copy_from(self, src_index: torch.Tensor, dst_index: torch.Tensor) -> None:
        """Copy request slots `src_index` into slots `dst_index` (e.g. fork a cached prefix)."""
        for state, _ in self.states():
            state[:, dst_index] = state[:, src_index]


class HostKVCache(abc.ABC):
    """Base host pool: `size` slots (a whole number of pages) and a page-granular allocator.

    Subclasses allocate their buffers in `init_buffers` and move slots with the kernel layer's
    transfer ops. Host and device slots are given as int64 index tensors of equal length.
    """

    def __init__(
        self,
        device_pool,
        host_size: int,
        page_size: int = 1,
        pin_memory: bool = True,
        device: str = "cpu",
    ):
        if page_size < 1 or host_size < page_size:
            raise ValueError(
                f"{type(self).__name__}: host_size must hold at least one page of {page_size} "
                f"slots, got {host_size}"
            )
        self.device_pool = device_pool
        self.page_size = page_size
        self.size = host_size - host_size % page_size
        self.page_num = self.size // page_size
        self.device = torch.device(device)
        self.pin_memory = _pin_ok(pin_memory)
        self.init_buffers()
        self.free_slots = torch.arange(self.size, dtype=torch.int64)

    @abc.abstractmethod
    def init_buffers(self) -> None:
        """Allocate the host tensors."""

    @abc.abstractmethod
    def backup_from_device_all_layer(self, device_pool, host_indices, device_indices) -> None:
        """Copy device slots `device_indices` into host slots `host_indices`, every layer."""

    @abc.abstractmethod
    def load_to_device_all_layer(self, device_pool, host_indices, device_indices) -> None:
        """Copy host slots `host_indices` back into device slots `device_indices`, every layer."""

    def _alloc_tensor(self, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
        return torch.zeros(shape, dtype=dtype, device=self.device, pin_memory=self.pin_memory)

    def _check_host_indices(self, host_indices: torch.Tensor) -> None:
        """Host slots are host data (a CPU tensor): checking them reads no device memory."""
        if host_indices.device.type != "cpu":
            return  # on a device: the kernels assert their ranges there
        if host_indices.numel() and (int(host_indices.min()) < 0 or int(host_indices.max()) >= self.size):
            raise ValueError(
                f"{type(self).__name__}: host_indices must lie in [0, {self.size}), got "
                f"[{int(host_indices.min())}, {int(host_indices.max())}]"
            )

    def available_size(self) -> int:
        return int(self.free_slots.numel())

    def alloc(self, need_size: int) -> torch.Tensor | None:
        """`need_size` free slots (a whole number of pages, page-aligned), or None if full."""
        if need_size % self.page_size != 0:
            raise ValueError(
                f"{type(self).__name__}.alloc: need_size must be a multiple of the page size "
                f"{self.page_size}, got {need_size}"
            )
        if need_size > self.available_size():
            return None
        taken, self.free_slots = (
            self.free_slots[:need_size],
            self.free_slots[need_size:],
        )
        return taken

    def free(self, indices: torch.Tensor) -> int:
        self.free_slots = torch.cat([self.free_slots, indices.to(torch.int64).cpu()])
        return int(indices.numel())


class MambaPoolHost(HostKVCache):
    """Host mirror of a `MambaPool`, page-first: `conv_state` `[size, layer_num, ...]`, `ssm_state` likewise.

    A request's states for every layer are one contiguous page, so a backup writes each page
    once (`transfer_kv_mamba_lf_pf`, every layer in one launch) and a load reads one layer's
    items back per call (`transfer_kv_mamba_pf_lf`), as upstream's host pool does.
    """

    def __init__(
        self,
        device_pool: MambaPool,
        host_size: int,
        pin_memory: bool = True,
        device: str = "cpu",
    ):
        super().__init__(device_pool, host_size, 1, pin_memory, device)
        self.can_use_jit = can_use_transfer_kv_mamba_kernel(device_pool.device) and kernel_runs_on(
            device_pool.device, self.pin_memory
        )

    def init_buffers(self) -> None:
        pool = self.device_pool
        self.conv_state = self._alloc_tensor(
            (self.size, pool.layer_num, *pool.conv_state.shape[2:]),
            pool.conv_state.dtype,
        )
        self.ssm_state = self._alloc_tensor(
            (self.size, pool.layer_num, *pool.ssm_state.shape[2:]), pool.ssm_state.dtype
        )

    def _pairs(self, device_pool):
        """(device layer-first state, its table, host page-first state, item bytes) per kind."""
        for (dev, ptrs), host in zip(device_pool.states(), (self.conv_state, self.ssm_state)):
            yield dev, ptrs, host, dev[0, 0].numel() * dev.element_size()

    def backup_from_device_all_layer(self, device_pool, host_indices, device_indices) -> None:
        self._check_host_indices(host_indices)
        layers = device_pool.layer_num
        for dev, ptrs, host, item in self._pairs(device_pool):
            if self.can_use_jit:
                transfer_kv_mamba_lf_pf(
                    src_ptrs=ptrs,
                    dst=host,
                    src_indices=device_indices,
                    dst_indices=indices_to(host_indices, dev.device),
                    item_size=item,
                    dst_layout_dim=item * layers,
                    num_layers=layers,
                )
            else:
                rows = dev[:, indices_to(device_indices, dev.device)].transpose(0, 1)
                host[indices_to(host_indices, host.device)] = rows.to(host.device)

    def load_to_device_per_layer(self, device_pool, host_indices, device_indices, layer_id: int) -> None:
        self._check_host_indices(host_indices)
        layers = device_pool.layer_num
        for dev, _, host, item in self._pairs(device_pool):
            if self.can_use_jit:
                transfer_kv_mamba_pf_lf(
                    src=host,
                    dst=dev[layer_id],
                    src_indices=indices_to(host_indices, dev.device),
                    dst_indices=device_indices,
                    layer_id=layer_id,
                    item_size=item,
                    src_layout_dim=item * layers,
                )
            else:
                rows = host[indices_to(host_indices, host.device), layer_id].to(dev.device)
                dev[layer_id, indices_to(device_indices, dev.device)] = rows

    def load_to_device_all_layer(self, device_pool, host_indices, device_indices) -> None:
        for layer_id in range(device_pool.layer_num):
            self.load_to_device_per_layer(device_pool, host_indices, device_indices, layer_id)


def host_pool_class(device_pool) -> type[HostKVCache]:
    """The host pool type that mirrors `device_pool`."""
    if isinstance(device_pool, MambaPool):
        return MambaPoolHost
    if isinstance(device_pool, MHATokenToKVPool):
        # Imported here: pool_host.mha builds on this module's HostKVCache.
        from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost

        return MHATokenToKVPoolHost
    raise ValueError(
        f"host_pool_class: device_pool must be a MHATokenToKVPool or MambaPool, "
        f"got {type(device_pool).__name__}"
    )
