"""Import edges, from grimp's native scanner where it can read a file, else from `ast`.

grimp's scanner is native and multithreaded, but its public `build_graph` keeps only what it
can see: it skips directories without `__init__.py` and drops imports of modules that do not
exist. Here the scanner is handed every module the engine discovered (namespace directories
included), through `grimp_adapter.py` (the only module that imports grimp), and an `ast` pass
covers what it cannot read. The rules walk the resulting edges themselves (`rules/_common.py`:
breadth-first chains with deterministic ties), so no grimp graph is ever built.

Where grimp's scanner cannot be used at all (grimp missing, outside the tested range, or its
scanner changed), every file is read with `ast`: the same edges, more slowly, and the run says
why (`native_fallback`). Nothing here imports grimp or `ast` until a scan is asked for: a run
answered from the cache never pays for them.
"""

from __future__ import annotations

import os
import re

from contracts._record import Record
from contracts.engine.discover import SourceFile
from contracts.engine.files import read_regular
from contracts.engine.import_forms import prefix_pattern
from contracts.engine.resolve import is_under, physical_lines

MAX_READ_BYTES = 64 * 2**20  # as records.py: what the run read once it reads again

# How many physical lines one import statement may span before we stop looking for its end.
MAX_STATEMENT_LINES = 200


class Edge(Record, frozen=True):
    importer: str
    imported: str
    line: int
    contents: str  # the statement's first line, as grimp reports it
    names: tuple[str, ...] | None  # from-imported names, when they were asked for

    def __init__(self, importer: str, imported: str, line: int, contents: str,
                 names: tuple[str, ...] | None = None) -> None:
        self.__dict__.update(importer=importer, imported=imported, line=line, contents=contents, names=names)


def _identifier_module(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def _named_as_found(f: SourceFile) -> bool:
    """Whether grimp, given `f.module`, finds this very file: not so for `a.b.py` (module `a.b`
    is `a/b.py` to grimp, whose scanner panics on a module it cannot find)."""
    parts = f.module.split(".")
    return f.rel in ("/".join(parts) + ".py", "/".join(parts) + "/__init__.py")


# grimp's native parser recurses once per level of an expression and overflows its thread's
# stack (a segfault: the whole run dies) somewhere between 100k and 200k levels (`x = a.b.b...`,
# `1+1+...`, measured with grimp 3.20). Every level costs at least one operator character (or
# keyword), at least two bytes: a file under `SAFE_BYTES` cannot nest that deep, and a larger one
# is given to grimp only if it holds fewer than `MAX_LEVELS` such tokens. The rest go to the
# `ast` pass, which reports "nested too deeply" instead of crashing.
MAX_LEVELS = 50_000
SAFE_BYTES = 2 * MAX_LEVELS
_NOT_LEVEL_BYTES = bytes(c for c in range(256) if c not in b"+-*/%@&|^<>.([~")
_LEVEL_WORDS = (b"not", b"if", b"lambda", b"await")  # each level of these takes 4 bytes or more


def too_deep_for_native(data: bytes) -> bool:
    """Could `data` nest deeper than grimp's parser survives? (Cheap, errs on the side of yes.)"""
    if len(data) < SAFE_BYTES:
        return False
    levels = len(data.translate(None, _NOT_LEVEL_BYTES))  # one pass: the operator characters
    if levels + len(data) // 4 < MAX_LEVELS:
        return False
    return levels + sum(data.count(w) for w in _LEVEL_WORDS) >= MAX_LEVELS


class _Fallback:
    """Why grimp's scanner is not used in this process (None: it is, or nothing asked for it
    yet), and how many files were read with `ast` because of it."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.files = 0
        self.adapter = None  # `grimp_adapter`, once imported and found usable
        self.stopped: str | None = None  # why it is never used in this process (`stop`)

    def begin_build(self) -> None:
        """A new build of a tree: what an earlier build in this process noted of its own scans
        is not this build's (a scanner that cannot be used stays so, for the same reason)."""
        self.reason, self.files = self.stopped, 0

    def stop(self, reason: str) -> None:
        """grimp's scanner is not used again in this process, for `reason` (it cannot be: grimp
        is missing, outside the tested range, or its scanner is not called as it was)."""
        self.reason, self.adapter, self.stopped = reason, False, reason

    def note(self, reason: str) -> None:
        """One scan did without grimp's scanner, for `reason` (a failure of that scan alone)."""
        self.reason = reason


_FALLBACK = _Fallback()


def native_fallback() -> tuple[str | None, int]:
    """(why grimp's scanner was not used in this process, how many files `ast` read instead):
    (None, 0) where it was used or never needed."""
    return _FALLBACK.reason, _FALLBACK.files


def native_adapter():
    """`grimp_adapter`, imported once; None where grimp cannot be imported or is outside the
    tested range (the reason recorded for `native_fallback`). Called before a fork, it spares
    each child grimp's import."""
    if _FALLBACK.adapter is None:
        try:
            # A measured start-up boundary: grimp's import (40-60 ms) is paid only where a file is scanned.
            from contracts.engine import grimp_adapter
        except Exception as e:  # noqa: BLE001 - grimp missing or broken: `ast` reads every file
            _FALLBACK.stop(f"grimp cannot be imported ({type(e).__name__}: {e})")
            return None
        problem = grimp_adapter.version_problem()
        if problem is not None:
            _FALLBACK.stop(problem)
        else:
            _FALLBACK.adapter = grimp_adapter
    return _FALLBACK.adapter or None


class EdgeScanner:
    """grimp's scanner, set up once for a tree and then called for batches of files.

    `known`: every discovered module (the scanner resolves imports against it);
    `roots`: root package -> its directory. The package description grimp needs is built on
    the first call and reused: the import closure calls the scanner once per round.
    """

    def __init__(self, known: dict[str, SourceFile], roots: dict[str, str]) -> None:
        _FALLBACK.begin_build()  # (one scanner per build: its notes start empty)
        self.known, self.roots = known, roots
        self._whole = None  # the description of the whole tree (`_description`)
        self._within: dict = {}  # PrefixIndex -> the known modules under it (`scan_into`)
        self._module_files: dict = {}  # module -> its grimp `ModuleFile`, or None (`_description`)

    def scan(self, files: list[SourceFile], decoded=frozenset(), syntax_only: bool = False
             ) -> tuple[dict[str, list[tuple]], dict[str, str]]:
        """Edges (imported, line, contents) of each file in `files`, by importer module.

        Files the scanner rejects come back in the second dict as module -> reason (the caller
        reports them as parse errors). Modules in `decoded` (a declared encoding other than
        UTF-8, or identifiers Python NFKC-normalizes) are read with `ast`, which decodes them as
        Python does; grimp's scanner would read their raw bytes. `syntax_only`: only whether each
        file parses is asked (every one parsed still has an entry, its edges resolved against the
        batch alone): the scanner is told of these files only, so a call costs no more than its
        files.
        """
        native, others = self._split(files, decoded)
        edges: dict[str, list[tuple]] = {}
        failed: dict[str, str] = {}
        if native:
            modules = {f.module: f for f in native} if syntax_only else None
            others += self._native_or_all(native, modules, edges, failed)
        self._scan_ast(others, edges, failed)
        return edges, failed

    def scan_into(self, files: list[SourceFile], index, decoded=frozenset()
                  ) -> tuple[dict[str, list[tuple]], dict[str, str]]:
        """`scan(files)`, keeping only the edges into the packages of `index` (a `PrefixIndex`),
        the scanner told of those packages' modules and of `files` alone: an import resolves to a
        module of those packages as it does against the whole tree (the module or its parent,
        both under the package), and the rest of the tree is neither described nor resolved
        against."""
        native, others = self._split(files, decoded)
        edges: dict[str, list[tuple]] = {}
        failed: dict[str, str] = {}
        if native:
            within = self._within.get(index)
            if within is None:
                within = self._within[index] = {m: f for m, f in self.known.items() if index.longest_of(m) is not None}
            others += self._native_or_all(native, {**within, **{f.module: f for f in native}}, edges, failed)
        self._scan_ast(others, edges, failed)
        return ({m: [e for e in found if index.longest_of(e[0]) is not None] for m, found in edges.items()},
                failed)

    def _split(self, files: list[SourceFile], decoded) -> tuple[list[SourceFile], list[SourceFile]]:
        """(the files for grimp's scanner, those for `ast`)."""
        native, others = [], []
        for f in files:
            (native if self._native_ok(f, decoded) else others).append(f)
        return native, others

    def _native_ok(self, f: SourceFile, decoded) -> bool:
        return (_identifier_module(f.module) and _named_as_found(f) and f.module not in decoded
                and not self._too_deep(f))

    def _native_or_all(self, files: list[SourceFile], modules: dict[str, SourceFile] | None, edges: dict,
                       failed: dict) -> list[SourceFile]:
        """grimp's edges of `files` into `edges` (the files it rejects into `failed`), the scanner
        told of `modules` (None: the whole tree); returns the files left for `ast`: none, or all
        of them where the scanner cannot be used (counted for `native_fallback`)."""
        adapter = native_adapter()
        found = None if adapter is None else self._native(adapter, files, modules, failed)
        if found is None:
            _FALLBACK.files += len(files)
            return files
        edges.update(found)
        return []

    def _native(self, adapter, files: list[SourceFile], modules: dict[str, SourceFile] | None,
                failed: dict[str, str]) -> dict[str, list[tuple]] | None:
        """`adapter.scan` of `files`, each file grimp rejects put in `failed` and the rest asked for
        again; None where the scanner cannot be used (from now on, `Unusable`) or failed on this
        batch (`native_fallback` says why)."""
        module_files, found = self._description(adapter, modules)
        # By name, not a set of grimp's dataclasses: hashing and sorting those costs 0.8 s at 50k files.
        todo = {f.module: module_files[f.module] for f in files if f.module in module_files}
        while todo:
            try:
                return adapter.scan(tuple(todo.values()), found)
            except adapter.FileSyntaxError as e:
                bad = next((name for name in todo if _module_path_matches(name, e.filename, self.roots)), None)
                if bad is None:
                    _FALLBACK.note(f"grimp's scanner rejected a file it was not asked about: {e.filename}")
                    return None
                failed[bad] = f"syntax error, line {e.lineno if e.lineno is not None else '?'}: {e.text or ''}".strip()
                del todo[bad]
            except adapter.Unusable as e:
                _FALLBACK.stop(str(e))
                return None
            except BaseException as e:  # noqa: BLE001 - a Rust panic is a BaseException
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                _FALLBACK.note(f"grimp's scanner failed ({type(e).__name__}: {e})")
                return None
        return {}

    def _description(self, adapter, modules: dict[str, SourceFile] | None):
        """(module -> grimp's `ModuleFile`, grimp's `FoundPackage`s) for a tree of `modules`
        (None: the whole tree, described once). Each module's `ModuleFile` is made once."""
        if modules is None:
            if self._whole is None:
                self._whole = self._description(adapter, self.known)
            return self._whole
        made = self._module_files
        module_file = {}
        for m, f in modules.items():
            mf = made.get(m, _UNSEEN)
            if mf is _UNSEEN:
                mf = made[m] = adapter.module_file(m) if _identifier_module(m) and _named_as_found(f) else None
            if mf is not None:
                module_file[m] = mf
        return module_file, adapter.packages(self.roots, module_file, is_under)

    def _scan_ast(self, files: list[SourceFile], edges: dict, failed: dict) -> None:
        """The edges of `files` from the engine's own `ast` scan, into `edges` (a file that cannot
        be read or parsed into `failed`)."""
        from contracts.engine.scan import scan_source

        for f in files:
            if f.module in failed or f.module in edges:
                continue
            try:
                data, _ = read_regular(f.path, limit=MAX_READ_BYTES)
            except OSError as e:
                failed[f.module] = f"cannot read: {e.strerror or e}"
                continue
            scan = scan_source(data, f.module, f.is_package)
            if scan.error:
                failed[f.module] = scan.error
                continue
            edges[f.module] = edges_from_refs(scan.refs, self.known, data)

    @staticmethod
    def _too_deep(f: SourceFile) -> bool:
        if f.size < SAFE_BYTES:
            return False
        try:
            return too_deep_for_native(read_regular(f.path, limit=MAX_READ_BYTES)[0])
        except OSError:
            return False  # the scanner reports it unreadable


_UNSEEN = object()


def _module_path_matches(module: str, filename, roots: dict[str, str]) -> bool:
    if not filename:
        return False
    root = module.split(".", 1)[0]
    rest = module.split(".")[1:]
    base = os.path.join(roots[root], *rest)
    return filename in (base + ".py", os.path.join(base, "__init__.py"))


def nearest_module(name: str, known) -> str | None:
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def edges_from_refs(refs, known, data: bytes | None = None) -> list[tuple]:
    """Edges from the engine's own scan, resolved against `known` as grimp resolves them."""
    lines = physical_lines(data) if data is not None else []
    out = set()
    for ref in refs:
        if ref.kind not in ("import", "from"):
            continue
        if ref.kind == "from" and ref.name and ref.name != "*" and f"{ref.imported}.{ref.name}" in known:
            target = f"{ref.imported}.{ref.name}"
        else:
            target = nearest_module(ref.imported, known)
        if target is None:
            continue
        contents = lines[ref.line - 1].strip() if 0 < ref.line <= len(lines) else ""
        out.add((target, ref.line, contents))
    return sorted(out)


# `from <module> import <names>` at the start of a line: what nearly every import is (`lazy`,
# PEP 810's soft keyword, may come first). Anything
# else (a statement after `;` or `:`, a backslash continuation) goes to the exact ast path.
_FROM_HEAD = re.compile(r"\s*" + prefix_pattern(r"\s") + r"from\s*[.\w]+\s*import\b\s*(.*)$", re.S)
_NAME_ITEM = re.compile(r"(\*|\w+)(?:\s+as\s+\w+)?")
_PLAIN_IMPORT = re.compile(r"\s*" + prefix_pattern(r"\s") + r"import\s+[\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*\s*(?:#.*)?$", re.S)


# PEP 810's `lazy` before a statement: dropped before `ast` (older than 3.15) reads its names.
_LAZY_KEYWORD = re.compile(r"\A" + prefix_pattern(r"[ \t\f]")[:-1] + r"(?=from\b|import\b)")


def is_plain_import(line: str) -> bool:
    """`import a.b [as c], ...` alone on its line: a statement that imports no names."""
    return _PLAIN_IMPORT.match(line) is not None


def names_from_text(first_line: str, more_lines=None) -> tuple[str, ...] | None:
    """Names of a `from ... import` statement, read off its text; None when unsure.

    `first_line`: the statement's first line; `more_lines`: an iterator over the lines after it
    (needed only when a parenthesized list continues). An import statement holds no strings,
    so `#` always starts a comment there.
    """
    m = _FROM_HEAD.match(first_line)
    if m is None:
        return None
    rest = m.group(1).split("#", 1)[0].strip()
    if rest.endswith("\\") or ";" in rest:
        return None
    if rest.startswith("("):
        body = [rest[1:]]
        while ")" not in body[-1]:
            if more_lines is None:
                return None
            nxt = next(more_lines, None)
            if nxt is None or len(body) > MAX_STATEMENT_LINES:
                return None
            body.append(nxt.split("#", 1)[0])
        text = " ".join(body)
        text, _, after = text.partition(")")
        if after.strip():
            return None
    else:
        text = rest
    names = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        m = _NAME_ITEM.fullmatch(item)
        if m is None:
            return None
        names.append(m.group(1))
    return tuple(names) or None


def statement_names(lines: list[str], line: int) -> tuple[str, ...] | None:
    """Names a `from ... import` statement starting at `line` (1-based) imports, or None."""
    if 0 < line <= len(lines):
        if is_plain_import(lines[line - 1]):
            return None
        fast = names_from_text(lines[line - 1], iter(lines[line:line - 1 + MAX_STATEMENT_LINES]))
        if fast is not None:
            return fast
    import ast
    import textwrap

    for end in range(line, min(len(lines), line - 1 + MAX_STATEMENT_LINES) + 1):
        chunk = _LAZY_KEYWORD.sub("", textwrap.dedent("\n".join(lines[line - 1:end])), count=1)
        try:
            tree = ast.parse(chunk)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                return tuple(a.name for a in node.names)
        return None
    return None

