"""`--fix` / `--diff`: rewrite references to a removed module to the module that replaced it.

Works from the run's `removed-module` findings: each one names a place (line, column), what it
referenced and, when `replacements` knows it, the new module. The source is edited through
LibCST's concrete syntax tree, so everything but the rewritten names -- aliases, parentheses,
comments, blank lines, line endings, the encoding -- comes back byte for byte. Only the smallest
statements that hold a finding go through LibCST; the rest of the file is never re-rendered.

What is rewritten, and how:

- `from old.mod import a, b as c` -> `from new.mod import a, b as c`;
- `import old.mod as m` -> `import new.mod as m`;
- `from old import mod` -> `from new.parent import mod` (the bound name is kept; an `as` is
  added when the new module has another name); names that move to different places are split
  into one statement each, at the same place;
- relative imports that resolve into the removed path -> the absolute new path;
- string literals that are exactly a target (`"old.mod"`, `"old.mod:attr"`,
  `importlib.import_module("old.mod")`), in the same quotes;
- a bare `import old.mod`: the statement and every `old.mod.x` chain that uses the name it binds,
  but only when every use of that name is accounted for (see `_bare_import_verdicts`); otherwise
  the finding is reported as not auto-fixable, with the reason, and that import is left alone.

A file is written only when it has a fixable finding, only after the new text compiles, and
atomically (a temporary file in the same directory, then `os.replace`), with the same
permission bits. A finding with no replacement is reported, never guessed.
"""

from __future__ import annotations

import ast
import difflib
import io
import os
import re
import stat
import sys
import tokenize
import warnings
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ExpressionContext, ExpressionContextProvider, MetadataWrapper, PositionProvider

from contracts.engine.files import atomic_write
from contracts.engine.resolve import is_under, resolve_relative
from contracts.findings import Finding

RULE_ID = "removed-module"  # the rule whose findings this fixes (`contracts.rules.removed_module`)

_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")

Key = tuple  # (line, 1-based UTF-8 column, imported): how a finding is matched to a node


@dataclass
class FileFix:
    """What `fix_source` did to one file."""

    new: bytes | None  # None: the file stays as it is
    fixed: list[Finding] = field(default_factory=list)
    unfixable: list[tuple[Finding, str]] = field(default_factory=list)


# --------------------------------------------------------------------------- the syntax tree


def _dotted(node) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr.value}"
    return None


def _chain_nodes(node) -> list:
    """The nodes of a dotted chain, outermost first: `a.b.c`, `a.b`, `a`."""
    out = []
    while isinstance(node, cst.Attribute):
        out.append(node)
        node = node.value
    out.append(node)
    return out


def _expr(dotted: str):
    return cst.parse_expression(dotted)


def _root(dotted: str) -> str:
    return dotted.split(".", 1)[0]


class _Positions:
    """Where a node of a parsed chunk is in the file. LibCST columns count characters; `ast`
    (hence the findings) counts UTF-8 bytes."""

    def __init__(self, text: str, positions, first_line: int) -> None:
        self.lines = _NEWLINE_RE.split(text)
        self.positions = positions
        self.offset = first_line - 1

    def key(self, node, imported: str) -> Key | None:
        start = self.positions[node].start
        line = self.lines[start.line - 1] if start.line - 1 < len(self.lines) else ""
        return (start.line + self.offset, len(line[: start.column].encode("utf-8")) + 1, imported)

    def line(self, node) -> int:
        return self.positions[node].start.line + self.offset


@dataclass
class _Chain:
    dotted: str
    line: int
    context: object  # ExpressionContext of the outermost node
    nodes: list  # outermost first


class _Survey(cst.CSTVisitor):
    """First pass: bare `import a.b.c` statements, every dotted chain, what the file imports."""

    def __init__(self, pos: _Positions, ctx, module: str, is_package: bool) -> None:
        self.pos, self.ctx, self.module, self.is_package = pos, ctx, module, is_package
        self.bare: list[tuple[Key, str]] = []  # (key, module) of `import a.b.c` without `as`
        self.chains: list[_Chain] = []
        self.loaded: set[str] = set()  # modules this file's import statements load
        self._inside: set[int] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = _dotted(alias.name)
            self.loaded.add(name)
            if alias.asname is None:
                self.bare.append((self.pos.key(node, name), name))
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        base = resolve_relative(self.module, self.is_package, len(node.relative),
                                _dotted(node.module) if node.module is not None else None)
        if base:
            self.loaded.add(base)
            if not isinstance(node.names, cst.ImportStar):
                self.loaded.update(f"{base}.{a.name.value}" for a in node.names)
        return False

    def _chain(self, node) -> None:
        if id(node) in self._inside or self.ctx.get(node) is None:
            return
        dotted = _dotted(node)
        if dotted is None:
            return
        nodes = _chain_nodes(node)
        self._inside.update(id(n) for n in nodes)
        self.chains.append(_Chain(dotted, self.pos.line(node), self.ctx.get(node), nodes))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._chain(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._chain(node)


def _bindings(tree: ast.Module) -> dict[str, int]:
    """Names the file binds (first line), other than by `import a.b` (which binds `a` to the
    same top-level package whatever `a.b` is)."""
    bound: dict[str, int] = {}

    def add(name, node):
        if name and name not in bound:
            bound[name] = getattr(node, "lineno", 0)

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            add(node.id, node)
        elif isinstance(node, ast.arg):
            add(node.arg, node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname:
                    add(alias.asname, node)
                elif isinstance(node, ast.ImportFrom) and alias.name != "*":
                    add(alias.name, node)
        elif isinstance(node, ast.ExceptHandler):
            add(node.name, node)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            add(node.name, node)
        elif isinstance(node, ast.MatchMapping):
            add(node.rest, node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                add(name, node)
    return bound


def _bare_import_verdicts(survey: _Survey, bound: dict[str, int], fixable: dict[Key, Finding],
                          removed: tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """Decide, per bare-imported module `M` with a replacement, whether `import M` and its chains
    can be rewritten. Returns ({M: new}, {M: reason not to}).

    `import a.b.c` binds `a`; code then reaches the module as `a.b.c.f`. Rewriting the import and
    every chain under `a.b.c` is exact only if `a` means that package everywhere in the file and
    no use of `a` depends on what the old import happened to load. So it is refused when `a` is
    bound any other way (assignment, parameter, `as a`, `def a`, `global a`), when `a.b.c` itself
    is assigned or deleted, when a chain reaches the removed path other than through an imported
    module (`a.b` alone, `a.b.other`), when a chain uses `a` through a module this file never
    imports (`a.other`: it worked only because some import loaded it), and, when the new path
    starts with another name, when `a` is used for anything else or that name is bound.
    """
    targets: dict[str, str] = {}
    for key, module in survey.bare:
        finding = fixable.get(key)
        if finding is not None:
            targets[module] = finding.replacement
    if not targets:
        return {}, {}
    all_bare = {m for _, m in survey.bare}
    reasons: dict[str, str] = {}

    def refuse(module: str, reason: str) -> None:
        reasons.setdefault(module, reason)

    for module, new in targets.items():
        old_root, new_root = _root(module), _root(new)
        if old_root in bound:
            refuse(module, f"`{old_root}` is also bound at line {bound[old_root]}, so a "
                           f"`{module}.…` chain may not mean the module")
        if new_root != old_root and new_root in bound:
            refuse(module, f"the new path starts with `{new_root}`, which this file binds at line "
                           f"{bound[new_root]}")
    for chain in survey.chains:
        root = _root(chain.dotted)
        owners = [m for m in all_bare if is_under(chain.dotted, m)]
        owner = max(owners, key=len) if owners else None
        for module, new in targets.items():
            if _root(module) != root:
                continue
            if owner == module:
                if chain.dotted == module and chain.context in (ExpressionContext.STORE, ExpressionContext.DEL):
                    refuse(module, f"line {chain.line} assigns to or deletes `{module}`")
                continue
            if owner is not None:
                continue  # a chain of another bare import: that finding's business
            if any(is_under(chain.dotted, p) for p in removed):
                refuse(module, f"`{chain.dotted}` (line {chain.line}) reaches the removed path, "
                               f"but not through a module this file imports")
            elif _root(new) != root:
                refuse(module, f"`{chain.dotted}` (line {chain.line}) uses `{root}`, which the "
                               f"rewritten import (`{new}`) would no longer bind")
            elif chain.dotted != root and not any(
                    is_under(chain.dotted, m) or is_under(m, chain.dotted) for m in survey.loaded
                    if not any(is_under(m, p) for p in removed)):
                refuse(module, f"`{chain.dotted}` (line {chain.line}) uses the name `{root}` this "
                               f"import binds, through a module this file does not import")
    return {m: new for m, new in targets.items() if m not in reasons}, reasons


class _Rewriter(cst.CSTTransformer):
    """Second pass: rewrite the matched imports, strings and chains."""

    def __init__(self, pos: _Positions, module: str, is_package: bool, fixable: dict[Key, Finding],
                 known: set[Key], bare_ok: dict[str, str] | None = None, survey: _Survey | None = None) -> None:
        self.pos, self.module, self.is_package = pos, module, is_package
        self.fixable, self.known, self.bare_ok = fixable, known, bare_ok or {}
        self.claimed: set[Key] = set()
        self.refused: dict[Key, str] = {}
        self._split_lines: set[int] = set()
        # id(node) -> new dotted name, for the `M` part of each `M.x.y` chain that is rewritten:
        # a chain belongs to the longest bare-imported module it starts with.
        self._chain_sites: dict[int, str] = {}
        all_bare = {m for _, m in survey.bare} if survey else set()
        for chain in survey.chains if survey else ():
            owners = [m for m in all_bare if is_under(chain.dotted, m)]
            owner = max(owners, key=len) if owners else None
            if owner in self.bare_ok:
                node = chain.nodes[chain.dotted.count(".") - owner.count(".")]
                self._chain_sites[id(node)] = self.bare_ok[owner]

    # ---- chains under a rewritten bare import

    def _chain_site(self, original, updated):
        new = self._chain_sites.get(id(original))
        if new is None:
            return updated
        return _expr(new).with_changes(lpar=updated.lpar, rpar=updated.rpar)

    def leave_Attribute(self, original, updated):
        return self._chain_site(original, updated)

    def leave_Name(self, original, updated):
        return self._chain_site(original, updated)

    # ---- import a.b.c [as x]

    def visit_Import(self, node) -> bool:
        return False  # its names are not chains

    def leave_Import(self, original: cst.Import, updated: cst.Import):
        names = []
        changed = False
        for alias in updated.names:
            old = _dotted(alias.name)
            key = self.pos.key(original, old)
            finding = self.fixable.get(key)
            if finding is not None and (alias.asname is not None or old in self.bare_ok):
                names.append(alias.with_changes(name=_expr(finding.replacement)))
                self.claimed.add(key)
                changed = True
            else:
                names.append(alias)
        return updated.with_changes(names=names) if changed else updated

    # ---- from x import a, b as c

    def visit_ImportFrom(self, node) -> bool:
        return False

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom):
        module_name = _dotted(original.module) if original.module is not None else None
        base = resolve_relative(self.module, self.is_package, len(original.relative), module_name)
        if base is None:
            return updated
        star = isinstance(original.names, cst.ImportStar)
        aliases = [None] if star else list(original.names)
        # (target module or None for "as it was", alias node) per name, in order
        placed: list[tuple[str | None, int, object]] = []
        for index, alias in enumerate(aliases):
            name = None if alias is None else alias.name.value
            sub_key = self.pos.key(original, f"{base}.{name}") if name else None
            base_key = self.pos.key(original, base)
            if sub_key is not None and (sub_key in self.fixable or sub_key in self.known):
                key = sub_key
            else:
                key = base_key
            finding = self.fixable.get(key)
            if finding is None:
                placed.append((None, index, alias))
                continue
            new = finding.replacement
            if key == base_key:
                placed.append((new, index, alias))
            else:
                parent, _, last = new.rpartition(".")
                if not parent:
                    self.refused[key] = f"the new module `{new}` has no parent package to import it from"
                    placed.append((None, index, alias))
                    continue
                asname = alias.asname
                if asname is None and last != name:
                    asname = cst.AsName(name=cst.Name(name))
                placed.append((parent, index, alias.with_changes(name=cst.Name(last), asname=asname)))
            self.claimed.add(key)
        if all(target is None for target, _, _ in placed):
            return updated
        groups: dict[str | None, list] = {}
        for target, index, alias in placed:
            groups.setdefault(target, []).append((index, alias))
        statements = []
        for i, (target, group) in enumerate(groups.items()):
            node = updated if i == 0 else updated.with_changes(
                whitespace_after_from=cst.SimpleWhitespace(" "), semicolon=cst.MaybeSentinel.DEFAULT)
            if target is not None:
                node = node.with_changes(module=_expr(target), relative=[])
            if not star:
                node = _with_names(node, group, list(original.names))
            statements.append(node)
        if len(statements) == 1:
            return statements[0]
        statements = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in statements[:-1]] + [
            statements[-1].with_changes(semicolon=updated.semicolon)]
        self._split_lines.add(id(original))
        return cst.FlattenSentinel(statements)

    def leave_SimpleStatementLine(self, original, updated):
        # One `from` statement split into several: one line each, at the same indentation, each
        # keeping the trailing comment (a noqa comment applies to every part).
        if len(original.body) == 1 and id(original.body[0]) in self._split_lines:
            first = updated.with_changes(body=[updated.body[0]])
            rest = [cst.SimpleStatementLine(body=[s], trailing_whitespace=updated.trailing_whitespace)
                    for s in updated.body[1:]]
            return cst.FlattenSentinel([first, *rest])
        return updated

    # ---- string targets

    def leave_SimpleString(self, original: cst.SimpleString, updated):
        value = original.evaluated_value
        if not isinstance(value, str):
            return updated
        key = self.pos.key(original, value)
        finding = self.fixable.get(key)
        if finding is None:
            return updated
        self.claimed.add(key)
        return updated.with_changes(value=f"{original.prefix}{original.quote}{finding.replacement}{original.quote}")

    def leave_ConcatenatedString(self, original: cst.ConcatenatedString, updated):
        try:
            value = original.evaluated_value
        except Exception:  # an f-string part
            return updated
        if isinstance(value, str):
            key = self.pos.key(original, value)
            if key in self.fixable:
                self.refused[key] = "the string target is split over adjacent literals; join it by hand"
        return updated


def _with_names(node: cst.ImportFrom, group: list, everything: list) -> cst.ImportFrom:
    """`node` importing only `group` ((original index, alias) pairs): the commas between them as
    they were; after the last, what followed the original last name (nothing, or the trailing
    comma before `)`). A name's own comment stays with it."""
    last_index = len(everything) - 1
    original_last = everything[-1]
    names = []
    for i, (index, alias) in enumerate(group):
        if i < len(group) - 1:
            if not isinstance(alias.comma, cst.Comma):
                alias = alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            names.append(alias)
            continue
        if index == last_index:
            names.append(alias)
            continue
        own = alias.comma  # a Comma: this name was not last
        own_ws = own.whitespace_after if isinstance(own, cst.Comma) else None
        if isinstance(original_last.comma, cst.Comma):  # a trailing comma before `)`
            ending = original_last.comma.whitespace_after
            if isinstance(own_ws, cst.ParenthesizedWhitespace) and isinstance(ending, cst.ParenthesizedWhitespace):
                own = own.with_changes(whitespace_after=own_ws.with_changes(
                    indent=ending.indent, last_line=ending.last_line))
            else:
                own = original_last.comma
            names.append(alias.with_changes(comma=own))
        elif isinstance(own_ws, cst.ParenthesizedWhitespace) and node.rpar is not None and \
                isinstance(node.rpar.whitespace_before, cst.ParenthesizedWhitespace):
            # `(\n    a,  # why\n    b\n)` without `b`: keep `a`'s comma and comment, end at `)`.
            ending = node.rpar.whitespace_before
            names.append(alias.with_changes(comma=own.with_changes(whitespace_after=own_ws.with_changes(
                indent=ending.indent, last_line=ending.last_line))))
            node = node.with_changes(rpar=node.rpar.with_changes(whitespace_before=cst.SimpleWhitespace("")))
        else:
            names.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
    return node.with_changes(names=names)


# --------------------------------------------------------------------------- one file


def _span(stmt: ast.stmt) -> tuple[int, int]:
    first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    return first, stmt.end_lineno or stmt.lineno


def _child_lists(stmt: ast.stmt):
    for name in ("body", "orelse", "finalbody"):
        value = getattr(stmt, name, None)
        if value and isinstance(value[0], ast.stmt):
            yield value
    for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield part.body


def _stands_alone(stmts: list, i: int, lines: list[str]) -> bool:
    """Does `stmts[i]` own its lines: only indentation before it, no `;` neighbour?"""
    first, last = _span(stmts[i])
    text = lines[first - 1]
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    stmt = stmts[i]
    starts_line = text.lstrip(" \t").startswith("@") if getattr(stmt, "decorator_list", None) \
        else stmt.col_offset == len(indent)
    if not starts_line:
        return False
    if i > 0 and _span(stmts[i - 1])[1] >= first:
        return False
    return not (i + 1 < len(stmts) and _span(stmts[i + 1])[0] <= last)


def _pieces(tree: ast.Module, lines: list[str], wanted: set[int]) -> list[tuple[int, int]]:
    """The smallest statements that hold the `wanted` lines and own their lines, as (first, last)
    line ranges, outermost kept where they nest. LibCST parses only these (a whole large file
    costs it seconds); everything else is not touched."""
    # Top level: statements that share a line (`a = 1; import b`) go together.
    top: list[list[int]] = []
    for stmt in tree.body:
        first, last = _span(stmt)
        if top and first <= top[-1][1]:
            top[-1][1] = max(top[-1][1], last)
        else:
            top.append([first, last])
    found: set[tuple[int, int]] = set()
    for line in wanted:
        best = next(((a, b) for a, b in top if a <= line <= b), None)
        stmts = tree.body
        while stmts:
            hit = next((i for i, s in enumerate(stmts) if _span(s)[0] <= line <= _span(s)[1]), None)
            if hit is None:
                break
            if stmts is not tree.body and _stands_alone(stmts, hit, lines):
                best = _span(stmts[hit])
            stmts = next((body for body in _child_lists(stmts[hit])
                          if any(_span(s)[0] <= line <= _span(s)[1] for s in body)), None)
        if best is not None:
            found.add(best)
    ranges = sorted(found, key=lambda r: (r[0], -r[1]))
    out: list[tuple[int, int]] = []
    for first, last in ranges:
        if out and first <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def _newline_of(line: str) -> str:
    return "\r\n" if line.endswith("\r\n") else "\r" if line.endswith("\r") else "\n"


def _bare_keys(tree: ast.Module, fixable: dict[Key, Finding]) -> bool:
    """Does a fixable finding sit on a bare `import a.b.c` (whose chains the whole file uses)?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is None and (node.lineno, node.col_offset + 1, alias.name) in fixable:
                    return True
    return False


def fix_source(data: bytes, module: str, is_package: bool, findings: list[Finding],
               removed: tuple[str, ...], path: str = "<file>") -> FileFix:
    """Rewrite one file's `removed-module` findings. Pure: takes bytes, returns bytes.

    Only the top-level statements that hold a finding go through LibCST (parsing a whole large
    file costs seconds); the rest of the file is not touched at all. A file with a bare
    `import a.b.c` to fix is parsed whole: its chains can be anywhere.
    """
    result = FileFix(None)
    fixable: dict[Key, Finding] = {}
    for f in findings:
        if f.replacement is None:
            result.unfixable.append((f, f"`replacements` names no new place for `{f.imported}`; "
                                        f"add a line for it to the contract"))
        else:
            fixable[(f.line, f.col, f.imported)] = f
    if not fixable:
        return result
    known = {(f.line, f.col, f.imported) for f in findings}

    def refuse_all(reason: str) -> FileFix:
        result.unfixable.extend((f, reason) for f in fixable.values())
        return result

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
        if text.encode(encoding) != data:
            return refuse_all(f"the file does not survive decoding as {encoding}; left unchanged")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text.lstrip("\ufeff"))
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return refuse_all(f"the file cannot be parsed ({first}); left unchanged")
    lines = _LINE_RE.findall(text)
    whole = _bare_keys(tree, fixable)
    pieces = [(1, len(lines))] if whole else _pieces(tree, lines, {key[0] for key in fixable})
    new_lines = list(lines)
    claimed: set[Key] = set()
    refused: dict[Key, str] = {}
    # Replace from the end, so earlier line numbers stay valid in `new_lines`.
    for first, last in reversed(pieces):
        chunk = "".join(lines[first - 1:last])
        indent = "" if whole else chunk[: len(chunk) - len(chunk.lstrip(" \t"))]
        # An indented statement is parsed inside `if True:`, so that statements split from it
        # get its indentation; the wrapper line is dropped again below.
        wrapper_line = f"if True:{_newline_of(lines[first - 1])}" if indent else ""
        try:
            chunk_tree = cst.parse_module(wrapper_line + chunk)
            wrapper = MetadataWrapper(chunk_tree, unsafe_skip_copy=True)
            pos = _Positions(wrapper_line + chunk, wrapper.resolve(PositionProvider),
                             first - (1 if wrapper_line else 0))
            bare_ok: dict[str, str] = {}
            survey = None
            if whole:
                survey = _Survey(pos, wrapper.resolve(ExpressionContextProvider), module, is_package)
                chunk_tree.visit(survey)
                bare_ok, bare_refused = _bare_import_verdicts(survey, _bindings(tree), fixable, removed)
                for key, name in survey.bare:
                    if key in fixable and name in bare_refused:
                        refused[key] = f"bare `import {name}`: {bare_refused[name]}; rewrite it by hand"
            rewriter = _Rewriter(pos, module, is_package, fixable, known, bare_ok, survey)
            new_chunk = chunk_tree.visit(rewriter).code
            if wrapper_line:
                if not new_chunk.startswith(wrapper_line):
                    raise ValueError("the rewrite changed the wrapper line")
                new_chunk = new_chunk[len(wrapper_line):]
        except RecursionError:
            return refuse_all("nesting too deep to rewrite safely; left unchanged")
        except Exception as e:  # e.g. LibCST cannot parse what `ast` could: leave the file alone
            first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return refuse_all(f"cannot rewrite lines {first}-{last} ({first_line}); left unchanged")
        claimed |= rewriter.claimed
        refused.update(rewriter.refused)
        if new_chunk != chunk:
            new_lines[first - 1:last] = [new_chunk]
    for key, finding in sorted(fixable.items()):
        if key in claimed and key not in refused:
            result.fixed.append(finding)
        else:
            result.unfixable.append((finding, refused.get(
                key, "no import statement or string literal this tool can rewrite was found here")))
    if not result.fixed:
        return result
    new = "".join(new_lines).encode(encoding)
    if new == data:
        return result
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(new, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        reason = f"the rewritten file would not compile ({type(e).__name__}: {e}); left unchanged"
        result.unfixable = [(f, reason) for f in result.fixed] + result.unfixable
        result.fixed = []
        return result
    result.new = new
    return result


# --------------------------------------------------------------------------- writing


def write_atomic(path: str, data: bytes, expected: os.stat_result) -> None:
    """Replace `path` with `data`: a temporary file in the same directory, fsync, same permission
    bits, then `os.replace`. Refuses read-only files and files changed since they were read.
    Raises OSError; the original is then untouched."""
    real = os.path.realpath(path)  # a symlinked file: write the file, keep the link
    st = os.stat(real)
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(real, os.W_OK):
        raise PermissionError(f"{path} is read-only")
    if (st.st_mtime_ns, st.st_size) != (expected.st_mtime_ns, expected.st_size):
        raise OSError(f"{path} changed while it was being fixed; run again")
    atomic_write(real, data, mode=st.st_mode, fsync=True)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def apply_fixes(cfg, src: str, result, write: bool, out=None) -> int:
    """Fix (write=True) or show as a unified diff (write=False) every fixable `removed-module`
    finding of `result`. Prints one line per rewritten file and per finding left, then a summary;
    returns 0 when nothing is left to fix by hand, 1 otherwise."""
    out = out if out is not None else sys.stdout
    notes = out if write else sys.stderr  # with --diff, stdout is the patch alone
    removed = tuple(p for spec in cfg.removed for p in spec.removed)
    by_path: dict[str, list[Finding]] = {}
    for f in result.findings:
        if f.rule == RULE_ID:
            by_path.setdefault(f.path, []).append(f)
    n_fixed = n_files = 0
    left: list[tuple[Finding, str]] = []
    for rel in sorted(by_path):
        path = os.path.join(src, *rel.split("/"))
        is_package = rel.rsplit("/", 1)[-1] == "__init__.py"
        findings = sorted(by_path[rel])
        try:
            st = os.stat(path)
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as e:
            left.extend((f, f"cannot read the file: {e.strerror or e}") for f in findings)
            continue
        outcome = fix_source(data, findings[0].importer, is_package, findings, removed, path)
        if outcome.new is not None:
            if write:
                try:
                    write_atomic(path, outcome.new, st)
                except OSError as e:
                    reason = f"cannot write the file ({e.strerror or e}); left unchanged"
                    outcome.unfixable = [(f, reason) for f in outcome.fixed] + outcome.unfixable
                    outcome.fixed = []
            else:
                out.write(_diff(rel, data, outcome.new))
        if outcome.fixed:
            n_fixed += len(outcome.fixed)
            n_files += 1
            print(f"{rel}: {'fixed' if write else 'would fix'} {_plural(len(outcome.fixed), 'import')}",
                  file=notes)
        for f, reason in sorted(outcome.unfixable):
            print(f"{f.path}:{f.line}:{f.col}: not auto-fixable: `{f.imported}`: {reason}", file=notes)
        left.extend(outcome.unfixable)
    verb = "Fixed" if write else "Would fix"
    print(f"{verb} {_plural(n_fixed, 'import')} in {_plural(n_files, 'file')}; "
          f"{_plural(len(left), 'finding')} not auto-fixable.", file=notes)
    return 1 if left else 0


def _diff(rel: str, old: bytes, new: bytes) -> str:
    old_text, new_text = _decode(old), _decode(new)
    lines = difflib.unified_diff(_LINE_RE.findall(old_text), _LINE_RE.findall(new_text),
                                 f"a/{rel}", f"b/{rel}")
    text = "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in lines)
    return text


def _decode(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding)
