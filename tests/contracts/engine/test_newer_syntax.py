"""Every Python version's syntax, whatever Python runs the tool.

A file this interpreter's `ast` rejects is read with LibCST's parser (`engine/cst_scan.py`), so
a PEP 701 f-string or `type X = ...` (3.12), a t-string (3.14) or `lazy import` (PEP 810, 3.15)
does not hide the stale import beside it; `parse-error` is left for files no parser reads. The
expected findings below are the same under every interpreter: the test asserts them under
whichever one runs it (3.10-3.13 on CI), and the CLI runs in a subprocess of `sys.executable`.
"""

from __future__ import annotations

import ast
import json
import sys

import pytest

from contracts.engine import cst_scan
from contracts.engine.graph import names_from_text, statement_names
from contracts.engine.import_lines import StatementReader
from contracts.engine.prefilter import RemovedPrefilter
from contracts.engine.scan import scan_source
from tests.contracts.conftest import CLEAN_TREE, NAMED_TREE, run_cli, write_tree

# Each newer form with a stale import of the removed `pkg.jit_kernel` beside it: (source,
# [(line, col, imported, context)]), the context as the message says it.
FORMS = {
    "pep701_fstring": (
        'd = {"k": 1}\nlabel = f"{d["k"]}"\nfrom pkg.jit_kernel.hicache import transfer\n',
        [(3, 1, "pkg.jit_kernel.hicache", "(import;")]),
    "type_alias": (
        "type Vec = list[float]\nimport pkg.jit_kernel.norm as norm\n",
        [(2, 1, "pkg.jit_kernel.norm", "(import;")]),
    "tstring": (
        'name = "x"\ngreeting = t"hello {name}"\nfrom pkg.jit_kernel import norm\n',
        [(3, 1, "pkg.jit_kernel.norm", "(import;")]),
    "lazy_import": (
        "import os\nlazy import pkg.jit_kernel.hicache as hc\nlazy from pkg.jit_kernel.norm import rms\n",
        [(2, 1, "pkg.jit_kernel.hicache", "(lazy import (PEP 810);"),
         (3, 1, "pkg.jit_kernel.norm", "(lazy import (PEP 810);")]),
}


def _findings(root, *args) -> tuple[int, list[dict]]:
    proc = run_cli(["--no-cache", "--format", "json", *args], cwd=root)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def test_each_newer_form_is_read_and_its_stale_import_reported(tmp_path):
    files = dict(CLEAN_TREE)
    files.update({f"pkg/srt/{name}.py": source for name, (source, _) in FORMS.items()})
    root = write_tree(tmp_path, files)
    code, findings = _findings(root)
    assert code == 1
    got = sorted((f["path"], f["line"], f["col"], f["imported"], f["rule"]) for f in findings)
    expected = sorted((f"pkg/srt/{name}.py", line, col, imported, "removed-module")
                      for name, (_, refs) in FORMS.items() for line, col, imported, _ in refs)
    assert got == expected
    for f in findings:
        context = next(c for line, _, _, c in FORMS[f["path"][8:-3]][1] if line == f["line"])
        assert context in f["message"], f["message"]


def test_fix_rewrites_tstring_and_lazy_import_files_byte_exact_outside_the_import(tmp_path):
    sources = {
        "pkg/srt/tstring.py": 'name = "x"\ngreeting = t"hello {name}"  # keep\r\nfrom pkg.jit_kernel import norm\n',
        "pkg/srt/lazy.py": "import os\n\nlazy   import pkg.jit_kernel.hicache as hc  # why\nlazy from "
                           "pkg.jit_kernel.norm import (\n    rms,\n)\nx = t'{os.sep}'\n",
    }
    root = write_tree(tmp_path, {**NAMED_TREE, **sources})
    proc = run_cli(["--no-cache", "--fix"], cwd=root)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert (root / "pkg/srt/tstring.py").read_bytes() == sources["pkg/srt/tstring.py"].replace(
        "pkg.jit_kernel import norm", "pkg.kernels.ops.layernorm import norm").encode()
    assert (root / "pkg/srt/lazy.py").read_bytes() == sources["pkg/srt/lazy.py"].replace(
        "pkg.jit_kernel.hicache", "pkg.kernels.ops.kvcache.hicache").replace(
        "pkg.jit_kernel.norm", "pkg.kernels.ops.layernorm.norm").encode()
    code, findings = _findings(root)
    assert (code, findings) == (0, [])


def test_a_lazy_from_import_of_a_top_level_module_stays_lazy(tmp_path):
    config = (
        "[importlinter]\nroot_packages =\n    pkg\ncontract_types =\n    removed_modules: contracts.RemovedModulesContract\n"
        "[importlinter:contract:removed]\nname = removed\ntype = removed_modules\nremoved_modules =\n"
        "    pkg.jit_kernel\nreplacements =\n    pkg.jit_kernel.hicache -> hicache\n")
    source = "lazy from pkg.jit_kernel import hicache\nx = t'{hicache}'\n"
    root = write_tree(tmp_path, {**CLEAN_TREE, "pkg/srt/top.py": source, "hicache.py": ""}, config)
    proc = run_cli(["--no-cache", "--fix"], cwd=root)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert (root / "pkg/srt/top.py").read_text() == "lazy import hicache\nx = t'{hicache}'\n"


def test_a_file_no_parser_reads_is_still_a_parse_error(tmp_path):
    broken = 'greeting = t"hello {name}"\ndef f(:\n    pass\nimport pkg.jit_kernel.norm\n'
    root = write_tree(tmp_path, {**CLEAN_TREE, "pkg/srt/broken.py": broken})
    code, findings = _findings(root)
    assert code == 1
    assert [(f["path"], f["rule"]) for f in findings] == [("pkg/srt/broken.py", "parse-error")]


def test_a_lazy_import_of_a_missing_module_says_pep_810(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/a.py": "lazy import pkg.gone\nlazy from pkg.b import absent\n",
             "pkg/b.py": "present = 1\n"}
    root = write_tree(tmp_path, files, config=None)
    proc = run_cli(["--src", str(root), "--root-package", "pkg", "--no-cache", "--format", "json"], cwd=root)
    assert "Traceback" not in proc.stderr, proc.stderr
    got = sorted((f["line"], f["rule"], f["message"]) for f in json.loads(proc.stdout)["findings"])
    assert [(line, rule) for line, rule, _ in got] == [(1, "missing-module"), (2, "missing-name")]
    assert all("lazy import (PEP 810)" in message for _, _, message in got)


# ------------------------------------------------------------------ the fallback reader itself

# Sources this Python's `ast` reads: LibCST's walk must give exactly the references `ast`'s does
# (the fallback only runs where `ast` fails, so this is where the two can be compared).
SAME_REFS = {
    "imports": "import pkg.a.b as c, os\nfrom pkg.a import (b,\n    c as d)\nfrom . import x\nfrom ..y import *\n",
    "flags": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.t\nelif x:\n    import pkg.e\n"
              "try:\n    import pkg.g\nexcept (OSError, ImportError):\n    import pkg.h\nelse:\n    import pkg.i\n"
              "finally:\n    import pkg.j\n"),
    "suppress": "import contextlib\nwith contextlib.suppress(ImportError), open('f') as fh:\n    from pkg.s import q\n",
    "functions": ("@dec('pkg.deco.target')\ndef f(a='pkg.default.x', *, b: 'pkg.ann.T' = None) -> 'pkg.ret.R':\n"
                  "    '''pkg.doc.string'''\n    import pkg.inner\n    class C(Base, metaclass=M):\n"
                  "        from pkg.cls import k\n    return lambda: __import__('pkg.lam')\n"),
    "strings": ("X = 'pkg.mod:attr'\nY = ('pkg.a.'\n     'b')\nZ = f'pkg.{n}'\nV = b'pkg.bytes.x'\n"
                "U = 'pkg.x' 'y.z'\n"),
    "dynamic": ("import importlib\nm = importlib.import_module('.sub', 'pkg.base')\n"
                "n = importlib.import_module('..up', package='pkg.base.deep')\no = __import__(*args)\n"),
    "loops_match": ("for i in ['pkg.loop.x']:\n    import pkg.l\nelse:\n    import pkg.m\nwhile 'pkg.w.x':\n"
                    "    import pkg.w\nmatch v:\n    case 'pkg.case.x':\n        import pkg.c\n"),
    "non_ascii": "é = 1; import pkg.after.accent\nnom = 'é'; s = 'pkg.str.after'\n",
    "semicolons_suites": "'''doc'''; import pkg.after.doc\nif x: import pkg.suite; from pkg import z\n",
    "climbing": "from ...... import far\n",
}
if sys.version_info >= (3, 12):  # (3.11's `ast` puts an f-string's constant at its `f`, 3.12's after the quote)
    SAME_REFS["fstring_constant"] = "W = f'pkg.f.s'\nT = f'{n:pkg.spec.x}'\n"



@pytest.mark.parametrize("name", sorted(SAME_REFS))
@pytest.mark.parametrize("hot", [None, [2, 3]])
def test_the_libcst_reader_gives_what_ast_gives(name, hot):
    source = SAME_REFS[name]
    want = scan_source(source.encode(), "pkg.base.mod", False, hot=hot)
    assert want.error is None and (want.refs or want.unresolved or name == "climbing")
    got = cst_scan.scan_module(source, "pkg.base.mod", False, hot)
    assert got.refs == want.refs
    assert got.unresolved == want.unresolved


def test_the_libcst_reader_marks_guards_lazy_keyword_and_headers_this_python_cannot_read():
    source = ("lazy import pkg.a\nlazy from . import b\ntry:\n    import pkg.g\nexcept ImportError, OSError:\n"
              "    pass\ntry:\n    import pkg.star\nexcept* ImportError:\n    pass\n")
    scan = scan_source(source.encode(), "pkg.base.mod", False)
    assert scan.error is None
    got = [(r.line, r.imported, r.name, r.lazy_keyword, r.guarded) for r in scan.refs]
    assert got == [(1, "pkg.a", None, True, False), (2, "pkg.base", "b", True, False),
                   (4, "pkg.g", None, False, True), (8, "pkg.star", None, False, True)]


# ------------------------------------------------------------------ `lazy` in the text passes

def test_the_text_passes_read_lazy_imports():
    data = b"lazy import pkg.gone.mod\nx = 1; lazy from pkg.other import name\nlazy from . import rel\n"
    statements, unsure = StatementReader(("pkg",)).read(data)
    assert [(s.line, s.kind, s.module, s.names) for s in statements] == [
        (1, "import", None, ("pkg.gone.mod",)), (3, "from", None, ("rel",))]
    assert unsure == [2]  # after `;`: left to the parser
    assert names_from_text("lazy from pkg.a import (b, c as d)") == ("b", "c")
    assert statement_names(["lazy from pkg.a import (", "    b,", ")"], 1) == ("b",)
    hot = RemovedPrefilter(("pkg.base.gone",)).hot_lines(
        b"lazy from .gone import x\nlazy from pkg.base import gone\nlazy from pkg.base import kept\n",
        "pkg.base.mod", False)
    assert hot == [1, 2]


def test_what_a_module_of_newer_syntax_binds_is_known_on_every_python(tmp_path):
    # `absent` is spelled in the module (in a string), so only its parse can say it is not bound.
    files = {"pkg/__init__.py": "",
             "pkg/b.py": ('type Vec = list[float]\nlazy from os import sep\ndef f[T](x: T) -> T:\n    return x\n'
                          'note = f"{ {"k": "absent"}["k"]}"\n'),
             "pkg/a.py": "from pkg.b import Vec, sep, f, note, absent\n"}
    root = write_tree(tmp_path, files, config=None)
    proc = run_cli(["--src", str(root), "--root-package", "pkg", "--no-cache", "--format", "json"], cwd=root)
    got = [(f["rule"], f["message"].split(" (")[0]) for f in json.loads(proc.stdout)["findings"]]
    assert got == [("missing-name", "`pkg.b` has no name `absent`")], proc.stdout + proc.stderr


def test_older_ast_keeps_the_names_a_newer_form_binds():
    tree = cst_scan.older_ast("type V[T] = list[T]\nlazy import a.b\nlazy from c import d as e\n"
                              "class C[T]: pass\ntry:\n    pass\nexcept* E as eg:\n    pass\n"
                              "try:\n    pass\nexcept A, B:\n    pass\ns = t'{x}'\n")
    assert tree is not None
    bound = sorted({t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets}
                   | {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
                   | {a.asname or a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                      for a in n.names})
    assert bound == ["C", "V", "a.b", "e", "s"]
    assert cst_scan.older_ast("def f(:\n    pass\n") is None
