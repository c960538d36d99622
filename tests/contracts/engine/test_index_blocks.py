"""`text_definitions` finds its blocks with a regex over the text; a line-by-line reading of the
same rule (the block runs to the next column-0 line that is not blank and starts with none of
` \\t#)]}`) is the oracle, on generated texts with every kind of line break and blank."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.engine.index import _BLOCK_RE, text_definitions


def _by_lines(text: str) -> list[tuple[str, int, str]]:
    lines = text.splitlines()
    out: dict[str, tuple[str, int, str]] = {}
    i, n = 0, len(lines)
    while i < n:
        m = _BLOCK_RE.match(lines[i])
        if m is None:
            i += 1
            continue
        j = i + 1
        while j < n and (not lines[j].strip() or lines[j][0] in " \t#)]}"):
            j += 1
        name = m.group(2) or m.group(3)
        out.setdefault(name, (name, i + 1, "\n".join(lines[i:j])))
        i = j
    return list(out.values())


_PIECES = ["def f(x):", "async  def g():", "class A(B):", "x = 1", "y: int = 2", "x == 3", "z=", "f(a)",
           "    return x", "\tpass", "# note", ")", "]", "}", "", "  ", "\u00a0", "\u00a0x = 4", '"""doc"""',
           "from a import b", "A.b = 5"]
_BREAKS = ["\n", "\r\n", "\r", "\x0c", "\x1c", "\u2028", "\x85"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_BREAKS)), max_size=25), st.booleans())
def test_blocks_are_those_a_line_by_line_reading_finds(pieces, trailing):
    text = "".join(p + b for p, b in pieces)
    if not trailing and text:
        text = re.sub(r"(\r\n|[\n\r\x0c\x1c\u2028\x85])$", "", text)
    got = [(d.name, d.line, d.block) for d in text_definitions(text).values()]
    assert got == _by_lines(text)


def test_a_block_holds_its_indented_comment_and_closing_lines():
    text = "def f(\n    a,\n):\n    # why\n\n    return a\nX = 1\n"
    got = text_definitions(text)
    assert got["f"].block == "def f(\n    a,\n):\n    # why\n\n    return a"
    assert (got["X"].line, got["X"].block) == (7, "X = 1")
