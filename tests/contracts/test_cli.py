"""The CLI face: formats, exit codes, --src, PATH filtering; and agreement with `lint-imports`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contracts.conftest import REPO, run_cli

VIOLATION = {"pkg/srt/models/m.py": "import os\nfrom pkg.jit_kernel import hicache\n"}


def test_exit_0_and_summary_when_clean(tree):
    root = tree()
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Scanned 12 of 12 .py files: no findings."


def test_exit_1_and_text_format_when_findings(tree):
    root = tree(VIOLATION)
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "pkg/srt/models/m.py:2:1: removed-module `pkg.jit_kernel.hicache` was removed (import; "
        "`pkg.jit_kernel` no longer exists) (use `pkg.kernels.ops.kvcache.hicache` instead) [*]",
        "Scanned 13 of 13 .py files: 1 finding (removed-module: 1).",
        "[*] 1 fixable with `--fix`.",
    ]


def test_json_format_matches_the_schema(tree):
    root = tree(VIOLATION)
    proc = run_cli(["--no-cache", "--format", "json"], cwd=root)
    data = json.loads(proc.stdout)  # exactly one JSON object, nothing else on stdout
    assert set(data) == {"files_scanned", "files_total", "findings"}
    assert data["files_scanned"] == data["files_total"] == 13
    [finding] = data["findings"]
    assert finding == {
        "rule": "removed-module", "path": "pkg/srt/models/m.py", "line": 2, "col": 1,
        "importer": "pkg.srt.models.m", "imported": "pkg.jit_kernel.hicache",
        "message": "`pkg.jit_kernel.hicache` was removed (import; `pkg.jit_kernel` no longer exists)",
        "replacement": "pkg.kernels.ops.kvcache.hicache", "fixable": True,
    }
    types = {"rule": str, "path": str, "line": int, "col": int, "importer": str, "imported": str, "message": str}
    assert all(isinstance(finding[k], t) for k, t in types.items())


def test_github_format(tree):
    root = tree(VIOLATION)
    proc = run_cli(["--no-cache", "--format", "github"], cwd=root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "::error file=pkg/srt/models/m.py,line=2,col=1,title=removed-module::`pkg.jit_kernel.hicache` "
        "was removed (import; `pkg.jit_kernel` no longer exists) (use `pkg.kernels.ops.kvcache.hicache` instead)"
    ]


def test_src_and_config_from_elsewhere_on_a_namespace_subpackage(tree, tmp_path_factory):
    root = tree(VIOLATION)
    assert not (root / "pkg" / "srt" / "__init__.py").exists()  # grimp would not scan pkg/srt
    elsewhere = tmp_path_factory.mktemp("cwd")
    proc = run_cli(["--no-cache", "--config", str(root / ".importlinter"), "--src", str(root),
                    "--format", "json"], cwd=elsewhere)
    # Outside the working directory: absolute.
    assert [f["path"] for f in json.loads(proc.stdout)["findings"]] == [str(root / "pkg/srt/models/m.py")]


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_paths_are_relative_to_the_working_directory_whatever_src_is(tree, fmt):
    root = tree(VIOLATION)
    # The package under python/, the config and the command at the repository root (upstream's layout).
    (root / "python").mkdir()
    (root / "pkg").rename(root / "python" / "pkg")
    proc = run_cli(["--no-cache", "--src", "python", "--format", fmt], cwd=root)
    assert proc.returncode == 1, proc.stderr
    shown = {"text": "python/pkg/srt/models/m.py:2:1: removed-module",
             "json": '"path": "python/pkg/srt/models/m.py"',
             "github": "::error file=python/pkg/srt/models/m.py,line=2,col=1,"}[fmt]
    assert shown in proc.stdout
    proc = run_cli(["--no-cache", "--config", "../.importlinter", "--src", ".", "--format", fmt], cwd=root / "python")
    assert shown.replace("python/", "") in proc.stdout, proc.stdout + proc.stderr


def test_paths_restrict_reported_findings(tree):
    root = tree({**VIOLATION, "pkg/srt/other.py": "import pkg.jit_kernel.norm\n"})
    proc = run_cli(["--no-cache", "--format", "json", "pkg/srt/other.py"], cwd=root)
    assert [f["path"] for f in json.loads(proc.stdout)["findings"]] == ["pkg/srt/other.py"]
    proc = run_cli(["--no-cache", "pkg/kernels/ops/gemm/fused_a_gemm.py"], cwd=root)
    assert proc.returncode == 0


@pytest.mark.parametrize("args, config_edit, message", [
    (["--format", "xml"], None, "invalid choice: 'xml'"),
    (["--config", "missing.ini"], None, "missing.ini: no such file"),
    (["--src", "nowhere"], None, "--src nowhere: no such directory"),
    ([], ("    pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm.norm", "    pkg.jit_kernel.norm pkg.x"),
     "section [importlinter:contract:removed], option 'replacements': line 'pkg.jit_kernel.norm pkg.x' has no '->'"),
    ([], ("type = layer", "type = layered"), "unknown contract type 'layered'"),
    ([], ("container = pkg.kernels.ops", "container = pkg.kernels.nope"),
     "option 'container': 'pkg.kernels.nope' is not a package"),
])
def test_exit_2_with_one_line_on_bad_usage_or_config(tree, args, config_edit, message):
    root = tree()
    if config_edit:
        path = root / ".importlinter"
        path.write_text(path.read_text().replace(*config_edit))
    proc = run_cli(["--no-cache", *args], cwd=root)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "Traceback" not in proc.stderr


def test_src_without_the_root_package_is_a_usage_error(tree, tmp_path_factory):
    root = tree()
    empty = tmp_path_factory.mktemp("empty")
    proc = run_cli(["--no-cache", "--src", str(empty)], cwd=root)
    assert proc.returncode == 2
    assert "does not contain the root package 'pkg'" in proc.stderr


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="400")  # no wrapped paths
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    return subprocess.run([exe, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def repo_copy(tmp_path):
    """This repository's linted packages and config, copied (nothing is installed from it)."""
    dest = tmp_path / "repo"
    dest.mkdir()
    for name in ("sglang", "contracts"):
        shutil.copytree(REPO / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / ".importlinter", dest / ".importlinter")
    return dest


def test_lint_imports_and_namespace_lint_agree_on_this_repository(repo_copy):
    lint = _lint_imports(repo_copy)
    ours = run_cli(["--no-cache"], cwd=repo_copy)
    assert (lint.returncode, ours.returncode) == (0, 0), lint.stdout + lint.stderr + ours.stdout
    assert "0 broken" in lint.stdout


# One violation of each kind, each injected alone: {reported file: {file: text}}.
INJECTED = {
    "sglang/srt/injected/removed.py": {
        "sglang/srt/injected/removed.py": "def f():\n    from sglang.jit_kernel import hicache\n"},
    "sglang/kernels/ops/gemm/injected_boundary.py": {
        "sglang/kernels/ops/gemm/injected_boundary.py": "from sglang.kernels.ops.kvcache import hicache\n"},
    "sglang/kernels/ops/kvcache/injected_layer.py": {
        "sglang/srt/injected_runtime.py": "X = 1\n",
        "sglang/kernels/ops/kvcache/injected_layer.py": "import sglang.srt.injected_runtime\n"},
    "sglang/jit_kernel/__init__.py": {"sglang/jit_kernel/__init__.py": ""},
}


@pytest.mark.parametrize("rel", sorted(INJECTED))
def test_both_faces_fail_on_an_injected_violation(repo_copy, rel):
    for name, text in INJECTED[rel].items():
        path = repo_copy / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    lint = _lint_imports(repo_copy)
    ours = run_cli(["--no-cache", "--format", "json"], cwd=repo_copy)
    assert lint.returncode == 1 and ours.returncode == 1, lint.stdout
    paths = {f["path"] for f in json.loads(ours.stdout)["findings"]}
    assert rel in paths
    assert rel in lint.stdout.replace("\n", "")


_LEAVE = """
import atexit, sys, threading, time
from contracts import cli

class Torn:
    def __del__(self):
        sys.stderr.write("torn down")

kept = Torn()  # a module global: freed only by the interpreter's teardown
atexit.register(lambda: open(sys.argv[1], "a").write("handler ran;"))
if sys.argv[2] == "thread":
    def late():
        time.sleep(0.3)
        open(sys.argv[1], "a").write("thread done;")
    threading.Thread(target=late).start()
sys.stdout.write("x" * 100000)  # still in the buffer
sys.stderr.write("err;")
cli._leave(3)
print("not reached")
"""


@pytest.mark.parametrize("mode", ["alone", "thread"])
def test_the_exit_flushes_the_output_runs_the_exit_handlers_and_keeps_the_code(tmp_path, mode):
    """`entry` leaves without the interpreter's teardown (`cli._leave`), as a normal exit would
    otherwise: the output flushed, `atexit` handlers run, the code kept; a thread still running
    is waited for (the interpreter exits then)."""
    marker = tmp_path / "marker"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _LEAVE, str(marker), mode], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "x" * 100000
    assert proc.stderr.startswith("err;")
    if mode == "alone":
        assert marker.read_text() == "handler ran;"
        assert "torn down" not in proc.stderr  # no teardown: the objects were not freed one by one
    else:
        assert marker.read_text() == "thread done;handler ran;"


_LOADED = """
import sys
from contracts.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["--output-format", "bogus"], ["upgrade", "--help"]])
def test_help_and_usage_errors_load_neither_the_engine_nor_the_heavy_dependencies(tmp_path, args):
    """What only a run needs (the engine, libcst, grimp, import-linter) is imported once the
    arguments are parsed: `--help`, `--version` and a usage error start without it."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _LOADED, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    loaded = proc.stderr.strip().splitlines()[-1].split()
    heavy = [m for m in loaded if m.startswith(("contracts.engine", "contracts.check", "contracts.fix", "libcst",
                                                "grimp", "importlinter"))]
    assert heavy == [], heavy
