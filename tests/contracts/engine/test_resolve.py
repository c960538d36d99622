"""`engine/resolve.py`: where a line that holds a given text starts."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from contracts.engine.resolve import line_holding


def _by_splitting(data: bytes, line: int, text: str) -> int | None:
    """The plain reading: split the file at \\n, and look at line `line` alone."""
    needle = text.strip().encode("utf-8")
    if not needle or line < 1 or b"\r" in data:
        return None
    lines = data.split(b"\n")
    if line > len(lines):
        return None
    return sum(len(piece) + 1 for piece in lines[:line - 1]) if needle in lines[line - 1] else None


_PIECES = [b"import a\n", b"from a import b\n", b"    import a\n", b"x = 1\n", b"\n", b"import a  # again\n",
           b"\r\n", b"a", b" ", b"import"]


@settings(max_examples=500, deadline=None)
@given(data=st.lists(st.sampled_from(_PIECES), max_size=30).map(b"".join), line=st.integers(-1, 35),
       text=st.sampled_from(["import a", "  import a  ", "from a import b", "x = 1", "a", "", "import", "é"]))
@example(data=b"import a\nimport a\nimport a\n", line=3, text="import a")  # the same text on every line
@example(data=b"x = 1\n" * 500 + b"    import a\n", line=501, text="import a")  # deep in a long file
def test_the_line_holding_a_text_is_found_as_by_splitting_the_file(data, line, text):
    assert line_holding(data, line, text) == _by_splitting(data, line, text)


@settings(max_examples=300, deadline=None)
@given(data=st.lists(st.sampled_from(_PIECES), max_size=30).map(b"".join),
       asks=st.lists(st.tuples(st.integers(1, 35), st.sampled_from(["import a", "from a import b", "x = 1", "a"])),
                     max_size=12))
def test_many_asks_on_one_text_in_any_order_give_the_same_lines(data, asks):
    """The search resumes where the last one on the same text ended: in order or not, each answer
    is the one splitting the file gives."""
    for line, text in asks:
        assert line_holding(data, line, text) == _by_splitting(data, line, text)
