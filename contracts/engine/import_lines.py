"""The import statements of a file read off its text, without `ast`: a cheap, conservative pass.

`ast` costs the same per byte whatever a file holds, and the statements of a whole tree are
needed to find the imports of modules that do not exist, of which there are usually a handful.
So every file's import statements are read here from the text, at the places where the word
`import` occurs (a byte search), and only the files where something looks wrong are parsed with
`ast` (`scan.scan_source`), which gives the exact references, positions and flags the findings
report. This pass is a filter: what it reads as a statement may be prose in a docstring (the
`ast` pass then finds nothing there), and what it cannot read with certainty -- a statement after
`;` or `:` on the same line, a backslash continuation before the keyword, a relative
`importlib.import_module(".x", ...)` -- is returned as an `unsure` line, so that the caller
parses the statements around it with `ast` (a lone carriage return: the whole file). It never
drops a statement silently.

Only statements that can name a module under the wanted roots are read in full (relative ones,
and absolute ones starting with a root name); the others are recognized and skipped. Identical
lines (a common `from pkg.utils import helper` recurs across a tree) are read once per run.

String targets are read the same way: `"module:attr"` literals and the first argument of
`importlib.import_module("...")` / `__import__("...")`, where the literal starts with a root name.
"""

from __future__ import annotations

import marshal
import re
from collections import namedtuple
from functools import partial

from contracts.engine.import_forms import IMPORT_PREFIXES, prefix_pattern_bytes
from contracts.engine.scan import declared_encoding, searchable

_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | frozenset(range(128, 256))
_PREFIX = prefix_pattern_bytes(rb"[ \t\f]")  # a soft keyword before the statement (`import_forms`)
# A statement head on its own line: `from <dots><module> import <rest>` or `import <rest>`, either
# after PEP 810's soft keyword `lazy` (`lazy import a.b`, `lazy from a import b`; Python 3.15).
_HEAD = re.compile(rb"[ \t\f]*" + _PREFIX + rb"(?:from(?=[ \t\f.])[ \t\f]*(\.*)[ \t\f]*([A-Za-z_][\w.]*)?[ \t\f]*import(?![\w])(.*)"
                   rb"|import(?![\w])(.*))\Z", re.S)
# The text before a keyword that may start a statement there: after `;`, or after a `:` that
# ends a compound header (`if TYPE_CHECKING: import x`, `try: from a import b`).
_AFTER_SEPARATOR = re.compile(rb"[;:][ \t\f]*" + _PREFIX + rb"(?:from[ \t\f]+[.\w \t\f]*)?\Z")
_IDENT = re.compile(rb"[A-Za-z_]\w*\Z")
_DOTTED = re.compile(rb"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\Z")
_LITERAL = re.compile(rb"""(["'])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?)\1""")
_QUOTES = {ord('"'): 0, ord("'"): 1}  # (`_quoted_roots`: double quotes first, as they were searched)
MAX_STATEMENT_LINES = 200
UNSURE = "unsure"
# What may stand before a statement's keyword on its line and still begin it there.
_BARE_HEADS = frozenset({b"", *(word.encode() for word in IMPORT_PREFIXES)})
WHOLE_FILE = [0]  # `read`'s answer when no line can be trusted (a lone carriage return)


class Statement(namedtuple("Statement", "line kind module names level indent bound", defaults=(0, 0, ()))):
    """One import statement (or string target) as the text shows it.

    `kind`: 'import' (`names` are the dotted modules), 'from' (`module` with `level` dots,
    `names` the imported names, `*` for a star), 'string' (`module:attr`, `names` = (attr,)),
    'importlib' (`import_module("module")`). `indent`: 0 when the statement's line starts at
    column 0 (possibly module level). `bound`: the names the statement binds.

    A named tuple: the statements of a tree are made again from `packed` rows by the thousand,
    and a frozen dataclass costs several times as much to make.
    """

    __slots__ = ()


def packed(statements: list[Statement]) -> bytes:
    """`statements` as one `marshal`led bytes object, for a worker to send: pickled, it is a copy
    of bytes, where the statements as objects cost the child 8 ms to pickle and the main process
    6 ms to unpickle at each hand-over on 0.5.23, and are made again (`unpacked`) only by the
    process whose rules read them, in its own pages (a process forked later copies every page
    of the objects it touches)."""
    return marshal.dumps(list(map(tuple, statements))) if statements else b""


def unpacked(found: list[Statement] | bytes) -> list[Statement]:
    """The statements `packed` made, or `found` itself where they were read in this process."""
    if type(found) is not bytes:
        return found
    return list(map(_STATEMENT, marshal.loads(found))) if found else []


_STATEMENT = partial(tuple.__new__, Statement)  # (a row's fields, in order: no check, no copy)

class StatementReader:
    """Reads files for one run: `roots` are the root package names whose statements are wanted;
    the parse of each distinct statement text is kept for the next file that has it."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = tuple(r.encode() for r in roots)
        self._seen: dict[bytes, object] = {}

    def read(self, data: bytes) -> tuple[list[Statement], list[int]]:
        """(statements, unsure) of one file. `unsure`: the lines (1-based, ascending) where
        something may be an import statement this pass cannot read, for `ast` to parse the
        statements around them; `WHOLE_FILE` when the whole file must be parsed."""
        hay = _python_bytes(data)
        if hay is None:
            return [], WHOLE_FILE
        out: list[Statement] = []
        unsure: set[int] = set()
        covered = -1  # the offset up to which the statement read last extends
        line, counted = 1, 0
        n = len(hay)
        pos = hay.find(b"import")
        while pos >= 0:
            nxt = pos + 6
            if pos <= covered or (pos and hay[pos - 1] in _WORD) or (nxt < n and hay[nxt] in _WORD):
                if hay.startswith(b"_module", nxt) and _relative_import_module(hay, nxt + 7):
                    unsure.add(hay.count(b"\n", 0, pos) + 1)
                pos = hay.find(b"import", nxt)
                continue
            start = hay.rfind(b"\n", 0, pos) + 1
            line += hay.count(b"\n", counted, start)
            counted = start
            end = self._statement_at(hay, start, pos, line, out, unsure)
            if end is None:  # not a statement here; another `import` may follow on the line
                pos = hay.find(b"import", nxt)
                continue
            covered = end
            pos = hay.find(b"import", end)
        if self.roots:
            self._strings(hay, out)
        return out, sorted(unsure)

    def _statement_at(self, hay: bytes, start: int, pos: int, line: int, out: list[Statement],
                      unsure: set[int]) -> int | None:
        """Read the statement whose keyword `import` is at `pos` (its line, number `line`, starts
        at `start`) into `out` or, where it cannot be read, its line into `unsure`. The offset
        where the statement ends, or None where this `import` starts none."""
        eol = hay.find(b"\n", pos)
        if eol < 0:
            eol = len(hay)
        text = hay[start:eol]
        key = (pos - start, text)
        parsed = self._seen.get(key)
        if parsed is None:
            parsed = self._seen[key] = self._parse_line(text, pos - start)
        if start >= 2 and hay[start - 2] == 92:  # continued from the line before (a backslash)
            unsure.add(line)
        if parsed is False:
            return None
        if parsed is UNSURE:
            unsure.add(line)
        elif type(parsed) is tuple:
            out.append(_statement(parsed, line, hay, start))
        elif parsed is not True:  # continued on the next lines
            stmt, eol = self._continued(hay, start, pos, line)
            if stmt is None:
                unsure.add(line)
            elif stmt is not True:
                out.append(stmt)
        return eol

    def _parse_line(self, text: bytes, at: int):
        """What the line `text` (with the keyword at `at`) is: False (no statement), True (a
        statement of no interest), UNSURE, a tuple (kind, level, module, names, bound), or
        "more" when it continues on the next lines."""
        head = text[:at]
        m = _HEAD.match(text)
        if m is None or (head.strip(b" \t\f") not in _BARE_HEADS and m.group(3) is None):
            return UNSURE if m is None and _AFTER_SEPARATOR.search(head) else False
        if m.group(4) is not None:
            return self._import(m.group(4))
        return self._from(m.group(1), m.group(2), m.group(3))

    def _import(self, rest: bytes):
        """`_parse_line` of `import <rest>`: the dotted modules and what they bind."""
        if not any(root in rest for root in self.roots):
            return True if _items(rest) is not None else "more" if rest.rstrip().endswith(b"\\") else UNSURE
        items = _items(rest)
        if items is None:
            return "more" if rest.split(b"#", 1)[0].rstrip().endswith(b"\\") else UNSURE
        if any(not _DOTTED.match(name) for name, _ in items):
            return UNSURE
        return ("import", 0, None, tuple(name.decode() for name, _ in items),
                tuple((alias or name.split(b".", 1)[0]).decode() for name, alias in items))

    def _from(self, dots: bytes, module: bytes | None, rest: bytes):
        """`_parse_line` of `from <dots><module> import <rest>`: the module, the imported names
        and what they bind; of another package's module, only a star import (what it binds is
        unknown)."""
        if not dots and (module is None or not module.startswith(self.roots)):
            if module is None:
                return UNSURE
            return ("from", 0, module.decode(), ("*",), ()) if b"*" in rest else True
        items = _items(rest)
        if items is None:
            body = rest.split(b"#", 1)[0].strip()
            return "more" if body.startswith(b"(") or body.endswith(b"\\") else UNSURE
        if module is not None and not _DOTTED.match(module):
            return UNSURE
        return _from_names(len(dots), module, items)

    def _continued(self, hay: bytes, start: int, pos: int, line: int):
        """A statement whose names continue on the next lines: (Statement, end offset), (True,
        end) for one of no interest, (None, end) when it cannot be read."""
        close = hay.find(b")", pos)
        chunk = hay[start:close + 1] if close >= 0 else b""
        if chunk and chunk.count(b"\n") < MAX_STATEMENT_LINES and chunk.count(b"(") == 1 \
                and b"#" not in chunk and b"\\" not in chunk:
            joined, end = chunk, close  # the usual `from a import (\n    b,\n    c,\n)`
        else:
            joined, end = self._joined(hay, start)
            if joined is None:
                return None, end
        eol = hay.find(b"\n", end)
        eol = len(hay) if eol < 0 else eol
        if hay[end + 1:eol].split(b"#", 1)[0].strip():
            return None, eol  # something follows the statement on its last line
        joined = joined.replace(b"\n", b" ").replace(b"(", b" ").replace(b")", b" ")
        parsed = self._parse_line(joined, pos - start)
        if type(parsed) is tuple:
            return _statement(parsed, line, hay, start), eol
        return (True if parsed is True else None), eol

    @staticmethod
    def _joined(hay: bytes, at: int) -> tuple[bytes | None, int]:
        """The logical line from `at`: comments cut, backslash continuations and bracketed lines
        joined; (None, offset) when it runs past `MAX_STATEMENT_LINES`."""
        parts = []
        depth = 0
        for _ in range(MAX_STATEMENT_LINES):
            eol = hay.find(b"\n", at)
            if eol < 0:
                eol = len(hay)
            text = hay[at:eol]
            cut = text.find(b"#")  # an import statement holds no strings: `#` starts a comment
            if cut >= 0:
                text = text[:cut]
            depth += text.count(b"(") - text.count(b")")
            stripped = text.rstrip(b" \t\f")
            if stripped.endswith(b"\\"):
                parts.append(stripped[:-1])
                at = eol + 1
                continue
            parts.append(text)
            if depth > 0 and eol < len(hay):
                at = eol + 1
                continue
            return b" ".join(parts), max(eol - 1, 0)
        return None, at

    def _strings(self, hay: bytes, out: list[Statement]) -> None:
        """Append the string targets under the roots (those in double quotes first)."""
        for _quote, _root, pos in sorted(self._quoted_roots(hay)):
            m = _LITERAL.match(hay, pos)
            if m is not None:
                value = m.group(2).decode()
                module, _, attr = value.partition(":")
                if attr:
                    out.append(Statement(hay.count(b"\n", 0, pos) + 1, "string", module, (attr,)))
                elif _called(hay, pos):
                    out.append(Statement(hay.count(b"\n", 0, pos) + 1, "importlib", module, ()))

    def _quoted_roots(self, hay: bytes):
        """(0 for `"`, 1 for `'`; the root's rank; the quote's offset) of each quote that opens a
        root's dotted name: one search per root, not one per root and quote (the search is most
        of the cost)."""
        for rank, root in enumerate(self.roots):
            key = root + b"."
            pos = hay.find(key, 1)
            while pos >= 0:
                quote = _QUOTES.get(hay[pos - 1])
                if quote is not None:
                    yield quote, rank, pos - 1
                pos = hay.find(key, pos + 1)


def _statement(parsed: tuple, line: int, hay: bytes, start: int) -> Statement:
    """The `Statement` of a parsed line (`StatementReader._parse_line`'s tuple) whose line,
    number `line`, starts at `start`."""
    kind, level, module, names, bound = parsed
    return Statement(line, kind, module, names, level, 0 if hay[start:start + 1] not in b" \t\f" else 1, bound)


def _from_names(level: int, module: bytes | None, items: list[tuple[bytes, bytes | None]]):
    """`_parse_line`'s tuple for `from <level dots><module> import <items>`; UNSURE where a name
    is not an identifier."""
    if any(name != b"*" and not _IDENT.match(name) for name, _ in items):
        return UNSURE
    names = tuple(name.decode() for name, _ in items)
    if any(alias is not None or name == b"*" for name, alias in items):
        bound = tuple((alias or name).decode() for name, alias in items if name != b"*")
    else:  # (the same tuple: a worker's pickle sends it once)
        bound = names
    return ("from", level, module.decode() if module else None, names, bound)


def _python_bytes(data: bytes) -> bytes | None:
    """The bytes to read statements in: `data` as it is (a non-ASCII character in a statement
    makes it unreadable here, so NFKC-normalized identifiers go to `ast`), decoded where it
    declares an encoding, its \\r\\n made \\n; None where a lone \\r ends a line for Python and
    not for this pass."""
    hay = data if declared_encoding(data) is None else searchable(data)
    if b"\r" in hay:
        hay = hay.replace(b"\r\n", b"\n")
        if b"\r" in hay:
            return None
    return hay


def _items(rest: bytes) -> list[tuple[bytes, bytes | None]] | None:
    """`a, b as c` -> [(a, None), (b, c)]; None when `rest` is not such a list (a comment after
    it is dropped; a `;` ends the statement)."""
    rest = _names_text(rest)
    if rest is None:
        return None
    items = []
    for item in rest.split(b","):
        words = item.split()
        if not words:
            continue
        if len(words) == 1:
            items.append((words[0], None))
        elif len(words) == 3 and words[1] == b"as" and _IDENT.match(words[2]):
            items.append((words[0], words[2]))
        else:
            return None
    return items or None


def _names_text(rest: bytes) -> bytes | None:
    """The names of `rest` (what follows `import`) without a comment, a trailing `;` and the
    brackets around them; None where another statement follows on the line (left to `ast`) or
    brackets or a backslash remain."""
    cut = rest.find(b"#")
    if cut >= 0:
        rest = rest[:cut]
    semi = rest.find(b";")
    if semi >= 0:
        if rest[semi + 1:].strip():
            return None
        rest = rest[:semi]
    rest = rest.strip(b" \t\f")
    if rest.startswith(b"(") and rest.endswith(b")"):
        rest = rest[1:-1]
    if not rest or b"(" in rest or b")" in rest or b"\\" in rest:
        return None
    return rest


def _relative_import_module(hay: bytes, pos: int) -> bool:
    """`import_module(".x", ...)` at `pos` (just after the name): a relative dynamic import,
    which this pass does not resolve."""
    after = hay[pos:pos + 80].lstrip()
    if not after.startswith(b"("):
        return False
    arg = after[1:].lstrip()
    return arg[:1] in (b"'", b'"') and arg[1:2] == b"."


def _called(hay: bytes, pos: int) -> bool:
    """Is the literal at `pos` the first argument of `import_module(`, `__import__(` or
    `importorskip(` (the calls `ast_refs` reads as dynamic imports)?"""
    before = hay[max(0, pos - 80):pos].rstrip()
    if not before.endswith(b"("):
        return False
    return before[:-1].rstrip().endswith((b"import_module", b"__import__", b"importorskip"))
