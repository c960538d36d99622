"""A `contracts` package shared with another distribution (PyContracts installs one too): the
command says so in one line, naming the other distribution and what to do, never with a
traceback. The wheel is installed into a directory of its own, and the other distribution's
files are written beside it as pip would (its files, and a RECORD listing them)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.contracts.conftest import CLEAN_TREE, write_tree

OTHER = "PyContracts-1.8.12.dist-info"


@pytest.fixture
def site(linter_wheel, tmp_path):
    from tests.contracts.conftest import pip

    target = tmp_path / "site"
    proc = pip("install", "--no-deps", "--no-index", "--no-compile", "-q", "--target", str(target), str(linter_wheel))
    assert proc.returncode == 0, proc.stderr
    return target


def _other_distribution(site, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (site / rel).write_text(text)
    (site / OTHER).mkdir()
    (site / OTHER / "RECORD").write_text("".join(f"{rel},sha256=x,1\n" for rel in files)
                                         + f"{OTHER}/RECORD,,\n")


def _run(site, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, str(site / "bin" / "namespace-lint"), "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_runs_quietly_when_contracts_is_this_distributions_alone(site, tmp_path):
    root = write_tree(tmp_path / "tree", CLEAN_TREE)
    proc = _run(site, root)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_a_merged_package_whose_init_is_ours_is_a_warning_naming_the_other(site, tmp_path):
    root = write_tree(tmp_path / "tree", CLEAN_TREE)
    _other_distribution(site, {"contracts/interface.py": "X = 1\n"})
    proc = _run(site, root)
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("namespace-lint: warning: the `contracts` package in ")
    assert "shared with PyContracts 1.8.12" in line and "contracts/interface.py" in line
    assert "environment of its own" in line


def test_an_init_replaced_by_the_other_is_one_line_and_exit_2(site, tmp_path):
    root = write_tree(tmp_path / "tree", CLEAN_TREE)
    _other_distribution(site, {"contracts/__init__.py": "from .interface import *\n",
                               "contracts/interface.py": "import pyparsing_not_installed\n"})
    proc = _run(site, root)
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr
    assert line.startswith("namespace-lint: error: the `contracts` package in ")
    assert "shared with PyContracts 1.8.12: its files replaced this distribution's" in line


def test_an_editable_or_source_checkout_is_not_checked(tmp_path):
    # No RECORD lists files under `contracts/` (this repository's own checkout): nothing to compare.
    import namespace_lint_start

    assert namespace_lint_start._foreign_files(str(tmp_path)) == []
