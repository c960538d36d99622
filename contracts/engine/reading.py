"""Read, filter and parse a part of a tree's files: what each process of a cold run does.

Every file is read (and counted as scanned) and goes through one byte-level pass,
`prefilter.py`: the root package's name and relative imports, each hit looked up by its name
parts against the removed prefixes, so the cost does not grow with how many prefixes there are.
Only the files with a line that may name a removed module are parsed with `ast`, and of those
only the statements around such lines (`window.py`), once grimp's native scanner has parsed the
whole file, so a syntax error anywhere in it is still reported. Any import of a module under
`pkg.kernels` from outside `pkg/kernels/` contains the word `kernels`, and the same prefilter,
asked for `pkg.kernels`, tells such an import from `triton_kernels`, `self.kernels` or prose (on
0.5.23, 516 of the 778 files outside the package that hold the word: 16.4 of 22.4 MB): those
files get their edges from grimp's scanner, in one call once the part's files are read (`_BATCH`);
those of a higher layer (375 of them on 0.5.23, in `sglang/srt`), in another call, for their
edges into the package alone (`ScanPlan.narrow`), each file read whole, so a syntax error anywhere
in it is reported.

`scan_part` does this for the chunks of files it is given (`workers.py` hands them out) and
returns plain records (`records.py`), which the build (`model.py`) merges in walk order.
"""

from __future__ import annotations

import os

from contracts._record import Record
from contracts.engine.cache import content_digest
from contracts.engine.discover import SourceFile
from contracts.engine.files import NotRegular, TooLarge, read_regular
from contracts.engine.graph import (
    MAX_STATEMENT_LINES,
    EdgeScanner,
    is_plain_import,
    names_from_text,
    native_adapter,
    statement_names,
)
from contracts.engine.records import (
    AST,
    DECODED,
    DIGEST,
    EDGES,
    ERROR,
    FLAGS,
    GRAPH,
    MAX_READ_BYTES,
    NAMES,
    READ_AT,
    REFS,
    ScanPlan,
    ref_tuple,
)
from contracts.engine.resolve import line_holding, physical_lines


def _ctime_ns(st) -> int:
    return st.st_ctime_ns


def read_source(path: str, inside: tuple[str, ...] = ()) -> tuple[bytes, int]:
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


class PartContext(Record, frozen=True):
    """What every part of a build shares (a forked worker inherits it)."""
    plan: ScanPlan
    old_files: dict
    inside: tuple[str, ...]
    known: dict
    roots: dict
    started: float
    hashed: bool  # a cache is kept: every file read gets its content hash
    scanner: EdgeScanner
    tools: tuple | None  # `part_tools(plan)`, made once for every part

    def __init__(self, plan: ScanPlan, old_files: dict, inside: tuple[str, ...], known: dict, roots: dict,
                 started: float, hashed: bool, scanner: EdgeScanner, tools: tuple | None = None) -> None:
        self.__dict__.update(plan=plan, old_files=old_files, inside=inside, known=known, roots=roots,
                             started=started, hashed=hashed, scanner=scanner, tools=tools)


def part_tools(plan: ScanPlan, forking: bool = False) -> tuple:
    """(prefilter, graph prefilter, statement reader) for the parts of a build, made before any
    fork with the modules a part needs imported (`forking`: grimp's adapter too), so that a forked
    child inherits them instead of making its own."""
    # (`window`, which only a file naming a removed module needs, is imported where one is read:
    # 2.7 ms of its patterns compiled before the fork in every run otherwise.)
    from contracts.engine import scan  # noqa: F401 - imported here, before the fork

    reader = None
    if plan.statement_roots:
        from contracts.engine.import_lines import StatementReader

        reader = StatementReader(plan.statement_roots)
    if forking:
        native_adapter()  # (None: no usable grimp; each scan then reads its files with `ast`)
    return prefilter_for(plan), graph_prefilter_for(plan), reader


class Part(Record):
    """What one part of a build made of its files (plain values: a worker pickles it)."""
    records: dict[str, list]
    unreadable: dict[str, str]
    touched: set[str]
    decoded: set[str]
    texts: dict[str, bytes]  # `ScanPlan.texts`
    statements: dict[str, tuple]  # `ScanPlan.statement_roots`
    # The closure's prediction, made and scanned by the part that read every module under the
    # graph prefixes (`scan_part`'s `lead`): (edges, failed, the modules scanned), or None.
    early: tuple | None

    def __init__(self, records: dict[str, list] | None = None, unreadable: dict[str, str] | None = None,
                 touched: set[str] | None = None, decoded: set[str] | None = None,
                 texts: dict[str, bytes] | None = None, statements: dict[str, tuple] | None = None,
                 early: tuple | None = None) -> None:
        self.records = {} if records is None else records
        self.unreadable = {} if unreadable is None else unreadable
        self.touched = set() if touched is None else touched
        self.decoded = set() if decoded is None else decoded
        self.texts = {} if texts is None else texts
        self.statements = {} if statements is None else statements
        self.early = early

    def before_transfer(self) -> None:
        """In a worker, before pickling: the texts stay behind (the statements read off them go;
        a rule that needs a text reads the file again)."""
        if self.statements:
            self.texts = {}


def scan_part(context: PartContext, chunks, lead: int = 0) -> Part:
    """Read the files of each chunk in `chunks` (files whose record is missing or stale), filter
    them, and parse what needs it, chunk by chunk (another process may be taking the other
    chunks); after the last chunk, grimp's scans: the syntax of the files `ast` read in part, the
    edges of the graph files, in as few native calls as `_BATCH_BYTES` allows.

    `lead`: the first `lead` chunks hold every module under the graph prefixes (`workers.map_parts`
    gives them to one process first). Their edges are then scanned at once, and as soon as they
    are back the closure is predicted from them and its files scanned (`closure.early_closure`),
    while this part reads on: the build's closure then finds them scanned (`Part.early`)."""
    from contracts.engine.scan import searchable

    plan, old_files, inside, started = context.plan, context.old_files, context.inside, context.started
    part = Part()
    records, touched, decoded = part.records, part.touched, part.decoded
    prefilter, graph_prefilter, reader = context.tools or part_tools(plan)
    background = _Background(context.scanner)
    # What waits for grimp's scanner, by kind: the graph files that keep every edge, those that
    # keep only their edges into the kernel package (`ScanPlan.narrow`, `EdgeScanner.scan_into`),
    # and the files asked about for their syntax alone (the scanner told of those files only).
    # Each kind goes in one call after the part's last chunk, unless it holds more than
    # `_BATCH_BYTES` (see there). (For the syntax checks, against a call per chunk, on the
    # 174-prefix tree: 0.386 -> 0.362 s, 0.661 -> 0.615 CPU-s, 14 alternating rounds, the same
    # output.)
    waiting: dict[int, list[SourceFile]] = {_ALL_EDGES: [], _EDGES_INTO: [], _SYNTAX: []}
    held = dict.fromkeys(waiting, 0)

    def wait_for_scan(f: SourceFile, kind: int) -> None:
        waiting[kind].append(f)
        held[kind] += f.size

    def submit(at_least: int) -> None:
        for kind, files in waiting.items():
            if len(files) >= min(at_least, _BATCH) or held[kind] >= _BATCH_BYTES:
                background.submit(files, decoded, syntax_only=kind == _SYNTAX,
                                  into=plan.named_index if kind == _EDGES_INTO else None)
                waiting[kind], held[kind] = [], 0

    def edges_kind(f: SourceFile, flags: int) -> int:
        return _EDGES_INTO if plan.narrow_file(f.module, flags) else _ALL_EDGES
    texts: dict[str, bytes] = {}
    by_rel: dict[str, SourceFile] = {}
    kept: dict[str, bytes] = {}  # content of the files parsed with ast, until grimp has checked them
    hot: dict[str, list[int] | None] = {}  # their hot lines (None: search for `ast_words`)
    done: set[str] = set()  # the files `_scan_ast` read
    settle = _settler(records, kept, done, by_rel, hot, plan, texts)
    # The closure's prediction (`lead`): "read" (the lead chunks are being read), "scan" (their
    # edges asked for), "predict" (back: predict at the next chance), then "asked" (its files
    # given to the scanner) or "" (not this part's).
    stage = "read" if lead and plan.graph_prefixes else ""
    early: list = [{}, {}, []]  # the closure's files scanned early: edges, failed, modules

    def take(results) -> None:
        nonlocal stage
        for files, edges, failed, tag in results:
            if tag == _CLOSURE:  # kept apart: only what the closure reaches is stored
                early[0].update(edges)
                early[1].update(failed)
                early[2].extend(f.module for f in files)
                continue
            settle(files, edges, failed)
            if tag == _LEAD:
                stage = "predict"
        if stage == "predict":
            from contracts.engine.closure import early_closure

            rel_of = {m: f.rel for m, f in context.known.items()}
            predicted = early_closure(plan.graph_index, plan.stop_index, context.known, records, rel_of)
            background.submit(predicted, decoded, tag=_CLOSURE)
            stage = "asked"

    def ask_lead() -> None:
        nonlocal stage
        files = waiting[_ALL_EDGES]
        waiting[_ALL_EDGES], held[_ALL_EDGES] = [], 0
        background.submit(files, decoded, tag=_LEAD)
        stage = "scan" if files else "predict"

    read = 0
    try:
        for chunk in chunks:
            pending: dict[str, bytes] = {}  # this chunk's files to parse with ast
            for f in chunk:
                by_rel[f.rel] = f
                entry = old_files.get(f.rel)
                try:
                    data, ctime = read_source(f.path, inside)
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
                        wait_for_scan(f, edges_kind(f, entry[FLAGS]))  # an earlier run stopped before its edges
                    continue
                flags, lines = classify(f, data, plan, searchable, prefilter, graph_prefilter)
                if flags & AST:
                    pending[f.rel] = data
                    hot[f.rel] = lines
                if flags & DECODED:
                    decoded.add(f.module)
                if flags & GRAPH:
                    texts[f.rel] = data  # for the names of a from-import over several lines, not read twice
                    wait_for_scan(f, edges_kind(f, flags))  # its edges
                elif flags & AST:
                    wait_for_scan(f, _SYNTAX)  # grimp's check of the whole file's syntax
                records[f.rel] = [f.mtime_ns, f.size, ctime, digest, flags, None, None, None, None, started]
            read += 1
            if stage == "read" and read == lead:  # every module under the graph prefixes is read
                ask_lead()
            submit(_BATCH)  # (a part whose files to scan hold more than `_BATCH_BYTES`)
            # The chunk's ast pass, as if grimp had checked every file; a file it did not check (it
            # failed, or is not for its scanner) is parsed again whole when its scan is back,
            # which says why.
            done.update(_scan_ast(records, pending, hot, by_rel, plan, parsed=None))
            kept.update(pending)
            # The scans back by now are settled here, while later ones run: what is left after
            # the last chunk is the last scans alone.
            take(background.ready())
        if stage == "read":  # fewer chunks than `lead`
            ask_lead()
        submit(1)  # what is left, after the last chunk
        if stage == "scan":  # the prediction waits for the lead scan alone, not the last ones
            take(background.until(_LEAD))
        elif stage == "predict":
            take(())
        take(background.results())
    finally:
        background.close()  # (a scan stopped by an error leaves no thread behind)
    if stage == "asked":
        part.early = tuple(early)
    return part


def _settler(records, kept, done, by_rel, hot, plan: ScanPlan, texts):
    """`settle(files, edges, failed)`: one native scan's answer taken in: each of its files that
    `_scan_ast` read in part parsed again whole where the scanner did not check it, then the
    edges of its graph files stored. A file is in one scan, so the order of the scans does not
    matter."""

    def settle(files: list[SourceFile], edges: dict, failed: dict) -> None:
        mine = {f.rel: kept.pop(f.rel) for f in files if f.rel in kept}
        if mine:
            _rescan_unchecked(records, mine, [rel for rel in mine if rel in done], by_rel, hot, plan, edges)
        graph = [f for f in files if records[f.rel][FLAGS] & GRAPH]
        if graph:
            store_edges(records, graph, edges, failed, plan, texts)

    return settle


def _statements_of(reader, data: bytes) -> tuple:
    """What `missing_imports` reads off every file's text: (statements, unsure lines, whole file
    unsure, its `runtime.text_facts`, the names of its column-0 `def`s and `class`es); plain
    values, for a worker to send. (The names are wanted of three quarters of a tree's modules,
    those something imports names from: read here, on every core, rather than after the read.)"""
    from contracts.engine.bindings import defs_at_column_0
    from contracts.engine.import_lines import WHOLE_FILE
    from contracts.engine.runtime import text_facts

    found, doubt = reader.read(data)
    whole = doubt is WHOLE_FILE  # (an identity: it would not survive pickling)
    return found, [] if whole else doubt, whole, text_facts(data), defs_at_column_0(data)


def store_edges(records: dict, files: list[SourceFile], edges: dict, failed: dict, plan: ScanPlan,
                 texts: dict[str, bytes]) -> None:
    for f in files:
        rec = records[f.rel]
        if rec[ERROR] is not None:
            continue  # the ast pass could not parse it: it has no edges
        if f.module in failed:
            rec[ERROR] = failed[f.module]
            continue
        rec[EDGES] = edges.get(f.module, [])
        rec[NAMES] = _names_for(f, rec[EDGES], plan.name_index, texts.pop(f.rel, None), bool(rec[FLAGS] & DECODED))


def prefilter_for(plan: ScanPlan):
    """The prefilter of the removed prefixes, or None."""
    if not plan.removed:
        return None
    from contracts.engine.prefilter import RemovedPrefilter

    return RemovedPrefilter(plan.removed)


def graph_prefilter_for(plan: ScanPlan):
    """The prefilter that tells a file naming the checked kernel package from one that only holds
    its word (`plan.graph_named`), or None."""
    if not plan.graph_named:
        return None
    from contracts.engine.prefilter import RemovedPrefilter

    return RemovedPrefilter(plan.graph_named)


def classify(f: SourceFile, data: bytes, plan: ScanPlan, searchable, prefilter,
             graph_prefilter=None) -> tuple[int, list[int] | None]:
    """(AST | GRAPH | DECODED, hot lines): what to do with a file of this content. The hot lines
    are those the prefilter found (None: the file's `ast_words` decide, as Python reads it).
    `graph_prefilter` (`graph_prefilter_for`): a file with a graph word is a graph file only if it
    may name the package."""
    from contracts.engine.scan import declared_encoding

    if not (plan.ast_words or plan.graph_words or plan.ast_prefixes or plan.graph_prefixes or plan.removed):
        return 0, None  # nothing to look for (a plan for the text-reading rules alone)
    module = f.module
    found = None  # the mentions of `hay` both prefilters search for, found once (`Mentions`)

    def names_graph(text: bytes) -> bool:
        if graph_prefilter is None:
            return any(w in text for w in plan.graph_words)
        # (the prefilter first: it reads the mentions the other prefilter found too, where the
        # word would be one more search of the whole text, and the word is rare once it hits)
        return graph_prefilter.any_hot(text, module, f.is_package, found) and any(w in text for w in plan.graph_words)

    under_ast = plan.ast_index.longest_of(module) is not None
    under_graph = plan.graph_index.longest_of(module) is not None
    # The words as Python reads the text (a declared encoding, NFKC-normalized identifiers); for
    # ASCII source without a declaration (nearly every file) that is `data` itself, at once.
    hay = searchable(data)
    if prefilter is not None and graph_prefilter is not None:
        from contracts.engine.prefilter import Mentions

        found = Mentions(hay)
    joint = None  # both prefilters' hits in one pass over the mentions, and the text they are in
    if found is not None and hay is data and not under_graph:
        from contracts.engine.prefilter import joint_hits

        joint = joint_hits(prefilter, graph_prefilter, data, module, f.is_package, found)
        raw_graph = bool(joint[1]) and any(w in data for w in plan.graph_words)
    else:
        # A module under a graph prefix is a graph file whatever it names; its bytes are searched
        # only where the DECODED test below compares what the bytes and the text name.
        raw_graph = under_graph if under_graph and hay is data else names_graph(data)
    graph_hit = raw_graph or under_graph
    if prefilter is not None:
        lines = (prefilter.lines_of(joint[2], joint[0]) if joint is not None
                 else prefilter.hot_lines(hay, module, f.is_package, found))
        ast_hit = bool(lines) or under_ast
        decoded = False
        if hay is not data:
            hay_graph = names_graph(hay)
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
        hay_graph = names_graph(hay)
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
        rec[REFS] = [ref_tuple(r) for r in result.refs]
        rec[ERROR] = result.error
        done.append(rel)
    return done


def _rescan_unchecked(records, pending, done, by_rel, hot, plan: ScanPlan, parsed) -> None:
    """The files `_scan_ast` read in part as if grimp had checked them, where it did not (it
    failed on them, or they are not for its scanner): parsed again whole, which says why."""
    for rel in done:
        f = by_rel[rel]
        if f.module in parsed:
            continue
        rec = records[rel]
        result = file_refs(pending[rel], f.module, f.is_package, plan.ast_words, hot.get(rel), False)
        rec[REFS] = [ref_tuple(r) for r in result.refs]
        rec[ERROR] = result.error
    pending.clear()


# The graph files of a part, per native scan call: as many as memory allows (their texts are kept
# until the call is back, for the names of from-imports over several lines; the same bound for
# the files checked for their syntax, whose texts wait for the answer too), not small batches
# scanned while this thread reads on. Each call converts the description of every module of the
# tree first (3 ms on 0.5.23, holding the GIL) and builds its answer's objects last (holding it
# too), and both processes already keep both cores busy: with batches of 128 files or 2 MB
# (7-9 calls a process on 0.5.23), every rule on 0.5.23 took 0.646-0.674 s and 1.05-1.11 CPU-s
# against 0.596-0.627 s and 0.98-1.01 CPU-s with one call a process after its last chunk (16
# alternating rounds, twice, the same output); in one process (`--jobs 1`) the two ways took
# the same (0.740 against 0.736 s), and 0.5.16 and the 174-prefix tree were unchanged.
_ALL_EDGES, _EDGES_INTO, _SYNTAX = 0, 1, 2  # what a native scan call asks of its files
_LEAD, _CLOSURE = "lead", "closure"  # the tags of the closure's scans in a `lead` part
_BATCH = 1 << 16  # files per native scan call at most
_BATCH_BYTES = 64 << 20  # or this much source, whichever comes first


class _Background:
    """grimp's scans on one second thread. The native scanner releases the GIL while it parses
    (with its own worker threads), so where a part's scans are asked for before its last chunk
    (`_BATCH_BYTES`), this thread's Python -- reading, the prefilter, `ast` -- runs meanwhile.
    Results do not depend on how the files are batched: each
    file's edges are resolved against every module of the tree (a scan for syntax alone answers
    only whether each file parses). (A plain thread and queue:
    `concurrent.futures` imports `logging`, 7-9 ms of each process's start.)"""

    def __init__(self, scanner: EdgeScanner) -> None:
        self.scanner = scanner
        self.thread = None
        self.todo = None
        # (True, files, the scan's answer, tag) or (False, files, what it raised, tag)
        self.done: list[tuple] = []
        self.back = None  # notified as each answer comes (`until`)
        self.asked = 0  # scans submitted and not yet taken from `done`

    def submit(self, files: list[SourceFile], decoded: set[str], syntax_only: bool = False, into=None,
               tag=None) -> None:
        """`into`: a `PrefixIndex`; then only the edges into its packages are scanned for. `tag`:
        given back with the answer."""
        if not files:
            return
        if self.thread is None:
            import threading

            try:  # (`queue` imports `heapq` and more for its other queues: ~1 ms a process)
                from _queue import SimpleQueue
            except ImportError:  # pragma: no cover - a Python without the C module
                from queue import SimpleQueue
            self.todo = SimpleQueue()
            self.back = threading.Condition()
            self.thread = threading.Thread(target=self._work, name="namespace-lint-scan", daemon=True)
            self.thread.start()
        self.asked += 1
        self.todo.put((list(files), frozenset(decoded), syntax_only, into, tag))

    def _work(self) -> None:
        while (job := self.todo.get()) is not None:
            files, decoded, syntax_only, into, tag = job
            try:
                answer = (True, files, self.scanner.scan(files, decoded, syntax_only) if into is None
                          else self.scanner.scan_into(files, into, decoded), tag)
            except BaseException as e:  # noqa: BLE001 - raised again in the caller's thread
                answer = (False, files, e, tag)
            with self.back:
                self.done.append(answer)
                self.back.notify()

    def ready(self):
        """(files, edges, failed, tag) of each scan done by now, in the order they were asked for."""
        done = self.done
        while done:
            ok, files, value, tag = done.pop(0)  # (the worker only appends: both are atomic)
            self.asked -= 1
            if not ok:
                raise value
            yield files, *value, tag

    def until(self, tag):
        """`ready()`, waiting for each scan in turn, up to and including the first one tagged
        `tag` (or every scan asked for, if none is)."""
        while self.asked > 0:
            if not self.done:
                with self.back:
                    self.back.wait_for(lambda: self.done)
            for answer in self.ready():
                yield answer
                if answer[-1] == tag:
                    return

    def close(self) -> None:
        """Let the thread end once it has done what it was given (at once if it was idle)."""
        if self.thread is not None:
            self.todo.put(None)
            self.thread = None

    def results(self):
        """`ready()`, once every scan asked for is done."""
        thread = self.thread
        self.close()
        if thread is not None:
            thread.join()
        return self.ready()


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


def _names_for(f: SourceFile, edges, prefixes, text: bytes | None = None, decoded: bool = False) -> dict | None:
    """The from-imported names of `edges` into `prefixes`, by line. `decoded`: Python reads the
    file otherwise than its bytes (a declared encoding): the names come from that text."""
    needed = {}
    importer = f.module
    for imported, line, contents in edges:
        # (`from a.b \` continues on the next line: the names are read off the whole statement)
        if line not in needed and (decoded or "import" in contents or contents.endswith("\\")):
            prefix = prefixes.longest_of(imported)
            if prefix is not None and not _one_child(importer, imported, prefix):
                needed[line] = contents.lstrip("\ufeff")  # (grimp keeps a BOM in line 1's text)
    if not needed:
        return None
    out: dict = {}
    lines = None
    plain = not decoded and text is not None and _bytes_are_lines(text)
    for line, contents in sorted(needed.items()):
        # Most statements are whole on the line grimp reports; the file is read only for the
        # rest (a parenthesized list over several lines, a statement after `;`).
        names = None if decoded else names_from_text(contents)
        if names is None and (decoded or not is_plain_import(contents)):
            # `statement_names`' first answer, off the lines from this one on, found by the text
            # grimp reported for it (not all of a large file's lines: 31 ms over 544 files on 0.5.23).
            found = _lines_from(text, line, contents) if plain else None
            if found is not None:
                names = None if is_plain_import(found[0]) else names_from_text(found[0], found[1])
                if names is not None:
                    out[line] = names
                    continue
            if lines is None:
                lines = _python_lines(f, text)
            names = statement_names(lines, line)
        out[line] = names
    return out


def _one_child(importer: str, imported: str, prefix: str) -> bool:
    """Do `importer` and `imported` lie in one child package of `prefix` (a group importing
    itself)? (On 0.5.23, 1,407 edges keep their names, against 2,253 with the shared modules'
    and the groups' own.)"""
    head = prefix + "."
    if not importer.startswith(head):
        return False
    n = len(head)
    child = imported[n:].partition(".")[0]
    return bool(child) and importer[n:].partition(".")[0] == child


def _bytes_are_lines(data: bytes) -> bool:
    """Are `data`'s lines, split at `\\n`, the ones `_python_lines` gives (no BOM, no declared
    encoding, no `\\r`)?"""
    from contracts.engine.scan import declared_encoding

    return not data.startswith(b"\xef\xbb\xbf") and b"\r" not in data and declared_encoding(data) is None


def _lines_from(data: bytes, line: int, contents: str):
    """(line `line` of `data`, an iterator of the lines after it: as many as `statement_names`
    reads), where `contents` (the line's text, as grimp reports it) is found on that line; else
    None."""
    start = line_holding(data, line, contents)
    if start is None:
        return None
    end = data.find(b"\n", start)
    first = data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
    return first, _following(data, end, MAX_STATEMENT_LINES - 1)


def _following(data: bytes, end: int, most: int):
    """The lines after the newline at `end` (-1: none), at most `most`, decoded; a file's final
    newline ends its last line (no empty line after it)."""
    pos = end
    size = len(data)
    while pos >= 0 and most > 0 and pos + 1 < size:
        nxt = data.find(b"\n", pos + 1)
        yield data[pos + 1:nxt if nxt >= 0 else size].decode("utf-8", "replace")
        pos = nxt
        most -= 1


def _python_lines(f: SourceFile, data: bytes | None) -> list[str]:
    """`f`'s lines as Python reads and numbers them: its declared encoding, no BOM."""
    from contracts.engine.scan import declared_encoding, decode_source

    if data is None:
        try:
            data = read_regular(f.path, limit=MAX_READ_BYTES)[0]
        except OSError:
            return []
    if not data.startswith(b"\xef\xbb\xbf") and declared_encoding(data) is None:
        return physical_lines(data)  # what the round trip below gives, without it (most files)
    try:
        return physical_lines(decode_source(data).encode("utf-8"))
    except (SyntaxError, UnicodeError, LookupError):  # undecodable: the parse says why elsewhere
        return physical_lines(data)
