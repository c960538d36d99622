"""Fixture trees for the checker: small packages written into tmp_path, and ways to run the CLI."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

BASE_CONFIG = """\
[importlinter]
root_packages =
    pkg
contract_types =
    removed_modules: contracts.RemovedModulesContract
    operator_groups: contracts.OperatorGroupsContract
    layer: contracts.LayerContract

[importlinter:contract:removed]
name = pkg.jit_kernel was removed
type = removed_modules
removed_modules =
    pkg.jit_kernel
replacements =
    pkg.jit_kernel.hicache -> pkg.kernels.ops.kvcache.hicache
    pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm.norm
    pkg.jit_kernel.utils -> pkg.kernels.jit

[importlinter:contract:groups]
name = operator groups
type = operator_groups
container = pkg.kernels.ops
groups =
    kvcache
    layernorm
    gemm
shared_modules =
    pkg.kernels.jit

[importlinter:contract:layer]
name = kernels do not import the runtime
type = layer
layers =
    pkg.srt
    pkg.kernels
"""

# A clean tree: three groups, shared infra, a runtime in a namespace directory (no __init__.py).
CLEAN_TREE = {
    "pkg/__init__.py": "",
    "pkg/kernels/__init__.py": "",
    "pkg/kernels/jit/__init__.py": "def use_triton():\n    return False\n",
    "pkg/kernels/ops/__init__.py": "",
    "pkg/kernels/ops/kvcache/__init__.py": "from pkg.kernels.ops.kvcache.hicache import transfer\n",
    "pkg/kernels/ops/kvcache/hicache.py": "from pkg.kernels.jit import use_triton\n\ndef transfer():\n    return use_triton()\n\ndef _private_helper():\n    pass\n",
    "pkg/kernels/ops/layernorm/__init__.py": "",
    "pkg/kernels/ops/layernorm/norm.py": "from ...jit import use_triton\n\ndef rmsnorm():\n    return use_triton()\n",
    "pkg/kernels/ops/gemm/__init__.py": "",
    "pkg/kernels/ops/gemm/fused_a_gemm.py": "def fused_a_gemm():\n    return 1\n",
    "pkg/srt/layers/layernorm.py": "from pkg.kernels.ops.layernorm.norm import rmsnorm\n",
    "pkg/srt/mem_cache/host.py": (
        "from pkg.kernels.ops.kvcache.hicache import transfer as jit_transfer\n"
        "can_use_hicache_jit_kernel = True  # a name that contains the text jit_kernel\n"
    ),
}


# CLEAN_TREE whose new homes also bind the names the --fix fixtures import from them (`a`, `b`,
# `T` from hicache, `rms` from norm): `--fix` verifies every rewrite against the checked tree,
# names included, so a fixture that imports a name its target lacks would (rightly) not be fixed.
NAMED_TREE = {
    **CLEAN_TREE,
    "pkg/kernels/ops/kvcache/hicache.py": CLEAN_TREE["pkg/kernels/ops/kvcache/hicache.py"] + "\na = b = T = None\n",
    "pkg/kernels/ops/layernorm/norm.py": CLEAN_TREE["pkg/kernels/ops/layernorm/norm.py"] + "\ndef rms():\n    return 0\n",
}


def write_tree(root: Path, files: dict[str, str], config: str | None = BASE_CONFIG) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text) if text.startswith("\n") else text)
    if config is not None:
        (root / ".importlinter").write_text(config)
    return root


@pytest.fixture
def tree(tmp_path):
    """A function: tree(extra_files, config=BASE_CONFIG, base=CLEAN_TREE) -> root path."""

    def make(extra: dict[str, str] | None = None, config: str | None = BASE_CONFIG,
             base: dict[str, str] | None = None) -> Path:
        files = dict(CLEAN_TREE if base is None else base)
        files.update(extra or {})
        return write_tree(tmp_path, files, config)

    return make


def run_cli(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m contracts ARGS` in a subprocess, the way a user runs it."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "contracts", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=120)


@contextlib.contextmanager
def cwd(path: Path):
    """Run in `path`, as a user does: printed paths are relative to the working directory."""
    before = os.getcwd()
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(before)


def run_json(root: Path, *args: str) -> tuple[int, dict]:
    import io

    from contracts.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), cwd(root):
        code = main(["--config", str(root / ".importlinter"), "--no-cache", "--format", "json", *args])
    return code, json.loads(out.getvalue())


def pip(*args: str, python: str | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    target = ("--python", python) if python else ()
    return subprocess.run([sys.executable, "-m", "pip", *target, *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))


@pytest.fixture
def not_racy(monkeypatch):
    """Files written by the test just now count as settled (the real window is 2 s)."""
    from contracts.engine import model as model_mod
    from contracts.engine import stamp as stamp_mod

    monkeypatch.setattr(model_mod, "RACY_SECONDS", -1.0)
    monkeypatch.setattr(stamp_mod, "RACY_SECONDS", -1.0)


@pytest.fixture(scope="session")
def linter_wheel(tmp_path_factory) -> Path:
    """The linter's wheel, built from a copy of the repository's distribution files (building in
    the repository would leave build/ and *.egg-info there). `sglang/` is copied too: the
    packaging must leave it out, not merely not find it."""
    import shutil

    src = tmp_path_factory.mktemp("dist-src")
    for name in ("setup.cfg", "pyproject.toml", "README.md", "namespace_lint_start.py"):
        shutil.copy(REPO / name, src / name)
    for name in ("contracts", "sglang"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    proc = pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out), str(src))
    if proc.returncode != 0 and "No module named" in proc.stderr:
        pytest.skip(f"cannot build a wheel here: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr
    (built,) = out.glob("*.whl")
    return built


@pytest.fixture(scope="session")
def linter_site(linter_wheel, tmp_path_factory) -> Path:
    """The wheel installed (non-editable, no dependencies: they are this environment's) into a
    directory of its own, with its console scripts under `bin/`."""
    site = tmp_path_factory.mktemp("linter-site")
    proc = pip("install", "--no-deps", "--no-index", "--no-compile", "-q", "--target", str(site), str(linter_wheel))
    assert proc.returncode == 0, proc.stderr
    return site
