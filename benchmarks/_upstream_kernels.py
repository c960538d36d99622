"""Upstream's own kernels as a baseline for `gpu_report.py`, loaded without installing sglang.

Two sources:

- upstream's Triton kernels shipped in the sglang wheel, read from a directory the user gives
  (an unpacked wheel: `pip download --no-deps sglang==0.5.23`, then unzip). Each file is loaded
  BY PATH as a private module (`_upstream_<name>`): its module-level `from sglang... import`
  lines are replaced by the stand-ins named in `STUBS` (a file that needs anything else is "not
  available", with the name it wanted), and every later `import sglang...` it attempts raises,
  so neither upstream's package nor this repository's `sglang` is imported by it. Under
  Triton's interpreter (`TRITON_INTERPRET=1`, the CPU smoke run) `triton.autotune` cannot
  benchmark its configs, so the file sees a `triton` whose `autotune` launches the first
  config; on a GPU it gets the real one.
- `sgl_kernel` (upstream's compiled CUDA kernels), when it is installed.

Function bodies are untouched and keep their file and line numbers, so `@triton.jit` reads the
kernels' source from upstream's file itself.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import os
import sys
import types
from pathlib import Path

# What upstream's kernel files import from sglang, replaced by what the Triton path needs:
# `is_cuda()` False takes the Triton branch (True would call upstream's CUDA JIT modules, which
# would need upstream's whole `sglang.kernels.jit`); the rest are only read for logging/tuning.
STUBS: dict[str, dict[str, object]] = {
    "sglang.srt.utils": {
        "is_cuda": lambda: False,
        "is_hip": lambda: False,
        "get_device_name": lambda *args: "",
    },
}


class UpstreamUnavailable(Exception):
    """An upstream kernel cannot run here; the message says why (the table shows it)."""


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


class _FirstConfig:
    """`triton.autotune`'s stand-in under the interpreter: launches with `configs[0]`."""

    def __init__(self, fn, config):
        self.fn, self.config = fn, config

    def __getitem__(self, grid):
        launch = self.fn[grid]
        return lambda *args, **kwargs: launch(*args, **{**self.config.all_kwargs(), **kwargs})


class _TritonForInterpreter(types.ModuleType):
    """`triton` with `autotune` replaced (see `_FirstConfig`); everything else is triton's."""

    def __getattr__(self, name):
        return getattr(importlib.import_module("triton"), name)

    @staticmethod
    def autotune(configs, key, **kwargs):
        return lambda fn: _FirstConfig(fn, configs[0])


def _stub_sglang_imports(tree: ast.Module, rel: str) -> dict[str, object]:
    """Replace each top-level `from sglang.X import a, b` by `pass`, after checking `STUBS` has
    every name; return the names to bind. Imports nested in functions or `if` blocks are left
    to the guarded `__import__`, which refuses them only if they run."""
    names: dict[str, object] = {}
    for i, node in enumerate(tree.body):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        if node.module.split(".")[0] != "sglang":
            continue
        stub = STUBS.get(node.module, {})
        for alias in node.names:
            if alias.name not in stub:
                raise UpstreamUnavailable(
                    f"{rel}:{node.lineno} imports {node.module}.{alias.name} (no stand-in)"
                )
            names[alias.asname or alias.name] = stub[alias.name]
        tree.body[i] = ast.copy_location(ast.Pass(), node)
    return names


def _guarded_import(rel: str):
    triton_proxy = _TritonForInterpreter("triton") if _interpreting() else None

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name.split(".")[0] == "sglang":
            raise ImportError(f"upstream {rel} imports {name}, which the report does not load")
        module = builtins.__import__(name, globals, locals, fromlist, level)
        if triton_proxy is not None and name.split(".")[0] == "triton" and not fromlist:
            return triton_proxy
        return module

    return guarded


_LOADED: dict[tuple[str, str], types.ModuleType] = {}


def load_file(root: Path, rel: str) -> types.ModuleType:
    """Upstream's `root/rel` as a private module, or `UpstreamUnavailable` saying why."""
    key = (str(root), rel)
    if key in _LOADED:
        return _LOADED[key]
    path = Path(root) / rel
    if not path.is_file():
        raise UpstreamUnavailable(f"{rel} is not in {root}")
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, str(path))
    stubs = _stub_sglang_imports(tree, rel)
    name = "_upstream_" + rel.replace("/", "_").removesuffix(".py")
    module = types.ModuleType(name)
    module.__file__ = str(path)
    module.__dict__["__builtins__"] = {**vars(builtins), "__import__": _guarded_import(rel)}
    module.__dict__.update(stubs)
    sys.modules[name] = module  # dataclasses and Triton resolve a module by its name
    try:
        exec(compile(tree, str(path), "exec"), module.__dict__)  # noqa: S102 - upstream's file, by path
    except Exception as exc:
        sys.modules.pop(name, None)
        raise UpstreamUnavailable(f"{rel} does not load: {type(exc).__name__}: {exc}") from exc
    _LOADED[key] = module
    return module


def sgl_kernel():
    """The installed `sgl_kernel` module, or `UpstreamUnavailable`."""
    if importlib.util.find_spec("sgl_kernel") is None:
        raise UpstreamUnavailable("sgl_kernel is not installed")
    return importlib.import_module("sgl_kernel")
