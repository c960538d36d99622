"""Host pools round-trip device pages and states through the kernel layer's transfer ops."""

import pytest
import torch

from sglang.kernels.ops.kvcache import hicache, kvcache
from sglang.kernels.ops.mamba import transfer_mamba
from sglang.srt.mem_cache import memory_pool_host
from sglang.srt.mem_cache.memory_pool_host import (
    HostKVCache,
    MambaPool,
    MambaPoolHost,
    MHATokenToKVPool,
    host_pool_class,
)
from sglang.srt.mem_cache.pool_host import mha
from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost

PAGE = 4


class _CallSpy:
    """Wraps a function, records calls, delegates."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def _device_pool(dtype, size=32, seed=0):
    pool = MHATokenToKVPool(size, head_num=2, head_dim=8, layer_num=3, dtype=dtype)
    g = torch.Generator().manual_seed(seed)
    pool.k_buffer.copy_(torch.randn(pool.k_buffer.shape, generator=g).to(dtype))
    pool.v_buffer.copy_(torch.randn(pool.v_buffer.shape, generator=g).to(dtype))
    return pool


def _pages(*page_ids):
    # Device slots of pages 0.. start at 1: row 0 is the reserved padding slot.
    return torch.cat([torch.arange(p * PAGE, (p + 1) * PAGE) for p in page_ids]) + 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("use_kernel", [True, False])
def test_mha_all_layer_round_trip(monkeypatch, dtype, use_kernel):
    backup_spy = _CallSpy(hicache.transfer_hicache_all_layer)
    monkeypatch.setattr(mha, "jit_transfer_hicache_all_layer", backup_spy)
    device = _device_pool(dtype)
    host = MHATokenToKVPoolHost(device, host_size=26, page_size=PAGE)
    assert host.size == 24 and host.can_use_jit and not host.can_use_write_back_jit
    host.can_use_jit = use_kernel

    device_idx = _pages(5, 2, 7)
    host_idx = host.alloc(device_idx.numel())
    host.backup_from_device_all_layer(device, host_idx, device_idx)
    assert torch.equal(host.k_buffer[:, host_idx], device.k_buffer[:, device_idx])
    assert not host.k_buffer[:, host.free_slots].any()  # the rest of the host pool untouched

    fresh = MHATokenToKVPool(32, head_num=2, head_dim=8, layer_num=3, dtype=dtype)
    host.load_to_device_all_layer(fresh, host_idx, device_idx)
    for got, want in (
        (fresh.k_buffer, device.k_buffer),
        (fresh.v_buffer, device.v_buffer),
    ):
        assert torch.equal(got[:, device_idx], want[:, device_idx])  # bit-identical pages
        others = torch.ones(33, dtype=torch.bool)
        others[device_idx] = False
        assert not got[:, others].any()  # every other slot still zero
    assert backup_spy.calls == (2 if use_kernel else 0)


def test_mha_load_into_other_slots():
    device = _device_pool(torch.bfloat16, seed=1)
    host = MHATokenToKVPoolHost(device, host_size=16, page_size=PAGE)
    host_idx = host.alloc(8)
    host.backup_from_device_all_layer(device, host_idx, _pages(0, 3))
    target = MHATokenToKVPool(32, head_num=2, head_dim=8, layer_num=3, dtype=torch.bfloat16)
    host.load_to_device_all_layer(target, host_idx, _pages(6, 1))
    assert torch.equal(target.k_buffer[:, _pages(6, 1)], device.k_buffer[:, _pages(0, 3)])
    assert torch.equal(target.v_buffer[:, _pages(6, 1)], device.v_buffer[:, _pages(0, 3)])


@pytest.mark.parametrize("use_kernel", [True, False])
def test_mha_per_layer_round_trip(monkeypatch, use_kernel):
    spy = _CallSpy(hicache.transfer_hicache_one_layer)
    monkeypatch.setattr(mha, "jit_transfer_hicache_one_layer", spy)
    device = _device_pool(torch.float16, seed=2)
    host = MHATokenToKVPoolHost(device, host_size=16, page_size=PAGE)
    host.can_use_jit = use_kernel
    device_idx, host_idx = _pages(4, 1), host.alloc(8)
    fresh = MHATokenToKVPool(32, head_num=2, head_dim=8, layer_num=3, dtype=torch.float16)
    for layer in range(3):
        host.backup_from_device_per_layer(device, host_idx, device_idx, layer)
        host.load_to_device_per_layer(fresh, host_idx, device_idx, layer)
    assert torch.equal(fresh.k_buffer[:, device_idx], device.k_buffer[:, device_idx])
    assert torch.equal(fresh.v_buffer[:, device_idx], device.v_buffer[:, device_idx])
    assert fresh.k_buffer.count_nonzero() == device.k_buffer[:, device_idx].count_nonzero()
    assert spy.calls == (6 if use_kernel else 0)


def test_mha_rejected_backup_leaves_host_pool_unchanged():
    device = _device_pool(torch.float32)
    host = MHATokenToKVPoolHost(device, host_size=8, page_size=PAGE)
    before = host.kv_buffer.clone()
    with pytest.raises(ValueError, match="host_indices"):
        host.backup_from_device_all_layer(device, torch.arange(4, 12), _pages(0, 1))
    assert torch.equal(host.kv_buffer, before)


def test_mha_all_layer_goes_through_the_pointer_tables(monkeypatch):
    calls = []
    monkeypatch.setattr(
        mha,
        "jit_transfer_hicache_all_layer",
        lambda *a, **k: calls.append(k) or hicache.transfer_hicache_all_layer(*a, **k),
    )
    device = _device_pool(torch.bfloat16, seed=4)
    host = MHATokenToKVPoolHost(device, host_size=8, page_size=PAGE)
    host.backup_from_device_all_layer(device, host.alloc(4), _pages(2))
    (kwargs,) = calls
    assert kwargs["k_ptr_src"] is device.k_data_ptrs and kwargs["v_ptr_dst"] is host.v_data_ptrs
    assert kwargs["k_ptr_src"].tolist() == [t.data_ptr() for t in device.k_buffer]
    assert kwargs["element_size"] == 2 * 8 * 2


def test_mha_uses_the_kernel_layer_entry_points():
    assert mha.jit_transfer_hicache_all_layer is hicache.transfer_hicache_all_layer
    assert mha.jit_transfer_hicache_one_layer is hicache.transfer_hicache_one_layer
    assert mha.can_use_hicache_jit_kernel is hicache.can_use_hicache_jit_kernel
    assert mha.can_use_write_back_jit_kernel is hicache.can_use_write_back_jit_kernel


def test_mha_flags_follow_the_predicates(monkeypatch):
    host = MHATokenToKVPoolHost(_device_pool(torch.float32), host_size=8, page_size=PAGE)
    assert host.can_use_jit and not host.can_use_write_back_jit
    assert host.get_size_per_token() == 2 * 8 * 3 * 4 * 2
    monkeypatch.setattr(mha, "can_use_hicache_jit_kernel", lambda **k: False)
    host = MHATokenToKVPoolHost(_device_pool(torch.float32), host_size=8, page_size=PAGE)
    assert not host.can_use_jit
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # a CPU without the interpreter: torch copies
    assert not memory_pool_host.kernel_runs_on(torch.device("cpu"))
    assert memory_pool_host.kernel_runs_on(torch.device("cuda"), host_pinned=True)
    assert not memory_pool_host.kernel_runs_on(torch.device("cuda"), host_pinned=False)


def test_set_kv_buffer_stores_rows(monkeypatch):
    pool = MHATokenToKVPool(10, head_num=2, head_dim=8, layer_num=2, dtype=torch.bfloat16)
    k, v = torch.randn(5, 2, 8).bfloat16(), torch.randn(5, 2, 8).bfloat16()
    loc = torch.tensor([9, 2, 10, 0, 0])  # a padded batch: two tokens on the padding slot
    spy = _CallSpy(kvcache.store_cache)
    monkeypatch.setattr(memory_pool_host, "store_cache", spy)
    pool.set_kv_buffer(1, loc, k, v)
    assert spy.calls == 1
    assert torch.equal(pool.get_key_buffer(1)[loc[:3]], k[:3])
    assert torch.equal(pool.get_value_buffer(1)[loc[:3]], v[:3])
    assert not pool.k_buffer[1, 0].any() and not pool.v_buffer[1, 0].any()  # padding skipped
    assert not pool.k_buffer[0].any()


@pytest.mark.parametrize("use_kernel", [True, False])
def test_move_kv_cache(use_kernel):
    pool = _device_pool(torch.float32)
    pool.can_use_jit = use_kernel
    before = pool.k_buffer.clone()
    pool.move_kv_cache(torch.tensor([20, 21]), torch.tensor([3, 4]))
    assert torch.equal(pool.k_buffer[:, [20, 21]], before[:, [3, 4]])
    assert torch.equal(pool.v_buffer[:, [20, 21]], pool.v_buffer[:, [3, 4]])
    assert torch.equal(pool.k_buffer[:, :20], before[:, :20])


def test_alloc_and_free():
    host = MHATokenToKVPoolHost(_device_pool(torch.float32), host_size=12, page_size=PAGE)
    assert isinstance(host, HostKVCache)
    first = host.alloc(8)
    assert first.tolist() == list(range(8)) and host.available_size() == 4
    assert host.alloc(8) is None
    with pytest.raises(ValueError, match="need_size"):
        host.alloc(3)
    assert host.free(first) == 8 and host.available_size() == 12


def _mamba_pool(size, seed=0):
    pool = MambaPool(
        size,
        layer_num=2,
        conv_shape=(6, 3),
        ssm_shape=(2, 4, 5),
        conv_dtype=torch.bfloat16,
        ssm_dtype=torch.float32,
    )
    if seed is not None:
        g = torch.Generator().manual_seed(seed)
        pool.conv_state.copy_(torch.randn(pool.conv_state.shape, generator=g).bfloat16())
        pool.ssm_state.copy_(torch.randn(pool.ssm_state.shape, generator=g))
    return pool


@pytest.mark.parametrize("use_kernel", [True, False])
def test_mamba_round_trip(monkeypatch, use_kernel):
    backup = _CallSpy(transfer_mamba.transfer_kv_mamba_lf_pf)
    load = _CallSpy(transfer_mamba.transfer_kv_mamba_pf_lf)
    monkeypatch.setattr(memory_pool_host, "transfer_kv_mamba_lf_pf", backup)
    monkeypatch.setattr(memory_pool_host, "transfer_kv_mamba_pf_lf", load)
    device = _mamba_pool(6)
    host = MambaPoolHost(device, host_size=4)
    assert host.can_use_jit
    host.can_use_jit = use_kernel
    device_idx, host_idx = torch.tensor([5, 0, 3]), host.alloc(3)
    host.backup_from_device_all_layer(device, host_idx, device_idx)
    # Page-first: host page h holds every layer's state of one request.
    assert torch.equal(host.ssm_state[host_idx[0], 1], device.ssm_state[1, 5])
    assert torch.equal(host.conv_state[host_idx[2], 0], device.conv_state[0, 3])
    assert not host.ssm_state[3].any()
    fresh = _mamba_pool(6, seed=None)
    host.load_to_device_all_layer(fresh, host_idx, device_idx)
    for got, want in (
        (fresh.conv_state, device.conv_state),
        (fresh.ssm_state, device.ssm_state),
    ):
        assert torch.equal(got[:, device_idx], want[:, device_idx])
        assert not got[:, [1, 2, 4]].any()
    # One backup launch per state kind (all layers), one load per kind and layer.
    assert (backup.calls, load.calls) == ((2, 4) if use_kernel else (0, 0))


def test_mamba_rejects_host_slots_out_of_range():
    device = _mamba_pool(3)
    host = MambaPoolHost(device, host_size=2)
    with pytest.raises(ValueError, match="host_indices"):
        host.backup_from_device_all_layer(device, torch.tensor([2]), torch.tensor([0]))


def test_mamba_pool_copy_from():
    pool = _mamba_pool(5, seed=3)
    before = pool.ssm_state.clone()
    pool.copy_from(torch.tensor([1, 1]), torch.tensor([3, 4]))
    assert torch.equal(pool.ssm_state[:, [3, 4]], before[:, [1, 1]])
    assert torch.equal(pool.ssm_state[:, :3], before[:, :3])


def test_host_pool_registry():
    assert host_pool_class(_mamba_pool(2)) is MambaPoolHost
    assert host_pool_class(_device_pool(torch.float32)) is MHATokenToKVPoolHost
    with pytest.raises(ValueError, match="device_pool"):
        host_pool_class(object())
