"""`ModuleIndex.bindings(module, name)` parses only the top-level statements that spell `name`,
and of those passes over the `def`s and `class`es of other names (`_binds_only_others`). What it
says of `name` (bound, defined, a module `__getattr__`) must be what the whole file's parse says:
generated modules, padded past the size below which the whole file is parsed anyway."""

from __future__ import annotations

import ast

from hypothesis import example, given, settings
from hypothesis import strategies as st

from contracts.engine.index import _binds_only_others, module_bindings
from contracts.engine.window import MIN_BYTES, keep_hot_statements

NAME = "target"
# Top-level statements: uses of the name in functions and classes, and every way one binds it.
_PIECES = [
    "def user():\n    return target(1)\n",
    "async def user2(x=target):\n    await target\n",
    "@decorate(target)\ndef user3():\n    pass\n",
    "@decorate(\n    target,\n)\ndef user4():\n    target()\n",
    "def sig(\n    a=target,\n) -> int:\n    return a\n",
    "class Holder:\n    target = 1\n    def m(self):\n        return target\n",
    "class Sub(target):\n    pass\n",
    "def setter():\n    global target\n    target = 2\n",
    "def target():\n    pass\n",
    "class target:\n    pass\n",
    "target = 1\n",
    "(\n    other,\n    target,\n) = (1, 2)\n",
    "[\n    target,\n] = [3]\n",
    "if flag:\n    target = 4\nelse:\n    def target():\n        pass\n",
    "try:\n    from pkg import target\nexcept ImportError:\n    target = None\n",
    "from pkg import (\n    target,\n)\n",
    "import target\n",
    "for target in range(3):\n    pass\n",
    "with open(f) as target:\n    pass\n",
    "print(target := 5)\n",
    "def __getattr__(name):\n    return target\n",
    "class Lazy:\n    def __getattr__(self, name):\n        return target\n",
    "def doc():\n    '''\ntarget = 6\n'''\n",
    "x = '''\ntarget = 7\n'''\n",
    "def tail():\n    pass\n# target = 8\n",
    "value = target\n",
]
_PAD = "def pad_{i}():\n    return {i}  # filler so that the window is used, not a whole parse\n"


def _module(pieces: list[str]) -> bytes:
    body = "".join(pieces)
    pad, i = [], 0
    while len(body) + sum(map(len, pad)) < MIN_BYTES + 200:
        pad.append(_PAD.format(i=i))
        i += 1
    return ("".join(pad[: len(pad) // 2]) + body + "".join(pad[len(pad) // 2:])).encode()


def _facts(tree: ast.Module, text: bytes) -> tuple[bool, bool, bool]:
    found = module_bindings(tree, text)
    return NAME in found.names, NAME in found.defined, found.getattr


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8))
@example(["class LoaderStatus:\n    A = 1\n", "(\n    A,\n    target,\n) = tuple(LoaderStatus)\n"])
@example(["def user():\n    return target(1)\n", "def setter():\n    global target\n    target = 2\n"])
def test_what_the_window_says_of_a_name_is_what_the_whole_file_says(pieces):
    data = _module(pieces)
    whole = _facts(ast.parse(data), data)
    kept = keep_hot_statements(data, (NAME.encode(), b"__getattr__"), any_syntax=True, drop=_binds_only_others(NAME))
    if kept is None:  # (the whole file is parsed: nothing to compare)
        return
    try:
        tree = ast.parse(kept)
    except SyntaxError:  # (a statement cut: `bindings` parses the whole file then)
        return
    assert _facts(tree, kept) == whole


def test_uses_inside_functions_and_classes_are_not_parsed():
    data = _module(["def user():\n    return target(1)\n", "class Holder:\n    x = target\n",
                    "from pkg import target\n"])
    kept = keep_hot_statements(data, (NAME.encode(), b"__getattr__"), any_syntax=True, drop=_binds_only_others(NAME))
    assert kept is not None
    assert b"def user" not in kept and b"class Holder" not in kept
    assert b"from pkg import target" in kept
    assert _facts(ast.parse(kept), kept) == (True, False, False)


def test_nothing_left_is_an_empty_module():
    data = _module(["def user():\n    return target(1)\n"])
    assert keep_hot_statements(data, (NAME.encode(), b"__getattr__"), any_syntax=True, drop=_binds_only_others(NAME)) == b""


_DEF_TEXT = st.lists(st.sampled_from([
    b"def ", b"class ", b"async def ", b"\n", b"  ", b"name", b"_x1", b"\xc2\xa0", b"\xe2\x80\xa8", b"\xff",
    b"\xc3", b"\xa9", b"\xe3\x81\x82", b"(", b":", b" = 1", b"#", b"\t",
]), max_size=40).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(_DEF_TEXT)
@example(b"def \xc2\xa0():\nclass a\xc3 b")  # a decoded non-ASCII space, a cut UTF-8 sequence
def test_the_column_0_names_a_reader_sends_decode_to_what_the_text_says(text):
    """A forked reader sends a file's column-0 `def` and `class` names as one joined bytes object
    (`def_names_at_column_0`); decoded where asked (`column_0_names`), they are the names
    `defs_at_column_0` reads off the text, each word decoded on its own."""
    from contracts.engine.index import _DEF_AT_COLUMN_0, _DEF_HEADS, column_0_names, def_names_at_column_0

    padded = b"\n" + text if text.startswith(_DEF_HEADS) else text
    each = {word.decode("utf-8", "replace") for word in _DEF_AT_COLUMN_0.findall(padded)}
    assert set(column_0_names(def_names_at_column_0(text))) == each
