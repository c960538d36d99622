"""Keep only the top-level statements around the lines that hold a word: parse less of a file.

`ast.parse` costs the same per byte whatever the file holds, and the files that name a removed
module tend to be the large ones, with few such lines. A reference can only sit in a statement
that spans such a line, so only the top-level statements around those lines are kept, whole
(a lazy import keeps its function, an `if TYPE_CHECKING:` block its test); every other line is
replaced by an empty one. Line and column numbers are unchanged, and `scan_source` finds in the
result what it finds in the whole file.

A top-level statement starts at column 0, on a line that is not inside a string (strings and
comments are found with one regular expression), not continued by a backslash, not a clause of
the statement before (`else`, `except`, ...) and not the `def` under a decorator. The one case
this cannot see -- text at column 0 inside brackets -- cuts a statement in two; the kept text
then does not parse, and the caller parses the whole file instead. `None` means "parse the whole
file" (small files, or when most of it would be kept anyway).

Inside a kept statement the blocks are taken apart too (`nested=True`, tried first): a lazy
import in one method of a long class keeps the class and method headers and the import, not
the class. Statements and headers are found on a copy of the text with comments blanked and
strings reduced to a quote (so brackets, colons and backslashes are the code's); a header ends
at the logical line ending with `:`. Every header on the way is kept (decorators, `def`,
`class`, `if TYPE_CHECKING:`, `try:` and each `except ...:`), so what makes a reference lazy,
type-only or guarded is still there; a block whose first statement goes gets `pass` in its
place, so every block keeps a body and no string becomes a docstring. A shape this does not
take apart (brackets open at a cut, a header with its body on one line, `match`) is kept
whole, and a nested window that does not parse gives way to the top-level one.
`tests/contracts/engine/test_window.py` checks on generated files that the windows and the whole-file
parse find the same references.
"""

from __future__ import annotations

import bisect
import re
import sys

from contracts.engine.resolve import CLAUSE_WORDS, matches_after
from contracts.engine.source_text import decode_source, hot_lines, searchable

# Below this many bytes a whole parse costs less than finding the statements (~1 ms).
MIN_BYTES = 4096
# Keeping more than this share of the lines saves too little to be worth a second parse.
MAX_KEPT = 0.8

# Comments and strings, in order, so that a quote or `#` inside one is not taken for another.
# (No groups: they would cost the search its fast scan for the next `#` or quote.)
_TOKENS = re.compile(r'''
    \#[^\n]*
  | """[^"\\]*(?:(?:\\.|"(?!""))[^"\\]*)*(?:"""|\Z)
  | \'\'\'[^'\\]*(?:(?:\\.|'(?!''))[^'\\]*)*(?:\'\'\'|\Z)
  | "[^"\\\n]*(?:\\.[^"\\\n]*)*"?
  | '[^'\\\n]*(?:\\.[^'\\\n]*)*'?
''', re.S | re.X)
# A line that may start a top-level statement: a letter, `_` or `@` at column 0. (Found after
# its newline: a pattern that starts with a literal is searched at memchr speed, `^` is tried
# at every position.)
_CANDIDATE = re.compile(r"\n(?=[^\W\d]|@)")
_FIRST_CANDIDATE = re.compile(r"[^\W\d]|@")


def _candidates(text: str):
    """The offsets of the lines of `text` that may start a top-level statement, in order."""
    if _FIRST_CANDIDATE.match(text):
        yield 0
    for m in _CANDIDATE.finditer(text):
        yield m.end()
_CLAUSE = re.compile(r"(?:%s)\b" % "|".join(CLAUSE_WORDS))
_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.M)


# What grimp's parser (ruff's, which reads every Python version's syntax) accepts and this
# Python's does not. The window leaves the rest of a file to grimp's parse, so a file with one
# of these is parsed whole by `ast` instead: a large file gets the `parse-error` a small one
# gets. A match is only a reason to parse everything (false alarms cost time, never a finding).
_STRICTER_BYTES = (  # searched with `in` (memchr): 10x faster than a pattern's search
    b"\0",  # a NUL byte
    b"\t",  # a tab (in indentation, a TabError is Python's alone); few files have one
)
# Patterns of a word, where the match must start a token (checked by hand: a look-behind would
# cost `re` its fast literal search), as (the pattern without the word's first letter, that
# letter): `re` looks for a literal's first byte, and a rare one is found faster
# (`resolve.matches_after`).
_STRICTER_WORDS = []
# `except A, B:` (Python 2, and 3.14's unparenthesized form): a clause starts its line, so the
# word in prose (`... except the final one, ...`) is no reason to parse a whole large file.
_EXCEPT_COMMA = (re.compile(rb"xcept[ \t]+[^:\n(\[]*,"), b"e")
_F_STRINGS: dict[bytes, re.Pattern] = {}  # the prefix as written -> what follows it
if sys.version_info < (3, 12):
    _STRICTER_WORDS += [
        (re.compile(rb"ype[ \t]+\w+[ \t]*[\[=]"), b"t"),  # PEP 695 `type X = ...`
        (re.compile(rb"def[ \t]+\w+[ \t]*\["), b""),  # PEP 695 generics
        (re.compile(rb"class[ \t]+\w+[ \t]*\["), b""),
    ]
    # PEP 701 f-strings: the same quote, a backslash or a comment inside a replacement field
    # (passing over literal text, `{{`, and whole fields, `{a}` or `{a:{w}}`: a brace escaped
    # as `{{` opens no field)
    _F_STRINGS = {prefix: re.compile(prefix + rb"(?:[^{" + prefix[-1:] + rb"\n]|\{\{|\{(?:[^{}\n]|\{[^{}\n]*\})*\})*"
                                     rb"\{(?!\{)(?:[^}\n]*[" + prefix[-1:] + rb"\\]|[^}:\n]*#)")  # (`{n:#x}`: a format spec)
                  for prefix in (b'f"', b"f'", b'F"', b"F'")}
# PEP 750 template strings (`t"`, `t'`, `T"`, `T'` starting a token).
_T_STRINGS = sys.version_info < (3, 14)
# Both kinds of prefix are found in one copy of the text with `F`, `T` and `'` mapped to `f`, `t`
# and `"` (the same length: an offset in it is one in `data`): one search for `f"` finds every
# f-string start, one for `t"` every t-string start.
_PREFIX_MAP = bytes.maketrans(b"FT'", b'ft"')
_F_START = re.compile(b'f"')
# (A backslash in code only ends a line: `\t"` is inside a string.)
_NOT_TOKEN_START = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.'\"-\\")


def _not_code(data: bytes, at: int) -> bool:
    """Offset `at` is surely not code: its line holds a `#` before it and no quote. (Whether the
    line starts in code or inside a string, a string can only end at a quote: so the `#` begins
    a comment, or the match is still inside the string.)"""
    before = data[data.rfind(b"\n", 0, at) + 1:at]
    return b"#" in before and b"'" not in before and b'"' not in before


def python_alone_rejects(data: bytes) -> bool:
    """Might Python reject `data` where grimp's parser accepts it? (Cheap; errs on the side of yes:
    a false alarm costs a whole parse, never a finding; the shapes above that are surely prose
    are passed over.)"""
    if any(b in data for b in _STRICTER_BYTES) or _stricter_word_in(data):
        return True
    if not (_F_STRINGS or _T_STRINGS):
        return False
    mapped = data.translate(_PREFIX_MAP)
    return bool(_F_STRINGS and _f_string_rejects(data, mapped)) or bool(_T_STRINGS and _t_string_in(data, mapped))


def _stricter_word_in(data: bytes) -> bool:
    """Does `data` hold, in code, an `except A, B:` clause or another of `_STRICTER_WORDS`?"""
    for start, _ in matches_after(*_EXCEPT_COMMA, data):
        if not data[data.rfind(b"\n", 0, start) + 1:start].strip(b" \t\f"):
            return True
    for pattern, lead in _STRICTER_WORDS:
        for start, _ in matches_after(pattern, lead, data):
            if (start == 0 or data[start - 1] not in _NOT_TOKEN_START) and not _not_code(data, start):
                return True
    return False


def _t_string_in(data: bytes, mapped: bytes) -> bool:
    """Does a template string (`t"`, any case and quote) start a token in code in `data`?
    (`mapped`: `data` through `_PREFIX_MAP`.)"""
    at = mapped.find(b't"')
    while at >= 0:
        if (at == 0 or data[at - 1] not in _NOT_TOKEN_START) and not _not_code(data, at):
            return True
        at = mapped.find(b't"', at + 1)
    return False


def _f_string_rejects(data: bytes, mapped: bytes) -> bool:
    """Does an f-string pattern match code in `data`, as each pattern's own `finditer` would
    find it? (`mapped`: `data` through `_PREFIX_MAP`.) Every start is tried in one pass, each
    pattern resuming after its last match, where its `finditer` would."""
    resume = dict.fromkeys(_F_STRINGS, 0)
    for start in _F_START.finditer(mapped):  # (`re`'s literal search: faster than a `find` loop)
        at = start.start()
        prefix = data[at:at + 2]
        if at >= resume[prefix]:
            m = _F_STRINGS[prefix].match(data, at)
            if m is not None:
                if not _not_code(data, at):
                    return True
                resume[prefix] = m.end()
    return False


def keep_hot_statements(data: bytes, words: tuple[bytes, ...], hot: list[int] | None = None,
                        nested: bool = False, any_syntax: bool = False, drop=None) -> bytes | None:
    """`data` (a Python file) with every line outside the top-level statements that span a line
    containing one of `words` (or a line of `hot`, 1-based, ascending) blanked, as UTF-8; None
    when the whole file should be parsed (small, or Python may reject what grimp accepted).
    `nested`: inside those statements, also blank the blocks' statements that span no hot line
    (`_reduce`). `any_syntax`: for a parser of every version's syntax (`cst_scan`), which has
    read the whole file already: what this Python rejects is no reason to keep it whole.
    `drop(lines)`: whether a hot top-level statement (its lines, decorators first) is blanked
    too, the caller knowing it cannot hold what it parses for."""
    if len(data) < MIN_BYTES or (not any_syntax and python_alone_rejects(data)):
        return None
    hot = [n - 1 for n in (hot_lines(searchable(data), words) if hot is None else hot)]  # 0-based here
    text = _python_text(data) if hot else None
    if text is None:
        return None
    lines = text.split("\n")
    if hot[-1] >= len(lines):
        return None
    starts = _statement_starts(text, lines, hot[-1])
    if drop is not None:
        hot = _undropped(hot, starts, lines, drop)
        if not hot:
            return b""
    windows = _windows(hot, starts, len(lines))
    if not nested and sum(end - begin for begin, end in windows) > MAX_KEPT * len(lines):
        return None  # (nested windows are counted once reduced)
    out = _kept_lines(lines, windows, sorted(set(hot)), nested)
    if nested and len(out) - out.count("") > MAX_KEPT * len(lines):  # (the lines kept)
        return None
    return _as_module(lines, out, windows[0][0])


def _python_text(data: bytes) -> str | None:
    """`data` decoded as Python reads it (its encoding, a BOM), its line breaks (\\r\\n, \\r, \\n)
    made `\\n`; None where it cannot be decoded (the whole-file parse says why)."""
    try:
        text = decode_source(data)
    except Exception:  # noqa: BLE001 - undecodable: the whole-file parse says why
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def _statement_starts(text: str, lines: list[str], last_hot: int) -> list[int]:
    """The lines (0-based, ascending) that start a top-level statement, up to the first one
    after `last_hot` (nothing after it matters, so the strings are tokenized only that far:
    often the file's import block). A decorated `def` starts at its first decorator."""
    in_string: set[int] = set()
    starts = []
    previous = ""
    for n in _candidate_rows(text, in_string):
        line = lines[n]
        if n in in_string or (n and lines[n - 1].endswith("\\")) or _CLAUSE.match(line):
            continue
        if not previous.startswith("@"):
            starts.append(n)
            if n > last_hot:
                break
        previous = line
    return starts


def _candidate_rows(text: str, in_string: set[int]):
    """The rows of `_candidates` in `text`, each once `in_string` holds every row up to it that
    begins inside a string (the strings that start before it are tokenized by then). Rows come
    from one cursor that only moves forward (a count of newlines at C speed)."""
    tokens = _TOKENS.finditer(text)
    token = next(tokens, None)
    pos = row = 0  # row: the line `pos` lies on
    for at in _candidates(text):
        while token is not None and token.start() < at:  # every string that can reach this line
            start, end = token.span()
            if end - start >= 3:  # (`""`, `#`: no room for a line break)
                newlines = text.count("\n", start, end)
                if newlines:
                    row += text.count("\n", pos, start)
                    pos = start
                    in_string.update(range(row + 1, row + newlines + 1))
            token = next(tokens, None)
        row += text.count("\n", pos, at)
        pos = at
        yield row


def _undropped(hot: list[int], starts: list[int], lines: list[str], drop) -> list[int]:
    """The lines of `hot` whose top-level statement `drop` does not pass over (asked once per
    statement; the lines before the first statement are always kept)."""
    kept, verdicts = [], {}
    for h in hot:
        i = bisect.bisect_right(starts, h)
        if i and i not in verdicts:
            verdicts[i] = drop(lines[starts[i - 1]:starts[i] if i < len(starts) else len(lines)])
        if not (i and verdicts[i]):
            kept.append(h)
    return kept


def _windows(hot: list[int], starts: list[int], size: int) -> list[list[int]]:
    """[begin, end) of the runs of top-level statements (from `starts`) that span a line of
    `hot` (0-based, ascending), merged where they touch."""
    windows: list[list[int]] = []
    for h in hot:
        i = bisect.bisect_right(starts, h)
        begin = starts[i - 1] if i else 0
        end = starts[i] if i < len(starts) else size
        if windows and begin <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([begin, end])
    return windows


def _kept_lines(lines: list[str], windows: list[list[int]], hot: list[int], nested: bool) -> list[str]:
    """`lines` with every line outside `windows` blanked; `nested`: each window reduced to the
    headers and statements around its `hot` lines where it can be (`_reduce`)."""
    out = [""] * len(lines)
    for begin, end in windows:
        reduced = _reduce(lines, begin, end, hot) if nested else None
        out[begin:end] = lines[begin:end] if reduced is None else reduced
    return out


def _as_module(lines: list[str], out: list[str], first: int) -> bytes | None:
    """The kept lines `out` as UTF-8 source; `pass` first where code went before the first
    window (its first string is no docstring then); None where a kept line declares another
    encoding than the UTF-8 this returns."""
    if first and any(line.strip() and not line.lstrip().startswith("#") for line in lines[:first]):
        out[0] = "pass"
    cookie = _COOKIE.search("\n".join(out[:2]))
    if cookie and cookie.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
        return None
    return "\n".join(out).encode("utf-8")


# --------------------------------------------------------------------------- nested windows

# A compound statement's first header line (after its decorators); `match` is kept whole.
_COMPOUND = re.compile(r"(?:async[ \t]+)?(?:def|class|if|for|while|try|with)\b")


def _code_lines(text: str) -> tuple[list[str], list[bool], str] | None:
    """`text` (whole statements) as code only, line for line: each comment blanked, each string
    reduced to its first character (a quote) and blanks, so brackets, colons and backslashes
    left are the code's; which lines begin inside a string; the code as one text. None: a
    string never ends."""
    pieces = []
    starts_inside = set()
    pos = 0
    line = 0
    for m in _TOKENS.finditer(text):
        start, end = m.span()
        pieces.append(text[pos:start])
        line += text.count("\n", pos, start)
        token = m.group()
        if token[0] == "#":
            pieces.append(" " * len(token))
        else:
            if token[-1:] not in "\"'" or len(token) < 2:
                return None  # unterminated (`"""` up to the end): leave it to the parser
            rows = token.split("\n")
            pieces.append(token[0] + " " * (len(rows[0]) - 1) + "".join("\n" + " " * len(r) for r in rows[1:]))
            starts_inside.update(range(line + 1, line + len(rows)))
            line += len(rows) - 1
        pos = end
    pieces.append(text[pos:])
    text = "".join(pieces)
    code = text.split("\n")
    return code, [i in starts_inside for i in range(len(code))], text


class _Block:
    """The line facts of one window (a run of top-level statements): for its code lines, the
    indentation, the bracket depth at their start and end, whether they start a logical line."""

    def __init__(self, code: list[str], inside: list[bool], text: str) -> None:
        n = len(code)
        self.code = code
        self.indent = [0] * n
        self.visible = [False] * n
        self.opens = [False] * n  # starts a logical line: depth 0, not in a string, not continued
        self.ends = [False] * n  # ends a logical line (depth 0 after it, no backslash)
        # The brackets of each line, counted in two passes over the whole text (not per line).
        opened = _NOT_OPENING.sub("", text).split("\n")
        closed = _NOT_CLOSING.sub("", text).split("\n")
        depth = 0
        continued = False
        for i, c in enumerate(code):
            rest = c.rstrip()
            visible = bool(rest) and not inside[i]
            if visible:
                self.visible[i] = True
                self.indent[i] = len(c) - len(c.lstrip())
                self.opens[i] = depth == 0 and not continued
            depth += len(opened[i]) - len(closed[i])
            if depth < 0:
                raise ValueError("more brackets closed than opened")
            if rest:
                continued = rest[-1] == "\\"
            elif not inside[i]:
                continued = False
            self.ends[i] = depth == 0 and not continued and bool(rest)
        if depth != 0:
            raise ValueError("a bracket left open")
        for i in range(n - 1):  # a string that goes on to the next line goes on with its line
            if inside[i + 1]:
                self.ends[i] = False


_NOT_OPENING = re.compile(r"[^(\[{\n]+")
_NOT_CLOSING = re.compile(r"[^)\]}\n]+")


def _spans(hot: list[int], lo: int, hi: int) -> bool:
    """Does a hot line lie in `lo`..`hi` (exclusive)? `hot` ascending: a bisection, not a scan,
    or a block of n statements with n hot lines costs n * n."""
    i = bisect.bisect_left(hot, lo)
    return i < len(hot) and hot[i] < hi


def _reduce(lines: list[str], begin: int, end: int, hot: list[int]) -> list[str] | None:
    """Lines `begin`..`end` (whole top-level statements) with every statement inside a block
    that spans no hot line blanked, and `pass` on the first line of a block whose first
    statement went: headers (decorators, `def`, `class`, `if`, `try`, each `except`, `else`...)
    are kept, so a reference keeps what makes it lazy, type-only or guarded, and its line and
    column. None: keep the lines as they are (a shape this does not take apart)."""
    made = _code_lines("\n".join(lines[begin:end]))
    if made is None:
        return None
    try:
        block = _Block(*made)
    except ValueError:
        return None  # cut inside brackets: the whole-statement window (and then the parse) tells
    keep = [False] * (end - begin)
    passes: dict[int, int] = {}  # line -> the indentation of its `pass`
    local_hot = [h - begin for h in hot[bisect.bisect_left(hot, begin):bisect.bisect_left(hot, end)]]
    try:
        _statements(block, 0, end - begin, 0, local_hot, keep, passes)
    except ValueError:
        return None
    out = [lines[begin + i] if keep[i] else "" for i in range(end - begin)]
    for i, indent in passes.items():
        out[i] = " " * indent + "pass"
    return out


def _starts(block: _Block, lo: int, hi: int, indent: int) -> list[int]:
    """The statements of lines lo..hi at `indent` (clauses and decorated defs join the one above)."""
    starts = []
    decorated = False
    for i in range(lo, hi):
        if not block.opens[i]:
            continue
        if block.indent[i] != indent:
            if block.indent[i] < indent:
                raise ValueError("dedent inside a block")
            continue
        text = block.code[i].lstrip()
        if _CLAUSE.match(text) or decorated:
            decorated = text.startswith("@")
            continue
        starts.append(i)
        decorated = text.startswith("@")
    return starts


def _statements(block: _Block, lo: int, hi: int, indent: int, hot: list[int], keep: list[bool],
                passes: dict[int, int]) -> None:
    starts = _starts(block, lo, hi, indent)
    if not starts:
        raise ValueError("no statement")
    bounds = list(zip(starts, starts[1:] + [hi]))
    for k, (s, t) in enumerate(bounds):
        if _spans(hot, s, t):
            _statement(block, s, t, indent, hot, keep, passes)
        elif k == 0:
            passes[s] = indent  # the block keeps a statement, and a docstring stays one


def _statement(block: _Block, s: int, t: int, indent: int, hot: list[int], keep: list[bool],
               passes: dict[int, int]) -> None:
    """Keep statement `s`..`t` spanning a hot line: a simple one whole, a compound one as its
    headers and, of each clause's body, what spans a hot line."""
    clauses = _clauses(block, s, t, indent)
    if clauses is None:
        for i in range(s, t):
            keep[i] = True
        return
    for head, header_end, stop in clauses:
        for i in range(head, header_end + 1):
            keep[i] = True
        _clause_body(block, header_end + 1, stop, indent, hot, keep, passes)


def _clauses(block: _Block, s: int, t: int, indent: int) -> list[tuple[int, int, int]] | None:
    """(first line, header's last line, end) of each clause of the compound statement `s`..`t`
    (its decorators go with the first); None for a statement kept whole: a simple one, `match`,
    or a clause whose body shares its header's line (`else: pass`)."""
    first = s
    while first < t and block.code[first].lstrip().startswith("@"):  # its decorators
        first = _logical_end(block, first, t) + 1
    if first >= t or not _COMPOUND.match(block.code[first].lstrip()):
        return None
    heads = [s] + [i for i in range(first + 1, t) if block.opens[i] and block.indent[i] == indent
                   and _CLAUSE.match(block.code[i].lstrip())]
    spans = list(zip(heads, heads[1:] + [t]))
    ends = [_logical_end(block, first if c == 0 else head, stop) for c, (head, stop) in enumerate(spans)]
    if not all(block.code[e].rstrip().endswith(":") for e in ends):
        return None
    return [(head, end, stop) for (head, stop), end in zip(spans, ends)]


def _clause_body(block: _Block, lo: int, hi: int, indent: int, hot: list[int], keep: list[bool],
                 passes: dict[int, int]) -> None:
    """Of the body `lo`..`hi` of a clause at `indent`, keep the statements that span a hot line,
    or put `pass` for it where none does."""
    body = [i for i in range(lo, hi) if block.visible[i]]
    if not body:
        raise ValueError("a clause without a body")  # `class C: pass` is one line: kept above
    inner = block.indent[body[0]]
    if inner <= indent:
        raise ValueError("a body not indented")
    if _spans(hot, lo, hi):
        _statements(block, lo, hi, inner, hot, keep, passes)
    else:
        passes[body[0]] = inner


def _logical_end(block: _Block, i: int, stop: int) -> int:
    while i < stop and not block.ends[i]:
        i += 1
    if i >= stop:
        raise ValueError("a logical line runs on")
    return i
