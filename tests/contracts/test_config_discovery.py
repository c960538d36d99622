"""Where the configuration is found (as import-linter and ruff look for theirs), pyproject.toml
contracts as import-linter writes them, and a one-line warning for whatever the two faces would
read differently."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contracts.conftest import BASE_CONFIG, REPO, run_cli

VIOLATION = {"pkg/srt/models/m.py": "import os\nfrom pkg.jit_kernel import hicache\n"}
FOUND = "pkg/srt/models/m.py:2:1: removed-module"

# BASE_CONFIG as import-linter's TOML reader takes it.
TOML_CONFIG = """\
[project]
name = "fixture"

[tool.importlinter]
root_packages = ["pkg"]
contract_types = [
    "removed_modules: contracts.RemovedModulesContract",
    "operator_groups: contracts.OperatorGroupsContract",
    "layer: contracts.LayerContract",
]

[[tool.importlinter.contracts]]
id = "removed"
name = "pkg.jit_kernel was removed"
type = "removed_modules"
removed_modules = ["pkg.jit_kernel"]
replacements = [
    "pkg.jit_kernel.hicache -> pkg.kernels.ops.kvcache.hicache",
    "pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm.norm",
    "pkg.jit_kernel.utils -> pkg.kernels.jit",
]

[[tool.importlinter.contracts]]
id = "groups"
name = "operator groups"
type = "operator_groups"
container = "pkg.kernels.ops"
groups = ["kvcache", "layernorm", "gemm"]
shared_modules = ["pkg.kernels.jit"]

[[tool.importlinter.contracts]]
id = "layer"
name = "kernels do not import the runtime"
type = "layer"
layers = ["pkg.srt", "pkg.kernels"]
"""


def lint_imports(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="400")
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports is not installed")
    return subprocess.run([exe, "--no-cache", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def warnings_of(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("namespace-lint: warning:")]


def test_found_upward_from_a_subdirectory_up_to_the_repository_root(tree):
    root = tree(VIOLATION)
    (root / ".git").mkdir()
    proc = run_cli(["--no-cache"], cwd=root / "pkg" / "srt")
    assert proc.returncode == 1, proc.stderr
    # Paths are relative to where the command runs.
    assert "models/m.py:2:1: removed-module" in proc.stdout
    assert (root / ".namespace_lint_cache").is_dir() is False  # --no-cache
    proc = run_cli([], cwd=root / "pkg" / "srt")
    assert (root / ".namespace_lint_cache").is_dir()  # beside the config, not in the subdirectory
    assert not (root / "pkg" / "srt" / ".namespace_lint_cache").exists()


def test_the_search_stops_at_the_repository_root(tree, tmp_path):
    tree(VIOLATION)  # tmp_path/.importlinter: above the repository below
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    proc = run_cli(["--no-cache"], cwd=repo)
    assert proc.returncode == 2
    assert "no configuration found" in proc.stderr and "Traceback" not in proc.stderr


def test_setup_cfg_section_is_read_and_a_setup_cfg_without_one_is_passed_over(tree):
    root = tree(VIOLATION, config=None)
    (root / ".git").mkdir()
    (root / "setup.cfg").write_text("[metadata]\nname = x\n\n" + BASE_CONFIG)
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 1 and FOUND in proc.stdout, proc.stderr
    assert warnings_of(proc) == []
    sub = root / "pkg" / "srt"
    (sub / "setup.cfg").write_text("[metadata]\nname = not-this-one\n")
    proc = run_cli(["--no-cache"], cwd=sub)
    assert proc.returncode == 1 and "models/m.py:2:1: removed-module" in proc.stdout, proc.stderr


def test_pyproject_toml_contracts_as_import_linter_writes_them(tree):
    root = tree(VIOLATION, config=None)
    (root / ".git").mkdir()
    (root / "pyproject.toml").write_text(TOML_CONFIG)
    toml = run_cli(["--no-cache", "--format", "json"], cwd=root)
    (root / "pyproject.toml").unlink()
    (root / ".importlinter").write_text(BASE_CONFIG)
    ini = run_cli(["--no-cache", "--format", "json"], cwd=root)
    assert toml.returncode == ini.returncode == 1, toml.stderr
    assert json.loads(toml.stdout) == json.loads(ini.stdout)
    assert warnings_of(toml) == []


def test_lint_imports_reads_the_same_pyproject_toml(tree):
    root = tree(VIOLATION, config=None)
    (root / "pyproject.toml").write_text(TOML_CONFIG)
    proc = lint_imports(root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert FOUND in proc.stdout
    assert "2 kept, 1 broken" in proc.stdout


def test_config_wins_over_discovery(tree, tmp_path_factory):
    root = tree(VIOLATION)
    other = tmp_path_factory.mktemp("other")
    (other / ".importlinter").write_text(BASE_CONFIG.replace("    pkg.jit_kernel\nreplacements", "    pkg.gone\nreplacements")
                                         .replace("pkg.jit_kernel.", "pkg.gone."))
    proc = run_cli(["--no-cache", "--config", str(other / ".importlinter"), "--src", "."], cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("edit, option", [
    (("root_packages =\n    pkg\n", "root_packages = pkg\n"), "'root_packages'"),
    (("contract_types =\n    removed_modules: contracts.RemovedModulesContract\n"
      "    operator_groups: contracts.OperatorGroupsContract\n    layer: contracts.LayerContract\n",
      "contract_types = removed_modules: contracts.RemovedModulesContract\n"), "'contract_types'"),
    (("removed_modules: contracts.RemovedModulesContract", "removed_modules:contracts.RemovedModulesContract"),
     "'contract_types'"),
    (("name = pkg.jit_kernel was removed", "name = 100% removed"), "'name'"),
])
def test_what_lint_imports_reads_differently_is_one_warning(tree, edit, option):
    config = BASE_CONFIG.replace(*edit)
    if "contract_types = removed" in config:  # only one type registered: only its contract
        config = config.split("[importlinter:contract:groups]")[0]
    assert config != BASE_CONFIG
    root = tree(VIOLATION, config=config)
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 1 and FOUND in proc.stdout, proc.stderr
    (line,) = warnings_of(proc)
    assert ".importlinter, section [" in line and f"option {option}" in line
    # ... and lint-imports does read it differently: it fails on the configuration itself.
    lint = lint_imports(root)
    assert lint.returncode != 0
    assert FOUND not in lint.stdout


def test_two_files_in_one_directory_is_a_warning_naming_the_one_lint_imports_reads(tree):
    root = tree(VIOLATION)
    (root / "setup.cfg").write_text(BASE_CONFIG)
    proc = run_cli(["--no-cache"], cwd=root)
    (line,) = warnings_of(proc)
    assert line.startswith("namespace-lint: warning: .importlinter: setup.cfg also configures import-linter")


def test_import_linter_tolerates_the_layout_options(tree):
    config = BASE_CONFIG.replace("root_packages =\n    pkg\n", "root_packages =\n    pkg\nsource_dir = .\n"
                                 "importer_paths =\n    test\n    scripts/*.py\nexclude =\n    pkg/vendored\n")
    root = tree(VIOLATION, config=config)
    proc = lint_imports(root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert FOUND in proc.stdout and "2 kept, 1 broken" in proc.stdout
