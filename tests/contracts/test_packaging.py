"""The distribution is the linter alone: its wheel holds every module of `contracts` and nothing
named `sglang`; installed into an environment that has a real sglang, it leaves that package byte
for byte as it was, installed and uninstalled; installed non-editable, both faces run.

The real wheel comes from `SGLANG_WHEELS` (a directory holding `sglang-0.5.23-*.whl`) or from
`pip download --no-deps sglang==0.5.23`; without either, that test is skipped and says why.
"""

from __future__ import annotations

import glob
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.contracts.conftest import BASE_CONFIG, CLEAN_TREE, REPO, pip, write_tree

UPSTREAM = "0.5.23"


@pytest.fixture(scope="module")
def wheel(linter_wheel) -> Path:
    return linter_wheel


def test_the_wheel_holds_every_module_of_the_linter_and_no_sglang(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    # `contracts`, and the command's first module, which checks that package before importing it
    assert tops == {"contracts", "namespace_lint_start.py"}, tops
    modules = {n for n in names if n.endswith(".py")}
    expected = {p.relative_to(REPO).as_posix() for p in (REPO / "contracts").rglob("*.py")
                if "__pycache__" not in p.parts} | {"namespace_lint_start.py"}
    assert modules == expected, (sorted(expected - modules), sorted(modules - expected))
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert not any("torch" in r or "sglang" in r for r in requires), requires


def test_a_non_editable_install_runs_both_faces_on_a_fixture(linter_site, tmp_path):
    site = linter_site
    fixture = write_tree(tmp_path / "fixture", {**CLEAN_TREE, "pkg/srt/stale.py": "from pkg.jit_kernel import norm\n"},
                         BASE_CONFIG)
    # Only the installed copy is importable: not this repository (neither on PYTHONPATH nor cwd).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(site), COLUMNS="300")
    where = subprocess.run([sys.executable, "-c", "import contracts; print(contracts.__file__)"], cwd=fixture,
                           env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip() == str(site / "contracts" / "__init__.py"), where.stdout + where.stderr
    ours = subprocess.run([str(site / "bin" / "namespace-lint"), "--no-cache"], cwd=fixture, env=env,
                          capture_output=True, text=True, timeout=120)
    assert ours.returncode == 1, ours.stdout + ours.stderr
    assert "pkg/srt/stale.py:1:1: removed-module `pkg.jit_kernel.norm` was removed" in ours.stdout
    lint = subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command;"
                           " sys.exit(lint_imports_command())", "--no-cache"],
                          cwd=fixture, env=env, capture_output=True, text=True, timeout=120)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "pkg/srt/stale.py:1:1: removed-module" in lint.stdout
    (fixture / "pkg/srt/stale.py").write_text("from pkg.kernels.ops.layernorm import norm\n")
    for cmd in ([str(site / "bin" / "namespace-lint"), "--no-cache"],
                [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command;"
                 " sys.exit(lint_imports_command())", "--no-cache"]):
        clean = subprocess.run(cmd, cwd=fixture, env=env, capture_output=True, text=True, timeout=120)
        assert clean.returncode == 0, clean.stdout + clean.stderr


def _upstream_wheel(tmp_path_factory) -> Path:
    pattern = f"sglang-{UPSTREAM}-*.whl"
    wheels = os.environ.get("SGLANG_WHEELS")
    if wheels:
        found = sorted(glob.glob(os.path.join(wheels, pattern)))
        if found:
            return Path(found[0])
    dest = tmp_path_factory.mktemp("upstream-wheel")
    proc = pip("download", "--no-deps", "-q", "-d", str(dest), f"sglang=={UPSTREAM}", timeout=600)
    found = sorted(dest.glob(pattern))
    if proc.returncode != 0 or not found:
        reason = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
        pytest.skip(f"sglang=={UPSTREAM} wheel not available (set SGLANG_WHEELS=DIR, or allow "
                    f"`pip download`): {reason}")
    return found[0]


def _tree_digest(directory: Path) -> dict[str, str]:
    """Every file (and symlink) under `directory` by relative path, with its content hash."""
    out = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_a_real_sglang_stays_byte_identical_when_the_linter_is_installed_and_uninstalled(
        wheel, tmp_path_factory):
    upstream = _upstream_wheel(tmp_path_factory)
    venv = tmp_path_factory.mktemp("venv") / "env"
    # A plain venv (no system site-packages): only what is installed here is in it.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    proc = pip("install", "--no-deps", "--no-index", "--no-compile", "-q", str(upstream), python=python)
    assert proc.returncode == 0, proc.stderr
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    package = site / "sglang"
    before = _tree_digest(package)
    assert "__init__.py" in before and "kernels/ops/__init__.py" in before
    assert pip("install", "--no-deps", "--no-index", "--no-compile", "-q", str(wheel),
                python=python).returncode == 0
    assert (site / "contracts" / "__init__.py").is_file()
    assert _tree_digest(package) == before
    assert pip("uninstall", "-y", "-q", "sglang-namespace-guard", python=python).returncode == 0
    assert not (site / "contracts").exists()
    assert _tree_digest(package) == before
