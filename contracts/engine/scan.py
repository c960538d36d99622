"""Every import statement and string import target of one file, raw, with its position.

The standard library `ast` reads the file; nothing is imported or executed. Imports are found
at any depth (functions, methods, class bodies, `if`/`try`/`with`, `if TYPE_CHECKING:`), and so
are string literals that look like import targets (`"pkg.mod"`, `"pkg.mod:attr"`), including the
first argument of `importlib.import_module(...)` and `__import__(...)`. Docstrings are prose and
are not targets.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass

from contracts.engine.resolve import resolve_relative

_TARGET_RE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?$")


@dataclass(frozen=True)
class ImportRef:
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
    name: str | None = None
    asname: str | None = None
    level: int = 0
    lazy: bool = False
    type_checking: bool = False
    attr: str | None = None  # 'module:attr' strings: the attr part


@dataclass
class FileScan:
    refs: list[ImportRef]
    error: str | None = None
    unresolved: list[tuple[int, str]] | None = None  # relative imports above the top package


def decode_source(data: bytes) -> str:
    """Bytes -> text as Python would read them (PEP 263 coding cookie, BOM)."""
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def parse_error_reason(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        line = f", line {exc.lineno}" if exc.lineno else ""
        return f"syntax error{line}: {exc.msg}"
    if isinstance(exc, UnicodeDecodeError):
        return f"cannot decode as {exc.encoding}: byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
    if isinstance(exc, LookupError):
        return f"unknown encoding declared: {exc}"
    if isinstance(exc, ValueError) and "null bytes" in str(exc):
        return "source contains a NUL byte"
    if isinstance(exc, RecursionError):
        return "nesting too deep for the parser"
    return f"{type(exc).__name__}: {exc}"


def scan_source(data: bytes, module: str, is_package: bool, words: tuple[bytes, ...] | None = None) -> FileScan:
    """Scan one file. With `words`, only statements on lines that contain one of them are
    looked into (what the rules need, and far cheaper than visiting every node); without,
    every import statement is returned."""
    try:
        text = decode_source(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences etc. are not our business
            tree = ast.parse(text)
    except (SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError, MemoryError) as e:
        return FileScan([], error=parse_error_reason(e))
    hot = None
    if words is not None:
        hot = {n for n, line in enumerate(data.splitlines(), 1) if any(w in line for w in words)}
    scanner = _Scanner(module, is_package, hot)
    try:
        scanner.statements(tree.body, lazy=False, tc=False)
    except RecursionError:
        return FileScan([], error="nesting too deep for the parser")
    scanner.refs.sort(key=lambda r: (r.line, r.col))
    return FileScan(scanner.refs, unresolved=scanner.unresolved or None)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_STMT_LISTS = ("body", "orelse", "finalbody")


class _Scanner:
    def __init__(self, module: str, is_package: bool, hot: set[int] | None) -> None:
        self.module, self.is_package, self.hot = module, is_package, hot
        self.refs: list[ImportRef] = []
        self.unresolved: list[tuple[int, str]] = []

    def _spans_hot(self, node) -> bool:
        if self.hot is None:
            return True
        start = getattr(node, "lineno", None)
        if start is None:
            return True
        end = getattr(node, "end_lineno", None) or start
        for decorator in getattr(node, "decorator_list", ()):  # decorators precede the `def` line
            start = min(start, decorator.lineno)
        if end - start < 64:
            return any(n in self.hot for n in range(start, end + 1))
        return any(start <= n <= end for n in self.hot)

    def _ref(self, node, kind, imported, lazy, tc, **kw) -> None:
        self.refs.append(ImportRef(
            node.lineno, node.col_offset + 1, getattr(node, "end_lineno", None) or node.lineno,
            kind, imported, lazy=lazy, type_checking=tc, **kw,
        ))

    def statements(self, body: list, lazy: bool, tc: bool) -> None:
        for i, stmt in enumerate(body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # a docstring is prose
            if not self._spans_hot(stmt):
                continue
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    self._ref(stmt, "import", alias.name, lazy, tc, asname=alias.asname)
            elif isinstance(stmt, ast.ImportFrom):
                level = stmt.level or 0
                base = resolve_relative(self.module, self.is_package, level, stmt.module)
                if base is None:
                    self.unresolved.append((stmt.lineno, "." * level + (stmt.module or "")))
                    continue
                for alias in stmt.names:
                    self._ref(stmt, "from", base, lazy, tc, name=alias.name, asname=alias.asname,
                              level=level)
            else:
                self.compound(stmt, lazy, tc)

    def compound(self, stmt, lazy: bool, tc: bool) -> None:
        inner_lazy = lazy or isinstance(stmt, _FUNCTIONS)
        inner_tc = tc or (isinstance(stmt, ast.If) and _is_type_checking(stmt.test))
        for name, value in ast.iter_fields(stmt):
            if name in _STMT_LISTS and isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self.statements(value, inner_lazy, inner_tc if name == "body" else tc)
            elif name == "handlers":
                for handler in value:
                    if handler.type is not None:
                        self.expressions(handler.type, lazy, tc)
                    self.statements(handler.body, lazy, tc)
            elif name == "cases":
                for case in value:
                    self.statements(case.body, lazy, tc)
            elif isinstance(value, ast.AST):
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
            elif isinstance(sub, ast.JoinedStr):
                skip.update(id(v) for v in sub.values if isinstance(v, ast.Constant))
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and id(sub) not in skip:
                value = sub.value
                if "." in value and len(value) < 300 and _TARGET_RE.match(value) and \
                        (self.hot is None or sub.lineno in self.hot):
                    module, _, attr = value.partition(":")
                    self._ref(sub, "string", module, lazy, tc, attr=attr or None)

    def _call(self, node: ast.Call, lazy: bool, tc: bool, skip: set) -> None:
        func = node.func
        fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if fname not in ("import_module", "__import__") or not node.args:
            return
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
            return
        target = first.value
        if fname == "import_module" and target.startswith("."):
            pkg_arg = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "package"), None)
            if isinstance(pkg_arg, ast.Constant) and isinstance(pkg_arg.value, str):
                level = len(target) - len(target.lstrip("."))
                target = resolve_relative(pkg_arg.value, True, level, target.lstrip(".") or None) or target
        if _MODULE_RE.match(target):
            self._ref(first, "importlib", target, lazy, tc)
            skip.add(id(first))  # reported once, as a dynamic import


_MODULE_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
