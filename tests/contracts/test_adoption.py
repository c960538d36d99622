"""End to end, as upstream would adopt it: a temporary git repository in upstream's layout
(`python/sglang/...` with a namespace `srt/`, `python/pyproject.toml`, `test/`, `benchmark/`,
`scripts/`, a vendored directory to exclude, the config at the root), the linter installed
non-editable beside a decoy `sglang` in the same environment, both pre-commit hooks of
`.pre-commit-hooks.yaml` run through pre-commit (as `language: system` hooks of that installed
environment: `language: python` would pip-install the same wheel from the network; that variant,
`pre-commit try-repo`, is the slow test at the end), and the CLI from the root and from a
subdirectory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contracts.conftest import REPO

CONFIG = """\
[importlinter]
root_packages =
    sglang
source_dir = python
importer_paths =
    test
    benchmark
    scripts/**/*.py
exclude =
    python/sglang/srt/vendored
contract_types =
    removed_modules: contracts.RemovedModulesContract
    layer: contracts.LayerContract

[importlinter:contract:removed-jit-kernel]
name = sglang.jit_kernel was removed
type = removed_modules
removed_modules =
    sglang.jit_kernel
replacements =
    sglang.jit_kernel.norm -> sglang.kernels.ops.layernorm.norm

[importlinter:contract:kernel-layer]
name = The kernel layer does not import the runtime
type = layer
layers =
    sglang.srt
    sglang.kernels
"""

CLEAN = {
    ".importlinter": CONFIG,
    "python/pyproject.toml": '[project]\nname = "sglang"\nversion = "0"\n',
    "python/sglang/__init__.py": "",
    "python/sglang/kernels/__init__.py": "",
    "python/sglang/kernels/ops/__init__.py": "",
    "python/sglang/kernels/ops/layernorm/__init__.py": "",
    "python/sglang/kernels/ops/layernorm/norm.py": "def rmsnorm():\n    return 1\n",
    # srt is a namespace package (no __init__.py), as upstream's
    "python/sglang/srt/layers/layernorm.py": "from sglang.kernels.ops.layernorm.norm import rmsnorm\n",
    "python/sglang/srt/vendored/old.py": "from sglang.jit_kernel.norm import rmsnorm  # vendored, excluded\n",
    "test/srt/test_layernorm.py": "from sglang.kernels.ops.layernorm.norm import rmsnorm\n",
    "benchmark/kernels/bench_norm.py": "import sglang.kernels.ops.layernorm.norm\n",
    "scripts/ci/check.py": "print('ok')\n",
    "README.md": "upstream\n",
}
STALE = "from sglang.jit_kernel.norm import rmsnorm\n"
DECOY = {"sglang/__init__.py": "", "sglang/clean.py": "X = 1\n"}  # an installed sglang with no violation


def _hooks_config() -> str:
    """This repository's `.pre-commit-hooks.yaml` hooks, as local `language: system` hooks."""
    import yaml

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert {h["id"] for h in hooks} == {"namespace-lint", "lint-imports"}
    for h in hooks:
        h["language"] = "system"
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]})


@pytest.fixture
def upstream(tmp_path, linter_site):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("yaml")
    pytest.importorskip("pre_commit")
    root = tmp_path / "sglang-repo"
    for rel, text in CLEAN.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".pre-commit-config.yaml").write_text(_hooks_config())
    decoy_site = tmp_path / "decoy-site"
    for rel, text in DECOY.items():
        (decoy_site / rel).parent.mkdir(parents=True, exist_ok=True)
        (decoy_site / rel).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PRE_COMMIT", "GIT_"))}
    env.update(
        PATH=f"{linter_site / 'bin'}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}",
        # the installed linter, and an installed `sglang` that is not the user's
        PYTHONPATH=f"{linter_site}{os.pathsep}{decoy_site}",
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), COLUMNS="300", HOME=str(tmp_path),
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
    )

    def run(*cmd: str, cwd: Path = root) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    assert run("git", "init", "-q", ".").returncode == 0
    run("git", "add", "-A")
    assert run("git", "commit", "-qm", "upstream layout").returncode == 0
    return root, run


def _hooks(run) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    run("git", "add", "-A")
    proc = run(sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never")
    status = {}
    for line in proc.stdout.splitlines():
        for hook in ("namespace-lint (", "lint-imports ("):
            if line.startswith(hook) and line.rstrip().endswith(("Passed", "Failed")):
                status[hook.rstrip(" (")] = line.rstrip().rsplit(".", 1)[-1]
    return proc, status


def test_both_hooks_fail_on_a_stale_import_and_pass_once_it_is_fixed(upstream):
    root, run = upstream
    proc, status = _hooks(run)
    assert status == {"namespace-lint": "Passed", "lint-imports": "Passed"}, proc.stdout + proc.stderr
    for stale in ("python/sglang/srt/layers/stale.py", "test/srt/test_stale.py"):
        (root / stale).write_text(STALE)
        proc, status = _hooks(run)
        assert status == {"namespace-lint": "Failed", "lint-imports": "Failed"}, proc.stdout
        # each hook names the file by its repository path
        assert proc.stdout.count(f"{stale}:1:1: removed-module") == 2, proc.stdout
        assert "Analyzed" in proc.stdout and "_____" not in proc.stdout  # lint-imports ran, without its logo
        (root / stale).write_text(STALE.replace("sglang.jit_kernel.norm", "sglang.kernels.ops.layernorm.norm"))
        proc, status = _hooks(run)
        assert status == {"namespace-lint": "Passed", "lint-imports": "Passed"}, proc.stdout
    # the hooks' cache directory ignores itself
    assert (root / ".namespace_lint_cache" / "CACHEDIR.TAG").is_file()
    assert ".namespace_lint_cache" not in run("git", "status", "--porcelain", "--ignored=no").stdout
    assert run("git", "status", "--porcelain").stdout.strip() == "" or \
        ".namespace_lint_cache" not in run("git", "status", "--porcelain", "-uall").stdout


def test_the_cli_from_the_root_and_from_a_subdirectory(upstream):
    root, run = upstream
    (root / "test/srt/test_stale.py").write_text("def test():\n    " + STALE)
    (root / "scripts/ci/deep/run.py").parent.mkdir(parents=True)
    (root / "scripts/ci/deep/run.py").write_text(STALE)
    proc = run("namespace-lint", "--format", "github")
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "::error file=scripts/ci/deep/run.py", "::error file=test/srt/test_stale.py"], proc.stdout
    assert "line=2,col=5,title=removed-module" in lines[1]
    assert "vendored" not in proc.stdout + proc.stderr  # excluded: not scanned, not reported
    text = run("namespace-lint")
    files = len([p for p in root.rglob("*.py") if "vendored" not in p.parts])
    assert f"Scanned {files} of {files} .py files: 2 findings" in text.stdout, text.stdout
    # From a subdirectory (past python/pyproject.toml, which has no [tool.importlinter]):
    sub = run("namespace-lint", cwd=root / "python" / "sglang" / "srt")
    assert sub.returncode == 1, sub.stderr
    assert f"{root}/test/srt/test_stale.py:2:5: removed-module" in sub.stdout  # outside the cwd: absolute
    sub = run("namespace-lint", "--format", "json", cwd=root / "test")
    assert '"path": "srt/test_stale.py"' in sub.stdout
    # The lint-imports hook's command, from a subdirectory, on one contract: the user's package
    # (not the installed decoy `sglang`), and the files outside it.
    hook = run("namespace-lint", "lint-imports", "--contract", "removed-jit-kernel", cwd=root / "test")
    assert hook.returncode == 1, hook.stdout + hook.stderr
    assert "2 findings in" in hook.stdout, hook.stdout
    assert "-   srt/test_stale.py:2:5: removed-module" in hook.stdout  # relative to the cwd, test/
    assert f"-   {root}/scripts/ci/deep/run.py:1:1: removed-module" in hook.stdout
    assert "Contracts: 0 kept, 1 broken." in hook.stdout
    # A named file outside every importer path is still checked; an excluded one is a notice.
    (root / "setup_helper.py").write_text(STALE)
    named = run("namespace-lint", "setup_helper.py", "python/sglang/srt/vendored/old.py", "README.md")
    assert named.returncode == 1
    assert named.stdout.startswith("setup_helper.py:1:1: removed-module")
    notices = [line for line in named.stderr.splitlines() if "notice" in line]
    assert len(notices) == 2 and "python/sglang/srt/vendored/old.py: not checked: excluded" in notices[0]
    assert "README.md: not checked" in notices[1]


@pytest.mark.slow
def test_pre_commit_try_repo_installs_the_hooks_from_this_repository(upstream, tmp_path):
    """The real hook environments (`language: python`: pre-commit pip-installs this repository
    and its dependencies, from the network). Slow; run with `-m slow`."""
    root, run = upstream
    (root / "test/srt/test_stale.py").write_text(STALE)
    run("git", "add", "-A")
    for hook in ("namespace-lint", "lint-imports"):
        proc = run(sys.executable, "-m", "pre_commit", "try-repo", str(REPO), hook, "--all-files",
                   "--color", "never")
        if "Could not find a version" in proc.stdout + proc.stderr or "No matching distribution" in proc.stdout:
            pytest.skip("no network for the hook environment")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "test/srt/test_stale.py:1:1: removed-module" in proc.stdout, proc.stdout
