"""Close the graph under imports from the checked packages: a module they reach is scanned too.

The closure is a breadth-first walk over edges, and a module's edges are known only once grimp
has scanned it: walked round by round, each round is one native call for the modules the last
one reached (each call with a fixed cost besides its files, most with too few files to keep
both of the scanner's threads busy). So the walk is first *predicted*
from the import lines of the files themselves (`predicted`: a regular expression, relative
imports resolved, each name resolved as grimp resolves it), and every module it reaches is
scanned in one call; the exact walk (`close`) then runs on the scanned edges, and scans only
what the prediction missed. The prediction only decides what is scanned early, never what is
reached: the graph is the one the exact walk finds, whatever the prediction said (a module
predicted but not reached has edges no rule sees).

In a cold build the prediction is made earlier still, by the part that reads every module under
the graph prefixes first (`early_closure`, called from `reading.scan_part`): once their edges
are back it predicts, and its files are scanned while the other files are read, so that after
the merge only the exact walk is left (the prediction and its scan paid inside the parallel part,
where no core waits; docs/benchmarks.md).
"""

from __future__ import annotations

import re

from contracts.engine.files import read_regular
from contracts.engine.import_forms import prefix_pattern_bytes
from contracts.engine.records import GRAPH, MAX_READ_BYTES

# An import statement's head at the start of a line: `from X import` or `import` (after PEP 810's
# `lazy`, if written). What follows is read by hand (`import_lines`): names in brackets up to the
# next `)` (found once, not per line), else to the end of the line. A match inside a string only adds a module to scan.
_HEAD = re.compile(rb"[ \t]*" + prefix_pattern_bytes(rb"[ \t]") + rb"(?:from[ \t]+([.\w]+)[ \t]+import[ \t]*|import[ \t]+)")
_REST = re.compile(rb"[^\n#;]*")
_AS = re.compile(rb"[ \t]+as[ \t]+\w+")
_COMMENT = re.compile(rb"#[^\n]*")
# Past this many predicted modules, the prediction stops growing: it is a hint, not the walk.
MAX_PREDICTED = 20000
# A larger file is not read for the prediction (its imports wait for the exact walk): a file of
# nothing but import lines costs the prediction more than grimp's parse.
MAX_PREDICTED_BYTES = 1 << 20


def _absolute(module: str, is_package: bool, name: str) -> str | None:
    dots = len(name) - len(name.lstrip("."))
    if not dots:
        return name
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if dots - 1 > len(parts) - 1:
        return None
    base = parts[:len(parts) - (dots - 1)]
    rest = name[dots:]
    return ".".join(base + ([rest] if rest else []))


def _internal(name: str, known) -> str | None:
    """The module grimp resolves an imported object `name` to: itself, else its parent."""
    if name in known:
        return name
    parent = name.rpartition(".")[0]
    return parent if parent in known else None


def import_lines(data: bytes, module: str, is_package: bool, known) -> set[str]:
    """The modules of `known` that `data`'s import lines name (an over- or under-estimate:
    a line in a string counts, a backslash continuation does not)."""
    out: set[str] = set()
    for base, names in _import_clauses(data):
        if base is None:
            _add_plain_import(out, names, known)
        else:
            _add_from_import(out, base, names, module, is_package, known)
    return out


def _import_clauses(data: bytes):
    """(the module of a `from X import`, or None for `import`; the names' text) of each import
    statement found at the start of a line. Linear in `data`, whatever it holds: each line is
    tried once (found from the lines holding `import`, with `bytes.find`: a pattern anchored with
    `^` is tried at every position, 4x slower), and a bracket's end is searched once for all the
    lines before it."""
    line_start = seen = 0
    tried = -1
    close = -1  # the first `)` at or after the last bracket opened (-2: none left)
    at = data.find(b"import")
    while at >= 0:
        newline = data.rfind(b"\n", seen, at)
        if newline >= 0:
            line_start = newline + 1
        seen = at
        head = _HEAD.match(data, line_start) if line_start != tried else None
        tried = line_start
        if head is None or head.end() <= at:
            at = data.find(b"import", at + 6)
            continue
        base, pos = head.group(1), head.end()
        if base is not None and data[pos:pos + 1] == b"(":
            close = _bracket_end(data, pos, close)
            end = len(data) if close == -2 else close
            names = _COMMENT.sub(b"", data[pos + 1:end])  # (a comment inside: `import (  # ...`)
        else:
            end = _REST.match(data, pos).end()
            names = data[pos:end]
        at = data.find(b"import", max(end, at + 6))
        yield base, names


def _bracket_end(data: bytes, pos: int, close: int) -> int:
    """The first `)` at or after `pos` (-2: none), where `close` (the last one found) is before it."""
    if close != -2 and close < pos:
        close = data.find(b")", pos)
        close = -2 if close < 0 else close
    return close


def _add_plain_import(out: set[str], names: bytes, known) -> None:
    """The modules an `import a.b, c as d` names (up to a name that is not ASCII)."""
    try:
        for item in _AS.sub(b"", names).split(b","):
            name = item.strip().decode("ascii")
            found = name and _internal(name, known)
            if found:
                out.add(found)
    except UnicodeDecodeError:
        return


def _add_from_import(out: set[str], base: bytes, names: bytes, module: str, is_package: bool, known) -> None:
    """The modules a `from base import names` names: each name's module, else `base` itself."""
    try:
        source = _absolute(module, is_package, base.decode("ascii"))
    except UnicodeDecodeError:
        return
    if source is None:
        return
    hit = False
    for item in _AS.sub(b"", names).replace(b"\\", b" ").split(b","):
        found = _from_name(source, item.strip(), known)
        if found:
            out.add(found)
            hit = True
    if not hit and source in known:
        out.add(source)


def _from_name(source: str, name: bytes, known) -> str | None:
    """The module of `known` that `from source import name` imports (or its parent), or None."""
    if not name or name == b"*":
        return None
    try:
        return _internal(f"{source}.{name.decode('ascii')}" if source else name.decode("ascii"), known)
    except UnicodeDecodeError:
        return None


def predicted(start: list[str], known, records: dict, rel_of: dict, stop, unread: bool = False) -> list[str]:
    """The modules a walk from `start` may reach, read off the import lines of the files that
    have no edges yet (the edges of those that have them are used as they are); `stop`: a
    `PrefixIndex` of packages the walk does not enter. `unread`: a module with no record is read
    too (a part of a build predicts before the other parts' records are in)."""
    seen = set(start)
    todo = list(start)
    missing: list[str] = []
    while todo and len(seen) < MAX_PREDICTED:
        nxt = []
        for m in todo:
            rec = records.get(rel_of.get(m))
            if rec is None and not (unread and m in known):
                continue
            if rec is None or rec.edges is None:
                missing.append(m)
            for t in _targets(m, rec, known):
                if t not in seen and stop.longest_of(t) is None:
                    seen.add(t)
                    nxt.append(t)
        todo = nxt
    return missing


def _targets(m: str, rec, known) -> set[str]:
    """The modules `m` imports: its edges where scanned, else read off its import lines."""
    if rec is not None and rec.edges is not None:
        return {imported for imported, *_ in rec.edges}
    f = known[m]
    if f.size > MAX_PREDICTED_BYTES:
        return set()
    try:
        data = read_regular(f.path, limit=MAX_READ_BYTES)[0]
    except OSError:
        return set()
    return import_lines(data, m, f.is_package, known)


def close(graph_index, stop, known, records: dict, rel_of: dict, needs_edges, scan, store,
          early: tuple | None = None) -> set[str]:
    """The modules reached from those under `graph_index` by imports, not entering `stop`
    packages. `scan(files)` gives (edges, failed) of files that have no edges (`needs_edges`),
    `store(files, edges, failed)` records them: only for modules the walk reaches, so what the
    prediction scanned in vain (a syntax error grimp found in a file nothing reaches included)
    leaves no trace. `early`: (edges, failed, the modules they answer for) of a prediction
    already scanned (`early_closure`, while the files were read); else it is made here."""
    frontier = [m for m in rel_of if graph_index.longest_of(m) is not None]
    if early is None:
        early = _scan_predicted(frontier, known, records, rel_of, stop, needs_edges, scan)
    *answer, ready = early
    reached = set(frontier)
    while frontier:
        frontier = _next_round(frontier, reached, records, rel_of, stop)
        todo = [known[m] for m in frontier if m in known and needs_edges(known[m])]
        _store_round(todo, ready, answer, scan, store)
    return reached


def _store_round(todo: list, ready, answer: list, scan, store) -> None:
    """The edges of a round's files stored: from the early `answer` for the modules it holds
    (`ready`), from a scan now for the rest."""
    have = [f for f in todo if f.module in ready]
    rest = [f for f in todo if f.module not in ready]
    if have:
        store(have, *answer)
    if rest:
        store(rest, *scan(rest))


def _scan_predicted(frontier: list[str], known, records: dict, rel_of: dict, stop, needs_edges, scan) -> tuple:
    """(edges, failed, the modules scanned) of the modules the walk from `frontier` is
    predicted to reach, scanned in one call."""
    files = [known[m] for m in predicted(frontier, known, records, rel_of, stop)
             if m in known and needs_edges(known[m])]
    return (*(scan(files) if files else ({}, {})), {f.module for f in files})


def _next_round(frontier: list[str], reached: set[str], records: dict, rel_of: dict, stop) -> list[str]:
    """The modules the edges of `frontier` reach first (added to `reached`), in order."""
    missing = []
    for m in frontier:
        rec = records.get(rel_of[m])
        for imported, *_ in (rec.edges or ()) if rec else ():
            if imported in reached or stop.longest_of(imported) is not None:
                continue
            reached.add(imported)
            missing.append(imported)
    return missing


def early_closure(graph_index, stop, known, records: dict, rel_of: dict) -> list:
    """The files a build's closure will likely need scanned, predicted by a part of the build
    that holds the records of every module under `graph_index` (their edges scanned) before the
    other parts are done: a module with no record here is read for its import lines. Scanned
    while the other files are read, they spare the closure its prediction and its scan after
    the merge (`close(early=...)`), where one core would wait."""
    frontier = [m for m in rel_of if graph_index.longest_of(m) is not None]
    out = []
    for m in predicted(frontier, known, records, rel_of, stop, unread=True):
        rec = records.get(rel_of.get(m))
        # (a graph file of this part gets its edges from its own scan; one of another part's is
        # not known here, and is scanned in vain)
        if rec is None or (rec.wants_edges() and not rec.flags & GRAPH):
            out.append(known[m])
    return out
