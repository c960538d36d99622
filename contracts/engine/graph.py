"""Import edges, from grimp's native scanner where it can read a file, and the grimp graph.

grimp's scanner is native and multithreaded, but its public `build_graph` keeps only what it
can see: it skips directories without `__init__.py` and drops imports of modules that do not
exist. Here the scanner is handed every module the engine discovered (namespace directories
included), and an `ast` pass covers what it cannot read. The resulting edges go into a
`grimp.ImportGraph`, whose chain queries the graph rules use.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from contracts.engine.discover import SourceFile
from contracts.engine.resolve import is_under

# How many physical lines one import statement may span before we stop looking for its end.
MAX_STATEMENT_LINES = 200


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int
    contents: str  # the statement's first line, as grimp reports it
    names: tuple[str, ...] | None = None  # from-imported names, when they were asked for


def _identifier_module(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))


def scan_edges(files: list[SourceFile], known: dict[str, SourceFile], roots: dict[str, str]
               ) -> tuple[dict[str, list[tuple]], dict[str, str]]:
    """Edges (imported, line, contents) of each file in `files`, by importer module.

    `known`: every discovered module (the scanner resolves imports against it);
    `roots`: root package -> its directory. Files grimp's scanner rejects come back in the
    second dict as module -> reason (the caller reports them as parse errors).
    """
    edges: dict[str, list[tuple]] = {}
    failed: dict[str, str] = {}
    native = [f for f in files if _identifier_module(f.module)]
    others = [f for f in files if not _identifier_module(f.module)]
    try:
        edges.update(_native(native, known, roots, failed))
    except Exception:  # pragma: no cover - depends on grimp internals; the ast pass is exact
        others = others + native
    for f in others:
        if f.module in failed or f.module in edges:
            continue
        try:
            with open(f.path, "rb") as fh:
                data = fh.read()
        except OSError as e:
            failed[f.module] = f"cannot read: {e.strerror or e}"
            continue
        from contracts.engine.scan import scan_source

        scan = scan_source(data, f.module, f.is_package)
        if scan.error:
            failed[f.module] = scan.error
            continue
        edges[f.module] = edges_from_refs(scan.refs, known, data)
    return edges, failed


def _native(files, known, roots, failed) -> dict[str, list[tuple]]:
    from grimp import _rustgrimp as rust  # grimp's own scanner (what build_graph calls)
    from grimp.adaptors.filesystem import FileSystem
    from grimp.application.ports.modulefinder import FoundPackage, ModuleFile
    from grimp.domain.valueobjects import Module

    all_files = {
        root: frozenset(ModuleFile(module=Module(m), mtime=0) for m in known if is_under(m, root))
        for root in roots
    }
    packages = {
        FoundPackage(name=root, directory=directory, module_files=all_files[root])
        for root, directory in roots.items()
    }
    todo = {ModuleFile(module=Module(f.module), mtime=0) for f in files}
    basic = FileSystem().convert_to_basic()
    result: dict[str, list[tuple]] = {}
    while todo:
        try:
            scanned = rust.scan_for_imports(
                module_files=tuple(sorted(todo)), found_packages=packages,
                include_external_packages=False, exclude_type_checking_imports=False,
                file_system=basic,
            )
        except BaseException as e:  # noqa: BLE001 - a Rust panic is a BaseException
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            filename = getattr(e, "filename", None)
            bad = next((mf for mf in todo if filename and _module_path_matches(mf.module.name, filename, roots)), None)
            if bad is None:
                raise RuntimeError("native scan failed") from e
            failed[bad.module.name] = f"syntax error, line {getattr(e, 'lineno', '?')}: {getattr(e, 'text', '') or ''}".strip()
            todo.discard(bad)
            continue
        for mf, imports in scanned.items():
            result[mf.name] = sorted(
                (di.imported.name, di.line_number, di.line_contents) for di in imports
            )
        break
    return result


def _module_path_matches(module: str, filename: str, roots: dict[str, str]) -> bool:
    import os

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
    lines = data.decode("utf-8", "replace").splitlines() if data is not None else []
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


def statement_names(lines: list[str], line: int) -> tuple[str, ...] | None:
    """Names a `from ... import` statement starting at `line` (1-based) imports, or None."""
    for end in range(line, min(len(lines), line - 1 + MAX_STATEMENT_LINES) + 1):
        chunk = textwrap.dedent("\n".join(lines[line - 1:end]))
        try:
            tree = ast.parse(chunk)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                return tuple(a.name for a in node.names)
        return None
    return None


def build_import_graph(modules, edges):
    """A grimp ImportGraph of `modules` with `edges` (Edge objects)."""
    import grimp

    graph = grimp.ImportGraph()
    for module in modules:
        graph.add_module(module)
    for e in edges:
        graph.add_import(importer=e.importer, imported=e.imported, line_number=e.line,
                         line_contents=e.contents)
    return graph
