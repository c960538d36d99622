"""Scan a tree once: which files to read with `ast`, which to give grimp's scanner, with cache.

A rule only cares about files that can name what it checks. Every file is walked and stat'ed
here; the ones without a valid cached record are read, filtered and parsed by `reading.py`, in
one process or several (`workers.py`), and their records (`records.py`) merged in walk order.
The graph is then closed under imports (`closure.py`): a module reached from the checked packages
is scanned too, so chains through modules that never name them are followed (chains stop at the
`stop` packages, whose imports a rule already reports at the first hop).

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

from contracts._record import Record
from contracts.engine.cache import RACY_SECONDS, Cache
from contracts.engine.closure import close
from contracts.engine.discover import Discovery, SourceFile, discover
from contracts.engine.graph import Edge, EdgeScanner
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
from contracts.engine.records import (  # noqa: F401 - known here before the split
    AST,
    CTIME,
    DECODED,
    DIGEST,
    EDGES,
    ERROR,
    FLAGS,
    GRAPH,
    MAX_READ_BYTES,
    MTIME,
    NAMES,
    READ_AT,
    REFS,
    SEMANTIC,
    SIZE,
    ScanPlan,
    cache_key,
    ref_tuple,
)


class Model(Record, hidden=("_pending",)):
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
    workers: int  # processes that read the files (`workers.py`)
    # rel path -> (statements, unsure lines, whole file unsure, `runtime.text_facts`, column-0
    # `def`/`class` names), read in this run for `ScanPlan.statement_roots`.
    statements: dict[str, tuple]
    statement_roots: tuple[str, ...]  # what `statements` were read for
    # path -> SHA-1 of the content its record was made from (a cache is kept): the stamp keeps
    # them, so a tree whose stats all changed but not its contents (a fresh copy) is told apart.
    digests: dict[str, bytes]
    _pending: tuple | None  # what `assemble` builds from
    phases: dict[str, float]  # seconds per step of the build (`--verbose`)

    def __init__(self, src: str, discovery: Discovery, refs: dict[str, list] | None = None,
                 errors: dict[str, str] | None = None, edges: list[Edge] | None = None,
                 graph_modules: set[str] | None = None, files_read: int = 0, cache_status: str = "off",
                 generation: str = "", started: float = 0.0, texts: dict[str, bytes] | None = None, workers: int = 1,
                 statements: dict[str, tuple] | None = None, statement_roots: tuple[str, ...] = (),
                 digests: dict[str, bytes] | None = None, _pending: tuple | None = None,
                 phases: dict[str, float] | None = None) -> None:
        self.src, self.discovery = src, discovery
        self.refs = {} if refs is None else refs
        self.errors = {} if errors is None else errors
        self.edges = [] if edges is None else edges
        self.graph_modules = set() if graph_modules is None else graph_modules
        self.files_read, self.cache_status, self.generation, self.started = files_read, cache_status, generation, started
        self.texts = {} if texts is None else texts
        self.workers = workers
        self.statements = {} if statements is None else statements
        self.statement_roots = statement_roots
        self.digests = {} if digests is None else digests
        self._pending = _pending
        self.phases = {} if phases is None else phases

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
            ctime = os.stat(f.path).st_ctime_ns
        except OSError:
            return False
    return ctime == entry[CTIME] and not _racy(f.mtime_ns, ctime, entry[READ_AT])


def _weight(f: SourceFile) -> int:
    return f.size + 2048


def build_model(src: str, plan: ScanPlan, cache_dir: str | None = None, jobs: int | None = None,
                lazy: bool = False) -> Model:
    """The model of the tree under `src`: every file is stat'ed, the cache reused for those whose
    stat is unchanged. `jobs`: processes for the files to read (None: `workers.jobs()`).
    `lazy`: leave `refs`, `errors`, `edges` and `graph_modules` empty until `Model.assemble()`
    (a run whose findings the cache holds for this generation never needs them)."""
    from contracts.engine import workers

    started = time.time()
    src = os.path.abspath(src)
    cache = Cache(cache_dir, cache_key(src, plan)) if cache_dir else None
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
    # One scanner for this process's part and the closure below: its set-up (the description of
    # every module, 17-27 ms on 0.5.23) is made once. A forked worker sets up its own copy.
    scanner = EdgeScanner(known, roots)
    # The files to read, split over processes forked now (before grimp or any thread exists in
    # this one), each part read, filtered and parsed in full; the parts are merged in walk order.
    clock = time.perf_counter()
    n_jobs = workers.jobs(jobs, len(todo), sum(1 for f in todo if f.rel not in old_files))
    context = PartContext(plan, old_files, inside, known, roots, started, cache is not None, scanner,
                          part_tools(plan, forking=n_jobs > 1) if todo else None)
    # (The heaviest files first, in chunks of equal weight: a file's cost is roughly its bytes,
    # with ~2 kB of it per file.) Where every file is read (a cold run), this process reads the
    # modules under the graph prefixes first and predicts and scans the closure from their edges
    # while the rest is read (`scan_part`'s `lead`).
    own = None
    if plan.graph_prefixes and todo and len(todo) == len(disc.files):
        exact, heads = set(plan.graph_prefixes), tuple(p + "." for p in plan.graph_prefixes)
        own = lambda f: f.module in exact or f.module.startswith(heads)  # noqa: E731
    parts = workers.map_parts(scan_part, context, todo, n_jobs, weight=_weight, own=own)
    model.workers = n_jobs
    phases[f"read {len(todo)} files in {n_jobs} process{'es' if n_jobs > 1 else ''}"] = time.perf_counter() - clock
    clock = time.perf_counter()
    unreadable: dict[str, str] = {}
    touched: set[str] = set()
    decoded: set[str] = set()
    early = None
    for part in parts:
        early = early or part.early
        records.update(part.records)
        unreadable.update(part.unreadable)
        touched |= part.touched
        decoded |= part.decoded
        if plan.texts:
            model.texts.update(part.texts)
            model.statements.update(part.statements)
    # In walk order (every key is a walked file's): one pass over the walk, not a sort.
    rels = [f.rel for f in disc.files]
    records = {rel: records[rel] for rel in rels if rel in records}
    unreadable = {rel: unreadable[rel] for rel in rels if rel in unreadable} if unreadable else {}
    if plan.texts:
        texts = model.texts
        model.texts = {rel: texts[rel] for rel in rels if rel in texts}

    by_rel = {f.rel: f for f in disc.files}

    def needs_edges(f: SourceFile) -> bool:
        rec = records.get(f.rel)
        return rec is not None and rec[EDGES] is None and rec[ERROR] is None

    def add_edges(files: list[SourceFile], edges: dict, failed: dict) -> None:
        touched.update(f.rel for f in files)
        store_edges(records, files, edges, failed, plan, {})

    # Records an earlier run left half done (it stopped between reading and parsing): parsed
    # whole here, their edges scanned with the closure's first round below.
    searchable = None
    prefilter = None
    for rel, rec in records.items():
        if rec[FLAGS] & AST and rec[REFS] is None and rec[ERROR] is None:
            if searchable is None:
                from contracts.engine.scan import searchable
                prefilter = prefilter_for(plan)
            try:
                data = read_source(by_rel[rel].path, inside)[0]
            except OSError as e:
                rec[ERROR] = f"cannot read: {e.strerror or e}"
                continue
            f = by_rel[rel]
            lines = classify(f, data, plan, searchable, prefilter)[1]
            result = file_refs(data, f.module, f.is_package, plan.ast_words, lines, False)
            rec[REFS] = [ref_tuple(r) for r in result.refs]
            rec[ERROR] = result.error
            touched.add(rel)
    decoded |= {f.module for f in disc.files if f.rel in records and records[f.rel][FLAGS] & DECODED}
    leftover = [f for f in disc.files if f.rel in records and records[f.rel][FLAGS] & GRAPH and needs_edges(f)]
    whole = [f for f in leftover if not plan.narrow_file(f.module, records[f.rel][FLAGS])]
    if whole:
        add_edges(whole, *scanner.scan(whole, decoded))
    if len(whole) < len(leftover):
        narrow = [f for f in leftover if plan.narrow_file(f.module, records[f.rel][FLAGS])]
        add_edges(narrow, *scanner.scan_into(narrow, plan.named_index, decoded))

    phases["merge"] = time.perf_counter() - clock
    clock = time.perf_counter()
    # Close the graph under imports from the checked packages.
    graph_set = {f.module for f in disc.files if f.rel in records and records[f.rel][FLAGS] & GRAPH}
    if plan.graph_prefixes:
        rel_of = {m: f.rel for m, f in known.items()}
        if early is not None:  # (a module read otherwise than its bytes was scanned natively there)
            early = (*early[:2], set(early[2]) - decoded)
        graph_set |= close(plan.graph_index, plan.stop_index, known, records, rel_of, needs_edges,
                           lambda files: scanner.scan(files, decoded), add_edges, early)

    phases["closure"] = time.perf_counter() - clock
    clock = time.perf_counter()
    model._pending = (records, graph_set, unreadable)
    model.digests = {by_rel[rel].path: rec[DIGEST] for rel, rec in records.items() if rec[DIGEST] is not None}
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
