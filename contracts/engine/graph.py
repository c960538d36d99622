"""Import edges, from grimp's native scanner where it can read a file, else from `ast`.

grimp's scanner is native and multithreaded, but its public `build_graph` keeps only what it
can see: it skips directories without `__init__.py` and drops imports of modules that do not
exist. Here the scanner is handed every module the engine discovered (namespace directories
included), and an `ast` pass covers what it cannot read. The rules walk the resulting edges
themselves (`rules/_common.py`: breadth-first chains with deterministic ties), so no grimp graph
is ever built.

Nothing here imports grimp or `ast` until a scan is asked for: a run answered from the cache
never pays for them.
"""

from __future__ import annotations

import os
import re

from contracts._record import Record
from contracts.engine.discover import SourceFile
from contracts.engine.files import read_regular
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


_UNSEEN = object()


def too_deep_for_native(data: bytes) -> bool:
    """Could `data` nest deeper than grimp's parser survives? (Cheap, errs on the side of yes.)"""
    if len(data) < SAFE_BYTES:
        return False
    levels = len(data.translate(None, _NOT_LEVEL_BYTES))  # one pass: the operator characters
    if levels + len(data) // 4 < MAX_LEVELS:
        return False
    return levels + sum(data.count(w) for w in _LEVEL_WORDS) >= MAX_LEVELS


class EdgeScanner:
    """grimp's scanner, set up once for a tree and then called for batches of files.

    `known`: every discovered module (the scanner resolves imports against it);
    `roots`: root package -> its directory. The package description grimp needs is built on
    the first call and reused: the import closure calls the scanner once per round.
    """

    # The scanner reads the modules and packages it is told of by their attributes: plain
    # objects with grimp's field names (`_ModuleFile`, ...) cost a description of 0.5.23's 4,716
    # modules less than grimp's dataclasses (hashed in Python for their frozenset), and spare
    # each run the import of grimp's file-system ports (`typing` with them) before the fork.
    # Where a grimp refuses them, its own classes are used from then on (`_native`).
    light = True

    def __init__(self, known: dict[str, SourceFile], roots: dict[str, str]) -> None:
        self.known, self.roots = known, roots
        self._native_args = None
        self._basic = None
        self._native_broken = False
        self._within: dict = {}  # PrefixIndex -> the known modules under it (`scan_into`)
        self._module_files: dict = {}  # module -> its `ModuleFile`, or None (`_arguments`)
        self._made_light = EdgeScanner.light  # of which kind those are

    def scan_into(self, files: list[SourceFile], index, decoded=frozenset(), memory: dict[str, str] | None = None
                  ) -> tuple[dict[str, list[tuple]], dict[str, str]]:
        """`scan(files)`, keeping only the edges into the packages of `index` (a `PrefixIndex`),
        the scanner told of those packages' modules and of `files` alone: an import resolves to a
        module of those packages as it does against the whole tree (the module or its parent,
        both under the package), and the rest of the tree is neither described nor resolved
        against. On 0.5.23's 513 files outside the kernel package that may import it: 0.260 ->
        0.236 s in one thread, the same edges into it."""
        native, others = [], []
        for f in files:
            (native if self._native_ok(f, decoded) else others).append(f)
        edges: dict[str, list[tuple]] = {}
        failed: dict[str, str] = {}
        if native and not self._native_broken:
            within = self._within.get(index)
            if within is None:
                within = self._within[index] = {m: f for m, f in self.known.items() if index.longest_of(m) is not None}
            try:
                args = self._arguments({**within, **{f.module: f for f in native}})
                if memory:
                    native = self._from_memory(native, memory, args, edges)
                if native:
                    edges.update(self._native(native, failed, args=args))
            except Exception:  # pragma: no cover - depends on grimp internals; the whole scan is exact
                self._native_broken = True
                others = others + native
        else:
            others = others + native
        if others:
            rest = self.scan(others, decoded)
            edges.update(rest[0])
            failed.update(rest[1])
        return ({m: [e for e in found if index.longest_of(e[0]) is not None] for m, found in edges.items()},
                failed)

    def _from_memory(self, files: list[SourceFile], memory: dict[str, str], args, edges: dict) -> list[SourceFile]:
        """Scan the files of `files` whose text `memory` gives (the start of each file: what
        `reading.narrow_cut` keeps) from that text, into `edges`; the files left to scan from disk,
        whole: those it does not give, and those whose given text does not parse (cut inside a
        string or a statement: the whole file says whether it parses). grimp's in-memory file
        system stands in for the disk; without one (another grimp) every file is read whole."""
        rust, module_file, packages, _ = args
        try:
            # (Its `write` stores a text as it is given; the `content_map` of its constructor
            # dedents and strips what it is given, a test double's convenience.)
            fs = rust.FakeBasicFileSystem()
            for f in files:
                if f.module in memory:
                    fs.write(f.path, memory[f.module])
            # What is scanned from memory is exactly what was given, or it is read from disk.
            given = [f for f in files if f.module in memory and fs.read(f.path) == memory[f.module]]
        except Exception:  # noqa: BLE001 - not this grimp's in-memory file system: read the files
            return files
        if not given:
            return files
        unparsed: dict[str, str] = {}
        try:
            # (Each text that does not parse costs a scan of those left: after two, the rest are
            # read whole from disk.)
            edges.update(self._native(given, unparsed, args=(rust, module_file, packages, fs), give_up=2))
        except Exception:  # noqa: BLE001 - whatever went wrong there, the files on disk say it
            return files
        scanned = {f.module for f in given}
        return [f for f in files if f.module not in scanned or f.module in unparsed]

    def _native_ok(self, f: SourceFile, decoded) -> bool:
        return (_identifier_module(f.module) and _named_as_found(f) and f.module not in decoded
                and not self._too_deep(f))

    def scan(self, files: list[SourceFile], decoded=frozenset(), syntax_only: bool = False
             ) -> tuple[dict[str, list[tuple]], dict[str, str]]:
        """Edges (imported, line, contents) of each file in `files`, by importer module.

        Files the scanner rejects come back in the second dict as module -> reason (the caller
        reports them as parse errors). Modules in `decoded` (a declared encoding other than
        UTF-8, or identifiers Python NFKC-normalizes) are read with `ast`, which decodes them as
        Python does; grimp's scanner would read their raw bytes. `syntax_only`: only whether each
        file parses is asked (every one parsed still has an entry, its edges resolved against the
        batch alone): the scanner is told of these files only, so a call costs no more than its
        files (told of every module of 0.5.23, a call costs ~10 ms more).
        """
        edges: dict[str, list[tuple]] = {}
        failed: dict[str, str] = {}
        native, others = [], []
        for f in files:
            (native if self._native_ok(f, decoded) else others).append(f)
        if native and not self._native_broken:
            try:
                edges.update(self._native(native, failed, syntax_only))
            except Exception:  # pragma: no cover - depends on grimp internals; the ast pass is exact
                self._native_broken = True
                others = others + native
        elif native:  # pragma: no cover
            others = others + native
        for f in others:
            if f.module in failed or f.module in edges:
                continue
            try:
                data, _ = read_regular(f.path, limit=MAX_READ_BYTES)
            except OSError as e:
                failed[f.module] = f"cannot read: {e.strerror or e}"
                continue
            from contracts.engine.scan import scan_source

            scan = scan_source(data, f.module, f.is_package)
            if scan.error:
                failed[f.module] = scan.error
                continue
            edges[f.module] = edges_from_refs(scan.refs, self.known, data)
        return edges, failed

    @staticmethod
    def _too_deep(f: SourceFile) -> bool:
        if f.size < SAFE_BYTES:
            return False
        try:
            return too_deep_for_native(read_regular(f.path, limit=MAX_READ_BYTES)[0])
        except OSError:
            return False  # the scanner reports it unreadable

    def _setup(self):
        if self._native_args is None or self._made_light is not EdgeScanner.light:
            self._native_args = self._arguments(self.known)
        return self._native_args

    def _alone(self, files: list[SourceFile]):
        """The scanner's arguments for a tree of these files alone."""
        return self._arguments({f.module: f for f in files})

    def _arguments(self, modules: dict[str, SourceFile]):
        """(the native module, module name -> `ModuleFile`, the `FoundPackage`s, the file system)
        for a tree of `modules`."""
        if EdgeScanner.light:
            rust, FoundPackage, ModuleFile, Module = _native_module(), _FoundPackage, _ModuleFile, _Module
        else:
            rust, FoundPackage, ModuleFile, Module = scanner_api()
        # One `ModuleFile` per module for every call (the whole tree's description, then the
        # kernel package's with each batch of `scan_into`): made once, and each module's test of
        # its name once.
        if self._made_light is not EdgeScanner.light:  # (grimp refused the light ones since)
            self._module_files, self._made_light = {}, EdgeScanner.light
        made = self._module_files
        module_file = {}
        for m, f in modules.items():
            mf = made.get(m, _UNSEEN)
            if mf is _UNSEEN:
                mf = made[m] = ModuleFile(module=Module(m), mtime=0) if _identifier_module(m) and _named_as_found(f) else None
            if mf is not None:
                module_file[m] = mf
        packages = {
            FoundPackage(name=root, directory=directory, module_files=frozenset(
                mf for m, mf in module_file.items() if is_under(m, root)))
            for root, directory in self.roots.items()
        }
        if self._basic is None:
            self._basic = rust.RealBasicFileSystem()
        return rust, module_file, packages, self._basic

    def _native(self, files: list[SourceFile], failed: dict[str, str], syntax_only: bool = False, args=None,
                give_up: int | None = None) -> dict[str, list[tuple]]:
        """`give_up`: after this many files that do not parse (each one makes the scanner stop and
        the rest be asked for again), the rest go into `failed` too, unscanned."""
        rust, module_file, packages, basic = args or (self._alone(files) if syntax_only else self._setup())
        # By name, not a set of grimp's dataclasses: hashing and sorting those costs 0.8 s at 50k files.
        todo = {f.module: module_file[f.module] for f in files if f.module in module_file}
        result: dict[str, list[tuple]] = {}
        while todo:
            try:
                scanned = rust.scan_for_imports(
                    module_files=tuple(todo.values()), found_packages=packages,
                    include_external_packages=False, exclude_type_checking_imports=False,
                    file_system=basic,
                )
            except BaseException as e:  # noqa: BLE001 - a Rust panic is a BaseException
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                filename = getattr(e, "filename", None)
                bad = next((name for name in todo
                            if filename and _module_path_matches(name, filename, self.roots)), None)
                if bad is None:
                    if any(isinstance(p, _FoundPackage) for p in packages):
                        # Not a file's fault: this grimp wants its own classes (see `light`).
                        EdgeScanner.light = False
                        module_file, packages = _as_grimps(module_file, packages)
                        todo = {m: module_file[m] for m in todo}
                        continue
                    raise RuntimeError("native scan failed") from e
                failed[bad] = (f"syntax error, line {getattr(e, 'lineno', '?')}: "
                               f"{getattr(e, 'text', '') or ''}").strip()
                del todo[bad]
                if give_up is not None:
                    give_up -= 1
                    if give_up < 0:
                        failed.update(dict.fromkeys(todo, "not scanned"))
                        break
                continue
            for mf, imports in scanned.items():
                result[mf.name] = sorted(
                    (di.imported.name, di.line_number, di.line_contents) for di in imports
                )
            break
        return result


class _Module:
    """What grimp's scanner reads of its `Module`."""
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


class _ModuleFile:
    """What grimp's scanner reads of its `ModuleFile`."""
    __slots__ = ("module", "mtime")

    def __init__(self, module: _Module, mtime: float) -> None:
        self.module, self.mtime = module, mtime


class _FoundPackage:
    """What grimp's scanner reads of its `FoundPackage`."""
    __slots__ = ("name", "directory", "module_files", "namespace_packages")

    def __init__(self, name: str, directory: str, module_files: frozenset,
                 namespace_packages: frozenset = frozenset()) -> None:
        self.name, self.directory, self.module_files = name, directory, module_files
        self.namespace_packages = namespace_packages


def _as_grimps(module_file: dict, packages) -> tuple[dict, set]:
    """A description made of `_ModuleFile`s and `_FoundPackage`s, in grimp's own classes."""
    FoundPackage, ModuleFile, Module = scanner_classes()
    real = {m: ModuleFile(module=Module(m), mtime=0) for m in module_file}
    return real, {FoundPackage(name=p.name, directory=p.directory, module_files=frozenset(
        real[mf.module.name] for mf in p.module_files)) for p in packages}


def _native_module():
    """grimp's native scanner module, grimp loaded as `scanner_api` says."""
    import importlib

    load_grimp()
    return importlib.import_module("grimp._rustgrimp")


def scanner_api():
    """(grimp's native scanner module, `FoundPackage`, `ModuleFile`, `Module`): what `build_graph`
    calls the scanner with. Loaded without running grimp's package `__init__` first, where no one
    has imported grimp yet: that imports its whole graph API (65 ms a process, and a two-process
    run pays it twice); these four take 11-20 ms. The package's `__init__` runs on the first use of
    any other name of it (`grimp.build_graph`), so whoever imports grimp later gets all of it."""
    import importlib

    FoundPackage, ModuleFile, Module = scanner_classes()
    return importlib.import_module("grimp._rustgrimp"), FoundPackage, ModuleFile, Module


def scanner_classes():
    """`FoundPackage`, `ModuleFile` and `Module`, loaded as `scanner_api` says, without the native
    module (a process that has not loaded it may still fork)."""
    import importlib

    load_grimp()
    finder = importlib.import_module("grimp.application.ports.modulefinder")
    values = importlib.import_module("grimp.domain.valueobjects")
    return finder.FoundPackage, finder.ModuleFile, values.Module


def load_grimp() -> None:
    """grimp's package, set up as `scanner_api` says, and the value objects its scanner makes its
    answers of (`grimp.domain.valueobjects`), without the native module (a process that has not
    loaded it may still fork)."""
    import importlib
    import sys

    if "grimp" not in sys.modules:
        import importlib.util

        spec = importlib.util.find_spec("grimp")
        if spec is not None and spec.loader is not None and spec.submodule_search_locations:
            import threading

            package = importlib.util.module_from_spec(spec)
            lock = threading.RLock()
            started = []

            def finish(name: str):
                # The rest of the package, once (the submodules already loaded are kept); another
                # thread asking meanwhile waits for it, and a name looked up while it runs is an
                # ordinary miss.
                with lock:
                    if not started:
                        started.append(True)
                        try:
                            spec.loader.exec_module(package)
                        finally:
                            package.__dict__.pop("__getattr__", None)
                try:
                    return package.__dict__[name]
                except KeyError:
                    raise AttributeError(f"module 'grimp' has no attribute {name!r}") from None

            package.__getattr__ = finish
            sys.modules["grimp"] = package
    importlib.import_module("grimp.domain.valueobjects")


def scan_edges(files: list[SourceFile], known: dict[str, SourceFile], roots: dict[str, str]
               ) -> tuple[dict[str, list[tuple]], dict[str, str]]:
    """One batch: `EdgeScanner(known, roots).scan(files)`."""
    return EdgeScanner(known, roots).scan(files)


def _module_path_matches(module: str, filename: str, roots: dict[str, str]) -> bool:
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
_FROM_HEAD = re.compile(r"\s*(?:lazy\s+)?from\s*[.\w]+\s*import\b\s*(.*)$", re.S)
_NAME_ITEM = re.compile(r"(\*|\w+)(?:\s+as\s+\w+)?")
_PLAIN_IMPORT = re.compile(r"\s*(?:lazy\s+)?import\s+[\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*\s*(?:#.*)?$", re.S)


# PEP 810's `lazy` before a statement: dropped before `ast` (older than 3.15) reads its names.
_LAZY_KEYWORD = re.compile(r"\Alazy[ \t\f]+(?=from\b|import\b)")


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

