"""The GitHub Action (`action.yml`, a composite action) and the worked workflow
(`examples/github-workflow.yml`): both parse and say what the README says they do, and the
action's script (`scripts/action.sh`) runs on a temporary git repository with the linter already
on PATH (`NAMESPACE_LINT_INSTALL=0`: no network), as the action's step would after installing it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.contracts.conftest import CLEAN_TREE, REPO, write_tree

yaml = pytest.importorskip("yaml")


def test_the_action_is_composite_caches_and_runs_the_script():
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert {"args", "sarif-file"} <= set(action["inputs"])
    steps = action["runs"]["steps"]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert ".namespace_lint_cache" in cache["with"]["path"]
    check = next(s for s in steps if s.get("id") == "check")
    assert "scripts/action.sh" in check["run"] and (REPO / "scripts/action.sh").is_file()
    assert check["env"]["NAMESPACE_LINT_ARGS"] == "${{ inputs.args }}"


def test_the_worked_workflow_runs_on_pull_requests_and_uploads_sarif():
    workflow = yaml.safe_load((REPO / "examples/github-workflow.yml").read_text())
    on = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads `on:` as true
    assert "pull_request" in on
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["namespace-lint"]["steps"]
    lint = next(s for s in steps if s.get("id") == "lint")
    assert "args" in lint["with"]
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["sarif_file"] == "${{ steps.lint.outputs.sarif-file }}"


@pytest.fixture
def action(tmp_path):
    if shutil.which("git") is None or shutil.which("bash") is None:
        pytest.skip("git and bash are needed")

    def run(files: dict[str, str], args: str = "") -> tuple[subprocess.CompletedProcess, str]:
        root = write_tree(tmp_path / "repo", files)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        output = tmp_path / "github-output"
        output.write_text("")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env.update(PATH=f"{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}",
                   NAMESPACE_LINT_INSTALL="0", NAMESPACE_LINT_ARGS=args, GITHUB_OUTPUT=str(output))
        proc = subprocess.run(["bash", str(REPO / "scripts/action.sh")], cwd=root, env=env, capture_output=True,
                              text=True, timeout=300)
        return proc, output.read_text()

    return run


def test_the_script_annotates_findings_writes_sarif_and_fails(action, tmp_path):
    proc, output = action({**CLEAN_TREE, "pkg/srt/a.py": "from pkg.jit_kernel import hicache\n"})
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("::error file=pkg/srt/a.py,line=1,col=1,title=removed-module::")
    assert output == "sarif-file=namespace-lint.sarif\n"
    sarif = json.loads((tmp_path / "repo/namespace-lint.sarif").read_text())
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "removed-module"
    assert (tmp_path / "repo/.namespace_lint_cache").is_dir()  # what the action's cache step keeps


def test_the_script_passes_a_clean_tree_and_passes_args_on(action, tmp_path):
    proc, _ = action(CLEAN_TREE, args="--contract removed")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "repo/namespace-lint.sarif").read_text())["runs"][0]["results"] == []


def test_a_configuration_error_is_exit_2_with_its_one_line(action):
    proc, output = action(CLEAN_TREE, args="--contract nosuch")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("namespace-lint: error: --contract nosuch")
    assert output == ""
