"""`removed-module`: every form of reference to the removed path, at the right line; and the
look-alikes that must not be flagged."""

from __future__ import annotations

import pytest

from tests.contracts.conftest import run_json

# Each case: source of pkg/srt/case.py (a namespace directory: grimp would not even see it),
# then the expected (line, col, imported) findings.
CASES = {
    "import_dotted": ("import pkg.jit_kernel.hicache\n", [(1, 1, "pkg.jit_kernel.hicache")]),
    "import_as": ("import pkg.jit_kernel.hicache as h\n", [(1, 1, "pkg.jit_kernel.hicache")]),
    "from_module_import_name": (
        "from pkg.jit_kernel.hicache import transfer\n", [(1, 1, "pkg.jit_kernel.hicache")]),
    "from_package_import_module": (
        "from pkg.jit_kernel import hicache\n", [(1, 1, "pkg.jit_kernel.hicache")]),
    "from_package_import_two_modules": (
        "from pkg.jit_kernel import hicache, norm\n",
        [(1, 1, "pkg.jit_kernel.hicache"), (1, 1, "pkg.jit_kernel.norm")]),
    "from_root_import_removed_package": (
        "from pkg import jit_kernel\n", [(1, 1, "pkg.jit_kernel")]),
    "parenthesized_multiline": (
        "x = 1\nfrom pkg.jit_kernel.hicache import (\n    a,\n    b as c,  # why\n)\n",
        [(2, 1, "pkg.jit_kernel.hicache")]),
    "backslash_continuation": (
        "from pkg.jit_kernel.hicache \\\n    import a\n", [(1, 1, "pkg.jit_kernel.hicache")]),
    "relative_into_removed": (
        "from ..jit_kernel.hicache import a\n", [(1, 1, "pkg.jit_kernel.hicache")]),
    "relative_from_dots_import_removed": (
        "from .. import jit_kernel\n", [(1, 1, "pkg.jit_kernel")]),
    "lazy_in_function": (
        "def f():\n    from pkg.jit_kernel.norm import rms\n    return rms\n",
        [(2, 5, "pkg.jit_kernel.norm")]),
    "lazy_in_method": (
        "class A:\n    def m(self):\n        import pkg.jit_kernel.norm\n",
        [(3, 9, "pkg.jit_kernel.norm")]),
    "class_body": ("class A:\n    from pkg.jit_kernel import norm\n", [(2, 5, "pkg.jit_kernel.norm")]),
    "if_try_with_blocks": (
        "import contextlib\nif True:\n    try:\n        with contextlib.suppress(Exception):\n"
        "            from pkg.jit_kernel.hicache import a\n    except ImportError:\n"
        "        from pkg.jit_kernel.norm import b\n",
        [(5, 13, "pkg.jit_kernel.hicache"), (7, 9, "pkg.jit_kernel.norm")]),
    "type_checking": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.jit_kernel.hicache import T\n",
        [(3, 5, "pkg.jit_kernel.hicache")]),
    "importlib_import_module": (
        "import importlib\nm = importlib.import_module(\"pkg.jit_kernel.hicache\")\n",
        [(2, 29, "pkg.jit_kernel.hicache")]),
    "dunder_import": ("m = __import__('pkg.jit_kernel.norm')\n", [(1, 16, "pkg.jit_kernel.norm")]),
    "registry_string_target": (
        "REGISTRY = {\n    'op': \"pkg.jit_kernel.hicache:transfer\",\n}\n",
        [(2, 11, "pkg.jit_kernel.hicache:transfer")]),
    "mock_patch_target": (
        "from unittest import mock\n\n@mock.patch(\"pkg.jit_kernel.norm.rms\")\ndef test(m):\n    pass\n",
        [(3, 13, "pkg.jit_kernel.norm.rms")]),
}

NOT_FLAGGED = {
    "name_containing_text": "can_use_hicache_jit_kernel = True\ndef jit_kernel_enabled():\n    return 1\n",
    "docstring_prose": '"""Moved from pkg.jit_kernel.hicache to pkg.kernels.ops.kvcache.hicache."""\n',
    "function_docstring": 'def f():\n    """pkg.jit_kernel.hicache"""\n',
    "comment": "# from pkg.jit_kernel.hicache import transfer\nx = 1  # pkg.jit_kernel.norm\n",
    "shared_prefix_string": "from pkg.jit_kernel_utils import x\nimport pkg.jit_kernels\n",
    "prose_string": "msg = 'see pkg.jit_kernel.hicache for details'\n",
    "fstring": "name = 'x'\nt = f'pkg.jit_kernel.{name}'\n",
    "other_module_attribute": "import pkg.kernels\nx = pkg.kernels\n",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_is_broken_when_removed_module_is_referenced(tree, name):
    source, expected = CASES[name]
    root = tree({"pkg/srt/case.py": source})
    code, data = run_json(root)
    got = [(f["line"], f["col"], f["imported"]) for f in data["findings"] if f["path"] == "pkg/srt/case.py"]
    assert got == expected
    assert code == 1
    assert {f["rule"] for f in data["findings"]} == {"removed-module"}


@pytest.mark.parametrize("name", sorted(NOT_FLAGGED))
def test_is_kept_when_text_only_looks_like_the_removed_path(tree, name):
    root = tree({"pkg/srt/case.py": NOT_FLAGGED[name]})
    code, data = run_json(root)
    assert data["findings"] == []
    assert code == 0


def test_replacement_is_the_longest_matching_prefix(tree):
    root = tree({"pkg/srt/case.py": "from pkg.jit_kernel.utils.sub import x\nimport pkg.jit_kernel.hicache\n"
                                     "from pkg.jit_kernel.unknown import y\n"})
    _, data = run_json(root)
    assert [(f["line"], f["replacement"]) for f in data["findings"]] == [
        (1, "pkg.kernels.jit.sub"),
        (2, "pkg.kernels.ops.kvcache.hicache"),
        (3, None),
    ]


def test_string_replacement_keeps_the_attribute(tree):
    root = tree({"pkg/srt/case.py": "T = 'pkg.jit_kernel.hicache:transfer'\n"})
    _, data = run_json(root)
    assert data["findings"][0]["replacement"] == "pkg.kernels.ops.kvcache.hicache:transfer"


def test_relative_import_in_a_package_init_resolves_from_the_package(tree):
    root = tree({"pkg/srt/__init__.py": "", "pkg/srt/x/__init__.py": "from ...jit_kernel import norm\n"})
    _, data = run_json(root)
    assert [(f["path"], f["imported"]) for f in data["findings"]] == [("pkg/srt/x/__init__.py", "pkg.jit_kernel.norm")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_utf8_bom_changes_nothing(tree, name):
    # Python skips a BOM before the first statement; the byte prefilter must not read it as text
    # before `from` (it once did: `\ufeff from . import jit_kernel` went unreported).
    source, expected = CASES[name]
    root = tree({"pkg/srt/case.py": "\ufeff" + source})
    code, data = run_json(root)
    got = [(f["line"], f["col"], f["imported"]) for f in data["findings"] if f["path"] == "pkg/srt/case.py"]
    assert got == expected
    assert code == 1
