"""THE reader of a file's references: every import statement and string import target of one
file, raw, with its position, whatever Python version's syntax it is written in.

The standard library `ast` reads the file (`ast_refs` walks it); a file this interpreter's `ast`
rejects is read with LibCST's native parser (`cst_scan`), which knows every version's syntax.
Nothing is imported or executed. The text helpers (`source_text`) and the records (`ast_refs`)
are importable from here too, where most callers look for them.
"""

from __future__ import annotations

import ast
import warnings

from contracts.engine.ast_refs import (  # noqa: F401 - the records callers import from here
    FileScan,
    ImportRef,
    Scanner,
)
from contracts.engine.source_text import (  # noqa: F401 - the text helpers callers import from here
    MAX_PARSE_BYTES,
    MAX_SLOW_DECODE_BYTES,
    NUL,
    declared_encoding,
    decode_declared,
    decode_source,
    error_reason,
    hot_lines,
    other_syntax_may_read,
    parse_error_reason,
    searchable,
)


def scan_source(data: bytes, module: str, is_package: bool, words: tuple[bytes, ...] | None = None,
                hot: list[int] | None = None) -> FileScan:
    """Scan one file. With `words` (or `hot`, the line numbers themselves, ascending), only
    statements that span a line containing one of them are looked into (what the rules need,
    and far cheaper than visiting every node); without, every import statement is returned.
    Never raises: what cannot be scanned comes back as `FileScan([], error=reason)`."""
    if len(data) > MAX_PARSE_BYTES:
        return FileScan([], error=(
            f"{len(data) / 2**20:.1f} MiB, over the {MAX_PARSE_BYTES // 2**20} MiB this tool parses "
            f"(parsing takes ~120 bytes of memory per byte); split or exclude the file"))
    text = None
    try:
        text = decode_source(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences etc. are not our business
            tree = ast.parse(text)
    except Exception as e:  # noqa: BLE001 - one bad file is a finding, never a crash of the run
        if hot is None and words is not None:
            hot = hot_lines(searchable(data), words)
        return _other_syntax(data, text, e, module, is_package, hot)
    if hot is None and words is not None:
        hot = hot_lines(searchable(data), words)
    scanner = Scanner(module, is_package, hot)
    try:
        scanner.statements(tree.body, lazy=False, tc=False)
    except RecursionError:
        return FileScan([], error="nested too deeply for the parser")
    scanner.refs.sort(key=lambda r: (r.line, r.col))
    return FileScan(scanner.refs, unresolved=scanner.unresolved or None)


def older_syntax_ast(text: str | bytes, exc: BaseException) -> ast.Module | None:
    """For what a module binds (`index.py`): the module `ast` rejected with `exc`,
    as this Python's `ast` of the same names (`cst_scan.older_ast`) where it is a newer Python's
    syntax, so every interpreter sees the same names; None where no parser reads it."""
    if not other_syntax_may_read(exc):
        return None
    from contracts.engine import cst_scan  # (start-up: LibCST takes 0.1-0.3 s to import; most runs need none)

    return cst_scan.older_ast(text)


def _other_syntax(data: bytes, text: str | None, exc: BaseException, module: str, is_package: bool,
                  hot: list[int] | None) -> FileScan:
    """A file this interpreter's `ast` rejected (`exc`): read with a parser that knows every
    Python version's syntax (`cst_scan.scan_rejected`), so that a newer form (a PEP 701 f-string,
    `type X = ...`, a t-string, `lazy import`) is read alike under every interpreter; a
    `parse-error` (`ast`'s reason) where that parser cannot help."""
    if text is None or not other_syntax_may_read(exc) or NUL in data:
        return FileScan([], error=error_reason(data, exc))
    from contracts.engine import cst_scan  # (start-up: LibCST takes 0.1-0.3 s to import; most runs need none)

    return cst_scan.scan_rejected(data, text, exc, module, is_package, hot)
