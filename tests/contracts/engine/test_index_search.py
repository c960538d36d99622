"""The per-name searches of `index.py` answer as the one-pass scan of every line does.

`defined_at_column_0` and `_indented_definition` search a text for the name asked (most texts
are asked about one or two names) and switch to `_definitions`, one pass over every line, once
a text has been asked about many; `modules_containing` searches module by module. Both shortcuts
must give the answers of the plain versions, on any text.
"""

from __future__ import annotations

import bisect
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.engine.index import (
    ModuleIndex,
    _definitions,
    _indented_definition,
    _occurrences,
    defined_at_column_0,
    defs_at_column_0,
)
from contracts.engine.runtime import text_facts

NAMES = ("x", "xy", "def", "class_", "async")
# Pieces a definition line is made of, and the bytes that make a near miss of one.
PIECES = st.sampled_from([
    *(n.encode() for n in NAMES), b"def ", b"class ", b"async def ", b"def  ", b" ", b"\t", b"\n",
    b"=", b"==", b":", b",", b"(", b"#", b"\xc3\xa9", b"x.", b"_", b"1", b"\r\n",
])


def _fresh(text: bytes) -> bytes:
    """A copy with its own identity, so that no cache of an earlier example answers for it."""
    return bytes(bytearray(text))


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=40))
def test_the_search_for_a_name_answers_as_the_scan_of_every_line(pieces):
    text = b"".join(pieces)
    column_0, anywhere = _definitions(_fresh(text))
    for name in NAMES:
        searched = _fresh(text)  # asked once: the search, not the scan
        assert defined_at_column_0(searched, name) == (name.encode() in column_0), (text, name)
        searched = _fresh(text)
        assert _indented_definition(searched, name) == (name.encode() in anywhere), (text, name)


def test_a_text_asked_about_many_names_is_scanned_once_and_answers_the_same():
    text = b"".join(b"name_%d = %d\n" % (i, i) for i in range(50)) + b"    inner = 1\nnot_a_def\n"
    names = [f"name_{i}" for i in range(50)] + ["inner", "not_a_def", "absent"]
    expected = [(n == "inner" or n.startswith("name_"), n.startswith("name_")) for n in names]
    answers = [(_indented_definition(text, n), defined_at_column_0(text, n)) for n in names]
    assert answers == expected


class _Discovery:
    def __init__(self, files):
        self.by_module = files
        self.other_modules = {}


class _File:
    def __init__(self, rel):
        self.rel = rel
        self.path = rel
        self.is_package = False


def _joined_search(texts: dict[str, bytes], word: bytes) -> set[str]:
    """The modules holding `word` as a whole word, from one search of the joined texts."""
    modules = sorted(texts)
    offsets, at = [], 0
    for m in modules:
        offsets.append(at)
        at += len(texts[m]) + 1
    blob = b"\0".join(texts[m] for m in modules)
    return {modules[bisect.bisect_right(offsets, pos) - 1] for pos in _occurrences(blob, word)}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(PIECES, max_size=12), min_size=1, max_size=6), st.sampled_from(NAMES))
def test_modules_containing_finds_the_modules_of_a_search_of_the_joined_texts(parts, word):
    texts = {f"pkg.m{i}": b"".join(p) for i, p in enumerate(parts)}
    files = {m: _File(f"{m}.py") for m in texts}
    index = ModuleIndex("", _Discovery(files), {f"{m}.py": t for m, t in texts.items()})
    expected = _joined_search(texts, word.encode())
    assert index.modules_containing(word) == expected
    assert index.modules_containing(word) == expected  # asked again: the same answer


SYS_MODULES_TEXTS = [
    b'import sys\nsys.modules["pkg.fake"] = object()\n',
    b"import sys\nsys.modules.setdefault('pkg.other.deep', None)\n",
    b"import sys\nsetattr(sys.modules[cls.__module__], name, value)\n",
    b"import sys\nx = sys.modules['pkg.read_only']\n",
    b"sys.modules[__name__] = self\n",
    b"nothing here\n",
]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(SYS_MODULES_TEXTS), min_size=1, max_size=5))
def test_the_facts_read_with_each_file_are_those_of_a_search_of_the_tree(chosen):
    texts = {f"pkg.m{i}": t for i, t in enumerate(chosen)}
    files = {m: _File(f"{m}.py") for m in texts}

    def index() -> ModuleIndex:
        return ModuleIndex("", _Discovery(files), {f"{m}.py": t for m, t in texts.items()})

    searched, told = index(), index()
    told.runtime.facts = {m: text_facts(t) for m, t in texts.items()}
    assert told.runtime.literal_keys() == searched.runtime.literal_keys()
    assert told.runtime._injector_modules() == searched.runtime._injector_modules()


ASSIGNMENT_PIECES = st.sampled_from([b".", b"x", b"xy", b" ", b"=", b"==", b":", b"int", b"\n", b"setattr(", b"_"])


@settings(max_examples=300, deadline=None)
@given(st.lists(ASSIGNMENT_PIECES, max_size=30).map(lambda p: [b"m.x: y.xy = 1\n", *p] if len(p) % 2 else p))
def test_a_writers_attribute_targets_are_the_names_a_search_per_name_finds(pieces):
    """One pass per writer answers as the search of each name did (`.name = `, `.name: T = `)."""
    import re

    text = b"".join(pieces)
    index = ModuleIndex("", _Discovery({"pkg.w": _File("pkg/w.py")}), {"pkg/w.py": text})
    targets = index.runtime._attribute_targets("pkg.w")
    for name in (b"x", b"xy", b"int", b"_"):
        per_name = b"setattr(" in text or re.search(rb"\.\s*" + re.escape(name) + rb"\s*(?::[^=\n]*)?=(?!=)", text)
        assert (targets is None or name in targets) == bool(per_name), (text, name)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=40))
def test_the_column_0_definitions_are_those_a_line_by_line_reading_finds(pieces):
    text = b"".join(pieces)
    expected = set()
    for line in text.split(b"\n"):
        for head in (b"def ", b"class ", b"async def "):
            if line.startswith(head):
                word = re.match(rb"[A-Za-z0-9_\x80-\xff]*", line[len(head):]).group()
                if word:
                    expected.add(word.decode("utf-8", "replace"))
    assert defs_at_column_0(text) == expected, text
