"""`derive-map`: the `replacements` lines derived from compat shims (one tree) or from two versions
of a tree; ambiguous and unmatched modules listed, never guessed; trees never imported."""

from __future__ import annotations

import sys
from textwrap import dedent

import pytest

from contracts import config as config_mod
from contracts.cli import main
from tests.contracts.conftest import write_tree

# Importing any module of these trees would stop the test run: derive-map must only read them.
BOOM = "raise SystemExit('derive-map imported the tree')\n"

BEFORE = {
    "pkg/__init__.py": BOOM,
    "pkg/jit_kernel/__init__.py": BOOM,
    # moved under the same name
    "pkg/jit_kernel/hicache.py": BOOM + "def transfer():\n    pass\n\nclass Pool:\n    pass\n",
    # moved under `_jit_<name>`, one definition dropped on the way (3 of 4 still confirm it)
    "pkg/jit_kernel/norm.py": BOOM + "def rms(): pass\ndef rms_ref(): pass\ndef fused(): pass\ndef old(): pass\n",
    # deleted
    "pkg/jit_kernel/gone.py": BOOM + "def g(): pass\n",
    # copied to two places
    "pkg/jit_kernel/dup.py": BOOM + "def d(): pass\n",
    # a module of the same name exists, but holds other code
    "pkg/jit_kernel/utils.py": BOOM + "def helper(): pass\n",
    # renamed: its definitions went to a module of another name
    "pkg/jit_kernel/sconv.py": BOOM + "def conv(): pass\ndef conv_ref(): pass\n",
    # a package moved whole: one line for it, none for its modules (`quant` defines no function:
    # its assigned names confirm it)
    "pkg/jit_kernel/dsa/__init__.py": BOOM + "from pkg.jit_kernel.dsa.index import topk\n",
    "pkg/jit_kernel/dsa/index.py": BOOM + "def topk(): pass\n",
    "pkg/jit_kernel/dsa/quant.py": BOOM + "QUANT_BLOCK = 128\n",
}
AFTER = {
    "pkg/__init__.py": BOOM,
    "pkg/kernels/__init__.py": BOOM,
    "pkg/kernels/ops/__init__.py": BOOM,
    "pkg/kernels/ops/kvcache/__init__.py": BOOM,
    "pkg/kernels/ops/kvcache/hicache.py": BOOM + "def transfer(): pass\nclass Pool: pass\ndef new(): pass\n",
    "pkg/kernels/ops/layernorm/__init__.py": BOOM,
    "pkg/kernels/ops/layernorm/_jit_norm.py": BOOM + "def rms(): pass\ndef rms_ref(): pass\ndef fused(): pass\n",
    "pkg/kernels/ops/gemm/__init__.py": BOOM,
    "pkg/kernels/ops/gemm/dup.py": BOOM + "def d(): pass\n",
    "pkg/kernels/ops/moe/__init__.py": BOOM,
    "pkg/kernels/ops/moe/dup.py": BOOM + "def d(): pass\n",
    "pkg/kernels/ops/mamba/__init__.py": BOOM,
    "pkg/kernels/ops/mamba/short_conv.py": BOOM + "def conv(): pass\ndef conv_ref(): pass\n",
    "pkg/srt/utils.py": BOOM + "def unrelated(): pass\n",
    "pkg/kernels/ops/attention/__init__.py": BOOM,
    "pkg/kernels/ops/attention/dsa/__init__.py": BOOM + "from .index import topk\n",
    "pkg/kernels/ops/attention/dsa/index.py": BOOM + "def topk(): pass\n",
    "pkg/kernels/ops/attention/dsa/quant.py": BOOM + "QUANT_BLOCK = 128\n",
}


@pytest.fixture
def trees(tmp_path):
    write_tree(tmp_path / "before", BEFORE, config=None)
    write_tree(tmp_path / "after", AFTER, config=None)
    return tmp_path


def derive(capsys, *args) -> tuple[int, str, str]:
    code = main(["derive-map", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_maps_moved_modules_and_lists_the_rest_when_given_two_trees(trees, capsys):
    code, out, err = derive(capsys, "--before", str(trees / "before"), "--after", str(trees / "after"),
                            "--removed", "pkg.jit_kernel")
    header = f"# derive-map --before {trees / 'before'} --after {trees / 'after'} --removed pkg.jit_kernel: "
    assert out == header + dedent("""\
        6 of 10 modules mapped (4 lines), 3 unmatched, 1 ambiguous; 1 names its lines do not cover
        replacements =
            pkg.jit_kernel.dsa -> pkg.kernels.ops.attention.dsa
            pkg.jit_kernel.hicache -> pkg.kernels.ops.kvcache.hicache
            pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm._jit_norm
            pkg.jit_kernel.sconv -> pkg.kernels.ops.mamba.short_conv
        # unmatched: pkg.jit_kernel: no module named `jit_kernel` (or a folded name) in the after tree, and where its submodules went does not confirm one
        # unmatched: pkg.jit_kernel.gone: none of its 1 definitions is defined, with the same body, by a module of the after tree
        # unmatched: pkg.jit_kernel.utils: no module holds at least 50% of its code; best: `pkg.srt.utils` (same name, 0%)
        # ambiguous: pkg.jit_kernel.dup -> pkg.kernels.ops.gemm.dup (100%) | pkg.kernels.ops.moe.dup (100%)
        # names of pkg.jit_kernel.norm its line does not cover: `old` (no module of the after tree defines `old`)
    """)
    assert code == 1
    assert err.endswith("6 of 10 modules mapped (4 lines), 3 unmatched, 1 ambiguous; 1 names its lines do not cover.\n")
    assert "pkg" not in sys.modules or not hasattr(sys.modules["pkg"], "jit_kernel")


def test_is_complete_when_every_module_moved(tmp_path, capsys):
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "from .a import f\n",
                                "pkg/old/a.py": "def f(): pass\n"}, config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/new/__init__.py": "",
                                "pkg/new/old/__init__.py": "", "pkg/new/old/a.py": "def f(): pass\n"}, config=None)
    code, out, _ = derive(capsys, "--before", str(tmp_path / "b"), "--after", str(tmp_path / "a"), "--removed", "pkg.old")
    # The new package no longer re-exports `f`: its name gets a line of its own.
    assert out.splitlines()[1:] == ["replacements =", "    pkg.old -> pkg.new.old", "    pkg.old:f -> pkg.new.old.a:f"]
    assert code == 0


def test_package_line_is_withheld_when_it_would_send_a_submodule_that_did_not_follow_nowhere(tmp_path, capsys):
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "",
                                "pkg/old/a.py": "def f(): pass\n", "pkg/old/b.py": "def g(): pass\n",
                                "pkg/old/c.py": "def h(): pass\n"}, config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/new/__init__.py": "", "pkg/new/old/__init__.py": "",
                                "pkg/new/old/a.py": "def f(): pass\n", "pkg/new/old/b.py": "def g(): pass\n"},
               config=None)
    code, out, _ = derive(capsys, "--before", str(tmp_path / "b"), "--after", str(tmp_path / "a"), "--removed", "pkg.old")
    # `pkg.old -> pkg.new.old` would send `pkg.old.c` to `pkg.new.old.c`, which does not exist.
    assert out.splitlines()[1:] == [
        "replacements =",
        "    pkg.old.a -> pkg.new.old.a",
        "    pkg.old.b -> pkg.new.old.b",
        "# withheld: pkg.old -> pkg.new.old: as a prefix it would send `pkg.old.c` (not matched: unmatched) to "
        "`pkg.new.old.c`, which does not exist; its names are mapped one by one",
        "# unmatched: pkg.old.c: none of its 1 definitions is defined, with the same body, by a module of the after tree",
    ]
    assert code == 1


def test_output_pastes_into_a_valid_contract(trees, capsys, tmp_path):
    _, out, _ = derive(capsys, "--before", str(trees / "before"), "--after", str(trees / "after"),
                       "--removed", "pkg.jit_kernel")
    block = "\n".join(line for line in out.splitlines() if not line.startswith("# derive-map"))
    path = tmp_path / "derived.importlinter"
    path.write_text("[importlinter]\nroot_packages =\n    pkg\ncontract_types =\n"
                    "    removed_modules: contracts.RemovedModulesContract\n\n"
                    "[importlinter:contract:removed]\nname = removed\ntype = removed_modules\n"
                    "removed_modules =\n    pkg.jit_kernel\n" + block + "\n")
    [spec] = config_mod.load(str(path)).removed
    assert spec.replacement_for("pkg.jit_kernel.dsa.index") == "pkg.kernels.ops.attention.dsa.index"
    assert spec.replacement_for("pkg.jit_kernel.norm") == "pkg.kernels.ops.layernorm._jit_norm"
    assert spec.replacement_for("pkg.jit_kernel.dup") is None


SHIM_TREE = {
    "pkg/__init__.py": BOOM,
    "pkg/kernels/__init__.py": BOOM,
    "pkg/kernels/ops/__init__.py": BOOM,
    "pkg/kernels/ops/kvcache/__init__.py": BOOM,
    "pkg/kernels/ops/kvcache/hicache.py": BOOM + "def transfer(): pass\n",
    "pkg/kernels/ops/layernorm/__init__.py": BOOM,
    "pkg/kernels/ops/layernorm/norm.py": BOOM + "def rms(): pass\n",
    "pkg/jit_kernel/__init__.py": "",
    # star re-export
    "pkg/jit_kernel/hicache.py": '"""Moved."""\nfrom pkg.kernels.ops.kvcache.hicache import *  # noqa\n',
    # explicit re-exports, relative, with __all__ and a deprecation warning
    "pkg/jit_kernel/norm.py": (
        "from __future__ import annotations\nimport warnings\n"
        "from ..kernels.ops.layernorm.norm import (\n    rms,\n    rms as rmsnorm,\n)\n"
        "__all__ = ['rms', 'rmsnorm']\nwarnings.warn('moved', DeprecationWarning, stacklevel=2)\n"),
    # a shim of a shim
    "pkg/jit_kernel/legacy_norm.py": "from pkg.jit_kernel.norm import *\n",
    # not moved yet
    "pkg/jit_kernel/gemm.py": "from pkg.kernels.jit import load\n\ndef gemm():\n    return load()\n",
    # re-exports from two places
    "pkg/jit_kernel/mixed.py": "from pkg.kernels.ops.kvcache.hicache import transfer\nfrom pkg.kernels.ops.layernorm.norm import rms\n",
}


def test_maps_each_shim_and_warns_about_code_when_given_one_tree(tmp_path, capsys):
    root = write_tree(tmp_path, SHIM_TREE, config=None)
    code, out, err = derive(capsys, "--src", str(root), "--removed", "pkg.jit_kernel")
    assert out.splitlines()[1:] == [
        "replacements =",
        "    pkg.jit_kernel.hicache -> pkg.kernels.ops.kvcache.hicache",
        "    pkg.jit_kernel.legacy_norm -> pkg.kernels.ops.layernorm.norm",
        "    pkg.jit_kernel.norm -> pkg.kernels.ops.layernorm.norm",
        "# unmatched: pkg.jit_kernel.gemm: still holds code (line 3: FunctionDef `gemm`); not a shim",
        "# ambiguous: pkg.jit_kernel.mixed -> pkg.kernels.ops.kvcache.hicache | pkg.kernels.ops.layernorm.norm",
    ]
    assert ("namespace-lint derive-map: warning: `pkg.jit_kernel.gemm` (pkg/jit_kernel/gemm.py) still holds "
            "code (line 3: FunctionDef `gemm`): it has not moved yet\n") in err
    assert code == 1


def test_src_defaults_to_the_current_directory(tmp_path, capsys, monkeypatch):
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/jit_kernel/__init__.py": "",
                                 "pkg/jit_kernel/a.py": "from pkg.new.a import *\n", "pkg/new/__init__.py": "",
                                 "pkg/new/a.py": "def f(): pass\n"}, config=None)
    monkeypatch.chdir(root)
    code, out, _ = derive(capsys, "--removed", "pkg.jit_kernel")
    assert out.splitlines()[1:] == ["replacements =", "    pkg.jit_kernel.a -> pkg.new.a"]
    assert code == 0


@pytest.mark.parametrize("args, message", [
    (["--removed", "pkg.jit_kernel", "--src", "{tmp}/missing"], "--src {tmp}/missing: no such directory"),
    (["--removed", "pkg..x", "--src", "{tmp}"], "--removed pkg..x: not a dotted module name"),
    (["--removed", "pkg.nothere", "--src", "{tmp}"], "--removed pkg.nothere: no package or module pkg.nothere under --src"),
    (["--removed", "pkg.jit_kernel", "--before", "{tmp}"], "--before and --after go together"),
    (["--removed", "pkg.jit_kernel", "--before", "{tmp}", "--after", "{tmp}/missing"], "--after {tmp}/missing: no such directory"),
    (["--removed", "pkg.jit_kernel", "--before", "{tmp}", "--after", "{tmp}", "--src", "{tmp}"], "--src is for one tree"),
    (["--removed", "pkg.jit_kernel", "--before", "{tmp}", "--after", "{tmp}/empty"], "does not contain the root package 'pkg'"),
])
def test_is_a_usage_error_when_arguments_are_wrong(tmp_path, capsys, args, message):
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/jit_kernel/__init__.py": "", "empty/x.txt": ""}, config=None)
    code, out, err = derive(capsys, *[a.format(tmp=tmp_path) for a in args])
    assert code == 2
    assert out == ""
    assert err.startswith("namespace-lint derive-map: error: ") and message.format(tmp=tmp_path) in err
    assert err.count("\n") == 1


def test_is_a_usage_error_when_removed_is_missing(capsys):
    with pytest.raises(SystemExit) as e:
        main(["derive-map", "--src", "."])
    assert e.value.code == 2
    assert "the following arguments are required: --removed" in capsys.readouterr().err
