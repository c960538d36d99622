"""Each rule fires on its own violation, at the right place, and only there."""

from __future__ import annotations

from tests.contracts.conftest import BASE_CONFIG, run_json


def _rules(data, rule):
    return [(f["path"], f["line"], f["importer"], f["imported"]) for f in data["findings"] if f["rule"] == rule]


def test_is_kept_when_tree_is_clean(tree):
    code, data = run_json(tree())
    assert (code, data["findings"]) == (0, [])
    assert data["files_scanned"] == 12  # every file of CLEAN_TREE


def test_shim_present_when_removed_package_exists_again(tree):
    root = tree({"pkg/jit_kernel/__init__.py": "",
                 "pkg/jit_kernel/hicache.py": "from pkg.kernels.ops.kvcache.hicache import *\n"})
    code, data = run_json(root)
    assert code == 1
    assert _rules(data, "shim-present") == [
        ("pkg/jit_kernel/__init__.py", 1, "pkg.jit_kernel", "pkg.jit_kernel"),
        ("pkg/jit_kernel/hicache.py", 1, "pkg.jit_kernel.hicache", "pkg.jit_kernel.hicache"),
    ]
    # The shim's own imports are not reported again as removed-module findings.
    assert _rules(data, "removed-module") == []


def test_shim_present_when_removed_module_file_exists(tree):
    root = tree({"pkg/jit_kernel.py": "x = 1\n"})
    _, data = run_json(root)
    assert _rules(data, "shim-present") == [("pkg/jit_kernel.py", 1, "pkg.jit_kernel", "pkg.jit_kernel")]


def test_group_boundary_when_group_imports_another_directly(tree):
    root = tree({"pkg/kernels/ops/gemm/fused_a_gemm.py": "\nfrom pkg.kernels.ops.layernorm.norm import rmsnorm\n"})
    code, data = run_json(root)
    assert code == 1
    assert _rules(data, "group-boundary") == [
        ("pkg/kernels/ops/gemm/fused_a_gemm.py", 2, "pkg.kernels.ops.gemm.fused_a_gemm",
         "pkg.kernels.ops.layernorm.norm")]


def test_group_boundary_shows_the_chain_when_indirect(tree):
    root = tree({
        "pkg/helpers.py": "from pkg.kernels.ops.kvcache.hicache import transfer\n",
        "pkg/kernels/ops/gemm/fused_a_gemm.py": "import pkg.helpers\n",
    })
    _, data = run_json(root)
    [finding] = [f for f in data["findings"] if f["rule"] == "group-boundary"]
    assert (finding["path"], finding["line"], finding["imported"]) == (
        "pkg/kernels/ops/gemm/fused_a_gemm.py", 1, "pkg.kernels.ops.kvcache.hicache")
    assert ("`pkg.kernels.ops.gemm.fused_a_gemm` -> `pkg.helpers` -> `pkg.kernels.ops.kvcache.hicache`"
            in finding["message"])


def test_group_boundary_is_kept_through_shared_modules(tree):
    root = tree({
        "pkg/kernels/jit/__init__.py": "from pkg.kernels.ops.kvcache.hicache import transfer\n",
        "pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels.jit import use_triton\n",
    })
    _, data = run_json(root)
    assert _rules(data, "group-boundary") == []


def test_allowed_imports_line_permits_and_unused_line_is_reported(tree):
    config = BASE_CONFIG.replace(
        "shared_modules =\n    pkg.kernels.jit\n",
        "shared_modules =\n    pkg.kernels.jit\nallowed_imports =\n"
        "    pkg.kernels.ops.gemm -> pkg.kernels.ops.layernorm\n"
        "    pkg.kernels.ops.gemm -> pkg.kernels.ops.kvcache\n")
    root = tree({"pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels.ops.layernorm.norm import rmsnorm\n"},
                config=config)
    code, data = run_json(root)
    assert _rules(data, "group-boundary") == []
    unused = [f for f in data["findings"] if f["rule"] == "unused-allowed-import"]
    line = config.splitlines().index("    pkg.kernels.ops.gemm -> pkg.kernels.ops.kvcache") + 1
    assert [(f["path"], f["line"], f["importer"], f["imported"]) for f in unused] == [
        (".importlinter", line, "pkg.kernels.ops.gemm", "pkg.kernels.ops.kvcache")]
    assert code == 1


def test_layer_when_kernels_import_the_runtime_in_a_namespace_package(tree):
    root = tree({"pkg/srt/utils.py": "X = 1\n",
                 "pkg/kernels/ops/kvcache/hicache.py": "def f():\n    from pkg.srt.utils import X\n"})
    _, data = run_json(root)
    assert _rules(data, "layer") == [
        ("pkg/kernels/ops/kvcache/hicache.py", 2, "pkg.kernels.ops.kvcache.hicache", "pkg.srt.utils")]


def test_layer_shows_the_chain_when_indirect(tree):
    root = tree({"pkg/srt/utils.py": "X = 1\n", "pkg/common.py": "import pkg.srt.utils\n",
                 "pkg/kernels/ops/gemm/fused_a_gemm.py": "import pkg.common\n"})
    _, data = run_json(root)
    [finding] = [f for f in data["findings"] if f["rule"] == "layer"]
    assert "`pkg.kernels.ops.gemm.fused_a_gemm` -> `pkg.common` -> `pkg.srt.utils`" in finding["message"]


def test_private_import_of_private_name_module_and_infra(tree):
    root = tree({
        "pkg/kernels/ops/kvcache/_tiles.py": "T = 1\n",
        "pkg/srt/a.py": (
            "from pkg.kernels.ops.kvcache.hicache import (\n    transfer,\n    _private_helper,\n)\n"
            "from pkg.kernels.ops.kvcache import _tiles\n"
            "from pkg.kernels.jit import use_triton\n"),
    })
    _, data = run_json(root)
    assert _rules(data, "private-import") == [
        ("pkg/srt/a.py", 1, "pkg.srt.a", "pkg.kernels.ops.kvcache.hicache._private_helper"),
        ("pkg/srt/a.py", 5, "pkg.srt.a", "pkg.kernels.ops.kvcache._tiles"),
        ("pkg/srt/a.py", 6, "pkg.srt.a", "pkg.kernels.jit"),
    ]


def test_private_import_is_kept_inside_the_group(tree):
    root = tree({"pkg/kernels/ops/kvcache/_tiles.py": "T = 1\n",
                 "pkg/kernels/ops/kvcache/hicache.py": "from pkg.kernels.ops.kvcache._tiles import T\n"
                                                      "from pkg.kernels.jit import use_triton\n"})
    _, data = run_json(root)
    assert _rules(data, "private-import") == []


def test_unknown_group_for_undeclared_missing_and_stray_module(tree):
    root = tree({"pkg/kernels/ops/misc/__init__.py": "", "pkg/kernels/ops/topk.py": "X = 1\n"},
                base={k: v for k, v in __import__("tests.contracts.conftest", fromlist=["x"]).CLEAN_TREE.items()
                      if "/gemm/" not in k})
    _, data = run_json(root)
    got = sorted((f["path"], f["imported"]) for f in data["findings"] if f["rule"] == "unknown-group")
    assert got == [
        ("pkg/kernels/ops/__init__.py", "pkg.kernels.ops.gemm"),
        ("pkg/kernels/ops/misc/__init__.py", "pkg.kernels.ops.misc"),
        ("pkg/kernels/ops/topk.py", "pkg.kernels.ops.topk"),
    ]


def test_parse_error_is_reported_and_the_rest_is_still_checked(tree):
    root = tree({"pkg/srt/broken.py": "from pkg.jit_kernel import hicache\ndef f(:\n",
                 "pkg/srt/ok.py": "import pkg.jit_kernel.norm\n"})
    code, data = run_json(root)
    assert code == 1
    assert _rules(data, "parse-error") == [("pkg/srt/broken.py", 2, "pkg.srt.broken", "")]
    assert _rules(data, "removed-module") == [("pkg/srt/ok.py", 1, "pkg.srt.ok", "pkg.jit_kernel.norm")]


def test_graph_edges_of_files_python_decodes_differently_are_not_lost(tree):
    # Python NFKC-normalizes identifiers: `ｋernels` is `kernels`; grimp's scanner reads raw UTF-8.
    root = tree({"pkg/srt/wide.py": "from pkg.\uff4bernels.ops.kvcache.hicache import _private_helper\n",
                 "pkg/srt/seven.py": "# -*- coding: utf-7 -*-\nfrom pkg.kernels.ops.kvcache import +AF8-tiles\n",
                 "pkg/kernels/ops/kvcache/_tiles.py": "T = 1\n"})
    _, data = run_json(root)
    assert _rules(data, "private-import") == [
        ("pkg/srt/seven.py", 2, "pkg.srt.seven", "pkg.kernels.ops.kvcache._tiles"),
        ("pkg/srt/wide.py", 1, "pkg.srt.wide", "pkg.kernels.ops.kvcache.hicache._private_helper"),
    ]


def test_graph_findings_count_lines_as_python_does(tree):
    # A form feed in a comment is not a line break for Python (str.splitlines thinks it is).
    root = tree({"pkg/kernels/ops/gemm/fused_a_gemm.py":
                 "# a\x0cb\nif True:\n    from pkg.kernels.ops.layernorm.norm import rmsnorm\n"})
    _, data = run_json(root)
    [finding] = [f for f in data["findings"] if f["rule"] == "group-boundary"]
    assert (finding["line"], finding["col"]) == (3, 5)


# Lines that repeat (the same statement in two functions, in a docstring, after a `;`), indents of
# blanks and tabs, non-ASCII and invalid bytes, and a last line without a newline.
_LINE_PIECES = [b"import os", b"    import os", b"\timport os", b"from a import b", b'"""import os"""',
                b"x = 1; import os", b"  # from a import b", b"", b"\xc3\xa9 = 1", b"\xff", b"    \xe2\x80\x83y"]


def test_the_column_found_by_the_edge_text_is_the_one_the_lines_give(tmp_path):
    """`col_of` finds a line by a piece of its text (`line_holding`) where it can; it gives the
    column that splitting the file into lines gives, on every line, for any piece of it."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from contracts.engine.discover import Discovery, SourceFile
    from contracts.engine.model import Model
    from contracts.rules._common import col_of

    path = tmp_path / "m.py"

    @settings(max_examples=400, deadline=None)
    @given(lines=st.lists(st.sampled_from(_LINE_PIECES), min_size=1, max_size=10), bare=st.booleans())
    def check(lines, bare):
        data = b"\n".join(lines) + (b"" if bare else b"\n")
        path.write_bytes(data)
        f = SourceFile(str(path), "m.py", "m", False, 0, len(data))
        for n, raw in enumerate(lines, 1):
            text = raw.decode("utf-8", "replace").strip()
            for piece in {text, text[:6], text[-4:]}:
                fresh = Model(src=str(tmp_path), discovery=Discovery(src=str(tmp_path), files=[f]))
                plain = Model(src=str(tmp_path), discovery=Discovery(src=str(tmp_path), files=[f]))
                assert col_of(fresh, "m", n, piece) == col_of(plain, "m", n), (data, n, piece)

    check()
