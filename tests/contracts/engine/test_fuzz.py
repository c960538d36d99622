"""Fuzzing (hypothesis).

1. Import statements in every form the `removed-module` rule names -- absolute, relative at
   each level, aliased, parenthesized over lines with comments, backslash continuations, `;`
   lists, nested in def/async def/class/if/elif/else/try/except/finally/with/for/while and
   `if TYPE_CHECKING:` blocks -- amid random other Python (prose strings and comments that name
   the removed module, docstrings, decorators), with LF, CRLF or CR line endings, a BOM or not,
   and the removed segment sometimes spelled with a fullwidth letter (Python NFKC-normalizes
   identifiers). The engine's findings (path, line, column, imported module) must equal those of
   an independent oracle: the standard library `ast` walked in full, relative imports resolved
   by hand below.
2. Arbitrary bytes (raw, and valid files with bytes spliced in) as a source file: the scanner
   returns refs or a reason, never raises; the whole run completes and still checks the rest.

CI runs a bounded number of examples; the `slow` tests run many more (docs/guarantees.md
gives the numbers of the last long run).
"""

from __future__ import annotations

import ast
import io
import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts import config as config_mod
from contracts.check import run
from contracts.engine.scan import FileScan, scan_source, searchable
from contracts.fix import apply_fixes

CI = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG_BYTES = settings(max_examples=50_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])

REMOVED_PREFIX = "pkg.jit_kernel"
REPLACED = {  # old -> new
    "pkg.jit_kernel.hicache": "pkg.kernels.ops.kvcache.hicache",
    "pkg.jit_kernel.norm": "pkg.kernels.ops.layernorm.norm",
    "pkg.jit_kernel.utils": "pkg.kernels.jit",
    "pkg.jit_kernel.sub.deep": "pkg.kernels.ops.gemm.deep",
}
CONFIG = f"""\
[importlinter]
root_packages =
    pkg
contract_types =
    removed_modules: contracts.RemovedModulesContract

[importlinter:contract:removed]
name = removed
type = removed_modules
removed_modules =
    {REMOVED_PREFIX}
replacements =
""" + "".join(f"    {old} -> {new}\n" for old, new in REPLACED.items())

BASE_TREE = {
    "pkg/__init__.py": "",
    "pkg/kernels/__init__.py": "",
    "pkg/srt/layers/__init__.py": "",
    "pkg/srt/a/b/c/d/__init__.py": "",
}
# Where the generated file goes: (rel path, module, is_package).
PLACES = [
    ("pkg/mod.py", "pkg.mod", False),
    ("pkg/srt/fuzzed.py", "pkg.srt.fuzzed", False),  # pkg/srt: a namespace directory
    ("pkg/srt/layers/__init__.py", "pkg.srt.layers", True),
    ("pkg/srt/layers/fuzzed.py", "pkg.srt.layers.fuzzed", False),
    ("pkg/srt/a/b/c/d/fuzzed.py", "pkg.srt.a.b.c.d.fuzzed", False),
    ("pkg/srt/a/b/c/d/__init__.py", "pkg.srt.a.b.c.d", True),
]

# --------------------------------------------------------------------------- the oracle


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str | None:
    """By hand, as the import system does: the package of `module`, minus level-1 parts."""
    if level == 0:
        return name
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 >= len(parts):
        return None  # beyond the top-level package: ImportError at run time
    base = parts[:len(parts) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def oracle(data: bytes, module: str, is_package: bool) -> set[tuple[int, int, str]]:
    """(line, column, imported) of every import of a removed module, from a full `ast` walk.

    The rule's documented semantics: `import a.b` names `a.b`; `from X import n` names `X` when
    `X` is removed (or `X.n` when a `replacements` line names `X.n` itself: a moved submodule),
    and names `X.n` when only `X.n` is removed (`from pkg import jit_kernel`).
    """
    out = set()
    for node in ast.walk(ast.parse(data)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _under(alias.name, REMOVED_PREFIX):
                    out.add((node.lineno, node.col_offset + 1, alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_package, node.level, node.module)
            if base is None:
                continue
            for alias in node.names:
                candidate = None if alias.name == "*" else f"{base}.{alias.name}"
                if _under(base, REMOVED_PREFIX):
                    imported = candidate if candidate in REPLACED else base
                elif candidate and _under(candidate, REMOVED_PREFIX):
                    imported = candidate
                else:
                    continue
                out.add((node.lineno, node.col_offset + 1, imported))
    return out


# --------------------------------------------------------------------------- the generator

SEGMENTS = ["jit_kernel", "hicache", "norm", "utils", "sub", "deep", "kernels", "srt", "layers",
            "ops", "jit_kernel_utils", "transfer", "a", "b"]
MODULES = [
    "pkg.jit_kernel", "pkg.jit_kernel.hicache", "pkg.jit_kernel.norm", "pkg.jit_kernel.utils",
    "pkg.jit_kernel.sub", "pkg.jit_kernel.sub.deep", "pkg.jit_kernel.unknown",
    # look-alikes that are not removed
    "pkg", "pkg.kernels", "pkg.jit_kernel_utils", "pkg.srt.jit_kernel", "jit_kernel", "os",
    "pkg.kernels.ops.kvcache.hicache",
]
NAMES = ["jit_kernel", "hicache", "norm", "utils", "sub", "deep", "transfer", "rms", "x",
         "jit_kernel_utils"]

names = st.sampled_from(NAMES)
idents = st.sampled_from(["alias_a", "h", "_x", "mod"])


@st.composite
def dotted(draw, fullwidth: bool) -> str:
    module = draw(st.sampled_from(MODULES))
    if fullwidth and draw(st.integers(0, 5)) == 0:  # spelled as Python still reads it: `ｋ` (NFKC)
        module = module.replace("jit_kernel", "jit_\uff4bernel")
    return module


@st.composite
def spaced_dotted(draw, fullwidth: bool) -> str:
    module = draw(dotted(fullwidth))
    return draw(st.sampled_from([".", " . ", ". "])).join(module.split(".")) if draw(st.booleans()) else module


@st.composite
def import_statement(draw, top_level: bool, anchor: int, fullwidth: bool) -> list[str]:
    """One import statement, as physical lines (no indentation). `anchor`: the number of dots
    that climbs from this file to `pkg`; relative imports are drawn around it."""
    comment = draw(st.sampled_from(["", "  # type: ignore", "  # noqa: F401", "  # from pkg.jit_kernel import x"]))
    kind = draw(st.sampled_from(["import", "from", "relative", "star"] if top_level else ["import", "from", "relative"]))
    if kind == "import":
        items = draw(st.lists(st.tuples(spaced_dotted(fullwidth), st.one_of(st.none(), idents)), min_size=1, max_size=3))
        parts = [m + (f" as {a}" if a else "") for m, a in items]
        if len(parts) > 1 and draw(st.booleans()):  # a backslash continuation between names
            return [f"import {parts[0]}, \\", *[f"    {p}, \\" for p in parts[1:-1]], f"    {parts[-1]}{comment}"]
        return [f"import {', '.join(parts)}{comment}"]
    if kind in ("from", "star"):
        source = draw(spaced_dotted(fullwidth))
    else:
        level = draw(st.one_of(st.sampled_from([max(1, anchor - 1), anchor, anchor + 1]), st.integers(1, 8)))
        tail = draw(st.one_of(st.none(), st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3).map(".".join),
                              st.sampled_from(["jit_kernel", "jit_kernel.sub", "jit_kernel.hicache"])))
        source = "." * level + (tail or "")
    if kind == "star":
        return [f"from {source} import *{comment}"]
    items = draw(st.lists(st.tuples(names, st.one_of(st.none(), idents)), min_size=1, max_size=3))
    parts = [n + (f" as {a}" if a else "") for n, a in items]
    shape = draw(st.sampled_from(["flat", "parens", "parens_lines", "backslash"]))
    if shape == "flat":
        return [f"from {source} import {', '.join(parts)}{comment}"]
    if shape == "parens":
        return [f"from {source} import ({', '.join(parts)}){comment}"]
    if shape == "backslash":
        return [f"from {source} \\", f"    import {', '.join(parts)}{comment}"]
    lines = [f"from {source} import (  # why"]
    for p in parts:
        lines += ["    # a comment line inside the parentheses", f"    {p},"]
    return lines + [f"){comment}"]


FILLER = [
    ["x = 1"],
    ["y = 'see the jit_kernel docs: from pkg.jit_kernel import hicache'"],
    ["# import pkg.jit_kernel.hicache  (commented out)", "pass"],
    ['"""Prose: from pkg.jit_kernel.norm import rms."""'],
    ["def helper(a, b=2):", "    return a + b"],
    ["@staticmethod", "def decorated():", "    pass"],
    ["value = [", "    1,", "    2,", "]"],
    ["text = '''", "import pkg.jit_kernel.hicache", "'''"],
    ["can_use_jit_kernel = True"],
    ["pass"],
]

BLOCKS = ["def", "async", "class", "if", "if_else", "try", "try_finally", "with", "for", "while",
          "type_checking"]


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line if line else line for line in lines]


@st.composite
def body(draw, depth: int, top_level: bool, anchor: int, fullwidth: bool) -> list[str]:
    """A block body: statements, some of them imports, some of them nested blocks."""
    out: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        choice = draw(st.integers(0, 9))
        if choice < 4:
            stmt = draw(import_statement(top_level, anchor, fullwidth))
            if len(stmt) == 1 and draw(st.integers(0, 4)) == 0:
                stmt = [f"x = 0; {stmt[0]}"]  # several statements on one line
            out += stmt
        elif choice < 7 or depth >= 3:
            out += draw(st.sampled_from(FILLER))
        else:
            out += draw(block(depth + 1, anchor, fullwidth))
    return out


@st.composite
def block(draw, depth: int, anchor: int, fullwidth: bool) -> list[str]:
    kind = draw(st.sampled_from(BLOCKS))
    inner = _indent(draw(body(depth, False, anchor, fullwidth)))
    second = _indent(draw(body(depth, False, anchor, fullwidth)))
    if kind == "def":
        return ["def f():", *inner]
    if kind == "async":
        return ["async def g():", *inner]
    if kind == "class":
        return ["class C:", *inner]
    if kind == "if":
        return ["if x:", *inner]
    if kind == "if_else":
        return ["if x:", *inner, "elif y:", *second, "else:", "    pass"]
    if kind == "try":
        return ["try:", *inner, "except (ImportError, OSError) as e:", *second]
    if kind == "try_finally":
        return ["try:", *inner, "finally:", *second]
    if kind == "with":
        return ["with open(p) as fh, ctx():", *inner]
    if kind == "for":
        return ["for i in range(3):", *inner, "else:", *second]
    if kind == "while":
        return ["while False:", *inner]
    return ["if TYPE_CHECKING:", *inner]


@st.composite
def source_file(draw, fullwidth: bool = True) -> tuple[bytes, tuple[str, str, bool]]:
    place = draw(st.sampled_from(PLACES))
    lines = []
    if draw(st.booleans()):
        lines.append('"""Module docstring: import pkg.jit_kernel.hicache is prose here."""')
    rel, module, is_package = place
    anchor = module.count(".") + (1 if is_package else 0)  # dots from here up to `pkg`
    lines += draw(body(0, True, anchor, fullwidth))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    data = (newline.join(lines) + newline).encode("utf-8")
    if draw(st.integers(0, 5)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data, place


# --------------------------------------------------------------------------- the tree


class FuzzTree:
    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="fuzz-")
        self.src = Path(self._dir.name)
        for rel, text in BASE_TREE.items():
            (self.src / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.src / rel).write_text(text)
        (self.src / ".importlinter").write_text(CONFIG)
        self.config = config_mod.load(str(self.src / ".importlinter"))

    def put(self, rel: str, data: bytes) -> None:
        for place, _, _ in PLACES:  # one generated file at a time
            base = BASE_TREE.get(place)
            path = self.src / place
            if base is not None:
                path.write_text(base)
            elif path.exists():
                path.unlink()
        (self.src / rel).write_bytes(data)

    def close(self) -> None:
        self._dir.cleanup()


@pytest.fixture(scope="module")
def fuzz_tree():
    tree = FuzzTree()
    yield tree
    tree.close()


def check_against_oracle(fuzz_tree: FuzzTree, case) -> None:
    data, (rel, module, is_package) = case
    expected = oracle(data, module, is_package)  # raises on a generator bug (invalid Python)
    fuzz_tree.put(rel, data)
    result = run(fuzz_tree.config, str(fuzz_tree.src))
    got = {(f.line, f.col, f.imported) for f in result.findings if f.rule == "removed-module" and f.path == rel}
    others = [f for f in result.findings if f.path != rel or f.rule != "removed-module"]
    assert not others, others
    assert got == expected, data.decode("utf-8", "replace")


@CI
@given(case=source_file())
def test_removed_module_findings_match_an_ast_oracle(fuzz_tree, case):
    check_against_oracle(fuzz_tree, case)


@pytest.mark.slow
@LONG
@given(case=source_file())
def test_removed_module_findings_match_an_ast_oracle_long(fuzz_tree, case):
    check_against_oracle(fuzz_tree, case)


# --------------------------------------------------------------------------- --fix on the same files

HAS_FIX = (Path(__file__).resolve().parents[3] / "contracts/fix").is_dir()


def check_fix(fuzz_tree: FuzzTree, case) -> None:
    """`--fix` on a generated file: what it writes parses, and every reference it leaves is one
    it reported as not auto-fixable."""
    data, (rel, module, is_package) = case
    fuzz_tree.put(rel, data)
    result = run(fuzz_tree.config, str(fuzz_tree.src))
    out = io.StringIO()
    apply_fixes(fuzz_tree.config, str(fuzz_tree.src), result, write=True, out=out)
    after = (fuzz_tree.src / rel).read_bytes()
    left = oracle(after, module, is_package)  # raises if the written file does not parse
    reported = set(re.findall(r"not auto-fixable: `([^`]+)`", out.getvalue()))
    assert {imported for _, _, imported in left} <= reported, (out.getvalue(), after.decode("utf-8", "replace"))


@pytest.mark.skipif(not HAS_FIX, reason="contracts/fix/ not there yet")
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=source_file(fullwidth=False))  # fullwidth spellings: see docs/guarantees.md
def test_fix_writes_only_files_that_parse_and_leaves_only_what_it_reports(fuzz_tree, case):
    check_fix(fuzz_tree, case)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_FIX, reason="contracts/fix/ not there yet")
@LONG
@given(case=source_file(fullwidth=False))
def test_fix_writes_only_files_that_parse_and_leaves_only_what_it_reports_long(fuzz_tree, case):
    check_fix(fuzz_tree, case)


def test_the_oracle_can_tell_a_miss(fuzz_tree):
    # The comparison is not vacuous: a known statement yields a finding on both sides.
    data = b"def f():\n    from pkg import jit_kernel as j\n    from ..jit_kernel.sub import deep\n"
    assert oracle(data, "pkg.srt.fuzzed", False) == {(2, 5, "pkg.jit_kernel"), (3, 5, "pkg.jit_kernel.sub.deep")}
    check_against_oracle(fuzz_tree, (data, PLACES[1]))


# --------------------------------------------------------------------------- arbitrary bytes

VALID = (b"# -*- coding: utf-8 -*-\nimport os\nfrom pkg.jit_kernel.hicache import t\n"
         b"def f():\n    from . import jit_kernel\n    return 'pkg.jit_kernel.norm:rms'\n")


@st.composite
def spliced(draw) -> bytes:
    """A valid file with random bytes put in, replaced or cut out."""
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        data[at:at + draw(st.integers(0, 3))] = draw(st.binary(max_size=8))
    return bytes(data)


raw_sources = st.one_of(st.binary(max_size=3000), spliced(),
                        st.text(max_size=500).map(lambda t: t.encode("utf-8", "surrogatepass")))


def check_bytes(data: bytes) -> None:
    for words in (None, (b"jit_kernel",), (b"kernels", b"jit_kernel")):
        scan = scan_source(data, "pkg.srt.fuzzed", False, words)
        assert isinstance(scan, FileScan)
        assert (scan.error is None) or (isinstance(scan.error, str) and scan.error and not scan.refs)
    assert isinstance(searchable(data), bytes)


@CI
@given(data=raw_sources)
def test_arbitrary_bytes_never_crash_the_scanner(data):
    check_bytes(data)


@pytest.mark.slow
@LONG_BYTES
@given(data=raw_sources)
def test_arbitrary_bytes_never_crash_the_scanner_long(data):
    check_bytes(data)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=raw_sources)
def test_arbitrary_bytes_in_a_tree_never_stop_the_run(fuzz_tree, data):
    fuzz_tree.put("pkg/srt/fuzzed.py", data)
    (fuzz_tree.src / "pkg/srt/witness.py").write_text("import os\nimport pkg.jit_kernel.norm\n")
    try:
        result = run(fuzz_tree.config, str(fuzz_tree.src))
    finally:
        os.unlink(fuzz_tree.src / "pkg/srt/witness.py")
    assert ("pkg/srt/witness.py", 2, "removed-module") in {(f.path, f.line, f.rule) for f in result.findings}
    assert result.files_scanned == result.files_total
