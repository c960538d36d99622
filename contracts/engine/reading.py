"""Read, filter and parse a part of a tree's files: what each process of a cold run does.

Every file is read (and counted as scanned) and goes through one byte-level pass,
`prefilter.py`: the root package's name and relative imports, each hit looked up by its name
parts against the removed prefixes, so the cost does not grow with how many prefixes there are.
Only the files with a line that may name a removed module are parsed with `ast`, and of those
only the statements around such lines (`window.py`), once grimp's native scanner has parsed the
whole file, so a syntax error anywhere in it is still reported. A file holding a graph word is a
graph file only where the same prefilter, asked for the plan's `graph_named` packages, finds a
line that may name one (for `pkg.kernels`: not `triton_kernels`, `self.kernels` or prose); the
graph files get their edges from grimp's scanner, in one call once the part's files are read
(`_BATCH`). Those that keep only their edges into `graph_named` (`ScanPlan.narrow`) are read
whole too, so a syntax error anywhere in them is reported.

`scan_part` does this for the chunks of files it is given (`workers.py` hands them out) and
returns its records (`file_record.py`), which the build (`model.py`) merges in walk order.
"""

from __future__ import annotations

import os
import threading

try:  # (`queue` imports `heapq` and more for its other queues: ~1 ms a process)
    from _queue import SimpleQueue
except ImportError:  # pragma: no cover - a Python without the C module
    from queue import SimpleQueue

from contracts._record import Record
from contracts.engine import closure, workers
from contracts.engine import scan as scan_mod
from contracts.engine.cache import content_digest
from contracts.engine.discover import SourceFile
from contracts.engine.file_record import FileRecord
from contracts.engine.files import NotRegular, TooLarge, read_regular
from contracts.engine.graph import (
    MAX_STATEMENT_LINES,
    EdgeScanner,
    is_plain_import,
    names_from_text,
    native_adapter,
    statement_names,
)
from contracts.engine.prefilter import Mentions, RemovedPrefilter, joint_hits
from contracts.engine.records import AST, DECODED, GRAPH, MAX_READ_BYTES, ScanPlan, ref_tuple
from contracts.engine.resolve import line_holding, physical_lines
from contracts.engine.scan import declared_encoding, decode_source, scan_source, searchable
from contracts.engine.shared_texts import SharedTexts


def _ctime_ns(st) -> int:
    return st.st_ctime_ns


def read_source(path: str, inside: tuple[str, ...] = ()) -> tuple[bytes, int]:
    """(content, ctime) of a regular file, its size checked before it is read (`MAX_READ_BYTES`);
    in as few system calls as it takes (a plain `open()` costs about twice as much). A symlink
    is followed only to a file under `inside` (the walk let it in; one swapped in since,
    pointing elsewhere, is not read)."""
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
    old_files: dict  # rel path -> the cache's `FileRecord`
    inside: tuple[str, ...]
    known: dict
    roots: dict
    started: float
    hashed: bool  # a cache is kept: every file read gets its content hash
    scanner: EdgeScanner
    tools: tuple | None  # `part_tools(plan)`, made once for every part
    # Where the readers put the texts `ScanPlan.texts` keeps (`shared_texts.py`), or None.
    shared: SharedTexts | None

    def __init__(self, plan: ScanPlan, old_files: dict, inside: tuple[str, ...], known: dict, roots: dict,
                 started: float, hashed: bool, scanner: EdgeScanner, tools: tuple | None = None,
                 shared: SharedTexts | None = None) -> None:
        self.__dict__.update(plan=plan, old_files=old_files, inside=inside, known=known, roots=roots, started=started,
                             hashed=hashed, scanner=scanner, tools=tools, shared=shared)


def part_tools(plan: ScanPlan, forking: bool = False) -> tuple:
    """(prefilter, graph prefilter, statement reader) for the parts of a build, made before any
    fork (`forking`: grimp's adapter too), so that a forked child inherits them instead of making
    its own."""
    reader = None
    if plan.statement_roots:
        # (start-up: ~2.5 ms, only for a plan with `statement_roots`)
        from contracts.engine.import_lines import StatementReader

        reader = StatementReader(plan.statement_roots)
    if forking and not plan.looks_for_nothing:  # (a plan that routes no file to grimp never imports it)
        native_adapter()  # (None: no usable grimp; each scan then reads its files with `ast`)
    return prefilter_for(plan), graph_prefilter_for(plan), reader


class Part(Record):
    """What one part of a build made of its files (a worker pickles it: `before_transfer`)."""

    records: dict[str, FileRecord]
    unreadable: dict[str, str]
    touched: set[str]
    decoded: set[str]
    texts: dict[str, bytes]  # `ScanPlan.texts`
    shared: dict[str, tuple]  # the texts this part put in `PartContext.shared`: rel -> where
    statements: dict[str, tuple]  # `ScanPlan.statement_roots`
    # The closure's prediction, made and scanned by the part that read every module under the
    # graph prefixes (`scan_part`'s `lead`): (edges, failed, the modules scanned), or None.
    early: tuple | None
    stored: bool  # `records` hold plain lists (`before_transfer`)

    def __init__(self, records: dict | None = None, unreadable: dict | None = None, touched: set | None = None,
                 decoded: set | None = None, texts: dict | None = None, shared: dict | None = None,
                 statements: dict | None = None, early: tuple | None = None, stored: bool = False) -> None:
        self.__dict__.update(
            records={} if records is None else records, unreadable={} if unreadable is None else unreadable,
            touched=set() if touched is None else touched, decoded=set() if decoded is None else decoded,
            texts={} if texts is None else texts, shared={} if shared is None else shared,
            statements={} if statements is None else statements, early=early, stored=stored)

    def before_transfer(self) -> None:
        """In a worker, before pickling: the records as plain lists, and the texts stay behind
        (the statements read off them go; a rule that needs a text reads the file again)."""
        if self.statements:
            self.texts = {}
        self.records = {rel: rec.stored() for rel, rec in self.records.items()}
        self.stored = True

    def received(self) -> Part:
        """The part with its records as `FileRecord`s again (after a transfer)."""
        if self.stored:
            self.records = {rel: FileRecord.of(rec) for rel, rec in self.records.items()}
            self.stored = False
        return self


def scan_part(context: PartContext, chunks, lead: int = 0) -> Part:
    """Read the files of each chunk in `chunks` (files whose record is missing or stale), filter
    them, and parse what needs it, chunk by chunk (another process may be taking the other
    chunks); after the last chunk, grimp's scans: the syntax of the files `ast` read in part, the
    edges of the graph files, in as few native calls as `_BATCH_BYTES` allows.

    `lead`: the first `lead` chunks hold every module under the graph prefixes (`workers.map_parts`
    gives them to one process first). Their edges are then scanned at once, and as soon as they
    are back the closure is predicted from them and its files scanned (`closure.early_closure`),
    while this part reads on: the build's closure then finds them scanned (`Part.early`)."""
    reader = _PartReader(context, lead)
    try:
        for chunk in chunks:
            reader.read_chunk(chunk)
        reader.last_scans()
    finally:
        reader.background.close()  # (a scan stopped by an error leaves no thread behind)
    return reader.result()


class _PartReader:
    """One `scan_part`: the files read so far, and what waits for grimp's scanner.

    What waits is kept by kind: the graph files that keep every edge, those that keep only their
    edges into `graph_named` (`ScanPlan.narrow`, `EdgeScanner.scan_into`), and the files asked
    about for their syntax alone. Each kind goes in one call after the part's last chunk, unless
    it holds more than `_BATCH_BYTES` (see there)."""

    def __init__(self, context: PartContext, lead: int) -> None:
        self.context, self.plan, self.lead = context, context.plan, lead
        self.part = Part()
        self.prefilter, self.graph_prefilter, self.reader = context.tools or part_tools(context.plan)
        shared = context.shared
        self.sink = shared  # (every reader's texts go there: the rules search them all in one map)
        self.background = _Background(context.scanner)
        self.waiting: dict[int, list[SourceFile]] = {_ALL_EDGES: [], _EDGES_INTO: [], _SYNTAX: []}
        self.held = dict.fromkeys(self.waiting, 0)  # bytes waiting, by kind
        self.texts: dict[str, bytes] = {}  # graph files' texts, for names of from-imports over several lines
        self.by_rel: dict[str, SourceFile] = {}
        self.kept: dict[str, bytes] = {}  # content of the files parsed with ast, until grimp has checked them
        self.hot: dict[str, list[int] | None] = {}  # their hot lines (None: search for `ast_words`)
        self.done: set[str] = set()  # the files `_scan_ast` read
        # The closure's prediction (`lead`): "read" (the lead chunks are being read), "scan" (their
        # edges asked for), "predict" (back: predict at the next chance), then "asked" (its files
        # given to the scanner) or "" (not this part's).
        self.stage = "read" if lead and self.plan.graph_prefixes else ""
        self.early: list = [{}, {}, []]  # the closure's files scanned early: edges, failed, modules
        self.chunks_read = 0

    def read_chunk(self, chunk: list[SourceFile]) -> None:
        """Read and classify a chunk's files, parse those `ast` needs, and take the scans back
        by now (the later ones run meanwhile: after the last chunk only they are left)."""
        pending: dict[str, bytes] = {}  # this chunk's files to parse with ast
        for f in chunk:
            self.read_file(f, pending)
        self.chunks_read += 1
        if self.stage == "read" and self.chunks_read == self.lead:  # every module under the graph prefixes is read
            self.ask_lead()
        self.submit(_BATCH)  # (a part whose files to scan hold more than `_BATCH_BYTES`)
        # The chunk's ast pass, as if grimp had checked every file; a file it did not check (it
        # failed, or is not for its scanner) is parsed again whole when its scan is back, which says why.
        part, plan = self.part, self.plan
        self.done.update(_scan_ast(part.records, pending, self.hot, self.by_rel, plan, parsed=None))
        self.kept.update(pending)
        self.take(self.background.ready())

    def read_file(self, f: SourceFile, pending: dict[str, bytes]) -> None:
        """One file: read, its record reused if its content is the cached one, else classified."""
        self.by_rel[f.rel] = f
        read = self._read(f)
        if read is None:
            return
        data, ctime = read
        part = self.part
        part.touched.add(f.rel)
        if self.plan.texts:
            placed = self.sink.put(f.rel, data, workers.worker_number()) if self.sink is not None else None
            if placed is not None:
                part.shared[f.rel] = placed
            else:
                part.texts[f.rel] = data
        if self.reader is not None:
            part.statements[f.rel] = _statements_of(self.reader, data, plain=workers.in_worker())
        # Every file's hash (SHA-1): after a fresh copy or checkout (every ctime new) the
        # unchanged files are told by it, without the prefilter.
        digest = content_digest(data) if self.context.hashed else None
        if not self._reused(f, ctime, digest):
            self._classify(f, data, ctime, digest, pending)

    def _read(self, f: SourceFile) -> tuple[bytes, int] | None:
        """(content, ctime) of `f`, or None with the reason in `unreadable`."""
        try:
            return read_source(f.path, self.context.inside)
        except TooLarge as e:
            self.part.unreadable[f.rel] = (f"cannot read: {e.size / 2**20:.1f} MiB, over the "
                                           f"{MAX_READ_BYTES // 2**20} MiB this tool reads; split or exclude the file")
        except OSError as e:
            self.part.unreadable[f.rel] = f"cannot read: {e.strerror or e}"
        return None

    def _reused(self, f: SourceFile, ctime: int, digest: bytes | None) -> bool:
        """Whether the cached record holds for this content (then it is taken, with the new stat)."""
        entry = self.context.old_files.get(f.rel)
        if entry is None or entry.digest is None or digest != entry.digest:
            return False
        self.part.records[f.rel] = entry.restamped(f.mtime_ns, f.size, ctime, self.context.started)
        if entry.flags & GRAPH and entry.wants_edges():
            self.wait_for_scan(f, self.edges_kind(f, entry.flags))  # an earlier run stopped before its edges
        return True

    def _classify(self, f: SourceFile, data: bytes, ctime: int, digest: bytes | None,
                  pending: dict[str, bytes]) -> None:
        """A new record for `f`, and what it waits for: `ast` (`pending`), grimp's scanner."""
        flags, lines = classify(f, data, self.plan, searchable, self.prefilter, self.graph_prefilter)
        if flags & AST:
            pending[f.rel] = data
            self.hot[f.rel] = lines
        if flags & DECODED:
            self.part.decoded.add(f.module)
        if flags & GRAPH:
            self.texts[f.rel] = data  # for the names of a from-import over several lines, not read twice
            self.wait_for_scan(f, self.edges_kind(f, flags))  # its edges
        elif flags & AST:
            self.wait_for_scan(f, _SYNTAX)  # grimp's check of the whole file's syntax
        self.part.records[f.rel] = FileRecord(f.mtime_ns, f.size, ctime, digest, flags, None, None, None, None,
                                              self.context.started)

    def edges_kind(self, f: SourceFile, flags: int) -> int:
        return _EDGES_INTO if self.plan.narrow_file(f.module, flags) else _ALL_EDGES

    def wait_for_scan(self, f: SourceFile, kind: int) -> None:
        self.waiting[kind].append(f)
        self.held[kind] += f.size

    def submit(self, at_least: int) -> None:
        """Give the scanner each kind that holds `at_least` files (or `_BATCH`), or `_BATCH_BYTES`."""
        into, decoded = self.plan.named_index, self.part.decoded
        for kind, files in self.waiting.items():
            if len(files) >= min(at_least, _BATCH) or self.held[kind] >= _BATCH_BYTES:
                self.background.submit(files, decoded, syntax_only=kind == _SYNTAX,
                                       into=into if kind == _EDGES_INTO else None)
                self.waiting[kind], self.held[kind] = [], 0

    def ask_lead(self) -> None:
        """Every module under the graph prefixes is read: their edges asked for at once."""
        files = self.waiting[_ALL_EDGES]
        self.waiting[_ALL_EDGES], self.held[_ALL_EDGES] = [], 0
        self.background.submit(files, self.part.decoded, tag=_LEAD)
        self.stage = "scan" if files else "predict"

    def take(self, results) -> None:
        """Take the scans' answers in; once the lead scan is back, predict the closure and ask
        for its files."""
        for files, edges, failed, tag in results:
            if tag == _CLOSURE:  # kept apart: only what the closure reaches is stored
                self.early[0].update(edges)
                self.early[1].update(failed)
                self.early[2].extend(f.module for f in files)
                continue
            self.settle(files, edges, failed)
            if tag == _LEAD:
                self.stage = "predict"
        if self.stage == "predict":
            context = self.context
            rel_of = {m: f.rel for m, f in context.known.items()}
            predicted = closure.early_closure(self.plan.graph_index, self.plan.stop_index, context.known, self.part.records,
                                      rel_of)
            self.background.submit(predicted, self.part.decoded, tag=_CLOSURE)
            self.stage = "asked"

    def settle(self, files: list[SourceFile], edges: dict, failed: dict) -> None:
        """One native scan's answer: each of its files that `_scan_ast` read in part parsed again
        whole where the scanner did not check it, then the edges of its graph files stored. A
        file is in one scan, so the order of the scans does not matter."""
        records = self.part.records
        mine = {f.rel: self.kept.pop(f.rel) for f in files if f.rel in self.kept}
        if mine:
            _rescan_unchecked(records, mine, [rel for rel in mine if rel in self.done], self.by_rel, self.hot,
                              self.plan, edges)
        graph = [f for f in files if records[f.rel].flags & GRAPH]
        if graph:
            store_edges(records, graph, edges, failed, self.plan, self.texts)

    def last_scans(self) -> None:
        """After the last chunk: what is left given to the scanner, and every answer taken."""
        if self.stage == "read":  # fewer chunks than `lead`
            self.ask_lead()
        self.submit(1)
        if self.stage == "scan":  # the prediction waits for the lead scan alone, not the last ones
            self.take(self.background.until(_LEAD))
        elif self.stage == "predict":
            self.take(())
        self.take(self.background.results())

    def result(self) -> Part:
        if self.stage == "asked":
            self.part.early = tuple(self.early)
        return self.part


def _statements_of(reader, data: bytes, plain: bool) -> tuple:
    """What the plan's `statement_roots` ask of every file's text: (statements, unsure lines, whole
    file unsure, its `runtime.text_facts`, the names of its column-0 `def`s and `class`es as
    `index.def_names_at_column_0` joins them). `plain`: for a worker to send, the statements as
    `import_lines.packed` makes them (this process keeps its own as they are). (Read here, on
    every core, rather than after the read.)"""
    # (start-up: ~14 ms for `index` and `runtime`, only for a plan with `statement_roots`)
    from contracts.engine.import_lines import WHOLE_FILE, packed
    from contracts.engine.index import def_names_at_column_0
    from contracts.engine.runtime import text_facts

    found, doubt = reader.read(data)
    whole = doubt is WHOLE_FILE  # (an identity: it would not survive pickling)
    return (packed(found) if plain else found), [] if whole else doubt, whole, text_facts(data), \
        def_names_at_column_0(data)


def store_edges(records: dict, files: list[SourceFile], edges: dict, failed: dict, plan: ScanPlan,
                texts: dict[str, bytes]) -> None:
    """A scan's answer into the records of `files`: their edges (with the names `name_prefixes`
    keep), or why the scanner failed on them."""
    for f in files:
        rec = records[f.rel]
        if rec.error is not None:
            continue  # the ast pass could not parse it: it has no edges
        if f.module in failed:
            rec.error = failed[f.module]
            continue
        rec.edges = edges.get(f.module, [])
        rec.names = _names_for(f, rec.edges, plan.name_index, texts.pop(f.rel, None), bool(rec.flags & DECODED))


def prefilter_for(plan: ScanPlan):
    """The prefilter of the removed prefixes, or None."""
    return RemovedPrefilter(plan.removed) if plan.removed else None


def graph_prefilter_for(plan: ScanPlan):
    """The prefilter that tells a file naming a `graph_named` package from one that only holds
    its word, or None."""
    return RemovedPrefilter(plan.graph_named) if plan.graph_named else None


def classify(f: SourceFile, data: bytes, plan: ScanPlan, searchable, prefilter,
             graph_prefilter=None) -> tuple[int, list[int] | None]:
    """(AST | GRAPH | DECODED, hot lines): what to do with a file of this content. The hot lines
    are those the prefilter found (None: the file's `ast_words` decide, as Python reads it).
    `graph_prefilter` (`graph_prefilter_for`): a file with a graph word is a graph file only if it
    may name a `graph_named` package."""
    if plan.looks_for_nothing:
        return 0, None
    under_graph = plan.graph_index.longest_of(f.module) is not None
    # The words as Python reads the text (a declared encoding, NFKC-normalized identifiers); for
    # ASCII source without a declaration (nearly every file) that is `data` itself, at once.
    hay = searchable(data)
    # (the mentions of `hay` both prefilters search for, found once)
    found = Mentions(hay) if prefilter is not None and graph_prefilter is not None else None
    joint, raw_graph = _graph_hit(f, data, hay, plan, prefilter, graph_prefilter, found, under_graph)
    lines, raw_ast = _ast_hit(f, data, hay, plan, prefilter, found, joint)
    under_ast = plan.ast_index.longest_of(f.module) is not None
    flags = (AST if raw_ast or under_ast else 0) | (GRAPH if raw_graph or under_graph else 0)
    if hay is not data:
        flags |= _decoded_flags(f, data, hay, plan, prefilter, graph_prefilter, found, lines, raw_ast, raw_graph)
    return flags, lines


def _graph_hit(f: SourceFile, data: bytes, hay: bytes, plan: ScanPlan, prefilter, graph_prefilter, found,
               under_graph: bool) -> tuple[tuple | None, bool]:
    """(both prefilters' hits, found in one pass over the mentions where both are given, or
    None; whether the file's bytes name a graph package)."""
    if found is not None and hay is data and not under_graph:
        joint = joint_hits(prefilter, graph_prefilter, data, f.module, f.is_package, found)
        return joint, bool(joint[1]) and any(w in data for w in plan.graph_words)
    # A module under a graph prefix is a graph file whatever it names; its bytes are searched
    # only where `_decoded_flags` compares what the bytes and the text name.
    return None, under_graph if under_graph and hay is data else _names_graph(data, f, plan, graph_prefilter, found)


def _ast_hit(f: SourceFile, data: bytes, hay: bytes, plan: ScanPlan, prefilter, found,
             joint: tuple | None) -> tuple[list[int] | None, bool]:
    """(the hot lines the prefilter finds in the text, or None without one; whether the file
    may name a removed module)."""
    if prefilter is None:
        return None, any(w in data for w in plan.ast_words)
    lines = (prefilter.lines_of(joint[2], joint[0]) if joint is not None
             else prefilter.hot_lines(hay, f.module, f.is_package, found))
    return lines, bool(lines)


def _names_graph(text: bytes, f: SourceFile, plan: ScanPlan, graph_prefilter, found) -> bool:
    """Does `text` hold a graph word (where a graph prefilter is given: on a line that may name
    a `graph_named` package)?"""
    if graph_prefilter is None:
        return any(w in text for w in plan.graph_words)
    # (the prefilter first: it reads the mentions the other prefilter found too, where the word
    # would be one more search of the whole text, and the word is rare once it hits)
    return graph_prefilter.any_hot(text, f.module, f.is_package, found) and any(w in text for w in plan.graph_words)


def _decoded_flags(f: SourceFile, data: bytes, hay: bytes, plan: ScanPlan, prefilter, graph_prefilter, found,
                   lines, raw_ast: bool, raw_graph: bool) -> int:
    """The flags the text as Python reads it (`hay`, not the bytes) adds. grimp's scanner reads
    raw UTF-8: a file in another declared encoding, or one whose names appear only once
    normalized, gets its edges from `ast` (DECODED). (Prose in fullwidth punctuation, common in
    comments, changes under NFKC but needs no such detour.)"""
    hay_graph = _names_graph(hay, f, plan, graph_prefilter, found)
    hay_ast = prefilter is None and any(w in hay for w in plan.ast_words)  # (the hot lines are the text's)
    decoded = declared_encoding(data) is not None or (hay_graph and not raw_graph) or (
        (bool(lines) and lines != prefilter.hot_lines(data, f.module, f.is_package)) if prefilter is not None
        else (hay_ast and not raw_ast))
    return (AST if hay_ast else 0) | (GRAPH if hay_graph else 0) | (DECODED if decoded else 0)


def _scan_ast(records, pending, hot, by_rel, plan: ScanPlan, parsed: set[str] | None) -> list[str]:
    """References of the files in `pending`: of the hot statements only where grimp parsed the
    whole file (`parsed`; None: as if it had, see `_rescan_unchecked`), else (or when the kept
    text does not parse) of the whole file. Returns the files it scanned."""
    done = []
    for rel, data in pending.items():
        f = by_rel[rel]
        rec = records[rel]
        if rec.error is not None:
            continue
        checked = parsed is None or f.module in parsed
        result = file_refs(data, f.module, f.is_package, plan.ast_words, hot.get(rel), checked)
        rec.refs = [ref_tuple(r) for r in result.refs]
        rec.error = result.error
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
        rec.refs = [ref_tuple(r) for r in result.refs]
        rec.error = result.error
    pending.clear()


# The graph files of a part, per native scan call: as many as memory allows (their texts are kept
# until the call is back, for the names of from-imports over several lines; the same bound for
# the files checked for their syntax, whose texts wait for the answer too), not small batches
# scanned while this thread reads on. Each call converts the description of every module of the
# tree first and builds its answer's objects last, both holding the GIL, while both processes
# already keep both cores busy: one call a process after its last chunk measured faster than
# batches of 128 files or 2 MB, with the same output (docs/benchmarks.md).
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
    # (start-up: ~3 ms of patterns compiled, only where a file needs it, and not before the fork)
    from contracts.engine.window import keep_hot_statements

    if checked and len(data) <= scan_mod.MAX_PARSE_BYTES:
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
    needed = _lines_needing_names(f.module, edges, prefixes, decoded)
    if not needed:
        return None
    plain = not decoded and text is not None and _bytes_are_lines(text)
    python_lines: list = []  # the file's lines as Python reads them, once one statement needs them
    return {line: _names_at(f, text, line, contents, decoded, plain, python_lines)
            for line, contents in sorted(needed.items())}


def _lines_needing_names(importer: str, edges, prefixes, decoded: bool) -> dict[int, str]:
    """line -> grimp's text of it, for the from-imports among `edges` into `prefixes` (but for
    an edge within one child package of a prefix)."""
    needed = {}
    for imported, line, contents in edges:
        # (`from a.b \` continues on the next line: the names are read off the whole statement)
        if line not in needed and (decoded or "import" in contents or contents.endswith("\\")):
            prefix = prefixes.longest_of(imported)
            if prefix is not None and not _one_child(importer, imported, prefix):
                needed[line] = contents.lstrip("\ufeff")  # (grimp keeps a BOM in line 1's text)
    return needed


def _names_at(f: SourceFile, text: bytes | None, line: int, contents: str, decoded: bool, plain: bool,
              python_lines: list):
    """The names the statement at `line` imports. Most statements are whole on the line grimp
    reports (`contents`); the file is read only for the rest (a parenthesized list over several
    lines, a statement after `;`): off the lines from this one on where `text` is `plain`
    (its bytes are its lines), else off all of Python's lines (`python_lines` keeps them)."""
    names = None if decoded else names_from_text(contents)
    if names is not None or (not decoded and is_plain_import(contents)):
        return names
    found = _lines_from(text, line, contents) if plain else None
    if found is not None:
        names = None if is_plain_import(found[0]) else names_from_text(found[0], found[1])
        if names is not None:
            return names
    if not python_lines:
        python_lines.append(_python_lines(f, text))
    return statement_names(python_lines[0], line)


def _one_child(importer: str, imported: str, prefix: str) -> bool:
    """Do `importer` and `imported` lie in one child package of `prefix` (a package importing
    itself)? Such an edge keeps no names: fewer names to read."""
    head = prefix + "."
    if not importer.startswith(head):
        return False
    n = len(head)
    child = imported[n:].partition(".")[0]
    return bool(child) and importer[n:].partition(".")[0] == child


def _bytes_are_lines(data: bytes) -> bool:
    """Are `data`'s lines, split at `\\n`, the ones `_python_lines` gives (no BOM, no declared
    encoding, no `\\r`)?"""
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
