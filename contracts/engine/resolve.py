"""Relative -> absolute module names, and prefix tests. Pure functions on strings."""

from __future__ import annotations

import re
from collections.abc import Collection

# The clauses that continue a compound statement at its own indentation (`try:` is not whole
# without its `except`): a line opening with one of these starts no statement. One list for the
# patterns of `window.py` (text) and `prefilter.statement_start_after` (bytes).
CLAUSE_WORDS = ("else", "elif", "except", "finally")


def package_of(module: str, is_package: bool) -> str:
    """The package a relative import in `module` is relative to."""
    return module if is_package else module.rpartition(".")[0]


def resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str | None:
    """Absolute name of `from <level dots><name> import ...` written in `module`.

    None when the dots climb above the top-level package (Python raises ImportError there).
    """
    if level == 0:
        return name
    base = package_of(module, is_package)
    parts = base.split(".") if base else []
    if level - 1 > len(parts) - 1 or not parts:
        return None
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    if not parts:
        return None
    return ".".join(parts + ([name] if name else []))


def is_under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def is_under_any(module: str, prefixes: Collection[str]) -> bool:
    """Is `module` one of `prefixes` or under one? Its ancestors are looked up, so a set of
    prefixes (every gone package of a release: hundreds) costs the module's depth, not its size."""
    end = module.find(".")
    while end != -1:
        if module[:end] in prefixes:
            return True
        end = module.find(".", end + 1)
    return module in prefixes


_PHYSICAL_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def matches_after(pattern: re.Pattern, head: bytes, data: bytes):
    """(start, end) of each match of the pattern `head` + `pattern`, as that pattern's own
    `finditer` finds them (one after another, none inside the last), searched for as `pattern`:
    `re` looks for a literal by its first byte, and leaving out common leading bytes (`s` of
    `sglang`, `e` of `except`) finds a match sooner. A match of `pattern` not right after `head`
    is none of the whole pattern's, and the search goes on inside it."""
    if not head:
        for m in pattern.finditer(data):
            yield m.start(), m.end()
        return
    skip = len(head)
    pos = floor = 0
    search = pattern.search
    while (m := search(data, pos)) is not None:
        start = m.start() - skip
        if start >= floor and data[start:m.start()] == head:
            yield start, m.end()
            pos = floor = m.end()
        else:
            pos = m.start() + 1


# id(data) -> (data, whether it holds a \r, the offset where a line starts, that line's
# number, every line's start or None): where the last `line_holding` on that text stopped.
# Lines asked in ascending order move the cursor forward; the first step back indexes every
# line's start (at C speed), so each file is searched for \r and its newlines counted once,
# not once per finding (10,000 imports in one file cost 2 s that way).
_CURSORS: dict[int, tuple] = {}
_MAX_CURSORS = 16
_NEWLINE = re.compile(rb"\n")


def _line_start(data: bytes, line: int) -> int | None:
    """Where line `line` (1-based, split at \n) of `data` starts; None past the end, or when
    `data` also breaks lines at \r."""
    entry = _CURSORS.get(id(data))
    if entry is None or entry[0] is not data:
        entry = (data, b"\r" in data, 0, 1, None)
    _, has_cr, offset, row, starts = entry
    if has_cr:
        return None
    if starts is None and row > line:
        starts = [0] + [m.end() for m in _NEWLINE.finditer(data)]
    if starts is not None:
        found = starts[line - 1] if line <= len(starts) else None
        _remember(data, (data, has_cr, 0, 1, starts))
        return found
    while row < line:
        offset = data.find(b"\n", offset) + 1
        if not offset:
            return None
        row += 1
    _remember(data, (data, has_cr, offset, row, None))
    return offset


def _remember(data: bytes, entry: tuple) -> None:
    if len(_CURSORS) >= _MAX_CURSORS and id(data) not in _CURSORS:
        _CURSORS.clear()
    _CURSORS[id(data)] = entry


def line_holding(data: bytes, line: int, text: str) -> int | None:
    """Where line `line` (1-based) of `data` starts, when `text`, a piece of that line (the first
    line of a statement, as grimp reports it), lies on it. None where it does not, `text` is
    blank, or the file also breaks lines at \r (then only the whole file's lines say which is
    which)."""
    try:
        needle = text.strip().encode("utf-8")
    except UnicodeEncodeError:
        return None
    if not needle or line < 1 or b"\r" in data:
        return None
    # Found from the text's occurrences, each numbered by counting the newlines before it (both
    # at C speed), not by stepping line by line to `line`: an import deep in a long file is
    # found in a few microseconds. The search starts where the last one on this text ended
    # (`_CURSORS`), so the lines of many findings in one file, asked in order, cost one pass.
    entry = _CURSORS.get(id(data))
    counted, row = (entry[2], entry[3]) if entry is not None and entry[0] is data and entry[3] <= line else (0, 1)
    pos = data.find(needle, counted)
    while 0 <= pos:
        row += data.count(b"\n", counted, pos)
        counted = pos
        if row >= line:
            if row != line:
                return None
            start = data.rfind(b"\n", 0, pos) + 1
            _remember(data, (data, False, start, line, entry[4] if entry is not None and entry[0] is data else None))
            return start
        pos = data.find(needle, pos + 1)
    return None


def physical_lines(data: bytes) -> list[str]:
    """The lines of `data` as Python numbers them: broken at \\n, \\r and \\r\\n only
    (`str.splitlines` also breaks at form feeds, \\x85 and U+2028)."""
    text = data.decode("utf-8", "replace")
    # `str.split` where the file has no \r (nearly every one): 5x faster than the pattern.
    lines = text.split("\n") if "\r" not in text else _PHYSICAL_LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines
