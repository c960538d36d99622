"""Scan a tree once: which files to read with `ast`, which to give grimp's scanner, with cache.

A rule only cares about files that can name what it checks. Any reference to a removed module
`a.b.c` -- absolute, relative, `from a.b import c`, a string -- contains the text `c`; any import
of a module under `pkg.kernels` from outside `pkg/kernels/` contains the text `kernels`. So every
file is read (and counted as scanned), and only files that contain those words are parsed. The
graph is closed under imports: a module reached from the checked packages is scanned too, so
chains through modules that never name them are followed (chains stop at the `stop` packages,
whose imports a rule already reports at the first hop).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from contracts.engine.cache import Cache, content_digest
from contracts.engine.discover import Discovery, SourceFile, discover
from contracts.engine.graph import Edge, scan_edges, statement_names
from contracts.engine.resolve import is_under
from contracts.engine.scan import ImportRef, scan_source

SCAN_VERSION = "1"


@dataclass(frozen=True)
class ScanPlan:
    roots: tuple[str, ...]
    ast_words: tuple[bytes, ...]  # a file containing one of these is parsed with ast
    ast_prefixes: tuple[str, ...]  # modules under these are always parsed (e.g. a shim)
    graph_words: tuple[bytes, ...]  # a file containing one of these gets its edges scanned
    graph_prefixes: tuple[str, ...]  # modules under these always get their edges scanned
    closure_stop: tuple[str, ...] = ()  # the import closure does not enter these
    name_prefixes: tuple[str, ...] = ()  # edges into these keep their from-imported names

    @property
    def key(self) -> str:
        return repr((SCAN_VERSION, self))


@dataclass
class Model:
    src: str
    discovery: Discovery
    refs: dict[str, list[ImportRef]] = field(default_factory=dict)  # by rel path
    errors: dict[str, str] = field(default_factory=dict)  # rel path -> reason
    edges: list[Edge] = field(default_factory=list)
    graph_modules: set[str] = field(default_factory=set)
    files_read: int = 0
    cache_status: str = "off"

    @property
    def modules(self) -> dict[str, SourceFile]:
        return self.discovery.by_module

    def graph(self):
        from contracts.engine.graph import build_import_graph

        return build_import_graph(set(self.modules) | self.graph_modules, self.edges)


def _ref_tuple(r: ImportRef) -> tuple:
    return (r.line, r.col, r.end_line, r.kind, r.imported, r.name, r.asname, r.level, r.lazy,
            r.type_checking, r.attr)


def build_model(src: str, plan: ScanPlan, cache_dir: str | None = None) -> Model:
    src = os.path.abspath(src)
    disc = discover(src, plan.roots)
    model = Model(src=src, discovery=disc)
    known = disc.by_module
    cache = Cache(cache_dir, repr((src, plan.key))) if cache_dir else None
    old = cache.load().get("files", {}) if cache else {}
    if cache:
        model.cache_status = cache.status
    new: dict[str, list] = {}
    to_edge_scan: list[SourceFile] = []

    for f in disc.files:
        entry = old.get(f.rel)
        data = None
        if entry is not None and entry[0] == f.mtime_ns and entry[1] == f.size and not cache.is_racy(f.mtime_ns):
            record = entry
        else:
            try:
                with open(f.path, "rb") as fh:
                    data = fh.read()
            except OSError as e:
                model.errors[f.rel] = f"cannot read: {e.strerror or e}"
                continue
            digest = content_digest(data)
            if entry is not None and entry[2] == digest and entry[1] == len(data):
                record = [f.mtime_ns, f.size] + list(entry[2:])
            else:
                wants_ast = any(w in data for w in plan.ast_words) or any(
                    is_under(f.module, p) for p in plan.ast_prefixes)
                wants_graph = any(is_under(f.module, p) for p in plan.graph_prefixes) or any(
                    w in data for w in plan.graph_words)
                refs = error = None
                if wants_ast:
                    scan = scan_source(data, f.module, f.is_package, plan.ast_words)
                    refs = [_ref_tuple(r) for r in scan.refs]
                    error = scan.error
                # [mtime, size, digest, refs, error, wants_graph, edges, names]
                record = [f.mtime_ns, f.size, digest, refs, error, wants_graph, None, None]
        record = list(record)
        new[f.rel] = record
        model.files_read += 1
        if record[5] and record[6] is None and record[4] is None:
            to_edge_scan.append(f)

    by_rel = {f.rel: f for f in disc.files}
    roots = {r: os.path.join(src, r) for r in plan.roots if os.path.isdir(os.path.join(src, r))}

    def edge_scan(files: list[SourceFile]) -> None:
        edges, failed = scan_edges(files, known, roots)
        for f in files:
            rec = new[f.rel]
            if f.module in failed:
                rec[4] = failed[f.module]
                continue
            rec[5] = True
            rec[6] = edges.get(f.module, [])
            rec[7] = _names_for(f, rec[6], plan.name_prefixes)

    if to_edge_scan:
        edge_scan(to_edge_scan)

    # Close the graph under imports from the checked packages.
    if plan.graph_prefixes:
        rel_of = {f.module: f.rel for f in disc.files if known.get(f.module) is f}
        frontier = [m for m, rel in rel_of.items() if any(is_under(m, p) for p in plan.graph_prefixes)]
        seen = set(frontier)
        while frontier:
            missing = []
            for m in frontier:
                rec = new.get(rel_of.get(m, ""))
                for imported, *_ in (rec[6] or []) if rec else []:
                    if imported in seen or any(is_under(imported, s) for s in plan.closure_stop):
                        continue
                    seen.add(imported)
                    missing.append(imported)
            todo = [by_rel[rel_of[m]] for m in missing if m in rel_of and new[rel_of[m]][6] is None
                    and new[rel_of[m]][4] is None]
            if todo:
                edge_scan(todo)
            frontier = missing

    for rel, rec in new.items():
        f = by_rel[rel]
        if rec[4] is not None:
            model.errors[rel] = rec[4]
        if rec[3] is not None:
            model.refs[rel] = [ImportRef(*t) for t in rec[3]]
        if rec[6] is not None:
            names = rec[7] or {}
            model.graph_modules.add(f.module)
            for imported, line, contents in rec[6]:
                model.edges.append(Edge(f.module, imported, line, contents, names.get(line)))
    if cache is not None and (new != old or cache.status != "warm"):
        cache.save({"files": new})
    return model


def _names_for(f: SourceFile, edges, prefixes) -> dict | None:
    lines_needed = sorted({line for imported, line, contents in edges
                           if any(is_under(imported, p) for p in prefixes) and "import" in contents})
    if not lines_needed:
        return None
    try:
        with open(f.path, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    lines = text.splitlines()
    return {line: statement_names(lines, line) for line in lines_needed}
