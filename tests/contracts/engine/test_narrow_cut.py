"""A higher layer's file that keeps only its edges into the kernel package is scanned up to the
first top-level statement after its last line that may name the package (`reading.narrow_cut`):
the edges into the package are those of the whole file, a text cut in the wrong place is
scanned whole, and a syntax error after the cut is not looked for."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.engine.discover import discover
from contracts.engine.graph import EdgeScanner
from contracts.engine.prefilter import RemovedPrefilter, statement_start_after
from contracts.engine.reading import _prefixes, narrow_cut
from contracts.prefixes import PrefixIndex
from tests.contracts.conftest import run_cli, run_json


def _cut(text: str, at: str) -> int:
    return statement_start_after(text.encode(), text.index(at))


def test_the_cut_is_the_next_top_level_statement_after_the_line():
    text = "import a\nfrom pkg.k import x\n\n    y = 1\n# note\nz = 2\n"
    assert text[_cut(text, "pkg.k"):] == "z = 2\n"
    # A clause continues the statement before it; a decorator starts the next one.
    text = "try:\n    from pkg.k import x\nexcept ImportError:\n    x = None\n@dec\ndef f():\n    pass\n"
    assert text[_cut(text, "pkg.k"):].startswith("@dec\n")
    # The lines of a docstring are not statements (an odd count of triple quotes before them).
    text = 'x = 1\n"""Uses pkg.k.ops\nsee it\n"""\nclass C:\n    pass\n'
    assert text[_cut(text, "pkg.k"):].startswith("class C:")
    text = "x = 1\n'''pkg.k\nmore\n'''\ny = 2\n"
    assert text[_cut(text, "pkg.k"):] == "y = 2\n"
    # Nothing after: the whole text.
    text = "import os\nfrom pkg.k import x\n    \n"
    assert _cut(text, "pkg.k") == len(text.encode())


def _narrow_tree(root, body: str, where: str = "pkg/srt/m.py"):
    files = {"pkg/__init__.py": "", "pkg/k/__init__.py": "", "pkg/k/ops/__init__.py": "", "pkg/k/ops/a.py": "",
             "pkg/other/__init__.py": "", "pkg/other/x.py": "", where: body}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode() if isinstance(text, str) else text)
    disc = discover(str(root), ("pkg",))
    return disc, next(f for f in disc.files if f.rel == where)


def _scan(root, disc, files, memory=None):
    return EdgeScanner(disc.by_module, {"pkg": str(root / "pkg")}).scan_into(files, PrefixIndex(["pkg.k"]),
                                                                             frozenset(), memory)


def _memory(f, data: bytes):
    cut = narrow_cut(data, f, RemovedPrefilter(["pkg.k"]))
    return cut, _prefixes([f], {} if cut is None else {f.rel: cut}, {f.rel: data})


# Top-level pieces, each whole Python: imports of the package in every place the rules read them,
# the shapes around them that a cut must not break, and text that only looks like an import.
_PIECES = [
    "from pkg.k.ops import a\n", "import pkg.k.ops.a as z\n", "from pkg import k\n", "from .. import k\n",
    "from ..k.ops import a\n", "import os\n", "from pkg.other import x\n", "x = 1\n",
    "try:\n    from pkg.k.ops import a\nexcept ImportError:\n    a = None\nelse:\n    pass\nfinally:\n    pass\n",
    "if TYPE_CHECKING:\n    import pkg.k.ops\nelif X:\n    pass\n",
    "def f():\n    from pkg.k.ops.a import thing\n    return thing\n",
    "@decorator(\n    'pkg.k.ops.a'\n)\ndef g():\n    pass\n",
    "class C:\n    \"\"\"Docs: from pkg.k.ops import a\n\nimport pkg.k.ops\n\"\"\"\n    y = 2\n",
    "S = '''\nfrom pkg.k.ops import a\nz = 1\n'''\n",
    "from pkg.k.ops import (\n    a,\n)\n", "from pkg.k.ops import \\\n    a\n",
    "T = (\n1,\n)\n", "D = {\nkey: 1 for key in ()\n}\n", "# from pkg.k.ops import a\n",
    "x = 'pkg.k.ops.a'\n", "u = [\n    'pkg.k'\n]\n",
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=10), broken_tail=st.booleans())
def test_the_text_before_the_cut_gives_the_whole_files_edges_into_the_package(tmp_path_factory, pieces,
                                                                              broken_tail):
    """Whatever the shapes, the edges into the package of the cut text are those of the whole
    file; a syntax error after the last piece is not seen through the cut."""
    import ast

    root = tmp_path_factory.mktemp("cut")
    body = "".join(pieces)
    disc, f = _narrow_tree(root, body + ("def broken(:\n    pass\n" if broken_tail else ""))
    data = open(f.path, "rb").read()
    cut, memory = _memory(f, data)
    whole_root = tmp_path_factory.mktemp("whole")
    whole_disc, whole_f = _narrow_tree(whole_root, body)
    whole, whole_failed = _scan(whole_root, whole_disc, [whole_f])
    assert not whole_failed
    got, failed = _scan(root, disc, [f], memory)
    try:
        cut_parses = memory is not None and bool(ast.parse(memory[f.module]))
    except SyntaxError:
        cut_parses = False
    if broken_tail and not cut_parses:  # scanned whole: the file does not parse
        assert failed.keys() == {f.module} and not got
    else:
        assert not failed
        assert got == whole


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_syntax_error_after_the_cut_is_not_reported_and_one_before_it_is(tree, jobs):
    root = tree({
        # The private import is a finding; the error after the file's last statement naming the
        # package cannot hide one.
        "pkg/srt/after.py": "from pkg.kernels.ops.kvcache.hicache import _private_helper\n\ndef f(:\n    pass\n",
        "pkg/srt/before.py": "def f(:\n    pass\nfrom pkg.kernels.ops.kvcache.hicache import _private_helper\n",
        "pkg/srt/inside.py": "def f():\n    from pkg.kernels.ops.kvcache.hicache import _private_helper\n    x = (\n",
    })
    if jobs == 1:
        _, report = run_json(root, "--jobs", "1")
    else:  # (forked in a process of its own: this one may have run grimp's threads)
        proc = run_cli(["--config", str(root / ".importlinter"), "--no-cache", "--format", "json", "--jobs", "2"],
                       cwd=root)
        report = json.loads(proc.stdout)
    by_path = {}
    for finding in report["findings"]:
        by_path.setdefault(finding["path"], []).append(finding["rule"])
    assert by_path["pkg/srt/after.py"] == ["private-import"]
    assert by_path["pkg/srt/before.py"] == ["parse-error"]
    assert by_path["pkg/srt/inside.py"] == ["parse-error"]


def test_a_cut_inside_a_string_or_a_statement_scans_the_whole_file(tmp_path, monkeypatch):
    """A text that does not parse from where it was cut is no answer: the file is scanned whole,
    from disk; past two of them, every file left is (each one costs a scan of the rest)."""
    from contracts.engine import prefilter

    bodies = {f"pkg/srt/m{i}.py": f"from pkg.k.ops import a\nX{i} = '''\nthe cut\n'''\ny = 1\n" for i in range(5)}
    bodies["pkg/srt/fine.py"] = "import pkg.k.ops.a\nz = 2\n"
    disc, _ = _narrow_tree(tmp_path, "", where="pkg/srt/empty.py")
    for rel, text in bodies.items():
        (tmp_path / rel).write_text(text)
    disc = discover(str(tmp_path), ("pkg",))
    files = [f for f in disc.files if f.rel in bodies]
    real = prefilter.statement_start_after
    # Cut at the line inside the string in the m-files, where the parse must fail.
    monkeypatch.setattr(prefilter, "statement_start_after",
                        lambda data, offset: data.find(b"the cut") if b"the cut" in data else real(data, offset))
    texts = {f.rel: open(f.path, "rb").read() for f in files}
    cuts = {f.rel: narrow_cut(texts[f.rel], f, RemovedPrefilter(["pkg.k"])) for f in files}
    assert all(cuts[rel] is not None for rel in bodies)
    memory = _prefixes(files, cuts, texts)
    got, failed = _scan(tmp_path, disc, files, memory)
    whole, whole_failed = _scan(tmp_path, disc, files)
    assert not failed and not whole_failed
    assert got == whole and set(got) == {f.module for f in files}


def test_without_grimps_in_memory_file_system_every_file_is_read_whole(tmp_path, monkeypatch):
    from contracts.engine import graph

    disc, f = _narrow_tree(tmp_path, "from pkg.k.ops import a\ny = 1\ndef broken(:\n")
    _, memory = _memory(f, open(f.path, "rb").read())
    assert memory
    api, native = graph.scanner_api, graph._native_module

    class Without:
        def __init__(self, rust):
            self._rust = rust

        def __getattr__(self, name):
            if name == "FakeBasicFileSystem":
                raise AttributeError(name)
            return getattr(self._rust, name)

    monkeypatch.setattr(graph, "scanner_api", lambda: (Without(api()[0]), *api()[1:]))
    monkeypatch.setattr(graph, "_native_module", lambda: Without(native()))
    got, failed = _scan(tmp_path, disc, [f], memory)
    assert not got and "syntax error, line 3" in failed[f.module]
