"""`missing_imports` on what a tree cannot tell: unknown is not missing, and a fix needs evidence.

Each false-positive class a foreign tree showed, as a generated fixture: extension modules (any
tag, with and without a stub), the submodules they register, `sys.modules` writes, the implicit
module attributes, imports a test asserts must fail, names other modules assign onto a module,
and the "moved?" guesses a name match alone cannot prove.
"""

from __future__ import annotations

import pytest

from contracts.engine.index import TreeIndex
from tests.contracts.conftest import run_cli, run_json, write_tree
from tests.contracts.rules.test_missing_imports import CONFIG

GUARDED = CONFIG + "include_guarded = true\n"
DUNDERS = ["__doc__", "__file__", "__name__", "__package__", "__spec__", "__loader__", "__builtins__",
           "__cached__", "__annotations__", "__dict__"]
# Built for other interpreters and platforms than the one running the tests, too.
SUFFIXES = ["so", "pyd", "abi3.so", "cpython-312-x86_64-linux-gnu.so", "cpython-39-darwin.so",
            "cp313-win_amd64.pyd", "pypy310-pp73-x86_64-linux-gnu.so"]


def _findings(tmp_path, files: dict[str, str], config: str = CONFIG) -> list[dict]:
    files = {"pkg/__init__.py": "", **files}
    _, data = run_json(write_tree(tmp_path, files, config))
    return data["findings"]


def _imported(findings: list[dict]) -> set[str]:
    return {f["imported"] for f in findings}


# ---- extension modules


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_an_extensions_names_and_the_submodules_it_registers_are_unknown(tmp_path, suffix):
    found = _findings(tmp_path, {
        f"pkg/_native.{suffix}": "",
        "pkg/user.py": ("from pkg._native import anything, ir\n"
                        "import pkg._native.internal.floats\n"
                        "from pkg._native.internal import floats\n"
                        "from pkg._native.internal.floats import half\n"
                        "from pkg.gone import x\n"),  # a control: really missing
    })
    assert _imported(found) == {"pkg.gone"}


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_stub_beside_an_extension_is_the_truth(tmp_path, suffix):
    found = _findings(tmp_path, {
        f"pkg/_native.{suffix}": "",
        "pkg/_native.pyi": "def known() -> int: ...\nclass Shape: ...\n",
        "pkg/user.py": "from pkg._native import known, Shape, not_in_stub\nimport pkg._native.sub\n",
    })
    assert [(f["rule"], f["imported"]) for f in found] == [("missing-name", "pkg._native.not_in_stub")]


def test_an_empty_stub_beside_an_extension_says_nothing(tmp_path):
    found = _findings(tmp_path, {
        "pkg/_agg.cpython-311-x86_64-linux-gnu.so": "",
        "pkg/_agg.pyi": "",
        "pkg/_tt.so": "",
        "pkg/_tt.pyi": '"""Only a docstring."""\n',
        "pkg/user.py": "from pkg._agg import RendererAgg\nfrom pkg._tt import convert\n",
    })
    assert found == []


def test_an_extension_inside_a_package_directory_of_its_own(tmp_path):
    found = _findings(tmp_path, {
        "pkg/_C/libfoo.abi3.so": "",
        "pkg/user.py": "from pkg._C.libfoo import ir\nfrom pkg._C import libfoo, libbar\n",
    })
    assert _imported(found) == {"pkg._C.libbar"}


# ---- sys.modules writes and import hooks


@pytest.mark.parametrize("writer", [
    'import sys\nsys.modules[__name__ + ".moves"] = object()\n',
    'import sys\ndef load(fullname, mod):\n    sys.modules[fullname] = mod\n',
    'import sys\nsys.modules.setdefault(__name__ + ".moves", object())\n',
    'import sys\nsys.modules.update({__name__ + ".moves": object()})\n',
])
def test_a_module_that_writes_into_sys_modules_has_unknown_submodules_and_names(tmp_path, writer):
    found = _findings(tmp_path, {
        "pkg/six.py": writer,
        "pkg/user.py": ("from pkg.six.moves import http_client\n"
                        "import pkg.six.moves.urllib.parse\n"
                        "from pkg.six import made_at_run_time\n"),
    })
    assert found == []


def test_an_import_hook_makes_submodules_unknown_not_names(tmp_path):
    found = _findings(tmp_path, {
        "pkg/six.py": "import sys\nsys.meta_path.append(object())\n",
        "pkg/user.py": "from pkg.six.moves import http_client\nfrom pkg.six import not_made\n",
    })
    assert _imported(found) == {"pkg.six.not_made"}


def test_a_module_replacing_itself_has_unknown_names_but_file_submodules(tmp_path):
    found = _findings(tmp_path, {
        "pkg/lexers/__init__.py": "import sys\nsys.modules[__name__] = LazyModule(__name__)\n",
        "pkg/lexers/python.py": "class PythonLexer:\n    pass\n",
        "pkg/user.py": ("from pkg.lexers import TextLexer\nfrom pkg.lexers.python import PythonLexer\n"
                        "from pkg.lexers.special import TextLexer as T\n"),
    })
    assert _imported(found) == {"pkg.lexers.special"}


def test_a_literal_sys_modules_key_anywhere_makes_that_module(tmp_path):
    found = _findings(tmp_path, {
        "pkg/compat.py": 'import sys\nsys.modules["pkg.fake"] = object()\n',
        "pkg/user.py": "import pkg.fake\nfrom pkg.fake.sub import x\nimport pkg.other_gone\n",
    })
    assert _imported(found) == {"pkg.other_gone"}


def test_reading_sys_modules_does_not_make_anything_unknown(tmp_path):
    found = _findings(tmp_path, {
        "pkg/reader.py": 'import sys\nLOADED = sys.modules.get("json")\nM = sys.modules["os"]\n',
        "pkg/user.py": "from pkg.reader import nope\nimport pkg.reader.sub\n",
    })
    assert sorted((f["rule"], f["imported"]) for f in found) == [
        ("missing-module", "pkg.reader.sub"), ("missing-name", "pkg.reader.nope")]


# ---- implicit module attributes


@pytest.mark.parametrize("name", DUNDERS)
def test_every_implicit_module_attribute_is_bound(tmp_path, name):
    found = _findings(tmp_path, {"pkg/impl.py": "x = 1\n", "pkg/user.py": f"from pkg.impl import {name}\n"
                                 f"from pkg import {name} as top\nfrom . import {name} as rel\n"})
    assert found == []


def test_path_is_bound_on_a_package_only(tmp_path):
    found = _findings(tmp_path, {"pkg/sub/__init__.py": "", "pkg/plain.py": "",
                                 "pkg/user.py": "from pkg.sub import __path__\nfrom pkg.plain import __path__ as p\n"})
    assert [(f["imported"], f["replacement"]) for f in found] == [("pkg.plain.__path__", None)]
    assert "__path__` (" not in found[0]["message"].split(";", 1)[1]  # no module suggested for it


def test_a_dunder_is_never_suggested(tmp_path):
    found = _findings(tmp_path, {"pkg/impl.py": "x = 1\n", "pkg/other.py": "__version__ = compute()\n",
                                 "pkg/user.py": "from pkg.impl import __version__\n"})
    (finding,) = found
    assert finding["replacement"] is None and "pkg.other" not in finding["message"]


# ---- imports a test asserts must fail


@pytest.mark.parametrize("context", [
    "with pytest.raises(ImportError):",
    "with raises(ModuleNotFoundError):",
    "with pytest.raises((ValueError, ImportError), match='gone'):",
    "with self.assertRaises(ImportError):",
    "with self.assertRaisesRegex(ModuleNotFoundError, 'gone'):",
])
def test_an_import_a_test_asserts_must_fail_is_guarded_and_never_fixable(tmp_path, context):
    files = {"pkg/home.py": "def relocated(a, b):\n    return a + b\n",
             "pkg/test_user.py": f"def test_it(self=None):\n    {context}\n        from pkg.old import relocated\n"}
    assert _findings(tmp_path, files) == []
    (finding,) = _findings(tmp_path, files, GUARDED)
    assert finding["imported"] == "pkg.old" and finding["replacement"] is None
    assert "a test expecting it to fail" in finding["message"]
    assert "moved? `pkg.home` defines `relocated` (guarded: a test may expect it to fail; not fixed)" \
        in finding["message"]


def test_importorskip_alone_is_reported_with_include_guarded(tmp_path):
    """The text pass reads `importorskip("...")` as the dynamic import `ast` reads it as: a file
    whose only reference is one is looked at, not passed over as clean."""
    files = {"pkg/test_user.py": 'import pytest\n\nmod = pytest.importorskip("pkg.optional")\n'}
    assert _imported(_findings(tmp_path, files)) == set()
    assert _imported(_findings(tmp_path, files, GUARDED)) == {"pkg.optional"}


def test_importorskip_is_guarded(tmp_path):
    files = {"pkg/test_user.py": 'import pytest\npytest.importorskip("pkg.optional")\nimport pkg.really_gone\n'}
    assert _imported(_findings(tmp_path, files)) == {"pkg.really_gone"}
    assert _imported(_findings(tmp_path, files, GUARDED)) == {"pkg.really_gone", "pkg.optional"}


def test_a_raises_of_something_else_does_not_guard(tmp_path):
    files = {"pkg/test_user.py": "def test_it():\n    with pytest.raises(ValueError):\n        from pkg.old import x\n"}
    assert _imported(_findings(tmp_path, files)) == {"pkg.old"}


# ---- names other modules assign onto a module


@pytest.mark.parametrize("writer", [
    'import pkg.sub\nsetattr(pkg.sub, "X", 1)\n',
    "import pkg.sub\npkg.sub.X = 1\n",
    "import pkg.sub as s\ndef enable():\n    s.X = 1\n",
    "from pkg import sub\nsub.X: int = 1\n",
    'import sys\nsetattr(sys.modules["pkg.sub"], "X", 1)\n',
])
def test_a_name_another_module_assigns_onto_a_module_is_bound(tmp_path, writer):
    found = _findings(tmp_path, {"pkg/sub.py": "", "pkg/enable_x.py": writer,
                                 "pkg/user.py": "from pkg.sub import X\nfrom pkg.sub import NOT_ASSIGNED\n"})
    assert _imported(found) == {"pkg.sub.NOT_ASSIGNED"}


def test_names_exported_into_a_module_at_run_time_are_unknown(tmp_path):
    found = _findings(tmp_path, {
        "pkg/base.py": ("import sys\ndef export(cls):\n    for name in cls.names:\n"
                        "        setattr(sys.modules[cls.__module__], name, getattr(cls, name))\n    return cls\n"),
        "pkg/backend.py": "from pkg.base import export\n@export\nclass B:\n    names = ['Canvas']\n",
        "pkg/plain.py": "x = 1\n",
        "pkg/user.py": "from pkg.backend import Canvas\nfrom pkg.plain import Canvas as C\n",
    })
    assert _imported(found) == {"pkg.plain.Canvas"}


# ---- a fix needs evidence


def test_a_unique_definition_is_fixable(tmp_path):
    found = _findings(tmp_path, {"pkg/home.py": "def relocated(a, b):\n    return a + b\n",
                                 "pkg/user.py": "from pkg.old import relocated\n"})
    assert [f["replacement"] for f in found] == ["pkg.home"]
    assert "moved? `pkg.home` defines `relocated`" in found[0]["message"]


def test_a_literal_fallback_elsewhere_is_no_rival_but_a_second_definition_is(tmp_path):
    home = {"pkg/home.py": "def relocated(a, b):\n    return a + b\n", "pkg/user.py": "from pkg.old import relocated\n"}
    found = _findings(tmp_path / "a", {**home, "pkg/fallback.py": "relocated = None\n"})
    assert [f["replacement"] for f in found] == ["pkg.home"]
    found = _findings(tmp_path / "b", {**home, "pkg/copy.py": "def relocated(a):\n    return a\n"})
    assert [f["replacement"] for f in found] == [None]


def test_the_importing_module_itself_is_never_suggested(tmp_path):
    found = _findings(tmp_path, {"pkg/runtime/__init__.py": "",
                                 "pkg/runtime/interpreter.py": "from pkg._gone.libfoo import interpreter\n"})
    (finding,) = found
    assert finding["replacement"] is None and "pkg.runtime" not in finding["message"]


def test_a_module_in_place_of_a_name_is_a_hint(tmp_path):
    found = _findings(tmp_path, {"pkg/util/__init__.py": "", "pkg/util/helpers.py": "def h():\n    pass\n",
                                 "pkg/user.py": "from pkg.old import helpers\nimport pkg.older.helpers\n"})
    assert len(found) == 2 and all(f["replacement"] is None for f in found)
    assert all("hint: " in f["message"] and "not fixed" in f["message"] for f in found)


@pytest.mark.parametrize("home", [
    "relocated = 3\n",  # a literal: two modules may hold one by chance
    "import os\nif os.sep:\n    def relocated():\n        pass\n",  # no block to compare
])
def test_a_weak_name_match_is_a_hint_not_a_fix(tmp_path, home):
    files = {"pkg/home.py": home, "pkg/user.py": "from pkg.old import relocated\n"}
    (finding,) = _findings(tmp_path, files)
    assert finding["replacement"] is None
    assert "hint: `pkg.home` defines `relocated`" in finding["message"]
    root = write_tree(tmp_path, {"pkg/__init__.py": "", **files}, CONFIG)
    proc = run_cli(["--fix"], cwd=root)
    assert proc.returncode == 1 and (root / "pkg/user.py").read_text() == files["pkg/user.py"]
    assert "not auto-fixable" in proc.stdout


def test_a_vendored_module_is_not_sent_to_another_package(tmp_path):
    found = _findings(tmp_path, {"pkg/_vendor/__init__.py": "", "pkg/_vendor/lib/__init__.py": "",
                                 "pkg/_vendor/lib/a.py": "from pkg._vendor.lib.gone import thing\n",
                                 "pkg/other.py": "def thing():\n    return 1\n"})
    (finding,) = found
    assert finding["replacement"] is None and "pkg.other" not in finding["message"]


def test_derive_maps_index_agrees_on_extensions_and_implicit_attributes(tmp_path):
    write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/_native.abi3.so": "", "pkg/plain.py": "x = 1\n"}, None)
    index = TreeIndex(str(tmp_path), ("pkg",))
    assert index.has_module("pkg._native") and not index.has_module("pkg.gone")
    assert index.binds("pkg._native", "anything") and index.binds("pkg.plain", "__doc__")
    assert index.binds("pkg", "__path__") and not index.binds("pkg.plain", "__path__")
    assert not index.binds("pkg.plain", "y")
