"""`derive-map` in one call (issue 31): `--removed` repeated or left out, a prefix the after tree
still has, a module made private (`foo` -> `_foo`) with edited bodies, compiled modules."""

from __future__ import annotations

import json

from contracts.cli import main
from tests.contracts.conftest import write_tree

CODE = "def {0}(a, b):\n    total = a\n    for i in range(b):\n        total += i * {1}\n    return total\n\n\n"


def fns(*names: str, k: int = 3) -> str:
    return "".join(CODE.format(n, k) for n in names)


def derive(capsys, before, after, *args: str) -> tuple[int, dict]:
    code = main(["derive-map", "--before", str(before), "--after", str(after), "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def trees(tmp_path, before: dict, after: dict):
    return (write_tree(tmp_path / "b", {"pkg/__init__.py": "", **before}, config=None),
            write_tree(tmp_path / "a", {"pkg/__init__.py": "", **after}, config=None))


def test_repeated_removed_prefixes_accumulate(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/one.py": fns("f1", "g1"), "pkg/two.py": fns("f2", "g2")},
                 {"pkg/new/__init__.py": "", "pkg/new/one.py": fns("f1", "g1"), "pkg/new/two.py": fns("f2", "g2")})
    _, data = derive(capsys, b, a, "--removed", "pkg.one", "--removed", "pkg.two")
    assert data["replacements"] == ["pkg.one -> pkg.new.one", "pkg.two -> pkg.new.two"]
    _, data = derive(capsys, b, a, "--removed", "pkg.two")
    assert data["replacements"] == ["pkg.two -> pkg.new.two"]


def test_without_removed_every_module_the_after_tree_lacks_is_mapped(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/one.py": fns("f1", "g1"), "pkg/stays.py": fns("s1", "s2"),
                            "pkg/old/__init__.py": "", "pkg/old/two.py": fns("f2", "g2")},
                 {"pkg/stays.py": fns("s1", "s2"), "pkg/new/__init__.py": "", "pkg/new/one.py": fns("f1", "g1"),
                  "pkg/new/two.py": fns("f2", "g2")})
    code, data = derive(capsys, b, a)
    assert {m["module"] for m in data["modules"]} == {"pkg.one", "pkg.old", "pkg.old.two"}
    assert "pkg.one -> pkg.new.one" in data["replacements"]
    assert "pkg.old.two -> pkg.new.two" in data["replacements"]


def test_a_prefix_the_after_tree_still_has_stands_for_its_modules_that_are_gone(tmp_path, capsys):
    # `pkg.sub.a` stays; an identical constant elsewhere is no evidence that it moved.
    b, a = trees(tmp_path, {"pkg/sub/__init__.py": "", "pkg/sub/a.py": "MAX_INT = 2 ** 31\n" + fns("ka", "kb"),
                            "pkg/sub/gone.py": fns("f1", "g1")},
                 {"pkg/sub/__init__.py": "", "pkg/sub/a.py": "MAX_INT = 2 ** 31\n" + fns("ka", "kb"),
                  "pkg/other/__init__.py": "", "pkg/other/_b.py": "MAX_INT = 2 ** 31\n",
                  "pkg/other/gone.py": fns("f1", "g1")})
    _, data = derive(capsys, b, a, "--removed", "pkg.sub")
    assert [m["module"] for m in data["modules"]] == ["pkg.sub.gone"]
    assert data["replacements"] == ["pkg.sub.gone -> pkg.other.gone"]


EDITED = ("def {0}(a, b, scale=1.0, *, name=None):\n    if name is None:\n        name = str(a)\n"
          "    values = [a * scale] * b\n    return name, sum(values)\n\n\n")


def test_a_module_made_private_with_edited_bodies_is_matched_by_its_definitions_names(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/m/__init__.py": "", "pkg/m/foo.py": fns("Foo", "make_foo", k=3)},
                 {"pkg/m/__init__.py": "", "pkg/m/_foo.py": EDITED.format("Foo") + EDITED.format("make_foo")})
    _, data = derive(capsys, b, a)
    entry = next(m for m in data["modules"] if m["module"] == "pkg.m.foo")
    assert entry["status"] == "mapped" and entry["target"] == "pkg.m._foo"
    assert entry["how"] == "folded name, same definitions"


def test_the_same_names_alone_do_not_match_an_unrelated_name(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/foo.py": fns("Foo", "make_foo", k=3)},
                 {"pkg/bar.py": EDITED.format("Foo") + EDITED.format("make_foo")})
    _, data = derive(capsys, b, a)
    assert next(m for m in data["modules"] if m["module"] == "pkg.foo")["status"] == "unmatched"


def test_a_compiled_module_is_a_module_like_any_other(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/sub/__init__.py": "", "pkg/sub/libfoo.cpython-311-x86_64-linux-gnu.so": ""},
                 {"pkg/sub/__init__.py": "", "pkg/_native/__init__.py": "",
                  "pkg/_native/libfoo.cpython-311-x86_64-linux-gnu.so": ""})
    code, data = derive(capsys, b, a, "--removed", "pkg.sub.libfoo")
    assert code == 0 and data["replacements"] == ["pkg.sub.libfoo -> pkg._native.libfoo"]


CONFIG = """\
[importlinter]
root_packages =
    app
contract_types =
    removed_modules: contracts.RemovedModulesContract

[importlinter:contract:pkg-old]
name = pkg.one and pkg.two were removed
type = removed_modules
removed_modules =
    pkg.one
    pkg.two
# hand-written, kept
replacements =
    pkg.one -> pkg.elsewhere.one

[importlinter:contract:last]
name = another contract comes last
type = removed_modules
removed_modules =
    other
"""


def test_write_config_merges_into_the_contract_that_covers_the_lines(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/one.py": fns("f1", "g1"), "pkg/two.py": fns("f2", "g2")},
                 {"pkg/new/__init__.py": "", "pkg/new/one.py": fns("f1", "g1"), "pkg/new/two.py": fns("f2", "g2")})
    config = tmp_path / ".importlinter"
    config.write_text(CONFIG)
    code = main(["derive-map", "--before", str(b), "--after", str(a), "--write-config", str(config)])
    assert code == 0
    assert "1 replacement line(s) added, 1 already there" in capsys.readouterr().err
    assert config.read_text() == CONFIG.replace("    pkg.one -> pkg.elsewhere.one\n",
                                                "    pkg.one -> pkg.elsewhere.one\n    pkg.two -> pkg.new.two\n")
    from contracts import config as config_mod

    spec = config_mod.load(str(config)).removed[0]  # the merged file is a valid config
    assert dict(spec.replacements) == {"pkg.one": "pkg.elsewhere.one", "pkg.two": "pkg.new.two"}
    main(["derive-map", "--before", str(b), "--after", str(a), "--write-config", str(config)])
    assert "0 replacement line(s) added, 2 already there" in capsys.readouterr().err


def test_write_config_refuses_lines_no_contract_covers(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/three.py": fns("f1", "g1")},
                 {"pkg/new/__init__.py": "", "pkg/new/three.py": fns("f1", "g1")})
    config = tmp_path / ".importlinter"
    config.write_text(CONFIG)
    assert main(["derive-map", "--before", str(b), "--after", str(a), "--write-config", str(config)]) == 2
    assert "no removed_modules contract in it covers `pkg.three`" in capsys.readouterr().err
    assert config.read_text() == CONFIG


def test_write_config_adds_the_option_when_the_contract_has_none(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/one.py": fns("f1", "g1")}, {"pkg/new/__init__.py": "", "pkg/new/one.py": fns("f1", "g1")})
    config = tmp_path / ".importlinter"
    config.write_text(CONFIG.replace("# hand-written, kept\nreplacements =\n    pkg.one -> pkg.elsewhere.one\n", "") + "\n")
    assert main(["derive-map", "--before", str(b), "--after", str(a), "--write-config", str(config)]) == 0
    text = config.read_text()
    assert "    pkg.two\nreplacements =\n    pkg.one -> pkg.new.one\n\n[importlinter:contract:last]" in text


def shims(tmp_path, capsys, files: dict) -> tuple[int, dict]:
    root = write_tree(tmp_path / "src", {"pkg/__init__.py": "", "pkg/old/__init__.py": "",
                                         "pkg/new/__init__.py": "", "pkg/new/place.py": fns("f1", "g1"),
                                         "pkg/_compat.py": "def deprecated_module(name):\n    pass\n", **files},
                      config=None)
    code = main(["derive-map", "--src", str(root), "--removed", "pkg.old", "--format", "json"])
    captured = capsys.readouterr()
    return code, {**json.loads(captured.out), "stderr": captured.err}


def test_src_reads_a_star_import_shim_with_a_deprecation_helper(tmp_path, capsys):
    _, data = shims(tmp_path, capsys, {"pkg/old/place.py": (
        "from pkg._compat import deprecated_module\nfrom pkg.new.place import *\n\n"
        "deprecated_module(__name__)\n")})
    assert data["replacements"] == ["pkg.old.place -> pkg.new.place"]


def test_src_reads_a_module_level_getattr_shim(tmp_path, capsys):
    _, data = shims(tmp_path, capsys, {
        "pkg/old/place.py": ("import warnings\nimport pkg.new.place as _new\n\n\ndef __getattr__(name):\n"
                             "    warnings.warn(f'{name} moved', DeprecationWarning)\n    return getattr(_new, name)\n"),
        "pkg/old/other.py": ("import importlib\n\n\ndef __getattr__(name):\n"
                             "    return getattr(importlib.import_module('pkg.new.place'), name)\n")})
    assert data["replacements"] == ["pkg.old.other -> pkg.new.place", "pkg.old.place -> pkg.new.place"]
    assert "`pkg.old.place` (pkg/old/place.py) is a module-level `__getattr__` shim" in data["stderr"]


def test_src_a_module_with_code_beside_its_getattr_is_not_a_shim(tmp_path, capsys):
    _, data = shims(tmp_path, capsys, {"pkg/old/place.py": (
        "import pkg.new.place as _new\n\n\ndef helper():\n    return 1\n\n\n"
        "def __getattr__(name):\n    return getattr(_new, name)\n")})
    assert data["replacements"] == []


def test_a_public_package_that_re_exports_the_code_is_the_home(tmp_path, capsys):
    b, a = trees(tmp_path, {"pkg/util/__init__.py": "", "pkg/util/testing.py": fns("assert_equal", "assert_close")},
                 {"pkg/_testing/__init__.py": "from pkg._testing.asserters import assert_close, assert_equal\n",
                  "pkg/_testing/asserters.py": fns("assert_equal", "assert_close")})
    _, data = derive(capsys, b, a)
    entry = next(m for m in data["modules"] if m["module"] == "pkg.util.testing")
    assert entry["status"] == "mapped" and entry["target"] == "pkg._testing"
    assert entry["how"] == "folded name, re-exported"
