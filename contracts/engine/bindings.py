"""Where each module and each module-level name lives: what exists, and what a module binds.

A module exists when the tree has it as a `.py` file, a directory (a package, with or without
`__init__.py`), a `.pyi` stub or an extension module (`.so`, `.pyd`, ABI-tagged names
included); `discover.py` lists all of these.

`binds(M, X)` answers whether `from M import X` finds `X`: True (a submodule `M.X`, or a binding
at module level), False (certainly not), None (unknown: an extension module, a module-level
`__getattr__`, bindings made through `globals()`/`sys.modules[__name__]`/`exec`, a star import of
something outside the checked packages). It is cheap where it can be: a name whose text does not
occur in a module cannot be bound there (only a star import could bring it, and those are
followed), and a name defined at column 0 (`def X`, `class X`, `X = ...`, a column-0 import)
is bound. Only the rest is settled by `ast` (every binding form: def, class, assignment and
annotated assignment, augmented assignment, `for`/`with`/walrus targets, imports, `global`,
`__all__` entries, in `if`/`try`/`with`/`for`/`while` blocks at module level), once per module.

`definers(names)` finds the modules that *define* every one of `names` (not merely import
them: a module re-exporting a name is not where it moved to), for "moved?" suggestions.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import warnings
from dataclasses import dataclass, field

from contracts.engine.files import read_capped, read_regular
from contracts.engine.records import MAX_READ_BYTES
from contracts.engine.resolve import resolve_relative
from contracts.engine.runtime import SYS_MODULES_WRITE, Runtime
from contracts.engine.scan import MAX_PARSE_BYTES

_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | frozenset(range(128, 256))
# A maximal run of `_WORD` bytes: what `_occurrences` finds as a whole word.
_IDENTIFIER = re.compile(rb"[A-Za-z0-9_\x80-\xff]+")
_SEARCHES_BEFORE_INDEX = 64  # a few missing names: a search each; many: the index (linear)
# Text that lets a module bind names no statement shows.
_DYNAMIC = (b"globals()", b"sys.modules[__name__]", b"vars()", b"exec(")
_DEF_HEADS = (b"def ", b"class ", b"async def ")
# What every module has without binding it (`__path__` too, for a package): never missing.
IMPLICIT_ATTRIBUTES = frozenset({"__doc__", "__file__", "__name__", "__package__", "__spec__", "__loader__",
                                 "__builtins__", "__cached__", "__annotations__", "__dict__"})


def implicit(name: str, package: bool) -> bool:
    """Is `name` an attribute Python gives a module (a package) whatever its source binds?"""
    return name in IMPLICIT_ATTRIBUTES or (package and name == "__path__")


def _states_names(stub: bytes) -> bool:
    """Does a stub state anything (an empty one, or a docstring alone, says nothing)?"""
    tree = _parse(stub)
    if tree is None:
        return True
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return bool(body)


@dataclass
class Bindings:
    """A module's names at module level, from `ast`."""

    names: set[str] = field(default_factory=set)  # bound any way, imports included
    defined: set[str] = field(default_factory=set)  # bound other than by an import
    stars: list[tuple[int, str | None]] = field(default_factory=list)  # (level, module) of `from m import *`
    getattr: bool = False  # a module-level `__getattr__`


def module_bindings(tree: ast.Module, text: bytes | None = None) -> Bindings:
    """The module-level bindings of `tree`. `text`, its source, spares walks for forms its text
    cannot hold (`global`, `:=`)."""
    out = Bindings()
    has_global = text is None or b"global" in text
    has_walrus = text is None or b":=" in text

    def bind(name: str, defined: bool = True) -> None:
        out.names.add(name)
        if defined:
            out.defined.add(name)

    def targets(node) -> None:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                bind(sub.id)

    def walrus(node) -> None:
        if not has_walrus:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                bind(sub.target.id)

    def block(body) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bind(stmt.name)
                if stmt.name == "__getattr__":
                    out.getattr = True
                if has_global:
                    for sub in ast.walk(stmt):  # `global X` in a function binds X when it runs
                        if isinstance(sub, ast.Global):
                            for name in sub.names:
                                bind(name)
            elif isinstance(stmt, ast.ClassDef):
                bind(stmt.name)
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    bind(alias.asname or alias.name.split(".", 1)[0], defined=False)
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if alias.name == "*":
                        out.stars.append((stmt.level or 0, stmt.module))
                    else:
                        bind(alias.asname or alias.name, defined=False)
            elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                    targets(target)
                    if isinstance(target, ast.Name) and target.id == "__getattr__":
                        out.getattr = True
                    if isinstance(target, ast.Name) and target.id == "__all__" and stmt.value is not None:
                        all_names(stmt.value)
                if stmt.value is not None:
                    walrus(stmt.value)
            elif isinstance(stmt, ast.Expr):
                walrus(stmt.value)
                call = stmt.value
                # `__all__.extend([...])`, `__all__.append("x")`
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                        isinstance(call.func.value, ast.Name) and call.func.value.id == "__all__":
                    for arg in call.args:
                        all_names(arg)
            elif isinstance(stmt, ast.Global):
                for name in stmt.names:
                    bind(name)
            else:
                if isinstance(stmt, (ast.For, ast.AsyncFor)):
                    targets(stmt.target)
                elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                    for item in stmt.items:
                        if item.optional_vars is not None:
                            targets(item.optional_vars)
                for name in ("test", "iter", "subject"):
                    value = getattr(stmt, name, None)
                    if isinstance(value, ast.AST):
                        walrus(value)
                for name in ("body", "orelse", "finalbody"):
                    value = getattr(stmt, name, None)
                    if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                        block(value)
                for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
                    block(part.body)

    def all_names(value) -> None:
        for sub in ast.walk(value):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value.isidentifier():
                bind(sub.value, defined=False)  # declared, defined elsewhere

    block(tree.body)
    return out


def _dynamic(text: bytes) -> bool:
    """Can `text` bind names no statement shows (`globals()`, `exec`, a `sys.modules` write)?"""
    return any(marker in text for marker in _DYNAMIC) or (
        b"sys.modules" in text and SYS_MODULES_WRITE.search(text) is not None)


def _parse(data: bytes) -> ast.Module | None:
    """`data`'s tree, or None: it does not parse, or it is over the parse cap (a module of a
    `--verify-against` tree is bounded as a checked file is: ~120 bytes of memory per byte)."""
    if len(data) > MAX_PARSE_BYTES:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        from contracts.engine.scan import older_syntax_ast

        return older_syntax_ast(data, e)  # (a newer Python's syntax: the same names on every interpreter)


def _occurrences(text: bytes, word: bytes):
    """Offsets of `word` in `text` as a whole identifier."""
    n, k = len(text), len(word)
    pos = text.find(word)
    while pos >= 0:
        end = pos + k
        if (pos == 0 or text[pos - 1] not in _WORD) and (end >= n or text[end] not in _WORD):
            yield pos
        pos = text.find(word, end)


def defs_at_column_0(text: bytes) -> set[str]:
    """The names of the `def`s and `class`es that start a line at column 0."""
    out = set()
    for head in (b"\ndef ", b"\nclass ", b"\nasync def "):
        if text.startswith(head[1:]):
            text = b"\n" + text
        pos = text.find(head)
        while pos >= 0:
            end = start = pos + len(head)
            word = _IDENTIFIER.match(text, start)  # (one call, not a loop over its bytes)
            if word is not None:
                end = word.end()
                out.add(word.group().decode("utf-8", "replace"))
            pos = text.find(head, end)
    return out


# `^[ \t]*`, a definition head or none, then a whole word: every place `defined_at_column_0`
# and `_indented_definition` look at, found in one pass over a text.
_DEFINITION_START = re.compile(rb"^([ \t]*)(def |class |async def )?([A-Za-z0-9_\x80-\xff]+)", re.M)
_DEFINED: dict[int, tuple[bytes, frozenset, frozenset]] = {}  # id(text) -> (text, column 0, any)
_MAX_DEFINED = 16


def _definitions(text: bytes) -> tuple[frozenset, frozenset]:
    """(names `text` may define at column 0, names it may define on any line), each found once
    per text: asking per name searched the whole text each time, so a file importing 10,000
    missing names cost 10,000 searches of itself (20,000 names: 45 s)."""
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
    line costs as much as ~30 of them, and most texts are asked about one or two names)."""
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


def _defines_at(text: bytes, pos: int, size: int, column_0: bool) -> bool:
    """Is the whole word at `pos` what `_DEFINITION_START` would capture there, followed by what
    `_definitions` takes for a definition (the same test, on one occurrence)?"""
    start = text.rfind(b"\n", 0, pos) + 1
    prefix = text[start:pos]
    head = prefix.lstrip(b" \t")
    if head not in _HEADS or (column_0 and len(head) != len(prefix)):
        return False
    if head:
        return True
    after = text[pos + size:pos + size + 4].lstrip(b" \t")
    return _assigns(after, (b"=", b":") if column_0 else (b"=", b":", b","))


_HEADS = (b"", b"def ", b"class ", b"async def ")


class ModuleIndex:
    """What exists in a tree and what its modules bind. `texts`: rel path -> content already
    read (others are read on demand); `statements`: module -> the import statements the text
    pass read (`import_lines`), used for column-0 imports and star imports."""

    def __init__(self, src: str, discovery, texts: dict[str, bytes] | None = None,
                 statements: dict | None = None) -> None:
        self.src = src
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
        self.defs: dict[str, set[str]] = {}  # module -> `defs_at_column_0` of its `.py`, read already
        self.runtime = Runtime(self)
        self._definers: dict[tuple[str, ...], frozenset[str]] = {}
        self._stubs: dict[str, bytes | None] = {}
        self._containing: dict[bytes, frozenset[str]] = {}
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
        data = self.texts.get(f.rel)
        if data is None:
            try:
                data = read_capped(f.path, MAX_READ_BYTES)
            except OSError:
                return None
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
                from contracts.engine.window import keep_hot_statements

                kept = keep_hot_statements(data, (name.encode(), b"__getattr__"))
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
        expression over every line costs ten times more)."""
        found = self._import_bound.get(module)
        if found is None:
            found = {name for s in self.statements.get(module, ()) if s.indent == 0 for name in s.bound}
            defs = self.defs.get(module)
            if defs is None:
                text = self.text(module)
                defs = defs_at_column_0(text) if text is not None else ()
            found.update(defs)
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
        if self.exists(f"{module}.{name}") or implicit(name, self.is_package(module)):
            return True
        kind = self.other.get(module)
        sources = self._sources(module, kind)
        if sources is None:
            return None
        if not sources:
            return False  # a namespace directory binds nothing but its submodules
        if name in self._column_0(module):
            return True
        word = name.encode()
        present = [s for s in sources if word in s and next(_occurrences(s, word), None) is not None]
        if any(defined_at_column_0(s, name) for s in present):  # `name = ...` at column 0
            return True
        if any(_dynamic(s) for s in sources):
            return None
        # Parse it all when the text pass did not read all of it (or there is a stub).
        whole = module in self.unsure or module not in self.py or len(sources) > 1 or kind == "extension"
        if present or whole or any(b"__getattr__" in s for s in sources):
            found = self.bindings(module, None if whole else name)
            if found is None:
                return None  # cannot be parsed: reported by `parse-error` where it matters
            if name in found.names:
                return True
            if found.getattr:
                return None
        if whole:
            stars = found.stars
        else:  # the text pass read every statement of the file: its star imports are these
            stars = [(s.level, s.module) for s in self.statements.get(module, ())
                     if s.kind == "from" and "*" in s.names]
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
            if full in seen:
                continue
            if name.startswith("_") and b"__all__" not in (self.text(full) or b""):
                continue  # a star import brings a private name only when `__all__` lists it
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
        is the tree's size times the words: 147,000 missing names ran over 30 minutes)."""
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
        found = set()
        for m in sorted(self.py):
            text = self.text(m)
            if text is not None and key in text and next(_occurrences(text, key), None) is not None:
                found.add(m)
        return found

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
            found = {m for m in self.modules_containing(name) if self.defines(m, name)}
            found |= {m.rpartition(".")[0] for m in self.children(name) if "." in m}
            result = found if result is None else result & found
            if not result:
                break
        self._definers[key] = frozenset(result or ())
        return set(self._definers[key])
