"""Which lines of a file can name a removed module: one byte-level pass, whatever the prefixes.

A reference to a module under a removed prefix `r.a.b` is, in the source text, one of:

- an absolute import: the name `r.a.b...` as written (`import r.a.b.c`, `from r.a.b import f`),
  or `from <ancestor> import <name>` with `<ancestor>.<name>` under the prefix;
- a relative import (`from ..b import f`), resolved against the file's own package;
- a string: a quoted dotted path under the prefix (`"r.a.b.f"`, `"r.a.b:attr"`), the same split
  by implicit concatenation (`"r.a." "b.f"`, over several lines), or a package named by
  `importlib.import_module(".b", "r.a")`.

Every such form holds the root package name `r` as a whole word, or a `from` followed by a dot,
so the file is searched for those words only (a literal search, at memory speed), and each
hit is looked up by its name parts in a `PrefixIndex`: the cost per file depends on how often
the root package is named, not on how many prefixes there are. A hit that might be a reference
makes its line hot; `ast` then reads only the top-level statements around the hot lines and
confirms (the rules keep only what really lies under a prefix). Anything this pass cannot tell
apart cheaply -- an escape or a line continuation inside the name, a name split across string
pieces, a non-ASCII identifier -- is hot, so the pass never hides a reference the full `ast`
pass would find (`tests/contracts/engine/test_prefilter.py` checks that on generated files), as long
as the root package's name itself is written whole. A target that splits or escapes the root
(`"sg" "lang.x"`, `"sg\\x6cang.x"`) is not found (`docs/guarantees.md` says so): finding it
means looking at every string of every file, several times the cost of finding every mention
of the root.

One pass (`_hits_of`) serves one prefilter (`hot_lines`, `any_hot`, `last_hot`) or several
reading the same file (`joint_hits`): each mention is found and classified once, and each
prefilter's own tests run on it.

Files whose text Python reads differently from their bytes (a declared encoding, identifiers
that NFKC normalization changes) do not come here: they take the word search in `reading.py`.
"""

from __future__ import annotations

import codecs
import operator
import re

from contracts.engine.graph import names_from_text
from contracts.engine.import_forms import strip_prefix
from contracts.engine.resolve import CLAUSE_WORDS, matches_after, resolve_relative
from contracts.prefixes import PrefixIndex

_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") | frozenset(range(128, 256))
_QUOTES = frozenset(b"'\"")
_SPACE = frozenset(b" \t\f")
_MAY_GO_ON = _SPACE | frozenset(b".\\") | frozenset(range(128, 256))  # what may follow a name that goes on
_FROM_TAIL = re.compile(r"(?:^|(?<=[^\w.]))(?P<kw>from)[ \t\f]+$")
_RELATIVE = re.compile(rb"from[ \t\f\\\n]*\.")
_RELATIVE_LINE = re.compile(r"[ \t\f]*from[ \t\f]*(\.+)[ \t\f]*([A-Za-z_]\w*(?:\.\w+)*)?[ \t\f]+import[ \t\f(]")
_IMPORT_MODULE = b"import_module"


class RemovedPrefilter:
    """The hot lines of files for one set of removed prefixes (a `PrefixIndex`)."""

    def __init__(self, prefixes) -> None:
        self.index = PrefixIndex(prefixes)
        # Each root's dotted paths, searched from the root's rarest byte (`resolve.matches_after`).
        self._paths = {}
        for root in self.index.roots():
            word = root.encode()
            skip = _rarest(word)
            self._paths[word] = (re.compile(re.escape(word[skip:]) + rb"(?:\.\w+)*"), word[:skip])
        self._kind: dict[bytes, int] = {}
        # What `_hits_of` reads for each root, for this prefilter with others (`_roots_of`), and alone.
        self._plans: dict[tuple, list[tuple]] = {}
        self._alone = _roots_of((self,))

    # What a dotted name found in the text is, memoized (a tree names few distinct modules).
    UNDER, ANCESTOR, TEXT_PREFIX, OTHER = 1, 2, 4, 0

    def _kind_of(self, path: bytes) -> int:
        kind = self._kind.get(path)
        if kind is None:
            name = path.decode("ascii")
            index = self.index
            if index.longest_of(name) is not None:
                kind = self.UNDER
            else:
                kind = (self.ANCESTOR if index.is_ancestor(name) else 0) | (
                    self.TEXT_PREFIX if index.starts_text(name) else 0)
            self._kind[path] = kind
        return kind

    def hot_lines(self, data: bytes, module: str, is_package: bool, found: Mentions | None = None) -> list[int]:
        """1-based numbers of the lines (as Python counts them) that may hold a reference.
        `found`: the mentions of `data`, shared with another prefilter reading the same text."""
        if b"\r" in data:
            data, found = _python_lines(data), None
        return _line_numbers(data, list(self._hits(data, module, is_package, found)))

    def any_hot(self, data: bytes, module: str, is_package: bool, found: Mentions | None = None) -> bool:
        """Does `hot_lines` find a line? (It stops at the first: a file that names a prefix
        usually does so in its first lines.)"""
        if b"\r" in data:
            data, found = _python_lines(data), None
        return next(self._hits(data, module, is_package, found), None) is not None

    @staticmethod
    def lines_of(text: bytes, hits: list[int]) -> list[int]:
        """`hot_lines` from the hits of `joint_hits` in `text`, the text it gives back."""
        return _line_numbers(text, hits)

    def last_hot(self, data: bytes, module: str, is_package: bool, found: Mentions | None = None) -> int | None:
        """The offset of the last thing in `data` that makes a line hot, or None (`data` holds no
        `\\r`: offsets are the text's own)."""
        return max(self._hits(data, module, is_package, found), default=None)

    def _hits(self, data: bytes, module: str, is_package: bool, found: Mentions | None = None):
        """The offsets in `data` (newlines only) of what makes a line hot, in no order."""
        if found is not None and found.data is not data:
            found = None  # (another text: nothing to share)
        return map(_second, _hits_of(self._alone, (self,), data, module, is_package, found))

    def _mention(self, data: bytes, size: int, start: int, end: int, path: bytes, kind: int, before: int,
                 after: int, dynamic: list) -> bool:
        """Does the mention of the dotted name `path` at `start:end` (`kind`, the bytes `before`
        and `after` it) make its line hot? `dynamic`: [whether the file calls `import_module`
        with a relative target], None until asked."""
        if kind & 1:  # UNDER
            return True
        # A name that neither lies under a prefix nor begins one (`kind` 0) stays so however its
        # text goes on: only the package of a relative `import_module` target can still lead
        # under a prefix (`import_module("..b", "r.x")`).
        if before in _QUOTES:
            return _string_hot(data, size, end, kind, before, after, dynamic)
        if after >= 128:
            return True  # a non-ASCII name part: let ast read it
        if after in _MAY_GO_ON and kind and self._goes_on_under(data, end, path):
            return True  # `r .a`, `r.a\` newline `.b`, `r.a. b`
        return bool(kind & 2 and self._from_names_hot(data, start, path.decode("ascii")))  # ANCESTOR

    def _goes_on_under(self, data: bytes, end: int, path: bytes) -> bool:
        """Does the dotted name `path` ending at `end` go on (`_name_goes_on`) into a name under
        or above a prefix, or in a way that cannot be told here?"""
        more = _name_goes_on(data, end)
        return more is True or bool(more and self._kind_of(path + b"." + more))

    def _from_names_hot(self, data: bytes, start: int, base: str) -> bool:
        """Is the ancestor `base` at `start` the module of `from base import names` with one of
        the names under a prefix (or names that cannot be read off the line)?"""
        line_start = _line_start(data, start)
        head = data[line_start:start].decode("utf-8", "replace")
        m = _FROM_TAIL.search(head)
        if m is None:
            # After a backslash continuation the `from` is on the line above.
            return not head.strip() and line_start >= 2 and data[line_start - 2] == 0x5C
        if not _starts_statement(head[:m.start("kw")]):
            return False  # `from` in prose (`... read from sglang.x`): not a statement
        line = _line_at(data, line_start)
        names = names_from_text(line[m.start("kw"):], _lines_after(data, line_start))
        if names is None:
            return True
        index = self.index
        return any(index.longest_of(f"{base}.{n}") is not None for n in names if n != "*")

    def _relative_hot(self, data: bytes, start: int, module: str, is_package: bool) -> bool:
        line_start = _line_start(data, start)
        head = data[line_start:start].decode("utf-8", "replace")
        if head.strip(" \t\f"):
            # `if x: from . import y` (let ast tell), or prose (`... from. Then`): not a statement
            return _starts_statement(head)
        line = _line_at(data, line_start)
        m = _RELATIVE_LINE.match(line)
        if m is None:
            return True
        base = resolve_relative(module, is_package, len(m.group(1)), m.group(2) or None)
        if base is None:
            return False  # above the top package: not a module at all
        index = self.index
        if index.longest_of(base) is not None:
            return True
        if not index.is_ancestor(base):
            return False
        names = names_from_text(line, _lines_after(data, line_start))
        if names is None:
            return True
        return any(index.longest_of(f"{base}.{n}") is not None for n in names if n != "*")


def joint_hits(first: RemovedPrefilter, second: RemovedPrefilter, data: bytes, module: str, is_package: bool,
               found: Mentions | None = None) -> tuple[list[int], list[int], bytes]:
    """(`first`'s hits, `second`'s hits, the text their offsets are in): what `hot_lines` reads
    for each prefilter, in one pass over the mentions both read (two prefilters of one root read
    every file for the same word, and most mentions name a module of neither). The text is
    `data` with Python's line breaks made `\\n` where it holds a `\\r` (as `hot_lines` reads it)."""
    if b"\r" in data:
        data, found = _python_lines(data), None
    elif found is not None and found.data is not data:
        found = None
    hits: tuple[list[int], list[int]] = ([], [])
    for which, start in _hits_of(_roots_of((first, second)), (first, second), data, module, is_package, found):
        hits[which].append(start)
    return hits[0], hits[1], data


_second = operator.itemgetter(1)


def _python_lines(data: bytes) -> bytes:
    """`data` with Python's line breaks (\\r\\n, \\r, \\n) made `\\n`, so offsets count lines as
    Python does (the mentions found in `data` are then no longer those of the text)."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def _hits_of(roots: list[tuple], prefilters: tuple[RemovedPrefilter, ...], data: bytes, module: str,
             is_package: bool, found: Mentions | None):
    """(which prefilter, offset) for each thing in `data` (newlines only) that makes a line hot
    for one of `prefilters` (`roots`: their `_roots_of`): the mentions of their roots, then the
    relative imports. One pass serves every prefilter, so a second one reading the same file
    costs its own tests only. Each dotted name's kinds are found once (`memo`; `none`: the
    kinds of a name that is nothing to any of them), and most mentions stop at that test. (The
    mention loop is written here, not in a generator of its own: one generator less per file
    is a measured share of this pass.)"""
    dynamic = [None]  # does the file call import_module (a relative target names its package)?
    for root, members, pattern, head, memo, none in roots:
        if found is None:
            if root not in data:
                continue
            mentions = matches_after(pattern, head, data)
        else:
            mentions = found.of_root(root, pattern, head)
        size = len(data)
        for start, end in mentions:
            before = data[start - 1] if start else 10
            if before in _WORD:
                continue  # inside a longer name (`my_root`, `x.root`)
            path = data[start:end]
            kinds = memo.get(path)
            if kinds is None:
                kinds = memo[path] = _kinds(members, path)
            after = data[end] if end < size else 10
            if not kinds and after < 128 and before not in _QUOTES:
                continue  # a name of no prefix, outside a string
            for (which, p), kind in zip(members, kinds or none):
                if p._mention(data, size, start, end, path, kind, before, after, dynamic):
                    yield which, start
    if b"from" in data:
        yield from _relative_hits(prefilters, data, module, is_package, found)


def _roots_of(prefilters: tuple[RemovedPrefilter, ...]) -> list[tuple]:
    """For each root of `prefilters`: (root, its prefilters with their places, its search
    pattern and head, the memo of its dotted names' kinds). Made once per set of prefilters and
    kept on the first (a worker reads all its files with the same ones)."""
    first = prefilters[0]
    key = prefilters[1:]
    plan = first._plans.get(key)
    if plan is None:
        plan = first._plans[key] = []
        for root in dict.fromkeys(root for p in prefilters for root in p._paths):
            members = [(which, p) for which, p in enumerate(prefilters) if root in p._paths]
            pattern, head = members[0][1]._paths[root]
            plan.append((root, members, pattern, head, {}, (0,) * len(members)))
    return plan


def _kinds(members: list[tuple[int, RemovedPrefilter]], path: bytes) -> tuple[int, ...]:
    """What the dotted name `path` is to each of `members` (`RemovedPrefilter._kind_of`); empty
    where it is nothing to any of them (the common case, told by one test)."""
    kinds = tuple(p._kind_of(path) for _, p in members)
    return kinds if any(kinds) else ()


def _relative_hits(prefilters: tuple[RemovedPrefilter, ...], data: bytes, module: str, is_package: bool,
                   found: Mentions | None):
    """(which, start) for each relative import (`from .`) in `data` that makes a line hot for
    one of `prefilters`."""
    for start in (_relative_starts(data) if found is None else found.relative()):
        if start and data[start - 1] in _WORD and _line_start(data, start) != start:
            continue  # `xfrom .`; but a BOM's last byte before the first `from` is no word
        for which, p in enumerate(prefilters):
            if p._relative_hot(data, start, module, is_package):
                yield which, start


def _string_hot(data: bytes, size: int, end: int, kind: int, quote: int, after: int, dynamic: list) -> bool:
    """Does a mention that opens a string (`quote` before it) and is not under a prefix make its
    line hot? Where the string may go on into a prefix (concatenated, escaped, a non-ASCII part)
    or names the package of a relative `import_module` target."""
    if after == quote:  # the whole string; concatenation may continue it
        if dynamic[0] is None:
            dynamic[0] = _relative_import_module(data)
        return bool(dynamic[0] or (kind and _string_follows(data, end + 1)))
    if after == 0x2E:  # `"r.a.`: then the string ends, or goes on (escaped)
        nxt = data[end + 1] if end + 1 < size else 10
        return bool(kind and (nxt == 0x5C or nxt >= 128 or (nxt == quote and _string_follows(data, end + 2))))
    return after == 0x5C or after >= 128  # an escape, a non-ASCII name part


class Mentions:
    """What `_hits` searches one text for, found once for every prefilter that reads it: each
    root's dotted paths (the root's name decides them, not the prefixes) and the starts of the
    relative imports. Two prefilters of the same root (one per rule that needs hot lines) then
    search each text once between them."""

    __slots__ = ("data", "_roots", "_relative")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._roots: dict[bytes, list[tuple[int, int]]] = {}
        self._relative: list[int] | None = None

    def of_root(self, root: bytes, pattern: re.Pattern, head: bytes) -> list[tuple[int, int]]:
        got = self._roots.get(root)
        if got is None:
            got = self._roots[root] = list(matches_after(pattern, head, self.data))
        return got

    def relative(self) -> list[int]:
        if self._relative is None:
            self._relative = list(_relative_starts(self.data))
        return self._relative


def _relative_starts(data: bytes):
    return (m.start() for m in _RELATIVE.finditer(data))


# Bytes of Python source, the most frequent first (counted over a large real tree): `re` finds
# a literal by trying each place its first byte occurs, so a root is searched from its rarest
# byte on (`glang` for `sglang`).
_BY_FREQUENCY = (b" etsaroni_l\ndcpfmu.h,g=)(\"k:byvwx-qTN[]E1ASz02CLMP#IORDF`3*/B>V4GK{}U+j86HW5'Q<X;|@Y!%"
                 b"\\9Z7J&$^~?\t")


def _rarest(word: bytes) -> int:
    """The offset of `word`'s rarest byte in source text (the first of equals; a byte not in
    `_BY_FREQUENCY` is rarer than any in it)."""
    def rank(i: int) -> int:
        at = _BY_FREQUENCY.find(word[i:i + 1])
        return len(_BY_FREQUENCY) if at < 0 else at

    return max(range(len(word)), key=rank, default=0)


def _line_start(data: bytes, offset: int) -> int:
    """Where the line holding `offset` starts; on the first line, after a UTF-8 BOM (Python skips
    it, so `\\ufeff` before a statement is not text before it)."""
    start = data.rfind(b"\n", 0, offset) + 1
    if start == 0 and data.startswith(codecs.BOM_UTF8):
        return len(codecs.BOM_UTF8)
    return start


def _starts_statement(head: str) -> bool:
    """Can a statement start after `head`, the text before it on its line? At the start (blanks
    only), or after `;` or a compound statement's `:`; PEP 810's `lazy` keyword may come between."""
    head = strip_prefix(head.rstrip(" \t\f"))
    return not head or head[-1] in ":;"


def _lines_after(data: bytes, line_start: int):
    """The lines after the one starting at `line_start`, decoded, one at a time."""
    pos = data.find(b"\n", line_start)
    while pos >= 0:
        nxt = data.find(b"\n", pos + 1)
        yield data[pos + 1:nxt if nxt >= 0 else len(data)].decode("utf-8", "replace")
        pos = nxt


# `import_module(` with a literal relative target: `(`, blanks, comments, continuations, more
# `(`, a string prefix, a quote, then a dot or (a concatenation starting empty) another quote.
_RELATIVE_IMPORT_MODULE = re.compile(rb"""import_module(?:[ \t\f\n(]|\\\n|\#[^\n]*)*[rRuU]?(?:'|")(?:\.|'|")""")


def _relative_import_module(data: bytes) -> bool:
    """Does the file call `import_module` with a literal relative target (whose package, a string
    naming any module of the root, can lead under a prefix)?"""
    return _IMPORT_MODULE in data and _RELATIVE_IMPORT_MODULE.search(data) is not None


_STRING_START = re.compile(rb"""(?:[ \t\f\n]|\\\n|\#[^\n]*)*(?:[rRbBuUfFtT]{1,2})?['"]""")


def _string_follows(data: bytes, pos: int) -> bool:
    """Does another string literal follow at `pos` (implicit concatenation: only blanks, line
    breaks, continuations and comments between)?"""
    return _STRING_START.match(data, pos) is not None


_NAME_PART = re.compile(rb"[A-Za-z0-9_]+")


def _name_goes_on(data: bytes, end: int) -> bytes | bool:
    """Could the dotted name that ends at `end` go on (blanks, a backslash continuation, or a
    dot then a name part: `r .a`, `r.a. b`)? The next name part (ASCII), True where it cannot be
    told (a continuation, a non-ASCII part: ast reads the full text), else False."""
    size = len(data)
    i = _past_blanks(data, end, size)
    if i >= size:
        return False
    if data[i] == 0x5C:
        return True
    if data[i] != 0x2E:
        return False
    i = _past_blanks(data, i + 1, size)
    if i >= size or not (data[i] in _WORD or data[i] == 0x5C):
        return False
    m = _NAME_PART.match(data, i)
    if m is None or m.end() < size and (data[m.end()] >= 128 or data[m.end()] == 0x5C):
        return True
    return m.group()


def _past_blanks(data: bytes, i: int, size: int) -> int:
    """The offset of the first byte at or after `i` that is no blank (`size` if none)."""
    while i < size and data[i] in _SPACE:
        i += 1
    return i


def _line_at(data: bytes, line_start: int) -> str:
    end = data.find(b"\n", line_start)
    return data[line_start:end if end >= 0 else len(data)].decode("utf-8", "replace")


def _line_numbers(data: bytes, offsets: list[int]) -> list[int]:
    if not offsets:
        return []
    out = []
    line, counted = 1, 0
    for pos in sorted(offsets):
        line += data.count(b"\n", counted, pos)
        counted = pos
        if not out or out[-1] != line:
            out.append(line)
    return out


# A line that may start a top-level statement (a letter, `_`, a non-ASCII byte or `@` at column 0),
# and the clauses that continue the statement before (`try:` is not whole without its `except`).
_STATEMENT_START = re.compile(rb"\n(?=[A-Za-z_@\x80-\xff])")
_CLAUSE = re.compile(rb"(?:%s)\b" % "|".join(CLAUSE_WORDS).encode())


def statement_start_after(data: bytes, offset: int) -> int:
    """Where the first line after the one holding `offset` that may start a top-level statement
    begins (`len(data)` if none): not a clause of the statement before, and after an even count
    of each triple quote (a line of a docstring is not one). A guess that only the parse can
    confirm: `data[:cut]` does not parse where the cut is inside a string, brackets or a
    statement, and it parses as the start of `data` does where it is not."""
    pos = data.find(b"\n", offset)
    counted = 0
    double = single = 0
    while pos >= 0:
        m = _STATEMENT_START.search(data, pos)
        if m is None:
            break
        cut = m.end()
        double += data.count(b'"""', counted, cut)
        single += data.count(b"'''", counted, cut)
        counted = cut
        if not (double % 2 or single % 2) and _CLAUSE.match(data, cut) is None:
            return cut
        pos = cut
    return len(data)
