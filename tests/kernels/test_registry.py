"""The op registry: every id loads for both backends, ids and targets are well formed, and the
registry (and the ops namespace) can be imported and listed without torch or Triton."""

import importlib
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglang.kernels import registry
from sglang.kernels.spec import KernelBackend, KernelSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
OPS_DIR = REPO_ROOT / "sglang" / "kernels" / "ops"


def _group_packages():
    """Operator groups as the filesystem has them: the packages under sglang/kernels/ops."""
    return sorted(p.name for p in OPS_DIR.iterdir() if (p / "__init__.py").is_file())


@pytest.mark.parametrize("op_id", registry.op_ids())
def test_every_op_loads_for_both_backends(op_id):
    spec = registry.get(op_id)
    group, name = op_id.split(".")
    assert spec.group == group
    assert set(spec.targets) == set(registry.BACKENDS)
    for backend, target in spec.targets.items():
        module_name, attr = target.split(":")
        assert module_name.startswith(f"sglang.kernels.ops.{group}.")
        assert attr == (name if backend == "triton" else f"{name}_ref")
        loaded = registry.load(op_id, backend)
        assert callable(loaded)
        assert loaded is getattr(importlib.import_module(module_name), attr)
    # The group's public surface re-exports the entry point.
    assert getattr(importlib.import_module(f"sglang.kernels.ops.{group}"), name) is spec.load()


def test_every_group_has_ops_and_every_op_has_a_group_package():
    registry_groups = {op_id.split(".")[0] for op_id in registry.op_ids()}
    packages = set(_group_packages())
    assert registry_groups <= packages, (
        f"ops of groups without a package: {registry_groups - packages}"
    )
    empty = [g for g in packages if not registry.op_ids(g)]
    assert not empty, f"groups with no registered op: {empty}"


def test_op_ids_are_sorted_and_filter_by_group():
    ids = registry.op_ids()
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    assert registry.op_ids("gemm") == [
        "gemm.dsv3_fused_a_gemm", "gemm.tiny_gemm_bf16", "gemm.tiny_k_gemm_bf16", "gemm.tiny_n_gemm_bf16"
    ]
    assert registry.op_ids("no_such_group") == []


def test_calling_a_spec_runs_the_triton_backend():
    import torch

    x = torch.ones(2, 4)
    weight = torch.ones(3, 4)
    out = registry.get("gemm.tiny_n_gemm_bf16")(x, weight, out_dtype=torch.float32)
    assert out.tolist() == [[4.0] * 3] * 2


def test_import_and_listing_pull_in_neither_torch_nor_triton():
    code = (
        "import json, sys\n"
        "import sglang.kernels.registry as registry\n"
        "import sglang.kernels.ops\n"
        "ids = registry.op_ids()\n"
        "specs = [registry.get(i) for i in ids]\n"
        "heavy = sorted(m for m in ('torch', 'triton') if m in sys.modules)\n"
        "ops = sorted(m for m in sys.modules if m.startswith('sglang.kernels.ops.'))\n"
        "print(json.dumps({'ids': len(ids), 'heavy': heavy, 'ops': ops}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ids"] == len(registry.op_ids())
    assert result["heavy"] == []  # neither torch nor triton was imported
    assert result["ops"] == []  # no operator group or module either: targets are lazy strings


@pytest.mark.parametrize("bad_id", ["gemm.no_such_op", "no_such_group.op", "gemm"])
def test_unknown_op_id_is_a_key_error_naming_it(bad_id):
    with pytest.raises(KeyError, match=repr(bad_id)):
        registry.get(bad_id)
    with pytest.raises(KeyError, match=repr(bad_id)):
        registry.load(bad_id)


def test_unknown_backend_is_a_key_error_naming_it():
    with pytest.raises(KeyError, match="'cuda_graph'"):
        registry.load("gemm.tiny_n_gemm_bf16", "cuda_graph")


@pytest.fixture
def scratch_registry(monkeypatch):
    """A copy of the registry that `register` writes to, so the real one stays untouched
    (upstream's `registry` instance, which `register` also fills, is swapped for an empty one)."""
    scratch = dict(registry.REGISTRY)
    monkeypatch.setattr(registry, "REGISTRY", scratch)
    monkeypatch.setattr(registry, "registry", registry.KernelRegistry())
    return scratch


@pytest.mark.parametrize(
    "op_id, triton, torch_target, match",
    [
        ("nogroup", "m:f", "m:f_ref", "op id must be '<group>.<name>'"),
        (".name", "m:f", "m:f_ref", "op id must be '<group>.<name>'"),
        ("group.", "m:f", "m:f_ref", "op id must be '<group>.<name>'"),
        ("a.b.c", "m:f", "m:f_ref", "op id must be '<group>.<name>'"),
        ("g.op", "module.f", "m:f_ref", "triton target must be 'module:attr'"),
        ("g.op", ":f", "m:f_ref", "triton target must be 'module:attr'"),
        ("g.op", "m:f", "m:", "torch target must be 'module:attr'"),
        ("gemm.tiny_n_gemm_bf16", "m:f", "m:f_ref", "registered twice"),
    ],
)
def test_register_rejects_malformed_ids_and_targets(
    scratch_registry, op_id, triton, torch_target, match
):
    before = dict(scratch_registry)
    with pytest.raises(ValueError, match=match):
        registry.register(op_id, triton=triton, torch=torch_target)
    assert scratch_registry == before


def test_register_is_lazy(scratch_registry):
    # A target is only imported when loaded: a missing module fails at load, not at register.
    spec = registry.register(
        "scratch.op", triton="no_such_module:op", torch="no_such_module:op_ref"
    )
    assert registry.get("scratch.op") is spec
    with pytest.raises(ModuleNotFoundError):
        spec.load()


# --- upstream's names in this module (sglang 0.5.17 and 0.5.23 `sglang/kernels/registry.py`) ---

# upstream's `KernelRegistry` methods and their parameters (after `self`), read from that file.
UPSTREAM_KERNEL_REGISTRY_METHODS = {
    "register": ["spec"],
    "get": ["op"],
    "get_backend": ["op", "backend"],
    "has": ["op"],
    "ops": [],
    "all_specs": [],
}


def test_upstreams_registry_names_are_bound_with_upstreams_shape():
    methods = {
        name: list(inspect.signature(fn).parameters)[1:]
        for name, fn in vars(registry.KernelRegistry).items()
        if not name.startswith("_") and callable(fn)
    }
    assert methods == UPSTREAM_KERNEL_REGISTRY_METHODS
    assert isinstance(registry.registry, registry.KernelRegistry)
    assert list(inspect.signature(registry.register_kernel).parameters) == ["spec"]


def test_every_op_is_in_upstreams_registry_as_a_triton_and_a_torch_spec():
    instance = registry.registry
    assert instance.ops() == registry.op_ids()
    for op_id in registry.op_ids():
        specs = instance.get(op_id)
        assert all(isinstance(s, KernelSpec) for s in specs)
        assert {s.backend for s in specs} == {KernelBackend.TRITON, KernelBackend.TORCH}
        assert instance.get_backend(op_id, KernelBackend.TRITON).load() is registry.load(op_id)
        assert instance.get_backend(op_id, KernelBackend.TORCH).load() is registry.load(op_id, "torch")
    assert instance.get("no.such_op") == [] and not instance.has("no.such_op")
    assert len(instance.all_specs()) == 2 * len(registry.op_ids())


def test_upstreams_register_is_idempotent_and_refuses_a_conflict():
    scratch = registry.KernelRegistry()
    spec = KernelSpec("g.op", KernelBackend.TRITON, "m:f")
    assert scratch.register(spec) is spec and scratch.register(spec) is spec
    assert scratch.get("g.op") == [spec]
    with pytest.raises(ValueError, match="Conflicting kernel registration for op 'g.op', backend 'triton'"):
        scratch.register(KernelSpec("g.op", KernelBackend.TRITON, "m:other"))
    with pytest.raises(KeyError, match="No 'aot' backend registered for op 'g.op'"):
        scratch.get_backend("g.op", KernelBackend.AOT)


def test_kernel_spec_load_follows_a_dotted_attribute_and_refuses_a_bad_target():
    assert KernelSpec("g.op", KernelBackend.TORCH, "os:path.join").load() is __import__("os").path.join
    with pytest.raises(ValueError, match="must be 'module:attr'"):
        KernelSpec("g.op", KernelBackend.TORCH, "os.path").load()


def test_register_fills_upstreams_registry_too(scratch_registry):
    registry.register("scratch.op", triton="m:op", torch="m:op_ref")
    assert [s.target for s in registry.registry.get("scratch.op")] == ["m:op", "m:op_ref"]
