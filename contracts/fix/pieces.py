"""Which statements of a file go through LibCST: the smallest that hold a finding."""

from __future__ import annotations

import ast
import bisect

from contracts.findings import Finding
from contracts.fix.syntax import Key


def _span(stmt: ast.stmt) -> tuple[int, int]:
    first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    return first, stmt.end_lineno or stmt.lineno


def _child_lists(stmt: ast.stmt):
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if value and isinstance(value[0], ast.stmt):
            yield value
    for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield part.body


def _stands_alone(stmts: list, i: int, lines: list[str]) -> bool:
    """Does `stmts[i]` own its lines: only indentation before it, no `;` neighbour?"""
    first, last = _span(stmts[i])
    text = lines[first - 1]
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    stmt = stmts[i]
    starts_line = text.lstrip(" \t").startswith("@") if getattr(stmt, "decorator_list", None) \
        else stmt.col_offset == len(indent)
    if not starts_line:
        return False
    if i > 0 and _span(stmts[i - 1])[1] >= first:
        return False
    return not (i + 1 < len(stmts) and _span(stmts[i + 1])[0] <= last)


def _holding(stmts: list, line: int, spans: dict) -> int | None:
    """The index of the first statement of `stmts` that spans `line`, or None: by bisection over
    the statements' spans (found once per list), not a scan of the list per line (a file with
    1,400 rewritten imports in 1,400 functions scanned them all for each)."""
    known = spans.get(id(stmts))
    if known is None:
        pairs = [_span(s) for s in stmts]
        known = spans[id(stmts)] = ([a for a, _ in pairs], [b for _, b in pairs])
    starts, ends = known
    k = bisect.bisect_right(starts, line) - 1
    while k > 0 and ends[k - 1] >= line:  # statements sharing the line (`a = 1; import b`)
        k -= 1
    return k if k >= 0 and starts[k] <= line <= ends[k] else None


def _innermost(tree: ast.Module, line: int, lines: list[str], spans: dict, best):
    """The smallest statement below the top level that holds `line` and owns its lines, else
    `best` (the top-level range)."""
    stmts = tree.body
    while stmts:
        hit = _holding(stmts, line, spans)
        if hit is None:
            break
        if stmts is not tree.body and _stands_alone(stmts, hit, lines):
            best = _span(stmts[hit])
        stmts = next((body for body in _child_lists(stmts[hit])
                      if _holding(body, line, spans) is not None), None)
    return best


def statement_ranges(tree: ast.Module, lines: list[str], wanted: set[int]) -> list[tuple[int, int]]:
    """The smallest statements that hold the `wanted` lines and own their lines, as (first, last)
    line ranges, outermost kept where they nest. LibCST parses only these (a whole large file
    costs it seconds); everything else is not touched."""
    # Top level: statements that share a line (`a = 1; import b`) go together.
    top: list[list[int]] = []
    for stmt in tree.body:
        first, last = _span(stmt)
        if top and first <= top[-1][1]:
            top[-1][1] = max(top[-1][1], last)
        else:
            top.append([first, last])
    found: set[tuple[int, int]] = set()
    top_starts = [a for a, _ in top]
    spans: dict[int, tuple[list[int], list[int]]] = {}  # id(list) -> its statements' starts, ends
    for line in wanted:
        k = bisect.bisect_right(top_starts, line) - 1
        best = _innermost(tree, line, lines, spans, tuple(top[k]) if k >= 0 and line <= top[k][1] else None)
        if best is not None:
            found.add(best)
    ranges = sorted(found, key=lambda r: (r[0], -r[1]))
    out: list[tuple[int, int]] = []
    for first, last in ranges:
        if out and first <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out



def bare_keys(tree: ast.Module, fixable: dict[Key, Finding]) -> bool:
    """Does a fixable finding sit on a bare `import a.b.c` (whose chains the whole file uses)?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is None and (node.lineno, node.col_offset + 1, alias.name) in fixable:
                    return True
    return False
