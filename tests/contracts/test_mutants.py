"""Tests that kill the mutants mutation testing of the core functions left alive (issue 13,
finding 6): each pins a behaviour no other test did."""

from __future__ import annotations

import pytest

from contracts.engine.resolve import is_under
from contracts.prefixes import PrefixIndex
from tests.contracts.conftest import BASE_CONFIG, run_json


def _found(report, path=None):
    return [(f["path"], f["line"], f["rule"], f["imported"], f["replacement"]) for f in report["findings"]
            if path is None or f["path"] == path]


@pytest.mark.parametrize("module, prefix, under", [
    ("pkg.srt", "pkg.srt", True), ("pkg.srt.x", "pkg.srt", True),
    ("pkg.srtx", "pkg.srt", False), ("pkg.srt_extra.x", "pkg.srt", False), ("pkg", "pkg.srt", False),
])
def test_a_prefix_is_a_dotted_name_not_a_string_prefix(module, prefix, under):
    assert is_under(module, prefix) is under
    assert (PrefixIndex([prefix]).longest_of(module) == prefix) is under


def test_a_chain_through_a_sibling_whose_name_extends_a_groups_is_still_a_violation(tree):
    # `pkg.kernels.ops.kvcache_extra` is no part of group `kvcache` (nor `pkg.kernels.jit`):
    # a string-prefix matcher would take gemm -> kvcache_extra -> kvcache for kvcache's own code.
    config = BASE_CONFIG.replace("    gemm\n", "    gemm\n    kvcache_extra\n")
    code, report = run_json(tree({
        "pkg/kernels/ops/kvcache_extra/__init__.py": "from pkg.kernels.ops.kvcache import hicache\n",
        "pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels.ops import kvcache_extra\n",
    }, config=config))
    rules = {(f[0], f[2]) for f in _found(report)}
    assert ("pkg/kernels/ops/kvcache_extra/__init__.py", "group-boundary") in rules
    assert ("pkg/kernels/ops/gemm/fused_a_gemm.py", "group-boundary") in rules


def test_the_longest_replacement_prefix_wins(tree):
    config = BASE_CONFIG.replace("    pkg.jit_kernel.utils -> pkg.kernels.jit\n",
                                 "    pkg.jit_kernel.utils -> pkg.kernels.jit\n    pkg.jit_kernel -> pkg.kernels\n")
    code, report = run_json(tree({"pkg/srt/a.py": "import pkg.jit_kernel.hicache\nimport pkg.jit_kernel.other\n"},
                                 config=config))
    assert [(f[1], f[4]) for f in _found(report, "pkg/srt/a.py")] == [
        (1, "pkg.kernels.ops.kvcache.hicache"), (2, "pkg.kernels.other")]


def test_references_inside_the_removed_package_are_shims_not_removed_module_findings(tree):
    code, report = run_json(tree({"pkg/jit_kernel/__init__.py": "",
                                  "pkg/jit_kernel/inner.py": "from pkg.jit_kernel import hicache\n"}))
    assert sorted((f[0], f[2]) for f in _found(report)) == [
        ("pkg/jit_kernel/__init__.py", "shim-present"), ("pkg/jit_kernel/inner.py", "shim-present")]


def test_the_message_of_a_dunder_import_names_it_a_dynamic_import(tree):
    code, report = run_json(tree({"pkg/srt/a.py": 'x = __import__("pkg.jit_kernel.hicache")\n'}))
    [f] = report["findings"]
    assert (f["line"], f["col"]) == (1, 16)
    assert f["message"].startswith("`pkg.jit_kernel.hicache` was removed (dynamic import target;")


def test_an_f_string_that_is_exactly_an_import_path_is_a_target(tree):
    code, report = run_json(tree({"pkg/srt/b.py": 'y = f"pkg.jit_kernel.hicache"\nz = f"pkg.jit_kernel.{y}"\n'}))
    assert [(f[1], f[2], f[3]) for f in _found(report)] == [(1, "removed-module", "pkg.jit_kernel.hicache")]


def test_import_module_with_two_dots_resolves_against_its_package(tree):
    code, report = run_json(tree({"pkg/srt/sub/c.py": (
        "import importlib\n"
        "m = importlib.import_module('..jit_kernel.hicache', 'pkg.srt')\n"  # pkg.jit_kernel.hicache
        "n = importlib.import_module('..jit_kernel.norm', package='pkg.srt.sub')\n")}))  # pkg.srt.jit_kernel.norm
    assert [(f[1], f[3]) for f in _found(report)] == [(2, "pkg.jit_kernel.hicache")]


def test_a_file_that_does_not_survive_its_decoding_is_not_rewritten(tree, capsys):
    # UTF-7 has several spellings of one text: re-encoding would rewrite bytes beyond the import.
    from contracts.cli import main

    root = tree({})
    data = b"# coding: utf-7\nfrom pkg.jit_kernel.hicache import a\ns = '+AOk-'\n"
    (root / "pkg/srt/d.py").write_bytes(data)
    assert main(["--config", str(root / ".importlinter"), "--no-cache", "--fix"]) == 1
    assert (root / "pkg/srt/d.py").read_bytes() == data
    assert "does not survive decoding as utf-7" in capsys.readouterr().out
