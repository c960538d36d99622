"""Host pools move index tensors to the device without a host sync, as upstream does.

Upstream copies indices with `.to(device, non_blocking=True)` from pinned memory; a blocking
`.to(device)` makes the host wait for the stream on every transfer. No CUDA device is needed:
`indices_to` is checked with spies on `torch.Tensor.to` / `pin_memory` and a fake CUDA target,
and every pool transfer, run on the CPU on both paths (kernel and torch), is checked to leave no
index copy of its own outside `indices_to`.
"""

import sys
from pathlib import Path

import pytest
import torch

from sglang.srt.mem_cache import memory_pool_host
from sglang.srt.mem_cache.memory_pool_host import (
    MambaPool,
    MambaPoolHost,
    MHATokenToKVPool,
    indices_to,
)
from sglang.srt.mem_cache.pool_host import mha
from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost

MEM_CACHE_DIR = Path(memory_pool_host.__file__).resolve().parent
REAL_TO = torch.Tensor.to


class _TensorSpy:
    """Records `Tensor.to` and `Tensor.pin_memory` calls; `.to` a CUDA device is faked (returns
    the tensor itself), so the copy's arguments can be seen on a machine without CUDA."""

    def __init__(self, monkeypatch, pinned=False):
        self.to_calls, self.pinned = [], []
        spy = self

        def to(self_, *args, **kwargs):
            target = kwargs.get("device", args[0] if args else None)
            if isinstance(target, (str, torch.device)) and torch.device(target).type == "cuda":
                spy.to_calls.append((self_, torch.device(target), kwargs.get("non_blocking", False)))
                return self_
            return REAL_TO(self_, *args, **kwargs)

        def pin_memory(self_):
            copy = self_.clone()
            spy.pinned.append(copy)
            return copy

        monkeypatch.setattr(torch.Tensor, "to", to)
        monkeypatch.setattr(torch.Tensor, "pin_memory", pin_memory)
        monkeypatch.setattr(torch.Tensor, "is_pinned", lambda self_: pinned or any(self_ is p for p in spy.pinned))


def test_pageable_indices_are_pinned_then_copied_without_blocking(monkeypatch):
    spy = _TensorSpy(monkeypatch)
    idx = torch.tensor([3, 1, 2])
    out = indices_to(idx, "cuda")
    assert len(spy.pinned) == 1 and torch.equal(spy.pinned[0], idx)
    [(source, target, non_blocking)] = spy.to_calls
    assert source is spy.pinned[0] and target.type == "cuda" and non_blocking is True
    assert out is source


def test_pinned_indices_are_not_pinned_again(monkeypatch):
    spy = _TensorSpy(monkeypatch, pinned=True)
    idx = torch.tensor([0, 4])
    indices_to(idx, torch.device("cuda", 0))
    assert spy.pinned == []
    assert [(s is idx, nb) for s, _, nb in spy.to_calls] == [(True, True)]


def test_indices_already_on_the_target_are_not_copied(monkeypatch):
    spy = _TensorSpy(monkeypatch)
    idx = torch.tensor([1, 2])
    assert indices_to(idx, "cpu") is idx and indices_to(idx, torch.device("cpu")) is idx
    assert spy.to_calls == [] and spy.pinned == []


def test_a_non_cuda_accelerator_gets_a_non_blocking_copy_without_pinning(monkeypatch):
    # Pinning is CUDA's page-locked memory; `meta` stands in for any other device type here.
    spy = _TensorSpy(monkeypatch)
    calls = []
    monkeypatch.setattr(torch.Tensor, "to", lambda self_, *a, **k: calls.append((a, k)) or self_)
    indices_to(torch.tensor([1]), "meta")
    assert spy.pinned == [] and calls == [((torch.device("meta"),), {"non_blocking": True})]


def test_indices_copied_to_the_host_are_a_blocking_copy(monkeypatch):
    # The host indexes with them next: a non-blocking device-to-host copy could be read early.
    calls = []
    monkeypatch.setattr(torch.Tensor, "to", lambda self_, *a, **k: calls.append((a, k)) or self_)
    indices_to(torch.empty(3, dtype=torch.int64, device="meta"), "cpu")
    assert calls == [((torch.device("cpu"),), {})]


# ----------------------------------------------------------------- every pool transfer site


def _index_copies_outside_indices_to(monkeypatch):
    """Every `.to(<device>)` of an integer tensor made by mem_cache code, except `indices_to`'s."""
    seen = []

    def to(self_, *args, **kwargs):
        caller = sys._getframe(1).f_code
        target = kwargs.get("device", args[0] if args else None)
        if (
            not self_.is_floating_point()
            and isinstance(target, (str, torch.device))
            and Path(caller.co_filename).resolve().is_relative_to(MEM_CACHE_DIR)
            and caller.co_name != "indices_to"
        ):
            seen.append(f"{Path(caller.co_filename).name}:{caller.co_name}")
        return REAL_TO(self_, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "to", to)
    return seen


def _mha_transfers(use_kernel):
    device = MHATokenToKVPool(16, head_num=2, head_dim=8, layer_num=2, dtype=torch.float32)
    device.can_use_jit = use_kernel
    host = MHATokenToKVPoolHost(device, host_size=8, page_size=2)
    host.can_use_jit = use_kernel
    host_idx, device_idx = host.alloc(4), torch.tensor([3, 4, 9, 10])
    host.backup_from_device_all_layer(device, host_idx, device_idx)
    host.load_to_device_all_layer(device, host_idx, device_idx)
    host.backup_from_device_per_layer(device, host_idx, device_idx, 1)
    host.load_to_device_per_layer(device, host_idx, device_idx, 0)
    device.move_kv_cache(torch.tensor([12, 13]), torch.tensor([1, 2]))


def _mamba_transfers(use_kernel):
    device = MambaPool(4, 2, (6, 3), (2, 4, 5), torch.bfloat16, torch.float32)
    host = MambaPoolHost(device, host_size=4)
    host.can_use_jit = use_kernel
    host_idx, device_idx = host.alloc(2), torch.tensor([3, 0])
    host.backup_from_device_all_layer(device, host_idx, device_idx)
    host.load_to_device_all_layer(device, host_idx, device_idx)


@pytest.mark.parametrize("transfers", [_mha_transfers, _mamba_transfers])
@pytest.mark.parametrize("use_kernel", [True, False])
def test_every_pool_transfer_moves_indices_through_indices_to(monkeypatch, transfers, use_kernel):
    routed = []
    for module in (memory_pool_host, mha):
        real = module.indices_to
        monkeypatch.setattr(module, "indices_to", lambda idx, dev, real=real: routed.append(dev) or real(idx, dev))
    direct = _index_copies_outside_indices_to(monkeypatch)
    transfers(use_kernel)
    assert direct == []  # a blocking `.to(device)` of an index tensor left in a pool
    assert routed  # and the indices did go through `indices_to`
