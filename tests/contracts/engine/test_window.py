"""Parsing only the top-level statements around the lines with a word (`engine/window.py`) finds
exactly what parsing the whole file finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contracts.engine import window
from contracts.engine.resolve import matches_after
from contracts.engine.scan import scan_source

WORDS = (b"jit_kernel",)

# Top-level statements, some naming the word in places a scanner must (or must not) report.
SNIPPETS = [
    "import os\n",
    "from pkg.jit_kernel.hicache import transfer\n",
    "import pkg.jit_kernel.norm as n\n",
    "if TYPE_CHECKING:\n    from pkg.jit_kernel import utils\n",
    'def f():\n    """Uses pkg.jit_kernel.x."""\n    from pkg.jit_kernel.norm import rms\n    return rms\n',
    '@decorator("pkg.jit_kernel.hicache:fn")\ndef g():\n    pass\n',
    '@a\n@b(\n    1,\n)\nclass C:\n    x = "pkg.jit_kernel.norm:f"\n\n    def m(self):\n        import pkg.jit_kernel.utils\n',
    'X = {\n"a": "pkg.jit_kernel.hicache:transfer",\n}\n',
    'Y = dict(\nkey="pkg.jit_kernel.norm:rms",\n)\n',  # column 0 inside brackets
    's = """\nfrom pkg.jit_kernel import not_an_import\nimport pkg.jit_kernel.x\n"""\n',
    "t = '''\ndef fake():\n    import pkg.jit_kernel.y\n'''\n",
    "try:\n    from pkg.jit_kernel import a\nexcept ImportError:\n    pass\nelse:\n    pass\nfinally:\n    pass\n",
    "x = 1; import pkg.jit_kernel.norm\n",
    'z = importlib.import_module(\n    "pkg.jit_kernel.hicache"\n)\n',
    'w = f"pkg.jit_kernel.{x}"\n',
    "# a comment about pkg.jit_kernel\n",
    'q = "pkg.jit_kernel.norm" \\\n    + "x"\n',
    "if x:\n    pass\nelif y:\n    import pkg.jit_kernel.hicache\nelse:\n    z = 'pkg.jit_kernel.norm'\n",
    'async def h():\n    await g("pkg.jit_kernel.norm:rms")\n',
    "class D(\nBase):\n    import pkg.jit_kernel.utils\n",  # column 0 inside brackets
    'match v:\n    case "pkg.jit_kernel.norm":\n        import pkg.jit_kernel.hicache\n',
    'u = "a \\\nimport pkg.jit_kernel.z"\n',  # a string continued by a backslash
    "for i in range(3):\n    from . import jit_kernel\nelse:\n    from .. import jit_kernel\n",
    "def filler():\n    return [i for i in range(10)]\n",
    "VALUE = 3\n",
    "\n\n",
    # blocks inside blocks: what makes a reference lazy, type-only or guarded sits in headers
    'class E(Base):\n    """Doc, pkg.jit_kernel.\n    more."""\n    x = {\n  "a": 1,\n    }\n\n    @dec(\n        1)\n'
    "    def m(self, a=1,\n          b=2):\n        y = 1\n        if TYPE_CHECKING:\n            pass\n"
    "        else:\n            import pkg.jit_kernel.norm\n        return y\n\n    def other(self):\n        return 2\n",
    "def k():\n    try:\n        import numpy\n    except ImportError:\n        from pkg.jit_kernel import a\n"
    "    else:\n        b = 'pkg.jit_kernel.norm:f'\n    finally:\n        pass\n",
    "class F:\n    if TYPE_CHECKING:\n        from pkg.jit_kernel import t\n    def n(self):\n        def inner():\n"
    "            with suppress(ImportError):\n                import pkg.jit_kernel.hicache\n        return inner\n",
    'def l(x="""pkg.jit_kernel.norm\n""", y=(\n1,\n)):\n    z = 1\n    "pkg.jit_kernel.hicache"\n    return z\n',
    "class G:\n    def a(self): import pkg.jit_kernel.norm\n    def b(self):\n        pass\n",
    "def p():\n    s = '''\nimport pkg.jit_kernel.q\n'''\n    x = [\n  1]\n    import pkg.jit_kernel.utils\n",
    "if TYPE_CHECKING:\n    import os\nelif other:\n    def r():\n        import pkg.jit_kernel.norm\nelse:\n    pass\n",
    "class H:\n    '''pkg.jit_kernel.norm'''\n    for i in range(2):\n        u = f(\n            'pkg.jit_kernel.hicache:x')\n"
    "    while False:\n        import pkg.jit_kernel.utils  # noqa: pkg.jit_kernel\n    else:\n        pass\n",
    "async def s():\n    async with lock:\n        async for x in y:\n            from pkg.jit_kernel import z\n",
    "def t():\n    x = 1 + \\\n        2\n    return importlib.import_module(\n        'pkg.jit_kernel.norm')\n",
    "def v():\n    '''Docs.'''\n    return 1\n\n\ndef w2():\n    '''pkg.jit_kernel.norm is gone'''\n    x = 'pkg.jit_kernel.utils:f'\n",
    "class I:\n    def a(self):\n        return '''\nclass J:\n    import pkg.jit_kernel.norm\n'''\n    def b(self):\n        import pkg.jit_kernel.utils\n",
    "def u():\n    try:\n        x = 1\n        import pkg.jit_kernel.norm\n    except ImportError: pass\n",
]
DOCSTRINGS = ["", '"""Module docs mention pkg.jit_kernel."""\n', "# -*- coding: utf-8 -*-\n", "#!/usr/bin/env python\n"]


@pytest.fixture(autouse=True)
def small_files_too(monkeypatch):
    monkeypatch.setattr(window, "MIN_BYTES", 0)
    monkeypatch.setattr(window, "MAX_KEPT", 1.0)


def _same(text: str, newline: str) -> str | None:
    """Asserts the kept text scans like the whole file; returns what happened."""
    data = text.replace("\n", newline).encode()
    whole = scan_source(data, "pkg.srt.mod", False, WORDS)
    outcome = None
    for nested in (True, False):  # the caller's order: the nested window, then the top-level one
        kept = window.keep_hot_statements(data, WORDS, nested=nested)
        if kept is None:
            return outcome or "whole"
        part = scan_source(kept, "pkg.srt.mod", False, WORDS)
        assert len(kept.split(b"\n")) == len(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n"))
        if part.error is not None:
            outcome = outcome or "fallback"  # the caller tries the next window, then the whole file
            continue
        assert whole.error is None
        assert part.refs == whole.refs
        outcome = outcome or ("nested" if nested else "kept")
    return outcome


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(head=st.sampled_from(DOCSTRINGS), body=st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=25),
       newline=st.sampled_from(["\n", "\r\n", "\r"]))
def test_kept_statements_scan_like_the_whole_file(head, body, newline):
    _same(head + "".join(body), newline)


def test_blanks_what_cannot_hold_a_reference():
    text = '"""Docs."""\nimport os\n\ndef f():\n    return 1\n\nfrom pkg.jit_kernel import a\nVALUE = 2\n'
    kept = window.keep_hot_statements(text.encode(), WORDS)
    assert kept.decode().split("\n") == ["pass", "", "", "", "", "", "from pkg.jit_kernel import a", "", ""]
    assert _same(text, "\n") in ("kept", "nested")


def test_keeps_whole_top_level_statements_around_a_lazy_import():
    text = "import os\n\n@dec\nclass C:\n    def m(self):\n        import pkg.jit_kernel.utils\n\nX = 1\n"
    kept = window.keep_hot_statements(text.encode(), WORDS).decode()
    assert kept.split("\n")[2:6] == ["@dec", "class C:", "    def m(self):", "        import pkg.jit_kernel.utils"]
    assert _same(text, "\n") in ("kept", "nested")


def test_falls_back_when_column_0_text_sits_inside_brackets():
    # The statement is cut at `key=...`: what is kept does not parse, so the whole file is.
    assert _same("import os\nY = dict(\nkey='pkg.jit_kernel.norm:rms')\nZ = 1\n", "\n") == "fallback"
    # Cut where the piece still parses, it holds the same string at the same place.
    assert _same("import os\nY = dict(\nkey='pkg.jit_kernel.norm:rms',\nother=1,\n)\n", "\n") in ("kept", "nested")


def test_whole_file_for_small_files(monkeypatch):
    monkeypatch.setattr(window, "MIN_BYTES", 4096)
    assert window.keep_hot_statements(b"import pkg.jit_kernel\n", WORDS) is None


def test_keeps_a_clause_with_its_statement():
    text = "import os\ntry:\n    import numpy\nexcept ImportError:\n    from pkg.jit_kernel import a\nX = 1\n"
    assert _same(text, "\n") in ("kept", "nested")  # cut at `except`, neither half would parse


def test_whole_file_when_a_kept_line_declares_another_encoding():
    # The docstring names the word, so the kept text starts at line 1, with the declaration.
    declared = '# -*- coding: latin-1 -*-\n"""Was pkg.jit_kernel."""\nX = "\xe9"\n'
    assert window.keep_hot_statements(declared.encode("latin-1"), WORDS) is None
    assert _same(declared.replace("latin-1", "utf-8"), "\n") in ("kept", "nested")
    # Before the kept statements, the declaration is blanked with the rest.
    assert window.keep_hot_statements(b"# coding: latin-1\nimport pkg.jit_kernel.norm\n", WORDS) == \
        b"\nimport pkg.jit_kernel.norm\n"


def test_nested_window_keeps_the_headers_and_the_hot_statement_only():
    text = ("import os\n\nclass C(Base):\n    \"\"\"Docs.\"\"\"\n    X = 1\n\n    def other(self):\n        return 2\n\n"
            "    def m(self):\n        y = 1\n        try:\n            import numpy\n        except ImportError:\n"
            "            from pkg.jit_kernel import a\n        return y\n")
    kept = window.keep_hot_statements(text.encode(), WORDS, nested=True).decode().split("\n")
    assert [line for line in kept if line] == [
        "pass", "class C(Base):", "    pass", "    def m(self):", "        pass", "        try:", "            pass",
        "        except ImportError:", "            from pkg.jit_kernel import a"]
    assert _same(text, "\n") == "nested"


@pytest.mark.parametrize("text, outcome, kept", [
    # column 0 in brackets cuts the top-level statement: no window parses, the whole file is read
    ("class K:\n    x = dict(\nkey=1)\n    def m(self):\n        import pkg.jit_kernel.norm\n", "fallback", None),
    # a header with its body on one line: that statement is kept whole, its siblings still go
    ("def f():\n    if x: import pkg.jit_kernel.norm\n    y = 2\n", "nested",
     "def f():\n    if x: import pkg.jit_kernel.norm\n\n"),
    # a string that never ends: nothing is taken apart, and the parse says why
    ("def f():\n    s = '''never ends\n    import pkg.jit_kernel.norm\n", "fallback",
     "def f():\n    s = '''never ends\n    import pkg.jit_kernel.norm\n"),
])
def test_nested_window_leaves_shapes_it_cannot_take_apart_to_the_larger_windows(text, outcome, kept):
    assert _same(text, "\n") == outcome
    if kept is not None:
        assert window.keep_hot_statements(text.encode(), WORDS, nested=True).decode() == kept


# Pieces of f-strings and t-strings, in every way of writing their prefixes and quotes.
_STRING_PIECES = [b'f"', b"f'", b'F"', b"F'", b't"', b"T'", b'T"', b"t'", b"{", b"}", b"{{", b"}}", b'"',
                  b"'", b"#", b"\n", b"\\", b"a", b" ", b":", b"x#"]


@pytest.mark.skipif(not window._F_STRINGS, reason="this Python reads PEP 701 f-strings itself")
@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_STRING_PIECES), max_size=16).map(b"".join))
@example(b'# f"{ f"{"')  # a second start inside a match in a comment: `finditer` never tries it
def test_one_pass_over_the_f_string_starts_finds_what_each_pattern_finds(data):
    """`_f_string_rejects` tries every f-string start in one search of a translated copy: it must
    answer as each prefix's own pattern, searched with its own `finditer`, answers."""
    expected = any(not window._not_code(data, m.start())
                   for pattern in window._F_STRINGS.values() for m in pattern.finditer(data))
    assert window._f_string_rejects(data, data.translate(window._PREFIX_MAP)) == expected


_WORD_PIECES = [b"except", b"xcept", b"type", b"ype", b"tt", b"ee", b" ", b"\t", b",", b":", b"\n", b"a", b"=",
                b"[", b"(", b"X"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_WORD_PIECES), max_size=14).map(b"".join))
@example(b"zxcept q except a, b:")  # a match not after the letter covers one of the word's own
def test_a_word_searched_without_its_first_letter_is_found_where_its_own_pattern_is(data):
    """`matches_after` finds what the word's own pattern finds with `finditer`, from a pattern without the
    word's (common) first letter."""
    for pattern, lead in [window._EXCEPT_COMMA, *window._STRICTER_WORDS]:
        whole = re.compile(re.escape(lead) + pattern.pattern)
        assert list(matches_after(pattern, lead, data)) == [m.span() for m in whole.finditer(data)]
