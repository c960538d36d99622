"""Both cores: grimp's scans on a second thread give what one thread gives; `lint-imports
--no-cache` leaves this tool's cache alone too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from contracts import config as config_mod
from contracts.check import run
from contracts.engine import model as model_mod

from .conftest import REPO


class _Serial(model_mod._Background):
    """The scans in this thread, in the order they are asked for: the serial run."""

    def submit(self, files, decoded) -> None:
        if files:
            self.futures.append(_Done(self.scanner.scan(list(files), frozenset(decoded))))


class _Done:
    def __init__(self, value) -> None:
        self.value = value

    def result(self):
        return self.value


def _generated(tree) -> dict:
    """Enough files for many batches: group imports, chains, kernels importing the runtime,
    removed references, a syntax error, a file grimp's scanner cannot read (a declared encoding)."""
    files = {}
    groups = ["kvcache", "layernorm", "gemm"]
    for i in range(60):
        g, h = groups[i % 3], groups[(i + 1) % 3]
        files[f"pkg/kernels/ops/{g}/op{i}.py"] = (
            f"from pkg.kernels.ops.{h} import op{(i + 1) % 60}\n" if i % 4 == 0 else
            f"from pkg.helpers{i % 5} import x\n" if i % 4 == 1 else
            "def lazy():\n    from pkg.srt.utils import X\n" if i % 4 == 2 else "from pkg.kernels.jit import use_triton\n")
    for i in range(5):
        files[f"pkg/helpers{i}.py"] = f"from pkg.kernels.ops.{groups[i % 3]}._private import y\nx = 1\n"
    for i in range(60):
        files[f"pkg/srt/m{i}.py"] = (
            "from pkg.jit_kernel.hicache import transfer\n" if i % 3 == 0 else
            "import pkg.jit_kernel.norm as n\nTARGET = 'pkg.jit_kernel.utils:f'\n" if i % 3 == 1 else "import os\n")
    files["pkg/srt/utils.py"] = "X = 1\n"
    for g in groups:
        files[f"pkg/kernels/ops/{g}/_private.py"] = "y = 1\n"
    files["pkg/srt/broken.py"] = "from pkg.jit_kernel import hicache\ndef f(:\n"
    files["pkg/srt/latin.py"] = "# -*- coding: latin-1 -*-\nimport pkg.jit_kernel.hicache\n"
    return files


def _summary(result) -> list:
    return sorted((f.path, f.line, f.col, f.rule, f.imported, f.message) for f in result.findings)


def test_threaded_scan_equals_the_serial_one(tree, monkeypatch):
    root = tree(_generated(tree))
    cfg = config_mod.load(str(root / ".importlinter"))
    monkeypatch.setattr(model_mod, "_BATCH", 7)  # many batches, submitted while files are read
    threaded = _summary(run(cfg, str(root)))
    monkeypatch.setattr(model_mod, "_Background", _Serial)
    serial = _summary(run(cfg, str(root)))
    assert threaded == serial
    rules = {f[3] for f in threaded}
    assert {"removed-module", "group-boundary", "private-import", "layer", "parse-error"} <= rules


def test_lint_imports_no_cache_turns_off_this_tools_cache_too(tree):
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports is not installed")
    root = tree({"pkg/srt/m.py": "import pkg.jit_kernel.hicache\n"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(root)]), COLUMNS="400")
    proc = subprocess.run([exe, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "pkg/srt/m.py:1:1: removed-module" in proc.stdout, proc.stdout + proc.stderr
    assert not (root / ".namespace_lint_cache").exists()
    proc = subprocess.run([exe], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and (root / ".namespace_lint_cache").exists()
