"""grimp's native scanner as the engine calls it: asked for a file's syntax alone, it says what a
scan for edges says; loaded without grimp's package `__init__`, grimp is whole for whoever uses
it afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.engine.discover import discover
from contracts.engine.graph import EdgeScanner

from .conftest import REPO

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


def test_grimp_loaded_for_the_scanner_is_whole_for_whoever_imports_it_next(tmp_path):
    for rel, text in _FILES.items():
        if rel in ("pkg/__init__.py", "pkg/a.py", "pkg/c/__init__.py", "pkg/c/d.py"):
            path = tmp_path / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    code = (
        "import sys\n"
        "from contracts.engine.graph import scanner_api\n"
        "rust, FoundPackage, ModuleFile, Module = scanner_api()\n"
        "assert 'grimp.main' not in sys.modules, sorted(m for m in sys.modules if 'grimp' in m)\n"
        "import grimp, threading\n"
        "seen = []\n"
        "threads = [threading.Thread(target=lambda: seen.append(callable(grimp.build_graph))) for _ in range(4)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "assert seen == [True] * 4, seen  # (threads asking at once all wait for the one that loads it)\n"
        "assert not hasattr(grimp, 'no_such_name')\n"
        "from grimp import build_graph, ImportGraph\n"
        "assert grimp.Module is Module and isinstance(grimp.__version__, str)\n"
        "graph = build_graph('pkg', cache_dir=None)\n"
        "assert isinstance(graph, ImportGraph)\n"
        "print(sorted(graph.find_modules_directly_imported_by('pkg.a')))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(tmp_path)]))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['pkg', 'pkg.c.d']"  # (`pkg.b` is not in this tree)


def test_without_a_usable_grimp_a_two_process_run_reads_with_ast_and_finds_the_same(tree):
    from .test_parallel import _generated

    root = tree(_generated(tree))
    code = (
        "import json, sys\n"
        "from contracts import config\n"
        "from contracts.check import run\n"
        "from contracts.engine import graph\n"
        "if sys.argv[1] == 'broken':\n"
        "    def broken():\n"
        "        raise ImportError('no grimp here')\n"
        "    graph.scanner_classes = broken  # (a forked child inherits it)\n"
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
