"""The index of a tree: which modules exist and what names each binds, read from the text and
with `ast` (nothing is imported). It serves `missing-name`, `upgrade`, `--verify-against` and
`derive-map`.

A module exists when the tree has it as a `.py` file, a directory (a package, with or without
`__init__.py`), a `.pyi` stub or an extension module (`.so`, `.pyd`, ABI-tagged names
included); `discover.py` lists all of these. What only running the tree can bind (a name another
module assigns onto a module, a module written into `sys.modules`) is read by `runtime.py`, which
this index asks before it calls anything missing.

`ModuleIndex` is the index of a checked tree. `binds(M, X)` answers whether `from M import X`
finds `X`: True (a submodule `M.X`, an attribute every module has, or a binding at module
level), False (certainly not), None (unknown: an extension module, a module-level `__getattr__`,
bindings made through `globals()`/`sys.modules[__name__]`/`exec`, a star import of something
outside the checked packages). It is cheap where it can be: a name whose text does not occur in
a module cannot be bound there (only a star import could bring it, and those are followed), and
a name defined at column 0 (`def X`, `class X`, `X = ...`, a column-0 import) is bound. Only the
rest is settled by `ast` (every binding form: def, class, assignment and annotated assignment,
augmented assignment, `for`/`with`/walrus targets, imports, `global`, `__all__` entries, in
`if`/`try`/`with`/`for`/`while` blocks at module level), once per module. `definers(names)`
finds the modules that *define* every one of `names` (not merely import them: a module
re-exporting a name is not where it moved to), for "moved?" suggestions.

`TreeIndex` is the index of a tree named by `derive-map` or `upgrade` (where did a module's code,
or one name, go?). Its files are parsed on demand; a text index of `def`/`class`/assignment
names finds the few files worth parsing for a name. It reads a module's bindings more coarsely:
a name is bound when the module defines it (`def`, `class`, an assignment, at module level, also
inside `if`/`try`/`with`), imports it, re-exports it through `from y import *` (followed inside
the tree), defines a module-level `__getattr__` (anything may resolve), or `module.name` is
itself a module of the tree. A definition is compared by more than its name, the way git
compares a renamed file: its source block (a `def`/`class`/assignment at column 0 and the
indented lines under it) is normalized -- blank lines, comment lines, import lines (a moved
function whose imports were updated is still the same function) and the docstring left out,
whitespace and line breaks removed (a reformat is no change) -- and hashed. `similarity()` of two
same-named definitions is 1.0 for the same normalized block, else the `difflib` ratio of the two
blocks cut into pieces after each bracket, comma and colon. Reading blocks from the text (no
parse) keeps a whole tree cheap; a definition nested in a module-level `if`/`try` is bound (see
above) but has no block to compare.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import warnings
from functools import cached_property

from contracts._record import Record
from contracts.engine.discover import SourceFile, discover
from contracts.engine.files import read_capped, read_regular
from contracts.engine.import_lines import Statement, unpacked
from contracts.engine.records import MAX_READ_BYTES
from contracts.engine.resolve import resolve_relative
from contracts.engine.runtime import SYS_MODULES_WRITE, Runtime
from contracts.engine.scan import MAX_PARSE_BYTES, decode_source, older_syntax_ast
from contracts.engine.shared_texts import holding
from contracts.engine.window import keep_hot_statements

# What every module has without binding it (`__path__` too, for a package): never missing.
IMPLICIT_ATTRIBUTES = frozenset({"__doc__", "__file__", "__name__", "__package__", "__spec__", "__loader__",
                                 "__builtins__", "__cached__", "__annotations__", "__dict__"})


def implicit(name: str, package: bool) -> bool:
    """Is `name` an attribute Python gives a module (a package) whatever its source binds?"""
    return name in IMPLICIT_ATTRIBUTES or (package and name == "__path__")


# --------------------------------------------------------------------------- parsing a module


def _ast(source: str | bytes) -> ast.Module | None:
    """`source`'s tree, read as a newer Python's syntax where this one's `ast` rejects it (the
    same names on every interpreter), or None where no parser reads it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return older_syntax_ast(source, e)


def _parse(data: bytes) -> ast.Module | None:
    """`data`'s tree, or None: it does not parse, or it is over the parse cap (a module of a
    `--verify-against` tree is bounded as a checked file is)."""
    if len(data) > MAX_PARSE_BYTES:
        return None
    return _ast(data)


def read_text(path: str) -> str | None:
    """The text of a module to parse, or None (unreadable, undecodable, or over the parse cap: a
    tree named by `--before`/`--after`/`--verify-against` is bounded as the checked one is)."""
    try:
        return decode_source(read_capped(path, MAX_PARSE_BYTES))
    except (OSError, SyntaxError, ValueError, LookupError):
        return None


def parse_text(text: str | None) -> ast.Module | None:
    return None if text is None else _ast(text)


# --------------------------------------------------------------------------- a checked tree's bindings

_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | frozenset(range(128, 256))
# A maximal run of `_WORD` bytes: what `_occurrences` finds as a whole word.
_IDENTIFIER = re.compile(rb"[A-Za-z0-9_\x80-\xff]+")
_SEARCHES_BEFORE_INDEX = 64  # a few missing names: a search each; many: the index (linear)
_UNREAD = object()  # (a cache's miss, where None is an answer)
# Text that lets a module bind names no statement shows.
_DYNAMIC = (b"globals()", b"sys.modules[__name__]", b"vars()", b"exec(")


def _states_names(stub: bytes) -> bool:
    """Does a stub state anything (an empty one, or a docstring alone, says nothing)?"""
    tree = _parse(stub)
    if tree is None:
        return True
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return bool(body)


# The line under its decorators that names a top-level `def` or `class`.
_DEF_HEAD = re.compile(r"(?:async[ \t]+)?def[ \t]+(\w+)|class[ \t]+(\w+)")


# A line that cannot start a top-level statement after a `def` or `class` line: blank, indented, a
# comment, or the `):` closing a signature that runs over several lines.
_INSIDE = re.compile(r"[ \t#]|$|\)[ \t]*(?:->[^#]*)?:[ \t]*(?:#|$)")


def _binds_only_others(name: str):
    """`keep_hot_statements`' `drop` for the statements that may bind `name`: a top-level `def` or
    `class` of another name, which binds only its own name at module level (what `module_bindings`
    reads of it; a function's `global` statements too, so one that spells `global` is kept).
    Most lines that spell a name are its uses inside functions: their parse is spared."""
    def drop(lines: list[str]) -> bool:
        # (under decorators, the first line at column 0 that starts a `def` or `class`)
        at = next((i for i, line in enumerate(lines) if _DEF_HEAD.match(line)), None) if lines[0].startswith("@") else 0
        m = None if at is None else _DEF_HEAD.match(lines[at])
        if m is None or m.group(1) in (name, "__getattr__") or m.group(2) == name:
            return False
        # The window's statements are found by their first line: one that starts otherwise than
        # with a letter (`(a, b) = ...`) is still part of the statement before; keep such a run.
        if not all(_INSIDE.match(line) for line in lines[at + 1:]):
            return False
        return m.group(2) is not None or not any("global" in line for line in lines)
    return drop


class Bindings(Record):
    """A module's names at module level, from `ast`."""

    names: set[str]  # bound any way, imports included
    defined: set[str]  # bound other than by an import
    stars: list[tuple[int, str | None]]  # (level, module) of `from m import *`
    getattr: bool  # a module-level `__getattr__`

    def __init__(self, names: set | None = None, defined: set | None = None, stars: list | None = None,
                 getattr: bool = False) -> None:
        self.__dict__.update(names=set() if names is None else names, defined=set() if defined is None else defined,
                             stars=[] if stars is None else stars, getattr=getattr)


def module_bindings(tree: ast.Module, text: bytes | None = None) -> Bindings:
    """The module-level bindings of `tree`. `text`, its source, spares walks for forms its text
    cannot hold (`global`, `:=`)."""
    reader = _BindingReader(text)
    reader.block(tree.body)
    return reader.out


class _BindingReader:
    """Walks a module's statements at module level (into every compound statement's blocks) and
    collects what each binds into `out`."""

    def __init__(self, text: bytes | None) -> None:
        self.out = Bindings()
        self.has_global = text is None or b"global" in text
        self.has_walrus = text is None or b":=" in text

    def bind(self, name: str, defined: bool = True) -> None:
        self.out.names.add(name)
        if defined:
            self.out.defined.add(name)

    def block(self, body: list) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(stmt)
            elif isinstance(stmt, ast.ClassDef):
                self.bind(stmt.name)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.imports(stmt)
            elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                self.assignment(stmt)
            elif isinstance(stmt, ast.Expr):
                self.expression(stmt.value)
            elif isinstance(stmt, ast.Global):
                for name in stmt.names:
                    self.bind(name)
            else:
                self.compound(stmt)

    def function(self, stmt: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.bind(stmt.name)
        if stmt.name == "__getattr__":
            self.out.getattr = True
        if self.has_global:
            for sub in ast.walk(stmt):  # `global X` in a function binds X when it runs
                if isinstance(sub, ast.Global):
                    for name in sub.names:
                        self.bind(name)

    def imports(self, stmt: ast.Import | ast.ImportFrom) -> None:
        for alias in stmt.names:
            if isinstance(stmt, ast.Import):
                self.bind(alias.asname or alias.name.split(".", 1)[0], defined=False)
            elif alias.name == "*":
                self.out.stars.append((stmt.level or 0, stmt.module))
            else:
                self.bind(alias.asname or alias.name, defined=False)

    def assignment(self, stmt: ast.Assign | ast.AugAssign | ast.AnnAssign) -> None:
        for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
            self.targets(target)
            if isinstance(target, ast.Name) and target.id == "__getattr__":
                self.out.getattr = True
            if isinstance(target, ast.Name) and target.id == "__all__" and stmt.value is not None:
                self.all_names(stmt.value)
        if stmt.value is not None:
            self.walrus(stmt.value)

    def expression(self, call: ast.expr) -> None:
        self.walrus(call)
        # `__all__.extend([...])`, `__all__.append("x")`
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                isinstance(call.func.value, ast.Name) and call.func.value.id == "__all__":
            for arg in call.args:
                self.all_names(arg)

    def compound(self, stmt: ast.stmt) -> None:
        """`for`, `with`, `if`, `while`, `try`, `match` (and any other statement): their targets,
        the walrus targets of their headers, and the statements of their blocks."""
        if isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.targets(stmt.target)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    self.targets(item.optional_vars)
        for name in ("test", "iter", "subject"):
            value = getattr(stmt, name, None)
            if isinstance(value, ast.AST):
                self.walrus(value)
        for name in ("body", "orelse", "finalbody"):
            value = getattr(stmt, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self.block(value)
        for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
            self.block(part.body)

    def targets(self, node: ast.AST) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                self.bind(sub.id)

    def walrus(self, node: ast.AST) -> None:
        if not self.has_walrus:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                self.bind(sub.target.id)

    def all_names(self, value: ast.AST) -> None:
        for sub in ast.walk(value):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.isidentifier():
                self.bind(sub.value, defined=False)  # declared, defined elsewhere


def _dynamic(text: bytes) -> bool:
    """Can `text` bind names no statement shows (`globals()`, `exec`, a `sys.modules` write)?"""
    return any(marker in text for marker in _DYNAMIC) or (
        b"sys.modules" in text and SYS_MODULES_WRITE.search(text) is not None)


def _occurrences(text: bytes, word: bytes):
    """Offsets of `word` in `text` as a whole identifier."""
    n, k = len(text), len(word)
    pos = text.find(word)
    while pos >= 0:
        end = pos + k
        if (pos == 0 or text[pos - 1] not in _WORD) and (end >= n or text[end] not in _WORD):
            yield pos
        pos = text.find(word, end)


def _has_word(text, ends, lo: int = 0, hi: int | None = None) -> bool:
    """Does `text` (its bytes [lo, hi): a text in a shared map) hold a whole word that `ends` (the
    word, then no word byte after it) finds? The same answer as `_occurrences` for a word of word
    bytes, the occurrences inside longer words (`quant` in `quantize`) skipped by `re`, not one by one."""
    pos, hi = lo, len(text) if hi is None else hi
    while (m := ends.search(text, pos, hi)) is not None:
        start = m.start()
        if start == lo or text[start - 1] not in _WORD:
            return True
        pos = start + 1
    return False


def defs_at_column_0(text: bytes) -> set[str]:
    """The names of the `def`s and `class`es that start a line at column 0 (one regular-expression
    pass: `re` skips to each line break at C speed, where a search per head and a match per hit
    cost more than twice as much)."""
    return set(column_0_names(def_names_at_column_0(text)))


def def_names_at_column_0(text: bytes) -> bytes:
    """`defs_at_column_0`'s names as they are spelled, joined by spaces: one object per file for a
    forked reader to send, decoded (`column_0_names`) only for the modules a rule asks about."""
    if text.startswith(_DEF_HEADS):
        text = b"\n" + text
    return b" ".join(_DEF_AT_COLUMN_0.findall(text))


def column_0_names(joined: bytes) -> list[str]:
    """The names `def_names_at_column_0` joined (split on the space alone: `str.split()` would also
    split a name at a decoded non-ASCII space)."""
    return joined.decode("utf-8", "replace").split(" ") if joined else []


_DEF_HEADS = (b"def ", b"class ", b"async def ")
# After a line break: a `def`, `class` or `async def` head, then a whole word (what `_IDENTIFIER` matches).
_DEF_AT_COLUMN_0 = re.compile(rb"\n(?:def|class|async def) ([A-Za-z0-9_\x80-\xff]+)")


# `^[ \t]*`, a definition head or none, then a whole word: every place `defined_at_column_0`
# and `_indented_definition` look at, found in one pass over a text.
_DEFINITION_START = re.compile(rb"^([ \t]*)(def |class |async def )?([A-Za-z0-9_\x80-\xff]+)", re.M)
_DEFINED: dict[int, tuple[bytes, frozenset, frozenset]] = {}  # id(text) -> (text, column 0, any)
_MAX_DEFINED = 16


def _definitions(text: bytes) -> tuple[frozenset, frozenset]:
    """(names `text` may define at column 0, names it may define on any line), each found once
    per text: asking per name searched the whole text each time, so a file importing many
    missing names cost as many searches of itself (quadratic)."""
    entry = _DEFINED.get(id(text))
    if entry is not None and entry[0] is text:
        return entry[1], entry[2]
    column_0, anywhere = set(), set()
    for m in _DEFINITION_START.finditer(text):
        indent, head, word = m.groups()
        after = text[m.end():m.end() + 4].lstrip(b" \t")  # what the per-name tests looked at
        if head or _assigns(after, (b"=", b":", b",")):
            anywhere.add(word)
        if not indent and (head or _assigns(after, (b"=", b":"))):
            column_0.add(word)
    if len(_DEFINED) >= _MAX_DEFINED:
        _DEFINED.clear()
    result = _DEFINED[id(text)] = (text, frozenset(column_0), frozenset(anywhere))
    return result[1], result[2]


def _assigns(after: bytes, marks: tuple[bytes, ...]) -> bool:
    return after[:1] in marks and after[:2] != b"=="


def defined_at_column_0(text: bytes, name: str) -> bool:
    """Does `text` define `name` on a line of its own at column 0: `def name`, `class name`,
    `name = ...`, `name: T = ...`? (A cheap, sufficient test; `ast` settles the rest.)"""
    return _defined(text, name.encode(), column_0=True)


def _indented_definition(text: bytes, name: str) -> bool:
    """Could an indented line define `name` (`def name`, `class name`, `name = ...`, `name: T`)?"""
    return _defined(text, name.encode(), column_0=False)


_ASKED: dict[int, list] = {}  # id(text) -> [text, how many names were asked of it]
_ASKS_BEFORE_SCAN = 16  # a few names: a search each; more: `_definitions`, one pass for all


def _defined(text: bytes, word: bytes, column_0: bool) -> bool:
    """`word` is a definition `_definitions` would find (at column 0, or on any line). The first
    few names asked of a text are searched for (a byte search per name; the pass over every
    line costs as much as a few dozen of them, and most texts are asked about one or two names)."""
    entry = _DEFINED.get(id(text))
    if entry is not None and entry[0] is text:
        return word in entry[1 if column_0 else 2]
    asked = _ASKED.get(id(text))
    if asked is None or asked[0] is not text:
        if len(_ASKED) >= _MAX_DEFINED:
            _ASKED.clear()
        asked = _ASKED[id(text)] = [text, 0]
    asked[1] += 1
    if asked[1] > _ASKS_BEFORE_SCAN:
        return word in _definitions(text)[0 if column_0 else 1]
    return any(_defines_at(text, pos, len(word), column_0) for pos in _occurrences(text, word))


def _defines_at(text, pos: int, size: int, column_0: bool, lo: int = 0, hi: int | None = None) -> bool:
    """Is the whole word at `pos` what `_DEFINITION_START` would capture there, followed by what
    `_definitions` takes for a definition (the same test, on one occurrence)? (`lo`, `hi`: the
    bounds of the text in `text`, a shared map.)"""
    start = max(text.rfind(b"\n", lo, pos) + 1, lo)
    prefix = text[start:pos]
    head = prefix.lstrip(b" \t")
    if head not in _HEADS or (column_0 and len(head) != len(prefix)):
        return False
    if head:
        return True
    end = pos + size + 4
    after = text[pos + size:end if hi is None else min(end, hi)].lstrip(b" \t")
    return _assigns(after, (b"=", b":") if column_0 else (b"=", b":", b","))


_HEADS = (b"", b"def ", b"class ", b"async def ")


class ModuleIndex:
    """What exists in a tree and what its modules bind. `texts`: rel path -> content already
    read (others are read on demand); `statements`: module -> the import statements the text
    pass read (`import_lines`; a worker's `packed`), used for column-0 imports and star imports
    (`statements_of`)."""

    def __init__(self, src: str, discovery, texts: dict[str, bytes] | None = None,
                 statements: dict | None = None, shared=None) -> None:
        self.src = src
        self.shared = shared  # `shared_texts.SharedTexts`: the texts the readers put there, or None
        self.py = discovery.by_module
        self.other = discovery.other_modules
        self.texts = texts if texts is not None else {}
        self.statements = statements if statements is not None else {}
        self._bindings: dict[str, Bindings | None] = {}
        self._import_bound: dict[str, set[str]] = {}
        self._children: dict[str, set[str]] | None = None
        self._blob: tuple[bytes, list[int], list[str]] | None = None
        self._words: dict[bytes, set[str]] | None = None  # identifier -> modules, once asked often
        self._searches = 0
        self.unsure: set[str] = set()  # modules whose statements the text pass could not all read
        self._binds: dict[tuple[str, str], bool | None] = {}
        self.defs: dict[str, bytes] = {}  # module -> `def_names_at_column_0` of its `.py`, read already
        self.runtime = Runtime(self)
        self._definers: dict[tuple[str, ...], frozenset[str]] = {}
        self._stubs: dict[str, bytes | None] = {}
        self._containing: dict[bytes, frozenset[str]] = {}
        self._texts_by_module: tuple[list[tuple[str, bytes]], list] | None = None  # (`_haystack`)
        self._source_lists: dict[str, list[bytes] | None] = {}  # module -> `_sources`
        self._excluded: bool | None = None  # does any module of `other` stand for an excluded one?

    # ---- modules

    def exists(self, module: str) -> bool:
        if module in self.py or module in self.other:
            return True
        return self._excluded_above(module) is not None

    def missing(self, module: str) -> bool:
        """Certainly missing: no file or directory, and nothing that could make it at run time
        (`runtime.Runtime.module`: below an extension module, a `sys.modules` write)."""
        return not self.exists(module) and not self.runtime.module(module)

    def _excluded_above(self, module: str) -> str | None:
        """The excluded module `module` is under (the config's `exclude`: not walked), or None."""
        if self._excluded is None:
            self._excluded = "excluded" in self.other.values()
        if not self._excluded:  # (asked of every name imported: most trees exclude nothing)
            return None
        while "." in module:
            module = module.rpartition(".")[0]
            if self.other.get(module) == "excluded":
                return module
        return None

    def is_package(self, module: str) -> bool:
        f = self.py.get(module)
        return (f is not None and f.is_package) or self.other.get(module) == "directory"

    def text(self, module: str) -> bytes | None:
        """The `.py` source of `module` (its `__init__.py` for a package), or None."""
        f = self.py.get(module)
        if f is None:
            return None
        try:
            return self.file_text(f)
        except OSError:
            return None

    def file_text(self, f: SourceFile) -> bytes:
        """`f`'s content: read by this run already (kept, or put into `shared` by a reader),
        else read now (OSError where it cannot be), and kept."""
        data = self.texts.get(f.rel)
        if data is None:
            data = self.shared.text(f.rel) if self.shared is not None else None
            if data is None:
                data = read_capped(f.path, MAX_READ_BYTES)
            self.texts[f.rel] = data
        return data

    def parsed(self, module: str) -> ast.Module | None:
        """`module`'s `.py` source parsed (not kept: asked for a few modules of a tree)."""
        data = self.text(module)
        return None if data is None else _parse(data)

    def stub_text(self, module: str) -> bytes | None:
        """The `.pyi` beside `module` (a stub alone, or beside an extension module or a package)."""
        if self.other.get(module) not in ("stub", "extension") and not self.is_package(module):
            return None
        if module not in self._stubs:  # (asked once per name: two failed opens for most packages)
            self._stubs[module] = self._read_stub(module)
        return self._stubs[module]

    def _read_stub(self, module: str) -> bytes | None:
        base = os.path.join(self.src, *module.split("."))
        for path in (base + ".pyi", os.path.join(base, "__init__.pyi")):
            try:  # not walked: read only as the walk would (a regular file, no link, bounded)
                return read_regular(path, limit=MAX_READ_BYTES)[0]
            except OSError:
                continue
        return None

    def modules(self):
        return set(self.py) | set(self.other)

    def children(self, name: str) -> set[str]:
        """The modules whose last name part is `name`."""
        if self._children is None:
            self._children = {}
            for m in self.modules():
                self._children.setdefault(m.rpartition(".")[2], set()).add(m)
        return self._children.get(name, set())

    def statements_of(self, module: str) -> list[Statement]:
        """The statements the text pass read in `module` (made here from a worker's `packed` rows
        the first time they are asked for)."""
        found = self.statements.get(module, ())
        if type(found) is bytes:
            found = self.statements[module] = unpacked(found)
        return found

    # ---- names

    def bindings(self, module: str, name: str | None = None) -> Bindings | None:
        """The module-level bindings of `module` (its `.py` and `.pyi` together), from `ast`;
        None when a source cannot be parsed. With `name`, only the top-level statements whose
        lines hold that word are parsed (`window.py`): exact for `name`, the star imports and
        `__getattr__` (a binding of `name` can only be in a statement that spells it); its
        star imports are then not all there (the text pass lists them)."""
        if name is not None and module not in self._bindings:
            data = self.text(module)
            if data is not None and self.stub_text(module) is None:
                # (`any_syntax`: `_parse` reads any version's syntax, so no shape this Python
                # rejects is a reason to parse the whole file)
                kept = keep_hot_statements(data, (name.encode(), b"__getattr__"), any_syntax=True,
                                           drop=_binds_only_others(name))
                if kept is not None:
                    tree = _parse(kept)
                    if tree is not None:
                        return module_bindings(tree, kept)
        if module not in self._bindings:
            result: Bindings | None = Bindings()
            for data in (self.text(module), self.stub_text(module)):
                if data is None:
                    continue
                tree = _parse(data)
                if tree is None:
                    result = None
                    break
                part = module_bindings(tree, data)
                result.names |= part.names
                result.defined |= part.defined
                result.stars += part.stars
                result.getattr |= part.getattr
            self._bindings[module] = result
        return self._bindings[module]

    def _column_0(self, module: str) -> set[str]:
        """Names `module`'s `.py` binds on a line of their own at column 0 by `def`, `class` or an
        import: a few byte searches per module, however many names are asked of it (a regular
        expression over every line costs far more)."""
        found = self._import_bound.get(module)
        if found is None:
            found = {name for s in self.statements_of(module) if s.indent == 0 for name in s.bound}
            joined = self.defs.get(module)  # (as the reader sent them)
            if joined is not None:
                found.update(column_0_names(joined))
            else:
                text = self.text(module)
                found.update(defs_at_column_0(text) if text is not None else ())
            self._import_bound[module] = found
        return found

    def binds(self, module: str, name: str, internal=lambda m: True, _seen=None) -> bool | None:
        """Does `from module import name` find `name`? True / False / None (unknown). `internal`:
        whether a star-imported module is one this index may follow (the same for every call)."""
        key = (module, name)
        if _seen is None and key in self._binds:
            return self._binds[key]
        verdict = self._binds_now(module, name, internal, _seen)
        if verdict is False and _seen is None and self.runtime.bound(module, name):
            verdict = None  # another module binds it when it runs
        if _seen is None:
            self._binds[key] = verdict
        return verdict

    def _sources(self, module: str, kind: str | None) -> list[bytes] | None:
        """The texts that say what `module` binds (its `.py`, its `.pyi`), or None when nothing
        can: not walked (excluded), missing, or an extension module without a stub that states
        its names (an extension wins over a `.py` of the same name)."""
        if kind == "excluded" or (module not in self.py and kind is None):
            return None
        if kind == "extension":
            stub = self.stub_text(module)
            return [stub] if stub is not None and _states_names(stub) else None
        return [s for s in (self.text(module), self.stub_text(module)) if s is not None]

    def _binds_now(self, module: str, name: str, internal, _seen) -> bool | None:
        """`binds` before the run-time bindings: a column-0 binding (most names), a submodule or an
        attribute every module has, then what the module's sources say (`_sources_bind`)."""
        kind = self.other.get(module)
        if kind not in ("excluded", "extension") and module in self.py and name in self._column_0(module):
            return True  # (`_sources_bind`'s first answer, before its texts are read: most names end here)
        if self.exists(f"{module}.{name}") or implicit(name, self.is_package(module)):
            return True
        sources = self._source_lists.get(module, _UNREAD)
        if sources is _UNREAD:  # (asked once per name imported from the module: read once)
            sources = self._source_lists[module] = self._sources(module, kind)
        if not sources:
            return None if sources is None else False  # a namespace directory binds only its submodules
        return self._sources_bind(module, name, kind, sources, internal, _seen)

    def _sources_bind(self, module: str, name: str, kind: str | None, sources: list[bytes], internal,
                      _seen) -> bool | None:
        """Does `module`, read from `sources`, bind `name`: its text first (a column-0 binding, a
        name it never spells), then its statements, then its star imports?"""
        if name in self._column_0(module):
            return True
        present = _spelling(sources, name.encode())
        if any(defined_at_column_0(s, name) for s in present):  # `name = ...` at column 0
            return True
        if any(_dynamic(s) for s in sources):
            return None
        whole = self._read_whole(module, kind, sources)
        found = None
        if present or whole or any(b"__getattr__" in s for s in sources):
            found = self.bindings(module, None if whole else name)
            verdict = _statements_bind(found, name)
            if verdict is not False:
                return verdict
        return self._binds_by_star(module, name, found.stars if whole else self._text_stars(module), internal, _seen)

    def _read_whole(self, module: str, kind: str | None, sources: list[bytes]) -> bool:
        """Must `module` be parsed whole: the text pass did not read all of it, or it has a stub?"""
        return module in self.unsure or module not in self.py or len(sources) > 1 or kind == "extension"

    def _text_stars(self, module: str) -> list[tuple[int, str | None]]:
        """The star imports of a module the text pass read whole: (level, module) of each."""
        return [(s.level, s.module) for s in self.statements_of(module) if s.kind == "from" and "*" in s.names]

    def _binds_by_star(self, module: str, name: str, stars: list, internal, _seen) -> bool | None:
        """Does one of `module`'s star imports bring `name`? Unknown where one cannot be followed
        (outside the checked packages, or missing) and none brings it."""
        if not stars:
            return False
        seen = _seen if _seen is not None else set()
        seen.add(module)
        unknown = False
        package = self.is_package(module)
        for level, target in stars:
            full = resolve_relative(module, package, level, target)
            if full is None or not internal(full) or not self.exists(full):
                unknown = True
                continue
            if full in seen or (name.startswith("_") and b"__all__" not in (self.text(full) or b"")):
                continue  # (a star import brings a private name only when `__all__` lists it)
            verdict = self.binds(full, name, internal, seen)
            if verdict:
                return True
            unknown |= verdict is None
        return None if unknown else False

    # ---- where names are defined

    def _word_index(self) -> dict[bytes, set[str]]:
        words: dict[bytes, set[str]] = {}
        for m in sorted(self.py):
            for w in set(_IDENTIFIER.findall(self.text(m) or b"")):
                words.setdefault(w, set()).add(m)
        return words

    def _search_blob(self) -> tuple[bytes, list[int], list[str]]:
        if self._blob is None:
            modules = sorted(self.py)
            parts, offsets, at = [], [], 0
            for m in modules:
                data = self.text(m) or b""
                offsets.append(at)
                parts.append(data)
                at += len(data) + 1
            self._blob = (b"\0".join(parts), offsets, modules)
        return self._blob

    def modules_containing(self, word: str) -> set[str]:
        """The `.py` modules whose text has `word` as an identifier: one search of the tree for
        the first few words, then an index of every identifier, built once (a search per word
        is the tree's size times the words: quadratic in the missing names)."""
        key = word.encode()
        if key in self._containing:  # (asked again by `definers` and `runtime.bound`)
            return set(self._containing[key])
        found = self._containing[key] = frozenset(self._modules_containing(key))
        return set(found)

    def _modules_containing(self, key: bytes) -> set[str]:
        self._searches += 1
        if self._words is None and self._searches > _SEARCHES_BEFORE_INDEX and _IDENTIFIER.fullmatch(key):
            self._words = self._word_index()
        if self._words is not None and _IDENTIFIER.fullmatch(key):
            return set(self._words.get(key, ()))
        # Text by text, not in one joined text: a module is done at its first whole-word
        # occurrence, and a common word's other occurrences are never looked at.
        if _IDENTIFIER.fullmatch(key) is None:
            return {m for m, text, lo, hi in self._texts_with(key)
                    if next(_occurrences(text[lo:hi], key), None) is not None}
        ends = re.compile(re.escape(key) + rb"(?![A-Za-z0-9_\x80-\xff])")
        return {m for m, text, lo, hi in self._texts_with(key) if _has_word(text, ends, lo, hi)}

    def _texts_with(self, key: bytes):
        """(module, text, lo, hi) of each readable `.py` module whose text, `text[lo:hi]`, holds the
        bytes `key`: `text` is its bytes, or a map of `shared` (searched in place, in one pass)."""
        texts, tables = self._haystack()
        for m, text in texts:
            if key in text:
                yield m, text, 0, len(text)
        for text, table in tables:
            for m, lo, hi in holding(text, key, table):
                yield m, text, lo, hi

    def _haystack(self) -> tuple[list[tuple[str, bytes]], list]:
        """What a search of every readable `.py` module goes through, listed once: (module, text)
        of those read here or apart, by name, and (map, `SpanTable`) of those the readers put in
        `shared` (`shared_texts.py`)."""
        if self._texts_by_module is None:
            texts, spans = [], []
            for m in sorted(self.py):
                text = self._text_or_span(m)
                if type(text) is tuple:
                    spans.append((m, text))
                elif text is not None:
                    texts.append((m, text))
            self._texts_by_module = texts, (self.shared.tables(spans) if spans else [])
        return self._texts_by_module

    def _text_or_span(self, module: str) -> bytes | tuple[int, int, int] | None:
        rel = self.py[module].rel
        data = self.texts.get(rel)
        if data is None and self.shared is not None:
            data = self.shared.span(rel)
        return data if data is not None else self.text(module)

    def matches(self, pattern):
        """(module, match) for each match of the bytes `pattern` in the `.py` modules' text (one
        regular-expression pass over the tree)."""
        blob, offsets, modules = self._search_blob()
        for m in pattern.finditer(blob):
            yield modules[bisect.bisect_right(offsets, m.start()) - 1], m

    def defines(self, module: str, name: str) -> bool:
        """Does `module` define `name` at module level (not by importing it)? Settled by `ast`
        (the statements that spell it) only where an indented line could: `def name`,
        `class name`, `name = ...` inside an `if`/`try` block."""
        text = self.text(module)
        if text is None:
            return False
        # (The search for the name first: most modules a word is in do not define it, and
        # `_column_0` reads every column-0 `def` and `class` of the module.)
        if defined_at_column_0(text, name) and name in self._column_0(module):
            return True
        if not _indented_definition(text, name):
            return False
        found = self.bindings(module, name)
        return found is not None and name in found.defined

    def definers(self, names: tuple[str, ...]) -> set[str]:
        """Modules that define every one of `names` (def, class, assignment; not an import), or
        whose submodules include it (a package "binds" its submodule)."""
        key = tuple(sorted(names))
        if key in self._definers:
            return set(self._definers[key])
        result: set[str] | None = None
        for name in sorted(names, key=len, reverse=True):  # the longest name is the rarest
            found = {m for m in self._may_define(name) if self.defines(m, name)}
            found |= {m.rpartition(".")[0] for m in self.children(name) if "." in m}
            result = found if result is None else result & found
            if not result:
                break
        self._definers[key] = frozenset(result or ())
        return set(self._definers[key])


    def _may_define(self, name: str) -> set[str]:
        """The modules that spell `name` where `defines` could find it defined: as a whole word at
        a line's start, after indentation and `def`/`class` or none (`_defines_at`). A common
        word (`quant` in `quantize`) is otherwise a test of every module that merely spells it."""
        key = name.encode()
        searched = self._containing.get(key)
        if searched is not None or _IDENTIFIER.fullmatch(key) is None:
            return set(searched) if searched is not None else self.modules_containing(name)
        ends = re.compile(re.escape(key) + rb"(?![A-Za-z0-9_\x80-\xff])")
        return {m for m, text, lo, hi in self._texts_with(key) if _definition_spelled(text, len(key), ends, lo, hi)}


def _definition_spelled(text, size: int, ends, lo: int = 0, hi: int | None = None) -> bool:
    """Is a whole-word occurrence of the word `ends` finds (`size` bytes long) in `text` (its
    bytes [lo, hi)) spelled as a definition would be (`_defines_at`, on any line)?"""
    pos, hi = lo, len(text) if hi is None else hi
    while (m := ends.search(text, pos, hi)) is not None:
        start = m.start()
        if (start == lo or text[start - 1] not in _WORD) and _defines_at(text, start, size, False, lo, hi):
            return True
        pos = start + 1
    return False


def _spelling(sources: list[bytes], word: bytes) -> list[bytes]:
    """The sources that spell `word` as a whole word (only these can bind it)."""
    return [s for s in sources if word in s and next(_occurrences(s, word), None) is not None]


def _statements_bind(found: Bindings | None, name: str) -> bool | None:
    """What a module's parsed statements say of `name`: True (bound), None (unknown: it does not
    parse -- `parse-error` reports it where it matters -- or it has a `__getattr__`), False (not
    by these statements)."""
    if found is None:
        return None
    if name in found.names:
        return True
    return None if found.getattr else False


# --------------------------------------------------------------------------- a tree's definitions, by content

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# Column 0 only: a module-level definition (the text index and the blocks agree on this).
_NAME = (rb"(?:(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)"
         rb"|([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=\n]*)?=(?!=))")
# The first line, then every line after a newline: `re` skips to each `\n` at C speed, where a
# multi-line `^` is tried at every byte (the same matches, in far less time).
_FIRST_NAME_RE = re.compile(_NAME)
_NAME_RE = re.compile(rb"\n" + _NAME)
# Matched where a statement starts (`pattern.match(text, pos)`: no `^`, which `pos` does not satisfy).
_BLOCK_RE = re.compile(r"(?:(async[ \t]+def|def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)"
                       r"|([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=\n]*)?=(?!=))")
# A statement at column 0: after a newline, a line that is not blank and does not start with
# ` \t#)]}` (`\s` is `str.strip()`'s whitespace); the first line is matched on its own.
_STATEMENT_RE = re.compile(r"\n(?=[^ \t#)\]}\n])(?!\s*$)", re.M)
_FIRST_STATEMENT_RE = re.compile(r"(?=[^ \t#)\]}\n])(?!\s*$)", re.M)
# The line breaks of `str.splitlines()` other than `\n`.
_ODD_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_SPACE_RE = re.compile(r"\s+")
_CUT_RE = re.compile(r"(?<=[,:;()\[\]{}])")
_KINDS = {"def": "function", "async def": "function", "class": "class"}
_STAR_DEPTH = 16  # `from a import *` chains followed this deep (cycles are cut by a seen set too)


class Definition(Record, frozen=True):
    """A module-level `def`, `class` or assigned name. Its block is normalized and hashed on
    first use: most definitions a tree index reads are never compared."""

    name: str
    kind: str  # "function", "class" or "assignment"
    line: int
    block: str  # the source block as written, its lines joined by "\n"

    def __init__(self, name: str, kind: str, line: int, block: str) -> None:
        self.__dict__.update(name=name, kind=kind, line=line, block=block)

    @cached_property
    def lines(self) -> tuple[str, ...]:
        """The normalized block's lines (its header is read from them)."""
        return _normalized(self.block.split("\n"), self.kind != "assignment")

    @cached_property
    def flat(self) -> str:
        # Whitespace and line breaks left out, so re-wrapping a call or a reformat is no change.
        return _SPACE_RE.sub("", "".join(self.lines))

    @cached_property
    def chunks(self) -> tuple[str, ...]:
        """The block without whitespace, cut after each bracket, comma, colon."""
        return tuple(c for c in _CUT_RE.split(self.flat) if c)

    @cached_property
    def digest(self) -> str:
        """Of the normalized block."""
        import hashlib  # (start-up: 2.6 ms with `difflib`; only a tree's definitions are compared)

        return hashlib.sha1(self.flat.encode("utf-8", "surrogatepass")).hexdigest()

    @cached_property
    def size(self) -> int:
        return max(1, len(self.flat))

    # Asked again for each candidate module and each pass: parsed once.
    @cached_property
    def plain(self) -> bool:
        """(`plain_value`)"""
        return _plain_value(self)

    @cached_property
    def signature(self) -> tuple[tuple[str, ...], frozenset[str]] | None:
        """(`parameters`)"""
        return _parameters(self)


class ModuleNames(Record):
    """What one module binds at module level."""

    defined: set[str]  # by `def`, `class`, an assignment
    imported: dict[str, tuple[str, str]]  # bound -> (module, name)
    modules: dict[str, str]  # bound -> module (`import a.b as c`)
    stars: list[str]  # modules it star-imports
    other: set[str]  # bound otherwise (`for`, `with ... as`, `global`)
    dynamic: bool  # a module-level `__getattr__`
    parsed: bool

    def __init__(self, defined: set | None = None, imported: dict | None = None, modules: dict | None = None,
                 stars: list | None = None, other: set | None = None, dynamic: bool = False,
                 parsed: bool = True) -> None:
        self.__dict__.update(
            defined=set() if defined is None else defined, imported={} if imported is None else imported,
            modules={} if modules is None else modules, stars=[] if stars is None else stars,
            other=set() if other is None else other, dynamic=dynamic, parsed=parsed)

    def bound(self) -> set[str]:
        return self.defined | set(self.imported) | set(self.modules) | self.other


def similarity(a: Definition, b: Definition, floor: float = 0.0) -> float:
    """difflib's ratio of the two normalized bodies; 0.0 when its cheap upper bounds already
    fall below `floor` (a caller that ignores anything under it is spared the full match)."""
    if a.digest == b.digest:
        return 1.0
    if a.kind != b.kind:
        return 0.0
    key = (a.digest, b.digest, floor)
    found = _SIMILARITY.get(key)
    if found is None:
        # The same pair is compared again by the name pass after the module pass.
        import difflib  # (start-up: see `Definition.digest`)

        matcher = difflib.SequenceMatcher(None, a.chunks, b.chunks, autojunk=False)
        if floor and (matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor):
            found = 0.0
        else:
            found = matcher.ratio()
        _SIMILARITY[key] = found
    return found


_SIMILARITY: dict[tuple, float] = {}  # (digest, digest, floor) -> ratio: bodies, not places


def _normalized(block: list[str], has_docstring: bool) -> tuple[str, ...]:
    lines = [s for s in (line.strip() for line in block) if s and not s.startswith(("#", "import ", "from "))]
    return tuple(_without_docstring(lines) if has_docstring else lines)


def _without_docstring(lines: list[str]) -> list[str]:
    """`lines` (stripped) without the docstring: the header runs to the first line ending in `:`,
    and a string right after it is the docstring (prose: it does not make two definitions
    different code)."""
    head = next((k for k, s in enumerate(lines) if s.endswith(":")), None)
    if head is None or head + 1 >= len(lines):
        return lines
    first = lines[head + 1].lstrip("rRuUbB")
    quote = first[:3] if first[:3] in ('"""', "'''") else None
    if not quote:
        return lines
    end = head + 1
    if not (len(first) >= 6 and first.endswith(quote)):
        end = next((k for k in range(head + 2, len(lines)) if lines[k].endswith(quote)), len(lines) - 1)
    return lines[:head + 1] + lines[end + 1:]


def parameters(d: Definition) -> tuple[tuple[str, ...], frozenset[str]] | None:
    """A function's parameter names in order (annotations and defaults left out) and the
    required ones, read from its header; None for a class, an assignment, or a header that does
    not parse."""
    return d.signature


def _parameters(d: Definition) -> tuple[tuple[str, ...], frozenset[str]] | None:
    if d.kind != "function":
        return None
    head = []
    for line in d.lines:
        head.append(line)
        if line.endswith(":"):
            break
    try:
        node = ast.parse("\n".join(head) + "\n pass\n").body[0]
    except (SyntaxError, ValueError, RecursionError, IndexError):
        return None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = node.args
    positional = [x.arg for x in (*a.posonlyargs, *a.args)]
    required = positional[: len(positional) - len(a.defaults)]
    required += [x.arg for x, default in zip(a.kwonlyargs, a.kw_defaults) if default is None]
    names = tuple(positional) + (("*" + a.vararg.arg,) if a.vararg else ()) + \
        tuple(x.arg for x in a.kwonlyargs) + (("**" + a.kwarg.arg,) if a.kwarg else ())
    return names, frozenset(required)


def plain_value(d: Definition) -> bool:
    """An assignment of a literal (`36`, `"x"`, `None`, `True`) or an empty `{}`, `[]`, `()`,
    annotated or not: two modules can hold the same one by chance, so it says nothing about
    where a module's code went."""
    return d.plain


def _plain_value(d: Definition) -> bool:
    if d.kind != "assignment":
        return False
    try:
        node = ast.parse("\n".join(d.lines)).body[0]
    except (SyntaxError, ValueError, RecursionError, IndexError):
        return False
    value = getattr(node, "value", None) if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        value = value.operand  # `-1`
    if isinstance(value, ast.Constant):
        return True
    return isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set)) and not (
        getattr(value, "elts", None) or getattr(value, "keys", None))


def same_definition(a: Definition, b: Definition, threshold: float, signature_floor: float) -> float:
    """How strongly `b` is the same definition as `a`: their similarity when it is at least
    `threshold`, or when both are functions, `b` takes `a`'s parameters (names, in order; any
    added after them optional) and it is at least `signature_floor` (the body changed, every old
    call still fits); else 0."""
    if a.digest == b.digest:
        return similarity(a, b)
    # Whether old calls fit is settled first (a header's parse, once per definition): where they
    # do not, nothing under `threshold` counts, and difflib's cheap bounds spare more full matches.
    fits = signature_floor < threshold and _calls_fit(a, b)
    s = similarity(a, b, signature_floor if fits else threshold)
    return s if s >= threshold or (fits and s >= signature_floor) else 0.0


def _calls_fit(a: Definition, b: Definition) -> bool:
    """Do old calls of function `a` still fit `b`: the old parameters first, nothing newly required?"""
    pa, pb = parameters(a), parameters(b)
    return bool(pa and pb and pa[0] and pb[0][: len(pa[0])] == pa[0] and pb[1] <= pa[1])


def text_definitions(text: str) -> dict[str, Definition]:
    """The column-0 `def`/`class`/assignment blocks of a module's text (normalized on first use).

    A block runs from its header to the next statement at column 0: a line that is not blank and
    starts with none of ` \t#)]}` (indented, comment and closing-bracket lines stay in it). The
    lines are `str.splitlines()`'s; the statements are found by a regex over them joined by `\n`
    (a loop over every line was most of a whole tree's cost)."""
    norm = _lines_text(text)
    starts = _statements(norm)
    out: dict[str, Definition] = {}
    line, at = 1, 0
    for k, pos in enumerate(starts):
        m = _BLOCK_RE.match(norm, pos)
        if m is None or (m.group(2) or m.group(3)) in out:
            continue
        name = m.group(2) or m.group(3)
        line += norm.count("\n", at, pos)
        at = pos
        end = starts[k + 1] - 1 if k + 1 < len(starts) else len(norm)
        kind = _KINDS.get(re.sub(r"[ \t]+", " ", m.group(1)), "function") if m.group(1) else "assignment"
        out[name] = Definition(name, kind, line, norm[pos:end])
    return out


def _statements(norm: str) -> list[int]:
    """Where each column-0 statement of `norm` (lines joined by `\n`) starts."""
    starts = [m.start() + 1 for m in _STATEMENT_RE.finditer(norm)]
    if norm and _FIRST_STATEMENT_RE.match(norm):
        starts.insert(0, 0)
    return starts


def _lines_text(text: str) -> str:
    """`"\n".join(text.splitlines())`, without the copy when `\n` is the only line break."""
    if not any(c in text for c in _ODD_BREAKS):
        return text[:-1] if text.endswith("\n") else text
    return "\n".join(text.splitlines())


# --------------------------------------------------------------------------- what one module binds (TreeIndex)


def module_level(body: list) -> list:
    """Module-level statements, looking through `if`/`try`/`with` (still module level)."""
    out = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
            for name in ("body", "orelse", "finalbody"):
                out.extend(module_level(getattr(stmt, name, []) or []))
            for handler in getattr(stmt, "handlers", []):
                out.extend(module_level(handler.body))
    return out


def _names_in_target(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def read_names(tree: ast.Module | None, module: str, is_package: bool) -> ModuleNames:
    """What `tree` (the module `module`) binds at module level."""
    out = ModuleNames()
    if tree is None:
        out.parsed = False
        return out
    for stmt in module_level(tree.body):
        if not (_read_definition(out, stmt) or _read_import(out, stmt, module, is_package)):
            _read_other(out, stmt)
    return out


def _read_definition(out: ModuleNames, stmt: ast.stmt) -> bool:
    """A `def`, `class` or assignment: what it binds, into `out`; False for any other statement."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        out.defined.add(stmt.name)
        out.dynamic |= stmt.name == "__getattr__"
    elif isinstance(stmt, ast.ClassDef):
        out.defined.add(stmt.name)
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Name) and stmt.value is not None:
                out.defined.add(target.id)
            else:
                out.other.update(_names_in_target(target))
    else:
        return False
    return True


def _read_import(out: ModuleNames, stmt: ast.stmt, module: str, is_package: bool) -> bool:
    """An import: what it binds, into `out`; False for any other statement."""
    if isinstance(stmt, ast.ImportFrom):
        base = resolve_relative(module, is_package, stmt.level or 0, stmt.module)
        for a in stmt.names if base is not None else ():
            if a.name == "*":
                out.stars.append(base)
            else:
                out.imported.setdefault(a.asname or a.name, (base, a.name))
    elif isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname:
                out.modules.setdefault(a.asname, a.name)
            else:
                out.other.add(a.name.split(".", 1)[0])
    else:
        return False
    return True


def _read_other(out: ModuleNames, stmt: ast.stmt) -> None:
    """The names a `for`, `with`, `global` or `nonlocal` statement binds, into `out`."""
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        out.other.update(_names_in_target(stmt.target))
    elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
        out.other.update(stmt.names)
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            if item.optional_vars is not None:
                out.other.update(_names_in_target(item.optional_vars))


def _column0_names(data: bytes) -> set[str]:
    """The names a `def`, `class` or assignment at column 0 of `data` defines (the text index)."""
    first = _FIRST_NAME_RE.match(data)
    found = {(a or b) for a, b in _NAME_RE.findall(data)}
    if first is not None:
        found.add(first.group(1) or first.group(2))
    return {w.decode("ascii") for w in found}


# --------------------------------------------------------------------------- a tree named by derive-map or upgrade


class TreeIndex:
    """The modules of one source directory (the one that contains the top-level packages)."""

    def __init__(self, src: str, roots: list[str] | tuple[str, ...]) -> None:
        self.src = os.path.abspath(src)
        self.roots = tuple(roots)
        # A file whose path is not a dotted name (`csrc/fast-hadamard-transform/x.py`) cannot be
        # imported, so it is not a module anything refers to.
        found = discover(self.src, self.roots)
        self.files: dict[str, SourceFile] = {m: f for m, f in found.by_module.items() if _MODULE_RE.match(m)}
        # Extension modules (`.so`, `.pyd`) and stubs: modules like any other, though no source says
        # what an extension binds.
        self.compiled: set[str] = {m for m, kind in found.other_modules.items()
                                   if kind in ("extension", "stub") and _MODULE_RE.match(m) and m not in self.files}
        self._trees: dict[str, ast.Module | None] = {}
        self._names: dict[str, ModuleNames] = {}
        self._defs: dict[str, dict[str, Definition]] = {}
        self._by_name: dict[str, set[str]] | None = None

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            self._trees[module] = self._parse(module)
        return self._trees[module]

    def _parse(self, module: str) -> ast.Module | None:
        f = self.files.get(module)
        return parse_text(read_text(f.path)) if f is not None else None

    def definitions(self, module: str) -> dict[str, Definition]:
        """The module's column-0 definitions, compared by content (no parse)."""
        if module not in self._defs:
            f = self.files.get(module)
            text = read_text(f.path) if f is not None else None
            self._defs[module] = text_definitions(text) if text is not None else {}
        return self._defs[module]

    def names(self, module: str) -> ModuleNames:
        if module not in self._names:
            f = self.files.get(module)
            # Only what it binds is kept: a tree's ASTs, held, would be most of the index's memory.
            tree = self._trees[module] if module in self._trees else self._parse(module)
            self._names[module] = read_names(tree, module, bool(f and f.is_package))
        return self._names[module]

    def is_package(self, module: str) -> bool:
        f = self.files.get(module)
        return f is not None and f.is_package

    def has_module(self, module: str) -> bool:
        """A file, an extension module or stub, or a directory inside a root package (a namespace
        package)."""
        if module in self.files or module in self.compiled:
            return True
        if not _MODULE_RE.match(module) or module.split(".", 1)[0] not in self.roots:
            return False
        return os.path.isdir(os.path.join(self.src, *module.split(".")))

    def binds(self, module: str, name: str, _seen: frozenset = frozenset()) -> bool:
        """Would `from module import name` find `name` (see the module docstring)?"""
        if self.has_module(f"{module}.{name}") or implicit(name, self.is_package(module)):
            return True
        if module in self.compiled:
            return True  # unknown is not missing: what an extension module binds cannot be read
        if module not in self.files or module in _seen or len(_seen) > _STAR_DEPTH:
            return False
        if name in self.definitions(module):
            return True  # defined at column 0: read off the text, no parse
        names = self.names(module)
        if name in names.bound() or names.dynamic or not names.parsed:
            return True
        return any(self.binds(star, name, _seen | {module}) for star in names.stars if star in self.files)

    def origin(self, module: str, name: str, _seen: frozenset = frozenset()) -> tuple[str, Definition] | None:
        """Where `from module import name` gets its value from, following re-exports inside the
        tree: (defining module, definition), or None (not defined in the tree, or a submodule)."""
        if module not in self.files or (module, name) in _seen or len(_seen) > _STAR_DEPTH:
            return None
        own = self.definitions(module).get(name)
        if own is not None:
            return module, own  # defined at column 0 (a later definition wins over an import)
        names = self.names(module)
        if name in names.defined:
            d = self.definitions(module).get(name)
            return (module, d) if d is not None else None
        seen = _seen | {(module, name)}
        if name in names.imported:
            src_module, src_name = names.imported[name]
            return self.origin(src_module, src_name, seen)
        for star in names.stars:
            found = self.origin(star, name, seen)
            if found is not None:
                return found
        return None

    def defining(self, name: str) -> set[str]:
        """Modules whose text may define `name` at module level (parse to be sure)."""
        if self._by_name is None:
            self._by_name = {}
            for m, f in self.files.items():
                try:
                    data = read_capped(f.path, MAX_READ_BYTES)
                except OSError:
                    continue
                for word in _column0_names(data):
                    self._by_name.setdefault(word, set()).add(m)
        return set(self._by_name.get(name, ()))

    def definitions_of(self, name: str) -> list[tuple[str, Definition]]:
        """(module, definition) for every module of the tree that defines `name` itself."""
        out = []
        for m in sorted(self.defining(name)):
            d = self.definitions(m).get(name)
            if d is not None:
                out.append((m, d))
        return out
