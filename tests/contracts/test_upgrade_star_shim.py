"""A deprecated alias module that is only `from lib._testing import *` (pandas 1.5's
`pandas.util.testing`, gone in 2.0) moves to the module it star-imports, never to an extension
module whose names no source tells (`lib._libs.testing`, a `.so`: unknown is not evidence), and
a name served only by a module-level `__getattr__` of the old release is said to be so."""

from __future__ import annotations

import contextlib
import io
import json

from contracts.cli import main
from tests.contracts.conftest import cwd, write_tree

TESTING = ("def assert_frame_equal(left, right):\n    assert left == right, (left, right)\n\n\n"
           "def make_frame(n):\n    return [list(range(n)) for _ in range(n)]\n\n\n"
           "def ensure_clean(path):\n    return open(path, 'w')\n")
COMMON = {
    "lib/__init__.py": "", "lib/util/__init__.py": "",
    "lib/util/_exceptions.py": "def find_stack_level():\n    import inspect\n    return len(inspect.stack())\n",
    "lib/_testing/__init__.py": TESTING,
    "lib/testing.py": "from lib._testing import assert_frame_equal\n",
    "lib/_libs/__init__.py": "", "lib/_libs/testing.cpython-311-x86_64-linux-gnu.so": "",
}
BEFORE = {**COMMON,
          "lib/__init__.py": ("def __getattr__(name):\n    if name == 'OldIndex':\n        return list\n"
                              "    raise AttributeError(name)\n"),
          "lib/util/testing.py": ("import warnings\n\nfrom lib.util._exceptions import find_stack_level\n\n"
                                  "from lib._testing import *  # noqa\n\nwarnings.warn('use lib.testing', "
                                  "FutureWarning, stacklevel=find_stack_level())\n")}
PROJECT = {"app/__init__.py": "",
           "app/t.py": ("import lib as lb\nimport lib.util.testing as tm\n\n\ndef test():\n"
                        "    tm.assert_frame_equal(tm.make_frame(2), tm.make_frame(2))\n    return lb.OldIndex\n")}


def _upgrade(tmp_path, *args):
    before = write_tree(tmp_path / "before", BEFORE, config=None)
    after = write_tree(tmp_path / "after", COMMON, config=None)
    project = write_tree(tmp_path / "project", PROJECT, config=None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), cwd(project):
        code = main(["upgrade", "lib", "--from", str(before), "--to", str(after), "--src", ".",
                     "--root-package", "app", *args])
    return code, out.getvalue(), project


def test_derive_map_sends_a_star_import_alias_module_to_what_it_star_imports(tmp_path):
    before = write_tree(tmp_path / "before", BEFORE, config=None)
    after = write_tree(tmp_path / "after", COMMON, config=None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main(["derive-map", "--before", str(before), "--after", str(after), "--format", "json"])
    lines = json.loads(out.getvalue())["replacements"]
    assert lines == ["lib.util.testing -> lib._testing"]


def test_upgrade_fixes_the_alias_module_and_names_a_getattr_only_name(tmp_path):
    code, out, _ = _upgrade(tmp_path, "--output-format", "json")
    found = {(f["line"], f["rule"]): f for f in json.loads(out)["findings"]}
    assert code == 1 and set(found) == {(2, "missing-module"), (7, "missing-name")}
    assert found[(2, "missing-module")]["replacement"] == "lib._testing"
    assert "only through its module-level `__getattr__`" in found[(7, "missing-name")]["message"]
    code, out, project = _upgrade(tmp_path, "--fix")
    assert (project / "app" / "t.py").read_text() == PROJECT["app/t.py"].replace("lib.util.testing", "lib._testing")
    assert "Fixed 1 import in 1 file" in out


def test_a_name_used_through_a_bare_top_level_import_is_checked(tmp_path):
    before = write_tree(tmp_path / "before", BEFORE, config=None)
    after = write_tree(tmp_path / "after", COMMON, config=None)
    project = write_tree(tmp_path / "project", {
        "app/__init__.py": "", "app/b.py": "import lib\n\n\ndef f(x):\n    return lib.OldIndex, lib.testing, x.OldIndex\n"},
        config=None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), cwd(project):
        code = main(["upgrade", "lib", "--from", str(before), "--to", str(after), "--src", ".",
                     "--root-package", "app", "--output-format", "json"])
    found = [(f["line"], f["col"], f["rule"], f["imported"]) for f in json.loads(out.getvalue())["findings"]]
    assert code == 1 and found == [(5, 12, "missing-name", "lib.OldIndex")]
