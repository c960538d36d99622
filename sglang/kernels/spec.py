"""Upstream's kernel-spec vocabulary (`sglang/kernels/spec.py`, 0.5.23): `KernelBackend` and `KernelSpec`.

Upstream's `sglang.kernels.registry` holds `KernelSpec`s keyed by op id; `registry.py` here binds
upstream's `KernelRegistry` / `registry` / `register_kernel` with upstream's meaning, so these two
types come with them. Torch-free, like the registry: a spec names its target as a string.

Differs from upstream: `KernelSpec` is a frozen dataclass (upstream: a frozen `msgspec.Struct`,
a dependency this library does not take) with upstream 0.5.23's fields; capability matching
(`CapabilityRequirement`, `PlatformInfo`, `is_available`) is not bound, because every backend
here runs wherever torch (and, for `triton`, Triton or its interpreter) does.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, FrozenSet

__all__ = ["KernelBackend", "KernelSpec"]


class KernelBackend(str, Enum):
    """Provenance of a kernel implementation (how it is built): upstream 0.5.23's values."""

    TORCH = "torch"
    TORCH_COMPILE = "torch_compile"
    TRITON = "triton"
    JIT = "jit"
    AOT = "aot"
    CUTE_DSL = "cute_dsl"
    FLYDSL = "flydsl"
    HELION = "helion"
    KDA = "KDA"
    CAKE = "cake"
    PLUGIN = "plugin"
    FLASHINFER = "flashinfer"
    DEEPGEMM = "deepgemm"
    AITER = "aiter"
    TORCH_NPU = "torch_npu"


@dataclass(frozen=True)
class KernelSpec:
    """One callable implementation of op `"<group>.<name>"` by `backend`, at `"module:attr"`."""

    op: str
    backend: KernelBackend
    target: str
    capabilities: FrozenSet[Any] = frozenset()

    def load(self) -> Callable[..., Any]:
        """Import and return the target (`attr` may be dotted, as upstream's may)."""
        module_path, sep, attr = self.target.partition(":")
        if not sep or not attr:
            raise ValueError(f"KernelSpec.target must be 'module:attr', got {self.target!r}")
        obj: Any = importlib.import_module(module_path)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj
