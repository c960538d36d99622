"""Build the model of a tree: walk -> read -> merge -> close, reusing the cache where it holds.

Every file is walked and stat'ed (`discover.py`); the ones without a valid cached record are
read, filtered and parsed by `reading.py`, in one process or several (`workers.py`), and their
records (`file_record.py`) merged in walk order. The graph is then closed under imports
(`closure.py`): a module reached from the plan's graph prefixes is scanned too, so chains through
modules that name none of them are followed (the walk stops at the plan's `closure_stop` packages).

How much is rebuilt, cheapest first (the cache is `cache.py`):

- `stamp.load_result`: the last full run's findings, when no file or directory under the roots has
  changed since (one `stat` each); nothing is read or parsed, and this module is not even imported;
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

from contracts._record import Record
from contracts.engine import workers
from contracts.engine.cache import RACY_SECONDS, Cache
from contracts.engine.closure import close
from contracts.engine.discover import Discovery, SourceFile, discover
from contracts.engine.file_record import FileRecord
from contracts.engine.files import TooLarge, read_regular
from contracts.engine.graph import Edge, EdgeScanner
from contracts.engine.importers import Layout, importer_name
from contracts.engine.reading import (
    PartContext,
    classify,
    file_refs,
    part_tools,
    prefilter_for,
    read_source,
    scan_part,
    store_edges,
)
from contracts.engine.records import DECODED, GRAPH, MAX_READ_BYTES, ScanPlan, cache_key, ref_tuple
from contracts.engine.scan import MAX_PARSE_BYTES, ImportRef, scan_source, searchable
from contracts.engine.shared_texts import SharedTexts


class Model(Record, hidden=("_pending",)):
    """What the rules read of a tree: its modules, their references and edges, what failed.
    (Not slotted: a rule keeps what it derives from the model in the instance's `__dict__`.)"""

    src: str
    discovery: Discovery
    refs: dict[str, list]  # rel path -> [ImportRef]
    errors: dict[str, str]  # rel path -> reason
    edges: list[Edge]
    graph_modules: set[str]
    files_read: int
    cache_status: str
    # Changes whenever what the rules see changes; equal generations give equal findings.
    generation: str
    started: float  # when the build started, before it read anything
    texts: dict[str, bytes]  # rel path -> content, read in this run (`ScanPlan.texts`)
    # The texts the readers of a forked run read (`ScanPlan.texts`), not in `texts`: read from there, not again from disk.
    shared: SharedTexts | None
    workers: int  # processes that read the files (`workers.py`)
    # rel path -> (statements (a worker's `import_lines.packed`), unsure lines, whole file unsure,
    # `runtime.text_facts`, column-0 `def`/`class` names as `index.def_names_at_column_0` joins
    # them), read in this run for `ScanPlan.statement_roots`.
    statements: dict[str, tuple]
    statement_roots: tuple[str, ...]  # what `statements` were read for
    # path -> SHA-1 of the content its record was made from (a cache is kept): the stamp keeps
    # them, so a tree whose stats all changed but not its contents (a fresh copy) is told apart.
    digests: dict[str, bytes]
    _pending: tuple | None  # what `assemble` builds from
    phases: dict[str, float]  # seconds per step of the build (`--verbose`)

    def __init__(self, src: str, discovery: Discovery, refs: dict | None = None, errors: dict | None = None,
                 edges: list | None = None, graph_modules: set | None = None, files_read: int = 0,
                 cache_status: str = "off", generation: str = "", started: float = 0.0, texts: dict | None = None,
                 shared: SharedTexts | None = None, workers: int = 1, statements: dict | None = None,
                 statement_roots: tuple[str, ...] = (), digests: dict | None = None, _pending: tuple | None = None,
                 phases: dict | None = None) -> None:
        self.__dict__.update(
            src=src, discovery=discovery, refs={} if refs is None else refs, errors={} if errors is None else errors,
            edges=[] if edges is None else edges, graph_modules=set() if graph_modules is None else graph_modules,
            files_read=files_read, cache_status=cache_status, generation=generation, started=started,
            texts={} if texts is None else texts, shared=shared, workers=workers,
            statements={} if statements is None else statements, statement_roots=statement_roots,
            digests={} if digests is None else digests, _pending=_pending, phases={} if phases is None else phases)

    @property
    def modules(self) -> dict[str, SourceFile]:
        return self.discovery.by_module

    def assemble(self) -> Model:
        """Fill `refs`, `errors`, `edges` and `graph_modules` from the records (once)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return self
        records, graph_set, unreadable = pending
        for f in self.discovery.files:
            rec = records.get(f.rel)
            if rec is not None:
                self._take(f, rec, f.module in graph_set)
        self.errors.update(unreadable)
        return self

    def _take(self, f: SourceFile, rec: FileRecord, in_graph: bool) -> None:
        """One file's record into the model's maps."""
        if rec.error is not None:
            self.errors[f.rel] = rec.error
        if rec.refs is not None:
            self.refs[f.rel] = [ImportRef(*t) for t in rec.refs]
        if rec.edges is not None and in_graph:
            self.graph_modules.add(f.module)
            names = rec.names or {}
            for imported, line, contents in rec.edges:
                self.edges.append(Edge(f.module, imported, line, contents, names.get(line)))


def _racy(mtime_ns: int, ctime_ns: int, read_at: float) -> bool:
    """Modified so close to when it was read that a second edit could keep the same stat."""
    return max(mtime_ns, ctime_ns) / 1e9 >= read_at - RACY_SECONDS


def _unchanged(entry: FileRecord, f: SourceFile) -> bool:
    """The record still describes the file: same (mtime, size, ctime) -- ctime moves on every
    write, even one that puts the mtime back (`cp -p`, `touch -d`) -- and not racy."""
    if entry.mtime_ns != f.mtime_ns or entry.size != f.size:
        return False
    ctime = f.ctime_ns
    if not ctime:  # not from the walk (changed-files mode): ask
        try:
            ctime = os.stat(f.path).st_ctime_ns
        except OSError:
            return False
    return ctime == entry.ctime_ns and not _racy(f.mtime_ns, ctime, entry.read_at)


def _weight(f: SourceFile) -> int:
    return max(f.size, 0) + 2048  # (-1: not known, `discover`'s `sizes`: every file alike)


def build_model(src: str, plan: ScanPlan, cache_dir: str | None = None, jobs: int | None = None,
                lazy: bool = False) -> Model:
    """The model of the tree under `src`: every file is stat'ed, the cache reused for those whose
    stat is unchanged. `jobs`: processes for the files to read (None: `workers.jobs()`).
    `lazy`: leave `refs`, `errors`, `edges` and `graph_modules` empty until `Model.assemble()`
    (a run whose findings the cache holds for this generation never needs them)."""
    build = _Build(src, plan, cache_dir)
    build.walk()
    build.merge(build.read(jobs))
    graph_set = build.close_graph()
    return build.finish(graph_set, lazy)


class _Build:
    """The state one `build_model` passes from step to step."""

    def __init__(self, src: str, plan: ScanPlan, cache_dir: str | None) -> None:
        self.started = time.time()
        self.src = src = os.path.abspath(src)
        self.plan = plan
        self.cache = Cache(cache_dir, cache_key(src, plan)) if cache_dir else None
        self.old: dict = self.cache.load() if self.cache else {}
        self.stored: dict[str, list] = self.old.get("files", {})  # the cache's records, as stored
        self.old_files = {rel: FileRecord.of(entry) for rel, entry in self.stored.items()}
        self.records: dict[str, FileRecord] = {}
        self.todo: list[SourceFile] = []  # the files to read
        self.unreadable: dict[str, str] = {}
        self.touched: set[str] = set()  # the files read, parsed or scanned in this run
        self.decoded: set[str] = set()  # modules whose edges come from `ast` (DECODED)
        self.early: tuple | None = None  # the closure scanned while the files were read
        self.shared: SharedTexts | None = None  # where the readers put their texts (`read`, when it forks)
        self.phases: dict[str, float] = {}
        self.clock = time.perf_counter()

    def lap(self, step: str) -> None:
        """Time the step that ends now, from the last `lap` (or `restart`)."""
        now = time.perf_counter()
        self.phases[step] = now - self.clock
        self.clock = now

    def restart(self) -> None:
        self.clock = time.perf_counter()

    def walk(self) -> None:
        """Discover the files, and split them into the ones whose record holds and those to read."""
        plan, src = self.plan, self.src
        # (Sizes and times: for the cache's stamps, and to batch and guard what goes to grimp's
        # scanner; a plan that reads the texts alone, with no cache, has no use for them.)
        self.disc = disc = discover(src, plan.roots, plan.layout, sizes=self.cache is not None or not plan.looks_for_nothing)
        self.lap("walk")
        self.inside = (os.path.realpath(src), *(os.path.realpath(os.path.join(src, r)) for r in plan.roots))
        self.model = Model(src=src, discovery=disc, cache_status=self.cache.status if self.cache else "off",
                           started=self.started, statement_roots=plan.statement_roots)
        self.by_rel = {f.rel: f for f in disc.files}
        for f in disc.files:
            entry = self.old_files.get(f.rel)
            if entry is not None and _unchanged(entry, f):
                self.records[f.rel] = FileRecord.of(self.stored[f.rel])  # (its own copy: it may be completed)
            else:
                self.todo.append(f)
        self.known = disc.by_module
        self.roots = {r: os.path.join(src, r) for r in plan.roots if os.path.isdir(os.path.join(src, r))}
        # One scanner for this process's part and the closure: its set-up (a description of
        # every module) is made once. A forked worker sets up its own copy.
        self.scanner = EdgeScanner(self.known, self.roots)

    def read(self, jobs: int | None) -> list:
        """Read the files without a valid record, split over processes forked now (before grimp
        or any thread exists in this one): each part read, filtered and parsed in full."""
        self.restart()
        plan, todo = self.plan, self.todo
        n_jobs = workers.jobs(jobs, len(todo), sum(1 for f in todo if f.rel not in self.old_files))
        self.shared = SharedTexts.for_readers(n_jobs, MAX_READ_BYTES) if plan.texts and n_jobs > 1 else None
        context = PartContext(plan, self.old_files, self.inside, self.known, self.roots, self.started,
                              self.cache is not None, self.scanner,
                              part_tools(plan, forking=n_jobs > 1) if todo else None, self.shared)
        # (The heaviest files first, in chunks of equal weight: a file's cost is roughly its
        # bytes, with ~2 kB of it per file.)
        try:
            parts = workers.map_parts(scan_part, context, todo, n_jobs, weight=_weight, own=self._lead_files())
        except BaseException:
            if self.shared is not None:
                self.shared.sealed()  # (its files closed)
            raise
        if self.shared is not None:  # every reader has finished: what they put is mapped here
            for part in parts:
                self.shared.received(part.shared)
            self.shared.sealed()
            self.model.shared = self.shared if self.shared.slots else None
        self.model.workers = n_jobs
        self.lap(f"read {len(todo)} files in {n_jobs} process{'es' if n_jobs > 1 else ''}")
        return parts

    def _lead_files(self):
        """Where every file is read (a cold run): the files this process reads first, those
        under the graph prefixes, so that it predicts and scans the closure from their edges
        while the rest is read (`scan_part`'s `lead`). Else None."""
        plan, todo = self.plan, self.todo
        if not (plan.graph_prefixes and todo and len(todo) == len(self.disc.files)):
            return None
        exact, heads = set(plan.graph_prefixes), tuple(p + "." for p in plan.graph_prefixes)
        return lambda f: f.module in exact or f.module.startswith(heads)

    def merge(self, parts: list) -> None:
        """The parts' records in walk order, then what an earlier run left half done."""
        for part in parts:
            self._take(part.received())
        self._in_walk_order()
        self._parse_unparsed()
        self._scan_unscanned()
        self.lap("merge")

    def _take(self, part) -> None:
        self.early = self.early or part.early
        self.records.update(part.records)
        self.unreadable.update(part.unreadable)
        self.touched |= part.touched
        self.decoded |= part.decoded
        if self.plan.texts:
            self.model.texts.update(part.texts)
            self.model.statements.update(part.statements)

    def _in_walk_order(self) -> None:
        """Every map keyed by file in walk order (every key is a walked file's: one pass over
        the walk, not a sort)."""
        rels = [f.rel for f in self.disc.files]
        records, unreadable = self.records, self.unreadable
        self.records = {rel: records[rel] for rel in rels if rel in records}
        self.unreadable = {rel: unreadable[rel] for rel in rels if rel in unreadable} if unreadable else {}
        if self.plan.texts:
            texts = self.model.texts
            self.model.texts = {rel: texts[rel] for rel in rels if rel in texts}

    def _parse_unparsed(self) -> None:
        """The records an earlier run left half done (it stopped between reading and parsing):
        parsed whole here."""
        prefilter = None
        for rel, rec in self.records.items():
            if not rec.wants_ast():
                continue
            f = self.by_rel[rel]
            try:
                data = read_source(f.path, self.inside)[0]
            except OSError as e:
                rec.error = f"cannot read: {e.strerror or e}"
                continue
            prefilter = prefilter or prefilter_for(self.plan)
            lines = classify(f, data, self.plan, searchable, prefilter)[1]
            result = file_refs(data, f.module, f.is_package, self.plan.ast_words, lines, False)
            rec.refs = [ref_tuple(r) for r in result.refs]
            rec.error = result.error
            self.touched.add(rel)

    def needs_edges(self, f: SourceFile) -> bool:
        rec = self.records.get(f.rel)
        return rec is not None and rec.wants_edges()

    def add_edges(self, files: list[SourceFile], edges: dict, failed: dict) -> None:
        self.touched.update(f.rel for f in files)
        store_edges(self.records, files, edges, failed, self.plan, {})

    def _with_flag(self, flag: int) -> list[SourceFile]:
        """The files whose record has `flag`, in walk order (as the records are, once merged)."""
        return [self.by_rel[rel] for rel, rec in self.records.items() if rec.flags & flag]

    def _scan_unscanned(self) -> None:
        """The graph files whose edges an earlier run did not scan: scanned now."""
        records, plan, decoded = self.records, self.plan, self.decoded
        decoded |= {f.module for f in self._with_flag(DECODED)}
        leftover = [f for f in self._with_flag(GRAPH) if records[f.rel].wants_edges()]
        whole = [f for f in leftover if not plan.narrow_file(f.module, records[f.rel].flags)]
        if whole:
            self.add_edges(whole, *self.scanner.scan(whole, decoded))
        if len(whole) < len(leftover):
            narrow = [f for f in leftover if plan.narrow_file(f.module, records[f.rel].flags)]
            self.add_edges(narrow, *self.scanner.scan_into(narrow, plan.named_index, decoded))

    def close_graph(self) -> set[str]:
        """The graph files, and the modules reached from the graph prefixes by imports."""
        records, plan = self.records, self.plan
        graph_set = {f.module for f in self._with_flag(GRAPH)}
        if plan.graph_prefixes:
            rel_of = {m: f.rel for m, f in self.known.items()}
            early = self.early
            if early is not None:  # (a module read otherwise than its bytes was scanned natively there)
                early = (*early[:2], set(early[2]) - self.decoded)
            graph_set |= close(plan.graph_index, plan.stop_index, self.known, records, rel_of, self.needs_edges,
                               lambda files: self.scanner.scan(files, self.decoded), self.add_edges, early)
        self.lap("closure")
        return graph_set

    def finish(self, graph_set: set[str], lazy: bool) -> Model:
        """The model filled in (or left to `assemble`), its generation, and the cache saved."""
        model, records = self.model, self.records
        model._pending = (records, graph_set, self.unreadable)
        model.digests = {self.by_rel[rel].path: rec.digest for rel, rec in records.items() if rec.digest is not None}
        if not lazy:
            model.assemble()
        model.files_read = len(records)
        listing = [(f.rel, f.module, f.is_package) for f in self.disc.files]
        same = self._same_findings(listing)
        model.generation = self.old["generation"] if same else os.urandom(8).hex()
        if self.cache is not None and (self.touched or not same or self.cache.status != "warm"):
            self._save(listing)
        self.lap("finish")
        model.phases = self.phases
        return model

    def _same_findings(self, listing: list) -> bool:
        """Does the rules' input equal the last run's (then its generation, and findings, stand)?"""
        old, disc = self.old, self.disc
        return bool(old.get("discovery") == listing and old.get("skipped") == disc.skipped
                    and old.get("other_modules", {}) == disc.other_modules
                    and not (self.plan.texts and self.touched)  # what a rule reading the texts sees changed
                    and old.get("unreadable") == self.unreadable and old.get("generation")
                    and all(rel in self.old_files and self.records[rel].semantic() == self.old_files[rel].semantic()
                            for rel in self.touched))

    def _save(self, listing: list) -> None:
        """The records, in the cache's plain form, with what the next run compares its walk to."""
        disc = self.disc
        self.cache.save({"files": {rel: rec.stored() for rel, rec in self.records.items()}, "discovery": listing,
                    "skipped": disc.skipped, "missing_roots": disc.missing_roots, "unreadable": self.unreadable,
                    "other_modules": disc.other_modules, "generation": self.model.generation}, self.started)


def importer_model(files: list[str], src: str, layout: Layout, words: tuple[bytes, ...]) -> Model:
    """A model of importer files (`importers.py`): their references (only of the files that
    contain one of `words`), parse errors, and what could not be read (`discovery.skipped`); no
    graph. They are read on every run, never cached."""
    disc = Discovery(src=src)
    model = Model(src=src, discovery=disc)
    for path in files:
        rel = os.path.relpath(path, src).replace(os.sep, "/")
        data = _read_importer(path, rel, disc)
        if data is None:
            continue
        name = importer_name(layout, path)
        disc.files.append(SourceFile(path, rel, name, False, data[1].st_mtime_ns, data[1].st_size))
        model.files_read += 1
        if any(w in searchable(data[0]) for w in words):
            result = _importer_refs(data[0], name, words)
            model.refs[rel] = result.refs
            if result.error is not None:
                model.errors[rel] = result.error
    return model


def _read_importer(path: str, rel: str, disc: Discovery) -> tuple | None:
    """(content, stat) of an importer file, or None with the reason in `disc.skipped`."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:  # cannot be printed as it is, nor be a module's name
        shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        disc.skipped.append((shown, "the name is not valid UTF-8"))
        return None
    try:  # bounded as every reader is: a link to /dev/zero, a 1 GiB file are not read
        return read_regular(os.path.realpath(path), limit=MAX_READ_BYTES)
    except TooLarge:
        disc.skipped.append((rel, f"over the {MAX_READ_BYTES // 2**20} MiB this tool reads; split or exclude the file"))
    except OSError as e:
        disc.skipped.append((rel, f"cannot read: {e.strerror or e}"))
    return None


def _importer_refs(data: bytes, name: str, words: tuple[bytes, ...]):
    """An importer's references (a `FileScan`): of the top-level statements around `words` (as
    for the package's files, `window.py`); of the whole file when that text does not parse alone."""
    from contracts.engine.window import keep_hot_statements  # (start-up: ~3 ms, as in `reading.file_refs`)

    kept = keep_hot_statements(data, words) if len(data) <= MAX_PARSE_BYTES else None
    result = scan_source(kept, name, False, words) if kept is not None else None
    if result is None or result.error is not None:
        result = scan_source(data, name, False, words)
    return result
