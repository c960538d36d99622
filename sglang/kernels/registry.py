"""A metadata-only registry of the operators: op id -> backends -> lazy `"module:attr"` targets.

Op ids are `"<group>.<name>"`. Every target is a string, so importing this module (and listing
the namespace) imports neither torch nor Triton, nor any operator module; a target is imported
the first time it is loaded. The checker's string-target handling exists for these strings: when
an operator moves, its target here moves with it, and `removed-module` flags a stale one.

Backends: `triton` is the public entry point (it validates its inputs and runs the Triton kernel
where Triton can run, the torch path otherwise); `torch` is the pure-torch reference.

Upstream's names in this module mean what they mean upstream (`sglang/kernels/registry.py`,
0.5.17 and 0.5.23): `KernelRegistry` (op id -> `KernelSpec`s, one per backend), its process-wide
instance `registry`, and `register_kernel(spec)`. Every op registered here with `register` is
also in `registry`, as two `KernelSpec`s (`KernelBackend.TRITON`, `KernelBackend.TORCH`).
`register`, `get`, `load`, `op_ids`, `OpSpec` and `REGISTRY` are this library's own (upstream's
module binds none of them). One difference remains: upstream's `sglang/kernels/__init__.py`
rebinds the package attribute `sglang.kernels.registry` to the instance; here it is this module.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from sglang.kernels.spec import KernelBackend, KernelSpec

__all__ = [
    "KernelRegistry",
    "OpSpec",
    "REGISTRY",
    "get",
    "load",
    "op_ids",
    "register",
    "register_kernel",
    "registry",
]

BACKENDS = ("triton", "torch")


@dataclass(frozen=True)
class OpSpec:
    op_id: str
    targets: dict[str, str]
    doc: str = ""
    _loaded: dict[str, Callable[..., Any]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def group(self) -> str:
        return self.op_id.split(".", 1)[0]

    def load(self, backend: str = "triton") -> Callable[..., Any]:
        try:
            target = self.targets[backend]
        except KeyError:
            raise KeyError(
                f"op {self.op_id!r} has no backend {backend!r}; it has {sorted(self.targets)}"
            ) from None
        fn = self._loaded.get(backend)
        if fn is None:
            module_name, _, attr = target.partition(":")
            fn = getattr(importlib.import_module(module_name), attr)
            self._loaded[backend] = fn
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.load("triton")(*args, **kwargs)


class KernelRegistry:
    """Upstream's registry: maps `"<group>.<name>"` op ids to their `KernelSpec` list."""

    def __init__(self) -> None:
        self._by_op: dict[str, list[KernelSpec]] = defaultdict(list)

    def register(self, spec: KernelSpec) -> KernelSpec:
        """Register `spec`; an identical one again is a no-op, a different one for the same
        (op, backend) a `ValueError` (silently replacing it would make the pick import-order)."""
        existing = self._by_op[spec.op]
        for other in existing:
            if other.backend == spec.backend:
                if other != spec:
                    raise ValueError(
                        f"Conflicting kernel registration for op {spec.op!r}, "
                        f"backend {spec.backend.value!r}: {other.target!r} != {spec.target!r}"
                    )
                return spec
        existing.append(spec)
        return spec

    def get(self, op: str) -> list[KernelSpec]:
        """All registered specs for `op` (an empty list if none)."""
        return list(self._by_op.get(op, ()))

    def get_backend(self, op: str, backend: KernelBackend) -> KernelSpec:
        """The spec for `op` provided by `backend`; `KeyError` if none is registered."""
        for spec in self._by_op.get(op, ()):
            if spec.backend == backend:
                return spec
        raise KeyError(f"No '{backend.value}' backend registered for op {op!r}")

    def has(self, op: str) -> bool:
        return bool(self._by_op.get(op))

    def ops(self) -> list[str]:
        """Sorted list of all registered operator ids."""
        return sorted(self._by_op.keys())

    def all_specs(self) -> list[KernelSpec]:
        specs: list[KernelSpec] = []
        for op in self.ops():
            specs.extend(self._by_op[op])
        return specs


# Upstream's process-wide registry; `register` below fills it alongside `REGISTRY`.
registry = KernelRegistry()


def register_kernel(spec: KernelSpec) -> KernelSpec:
    """Register `spec` in the process-wide `registry` (upstream's function)."""
    return registry.register(spec)


REGISTRY: dict[str, OpSpec] = {}


def register(op_id: str, *, triton: str, torch: str, doc: str = "") -> OpSpec:
    group, _, name = op_id.partition(".")
    if not group or not name or "." in name:
        raise ValueError(f"op id must be '<group>.<name>', got {op_id!r}")
    if op_id in REGISTRY:
        raise ValueError(f"op id {op_id!r} is registered twice")
    for backend, target in (("triton", triton), ("torch", torch)):
        module_name, sep, attr = target.partition(":")
        if not sep or not module_name or not attr:
            raise ValueError(f"{op_id}: {backend} target must be 'module:attr', got {target!r}")
    spec = OpSpec(op_id, {"triton": triton, "torch": torch}, doc)
    REGISTRY[op_id] = spec
    register_kernel(KernelSpec(op_id, KernelBackend.TRITON, triton))
    register_kernel(KernelSpec(op_id, KernelBackend.TORCH, torch))
    return spec


def get(op_id: str) -> OpSpec:
    try:
        return REGISTRY[op_id]
    except KeyError:
        raise KeyError(f"unknown op id {op_id!r}; known: {', '.join(sorted(REGISTRY))}") from None


def load(op_id: str, backend: str = "triton") -> Callable[..., Any]:
    return get(op_id).load(backend)


def op_ids(group: str | None = None) -> list[str]:
    return sorted(i for i in REGISTRY if group is None or i.split(".", 1)[0] == group)


def _ops(group: str, module: str, *names: str) -> None:
    """Register `names` of `sglang.kernels.ops.<group>.<module>`, each with its `<name>_ref`."""
    path = f"sglang.kernels.ops.{group}.{module}"
    for name in names:
        register(f"{group}.{name}", triton=f"{path}:{name}", torch=f"{path}:{name}_ref")


_ops("layernorm", "rmsnorm_hf", "rmsnorm_hf")
_ops("layernorm", "fused_eh_norm", "fused_eh_norm")
# upstream 0.5.17's package-level ops (`sglang.kernels.ops.layernorm.rmsnorm` / `.fused_add_rmsnorm`);
# the JIT kernel's own `norm.fused_add_rmsnorm` is their launcher, not an op id of its own upstream.
_ops("layernorm", "rmsnorm_op", "rmsnorm", "fused_add_rmsnorm")
_ops("kvcache", "hicache", "transfer_hicache_one_layer", "transfer_hicache_all_layer")
_ops("kvcache", "kvcache", "store_cache")
_ops(
    "mamba",
    "inkling_sconv",
    "causal_conv1d",
    "update_sconv_cache",
    "fused_causal_conv1d_update_decode",
)
_ops("mamba", "transfer_mamba", "transfer_kv_mamba_pf_lf", "transfer_kv_mamba_lf_pf")
_ops("communication", "all_reduce", "fused_parallel_qknorm")
_ops("gemm", "dsv3_fused_a_gemm", "dsv3_fused_a_gemm")
_ops("gemm", "tiny_gemm", "tiny_n_gemm_bf16", "tiny_k_gemm_bf16", "tiny_gemm_bf16")
_ops("quantization", "per_token_group_quant", "per_token_group_quant")
_ops(
    "speculative",
    "ngram_embedding",
    "compute_n_gram_ids",
    "compute_n_gram_ids_decode",
    "update_token_table",
    "update_token_table_decode",
)
