"""The real-tree and scaling benchmarks write nothing tracked unless asked (`--update-docs`), keep
their downloads in one documented directory, and clear it with `--clear-cache`. Run as the
scripts are (`python benchmarks/bench_....py`), in a subprocess; nothing is measured here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
import _bench_files  # noqa: E402


class _Args:
    def __init__(self, update_docs=False, out=None, readme=None):
        self.update_docs, self.out, self.readme = update_docs, out, readme


def test_no_tracked_file_is_written_unless_asked():
    assert _bench_files.targets(_Args()) == []
    assert _bench_files.targets(_Args(update_docs=True)) == [
        str(REPO / "docs" / "benchmarks.md"), str(REPO / "README.md")]
    assert _bench_files.targets(_Args(out="/tmp/x.md")) == ["/tmp/x.md"]


def test_the_cache_is_under_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _bench_files.default_cache() == str(tmp_path / "namespace-lint-bench")
    monkeypatch.setenv("XDG_CACHE_HOME", "")  # empty counts as unset, as the XDG spec says
    assert _bench_files.default_cache().endswith(os.path.join(".cache", "namespace-lint-bench"))


@pytest.mark.parametrize("script", ["bench_real_trees.py", "bench_scaling.py"])
def test_clear_cache_removes_the_directory_and_says_how_much(tmp_path, script):
    cache = tmp_path / "bench-cache"
    (cache / "wheels").mkdir(parents=True)
    (cache / "wheels" / "sglang-0-py3-none-any.whl").write_bytes(b"x" * 2**20)
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), "--cache", str(cache), "--clear-cache"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"removed {cache} (1 MiB)"
    assert not cache.exists()
