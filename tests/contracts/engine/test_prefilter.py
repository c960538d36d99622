"""The byte-level prefilter (`engine/prefilter.py`) hides nothing a full `ast` pass finds.

1. Generated files (hypothesis): imports of every form, relative imports, string targets (whole,
   `module:attr`, split by implicit concatenation over lines and comments), dynamic imports,
   prose, decoys that share text with a removed prefix, nested in functions, classes and
   `if TYPE_CHECKING:` blocks, with several removed prefixes at different depths (one inside
   another). The references the fast path finds (hot lines -> windowed ast) equal those of the
   full pass (every statement of the whole file), through the rule's own filter.
2. The implicitly concatenated target of upstream's tests, end to end.
3. A generated tree shaped like sglang 0.5.17 minus the 174 modules 0.5.23 no longer has: 174
   prefixes, 537 references in every form amid decoys; the count is pinned and equals a run
   in which every line of every file is hot.
"""

from __future__ import annotations

import ast
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contracts import check
from contracts import config as config_mod
from contracts.check import run
from contracts.config import RemovedSpec
from contracts.engine import reading as reading_mod
from contracts.engine import source_text
from contracts.engine.discover import Discovery, SourceFile
from contracts.engine.model import Model, build_model
from contracts.engine.prefilter import Mentions, RemovedPrefilter, _rarest, joint_hits
from contracts.engine.reading import file_refs
from contracts.engine.resolve import is_under_any, matches_after, resolve_relative
from contracts.engine.scan import scan_source, searchable
from contracts.rules import removed_module

PREFIXES = ("pkg.old", "pkg.srt.gone", "pkg.srt.layers.dead", "pkg.a.b.c", "pkg.srt.layers.dead.sub")
SPEC = RemovedSpec("removed", "removed", PREFIXES, (("pkg.old.x", "pkg.new.x"),))

UNDER = ["pkg.old", "pkg.old.x", "pkg.old.x.y", "pkg.srt.gone", "pkg.srt.gone.f", "pkg.srt.layers.dead",
         "pkg.srt.layers.dead.sub.q", "pkg.a.b.c", "pkg.a.b.c.d"]
ANCESTORS = ["pkg", "pkg.srt", "pkg.srt.layers", "pkg.a", "pkg.a.b"]
DECOYS = ["pkg.olden", "pkg.old_x", "pkg.srt.gone2", "pkg.srt.layers.deadly", "pkg.a.bc", "pkg.kept.mod",
          "other.old", "xpkg.old", "pkg.srt.layers.dea"]
PATHS = st.sampled_from(UNDER + ANCESTORS + DECOYS)
CHILD = {"pkg": "old", "pkg.srt": "gone", "pkg.srt.layers": "dead", "pkg.a": "b", "pkg.a.b": "c"}  # base.child
NAMES = st.sampled_from(["old", "gone", "dead", "c", "x", "f", "olden", "fine", "sub", "b", "*"])
# (module, is_package) of the generated file: where its relative imports lead.
PLACES = [("pkg.mod", False), ("pkg.srt.layers", True), ("pkg.srt.layers.fuzzed", False),
          ("pkg.a.b.m", False), ("pkg.srt.x.y", False)]


@st.composite
def names_list(draw, multiline=False):
    names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    if "*" in names:
        return "*"
    items = [f"{n} as al{i}" if draw(st.booleans()) else n for i, n in enumerate(names)]
    if multiline:
        return "(\n    " + ",  # note pkg.old\n    ".join(items) + ",\n)"
    return ", ".join(items)


@st.composite
def string_target(draw):
    path = draw(st.one_of(st.sampled_from(UNDER), PATHS))  # mostly strings that are references
    if draw(st.booleans()):
        path += ":" + draw(st.sampled_from(["fn", "Cls.meth"]))
    q = draw(st.sampled_from(['"', "'"]))
    form = draw(st.sampled_from(["plain", "split", "split", "fstring", "bytes"]))
    if form == "split" and len(path) > 3:
        at = draw(st.integers(3, len(path) - 1))  # after the root package name
        sep = draw(st.sampled_from([" ", "\n    ", "  # a comment\n    ", " \\\n    "]))
        return f"patch({q}{path[:at]}{q}{sep}{q}{path[at:]}{q})"
    if form == "fstring":
        return f"f{q}{path}{q}"
    if form == "bytes":
        return f"b{q}{path}{q}"
    return f"{q}{path}{q}"


@st.composite
def statement(draw):
    kind = draw(st.sampled_from(["import", "from", "from_ml", "from_bs", "rel", "str", "str", "dyn", "prose",
                                 "attr", "odd"]))
    path = draw(PATHS)
    if kind == "odd":  # a dotted name written in pieces: blanks, a continuation, the base below
        head, _, tail = draw(st.sampled_from(UNDER[1:] + ANCESTORS[1:])).partition(".")
        base = draw(st.sampled_from(ANCESTORS))
        return draw(st.sampled_from([
            f"import {head} .{tail}", f"import {head}. {tail}", f"import {head}.\\\n    {tail}",
            f"from {head} . {tail} import {draw(NAMES)}",
            f"from \\\n    {base} import {draw(st.sampled_from([CHILD[base], 'fine']))}"]))
    if kind == "import":
        alias = " as al" if draw(st.booleans()) else ""
        return draw(st.sampled_from([f"import {path}{alias}", f"import os, {path}{alias}"]))
    if kind == "from":
        return f"from {path} import {draw(names_list())}"
    if kind == "from_ml":
        return f"from {path} import {draw(names_list(multiline=True))}"
    if kind == "from_bs":
        return draw(st.sampled_from([f"from {path} \\\n    import {draw(NAMES)}",
                                     f"from \\\n    {path} import {draw(NAMES)}"]))
    if kind == "rel":
        dots = "." * draw(st.integers(1, 3))
        rel = draw(st.sampled_from(["", "old", "gone", "layers.dead", "dead", "x", "b.c", "c"]))
        return f"from {dots}{rel} import {draw(names_list(multiline=draw(st.booleans())))}"
    if kind == "str":
        return f"target = {draw(string_target())}"
    if kind == "dyn":
        rel = draw(st.sampled_from(["old", "gone", "dead", "c"]))
        # (a package that neither is nor begins a prefix still leads under one with `..`)
        package = draw(st.sampled_from(ANCESTORS + ["pkg.srt.layers.dead", "pkg.kept.mod", "pkg.srt.x"]))
        return draw(st.sampled_from([
            f"importlib.import_module('{path}')", f"__import__(\"{path}\")",
            f"import_module('.{rel}', '{package}')", f"import_module('..{rel}', package='{package}')"]))
    if kind == "prose":
        return draw(st.sampled_from([f"# see {path} and from {path} import x", f'"""Moved from {path}."""',
                                     f"x = 'read it from {path}'", f'"""python -m {path} \\\n    --flag"""',
                                     f"x = ('{path}.', 'y')", f"x = '{path}. Next'", f"x = f'{path}.{{name}}'",
                                     f"x = '{path}.' + name", f"x = '{path}.' 'old'", f"x = '{path}.' \\\n  'gone'"]))
    return f"value = {path}.attr"


@st.composite
def source(draw):
    # (No `import importlib` header: a file that calls `import_module` has every quoted path hot.)
    lines = ['"""A generated module that names pkg.old in its docstring."""', "TYPE_CHECKING = False"]
    for stmt in draw(st.lists(statement(), min_size=1, max_size=8)):
        wrap = draw(st.sampled_from(["top", "top", "def", "class", "tc", "try"]))
        body = stmt.replace("\n", "\n    ")
        if wrap == "def":
            lines += ["", "@decorator" if draw(st.booleans()) else "", "def f():", "    y = 1", "    " + body]
        elif wrap == "class":
            lines += ["class C:", "    def m(self):", "        " + body.replace("\n", "\n    ")]
        elif wrap == "tc":
            lines += ["if TYPE_CHECKING:", "    " + body]
        elif wrap == "try":
            lines += ["try:", "    " + body, "except ImportError:", "    pass"]
        else:
            lines.append(stmt)
    text = "\n".join(line for line in lines if line != "") + "\n"
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return text.replace("\n", newline).encode()


def _findings(module: str, is_package: bool, refs) -> set:
    f = SourceFile("/x.py", "x.py", module, is_package, 0, 0)
    model = Model(src="/", discovery=Discovery(src="/", files=[f]), refs={"x.py": refs})
    return {(ref.line, ref.col, ref.kind, imported) for _, _, ref, imported in removed_module.references(model, SPEC)}


def _fast(data: bytes, module: str, is_package: bool):
    lines = RemovedPrefilter(PREFIXES).hot_lines(searchable(data), module, is_package)
    if not lines:
        return []
    return file_refs(data, module, is_package, (), lines, checked=True).refs


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=source(), place=st.sampled_from(PLACES))
def test_fast_path_finds_what_a_full_ast_pass_finds(data, place):
    module, is_package = place
    full = scan_source(data, module, is_package)
    if full.error is not None:
        return  # (the generator writes valid Python; a rare odd case is no counterexample)
    assert _findings(module, is_package, _fast(data, module, is_package)) == _findings(module, is_package, full.refs)


# A second set of prefixes, as the kernel package's prefilter reads the same files: one of them
# under a removed prefix, one an ancestor of some, one beside them, one under another root.
OTHER_PREFIXES = ("pkg.srt", "pkg.a.b.c.d", "pkg.kept", "other")


_TARGET = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?")
_DYNAMIC = ("import_module", "__import__", "importorskip")


def _walked(data: bytes, module: str, is_package: bool, prefixes) -> set:
    """(line, module) of every reference under `prefixes` that `ast.walk` over the whole file
    finds: each imported module (and `base.name` of a from-import), each dynamic import's
    target (a relative one resolved against its package), each other string that is a dotted
    target (`module` or `module:attr`), but not a docstring nor the text around an f-string's
    placeholder."""
    tree = ast.parse(data)
    found, consumed = [], set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                consumed.add(id(first.value))  # a docstring is prose
        elif isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in node.values):
            consumed.update(id(v) for v in node.values)
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(module, is_package, node.level, node.module)
            if base is not None:
                found += [(node.lineno, base)] + [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Call) and _dynamic_target(node) is not None:
            found.append((node.args[0].lineno, _dynamic_target(node)))
            consumed.add(id(node.args[0]))
    text = data.decode("utf-8")
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in consumed \
                and _TARGET.fullmatch(node.value) and _root_written_whole(text, node):
            found.append((node.lineno, node.value.partition(":")[0]))
    return {(line, name) for line, name in found if is_under_any(name, prefixes)}


def _root_written_whole(text: str, node: ast.Constant) -> bool:
    """Is the root package's name of the string target `node` written whole in the source, not
    split across implicitly joined pieces (`"oth" "er.old"`) or escaped? The prefilter promises
    to find a target only then (its docstring and docs/guarantees.md say so)."""
    segment = ast.get_source_segment(text, node)
    return segment is None or node.value.partition(".")[0] in segment


def _dynamic_target(call: ast.Call) -> str | None:
    """The module a call of `import_module`, `__import__` or `importorskip` with a literal first
    argument imports (a relative `import_module` target resolved against its literal package)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in _DYNAMIC or not call.args or not isinstance(call.args[0], ast.Constant) \
            or not isinstance(call.args[0].value, str):
        return None
    target = call.args[0].value
    package = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "package"), None)
    if name == "import_module" and target.startswith(".") and isinstance(package, ast.Constant) \
            and isinstance(package.value, str):
        level = len(target) - len(target.lstrip("."))
        target = resolve_relative(package.value, True, level, target.lstrip(".") or None) or target
    return target if re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", target) else None


def _read(refs, prefixes) -> set:
    """(line, module) of each reference the scanner gave under `prefixes`, as `_walked` counts them."""
    out = set()
    for ref in refs:
        names = [ref.imported] + ([f"{ref.imported}.{ref.name}"] if ref.kind == "from" and ref.name != "*" else [])
        out.update((ref.line, name) for name in names if is_under_any(name, prefixes))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=source(), place=st.sampled_from(PLACES), shared=st.booleans())
# A target split inside its root's name is not promised (hypothesis found it); split after it, it is.
@example(data=b'target = patch("oth" "er.old")\n', place=PLACES[0], shared=False)
@example(data=b'target = patch("other" ".old")\nt2 = "pkg.srt" ".x"\n', place=PLACES[0], shared=True)
def test_the_hot_lines_of_two_prefilters_in_one_pass_hold_every_reference_ast_walk_finds(data, place, shared):
    """`joint_hits`, the read's fast path: for each of two prefilters read in one pass over the
    file's mentions (CRLF text included, with or without the mentions found once for both), the
    statements around its hot lines hold the references under its prefixes that `ast.walk`
    over the whole file finds, no more and no fewer."""
    module, is_package = place
    try:
        expected = [_walked(data, module, is_package, PREFIXES), _walked(data, module, is_package, OTHER_PREFIXES)]
    except SyntaxError:
        return  # (the generator writes valid Python; a rare odd case is no counterexample)
    first, second = RemovedPrefilter(PREFIXES), RemovedPrefilter(OTHER_PREFIXES)
    found = Mentions(data) if shared else None
    hits_a, hits_b, text = joint_hits(first, second, data, module, is_package, found)
    for hits, prefixes, want in ((hits_a, PREFIXES, expected[0]), (hits_b, OTHER_PREFIXES, expected[1])):
        lines = RemovedPrefilter.lines_of(text, hits)
        refs = file_refs(data, module, is_package, (), lines, checked=True).refs if lines else []
        assert _read(refs, prefixes) == want
    assert bool(hits_b) == second.any_hot(data, module, is_package)


def test_hot_lines_do_not_depend_on_unrelated_prefixes():
    data = b"from pkg.srt.layers import dead\nfrom pkg.srt.layers import fine\n"
    few = RemovedPrefilter(PREFIXES).hot_lines(data, "pkg.mod", False)
    many = RemovedPrefilter(PREFIXES + tuple(f"pkg.z{i}.m" for i in range(1000))).hot_lines(data, "pkg.mod", False)
    assert few == many == [1]


# --------------------------------------------------------------------------- end to end


CONFIG = """\
[importlinter]
root_packages =
    sglang
contract_types =
    removed_modules: contracts.RemovedModulesContract

[importlinter:contract:removed]
name = removed
type = removed_modules
removed_modules =
"""


def _write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_implicitly_concatenated_target_over_lines_is_found(tmp_path):
    _write(tmp_path, {
        ".importlinter": CONFIG + "    sglang.srt.old_mod\n",
        "sglang/__init__.py": "",
        "sglang/srt/__init__.py": "",
        "sglang/test/test_x.py": (
            "from unittest.mock import patch\n\n"
            "def test_it():\n"
            "    with patch(\"sglang.srt.\"\n"
            "               \"old_mod.fn\"):\n"
            "        pass\n"
            "    patch('sglang.srt.old_mod' ':helper')\n"
        ),
    })
    result = run(config_mod.load(str(tmp_path / ".importlinter")), str(tmp_path))
    found = [(f.path, f.line, f.imported) for f in result.findings if f.rule == "removed-module"]
    assert found == [("sglang/test/test_x.py", 4, "sglang.srt.old_mod.fn"),
                     ("sglang/test/test_x.py", 7, "sglang.srt.old_mod:helper")]


@pytest.mark.parametrize("line, hot", [
    # a package that neither is nor begins a prefix still leads under one with `..`
    ("m = importlib.import_module('..gone', 'pkg.srt.x')", True),
    ("m = importlib.import_module(\n    '..old', package='pkg.kept')", True),
    ("m = import_module('' '.gone', 'pkg.srt')", True),
    # no relative target: a quoted name that neither is nor begins a prefix is no reference
    ("m = importlib.import_module('pkg.kept.mod'); n = 'pkg.srt.x'", False),
    # the name cannot go on into a prefix once it has left every prefix's path
    ('"""run: python -m pkg.kept.mod \\\n    --flag"""', False),
    ("x = 'quantizations in pkg. Please check'", False),
    ("x = ('pkg.', 'other.')", False),
    ("x = f'pkg.{name}'", False),
    # ... and can while it still may
    ("x = ('pkg.' 'old')", True),
    ("x = 'pkg.srt.' \\\n    'gone'", True),
    ("import pkg. srt.gone", True),
])
def test_hot_only_where_a_reference_can_be(line, hot):
    data = ("import importlib\n" + line + "\n").encode()
    lines = RemovedPrefilter(PREFIXES).hot_lines(data, "pkg.srt.y.mod", False)
    assert bool(lines) is hot
    full = scan_source(data, "pkg.srt.y.mod", False)
    assert full.error is None
    # never hot where the full pass finds nothing is fine; never cold where it finds something
    assert hot or not _findings("pkg.srt.y.mod", False, full.refs)
    if hot and "import" in line and "'" in line:
        assert _findings("pkg.srt.y.mod", False, full.refs)


def _release_like_tree(root, n_prefixes: int = 174) -> tuple[list[str], int]:
    """A tree shaped like sglang 0.5.17 minus 174 removed modules: the prefixes at depths 2-5,
    each named in one of nine forms by several files, amid decoys. Returns (prefixes, the number
    of references written)."""
    prefixes = []
    for i in range(n_prefixes):
        depth = 2 + i % 4
        parts = ["sglang"] + [f"area{i % 6}", f"sub{i % 5}", f"deep{i % 3}"][: depth - 2] + [f"gone{i}"]
        prefixes.append(".".join(parts))
    files = {"sglang/__init__.py": ""}
    for p in prefixes:  # the packages above each prefix still exist
        parts = p.split(".")
        for k in range(2, len(parts)):
            files["/".join(parts[:k]) + "/__init__.py"] = ""
    forms = [
        lambda p, n: f"import {p}\n",
        lambda p, n: f"from {p}.inner import thing as t{n}\n",
        lambda p, n: f"from {p.rpartition('.')[0]} import (\n    {p.rpartition('.')[2]},  # moved\n    kept_{n},\n)\n",
        lambda p, n: f"def lazy_{n}():\n    from {p} import fn\n    return fn\n",
        lambda p, n: f"if TYPE_CHECKING:\n    import {p}.types\n",
        lambda p, n: f"REGISTRY_{n} = \"{p}:Model\"\n",
        lambda p, n: f"PATCH_{n} = patch(\"{p[:len(p) // 2]}\"\n    \"{p[len(p) // 2:]}.fn\")\n",
        lambda p, n: f"MOD_{n} = importlib.import_module(\"{p}\")\n",
        lambda p, n: f"x_{n} = 1; import {p}\n",
    ]
    decoys = [
        lambda p, n: f"import {p}_v2\n",
        lambda p, n: f"# {p} was removed in 0.5.23\n",
        lambda p, n: f"from {p.rpartition('.')[0]} import {p.rpartition('.')[2]}_helper\n",
        lambda p, n: f"NAME_{n} = \"{p} is gone\"\n",
        lambda p, n: f"value_{n} = {p.replace('.', '_')}\n",
    ]
    written = 0
    for j in range(240):
        body = ["import importlib\nfrom unittest.mock import patch\nTYPE_CHECKING = False\n"]
        for k in range(3 if j < 179 else 0):
            n = j * 3 + k
            if written < 537:
                body.append(forms[n % len(forms)](prefixes[n % len(prefixes)], n))
                written += 1
        for k in range(4):
            n = j * 4 + k
            body.append(decoys[n % len(decoys)](prefixes[(n * 7) % len(prefixes)], n))
        files[f"sglang/srt/mod_{j}.py"] = "".join(body)
    _write(root, files)
    return prefixes, written


def test_release_shaped_tree_count_is_pinned_and_equals_an_all_hot_run(tmp_path, monkeypatch):
    prefixes, written = _release_like_tree(tmp_path)
    (tmp_path / ".importlinter").write_text(CONFIG + "".join(f"    {p}\n" for p in prefixes))
    cfg = config_mod.load(str(tmp_path / ".importlinter"))
    fast = run(cfg, str(tmp_path))
    found = sorted((f.path, f.line, f.col, f.imported) for f in fast.findings if f.rule == "removed-module")
    assert written == 537 and len(found) == 537

    class AllHot:  # every line of every file is hot: the whole file goes through ast
        def hot_lines(self, data, module, is_package, found=None):
            return list(range(1, data.count(b"\n") + 2))

    monkeypatch.setattr(reading_mod, "prefilter_for", lambda plan: AllHot())
    full = run(cfg, str(tmp_path))
    assert sorted((f.path, f.line, f.col, f.imported) for f in full.findings if f.rule == "removed-module") == found


# --------------------------------------------------------------------------- the graph files

_IMPORTERS = {  # outside the kernel package, each importing it in another form
    "pkg/srt/rel_parent.py": "from .. import kernels\n",
    "pkg/srt/rel_private.py": "from ..kernels.ops.kvcache.hicache import _private_helper\n",
    "pkg/srt/ancestor.py": "from pkg import (\n    kernels,\n)\n",
    "pkg/srt/lazy.py": "def f():\n    import pkg.kernels.ops.kvcache.hicache as h\n    return h\n",
    "pkg/srt/continued.py": "from pkg.kernels.ops.kvcache.hicache \\\n    import _private_helper\n",
    # Python reads other text than the bytes: the names come from that text
    "pkg/srt/bom.py": "\ufefffrom pkg.kernels.ops.kvcache.hicache import _private_helper\n",
    "pkg/srt/utf7.py": "# coding: utf-7\nfrom pkg.kern+AGU-ls.ops.kvcache.hicache import _private_helper\n",
    "pkg/srt/fullwidth.py": "from pkg.\uff4bernels.ops.kvcache.hicache import _private_helper\n",
}
_WORD_ONLY = {  # the word, and no import of the package: not read for edges, so not parsed
    "pkg/srt/prose.py": ("# kernels live in pkg/kernels/ops\ntriton_kernels = 1\n"
                         "class C:\n    kernels = ()\n    def f(self):\n        return self.kernels\n"
                         "def broken(:\n    pass\n"),
}


def test_a_file_is_read_for_edges_when_it_may_import_the_kernel_package_not_for_the_word(tree):
    root = tree({**_IMPORTERS, **_WORD_ONLY})
    cfg = config_mod.load(str(root / ".importlinter"))
    model = build_model(str(root), check.plan_for(cfg))
    importers = {m for m in model.graph_modules if m.startswith("pkg.srt.")}
    assert {f"pkg.srt.{rel[8:-3]}" for rel in _IMPORTERS} <= importers
    assert "pkg.srt.prose" not in importers
    edges = {(e.importer, e.imported) for e in model.edges}
    assert ("pkg.srt.rel_parent", "pkg.kernels") in edges
    assert ("pkg.srt.ancestor", "pkg.kernels") in edges
    assert ("pkg.srt.lazy", "pkg.kernels.ops.kvcache.hicache") in edges
    found = {(f.path, f.rule) for f in run(cfg, str(root)).findings}
    assert ("pkg/srt/rel_private.py", "private-import") in found
    for rel in ("continued", "bom", "utf7", "fullwidth"):
        assert (f"pkg/srt/{rel}.py", "private-import") in found, rel
    # A syntax error in a file that names nothing checked is left to Python (docs/guarantees.md).
    assert not any(path == "pkg/srt/prose.py" for path, _ in found)


# Text NFKC changes, or might change, next to text it leaves alone: compatibility characters,
# combining marks after ASCII letters (they compose), marks out of order, Hangul jamo, prose.
_TEXT_PIECES = ["a", "e", "pkg", ".", " ", "\n", "#", "é", "e\u0301", "\u0301", "\u0327\u0301", "\u0301\u0327",
                "ｐ", "ｋ", "\ufb01", "中文", "，", "\u1100", "\u1161", "A\u030a", "<\u0338", "ᵃ", "Ⅻ", "\u00a0",
                "😀", "ſ", "\u212a", "\u0345", "\u0e33", "jit_kernel"]


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.sampled_from(_TEXT_PIECES), max_size=12).map("".join),
       tail=st.sampled_from([b"", b"\xff", b"\xc3", b"# -*- coding: latin-1 -*-\n"]))
def test_the_shortcut_for_non_ascii_text_answers_as_the_full_check(monkeypatch, text, tail):
    """`searchable` asks of a non-ASCII file's non-ASCII characters alone whether NFKC leaves it
    as it is (`source_text._non_ascii_stable`); where it says so, the full check agrees."""
    data = (tail + text.encode()) if tail.startswith(b"#") else text.encode() + tail
    fast = searchable(data)
    with monkeypatch.context() as m:
        m.setattr(source_text, "_non_ascii_stable", lambda data: False)
        assert searchable(data) == fast


@settings(max_examples=2000, deadline=None)
@given(data=st.lists(st.sampled_from([b"sglang", b"glang", b"s", b"g", b"ss", b".", b"x", b"_", b" ", b"\n", b"pkg",
                                      b"kg", b"p"]), max_size=14).map(b"".join),
       root=st.sampled_from([b"sglang", b"pkg", b"p", b"gg", b"sgs"]))
@example(data=b"sgsgs", root=b"sgs")  # the root again, overlapping the last match: not a match
def test_a_root_searched_from_its_rarest_byte_is_found_where_its_own_pattern_is(data, root):
    """`matches_after` finds the dotted paths of a root as the root's own pattern finds them with
    `finditer`, searching from the root's rarest byte (`_rarest`)."""
    skip = _rarest(root)
    tail = re.compile(re.escape(root[skip:]) + rb"(?:\.\w+)*")
    whole = re.compile(re.escape(root) + rb"(?:\.\w+)*")
    assert list(matches_after(tail, root[:skip], data)) == [m.span() for m in whole.finditer(data)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=source(), place=st.sampled_from(PLACES), crlf=st.booleans(),
       other=st.sampled_from([("pkg.srt",), ("pkg.a", "pkg.kept"), ("pkg",), ("other.x", "pkg.olden")]))
def test_prefilters_sharing_the_mentions_of_a_text_answer_as_each_alone(data, place, crlf, other):
    """The removed modules' prefilter and the kernel package's read each file's mentions of their
    roots and its relative imports once (`Mentions`), whichever asks first: the same hot lines
    and the same `any_hot` as each searching the text itself."""
    module, is_package = place
    text = searchable(data.replace(b"\n", b"\r\n") if crlf else data)
    removed, graph = RemovedPrefilter(PREFIXES), RemovedPrefilter(other)
    for first_graph in (False, True):
        found = Mentions(text)
        if first_graph:
            hot_graph = graph.any_hot(text, module, is_package, found)
        lines = removed.hot_lines(text, module, is_package, found)
        if not first_graph:
            hot_graph = graph.any_hot(text, module, is_package, found)
        assert lines == removed.hot_lines(text, module, is_package)
        assert hot_graph == graph.any_hot(text, module, is_package)
        assert graph.hot_lines(text, module, is_package, found) == graph.hot_lines(text, module, is_package)
