"""The references of a file this interpreter's `ast` rejects, read with LibCST's native parser.

`scan.scan_source` reads every file with `ast`, which knows only the syntax of the Python that
runs the tool: under 3.11 a PEP 701 f-string (`f"{d["k"]}"`) or a `type X = ...` alias (3.12),
a t-string (3.14) or a `lazy import` (PEP 810, 3.15) makes the whole file a `parse-error`, and
its imports unseen, where 3.13 reads some of them. LibCST's parser knows the syntax of 3.0
through 3.15 whatever the interpreter, so a file `ast` rejects is read here before it is called
a parse error: only those files (most trees have none), so the fast path stays `ast`'s.

The walk gives what `scan._Scanner` gives for the same file under the newest `ast`: the same
statements and expressions looked into, the same flags (in a function, under `TYPE_CHECKING`,
guarded), the same positions (a column is counted in UTF-8 bytes, as `ast` counts it), and
`lazy import` / `lazy from ... import` as imports with `lazy_keyword` set. Whether a `try:` or
`with` guards an import, and whether an `if` tests `TYPE_CHECKING`, is asked of `scan`'s own
predicates, on the statement's header with its bodies cut to `pass` (a header is nearly always
old syntax), so the two readers cannot drift apart there.
"""

from __future__ import annotations

import ast
import bisect
import warnings

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from contracts.engine import ast_refs as ast_scan
from contracts.engine import source_text
from contracts.engine.resolve import resolve_relative
from contracts.engine.window import keep_hot_statements

# The newest syntax LibCST knows (its parser takes the version's grammar, not the interpreter's).
PYTHON_VERSION = "3.15"

_IMPORTS = (cst.Import, cst.LazyImport)
_FROM_IMPORTS = (cst.ImportFrom, cst.LazyImportFrom)
_LAZY = (cst.LazyImport, cst.LazyImportFrom)
_TRIES = (cst.Try, cst.TryStar)
_HANDLERS = (cst.ExceptHandler, cst.ExceptStarHandler)
_PASS = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Pass()])])
# Text and placeholders of f-strings and t-strings.
_TEMPLATES = (cst.FormattedString, cst.TemplatedString)
_TEXTS = (cst.FormattedStringText, cst.TemplatedStringText)


def parse(text: str) -> cst.Module:
    """`text` as LibCST reads it with the newest grammar it knows; raises what the parser raises."""
    return cst.parse_module(text, config=cst.PartialParserConfig(python_version=PYTHON_VERSION))


def scan_rejected(data: bytes, text: str, exc: BaseException, module: str, is_package: bool,
                  hot: list[int] | None) -> ast_scan.FileScan:
    """The references of a file `ast` rejected with `exc` (`text`: `data` decoded), where this
    parser reads it; else a `parse-error` with `ast`'s reason. Only the statements around the
    hot lines are walked, as `ast`'s are (`reading.file_refs`): LibCST's positions and walk cost
    several times its parse."""
    try:
        tree = parse(text)
    except Exception:  # noqa: BLE001 - no parser accepts it: `ast`'s reason is the finding
        return ast_scan.FileScan([], error=source_text.error_reason(data, exc))
    for nested in (True, False):
        kept = keep_hot_statements(data, (), hot, nested=nested, any_syntax=True) if hot else None
        if kept is None:
            break
        try:
            return scan_module(kept.decode("utf-8"), module, is_package, hot)
        except Exception:  # noqa: BLE001 - a window that does not parse: the next larger one
            continue
    try:
        return scan_module(text, module, is_package, hot, tree)
    except RecursionError:
        return ast_scan.FileScan([], error="nested too deeply for the parser")


def scan_module(text: str, module: str, is_package: bool, hot: list[int] | None,
                tree: cst.Module | None = None) -> ast_scan.FileScan:
    """The references of `text` (a whole file, decoded; `tree`: its parse, where made), as
    `scan.scan_source` reports them. Raises what LibCST's parser raises when it rejects the text."""
    tree = parse(text) if tree is None else tree
    positions = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    walker = _Walker(module, is_package, hot, positions, text.splitlines())
    walker.statements(_flatten(tree.body), lazy=False, tc=False)
    walker.refs.sort(key=lambda r: (r.line, r.col))
    return ast_scan.FileScan(walker.refs, unresolved=walker.unresolved or None)


def _flatten(body) -> list:
    """A block's statements as `ast` lists them: each small statement of a line (`a; b`) apart."""
    out = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(stmt.body)
        else:
            out.append(stmt)
    return out


def _block(suite) -> list:
    """The statements of an indented block or a one-line suite (`if x: a; b`)."""
    return _flatten(suite.body) if isinstance(suite, cst.IndentedBlock) else list(suite.body)


def _dotted(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    return f"{_dotted(node.value)}.{node.attr.value}"


def _string_value(node):
    """The `str` an (implicitly concatenated) string literal evaluates to, or None (bytes, an
    f-string or t-string with a placeholder)."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
    elif isinstance(node, cst.ConcatenatedString):
        parts = []
        for piece in _pieces(node):
            value = _string_value(piece) if not isinstance(piece, _TEMPLATES) else _template_text(piece)
            if value is None:
                return None
            parts.append(value)
        value = "".join(parts)
    elif isinstance(node, cst.FormattedString):
        value = _template_text(node)
    else:
        return None
    return value if isinstance(value, str) else None


def _pieces(node: cst.ConcatenatedString) -> list:
    out = []
    for side in (node.left, node.right):
        out.extend(_pieces(side) if isinstance(side, cst.ConcatenatedString) else [side])
    return out


def _template_text(node) -> str | None:
    """An f-string's value when it has no placeholder (what `ast` makes a plain constant of);
    None for a t-string or a placeholder."""
    if not isinstance(node, cst.FormattedString) or any(not isinstance(p, _TEXTS) for p in node.parts):
        return None
    return _text_of(node.parts, node.prefix.lower().replace("f", ""), node.quote)


def _text_of(parts, prefix: str, quote: str) -> str | None:
    """The value of f-string text `parts` (escapes as written), read as a plain literal."""
    raw = "".join(p.value for p in parts).replace("{{", "{").replace("}}", "}")
    try:
        value = ast.literal_eval(prefix + quote + raw + quote)
    except (SyntaxError, ValueError):
        return None
    return value if isinstance(value, str) else None


def _stub_statement(node) -> ast.stmt | None:
    """`node`'s header as this interpreter's `ast` reads it, its bodies cut to `pass`: what
    `scan`'s predicates are asked about. None when the header itself is newer syntax."""
    changes = {"body": _PASS}
    if isinstance(node, _TRIES):
        changes.update(handlers=[h.with_changes(body=_PASS) for h in node.handlers], orelse=None, finalbody=None)
    try:
        code = cst.Module(body=[node.with_changes(**changes)]).code
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(code).body[0]
    except (SyntaxError, ValueError, cst.CSTValidationError):
        return None


def _catches_import_error(node) -> bool:
    if node is None:  # a bare `except:`
        return True
    if isinstance(node, cst.Tuple):
        return any(_catches_import_error(e.value) for e in node.elements)
    name = node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else None
    return name in ast_scan._IMPORT_ERRORS


def _stub_expression(node) -> ast.expr | None:
    try:
        return ast.parse(cst.Module(body=[]).code_for_node(node).strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None


class _Walker:
    """`scan._Scanner` over a LibCST tree: the same order of fields, flags and hot-line test."""

    def __init__(self, module: str, is_package: bool, hot: list[int] | None, positions, lines: list[str]) -> None:
        self.module, self.is_package = module, is_package
        self.hot = None if hot is None else set(hot)
        self.hot_sorted = hot
        self.positions = positions
        self.lines = lines
        self.refs: list[ast_scan.ImportRef] = []
        self.unresolved: list[ast_scan.ImportRef] = []
        self.guarded = False

    # ------------------------------------------------------------------ positions

    def _start(self, node) -> tuple[int, int]:
        """(line, 1-based column in UTF-8 bytes) of `node`, as `ast` numbers them."""
        pos = self.positions[node].start
        line = self.lines[pos.line - 1] if 0 < pos.line <= len(self.lines) else ""
        head = line[:pos.column]
        return pos.line, (len(head.encode("utf-8", "surrogatepass")) if not head.isascii() else pos.column) + 1

    def _spans_hot(self, node, start: int | None = None) -> bool:
        if self.hot is None:
            return True
        where = self.positions.get(node)
        if where is None:
            return True
        first = where.start.line if start is None else min(start, where.start.line)
        i = bisect.bisect_left(self.hot_sorted, first)
        return i < len(self.hot_sorted) and self.hot_sorted[i] <= where.end.line

    def _ref(self, node, kind: str, imported: str, lazy: bool, tc: bool, at=None, **kw) -> None:
        line, col = at or self._start(node)
        self.refs.append(ast_scan.ImportRef(line, col, self.positions[node].end.line, kind, imported, lazy=lazy,
                                            type_checking=tc, guarded=self.guarded, **kw))

    # ------------------------------------------------------------------ statements

    def statements(self, body: list, lazy: bool, tc: bool) -> None:
        for i, stmt in enumerate(body):
            if i == 0 and isinstance(stmt, cst.Expr) and _plain_string(stmt.value):
                continue  # a docstring is prose
            decorators = getattr(stmt, "decorators", ())
            first = min((self.positions[d].start.line for d in decorators), default=None)
            if not self._spans_hot(stmt, first):
                continue
            if isinstance(stmt, _IMPORTS):
                self._import(stmt, lazy, tc)
            elif isinstance(stmt, _FROM_IMPORTS):
                self._from_import(stmt, lazy, tc)
            else:
                self.compound(stmt, lazy, tc)

    def _import(self, stmt, lazy: bool, tc: bool) -> None:
        keyword = isinstance(stmt, _LAZY)
        for alias in stmt.names:
            asname = alias.asname.name.value if alias.asname else None
            self._ref(stmt, "import", _dotted(alias.name), lazy, tc, asname=asname, lazy_keyword=keyword)

    def _from_import(self, stmt, lazy: bool, tc: bool) -> None:
        keyword = isinstance(stmt, _LAZY)
        level = len(stmt.relative)
        written = _dotted(stmt.module) if stmt.module is not None else None
        base = resolve_relative(self.module, self.is_package, level, written)
        if base is None:
            line, col = self._start(stmt)
            self.unresolved.append(ast_scan.ImportRef(
                line, col, self.positions[stmt].end.line, "from", "." * level + (written or ""), level=level,
                lazy=lazy, type_checking=tc, guarded=self.guarded, lazy_keyword=keyword))
            return
        names = [("*", None)] if isinstance(stmt.names, cst.ImportStar) else [
            (_dotted(a.name), a.asname.name.value if a.asname else None) for a in stmt.names]
        for name, asname in names:
            self._ref(stmt, "from", base, lazy, tc, name=name, asname=asname, level=level, lazy_keyword=keyword)

    def compound(self, stmt, lazy: bool, tc: bool) -> None:
        """A statement other than an import: its expressions, then its blocks, each with the
        flags `scan._Scanner.compound` gives it."""
        if not isinstance(stmt, cst.BaseCompoundStatement):
            for child in stmt.children:
                self.expressions(child, lazy, tc)
            return
        function = isinstance(stmt, cst.FunctionDef)
        inner_lazy = lazy or function
        inner_tc = tc or (isinstance(stmt, cst.If) and self._tests_type_checking(stmt.test))
        outer_guard = self.guarded
        inner_guard = False if function else outer_guard or self._guards(stmt)
        for child in self._header_parts(stmt):
            self.expressions(child, lazy, tc)
        if not isinstance(stmt, cst.Match):  # (its blocks are its cases')
            self.guarded = inner_guard
            try:
                self.statements(_block(stmt.body), inner_lazy, inner_tc)
            finally:
                self.guarded = outer_guard
        for handler in getattr(stmt, "handlers", ()):
            if handler.type is not None:
                self.expressions(handler.type, lazy, tc)
            self.statements(_block(handler.body), lazy, tc)
        for case in getattr(stmt, "cases", ()):
            self.statements(_block(case.body), lazy, tc)
        self._else(stmt, lazy, tc)

    def _else(self, stmt, lazy: bool, tc: bool) -> None:
        orelse = getattr(stmt, "orelse", None)
        if isinstance(orelse, cst.If):  # `elif`: a nested `if` in the else branch, as in `ast`
            self.statements([orelse], lazy, tc)
        elif orelse is not None:
            self.statements(_block(orelse.body), lazy, tc)
        final = getattr(stmt, "finalbody", None)
        if final is not None:
            self.statements(_block(final.body), lazy, tc)

    @staticmethod
    def _header_parts(stmt) -> list:
        """The expressions of a compound statement's header, in `ast`'s field order."""
        if isinstance(stmt, cst.FunctionDef):
            return [stmt.params, *stmt.decorators, *([stmt.returns] if stmt.returns else ()),
                    *([stmt.type_parameters] if getattr(stmt, "type_parameters", None) else ())]
        if isinstance(stmt, cst.ClassDef):
            return [*stmt.bases, *stmt.keywords, *stmt.decorators,
                    *([stmt.type_parameters] if getattr(stmt, "type_parameters", None) else ())]
        if isinstance(stmt, (cst.If, cst.While)):
            return [stmt.test]
        if isinstance(stmt, cst.For):
            return [stmt.target, stmt.iter]
        if isinstance(stmt, cst.With):
            return list(stmt.items)
        if isinstance(stmt, cst.Match):
            return [stmt.subject]
        return []

    def _guards(self, stmt) -> bool:
        if not isinstance(stmt, (*_TRIES, cst.With)):
            return False
        stub = _stub_statement(stmt)
        if stub is not None:
            return ast_scan._guards(stub)
        # A header this Python cannot read (`except* E:` before 3.11, `except A, B:` before 3.14):
        # its handlers, read here as `scan._catches_import_error` reads them.
        return isinstance(stmt, _TRIES) and any(_catches_import_error(h.type) for h in stmt.handlers)

    @staticmethod
    def _tests_type_checking(test) -> bool:
        stub = _stub_expression(test)
        return stub is not None and ast_scan._is_type_checking(stub)

    # ------------------------------------------------------------------ expressions

    def expressions(self, node, lazy: bool, tc: bool) -> None:
        if isinstance(node, cst.BaseParenthesizableWhitespace) or not self._spans_hot(node):
            return
        skip: set[int] = set()
        todo = [node]
        while todo:
            sub = todo.pop()
            if isinstance(sub, cst.Call):
                self._call(sub, lazy, tc, skip)
            if isinstance(sub, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                self._string(sub, lazy, tc, skip)
                if not isinstance(sub, cst.SimpleString):
                    todo.extend(reversed(_placeholders(sub)))
                continue
            if isinstance(sub, _TEMPLATES):
                todo.extend(reversed(_placeholders(sub)))
                continue
            todo.extend(reversed(sub.children))

    def _string(self, node, lazy: bool, tc: bool, skip: set) -> None:
        if id(node) in skip:
            return
        value = _string_value(node)
        if value is None:
            self._format_specs(node, lazy, tc)
            return
        at = self._constant_start(node)
        if _is_target(value) and (self.hot is None or at[0] in self.hot or self._spans_hot(node)):
            module, _, attr = value.partition(":")
            self._ref(node, "string", module, lazy, tc, at=at, attr=attr or None)

    def _constant_start(self, node) -> tuple[int, int]:
        """Where `ast` puts a string's constant: an f-string's after its prefix and quote."""
        line, col = self._start(node)
        if isinstance(node, cst.FormattedString):
            return line, col + len(node.prefix) + len(node.quote)
        return line, col

    def _format_specs(self, node, lazy: bool, tc: bool) -> None:
        """A format spec without placeholders (`f"{x:spec}"`) is a constant of its own to `ast`."""
        pieces = _pieces(node) if isinstance(node, cst.ConcatenatedString) else [node]
        for piece in pieces:
            specs = [getattr(part, "format_spec", None) for part in getattr(piece, "parts", ())]
            for spec in specs:
                if not spec or not all(isinstance(p, _TEXTS) for p in spec):
                    continue
                value = _text_of(spec, "", piece.quote)
                if value and _is_target(value) and (self.hot is None or self._start(spec[0])[0] in self.hot):
                    module, _, attr = value.partition(":")
                    self._ref(spec[0], "string", module, lazy, tc, attr=attr or None)

    def _call(self, node: cst.Call, lazy: bool, tc: bool, skip: set) -> None:
        func = node.func
        fname = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        positional = [a for a in node.args if a.keyword is None and a.star != "**"]
        if fname not in ("import_module", "__import__") or not positional or positional[0].star:
            return
        first = positional[0].value
        target = _string_value(first)
        if target is None:
            return
        if fname == "import_module" and target.startswith("."):
            target = _relative_target(node, positional, target)
        if ast_scan._MODULE_RE.match(target):
            self._ref(first, "importlib", target, lazy, tc, at=self._constant_start(first))
            skip.add(id(first))


def _is_target(value: str) -> bool:
    return "." in value and len(value) < 300 and ast_scan._TARGET_RE.match(value) is not None


def _relative_target(node: cst.Call, positional: list, target: str) -> str:
    """`import_module(".x", "pkg")` (or `package="pkg"`): the absolute name, where it is known."""
    package = positional[1].value if len(positional) > 1 else next(
        (a.value for a in node.args if a.keyword is not None and a.keyword.value == "package"), None)
    package_name = _string_value(package) if package is not None else None
    if package_name is None:
        return target
    level = len(target) - len(target.lstrip("."))
    return resolve_relative(package_name, True, level, target.lstrip(".") or None) or target


def _placeholders(node) -> list:
    """The expressions inside an f-string's or t-string's placeholders (and their specs')."""
    out = []
    pieces = _pieces(node) if isinstance(node, cst.ConcatenatedString) else [node]
    for piece in pieces:
        for part in getattr(piece, "parts", ()):
            if not isinstance(part, _TEXTS):
                out.append(part.expression)
                out.extend(p.expression for p in (getattr(part, "format_spec", None) or ())
                           if not isinstance(p, _TEXTS))
    return out


def _plain_string(node) -> bool:
    """A `str` literal that `ast` reads as a constant (no f-string or t-string piece)."""
    pieces = _pieces(node) if isinstance(node, cst.ConcatenatedString) else [node]
    return all(isinstance(p, cst.SimpleString) for p in pieces) and _string_value(node) is not None


# ---------------------------------------------------------------------- what a module binds

def older_ast(text: str | bytes) -> ast.Module | None:
    """`text` (which this interpreter's `ast` rejects) as an `ast.Module` of the same bindings,
    or None where LibCST rejects it too: its newer forms rewritten in older syntax (`type X = v`
    as `X = v`, `lazy import a` as `import a`, type parameters dropped, `except*` as `except`,
    `except A, B:` parenthesized, f-strings and t-strings as empty strings). Positions are not
    kept: for what a module defines (`index.py`), never for references."""
    try:
        source = text if isinstance(text, str) else source_text.decode_source(text)
        older = parse(source).visit(_Older()).code
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(older)
    except Exception:  # noqa: BLE001 - no parser reads it (or the rewrite does not): unknown
        return None


class _Older(cst.CSTTransformer):
    """Newer statement forms as older ones that bind the same names."""

    def leave_TypeAlias(self, original, updated):
        return cst.Assign(targets=[cst.AssignTarget(target=updated.name)], value=updated.value)

    def leave_LazyImport(self, original, updated):
        return cst.Import(names=updated.names)

    def leave_LazyImportFrom(self, original, updated):
        return cst.ImportFrom(module=updated.module, names=updated.names, relative=updated.relative,
                              lpar=updated.lpar, rpar=updated.rpar)

    def leave_FunctionDef(self, original, updated):
        return updated.with_changes(type_parameters=None)

    def leave_ClassDef(self, original, updated):
        return updated.with_changes(type_parameters=None)

    def leave_TryStar(self, original, updated):
        return cst.Try(body=updated.body, handlers=[cst.ExceptHandler(body=h.body, type=h.type, name=h.name)
                                                   for h in updated.handlers],
                       orelse=updated.orelse, finalbody=updated.finalbody)

    def leave_ExceptHandler(self, original, updated):
        if isinstance(updated.type, cst.Tuple) and not updated.type.lpar:
            return updated.with_changes(type=updated.type.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
        return updated

    def leave_FormattedString(self, original, updated):
        return cst.SimpleString('""')

    def leave_TemplatedString(self, original, updated):
        return cst.SimpleString('""')
