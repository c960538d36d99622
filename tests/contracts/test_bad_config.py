"""Bad configuration: one line naming the file, the section and the option, and exit 2.

Through the CLI every case is checked in full (`namespace-lint: error: FILE, section [S],
option 'O': reason`). Through `lint-imports`, import-linter's own report format is used; what
is checked there is that the reason reaches the user and that no traceback does.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts import config as config_mod
from contracts.cli import EXIT_USAGE, main
from contracts.errors import NamespaceLintError
from tests.contracts.conftest import BASE_CONFIG, CLEAN_TREE, REPO, run_cli, write_tree

MAIN = "[importlinter]"
REMOVED = "[importlinter:contract:removed]"
GROUPS = "[importlinter:contract:groups]"
LAYER = "[importlinter:contract:layer]"


def edit(old: str, new: str):
    def apply(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return apply


# id -> (edit of BASE_CONFIG, section, option, reason); section/option None where there is none.
BAD_CONFIGS = {
    "unknown_session_option": (  # a typo there would leave files unchecked, silently
        edit("[importlinter]\n", "[importlinter]\nimporter_path = tests\n"), MAIN, "importer_path",
        "unrecognized option"),
    "unknown_contract_type": (
        edit("type = layer\n", "type = layered\n"), LAYER, "type", "unknown contract type 'layered'"),
    "replacement_without_arrow": (
        edit("pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm.norm", "pkg.jit_kernel.norm pkg.kernels.x"),
        REMOVED, "replacements", "line 'pkg.jit_kernel.norm pkg.kernels.x' has no '->'"),
    "replacement_with_two_arrows": (
        edit("pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm.norm", "pkg.jit_kernel.norm -> a -> b"),
        REMOVED, "replacements", "must be exactly 'old.module -> new.module'"),
    "replacement_target_under_a_removed_prefix": (
        edit("pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm.norm", "pkg.jit_kernel.norm -> pkg.jit_kernel.norm2"),
        REMOVED, "replacements",
        "target 'pkg.jit_kernel.norm2' of 'pkg.jit_kernel.norm' is itself under the removed prefix 'pkg.jit_kernel'"),
    "replacement_source_not_under_a_removed_prefix": (
        edit("pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm.norm", "pkg.other.norm -> pkg.kernels.x"),
        REMOVED, "replacements", "'pkg.other.norm' is not under a removed prefix (pkg.jit_kernel)"),
    "replacements_forming_a_cycle": (
        lambda text: text.replace("removed_modules =\n    pkg.jit_kernel\n",
                                  "removed_modules =\n    pkg.jit_kernel\n    pkg.old\n").replace(
            "pkg.jit_kernel.utils -> pkg.kernels.jit",
            "pkg.jit_kernel.utils -> pkg.old.utils\n    pkg.old.utils -> pkg.jit_kernel.utils"),
        REMOVED, "replacements", "replacements form a cycle: pkg.jit_kernel.utils -> pkg.old.utils -> pkg.jit_kernel.utils"),
    "replacement_given_twice": (
        edit("pkg.jit_kernel.utils -> pkg.kernels.jit",
             "pkg.jit_kernel.utils -> pkg.kernels.jit\n    pkg.jit_kernel.utils -> pkg.kernels.jit2"),
        REMOVED, "replacements", "'pkg.jit_kernel.utils' has two replacements"),
    "removed_module_not_a_module_name": (
        edit("removed_modules =\n    pkg.jit_kernel\n", "removed_modules =\n    pkg/jit_kernel\n"),
        REMOVED, "removed_modules", "'pkg/jit_kernel' is not a dotted module name"),
    "group_declared_twice": (
        edit("    gemm\nshared_modules", "    gemm\n    kvcache\nshared_modules"),
        GROUPS, "groups", "group 'kvcache' is declared twice"),
    "group_not_an_identifier": (
        edit("    gemm\nshared_modules", "    gemm.fp8\nshared_modules"),
        GROUPS, "groups", "'gemm.fp8' is not a group name"),
    "allowed_import_without_arrow": (
        edit("shared_modules =\n    pkg.kernels.jit\n",
             "shared_modules =\n    pkg.kernels.jit\nallowed_imports =\n    pkg.kernels.ops.gemm pkg.kernels.ops.kvcache\n"),
        GROUPS, "allowed_imports", "has no '->'"),
    "container_not_a_package": (
        edit("container = pkg.kernels.ops", "container = pkg.kernels.nowhere"),
        GROUPS, "container", "'pkg.kernels.nowhere' is not a package under"),
    "container_a_module_file": (
        edit("container = pkg.kernels.ops", "container = pkg.kernels.ops.gemm.fused_a_gemm"),
        GROUPS, "container", "'pkg.kernels.ops.gemm.fused_a_gemm' is not a package under"),
    "a_single_layer": (
        edit("layers =\n    pkg.srt\n    pkg.kernels\n", "layers =\n    pkg.srt\n"),
        LAYER, "layers", "name at least two layers"),
    "overlapping_layers": (
        edit("    pkg.kernels\n", "    pkg.srt.layers\n"),
        LAYER, "layers", "layers 'pkg.srt' and 'pkg.srt.layers' overlap"),
    "unknown_option": (
        edit("type = layer\n", "type = layer\nlayer =\n    pkg.srt\n"),
        LAYER, "layer", "unrecognized option for a 'layer' contract"),
    "no_root_packages": (
        edit("root_packages =\n    pkg\n", ""), MAIN, "root_packages", "name the package(s) to check"),
    "malformed_contract_types_line": (
        edit("    layer: contracts.LayerContract\n", "    layer contracts.LayerContract\n"),
        MAIN, "contract_types", "line 'layer contracts.LayerContract' must be 'name: module.Class'"),
    "contract_without_type": (
        edit("type = layer\n", ""), LAYER, "type", "every contract needs a single 'type'"),
    "no_contract_of_this_tools_types": (
        lambda text: text.split("[importlinter:contract:removed]")[0], MAIN, "contract_types",
        "no contract of this tool's types"),
    "duplicate_section": (
        lambda text: text + "\n[importlinter:contract:layer]\ntype = layer\n", None, None,
        "section 'importlinter:contract:layer' already exists"),
    "not_ini_at_all": (lambda text: "just some words\n", None, None, "cannot be read as INI"),
    "not_utf8": (lambda text: text.replace("name = kernels", "name = k\udcffernels"), None, None,
                 "cannot be read as INI"),
    "no_importlinter_section": (
        lambda text: text.replace("[importlinter]\n", "[other]\n"), None, None, "has no [importlinter] section"),
}


def _write_config(root: Path, text: str) -> None:
    (root / ".importlinter").write_bytes(text.encode("utf-8", "surrogateescape"))


def cli_error(root: Path, *args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--no-cache", "--config", str(root / ".importlinter"), "--src", str(root), *args])
    assert code == EXIT_USAGE, (out.getvalue(), err.getvalue())
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("namespace-lint: error: ")
    return lines[0]


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_is_invalid_when_the_config_is_bad(tmp_path, case):
    change, section, option, reason = BAD_CONFIGS[case]
    root = write_tree(tmp_path, CLEAN_TREE, config=None)
    _write_config(root, change(BASE_CONFIG))
    line = cli_error(root)
    assert str(root / ".importlinter") in line or ".importlinter:" in line
    if section:
        assert f"section {section}" in line
    if option:
        assert f"option '{option}'" in line
    assert reason in line


def test_is_invalid_when_the_config_file_is_missing(tmp_path):
    root = write_tree(tmp_path, CLEAN_TREE, config=None)
    line = cli_error(root)
    assert f"{root / '.importlinter'}: no such file" in line


def test_is_invalid_when_src_does_not_contain_the_root_package(tmp_path):
    root = write_tree(tmp_path / "tree", CLEAN_TREE)
    (tmp_path / "other").mkdir()
    line = cli_error(root, "--src", str(tmp_path / "other"))
    assert f"--src {tmp_path / 'other'}: does not contain the root package 'pkg'" in line
    assert f"{root / '.importlinter'}, section {MAIN}, option 'root_packages'" in line


def test_a_bad_config_never_prints_a_traceback_in_a_subprocess(tmp_path):
    root = write_tree(tmp_path, CLEAN_TREE, config=None)
    for case in ("replacements_forming_a_cycle", "not_utf8", "container_not_a_package"):
        _write_config(root, BAD_CONFIGS[case][0](BASE_CONFIG))
        proc = run_cli(["--no-cache"], cwd=root)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.splitlines()) == 1


# --------------------------------------------------------------------------- through lint-imports

def lint_imports(root: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports is not installed")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(root)]), COLUMNS="400")
    return subprocess.run([exe, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


LINT_IMPORTS_CASES = [
    "unknown_contract_type", "replacement_without_arrow", "replacement_target_under_a_removed_prefix",
    "replacements_forming_a_cycle", "group_declared_twice", "container_not_a_package",
]


@pytest.mark.parametrize("case", LINT_IMPORTS_CASES)
def test_lint_imports_reports_a_bad_config_without_a_traceback(tmp_path, case):
    change, section, option, reason = BAD_CONFIGS[case]
    root = write_tree(tmp_path, CLEAN_TREE, config=None)
    _write_config(root, change(BASE_CONFIG))
    proc = lint_imports(root)
    output = " ".join((proc.stdout + proc.stderr).split())  # undo rich's line wrapping
    assert proc.returncode != 0
    assert "Traceback" not in output, output
    if case == "unknown_contract_type":
        assert "layered" in output  # import-linter's own (terse) report of an unknown type
    else:
        assert " ".join(reason.split()) in output
        assert f"{option}" in output
    if case == "container_not_a_package":  # raised by our code, so our format: section included
        assert f"section {GROUPS}, option 'container'" in output


# --------------------------------------------------------------------------- fuzzed configs


@st.composite
def mangled_config(draw) -> bytes:
    """BASE_CONFIG with lines dropped, duplicated or moved, and bytes spliced in."""
    lines = BASE_CONFIG.encode().splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "move", "splice", "arrow", "indent"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "move":
            lines.insert(draw(st.integers(0, len(lines))), lines.pop(i))
        elif op == "splice":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(st.binary(max_size=6)) + lines[i][at:]
        elif op == "arrow":
            lines[i] = lines[i].replace(b"->", draw(st.sampled_from([b"", b"->->", b"=>", b"-> pkg.jit_kernel.x ->"])))
        else:
            lines[i] = lines[i].lstrip() if lines[i].startswith(b" ") else b"    " + lines[i]
        if not lines:
            break
    return b"".join(lines)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=mangled_config())
def test_any_config_loads_or_fails_with_one_line(tmp_path, text):
    """No config makes the loader crash: it loads, or it fails with a one-line user error."""
    path = tmp_path / ".importlinter"
    path.write_bytes(text)
    try:
        config_mod.load(str(path))
    except NamespaceLintError as e:
        assert len(str(e).splitlines()) == 1, str(e)


# --------------------------------------------------------------------------- a tree older than the config


def test_a_container_this_tree_lacks_stops_only_the_contract_that_names_it(tmp_path):
    """An older checkout has no `kernels/ops` yet: `--contract` the others and they run (the
    container is checked for the contracts that are checked)."""
    root = write_tree(tmp_path, CLEAN_TREE, config=None)
    _write_config(root, BAD_CONFIGS["container_not_a_package"][0](BASE_CONFIG))
    proc = run_cli(["--no-cache", "--contract", "removed", "--contract", "layer"], cwd=root)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    proc = run_cli(["--no-cache", "--contract", "groups"], cwd=root)
    assert proc.returncode == 2 and "'pkg.kernels.nowhere' is not a package under" in proc.stderr


def test_lint_imports_breaks_only_the_contract_whose_container_is_missing(tmp_path):
    root = write_tree(tmp_path, CLEAN_TREE, config=None)
    _write_config(root, BAD_CONFIGS["container_not_a_package"][0](BASE_CONFIG))
    proc = lint_imports(root)
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1 and "Traceback" not in output, output
    assert "Contracts: 2 kept, 1 broken." in output, output
    assert f"section {GROUPS}, option 'container'" in output


def test_import_linters_own_session_options_are_accepted(tmp_path):
    root = write_tree(tmp_path, CLEAN_TREE, config=None)
    _write_config(root, BASE_CONFIG.replace("[importlinter]\n", "[importlinter]\ninclude_external_packages = True\n"
                                            "exclude_type_checking_imports = True\nshow_timings = False\n", 1))
    assert config_mod.load(str(root / ".importlinter")).root_packages == ("pkg",)


def test_an_unknown_session_option_is_named_in_pyproject(tmp_path):
    root = write_tree(tmp_path, CLEAN_TREE, config=None)
    (root / "pyproject.toml").write_text('[tool.importlinter]\nroot_packages = ["pkg"]\nimporter_path = ["tests"]\n'
                                         'contract_types = ["layer: contracts.LayerContract"]\n')
    with pytest.raises(NamespaceLintError, match="option 'importer_path': unrecognized option"):
        config_mod.load(str(root / "pyproject.toml"))
