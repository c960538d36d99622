"""`missing_imports`: `missing-module` and `missing-name` on fixture packages, both faces, `--fix`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.contracts.conftest import REPO, run_cli, run_json, write_tree

CONFIG = """\
[importlinter]
root_packages =
    pkg
contract_types =
    missing_imports: contracts.MissingImportsContract

[importlinter:contract:missing]
name = Imports of modules and names the tree does not have
type = missing_imports
"""

# Every binding form `missing-name` must count as bound, each imported by `pkg/user_names.py`.
BINDINGS = '''\
import json as IMPORTED_AS
import os.path
from os import sep as FROM_AS, linesep
def f(): pass
async def af(): pass
class C: pass
X = 1
Y: int = 2
Z, (W, *REST) = 1, (2, 3)
AUG = 0
AUG += 1
for LOOPV in range(1):
    pass
with open(__file__) as WITHV:
    pass
try:
    import json as TRYV
except ImportError:
    TRYV = None
if X:
    IFV = 1
else:
    ELSEV = 2
while False:
    WHILEV = 1
def g():
    global GLOBV
    GLOBV = 1
(WALRUS := 3)
__all__ = ["ALLV"]
__all__ += ["ALLV2"]
__all__.extend(["ALLV3"])
'''
BOUND = ["IMPORTED_AS", "os", "FROM_AS", "linesep", "f", "af", "C", "X", "Y", "Z", "W", "REST", "AUG",
         "LOOPV", "WITHV", "TRYV", "IFV", "ELSEV", "WHILEV", "GLOBV", "WALRUS", "ALLV", "ALLV2", "ALLV3"]

TREE = {
    "pkg/__init__.py": "",
    "pkg/bindings.py": BINDINGS,
    "pkg/star_a.py": "from pkg.star_b import *\nA_OWN = 1\n",
    "pkg/star_b.py": "from pkg.star_a import *\nSTARV = 1\n",  # a cycle
    "pkg/lazy_attrs.py": "def __getattr__(name):\n    return name\n",
    "pkg/ext_star.py": "from os.path import *\n",
    "pkg/ns/mod.py": "def in_namespace():\n    pass\n",  # pkg/ns has no __init__.py
    "pkg/stubonly.pyi": "def stubbed() -> int: ...\n",
    "pkg/native.cpython-311-x86_64-linux-gnu.so": "",
    "pkg/winnative.cp311-win_amd64.pyd": "",
    "pkg/plain.so": "",
    "pkg/datadir/readme.txt": "not python\n",
    "pkg/moved/__init__.py": "",
    "pkg/moved/new_home.py": "def relocated():\n    return 1\n\nclass Moved:\n    pass\n",
    "pkg/two/__init__.py": "",
    "pkg/two/x.py": "def twice():\n    pass\n",
    "pkg/two/y.py": "def twice():\n    pass\n",
    "pkg/sub/__init__.py": "",
    "pkg/sub/deep.py": "from ... import nothing_above  # climbs above pkg\n",
    "pkg/user_names.py": "".join(f"from pkg.bindings import {name}\n" for name in BOUND) + (
        "from pkg.star_a import STARV, A_OWN\n"
        "from pkg.lazy_attrs import anything\n"
        "from pkg.ext_star import join\n"
        "from pkg.ns import mod\n"
        "from pkg.ns.mod import in_namespace\n"
        "from pkg.stubonly import stubbed\n"
        "import pkg.native, pkg.winnative, pkg.plain, pkg.datadir\n"
        "from pkg.native import whatever\n"
        "from pkg import bindings, ns\n"
    ),
    "pkg/user.py": textwrap.dedent("""\
        import importlib
        from typing import TYPE_CHECKING
        import pkg.gone_a
        import pkg.gone_b as gb
        from pkg.gone_c import thing
        from pkg import gone_d
        from . import gone_e
        from .gone_f import thing2
        def lazy():
            from pkg.gone_g import thing3
        if TYPE_CHECKING:
            from pkg.gone_h import T
        importlib.import_module("pkg.gone_i")
        __import__("pkg.gone_j")
        TARGET = "pkg.gone_k:attr"
        from pkg.bindings import not_bound, X
        from pkg.star_a import _private_star
        try:
            import pkg.optional_fork
        except ImportError:
            pass
        class K:
            from pkg.gone_l import in_class
        OK_STRING = "pkg.plain.dotted.name"  # not a `module:attr` target: not checked
        """),
}

EXPECTED = {
    ("pkg/sub/deep.py", 1, 1, "missing-module", "..."),
    ("pkg/user.py", 3, 1, "missing-module", "pkg.gone_a"),
    ("pkg/user.py", 4, 1, "missing-module", "pkg.gone_b"),
    ("pkg/user.py", 5, 1, "missing-module", "pkg.gone_c"),
    ("pkg/user.py", 6, 1, "missing-name", "pkg.gone_d"),
    ("pkg/user.py", 7, 1, "missing-name", "pkg.gone_e"),
    ("pkg/user.py", 8, 1, "missing-module", "pkg.gone_f"),
    ("pkg/user.py", 10, 5, "missing-module", "pkg.gone_g"),
    ("pkg/user.py", 12, 5, "missing-module", "pkg.gone_h"),
    ("pkg/user.py", 13, 25, "missing-module", "pkg.gone_i"),
    ("pkg/user.py", 14, 12, "missing-module", "pkg.gone_j"),
    ("pkg/user.py", 15, 10, "missing-module", "pkg.gone_k:attr"),
    ("pkg/user.py", 16, 1, "missing-name", "pkg.bindings.not_bound"),
    ("pkg/user.py", 17, 1, "missing-name", "pkg.star_a._private_star"),
    ("pkg/user.py", 23, 5, "missing-module", "pkg.gone_l"),
}


def _keys(data: dict) -> set:
    return {(f["path"], f["line"], f["col"], f["rule"], f["imported"]) for f in data["findings"]}


@pytest.fixture
def missing_tree(tmp_path):
    def make(extra=None, config=CONFIG):
        files = dict(TREE)
        files.update(extra or {})
        return write_tree(tmp_path, files, config)

    return make


def test_every_import_form_is_reported_at_its_line_and_column(missing_tree):
    root = missing_tree()
    code, data = run_json(root)
    assert code == 1
    assert _keys(data) == EXPECTED


def test_each_binding_form_counts_as_bound_and_stars_getattr_stubs_are_followed(missing_tree):
    root = missing_tree()
    _, data = run_json(root)
    assert not [f for f in data["findings"] if f["path"] == "pkg/user_names.py"]


def test_flags_lazy_type_only_and_module_level_in_messages(missing_tree):
    root = missing_tree()
    _, data = run_json(root)
    by_line = {f["line"]: f["message"] for f in data["findings"] if f["path"] == "pkg/user.py"}
    assert "(lazy import)" in by_line[10]
    assert "(type-only import)" in by_line[12]
    assert "(module-level import)" in by_line[3]
    assert "(string target)" in by_line[15]
    assert "climbs above the top-level package `pkg`" in \
        next(f["message"] for f in data["findings"] if f["path"] == "pkg/sub/deep.py")


def test_guarded_imports_are_silent_unless_include_guarded(missing_tree):
    root = missing_tree(config=CONFIG + "include_guarded = true\n")
    _, data = run_json(root)
    guarded = [f for f in data["findings"] if f["imported"] == "pkg.optional_fork"]
    assert len(guarded) == 1 and guarded[0]["line"] == 19
    assert "guarded by `except ImportError`" in guarded[0]["message"]


@pytest.mark.parametrize("handler", ["ImportError", "ModuleNotFoundError", "Exception", "BaseException",
                                     "(ValueError, ImportError)", ""])
def test_every_import_error_handler_guards(missing_tree, handler):
    body = f"try:\n    import pkg.fork\nexcept {handler}:\n    pass\n".replace("except :", "except:")
    root = missing_tree({"pkg/user.py": body})
    _, data = run_json(root)
    assert not [f for f in data["findings"] if f["path"] == "pkg/user.py"]


def test_a_handler_for_something_else_does_not_guard(missing_tree):
    root = missing_tree({"pkg/user.py": "try:\n    import pkg.fork\nexcept KeyError:\n    pass\n"})
    _, data = run_json(root)
    assert ("pkg/user.py", 2, 5, "missing-module", "pkg.fork") in _keys(data)


def test_a_function_in_a_try_block_is_not_guarded(missing_tree):
    body = "try:\n    def later():\n        import pkg.fork\nexcept ImportError:\n    pass\n"
    root = missing_tree({"pkg/user.py": body})
    _, data = run_json(root)
    assert ("pkg/user.py", 3, 9, "missing-module", "pkg.fork") in _keys(data)


def test_a_name_only_defined_inside_a_function_is_missing(missing_tree):
    root = missing_tree({"pkg/local.py": "def f():\n    hidden = 1\n    return hidden\n",
                         "pkg/user.py": "from pkg.local import hidden\n"})
    _, data = run_json(root)
    assert ("pkg/user.py", 1, 1, "missing-name", "pkg.local.hidden") in _keys(data)


def test_moved_module_with_a_unique_candidate_has_a_replacement(missing_tree):
    root = missing_tree({"pkg/user.py": "from pkg.old_home import relocated, Moved\n"})
    _, data = run_json(root)
    (finding,) = [f for f in data["findings"] if f["path"] == "pkg/user.py"]
    assert finding["replacement"] == "pkg.moved.new_home"
    assert "moved? `pkg.moved.new_home` defines `relocated`, `Moved`" in finding["message"]


def test_two_candidates_are_listed_not_guessed_and_none_is_said(missing_tree):
    root = missing_tree({"pkg/user.py": "from pkg.old import twice\nfrom pkg.older import nowhere\n"})
    _, data = run_json(root)
    by_line = {f["line"]: f for f in data["findings"] if f["path"] == "pkg/user.py"}
    assert by_line[1]["replacement"] is None
    assert "`pkg.two.x`, `pkg.two.y`" in by_line[1]["message"] and "not guessed" in by_line[1]["message"]
    assert by_line[2]["replacement"] is None
    assert "no module of the tree defines `nowhere`" in by_line[2]["message"]


def test_names_no_one_module_defines_together_are_each_told_where_they_are(missing_tree):
    # sglang 0.5.14 `nsa_backend.py`: five names from a module that has none of them. The hint
    # is per name -- "defines all of ..." would read as if none existed anywhere.
    root = missing_tree({"pkg/local.py": "x = 1\n", "pkg/user.py": "from pkg.local import relocated, nowhere\n"})
    _, data = run_json(root)
    by_name = {f["imported"]: f for f in data["findings"] if f["path"] == "pkg/user.py"}
    assert set(by_name) == {"pkg.local.relocated", "pkg.local.nowhere"}
    assert all(f["replacement"] is None for f in by_name.values())
    assert by_name["pkg.local.nowhere"]["message"].endswith("; no module of the tree defines `nowhere`")
    assert ("no one module of the tree defines all of `relocated`, `nowhere` (this statement's names); "
            "`relocated` alone: `pkg.moved.new_home`") in by_name["pkg.local.relocated"]["message"]


def test_fix_rewrites_a_moved_module_and_a_moved_name_and_is_idempotent(missing_tree):
    user = ("import os\n"
            "from pkg.old_home import relocated  # keep this comment\n"
            "from pkg.bindings import X, Moved\n"
            "def lazy():\n"
            "    from .old_home import (\n"
            "        relocated as r,\n"
            "    )\n"
            "    return r\n")
    root = missing_tree({"pkg/user.py": user, "pkg/sub/deep.py": ""})
    proc = run_cli(["--fix"], cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (root / "pkg/user.py").read_text()
    assert text == ("import os\n"
                    "from pkg.moved.new_home import relocated  # keep this comment\n"
                    "from pkg.bindings import X\n"
                    "from pkg.moved.new_home import Moved\n"
                    "def lazy():\n"
                    "    from pkg.moved.new_home import (\n"
                    "        relocated as r,\n"
                    "    )\n"
                    "    return r\n")
    _, data = run_json(root)
    assert not [f for f in data["findings"] if f["path"] == "pkg/user.py"]
    again = run_cli(["--fix"], cwd=root)
    assert again.returncode == 0 and (root / "pkg/user.py").read_text() == text


def test_fix_leaves_ambiguous_ones_and_says_why(missing_tree):
    root = missing_tree({"pkg/user.py": "from pkg.old import twice\n"})
    before = (root / "pkg/user.py").read_text()
    proc = run_cli(["--fix"], cwd=root)
    assert proc.returncode == 1
    assert "not auto-fixable" in proc.stdout and "no unique module" in proc.stdout
    assert (root / "pkg/user.py").read_text() == before


def test_ignore_imports_with_wildcards_and_unmatched_lines(missing_tree):
    config = CONFIG + ("ignore_imports =\n"
                       "    pkg.user -> pkg.*\n"
                       "    pkg.** -> pkg.bindings.not_bound\n"
                       "    pkg.user -> pkg.never_imported\n")
    root = missing_tree(config=config)
    _, data = run_json(root)
    keys = _keys(data)
    assert not any(k[4].startswith("pkg.gone_") and k[0] == "pkg/user.py" for k in keys)
    assert ("pkg/user.py", 16, 1, "missing-name", "pkg.bindings.not_bound") not in keys
    unmatched = [f for f in data["findings"] if f["rule"] == "unused-allowed-import"]
    assert [(f["path"], f["importer"], f["imported"]) for f in unmatched] == [
        (".importlinter", "pkg.user", "pkg.never_imported")]
    assert "`ignore_imports` line `pkg.user -> pkg.never_imported`" in unmatched[0]["message"]


@pytest.mark.parametrize("option, value, message", [
    ("include_guarded", "maybe", "'maybe' is not true or false"),
    ("ignore_imports", "pkg.a pkg.b", "must be 'importer.module -> imported.module'"),
    ("ignore_imports", "pkg.a* -> pkg.b", "is not a module expression"),
    ("packages", "not a module", "is not a dotted module name"),
    ("colour", "red", "unrecognized option"),
])
def test_bad_options_are_one_line_errors(missing_tree, option, value, message):
    root = missing_tree(config=CONFIG + f"{option} = {value}\n")
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 2
    assert message in proc.stderr and f"option '{option}'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_packages_limits_what_is_checked(missing_tree):
    root = missing_tree(config=CONFIG + "packages =\n    pkg.moved\n")
    _, data = run_json(root)
    assert data["findings"] == []


def test_zero_config_command_runs_the_contract_alone(missing_tree, tmp_path_factory):
    root = missing_tree(config=None)
    elsewhere = tmp_path_factory.mktemp("cwd")
    proc = run_cli(["--src", str(root), "--root-package", "pkg", "--format", "json"], cwd=elsewhere)
    assert proc.returncode == 1, proc.stderr
    shown = {(os.path.relpath(path, root).replace(os.sep, "/"), *rest)  # paths outside cwd are absolute
             for path, *rest in _keys(json.loads(proc.stdout))}
    assert shown == EXPECTED
    assert not (root / ".namespace_lint_cache").exists()  # nothing is written into the tree
    text = run_cli(["--src", str(root), "--root-package", "pkg"], cwd=elsewhere)
    assert f"{len(EXPECTED)} findings" in text.stdout


def test_zero_config_with_a_config_is_a_usage_error(missing_tree):
    root = missing_tree()
    proc = run_cli(["--config", ".importlinter", "--root-package", "pkg"], cwd=root)
    assert proc.returncode == 2 and "--root-package" in proc.stderr


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + str(cwd), COLUMNS="400")
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    return subprocess.run([exe, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_both_faces_agree(missing_tree):
    root = missing_tree()
    lint = _lint_imports(root)
    ours = run_cli(["--no-cache", "--format", "json"], cwd=root)
    assert lint.returncode == 1 and ours.returncode == 1, lint.stdout + lint.stderr
    for f in json.loads(ours.stdout)["findings"]:
        assert f"{f['path']}:{f['line']}:{f['col']}: {f['rule']} " in lint.stdout
    assert f"{len(EXPECTED)} findings" in lint.stdout


def test_both_faces_are_clean_together(missing_tree):
    root = missing_tree({"pkg/user.py": "from pkg.moved.new_home import relocated\n",
                         "pkg/sub/deep.py": "from .. import bindings\n"})
    assert _lint_imports(root).returncode == 0
    assert run_cli(["--no-cache"], cwd=root).returncode == 0


def test_an_excluded_directory_still_exists_for_its_importers(missing_tree):
    config = CONFIG.replace("contract_types =", "exclude =\n    pkg/vendored\ncontract_types =")
    root = missing_tree({"pkg/vendored/lib.py": "def vendored():\n    pass\n",
                         "pkg/user.py": "from pkg.vendored.lib import vendored\nimport pkg.vendored.deeper\n"},
                        config=config)
    _, data = run_json(root)
    assert not [f for f in data["findings"] if f["path"] == "pkg/user.py"]


def test_a_star_import_brings_a_private_name_listed_in_all(missing_tree):
    root = missing_tree({"pkg/impl.py": "def _helper():\n    pass\n__all__ = ['_helper']\n",
                         "pkg/shim.py": "from pkg.impl import *\n",
                         "pkg/user.py": "from pkg.shim import _helper\n"})
    _, data = run_json(root)
    assert not [f for f in data["findings"] if f["path"] == "pkg/user.py"]


def test_statements_the_text_pass_cannot_read_are_parsed(missing_tree):
    padding = "".join(f"def filler_{i}():\n    return {i}\n\n" for i in range(400))  # windowed, not whole
    user = (padding + "import os; import pkg.gone_semicolon\n"
            "if os: from pkg.gone_colon import thing\n"
            "from pkg.bindings \\\n    import not_there\n"
            "import importlib\n"
            "importlib.import_module('.gone_relative', 'pkg')\n")
    root = missing_tree({"pkg/user.py": user, "pkg/cr.py": "import os\rimport pkg.gone_cr\r"})
    _, data = run_json(root)
    found = {(f["path"], f["imported"]) for f in data["findings"]}
    assert {("pkg/user.py", "pkg.gone_semicolon"), ("pkg/user.py", "pkg.gone_colon"),
            ("pkg/user.py", "pkg.bindings.not_there"), ("pkg/user.py", "pkg.gone_relative"),
            ("pkg/cr.py", "pkg.gone_cr")} <= found
