"""The references of a file `ast` has parsed: every import statement and string import target,
at any depth, with its position and context (`ImportRef`, `FileScan`, the walker `Scanner`).

Imports are found in functions, methods, class bodies, `if`/`try`/`with`, `if TYPE_CHECKING:`,
and so are string literals that look like import targets (`"pkg.mod"`, `"pkg.mod:attr"`),
including the first argument of `importlib.import_module(...)` and `__import__(...)`.
Docstrings are prose and are not targets. `cst_scan` shares these records and guards.
"""

from __future__ import annotations

import ast
import bisect
import re

from contracts._record import Record
from contracts.engine.resolve import resolve_relative

_TARGET_RE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?$")


class ImportRef(Record, frozen=True):
    """One module an import statement (or string) refers to.

    `kind`: 'import' (`import a.b`), 'from' (`from a import b`: `imported` is the module `a` or,
    when `name` is given, the candidate submodule `a.b`), 'string', 'importlib'.
    `name`/`asname`: the imported name of a from-import (None for the module itself).
    """

    line: int
    col: int
    end_line: int
    kind: str
    imported: str
    name: str | None
    asname: str | None
    level: int
    lazy: bool
    type_checking: bool
    attr: str | None  # 'module:attr' strings: the attr part
    # Inside a `try:` whose handlers catch ImportError (or anything broader), or a
    # `with suppress(ImportError):`: optional by intent. A function body resets it (it runs later).
    guarded: bool
    # Written `lazy import ...` / `lazy from ... import ...` (PEP 810, Python 3.15): a module-level
    # import whose module is loaded when a name it binds is first used. (`lazy` above is an
    # import inside a function.)
    lazy_keyword: bool

    def __init__(self, line: int, col: int, end_line: int, kind: str, imported: str, name: str | None = None,
                 asname: str | None = None, level: int = 0, lazy: bool = False, type_checking: bool = False,
                 attr: str | None = None, guarded: bool = False, lazy_keyword: bool = False) -> None:
        self.__dict__.update(line=line, col=col, end_line=end_line, kind=kind, imported=imported, name=name,
                             asname=asname, level=level, lazy=lazy, type_checking=type_checking, attr=attr,
                             guarded=guarded, lazy_keyword=lazy_keyword)

    @property
    def context(self) -> str:
        """How the import is written, for messages: "lazy import (PEP 810)" or "lazy import" (in
        a function) or "import"."""
        return "lazy import (PEP 810)" if self.lazy_keyword else "lazy import" if self.lazy else "import"


class FileScan(Record):
    refs: list[ImportRef]
    error: str | None
    # Relative imports that climb above the top-level package: `ImportRef`s whose `imported` is
    # the text as written (`..x`), with `level`.
    unresolved: list[ImportRef] | None

    def __init__(self, refs: list[ImportRef], error: str | None = None,
                 unresolved: list[ImportRef] | None = None) -> None:
        self.refs, self.error, self.unresolved = refs, error, unresolved


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TEMPLATE_NODES = tuple(t for t in (ast.JoinedStr, getattr(ast, "TemplateStr", None)) if t is not None)
_PLACEHOLDERS = tuple(t for t in (ast.FormattedValue, getattr(ast, "Interpolation", None)) if t is not None)
_TRY = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)
# Handlers that catch a failed import: the exception itself, or a class above it.
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def _catches_import_error(node) -> bool:
    if node is None:  # a bare `except:`
        return True
    if isinstance(node, ast.Tuple):
        return any(_catches_import_error(e) for e in node.elts)
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    return name in _IMPORT_ERRORS


# Context managers whose body must raise what their first argument names: a test asserting that
# an import fails (`with pytest.raises(ImportError):`, `with self.assertRaises(...)`).
_RAISES = frozenset({"suppress", "raises", "assertRaises", "assertRaisesRegex"})


def _guards(stmt) -> bool:
    """Is the body of `stmt` an optional import: `try:` with a handler catching ImportError (or
    broader), `with suppress(ImportError):`, or an import a test asserts must fail (`with
    pytest.raises(ImportError):`, `self.assertRaises(...)`, `match=` or not)?"""
    if isinstance(stmt, _TRY):
        return any(_catches_import_error(h.type) for h in stmt.handlers)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            call = item.context_expr
            if isinstance(call, ast.Call):
                func = call.func
                fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
                # `suppress` takes several exceptions; `raises` only its first argument.
                args = call.args if fname == "suppress" else call.args[:1]
                if fname in _RAISES and any(_catches_import_error(a) for a in args):
                    return True
    return False
_STMT_LISTS = ("body", "orelse", "finalbody")


class Scanner:
    def __init__(self, module: str, is_package: bool, hot: list[int] | None) -> None:
        self.module, self.is_package = module, is_package
        # Hot line numbers, ascending (for a range test by bisection) and as a set.
        self.hot_sorted = hot
        self.hot = None if hot is None else set(hot)
        self.refs: list[ImportRef] = []
        self.unresolved: list[ImportRef] = []
        self.guarded = False

    def _spans_hot(self, node) -> bool:
        if self.hot is None:
            return True
        start = getattr(node, "lineno", None)
        if start is None:
            return True
        end = getattr(node, "end_lineno", None) or start
        for decorator in getattr(node, "decorator_list", ()):  # decorators precede the `def` line
            start = min(start, decorator.lineno)
        i = bisect.bisect_left(self.hot_sorted, start)
        return i < len(self.hot_sorted) and self.hot_sorted[i] <= end

    def _ref(self, node, kind, imported, lazy, tc, **kw) -> None:
        self.refs.append(ImportRef(
            node.lineno, node.col_offset + 1, getattr(node, "end_lineno", None) or node.lineno,
            kind, imported, lazy=lazy, type_checking=tc, guarded=self.guarded, **kw,
        ))

    def statements(self, body: list, lazy: bool, tc: bool) -> None:
        for i, stmt in enumerate(body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # a docstring is prose
            if not self._spans_hot(stmt):
                continue
            if isinstance(stmt, ast.Import):
                keyword = bool(getattr(stmt, "is_lazy", False))  # PEP 810's field (3.15)
                for alias in stmt.names:
                    self._ref(stmt, "import", alias.name, lazy, tc, asname=alias.asname, lazy_keyword=keyword)
            elif isinstance(stmt, ast.ImportFrom):
                self._import_from(stmt, lazy, tc)
            else:
                self.compound(stmt, lazy, tc)

    def _import_from(self, stmt: ast.ImportFrom, lazy: bool, tc: bool) -> None:
        """A `from` import: one reference per imported name, or an unresolved one where its dots
        climb above the top-level package."""
        level = stmt.level or 0
        keyword = bool(getattr(stmt, "is_lazy", False))  # PEP 810's field (3.15)
        base = resolve_relative(self.module, self.is_package, level, stmt.module)
        if base is None:
            self.unresolved.append(ImportRef(
                stmt.lineno, stmt.col_offset + 1, getattr(stmt, "end_lineno", None) or stmt.lineno,
                "from", "." * level + (stmt.module or ""), level=level, lazy=lazy,
                type_checking=tc, guarded=self.guarded, lazy_keyword=keyword))
            return
        for alias in stmt.names:
            self._ref(stmt, "from", base, lazy, tc, name=alias.name, asname=alias.asname,
                      level=level, lazy_keyword=keyword)

    def compound(self, stmt, lazy: bool, tc: bool) -> None:
        """The statements and expressions of a statement that is no import: its body in a
        function is lazy, under `if TYPE_CHECKING:` type-only, under a guard (`_guards`)
        guarded; its other blocks (`else`, `finally`) keep the flags around it."""
        function = isinstance(stmt, _FUNCTIONS)
        inner_lazy = lazy or function
        inner_tc = tc or (isinstance(stmt, ast.If) and _is_type_checking(stmt.test))
        outer_guard = self.guarded
        inner_guard = False if function else outer_guard or _guards(stmt)
        for name, value in ast.iter_fields(stmt):
            if name in _STMT_LISTS and isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                body = name == "body"
                self._block(value, inner_lazy, inner_tc if body else tc, inner_guard if body else outer_guard)
            elif name in ("handlers", "cases"):
                self._branches(value, lazy, tc)
            else:
                self._field(value, lazy, tc)

    def _branches(self, branches: list, lazy: bool, tc: bool) -> None:
        """The `except` handlers of a `try` (each one's exception types and body) or the cases of
        a `match` (each one's body), with the flags around the statement."""
        for branch in branches:
            if isinstance(branch, ast.ExceptHandler) and branch.type is not None:
                self.expressions(branch.type, lazy, tc)
            self.statements(branch.body, lazy, tc)

    def _block(self, body: list, lazy: bool, tc: bool, guarded: bool) -> None:
        """The statements of `body` read with `guarded` as the guard flag, then the flag as it was."""
        outer, self.guarded = self.guarded, guarded
        try:
            self.statements(body, lazy, tc)
        finally:
            self.guarded = outer

    def _field(self, value, lazy: bool, tc: bool) -> None:
        """The expressions of one field of a statement: a node, or a list of them."""
        if isinstance(value, ast.AST):
            self.expressions(value, lazy, tc)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    self.expressions(item, lazy, tc)

    def expressions(self, node, lazy: bool, tc: bool) -> None:
        if not self._spans_hot(node):
            return
        skip: set[int] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                self._call(sub, lazy, tc, skip)
            elif isinstance(sub, _TEMPLATE_NODES) and any(isinstance(v, _PLACEHOLDERS) for v in sub.values):
                # the text around a placeholder is no target; an f-string without one is a string
                # (a t-string's text, 3.14, likewise)
                skip.update(id(v) for v in sub.values if isinstance(v, ast.Constant))
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in skip:
                self._string(sub, lazy, tc)

    def _string(self, sub: ast.Constant, lazy: bool, tc: bool) -> None:
        """A string literal that names a module (`pkg.mod`, `pkg.mod:attr`), where it spans a hot
        line: implicit concatenation over several lines (`"pkg.a." "b"`) has the name's last part
        on a later line than the first."""
        value = sub.value
        if "." in value and len(value) < 300 and _TARGET_RE.match(value) and \
                (self.hot is None or sub.lineno in self.hot or self._spans_hot(sub)):
            module, _, attr = value.partition(":")
            self._ref(sub, "string", module, lazy, tc, attr=attr or None)

    def _call(self, node: ast.Call, lazy: bool, tc: bool, skip: set) -> None:
        """A dynamic import (`import_module`, `__import__`, `importorskip`) of a literal module:
        one reference, its literal then no string target (`skip`)."""
        func = node.func
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if fname not in ("import_module", "__import__", "importorskip") or not node.args:
            return
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return
        target = _relative_target(node, first.value) if fname == "import_module" else first.value
        if _MODULE_RE.match(target):
            outer, self.guarded = self.guarded, self.guarded or fname == "importorskip"  # skips when missing
            try:
                self._ref(first, "importlib", target, lazy, tc)
            finally:
                self.guarded = outer
            skip.add(id(first))  # reported once, as a dynamic import


def _relative_target(node: ast.Call, target: str) -> str:
    """`import_module`'s `target` made absolute where it is relative and its package a literal
    (the second argument or `package=`); else as written."""
    if not target.startswith("."):
        return target
    pkg_arg = node.args[1] if len(node.args) > 1 else next(
        (k.value for k in node.keywords if k.arg == "package"), None)
    if not (isinstance(pkg_arg, ast.Constant) and isinstance(pkg_arg.value, str)):
        return target
    level = len(target) - len(target.lstrip("."))
    return resolve_relative(pkg_arg.value, True, level, target.lstrip(".") or None) or target


_MODULE_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
