"""The hooks of `.pre-commit-hooks.yaml`, run by pre-commit on a commit as CI runs them on a pushed
one (`pre-commit run ID --from-ref HEAD~1 --to-ref HEAD`), in a temporary git repository: a
change that breaks a file it did not touch fails the hook, naming that file; a commit of only
the config, only the baseline or only deletions is checked; an unrelated commit passes. The
hooks run as `repo: local`, `language: system` hooks of this environment (offline), with every
other key as the file has it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.contracts.conftest import REPO

CONFIG = """\
[importlinter]
root_packages =
    pkg
source_dir = src
importer_paths =
    tests
contract_types =
    removed_modules: contracts.RemovedModulesContract
    missing_imports: contracts.MissingImportsContract
    layer: contracts.LayerContract

[importlinter:contract:removed]
name = pkg.old was removed
type = removed_modules
removed_modules =
    pkg.old

[importlinter:contract:missing]
name = Imports of modules and names the tree does not have
type = missing_imports
"""

LAYER = """
[importlinter:contract:kernel-layer]
name = The kernels do not import the runtime
type = layer
layers =
    pkg.runtime
    pkg.kernels
"""

FILES = {
    ".importlinter": CONFIG,
    "src/pkg/__init__.py": "",
    "src/pkg/kernels/__init__.py": "",
    "src/pkg/kernels/norm.py": "from pkg.runtime import config\n\n\ndef rmsnorm():\n    return config.EPS\n",
    "src/pkg/runtime/__init__.py": "",
    "src/pkg/runtime/config.py": "EPS = 1e-6\n",
    # the importers: neither is touched by any commit below
    "src/pkg/runtime/layers.py": "from pkg.kernels.norm import rmsnorm\n",
    "src/pkg/runtime/other.py": "X = 1\n",
    "tests/test_norm.py": "from pkg.kernels.norm import rmsnorm\n",  # outside the package (importer_paths)
    "README.md": "a project\n",
}
IMPORTER = "src/pkg/runtime/layers.py"


def _hooks_config(args: list[str] | None = None) -> str:
    """This repository's hooks, every key as written, as local `language: system` hooks."""
    import yaml

    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    for h in hooks:
        h["language"] = "system"
        if args and h["id"] == "namespace-lint":
            h["args"] = args
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]})


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("yaml")
    pytest.importorskip("pre_commit")
    root = tmp_path / "repo"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PRE_COMMIT", "GIT_"))}
    env.update(
        # this environment's `namespace-lint`, first
        PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}",
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), COLUMNS="300", HOME=str(tmp_path),
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t",
    )

    def run(*cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), cwd=root, env=env, capture_output=True, text=True, timeout=300)

    def commit(message: str, config_args: list[str] | None = None) -> None:
        (root / ".pre-commit-config.yaml").write_text(_hooks_config(config_args))
        assert run("git", "add", "-A").returncode == 0
        proc = run("git", "commit", "-qm", message)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    assert run("git", "init", "-q", ".").returncode == 0
    commit("the project")
    return root, run, commit


def _hook(run, hook: str = "namespace-lint") -> tuple[str, str]:
    """(Passed / Failed / Skipped, the hook's output) for the last commit."""
    proc = run(sys.executable, "-m", "pre_commit", "run", hook, "--from-ref", "HEAD~1", "--to-ref", "HEAD",
               "--color", "never")
    line = next(line for line in proc.stdout.splitlines() if line.startswith(f"{hook} ("))
    return line.rstrip().rsplit(".", 1)[-1].strip(")").strip(), proc.stdout


def test_an_unrelated_commit_passes(repo):
    root, run, commit = repo
    (root / "README.md").write_text("a project, described\n")
    commit("docs")
    status, out = _hook(run)
    assert status == "Passed", out
    assert _hook(run, "lint-imports")[0] == "Passed"


def test_a_module_rename_fails_naming_the_unchanged_importer(repo):
    root, run, commit = repo
    assert run("git", "mv", "src/pkg/kernels/norm.py", "src/pkg/kernels/norm_v2.py").returncode == 0
    commit("rename the module")
    status, out = _hook(run)
    assert status == "Failed", out
    assert f"{IMPORTER}:1:1: missing-module `pkg.kernels.norm`" in out, out
    assert "tests/test_norm.py:1:1: missing-module `pkg.kernels.norm`" in out, out


def test_a_def_rename_fails_naming_the_unchanged_importer(repo):
    root, run, commit = repo
    norm = root / "src/pkg/kernels/norm.py"
    norm.write_text(norm.read_text().replace("def rmsnorm", "def rms_norm"))
    commit("rename the function")
    status, out = _hook(run)
    assert status == "Failed", out
    assert f"{IMPORTER}:1:1: missing-name" in out and "`rmsnorm`" in out, out


def test_a_deletion_only_commit_fails_naming_the_unchanged_importer(repo):
    _, run, commit = repo
    assert run("git", "rm", "-q", "src/pkg/kernels/norm.py").returncode == 0
    commit("delete the module")
    status, out = _hook(run)
    assert status == "Failed", out
    assert f"{IMPORTER}:1:1: missing-module `pkg.kernels.norm`" in out, out


def test_a_config_only_commit_is_checked(repo):
    root, run, commit = repo
    (root / ".importlinter").write_text(CONFIG + LAYER)  # the tree already breaks the new contract
    commit("add the layer contract")
    status, out = _hook(run)
    assert status == "Failed", out
    assert "src/pkg/kernels/norm.py:1:1: layer" in out, out
    assert _hook(run, "lint-imports")[0] == "Failed"


def test_a_baseline_only_commit_is_checked(repo):
    root, run, commit = repo
    baseline = root / ".namespace-lint-baseline.json"
    (root / ".importlinter").write_text(CONFIG + LAYER)
    proc = run("namespace-lint", "--write-baseline", baseline.name)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(baseline.read_text())["entries"]) == 1
    commit("adopt with a baseline", ["--baseline", baseline.name])
    assert _hook(run)[0] == "Passed"
    data = json.loads(baseline.read_text())
    data["entries"] = []  # the baseline alone changes: the finding it covered is new again
    baseline.write_text(json.dumps(data))
    commit("empty the baseline", ["--baseline", baseline.name])
    status, out = _hook(run)
    assert status == "Failed", out
    assert "src/pkg/kernels/norm.py:1:1: layer" in out, out


def test_one_summary_per_hook_run_over_many_files(repo):
    root, run, commit = repo
    # Over the 128 KiB of file names pre-commit puts on one command line (its `xargs`): were
    # they passed, the hook would run in two processes, with two summaries.
    for i in range(700):
        (root / f"src/pkg/runtime/m{i:03}_{'x' * 200}.py").write_text("X = 1\n")
    commit("many files")
    proc = run(sys.executable, "-m", "pre_commit", "run", "namespace-lint", "--all-files", "--color", "never",
               "--verbose")
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.count("Scanned ") == 1, proc.stdout
