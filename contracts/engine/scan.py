"""Every import statement and string import target of one file, raw, with its position.

The standard library `ast` reads the file; nothing is imported or executed. Imports are found
at any depth (functions, methods, class bodies, `if`/`try`/`with`, `if TYPE_CHECKING:`), and so
are string literals that look like import targets (`"pkg.mod"`, `"pkg.mod:attr"`), including the
first argument of `importlib.import_module(...)` and `__import__(...)`. Docstrings are prose and
are not targets.
"""

from __future__ import annotations

import ast
import bisect
import codecs
import io
import re
import tokenize
import unicodedata
import warnings

from contracts._record import Record
from contracts.engine.resolve import resolve_relative

# Files larger than this are not parsed (reported instead): ast needs ~120 bytes of memory per
# byte of source, and real source files stay far below it.
MAX_PARSE_BYTES = 4 * 2**20

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


# Codecs whose decoding time grows faster than the input: punycode is quadratic (a 2 MB file
# took 53 s; 64 KiB takes 0.2 s). Only a file that declares one is refused over the bound.
_SLOW_CODECS = frozenset({"punycode"})
MAX_SLOW_DECODE_BYTES = 64 * 1024


def decode_declared(data: bytes, encoding: str) -> str:
    """`data` decoded as `encoding`; a ValueError (UnicodeError) for any failure of the codec
    -- `# coding: undefined` raises a plain UnicodeError, invalid punycode another -- and for a
    slow codec over `MAX_SLOW_DECODE_BYTES`."""
    name = codecs.lookup(encoding).name
    if name in _SLOW_CODECS and len(data) > MAX_SLOW_DECODE_BYTES:
        raise UnicodeError(f"declares the {name} encoding, whose decoding time grows with the square of "
                           f"the size; not decoded over {MAX_SLOW_DECODE_BYTES // 1024} KiB")
    return data.decode(encoding)


def decode_source(data: bytes) -> str:
    """Bytes -> text as Python would read them (PEP 263 coding cookie, BOM)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = decode_declared(data, encoding)
    return text[1:] if text.startswith("\ufeff") else text


def declared_encoding(data: bytes) -> str | None:
    """The encoding a PEP 263 cookie declares, when it is not UTF-8 (None otherwise)."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    if b"coding" not in (data[:second] if second >= 0 else data):  # the cookie is on line 1 or 2
        return None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return None  # an unknown codec: Python cannot read the file at all
    return None if encoding in ("utf-8", "utf-8-sig") else encoding


def searchable(data: bytes) -> bytes:
    """The bytes to look for a rule's words in: the text Python reads, not the raw bytes.

    For ASCII source without an encoding declaration (most files) that is `data` itself. A file
    that declares another encoding is decoded first (under `# coding: utf-7`, `jit+AF8-kernel`
    is `jit_kernel`), and non-ASCII text is NFKC-normalized as Python normalizes identifiers
    (`import pkg.jit_ｋernel` imports `pkg.jit_kernel`). Physical lines are kept, so line `n` of
    the result is line `n` of the file. Undecodable data is returned as it is.
    """
    encoding = declared_encoding(data)
    if encoding is None and (data.isascii() or _non_ascii_stable(data)):
        return data
    try:
        text = decode_declared(data, encoding or "utf-8")
    except (UnicodeError, LookupError):  # `# coding: undefined`, bad punycode: the parse reports it
        return data
    if not unicodedata.is_normalized("NFKC", text):
        # Line by line, and only the lines that change: NFKC never joins across a line break,
        # and most such files have a few lines of fullwidth punctuation in comments.
        text = "\n".join(line if line.isascii() or unicodedata.is_normalized("NFKC", line)
                         else unicodedata.normalize("NFKC", line) for line in text.split("\n"))
    elif encoding is None:  # most non-ASCII files: prose in comments
        return data
    out = text.encode("utf-8")
    # Callers test `is data` to learn whether Python reads other bytes than the file holds
    # (a `# coding: utf-8` declaration changes nothing).
    return data if out == data else out


# Every ASCII byte: deleted, what is left of a file is its non-ASCII text.
_ASCII = bytes(range(128))


def _non_ascii_stable(data: bytes) -> bool:
    """Does NFKC surely leave `data`'s text as it is? Asked of its non-ASCII characters alone
    (most such files are prose in comments: few such characters in much ASCII), which is enough
    where none of them is a combining mark: a character NFKC changes by itself is changed
    among them too, and only a combining mark composes with, or reorders against, the ASCII
    character before it. A file that is not UTF-8, or holds a mark, is left to the full check
    (as is one whose characters merely seem to change once put together: that check is exact).
    Deleting the ASCII bytes costs a fraction of decoding and checking the whole text."""
    try:
        rest = data.translate(None, _ASCII).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return unicodedata.is_normalized("NFKC", rest) and not any(map(unicodedata.combining, rest))


NUL = b"\0"


def _line_at(data: bytes, offset: int) -> int:
    return len((data[:offset] + b"x").splitlines())


def error_reason(data: bytes, exc: BaseException) -> str:
    """Why `data` cannot be parsed, in words, with `line N` where one is known."""
    if NUL in data:  # 3.11 says ValueError, 3.12 SyntaxError; the line is what helps
        return f"contains a NUL byte, line {_line_at(data, data.index(NUL))}; Python cannot read it"
    if isinstance(exc, SyntaxError) and exc.lineno is None:  # from the encoding detection
        if "unknown encoding" in str(exc.msg):
            return f"declares an {exc.msg}; Python cannot read it"
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            return (f"not valid UTF-8 and declares no encoding (byte 0x{data[e.start]:02x}, line "
                    f"{_line_at(data, e.start)}); Python cannot read it")
    if isinstance(exc, UnicodeDecodeError):
        return (f"cannot be decoded as {exc.encoding} (byte 0x{exc.object[exc.start]:02x}, line "
                f"{_line_at(data, exc.start)}); Python cannot read it")
    return parse_error_reason(exc)


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
    if isinstance(exc, (RecursionError, MemoryError)):
        return "nested too deeply for the parser"
    if isinstance(exc, UnicodeError):  # a codec that fails in its own way (`undefined`, punycode)
        return f"cannot decode: {exc}"
    return f"{type(exc).__name__}: {exc}"


def hot_lines(hay: bytes, words) -> list[int]:
    """1-based numbers of the lines (as `bytes.splitlines` counts them) that contain a word: found
    by searching for the words, not by testing every line (the lines are mostly not hot)."""
    if b"\r" in hay:
        return [n for n, line in enumerate(hay.splitlines(), 1) if any(w in line for w in words)]
    found = set()
    for w in words:
        pos = hay.find(w)
        line, counted = 1, 0
        while pos >= 0:
            line += hay.count(b"\n", counted, pos)
            counted = pos
            found.add(line)
            pos = hay.find(w, hay.find(b"\n", pos) + 1 or len(hay))
    return sorted(found)


def scan_source(data: bytes, module: str, is_package: bool, words: tuple[bytes, ...] | None = None,
                hot: list[int] | None = None) -> FileScan:
    """Scan one file. With `words` (or `hot`, the line numbers themselves, ascending), only
    statements that span a line containing one of them are looked into (what the rules need,
    and far cheaper than visiting every node); without, every import statement is returned.
    Never raises: what cannot be scanned comes back as `FileScan([], error=reason)`."""
    if len(data) > MAX_PARSE_BYTES:
        return FileScan([], error=(
            f"{len(data) / 2**20:.1f} MiB, over the {MAX_PARSE_BYTES // 2**20} MiB this tool parses "
            f"(parsing takes ~120 bytes of memory per byte); split or exclude the file"))
    text = None
    try:
        text = decode_source(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences etc. are not our business
            tree = ast.parse(text)
    except Exception as e:  # noqa: BLE001 - one bad file is a finding, never a crash of the run
        if hot is None and words is not None:
            hot = hot_lines(searchable(data), words)
        return _other_syntax(data, text, e, module, is_package, hot)
    if hot is None and words is not None:
        hot = hot_lines(searchable(data), words)
    scanner = _Scanner(module, is_package, hot)
    try:
        scanner.statements(tree.body, lazy=False, tc=False)
    except RecursionError:
        return FileScan([], error="nested too deeply for the parser")
    scanner.refs.sort(key=lambda r: (r.line, r.col))
    return FileScan(scanner.refs, unresolved=scanner.unresolved or None)


# A limit of CPython's, not a syntax of another version (`too many nested parentheses`, at 200
# levels in every version): the file cannot be imported by any Python, whatever LibCST reads.
_LIMIT_RE = re.compile(r"too many|too complex|too deeply|too long")


def other_syntax_may_read(exc: BaseException) -> bool:
    """May a parser of another Python version's syntax read what `ast` rejected with `exc`? Not
    past a limit of CPython's, nor what is no syntax error."""
    return isinstance(exc, SyntaxError) and not _LIMIT_RE.search(str(exc.msg))


def older_syntax_ast(text: str | bytes, exc: BaseException) -> ast.Module | None:
    """For what a module binds (`bindings.py`, `index.py`): the module `ast` rejected with `exc`,
    as this Python's `ast` of the same names (`cst_scan.older_ast`) where it is a newer Python's
    syntax, so every interpreter sees the same names; None where no parser reads it."""
    if not other_syntax_may_read(exc):
        return None
    from contracts.engine import cst_scan  # (start-up: LibCST, 0.1-0.3 s; a cycle: it imports scan)

    return cst_scan.older_ast(text)


def _other_syntax(data: bytes, text: str | None, exc: BaseException, module: str, is_package: bool,
                  hot: list[int] | None) -> FileScan:
    """A file this interpreter's `ast` rejected (`exc`): read with a parser that knows every
    Python version's syntax (`cst_scan.scan_rejected`), so that a newer form (a PEP 701 f-string,
    `type X = ...`, a t-string, `lazy import`) is read alike under every interpreter; a
    `parse-error` (`ast`'s reason) where that parser cannot help."""
    if text is None or not other_syntax_may_read(exc) or NUL in data:
        return FileScan([], error=error_reason(data, exc))
    from contracts.engine import cst_scan  # (start-up: LibCST, 0.1-0.3 s; a cycle: it imports scan)

    return cst_scan.scan_rejected(data, text, exc, module, is_package, hot)


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


class _Scanner:
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
