"""Kernel calls, imported lazily as sglang's own runtime did."""

from __future__ import annotations

import importlib
from unittest import mock

from sglang.jit_kernel.norm import rmsnorm

NORM_TARGET = "sglang.jit_kernel.hicache:transfer_hicache_one_layer"


def offload(layer):
    from sglang.jit_kernel.hicache import transfer_hicache_one_layer

    return transfer_hicache_one_layer(layer)


def kvcache():
    return importlib.import_module("sglang.jit_kernel.kvcache")


def patched():
    with mock.patch("sglang.srt.mem_cache.memory_pool_host.MambaPoolHost"):
        return rmsnorm
