"""The tool never executes the code it checks: a canary tree whose every module writes a marker
file when imported is checked by each face -- the CLI, `lint-imports`, `--fix`, `--diff`,
`derive-map` -- with the canary root importable (on `PYTHONPATH` and the working directory), and
the marker never appears.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contracts.conftest import BASE_CONFIG, CLEAN_TREE, REPO

needs_fix = pytest.mark.skipif(not (REPO / "contracts/fix").is_dir(), reason="contracts/fix/ not there yet")


@pytest.fixture
def canary(tmp_path):
    """(src, marker): the fixture tree renamed `canary`, every module of it a tripwire."""
    src, marker = tmp_path / "src", tmp_path / "EXECUTED"
    tripwire = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')  # canary\n"
    files = {rel.replace("pkg/", "canary/", 1): text.replace("pkg.", "canary.") for rel, text in CLEAN_TREE.items()}
    files.update({
        "canary/__main__.py": "",
        "canary/srt/user.py": "def f():\n    from canary.jit_kernel.hicache import transfer\n    return transfer\n",
    })
    files = {rel: tripwire + text for rel, text in files.items()}
    # A compat shim, for derive-map to read (and shim-present to report). It holds nothing but
    # an import (or it would be no shim), and that import trips the wire of `canary`.
    files["canary/jit_kernel/__init__.py"] = ""
    files["canary/jit_kernel/hicache.py"] = "from canary.kernels.ops.kvcache.hicache import *\n"
    for rel, text in files.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (src / ".importlinter").write_text(BASE_CONFIG.replace("pkg", "canary"))
    return src, marker


def _run(cmd: list[str], src: Path) -> subprocess.CompletedProcess:
    # The canary root is importable: on PYTHONPATH, and the working directory is its parent.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(src)]), COLUMNS="400")
    proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc


def _assert_canary_alive(src: Path) -> None:
    """The tripwire works: importing the tree does write the marker (so its absence means something)."""
    probe = _run([sys.executable, "-c", "import canary.srt.user"], src)
    assert probe.returncode == 0, probe.stderr


def test_the_cli_never_imports_the_checked_tree(canary):
    src, marker = canary
    proc = _run([sys.executable, "-m", "contracts", "--no-cache", "--format", "json"], src)
    assert proc.returncode == 1
    assert "canary/srt/user.py" in {f["path"] for f in json.loads(proc.stdout)["findings"]}
    assert not marker.exists()
    _assert_canary_alive(src)
    assert marker.exists()


def test_lint_imports_never_imports_the_checked_tree(canary):
    src, marker = canary
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports is not installed")
    proc = _run([exe, "--no-cache"], src)
    assert proc.returncode == 1 and "canary/srt/user.py" in proc.stdout, proc.stdout
    assert not marker.exists()


@needs_fix
def test_fix_and_diff_never_import_the_checked_tree(canary):
    src, marker = canary
    diff = _run([sys.executable, "-m", "contracts", "--diff"], src)
    assert "+    from canary.kernels.ops.kvcache.hicache import transfer" in diff.stdout, diff.stdout + diff.stderr
    fix = _run([sys.executable, "-m", "contracts", "--fix"], src)
    assert "from canary.kernels.ops.kvcache.hicache import transfer" in (src / "canary/srt/user.py").read_text()
    assert not marker.exists(), fix.stdout
    _assert_canary_alive(src)  # the rewritten file still imports (and trips the wire)
    assert marker.exists()


def test_derive_map_never_imports_the_checked_trees(canary):
    src, marker = canary
    one = _run([sys.executable, "-m", "contracts", "derive-map", "--removed", "canary.jit_kernel",
                "--src", str(src)], src)
    assert "canary.jit_kernel.hicache -> canary.kernels.ops.kvcache.hicache" in one.stdout, one.stdout + one.stderr
    _run([sys.executable, "-m", "contracts", "derive-map", "--removed", "canary.jit_kernel",
          "--before", str(src), "--after", str(src)], src)
    assert not marker.exists()


def test_in_process_the_root_on_sys_path_is_never_imported(canary, monkeypatch, capsys):
    from contracts.cli import main

    src, marker = canary
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.chdir(src)
    assert main(["--no-cache"]) == 1
    assert "canary/srt/user.py:3:5: removed-module" in capsys.readouterr().out
    assert not [name for name in sys.modules if name == "canary" or name.startswith("canary.")]
    assert not marker.exists()
