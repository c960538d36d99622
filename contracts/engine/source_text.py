"""A file's bytes as Python reads them: the declared encoding, the text, the bytes to search for
words, which lines hold a word, and why a file cannot be read. Pure functions, no parser."""

from __future__ import annotations

import codecs
import io
import re
import tokenize
import unicodedata

# Files larger than this are not parsed (reported instead): ast needs ~120 bytes of memory per
# byte of source, and real source files stay far below it.
MAX_PARSE_BYTES = 4 * 2**20


# Codecs whose decoding time grows faster than the input: punycode is quadratic (a 2 MB file
# took 53 s; 64 KiB takes 0.2 s). Only a file that declares one is refused over the bound.
_SLOW_CODECS = frozenset({"punycode"})
MAX_SLOW_DECODE_BYTES = 64 * 1024


def decode_declared(data: bytes, encoding: str) -> str:
    """`data` decoded as `encoding`; a ValueError (UnicodeError) for any failure of the codec
    -- `# coding: undefined` raises a plain UnicodeError, invalid punycode another -- and for a
    slow codec over `MAX_SLOW_DECODE_BYTES`."""
    name = codecs.lookup(encoding).name
    if name in _SLOW_CODECS and len(data) > MAX_SLOW_DECODE_BYTES:
        raise UnicodeError(f"declares the {name} encoding, whose decoding time grows with the square of "
                           f"the size; not decoded over {MAX_SLOW_DECODE_BYTES // 1024} KiB")
    return data.decode(encoding)


def decode_source(data: bytes) -> str:
    """Bytes -> text as Python would read them (PEP 263 coding cookie, BOM)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = decode_declared(data, encoding)
    return text[1:] if text.startswith("\ufeff") else text


def declared_encoding(data: bytes) -> str | None:
    """The encoding a PEP 263 cookie declares, when it is not UTF-8 (None otherwise)."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    if b"coding" not in (data[:second] if second >= 0 else data):  # the cookie is on line 1 or 2
        return None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return None  # an unknown codec: Python cannot read the file at all
    return None if encoding in ("utf-8", "utf-8-sig") else encoding


def searchable(data: bytes) -> bytes:
    """The bytes to look for a rule's words in: the text Python reads, not the raw bytes.

    For ASCII source without an encoding declaration (most files) that is `data` itself. A file
    that declares another encoding is decoded first (under `# coding: utf-7`, `jit+AF8-kernel`
    is `jit_kernel`), and non-ASCII text is NFKC-normalized as Python normalizes identifiers
    (`import pkg.jit_ｋernel` imports `pkg.jit_kernel`). Physical lines are kept, so line `n` of
    the result is line `n` of the file. Undecodable data is returned as it is.
    """
    encoding = declared_encoding(data)
    if encoding is None and (data.isascii() or _non_ascii_stable(data)):
        return data
    try:
        text = decode_declared(data, encoding or "utf-8")
    except (UnicodeError, LookupError):  # `# coding: undefined`, bad punycode: the parse reports it
        return data
    if not unicodedata.is_normalized("NFKC", text):
        # Line by line, and only the lines that change: NFKC never joins across a line break,
        # and most such files have a few lines of fullwidth punctuation in comments.
        text = "\n".join(line if line.isascii() or unicodedata.is_normalized("NFKC", line)
                         else unicodedata.normalize("NFKC", line) for line in text.split("\n"))
    elif encoding is None:  # most non-ASCII files: prose in comments
        return data
    out = text.encode("utf-8")
    # Callers test `is data` to learn whether Python reads other bytes than the file holds
    # (a `# coding: utf-8` declaration changes nothing).
    return data if out == data else out


# Every ASCII byte: deleted, what is left of a file is its non-ASCII text.
_ASCII = bytes(range(128))


def _non_ascii_stable(data: bytes) -> bool:
    """Does NFKC surely leave `data`'s text as it is? Asked of its non-ASCII characters alone
    (most such files are prose in comments: few such characters in much ASCII), which is enough
    where none of them is a combining mark: a character NFKC changes by itself is changed
    among them too, and only a combining mark composes with, or reorders against, the ASCII
    character before it. A file that is not UTF-8, or holds a mark, is left to the full check
    (as is one whose characters merely seem to change once put together: that check is exact).
    Deleting the ASCII bytes costs a fraction of decoding and checking the whole text."""
    try:
        rest = data.translate(None, _ASCII).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return unicodedata.is_normalized("NFKC", rest) and not any(map(unicodedata.combining, rest))


NUL = b"\0"


def _line_at(data: bytes, offset: int) -> int:
    return len((data[:offset] + b"x").splitlines())


def error_reason(data: bytes, exc: BaseException) -> str:
    """Why `data` cannot be parsed, in words, with `line N` where one is known."""
    if NUL in data:  # 3.11 says ValueError, 3.12 SyntaxError; the line is what helps
        return f"contains a NUL byte, line {_line_at(data, data.index(NUL))}; Python cannot read it"
    if isinstance(exc, SyntaxError) and exc.lineno is None:  # from the encoding detection
        if "unknown encoding" in str(exc.msg):
            return f"declares an {exc.msg}; Python cannot read it"
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            return (f"not valid UTF-8 and declares no encoding (byte 0x{data[e.start]:02x}, line "
                    f"{_line_at(data, e.start)}); Python cannot read it")
    if isinstance(exc, UnicodeDecodeError):
        return (f"cannot be decoded as {exc.encoding} (byte 0x{exc.object[exc.start]:02x}, line "
                f"{_line_at(data, exc.start)}); Python cannot read it")
    return parse_error_reason(exc)


def parse_error_reason(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        line = f", line {exc.lineno}" if exc.lineno else ""
        return f"syntax error{line}: {exc.msg}"
    if isinstance(exc, UnicodeDecodeError):
        return f"cannot decode as {exc.encoding}: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
    if isinstance(exc, LookupError):
        return f"unknown encoding declared: {exc}"
    if isinstance(exc, ValueError) and "null bytes" in str(exc):
        return "source contains a NUL byte"
    if isinstance(exc, (RecursionError, MemoryError)):
        return "nested too deeply for the parser"
    if isinstance(exc, UnicodeError):  # a codec that fails in its own way (`undefined`, punycode)
        return f"cannot decode: {exc}"
    return f"{type(exc).__name__}: {exc}"


def hot_lines(hay: bytes, words) -> list[int]:
    """1-based numbers of the lines (as `bytes.splitlines` counts them) that contain a word: found
    by searching for the words, not by testing every line (the lines are mostly not hot)."""
    if b"\r" in hay:
        return [n for n, line in enumerate(hay.splitlines(), 1) if any(w in line for w in words)]
    found = set()
    for w in words:
        pos = hay.find(w)
        line, counted = 1, 0
        while pos >= 0:
            line += hay.count(b"\n", counted, pos)
            counted = pos
            found.add(line)
            pos = hay.find(w, hay.find(b"\n", pos) + 1 or len(hay))
    return sorted(found)


# A limit of CPython's, not a syntax of another version (`too many nested parentheses`, at 200
# levels in every version): the file cannot be imported by any Python, whatever LibCST reads.
_LIMIT_RE = re.compile(r"too many|too complex|too deeply|too long")


def other_syntax_may_read(exc: BaseException) -> bool:
    """May a parser of another Python version's syntax read what `ast` rejected with `exc`? Not
    past a limit of CPython's, nor what is no syntax error."""
    return isinstance(exc, SyntaxError) and not _LIMIT_RE.search(str(exc.msg))
