"""grimp's native scanner as the engine calls it (`grimp_adapter.py`, the only module that imports
grimp): asked for a file's syntax alone, it says what a scan for edges says; where grimp's
scanner is missing, changed or not installed, the run reads the files with `ast`, finds the same,
and says that it fell back."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.engine.discover import discover
from contracts.engine.graph import EdgeScanner
from tests.contracts.conftest import REPO

_FILES = {
    "pkg/__init__.py": "",
    "pkg/a.py": "from pkg import b\nimport pkg.c.d\nx = 1\n",
    "pkg/b.py": "def f(:\n    pass\n",  # a syntax error
    "pkg/c/__init__.py": "from . import d\n",
    "pkg/c/d.py": "import os\nfrom ..a import x\n",
    "pkg/e.py": "match = 1\nclass C:\n    def m(self):\n        import pkg.a\n",
    "pkg/f.py": "x = (\n",  # never closed
    "pkg/g.py": "# -*- coding: latin-1 -*-\nimport pkg.a\n",  # read with ast (a declared encoding)
}


def _tree(tmp_path):
    for rel, text in _FILES.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="latin-1")
    disc = discover(str(tmp_path), ("pkg",))
    return disc.files, disc.by_module, {"pkg": str(tmp_path / "pkg")}


def test_a_scan_for_syntax_alone_parses_and_rejects_what_a_scan_for_edges_does(tmp_path):
    files, known, roots = _tree(tmp_path)
    decoded = frozenset({"pkg.g"})
    edges, failed = EdgeScanner(known, roots).scan(files, decoded)
    alone_edges, alone_failed = EdgeScanner(known, roots).scan(files, decoded, syntax_only=True)
    assert set(alone_edges) == set(edges) == {"pkg", "pkg.a", "pkg.c", "pkg.c.d", "pkg.e", "pkg.g"}
    assert alone_failed.keys() == failed.keys() == {"pkg.b", "pkg.f"}
    assert alone_failed["pkg.b"] == failed["pkg.b"] and "line 1" in failed["pkg.b"]
    assert {imported for imported, *_ in edges["pkg.a"]} == {"pkg.b", "pkg.c.d"}
    # Told of one file, the scanner resolves its imports against that file alone.
    single, _ = EdgeScanner(known, roots).scan([known["pkg.a"]], syntax_only=True)
    assert single == {"pkg.a": []}


def test_one_module_of_the_package_imports_grimp():
    import ast

    package = REPO / "contracts"
    importers = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n == "grimp" or n.startswith("grimp.") for n in names):
                importers.add(path.relative_to(REPO).as_posix())
    assert importers == {"contracts/engine/grimp_adapter.py"}


def test_the_declared_grimp_range_is_the_adapters():
    from contracts.engine import grimp_adapter

    setup = (REPO / "setup.cfg").read_text()
    assert f"grimp{grimp_adapter.TESTED_TEXT}\n" in setup
    lowest, above = grimp_adapter.TESTED
    assert grimp_adapter.TESTED_TEXT == f">={'.'.join(map(str, lowest))},<{'.'.join(map(str, above))}"
    assert grimp_adapter.version_problem() is None  # the installed grimp is one of them


# Simulated grimps, set up in the run's process before the check: the scanner function grimp's
# own graph build calls (`grimp._rustgrimp.scan_for_imports`) removed, or taking a renamed keyword.
_SIMULATED = {
    "real": "",
    "missing": "import grimp._rustgrimp as rust\ndel rust.scan_for_imports\n",
    "renamed": ("import grimp._rustgrimp as rust\nreal = rust.scan_for_imports\n"
                "def scan_for_imports(*, module_files, found_packages, include_external_packages,\n"
                "                     exclude_type_checking_imports, file_systems):\n"
                "    return real(module_files=module_files, found_packages=found_packages,\n"
                "                include_external_packages=include_external_packages,\n"
                "                exclude_type_checking_imports=exclude_type_checking_imports, file_system=file_systems)\n"
                "rust.scan_for_imports = scan_for_imports\n"),
    "old": "import grimp\ngrimp.__version__ = '3.5'\n",
    "absent": "import sys\nsys.modules['grimp'] = None\n",
}


def _run_simulated(root, grimp: str, *args: str) -> subprocess.CompletedProcess:
    code = (_SIMULATED[grimp] + "import sys\nfrom contracts.cli import main\n"
            f"sys.exit(main(['--config', '.importlinter', '--no-cache', '--format', 'json', *{list(args)!r}]))\n")
    env = {k: v for k, v in os.environ.items() if k != "NAMESPACE_LINT_JOBS"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("grimp", ["missing", "renamed", "old", "absent"])
def test_a_grimp_whose_scanner_is_missing_or_changed_gives_the_same_findings_and_says_it_fell_back(tree, grimp):
    from .test_parallel import _generated

    root = tree(_generated(tree))
    real = _run_simulated(root, "real", "--jobs", "2")
    assert real.returncode == 1, real.stderr
    assert "native scanner" not in real.stderr
    for jobs in ("1", "2"):
        proc = _run_simulated(root, grimp, "--jobs", jobs)
        assert proc.returncode == 1, proc.stderr
        assert json.loads(proc.stdout) == json.loads(real.stdout)
        # Once, on stderr: the run cost more time than it would have.
        assert proc.stderr.count("grimp's native scanner not used") == 1, proc.stderr
        assert "read with `ast` instead" in proc.stderr
        why = {"missing": "scan_for_imports", "renamed": "file_system", "old": "outside the tested range",
               "absent": "cannot be imported"}[grimp]
        assert why in proc.stderr, proc.stderr
    # Under -q the findings alone; under -v the reason, whatever it cost.
    quiet = _run_simulated(root, grimp, "-q")
    assert "native scanner" not in quiet.stderr and json.loads(quiet.stdout) == json.loads(real.stdout)
    verbose = _run_simulated(root, grimp, "-v")
    assert verbose.stderr.count("grimp's native scanner not used") == 1, verbose.stderr


def test_without_a_usable_grimp_a_two_process_run_reads_with_ast_and_finds_the_same(tree):
    from tests.contracts.engine.test_parallel import _generated

    root = tree(_generated(tree))
    code = (
        "import json, sys\n"
        "from contracts import config\n"
        "from contracts.check import run\n"
        "from contracts.engine import graph\n"
        "if sys.argv[1] == 'broken':\n"
        "    sys.modules['grimp'] = None  # (no grimp to import, here or in a forked child)\n"
        "result = run(config.load('.importlinter'), '.', jobs=2)\n"
        "print(json.dumps(sorted((f.path, f.line, f.rule, f.message) for f in result.findings)))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = {}
    for mode in ("whole", "broken"):
        proc = subprocess.run([sys.executable, "-c", code, mode], cwd=root, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out[mode] = proc.stdout
    assert out["broken"] == out["whole"]
    assert {"removed-module", "layer", "parse-error"} <= {f[2] for f in json.loads(out["whole"])}


# Statements importing names from the kernel package, and the shapes around them that could fool
# a search for the line grimp reports: the same text earlier (a docstring, another function), a
# parenthesized list running to the end of the file, indentation, a final line without newline.
_NAME_PIECES = [
    "from pkg.k.ops import (\n    a,\n    b,  # why\n)\n",
    '"""\nfrom pkg.k.ops import (\n"""\n',
    "def f():\n    from pkg.k.ops import (c,\n        d)\n",
    "def g():\n    from pkg.k.ops import (c,\n        e)\n",
    "from pkg.k.ops import x; from pkg.k.ops import (y,\n z)\n",
    "from pkg.k.ops import \\\n    w\n",
    "from pkg.k import ops\n",
    "import pkg.k.ops\n",
    "\n",
    "from pkg.k.ops import (p,\n",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(_NAME_PIECES), min_size=1, max_size=8), bare_end=st.booleans())
def test_names_read_off_the_reported_line_on_are_those_of_the_whole_file(tmp_path_factory, pieces, bare_end):
    from contracts.engine.reading import _names_for
    from contracts.prefixes import PrefixIndex

    root = tmp_path_factory.mktemp("names")
    text = "".join(pieces)
    if bare_end:
        text = text.rstrip("\n")
    files = {"pkg/__init__.py": "", "pkg/k/__init__.py": "", "pkg/k/ops/__init__.py": "", "pkg/m.py": text}
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    disc = discover(str(root), ("pkg",))
    edges, failed = EdgeScanner(disc.by_module, {"pkg": str(root / "pkg")}).scan([disc.by_module["pkg.m"]])
    if "pkg.m" in failed:
        return  # not Python: no names to read
    f = disc.by_module["pkg.m"]
    index = PrefixIndex(["pkg.k"])
    # With the file's bytes: the lines from the reported one on; without: every line of the file.
    assert _names_for(f, edges["pkg.m"], index, text.encode()) == _names_for(f, edges["pkg.m"], index, None)


# Files of the higher layer (`pkg.srt`, no `__init__.py`) naming the kernel package in every form
# the rules read, and the shapes around them: each keeps only its edges into the package.
_HIGHER = {
    "pkg/srt/a.py": "from pkg.kernels.ops.kvcache.hicache import _private_helper, transfer\nimport pkg.srt.b\n",
    "pkg/srt/b.py": "import pkg.kernels.ops.gemm.fused_a_gemm as g\nfrom pkg.srt import a\n",
    "pkg/srt/c.py": "def lazy():\n    from pkg.kernels.ops import (\n        gemm,\n        nosuchgroup,\n    )\n",
    "pkg/srt/d.py": "from ..kernels.ops.layernorm import norm\n",  # relative, from a namespace directory
    # A syntax error before its import of the package (one after it is reported too:
    # `test_narrow_cut.py`).
    "pkg/srt/e.py": "def f(:\nfrom pkg.kernels.ops.layernorm.norm import rmsnorm\n",
    "pkg/srt/f.py": "from pkg import kernels\nfrom pkg.kernels.ops.unknown import x\n",
    "pkg/srt/g.py": "# -*- coding: latin-1 -*-\nfrom pkg.kernels.ops.kvcache.hicache import _private_helper\n",
    "pkg/srt/h.py": "from pkg.jit_kernel import hicache\nfrom pkg.kernels.ops.gemm import fused_a_gemm\n",
    "pkg/srt/i.py": "if True:\n    import pkg.kernels.ops.kvcache.hicache, pkg.srt.a\n",
    "pkg/kernels/ops/gemm/uses_srt.py": "from pkg.srt import a\n",
    # A middle layer (with `_THREE_LAYERS`): above the kernels, below the runtime, so its own
    # imports of the runtime are findings; it keeps every edge.
    "pkg/mid/__init__.py": "",
    "pkg/mid/x.py": "from pkg.kernels.ops.gemm import fused_a_gemm\nimport pkg.srt.a\n",
}


def _findings(root, cfg):
    from contracts.check import run

    return sorted((f.path, f.line, f.col, f.rule, f.imported, f.message) for f in run(cfg, str(root), jobs=1).findings)


@pytest.mark.parametrize("three_layers", [False, True])
def test_a_higher_layers_files_keep_their_edges_into_the_kernel_package_with_the_same_findings(tree, monkeypatch,
                                                                                               three_layers):
    """`ScanPlan.narrow`: the files of `pkg.srt` that may name `pkg.kernels` are scanned for
    their imports of it alone (`EdgeScanner.scan_into`), and the findings are those of a scan of
    every edge: private imports, unknown groups, names over several lines, a relative import, a
    syntax error, a declared encoding, a removed module beside it, a chain through the layer."""
    from contracts import config as config_mod
    from contracts.check import plan_for
    from contracts.engine import records
    from tests.contracts.conftest import BASE_CONFIG

    config = BASE_CONFIG.replace("    pkg.srt\n    pkg.kernels\n", "    pkg.srt\n    pkg.mid\n    pkg.kernels\n") \
        if three_layers else BASE_CONFIG
    root = tree(_HIGHER, config=config)
    cfg = config_mod.load(str(root / ".importlinter"))
    plan = plan_for(cfg)
    assert plan.narrow
    assert plan.narrow_file("pkg.mid.x", records.GRAPH) is False
    assert plan.narrow_file("pkg.srt.a", records.GRAPH) and not plan.narrow_file("pkg.kernels.ops.gemm", records.GRAPH)
    assert not plan.narrow_file("pkg.srt.h", records.GRAPH | records.AST)
    narrowed = _findings(root, cfg)
    monkeypatch.setattr(records.ScanPlan, "narrow_file", lambda self, module, flags: False)
    assert narrowed == _findings(root, cfg)
    rules = {f[3] for f in narrowed}
    assert {"private-import", "parse-error", "removed-module", "layer"} <= rules
    assert "pkg/srt/a.py" in {f[0] for f in narrowed if f[3] == "private-import"}
    if three_layers:
        assert any(f[0] == "pkg/mid/x.py" and f[3] == "layer" and f[4] == "pkg.srt.a" for f in narrowed)
    assert any(f[0] == "pkg/srt/e.py" and f[3] == "parse-error" for f in narrowed)


def test_no_file_is_narrowed_where_a_contract_ignores_imports_or_no_layer_stops_the_closure(tree):
    from contracts import config as config_mod
    from contracts.check import plan_for
    from tests.contracts.conftest import BASE_CONFIG

    ignoring = BASE_CONFIG.replace("    pkg.jit_kernel\nreplacements", "    pkg.jit_kernel\nignore_imports =\n    pkg.srt.a -> pkg.srt.b\nreplacements")
    assert "ignore_imports" in ignoring
    no_layer = BASE_CONFIG.split("[importlinter:contract:layer]")[0]
    for text, narrow in ((BASE_CONFIG, True), (ignoring, False), (no_layer, False)):
        root = tree(config=text)
        assert plan_for(config_mod.load(str(root / ".importlinter"))).narrow is narrow


_INTO_PIECES = [
    "from pkg.k.ops import a, b as c\n", "from pkg.k import ops\n", "import pkg.k.ops.a\n", "import pkg.k.ops.a as z\n",
    "from pkg import k\n", "from pkg import other\n", "import pkg.other.x\n", "from pkg.other import y\n",
    "from . import other\n", "from .other import y\n", "from .k.ops import a\n", "from .. import k\n",
    "def f():\n    from pkg.k.ops.a import thing\n", "if X:\n    import pkg.k.ops\n", "import os, pkg.k.ops.a\n",
    "from pkg.k.ops import (\n    a,\n    nosuch,\n)\n", "from pkg.k.ops.a import *\n", "x = 'from pkg.k import ops'\n",
    "try:\n    from pkg.k.gone import q\nexcept ImportError:\n    pass\n",
]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(_INTO_PIECES), min_size=1, max_size=8),
       where=st.sampled_from(["pkg/m.py", "pkg/sub/m.py", "pkg/sub/__init__.py", "pkg/k/ops/m.py"]))
def test_a_scan_into_a_package_gives_the_whole_scans_edges_into_it(tmp_path_factory, pieces, where):
    """`scan_into` resolves each import against the package's modules and the scanned files
    alone: the edges into the package are those of a scan against every module of the tree."""
    from contracts.prefixes import PrefixIndex

    root = tmp_path_factory.mktemp("into")
    files = {"pkg/__init__.py": "", "pkg/k/__init__.py": "", "pkg/k/ops/__init__.py": "", "pkg/k/ops/a.py": "",
             "pkg/other/__init__.py": "", "pkg/other/x.py": "", "pkg/sub/__init__.py": "", where: "".join(pieces)}
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    disc = discover(str(root), ("pkg",))
    module = next(f.module for f in disc.files if f.rel == where)
    scanner = EdgeScanner(disc.by_module, {"pkg": str(root / "pkg")})
    index = PrefixIndex(["pkg.k"])
    whole, whole_failed = scanner.scan([disc.by_module[module]])
    into, into_failed = EdgeScanner(disc.by_module, {"pkg": str(root / "pkg")}).scan_into([disc.by_module[module]], index)
    assert into_failed == whole_failed
    assert into.get(module) == (None if module not in whole else
                                [e for e in whole[module] if index.longest_of(e[0]) is not None])


def test_names_are_kept_for_the_edges_into_a_group_from_outside_it_alone():
    """`ScanPlan.name_prefixes`: `private-import` reads the names of an edge into a group from
    another group or from outside the container; a group's imports of itself keep none."""
    from contracts.engine.discover import SourceFile
    from contracts.engine.reading import _names_for, _one_child
    from contracts.prefixes import PrefixIndex

    assert _one_child("c.ops.gemm.x", "c.ops.gemm._y", "c.ops")
    assert _one_child("c.ops.gemm", "c.ops.gemm.y", "c.ops")
    assert not _one_child("c.ops.gemm.x", "c.ops.moe.y", "c.ops")
    assert not _one_child("c.srt.x", "c.ops.gemm.y", "c.ops")
    assert not _one_child("c.ops", "c.ops.gemm", "c.ops") and not _one_child("c.opsx.a", "c.opsx.a", "c.ops")
    index = PrefixIndex(["c.ops"])
    edges = [("c.ops.gemm._y", 1, "from c.ops.gemm._y import _z"), ("c.ops.moe", 2, "from c.ops.moe import _w")]
    inside = SourceFile("/r/c/ops/gemm/x.py", "c/ops/gemm/x.py", "c.ops.gemm.x", False, 0, 0)
    outside = SourceFile("/r/c/srt/x.py", "c/srt/x.py", "c.srt.x", False, 0, 0)
    assert _names_for(inside, edges, index) == {2: ("_w",)}
    assert _names_for(outside, edges, index) == {1: ("_z",), 2: ("_w",)}


def test_without_a_usable_grimp_a_higher_layers_files_are_read_with_ast_and_find_the_same(tree, monkeypatch):
    """The files that keep only their edges into the kernel package go to `ast` too where grimp
    cannot be used: the same findings, no crash."""
    from contracts import config as config_mod
    from contracts.engine import graph
    from contracts.prefixes import PrefixIndex

    root = tree(_HIGHER)
    cfg = config_mod.load(str(root / ".importlinter"))

    def found():  # (a parse error's words are each parser's own)
        return [f[:5] + (("",) if f[3] == "parse-error" else f[5:]) for f in _findings(root, cfg)]

    whole = found()

    disc = discover(str(root), ("pkg",))
    narrow = [f for f in disc.files if f.rel.startswith("pkg/srt/") and f.rel != "pkg/srt/g.py"]
    index = PrefixIndex(["pkg.kernels"])
    native = EdgeScanner(disc.by_module, {"pkg": str(root / "pkg")}).scan_into(narrow, index)
    monkeypatch.setattr(graph, "native_adapter", lambda: None)
    assert found() == whole
    assert {"private-import", "parse-error"} <= {f[3] for f in whole}
    # A scanner whose first call is for such files alone (a process that read no other graph
    # file): `ast` answers for every file. (Its resolution of an import of a missing module is
    # the nearest one above, where grimp's drops it: `pkg/srt/f.py`.)
    by_ast = EdgeScanner(disc.by_module, {"pkg": str(root / "pkg")}).scan_into(narrow, index)
    assert by_ast[0].keys() == native[0].keys() and by_ast[1].keys() == native[1].keys()
    assert {m: e for m, e in by_ast[0].items() if m != "pkg.srt.f"} == {m: e for m, e in native[0].items() if m != "pkg.srt.f"}


def test_the_lint_imports_face_says_once_that_it_fell_back(tree):
    """`lint-imports` runs the same engine: with a grimp outside the adapter's tested range (one
    whose scanner is gone would stop import-linter's own graph first) its findings are the real
    grimp's, and it says once on stderr why files were read more slowly."""
    from .test_parallel import _generated

    root = tree(_generated(tree))

    def lint_imports(grimp: str) -> subprocess.CompletedProcess:
        code = (_SIMULATED[grimp] + "import sys\nfrom importlinter.cli import lint_imports\n"
                "sys.argv = ['lint-imports', '--no-cache']  # (this tool's cache too: each run is cold)\n"
                "sys.exit(lint_imports(config_filename='.importlinter', no_cache=True))\n")
        env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="400")
        return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                              timeout=300)

    real, missing = lint_imports("real"), lint_imports("old")
    assert "native scanner" not in real.stderr, real.stderr
    assert missing.returncode == real.returncode == 1, missing.stderr
    assert missing.stdout == real.stdout
    assert missing.stderr.count("grimp's native scanner not used") == 1, missing.stderr
    assert "outside the tested range" in missing.stderr and "read with `ast` instead" in missing.stderr


def test_a_builds_fallback_note_is_not_the_next_builds():
    """What one build noted of its own scans (a batch grimp failed on) is not reported by the next
    build in the same process; a scanner that cannot be used at all stays so, and says why."""
    from contracts.engine import graph as graph_mod

    state = graph_mod._FALLBACK
    saved = (state.reason, state.files, state.adapter, state.stopped)
    try:
        state.note("grimp's scanner failed (UnicodeError: one file)")
        state.files = 3
        graph_mod.EdgeScanner({}, {})
        assert graph_mod.native_fallback() == (None, 0)
        state.stop("grimp 3.5 is outside the tested range")
        graph_mod.EdgeScanner({}, {})
        assert graph_mod.native_fallback() == ("grimp 3.5 is outside the tested range", 0)
    finally:
        state.reason, state.files, state.adapter, state.stopped = saved
