"""Keep only the top-level statements around the lines that hold a word: parse less of a file.

`ast.parse` costs the same per byte whatever the file holds (about 0.25 s per MB on the 2-core
machine), and the files that name a removed module are the large ones: upstream 0.5.16 has 151
of them, 5 MB, with 338 lines that name `jit_kernel`. A reference can only sit in a statement
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
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
import sys

from contracts.engine.scan import decode_source, hot_lines, searchable

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
# A line that may start a top-level statement: a letter, `_` or `@` at column 0.
_CANDIDATE = re.compile(r"^(?:[^\W\d]|@)", re.M)
_CLAUSE = re.compile(r"(?:else|elif|except|finally)\b")
_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.M)


# What grimp's parser (ruff's, which reads every Python version's syntax) accepts and this
# Python's does not. The window leaves the rest of a file to grimp's parse, so a file with one
# of these is parsed whole by `ast` instead: a large file gets the `parse-error` a small one
# gets. A match is only a reason to parse everything (false alarms cost time, never a finding).
_STRICTER = [  # each starts with a literal, which `re` finds at memchr speed
    re.compile(rb"\0"),  # a NUL byte
    re.compile(rb"\t"),  # a tab (in indentation, a TabError is Python's alone); few files have one
]
_STRICTER_WORDS = []  # the same, where the match must start a token (checked by hand: a
# look-behind would cost `re` its fast literal search)
# `except A, B:` (Python 2, and 3.14's unparenthesized form): a clause starts its line, so the
# word in prose (`... except the final one, ...`) is no reason to parse a whole large file.
_EXCEPT_COMMA = re.compile(rb"except[ \t]+[^:\n(\[]*,")
if sys.version_info < (3, 12):
    _STRICTER_WORDS += [
        re.compile(rb"type[ \t]+\w+[ \t]*[\[=]"),  # PEP 695 `type X = ...`
        re.compile(rb"def[ \t]+\w+[ \t]*\["),  # PEP 695 generics
        re.compile(rb"class[ \t]+\w+[ \t]*\["),
    ]
    # PEP 701 f-strings: the same quote, a backslash or a comment inside a replacement field
    _STRICTER += [re.compile(prefix + rb"[^" + prefix[-1:] + rb"\n]*\{[^}\n]*[" + prefix[-1:] + rb"\\#]")
                  for prefix in (b'f"', b"f'", b'F"', b"F'")]
if sys.version_info < (3, 14):  # PEP 750 template strings
    _STRICTER_WORDS += [re.compile(re.escape(p)) for p in (b't"', b"t'", b'T"', b"T'")]
_NOT_TOKEN_START = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.'\"-")


def python_alone_rejects(data: bytes) -> bool:
    """Might Python reject `data` where grimp's parser accepts it? (Cheap; errs on the side of yes.)"""
    if any(p.search(data) for p in _STRICTER):
        return True
    for m in _EXCEPT_COMMA.finditer(data):
        if not data[data.rfind(b"\n", 0, m.start()) + 1:m.start()].strip(b" \t\f"):
            return True
    for p in _STRICTER_WORDS:
        for m in p.finditer(data):
            if m.start() == 0 or data[m.start() - 1] not in _NOT_TOKEN_START:
                return True
    return False


def keep_hot_statements(data: bytes, words: tuple[bytes, ...], hot: list[int] | None = None) -> bytes | None:
    """`data` (a Python file) with every line outside the top-level statements that span a line
    containing one of `words` (or a line of `hot`, 1-based, ascending) blanked, as UTF-8; None
    when the whole file should be parsed (small, or Python may reject what grimp accepted)."""
    if len(data) < MIN_BYTES or python_alone_rejects(data):
        return None
    if hot is None:
        hot = hot_lines(searchable(data), words)
    hot = [n - 1 for n in hot]  # 0-based here
    if not hot:
        return None
    try:
        text = decode_source(data)
    except Exception:  # noqa: BLE001 - undecodable: the whole-file parse says why
        return None
    if "\r" in text:  # the parser's newlines: \r\n, \r and \n
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if hot[-1] >= len(lines):
        return None
    offsets = list(itertools.accumulate(map(operator.add, map(len, lines), itertools.repeat(1)), initial=0))

    # Statement starts, up to the first one after the last hot line (nothing after it matters):
    # the strings and comments are tokenized only that far (often the file's import block).
    in_string = set()  # lines that begin inside a string
    tokens = _TOKENS.finditer(text)
    token = next(tokens, None)
    last_hot = hot[-1]
    starts = []
    previous = ""
    for m in _CANDIDATE.finditer(text):
        at = m.start()
        while token is not None and token.start() < at:  # every string that can reach this line
            start, end = token.span()
            if end - start >= 3:  # (`""`, `#`: no room for a line break)
                newlines = text.count("\n", start, end)
                if newlines:
                    first = bisect.bisect_right(offsets, start) - 1
                    in_string.update(range(first + 1, first + newlines + 1))
            token = next(tokens, None)
        n = bisect.bisect_right(offsets, at) - 1
        line = lines[n]
        if n in in_string or (n and lines[n - 1].endswith("\\")) or _CLAUSE.match(line):
            continue
        if not previous.startswith("@"):  # a decorated `def` starts at its first decorator
            starts.append(n)
            if n > last_hot:
                break
        previous = line

    windows: list[list[int]] = []
    for h in hot:
        i = bisect.bisect_right(starts, h)
        begin = starts[i - 1] if i else 0
        end = starts[i] if i < len(starts) else len(lines)
        if windows and begin <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], end)
        else:
            windows.append([begin, end])
    if sum(end - begin for begin, end in windows) > MAX_KEPT * len(lines):
        return None

    out = [""] * len(lines)
    for begin, end in windows:
        out[begin:end] = lines[begin:end]
    first = windows[0][0]
    if first and any(line.strip() and not line.lstrip().startswith("#") for line in lines[:first]):
        out[0] = "pass"  # the first kept statement is not the module's docstring
    cookie = _COOKIE.search("\n".join(out[:2]))
    if cookie and cookie.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
        return None  # a kept declaration of another encoding would misread the UTF-8 this returns
    return "\n".join(out).encode("utf-8")
