"""Scan a tree once: which files to read with `ast`, which to give grimp's scanner, with cache.

A rule only cares about files that can name what it checks. Every file is read (and counted as
scanned) and goes through one byte-level pass, `prefilter.py`: the root package's name and
relative imports, each hit looked up by its name parts against the removed prefixes, so the cost
does not grow with how many prefixes there are. Only the files with a line that may name a
removed module are parsed with `ast`, and of those only the top-level statements around such
lines (`window.py`), once grimp's native scanner has parsed the whole file, so a syntax error
anywhere in it is still reported. Any import of a module under `pkg.kernels` from outside
`pkg/kernels/` contains the text `kernels`: such files get their edges from grimp's scanner, on
a second thread while this one reads and parses. The graph is closed under imports: a module
reached from the checked packages is scanned too, so chains through modules that never name
them are followed (chains stop at the `stop` packages, whose imports a rule already reports at
the first hop).

How much is rebuilt, cheapest first (the cache is `cache.py`):

- `stamp.load_result`: the last full run's findings, when no file or directory under the roots has
  changed since (one `stat` each); nothing is read or parsed, and grimp is not even imported;
- a run whose files changed but whose scan results did not (a comment, a function body) gets
  the same `generation`, and the caller reuses its findings without running the rules;
- a full build: every file is stat'ed; the unchanged ones reuse their records. Changed-files
  mode (pre-commit passes the changed files) builds the same way: the cache is never trusted
  for a file nobody looked at, so a module changed or added by a pull is scanned again and a
  chain through it is found, whatever PATHs were given (the findings are filtered after).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import cached_property

from contracts.engine.cache import RACY_SECONDS, Cache, content_digest
from contracts.engine.discover import Discovery, SourceFile, discover
from contracts.engine.files import NotRegular, TooLarge, read_lines, read_regular
from contracts.engine.graph import Edge, EdgeScanner, is_plain_import, names_from_text, statement_names
from contracts.engine.resolve import physical_lines
from contracts.prefixes import PrefixIndex

# A file larger than this is reported (`not-scanned`) before a byte of it is read: the run's
# memory stays bounded whatever the tree holds (an 8 GiB file, a link to /dev/zero is not even
# a regular file). Upstream sglang's whole tree is 68 MB; its largest file 375 kB.
MAX_READ_BYTES = 64 * 2**20

SCAN_VERSION = "7"  # 7: references carry `guarded`; 6: hot lines from the prefilter; 5: the DECODED flag; 4: flags, ctime, read time

# A record, one per file (a list of plain values): the fields by index.
MTIME, SIZE, CTIME, DIGEST, FLAGS, REFS, ERROR, EDGES, NAMES, READ_AT = range(10)
SEMANTIC = slice(FLAGS, NAMES + 1)  # what the rules see of a record
AST, GRAPH, DECODED = 1, 2, 4  # FLAGS: parse it with ast (names a removed module); scan its
# edges; Python decodes it otherwise than grimp's scanner does (its edges come from ast)


@dataclass(frozen=True)
class ScanPlan:
    roots: tuple[str, ...]
    ast_words: tuple[bytes, ...]  # a file containing one of these is parsed with ast
    ast_prefixes: tuple[str, ...]  # modules under these are always parsed (e.g. a shim)
    graph_words: tuple[bytes, ...]  # a file containing one of these gets its edges scanned
    graph_prefixes: tuple[str, ...]  # modules under these always get their edges scanned
    closure_stop: tuple[str, ...] = ()  # the import closure does not enter these
    name_prefixes: tuple[str, ...] = ()  # edges into these keep their from-imported names
    # The removed prefixes themselves: files are routed to ast by `prefilter.py` (lookups by
    # name parts, one pass over the bytes), not by searching for each of `ast_words`.
    removed: tuple[str, ...] = ()
    # The config's `exclude` patterns and the directory they are relative to (`importers.py`).
    exclude: tuple[str, ...] = ()
    exclude_base: str = ""
    # A rule reads the text of every file itself (`missing_imports`): the bytes read are kept
    # in `Model.texts`, and any changed file changes the generation.
    texts: bool = False
    # The root names of the `missing_imports` packages, when one reader serves every such
    # contract: each file's import statements and column-0 definitions are then read where the
    # file is read (in the workers, `Model.statements`), not after.
    statement_roots: tuple[str, ...] = ()

    @property
    def layout(self):
        """The `importers.Layout` whose exclusions the walk honours, or None."""
        from contracts.engine.importers import Layout

        return Layout(self.exclude_base, self.exclude) if self.exclude else None

    @property
    def key(self) -> str:
        return repr((SCAN_VERSION, self))

    @cached_property
    def ast_index(self) -> PrefixIndex:
        return PrefixIndex(self.ast_prefixes)

    @cached_property
    def graph_index(self) -> PrefixIndex:
        return PrefixIndex(self.graph_prefixes)

    @cached_property
    def name_index(self) -> PrefixIndex:
        return PrefixIndex(self.name_prefixes)

    @cached_property
    def stop_index(self) -> PrefixIndex:
        return PrefixIndex(self.closure_stop)


@dataclass
class Model:
    src: str
    discovery: Discovery
    refs: dict[str, list] = field(default_factory=dict)  # rel path -> [ImportRef]
    errors: dict[str, str] = field(default_factory=dict)  # rel path -> reason
    edges: list[Edge] = field(default_factory=list)
    graph_modules: set[str] = field(default_factory=set)
    files_read: int = 0
    cache_status: str = "off"
    # Changes whenever what the rules see changes; equal generations give equal findings.
    generation: str = ""
    started: float = 0.0  # when the build started, before it read anything
    texts: dict[str, bytes] = field(default_factory=dict)  # rel path -> content, read in this run (`ScanPlan.texts`)
    workers: int = 1  # processes that read the files (`workers.py`)
    # rel path -> (statements, unsure lines, whole file unsure, column-0 `def`/`class` names), read
    # in this run for `ScanPlan.statement_roots`.
    statements: dict[str, tuple] = field(default_factory=dict)
    statement_roots: tuple[str, ...] = ()  # what `statements` were read for
    _pending: tuple | None = field(default=None, repr=False)  # what `assemble` builds from
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step of the build (`--verbose`)

    @property
    def modules(self) -> dict[str, SourceFile]:
        return self.discovery.by_module

    def assemble(self) -> Model:
        """Fill `refs`, `errors`, `edges` and `graph_modules` from the records (once)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return self
        from contracts.engine.scan import ImportRef

        records, graph_set, unreadable = pending
        for f in self.discovery.files:
            rec = records.get(f.rel)
            if rec is None:
                continue
            if rec[ERROR] is not None:
                self.errors[f.rel] = rec[ERROR]
            if rec[REFS] is not None:
                self.refs[f.rel] = [ImportRef(*t) for t in rec[REFS]]
            if rec[EDGES] is not None and f.module in graph_set:
                self.graph_modules.add(f.module)
                names = rec[NAMES] or {}
                for imported, line, contents in rec[EDGES]:
                    self.edges.append(Edge(f.module, imported, line, contents, names.get(line)))
        self.errors.update(unreadable)
        return self

    def graph(self):
        from contracts.engine.graph import build_import_graph

        return build_import_graph(set(self.modules) | self.graph_modules, self.edges)


def _ref_tuple(r) -> tuple:
    return (r.line, r.col, r.end_line, r.kind, r.imported, r.name, r.asname, r.level, r.lazy,
            r.type_checking, r.attr, r.guarded)


def _key(src: str, plan: ScanPlan) -> str:
    return repr((src, plan.key))


def _racy(mtime_ns: int, ctime_ns: int, read_at: float) -> bool:
    """Modified so close to when it was read that a second edit could keep the same stat."""
    return max(mtime_ns, ctime_ns) / 1e9 >= read_at - RACY_SECONDS


def _unchanged(entry: list, f: SourceFile) -> bool:
    """The record still describes the file: same (mtime, size, ctime) -- ctime moves on every
    write, even one that puts the mtime back (`cp -p`, `touch -d`) -- and not racy."""
    if entry[MTIME] != f.mtime_ns or entry[SIZE] != f.size:
        return False
    ctime = f.ctime_ns
    if not ctime:  # not from the walk (changed-files mode): ask
        try:
            ctime = _ctime_ns(os.stat(f.path))
        except OSError:
            return False
    return ctime == entry[CTIME] and not _racy(f.mtime_ns, ctime, entry[READ_AT])


def _ctime_ns(st) -> int:
    return st.st_ctime_ns


def _read(path: str, inside: tuple[str, ...] = ()) -> tuple[bytes, int]:
    """(content, ctime) of a regular file, its size checked before it is read (`MAX_READ_BYTES`);
    in as few system calls as it takes (the plain `open()` costs twice as much: 0.07 s against
    0.04 s for 4,719 files). A symlink is followed only to a file under `inside` (the walk let
    it in; one swapped in since, pointing elsewhere, is not read)."""
    try:
        data, st = read_regular(path, limit=MAX_READ_BYTES)
    except NotRegular:
        real = os.path.realpath(path)
        if real == path or not any(real.startswith(top + os.sep) for top in inside):
            raise
        data, st = read_regular(real, limit=MAX_READ_BYTES)
    return data, _ctime_ns(st)


def build_model(src: str, plan: ScanPlan, cache_dir: str | None = None, jobs: int | None = None,
                lazy: bool = False) -> Model:
    """The model of the tree under `src`: every file is stat'ed, the cache reused for those whose
    stat is unchanged. `jobs`: processes for the files to read (None: `workers.jobs()`).
    `lazy`: leave `refs`, `errors`, `edges` and `graph_modules` empty until `Model.assemble()`
    (a run whose findings the cache holds for this generation never needs them)."""
    from contracts.engine import workers

    started = time.time()
    src = os.path.abspath(src)
    cache = Cache(cache_dir, _key(src, plan)) if cache_dir else None
    old = cache.load() if cache else {}
    old_files: dict[str, list] = old.get("files", {})
    clock = time.perf_counter()
    phases: dict[str, float] = {}
    disc = discover(src, plan.roots, plan.layout)
    phases["walk"] = time.perf_counter() - clock
    inside = (os.path.realpath(src), *(os.path.realpath(os.path.join(src, r)) for r in plan.roots))
    model = Model(src=src, discovery=disc, cache_status=cache.status if cache else "off", started=started,
                  statement_roots=plan.statement_roots)

    records: dict[str, list] = {}
    todo: list[SourceFile] = []
    for f in disc.files:
        entry = old_files.get(f.rel)
        if entry is not None and _unchanged(entry, f):
            records[f.rel] = list(entry)
        else:
            todo.append(f)
    known = disc.by_module
    roots = {r: os.path.join(src, r) for r in plan.roots if os.path.isdir(os.path.join(src, r))}
    context = _PartContext(plan, old_files, inside, known, roots, started, cache is not None)
    # The files to read, split over processes forked now (before grimp or any thread exists in
    # this one), each part read, filtered and parsed in full; the parts are merged in walk order.
    clock = time.perf_counter()
    n_jobs = workers.jobs(jobs, len(todo), sum(1 for f in todo if f.rel not in old_files))
    parts = workers.map_parts(_scan_part, context, todo, n_jobs)
    model.workers = n_jobs
    phases[f"read {len(todo)} files in {n_jobs} process{'es' if n_jobs > 1 else ''}"] = time.perf_counter() - clock
    clock = time.perf_counter()
    unreadable: dict[str, str] = {}
    touched: set[str] = set()
    decoded: set[str] = set()
    for part in parts:
        records.update(part.records)
        unreadable.update(part.unreadable)
        touched |= part.touched
        decoded |= part.decoded
        if plan.texts:
            model.texts.update(part.texts)
            model.statements.update(part.statements)
    order = {f.rel: i for i, f in enumerate(disc.files)}
    records = dict(sorted(records.items(), key=lambda item: order[item[0]]))
    if plan.texts:
        model.texts = dict(sorted(model.texts.items(), key=lambda item: order[item[0]]))

    by_rel = {f.rel: f for f in disc.files}
    scanner = EdgeScanner(known, roots)

    def needs_edges(f: SourceFile) -> bool:
        rec = records.get(f.rel)
        return rec is not None and rec[EDGES] is None and rec[ERROR] is None

    def store_edges(files: list[SourceFile], edges: dict, failed: dict) -> None:
        touched.update(f.rel for f in files)
        _store_edges(records, files, edges, failed, plan, {})

    # Records an earlier run left half done (it stopped between reading and parsing): parsed
    # whole here, their edges scanned with the closure's first round below.
    searchable = None
    prefilter = None
    for rel, rec in records.items():
        if rec[FLAGS] & AST and rec[REFS] is None and rec[ERROR] is None:
            if searchable is None:
                from contracts.engine.scan import searchable
                prefilter = _prefilter(plan)
            try:
                data = _read(by_rel[rel].path, inside)[0]
            except OSError as e:
                rec[ERROR] = f"cannot read: {e.strerror or e}"
                continue
            f = by_rel[rel]
            lines = _classify(f, data, plan, searchable, prefilter)[1]
            result = file_refs(data, f.module, f.is_package, plan.ast_words, lines, False)
            rec[REFS] = [_ref_tuple(r) for r in result.refs]
            rec[ERROR] = result.error
            touched.add(rel)
    decoded |= {f.module for f in disc.files if f.rel in records and records[f.rel][FLAGS] & DECODED}
    leftover = [f for f in disc.files if f.rel in records and records[f.rel][FLAGS] & GRAPH and needs_edges(f)]
    if leftover:
        store_edges(leftover, *scanner.scan(leftover, decoded))

    phases["merge"] = time.perf_counter() - clock
    clock = time.perf_counter()
    # Close the graph under imports from the checked packages.
    graph_set = {f.module for f in disc.files if f.rel in records and records[f.rel][FLAGS] & GRAPH}
    if plan.graph_prefixes:
        rel_of = {m: f.rel for m, f in known.items()}
        frontier = [m for m in rel_of if plan.graph_index.longest_of(m) is not None]
        reached = set(frontier)
        while frontier:
            missing = []
            for m in frontier:
                rec = records.get(rel_of[m])
                for imported, *_ in (rec[EDGES] or ()) if rec else ():
                    if imported in reached or plan.stop_index.longest_of(imported) is not None:
                        continue
                    reached.add(imported)
                    missing.append(imported)
            todo = [known[m] for m in missing if m in known and needs_edges(known[m])]
            if todo:
                store_edges(todo, *scanner.scan(todo, decoded))
            frontier = missing
        graph_set |= reached

    phases["closure"] = time.perf_counter() - clock
    clock = time.perf_counter()
    model._pending = (records, graph_set, unreadable)
    if not lazy:
        model.assemble()
    model.files_read = len(records)

    listing = [(f.rel, f.module, f.is_package) for f in disc.files]
    same = (old.get("discovery") == listing and old.get("skipped") == disc.skipped
            and old.get("other_modules", {}) == disc.other_modules
            and not (plan.texts and touched)  # what the text-reading rule sees changed
            and old.get("unreadable") == unreadable and old.get("generation")
            and all(records[rel][SEMANTIC] == old_files[rel][SEMANTIC] for rel in touched if rel in old_files)
            and all(rel in old_files for rel in touched))
    model.generation = old["generation"] if same else os.urandom(8).hex()
    if cache is not None and (touched or not same or cache.status != "warm"):
        cache.save({"files": records, "discovery": listing, "skipped": disc.skipped,
                    "missing_roots": disc.missing_roots, "unreadable": unreadable,
                    "other_modules": disc.other_modules,
                    "generation": model.generation}, started)
    phases["finish"] = time.perf_counter() - clock
    model.phases = phases
    return model


@dataclass(frozen=True)
class _PartContext:
    """What every part of a build shares (a forked worker inherits it)."""
    plan: ScanPlan
    old_files: dict
    inside: tuple[str, ...]
    known: dict
    roots: dict
    started: float
    hashed: bool  # a cache is kept: every file read gets its content hash


@dataclass
class _Part:
    """What one part of a build made of its files (plain values: a worker pickles it)."""
    records: dict[str, list] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)
    decoded: set[str] = field(default_factory=set)
    texts: dict[str, bytes] = field(default_factory=dict)  # `ScanPlan.texts`
    statements: dict[str, tuple] = field(default_factory=dict)  # `ScanPlan.statement_roots`

    def before_transfer(self) -> None:
        """In a worker, before pickling: the texts stay behind (the statements read off them go;
        a rule that needs a text reads the file again)."""
        if self.statements:
            self.texts = {}


def _scan_part(context: _PartContext, chunks) -> _Part:
    """Read the files of each chunk in `chunks` (files whose record is missing or stale), filter
    them, and parse what needs it: grimp's scans in batches on a second thread while this one
    reads and runs `ast`, chunk by chunk (another process may be taking the other chunks)."""
    from contracts.engine.scan import searchable

    plan, old_files, inside, started = context.plan, context.old_files, context.inside, context.started
    part = _Part()
    records, touched, decoded = part.records, part.touched, part.decoded
    prefilter = _prefilter(plan)
    reader = None
    if plan.statement_roots:
        from contracts.engine.import_lines import StatementReader

        reader = StatementReader(plan.statement_roots)
    background = _Background(EdgeScanner(context.known, context.roots))
    # Each native call also converts the description of every module of the tree (~1 us each):
    # batches grow with the tree, so that fixed cost stays a small share of the scan.
    batch_size = max(_BATCH, len(context.known) // 40)
    batch: list[SourceFile] = []
    texts: dict[str, bytes] = {}
    graph_files: list[SourceFile] = []
    by_rel: dict[str, SourceFile] = {}
    kept: dict[str, bytes] = {}  # content of the files parsed with ast, until grimp has checked them
    hot: dict[str, list[int] | None] = {}  # their hot lines (None: search for `ast_words`)
    done: list[str] = []
    for chunk in chunks:
        pending: dict[str, bytes] = {}  # this chunk's files to parse with ast
        for f in chunk:
            by_rel[f.rel] = f
            entry = old_files.get(f.rel)
            try:
                data, ctime = _read(f.path, inside)
            except TooLarge as e:
                part.unreadable[f.rel] = (f"cannot read: {e.size / 2**20:.1f} MiB, over the "
                                          f"{MAX_READ_BYTES // 2**20} MiB this tool reads; split or exclude the file")
                continue
            except OSError as e:
                part.unreadable[f.rel] = f"cannot read: {e.strerror or e}"
                continue
            touched.add(f.rel)
            if plan.texts:
                part.texts[f.rel] = data
            if reader is not None:
                part.statements[f.rel] = _statements_of(reader, data)
            # Every file's hash (SHA-1: 0.04 s for upstream's 68 MB): after a fresh copy or
            # checkout (every ctime new) the unchanged files are told by it, without the prefilter.
            digest = content_digest(data) if context.hashed else None
            if entry is not None and entry[DIGEST] is not None and digest == entry[DIGEST]:
                records[f.rel] = [f.mtime_ns, f.size, ctime, *entry[DIGEST:READ_AT], started]
                if entry[FLAGS] & GRAPH and entry[EDGES] is None and entry[ERROR] is None:
                    graph_files.append(f)  # an earlier run stopped before its edges
                    batch.append(f)
                continue
            flags, lines = _classify(f, data, plan, searchable, prefilter)
            if flags & AST:
                pending[f.rel] = data
                hot[f.rel] = lines
            if flags & DECODED:
                decoded.add(f.module)
            if flags & GRAPH:
                texts[f.rel] = data  # for the names of a from-import over several lines, not read twice
                graph_files.append(f)
            if flags & (AST | GRAPH):
                batch.append(f)  # its edges, or (AST only) grimp's check of the whole file's syntax
            records[f.rel] = [f.mtime_ns, f.size, ctime, digest, flags, None, None, None, None, started]
        if len(batch) >= batch_size:
            background.submit(batch, decoded)
            batch = []
        # The chunk's ast pass, as if grimp had checked every file; a file it did not check (it
        # failed, or is not for its scanner) is parsed again whole below, which says why.
        done += _scan_ast(records, pending, hot, by_rel, plan, parsed=None)
        kept.update(pending)
    background.submit(batch, decoded)
    edges, failed = background.results()
    _rescan_unchecked(records, kept, done, by_rel, hot, plan, set(edges))
    _store_edges(records, graph_files, edges, failed, plan, texts)
    return part


def _statements_of(reader, data: bytes) -> tuple:
    """What `missing_imports` reads off every file's text: (statements, unsure lines, whole file
    unsure, the names of its column-0 `def`s and `class`es); plain values, for a worker to send."""
    from contracts.engine.bindings import defs_at_column_0
    from contracts.engine.import_lines import WHOLE_FILE

    found, doubt = reader.read(data)
    whole = doubt is WHOLE_FILE  # (an identity: it would not survive pickling)
    return found, [] if whole else doubt, whole, defs_at_column_0(data)


def _store_edges(records: dict, files: list[SourceFile], edges: dict, failed: dict, plan: ScanPlan,
                 texts: dict[str, bytes]) -> None:
    for f in files:
        rec = records[f.rel]
        if rec[ERROR] is not None:
            continue  # the ast pass could not parse it: it has no edges
        if f.module in failed:
            rec[ERROR] = failed[f.module]
            continue
        rec[EDGES] = edges.get(f.module, [])
        rec[NAMES] = _names_for(f, rec[EDGES], plan.name_index, texts.pop(f.rel, None))


def _prefilter(plan: ScanPlan):
    if not plan.removed:
        return None
    from contracts.engine.prefilter import RemovedPrefilter

    return RemovedPrefilter(plan.removed)


def _classify(f: SourceFile, data: bytes, plan: ScanPlan, searchable, prefilter) -> tuple[int, list[int] | None]:
    """(AST | GRAPH | DECODED, hot lines): what to do with a file of this content. The hot lines
    are those the prefilter found (None: the file's `ast_words` decide, as Python reads it)."""
    from contracts.engine.scan import declared_encoding

    if not (plan.ast_words or plan.graph_words or plan.ast_prefixes or plan.graph_prefixes or plan.removed):
        return 0, None  # nothing to look for (a plan for the text-reading rules alone)
    module = f.module
    raw_graph = any(w in data for w in plan.graph_words)
    under_ast = plan.ast_index.longest_of(module) is not None
    graph_hit = raw_graph or plan.graph_index.longest_of(module) is not None
    # The words as Python reads the text (a declared encoding, NFKC-normalized identifiers); for
    # ASCII source without a declaration (nearly every file) that is `data` itself, at once.
    hay = searchable(data)
    if prefilter is not None:
        lines = prefilter.hot_lines(hay, module, f.is_package)
        ast_hit = bool(lines) or under_ast
        decoded = False
        if hay is not data:
            hay_graph = any(w in hay for w in plan.graph_words)
            # grimp's scanner reads raw UTF-8: a file in another declared encoding, or one whose
            # names appear only once normalized, gets its edges from `ast`. (Prose in fullwidth
            # punctuation, common in comments, changes under NFKC but needs no such detour.)
            decoded = declared_encoding(data) is not None or (hay_graph and not raw_graph) or (
                bool(lines) and lines != prefilter.hot_lines(data, module, f.is_package))
            graph_hit = graph_hit or hay_graph
        return (AST if ast_hit else 0) | (GRAPH if graph_hit else 0) | (DECODED if decoded else 0), lines
    raw_ast = any(w in data for w in plan.ast_words)
    ast_hit = raw_ast or under_ast
    decoded = False
    if hay is not data:
        hay_ast = any(w in hay for w in plan.ast_words)
        hay_graph = any(w in hay for w in plan.graph_words)
        decoded = declared_encoding(data) is not None or (hay_ast and not raw_ast) or (
            hay_graph and not raw_graph)
        ast_hit, graph_hit = ast_hit or hay_ast, graph_hit or hay_graph
    return (AST if ast_hit else 0) | (GRAPH if graph_hit else 0) | (DECODED if decoded else 0), None


def _scan_ast(records, pending, hot, by_rel, plan: ScanPlan, parsed: set[str] | None) -> list[str]:
    """References of the files in `pending`: of the hot statements only where grimp parsed the
    whole file (`parsed`; None: as if it had, see `_rescan_unchecked`), else (or when the kept
    text does not parse) of the whole file. Returns the files it scanned."""
    done = []
    for rel, data in pending.items():
        f = by_rel[rel]
        rec = records[rel]
        if rec[ERROR] is not None:
            continue
        checked = parsed is None or f.module in parsed
        result = file_refs(data, f.module, f.is_package, plan.ast_words, hot.get(rel), checked)
        rec[REFS] = [_ref_tuple(r) for r in result.refs]
        rec[ERROR] = result.error
        done.append(rel)
    return done


def _rescan_unchecked(records, pending, done, by_rel, hot, plan: ScanPlan, parsed: set[str]) -> None:
    """The files `_scan_ast` read in part as if grimp had checked them, where it did not (it
    failed on them, or they are not for its scanner): parsed again whole, which says why."""
    for rel in done:
        f = by_rel[rel]
        if f.module in parsed:
            continue
        rec = records[rel]
        result = file_refs(pending[rel], f.module, f.is_package, plan.ast_words, hot.get(rel), False)
        rec[REFS] = [_ref_tuple(r) for r in result.refs]
        rec[ERROR] = result.error
    pending.clear()


_BATCH = 128  # files per native scan call (each costs ~5 ms besides its files): soon enough that
# the scanner works while this thread runs `ast` on the first chunks


class _Background:
    """grimp's scans on one second thread. The native scanner releases the GIL while it parses
    (with its own worker threads), so this thread's Python -- reading, the prefilter, `ast` --
    runs meanwhile on the other core. Results do not depend on how the files are batched: each
    file's edges are resolved against every module of the tree."""

    def __init__(self, scanner: EdgeScanner) -> None:
        self.scanner = scanner
        self.pool = None
        self.futures: list = []

    def submit(self, files: list[SourceFile], decoded: set[str]) -> None:
        if not files:
            return
        if self.pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(1, thread_name_prefix="namespace-lint-scan")
        self.futures.append(self.pool.submit(self.scanner.scan, list(files), frozenset(decoded)))

    def results(self) -> tuple[dict, dict]:
        edges: dict = {}
        failed: dict = {}
        try:
            for fut in self.futures:
                e, f = fut.result()
                edges.update(e)
                failed.update(f)
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True)
        self.futures = []
        self.pool = None
        return edges, failed


def file_refs(data: bytes, module: str, is_package: bool, words, lines: list[int] | None, checked: bool):
    """The references of one file (a `FileScan`): of the statements that span its hot `lines`
    (None: the lines holding `words`), from the top-level statements around them where grimp
    has already checked the whole file's syntax (`checked`), else from the whole file."""
    from contracts.engine import scan as scan_mod
    from contracts.engine.scan import scan_source
    from contracts.engine.window import keep_hot_statements

    limit = getattr(scan_mod, "MAX_PARSE_BYTES", None)
    if checked and (limit is None or len(data) <= limit):
        # Only the hot statements inside their blocks, else the whole top-level statements
        # around them: a window that does not parse (a line at column 0 inside brackets cut a
        # statement) is no answer, the next larger one is asked.
        for nested in (True, False):
            kept = keep_hot_statements(data, words, lines, nested=nested)
            if kept is None:
                break
            result = scan_source(kept, module, is_package, words, lines)
            if result.error is None:
                return result
    return scan_source(data, module, is_package, words, lines)


def _names_for(f: SourceFile, edges, prefixes, text: bytes | None = None) -> dict | None:
    needed = {}
    for imported, line, contents in edges:
        if line not in needed and "import" in contents and prefixes.longest_of(imported) is not None:
            needed[line] = contents
    if not needed:
        return None
    out: dict = {}
    lines = None
    for line, contents in sorted(needed.items()):
        # Most statements are whole on the line grimp reports; the file is read only for the
        # rest (a parenthesized list over several lines, a statement after `;`).
        names = names_from_text(contents)
        if names is None and not is_plain_import(contents):
            if lines is None:
                lines = read_lines(f.path) if text is None else physical_lines(text)
            names = statement_names(lines, line)
        out[line] = names
    return out
