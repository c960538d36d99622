"""Where each module and each module-level name of a tree lives, read with `ast` (never imported).

Used by `derive-map` (where did a module's code, or one name, go?) and by `--verify-against`
(does a rewritten import resolve in the new tree?). Files are parsed on demand; a text index of
`def`/`class`/assignment names finds the few files worth parsing for a name.

A module *binds* a name when Python's `from module import name` would succeed without running
anything unusual: it defines it (`def`, `class`, an assignment, at module level, also inside
`if`/`try`/`with`), imports it (`import x as name`, `from y import name`), re-exports it through
`from y import *` (followed inside the tree), defines a module-level `__getattr__` (anything may
resolve), or `module.name` is itself a module of the tree.

A definition is compared by more than its name, the way git compares a renamed file: its source
block (a `def`/`class`/assignment at column 0 and the indented lines under it) is normalized --
blank lines, comment lines, import lines (a moved function whose imports were updated is still
the same function) and the docstring left out, whitespace and line breaks removed (a reformat is
no change) -- and hashed. `similarity()` of two same-named definitions is 1.0 for the same
normalized block, else the `difflib` ratio of the two blocks cut into pieces after each bracket,
comma and colon. Reading blocks from the text (no parse) keeps a whole tree cheap; a
definition nested in a module-level `if`/`try` is bound (see above) but has no block to compare.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import os
import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property

from contracts.engine.bindings import implicit
from contracts.engine.discover import SourceFile, discover
from contracts.engine.files import read_capped
from contracts.engine.records import MAX_READ_BYTES
from contracts.engine.resolve import resolve_relative
from contracts.engine.scan import MAX_PARSE_BYTES, decode_source

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# Column 0 only: a module-level definition (the text index and the blocks agree on this).
_NAME = (rb"(?:(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)"
         rb"|([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=\n]*)?=(?!=))")
# The first line, then every line after a newline: `re` skips to each `\n` at C speed, where a
# multi-line `^` is tried at every byte (the same matches, a third of the time on a large tree).
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


@dataclass(frozen=True)
class Definition:
    """A module-level `def`, `class` or assigned name. Its block is normalized and hashed on
    first use: most definitions a tree index reads are never compared."""

    name: str
    kind: str  # "function", "class" or "assignment"
    line: int
    block: str  # the source block as written, its lines joined by "\n"

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


@dataclass
class ModuleNames:
    """What one module binds at module level."""

    defined: set[str] = field(default_factory=set)  # by `def`, `class`, an assignment
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # bound -> (module, name)
    modules: dict[str, str] = field(default_factory=dict)  # bound -> module (`import a.b as c`)
    stars: list[str] = field(default_factory=list)  # modules it star-imports
    other: set[str] = field(default_factory=set)  # bound otherwise (`for`, `with ... as`, `global`)
    dynamic: bool = False  # a module-level `__getattr__`
    parsed: bool = True

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
    if has_docstring:
        # The header runs to the first line ending in `:`; a string right after it is the
        # docstring (prose: it does not make two definitions different code).
        head = next((k for k, s in enumerate(lines) if s.endswith(":")), None)
        if head is not None and head + 1 < len(lines):
            first = lines[head + 1].lstrip("rRuUbB")
            quote = first[:3] if first[:3] in ('"""', "'''") else None
            if quote:
                end = head + 1
                if not (len(first) >= 6 and first.endswith(quote)):
                    end = next((k for k in range(head + 2, len(lines)) if lines[k].endswith(quote)), len(lines) - 1)
                lines = lines[:head + 1] + lines[end + 1:]
    return tuple(lines)


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


# --------------------------------------------------------------------------- one module


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
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.defined.add(stmt.name)
            if stmt.name == "__getattr__":
                out.dynamic = True
        elif isinstance(stmt, ast.ClassDef):
            out.defined.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                if isinstance(target, ast.Name) and stmt.value is not None:
                    out.defined.add(target.id)
                else:
                    out.other.update(_names_in_target(target))
        elif isinstance(stmt, ast.ImportFrom):
            base = resolve_relative(module, is_package, stmt.level or 0, stmt.module)
            if base is None:
                continue
            for a in stmt.names:
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
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            out.other.update(_names_in_target(stmt.target))
        elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
            out.other.update(stmt.names)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                if item.optional_vars is not None:
                    out.other.update(_names_in_target(item.optional_vars))
    return out


def read_text(path: str) -> str | None:
    """The text of a module to parse, or None (unreadable, undecodable, or over the parse cap: a
    tree named by `--before`/`--after`/`--verify-against` is bounded as the checked one is)."""
    try:
        return decode_source(read_capped(path, MAX_PARSE_BYTES))
    except (OSError, SyntaxError, ValueError, LookupError):
        return None


def parse_text(text: str | None) -> ast.Module | None:
    if text is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        from contracts.engine.scan import older_syntax_ast

        return older_syntax_ast(text, e)  # (a newer Python's syntax: the same names on every interpreter)


def _column0_names(data: bytes) -> set[str]:
    """The names a `def`, `class` or assignment at column 0 of `data` defines (the text index)."""
    first = _FIRST_NAME_RE.match(data)
    found = {(a or b) for a, b in _NAME_RE.findall(data)}
    if first is not None:
        found.add(first.group(1) or first.group(2))
    return {w.decode("ascii") for w in found}


# --------------------------------------------------------------------------- a tree


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
