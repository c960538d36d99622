"""One file: bytes in, bytes out (`fix_source`)."""

from __future__ import annotations

import ast
import io
import sys
import tokenize
import warnings
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import ExpressionContextProvider, MetadataWrapper, PositionProvider

from contracts.engine.cst_scan import parse
from contracts.engine.scan import decode_declared, other_syntax_may_read
from contracts.findings import Finding
from contracts.fix.bare import Survey, bare_import_verdicts, bindings
from contracts.fix.linediff import opcodes
from contracts.fix.pieces import bare_keys, statement_ranges
from contracts.fix.rewrite import NameTargets, Rewriter
from contracts.fix.syntax import LINE_RE, Key, Positions
from contracts.fix.verify import Verifier


@dataclass
class FileFix:
    """What `fix_source` did to one file."""

    new: bytes | None  # None: the file stays as it is
    fixed: list[Finding] = field(default_factory=list)
    unfixable: list[tuple[Finding, str]] = field(default_factory=list)

    def take_back(self, reason: str) -> None:
        """Nothing is fixed after all: every fixed finding is left, for `reason`, before the others."""
        self.unfixable = [(f, reason) for f in self.fixed] + self.unfixable
        self.fixed = []


def _newline_of(line: str) -> str:
    return "\r\n" if line.endswith("\r\n") else "\r" if line.endswith("\r") else "\n"


def _normalized(piece: list[str], whole: bool) -> tuple[str, str, list[str]]:
    """(its leading whitespace up to the last form feed, the piece with `\n` line ends, its
    original line ends)."""
    ends = [_newline_of(line) if line.endswith(("\n", "\r")) else "" for line in piece]
    text = "".join(line[: len(line) - len(end)] + ("\n" if end else "") for line, end in zip(piece, ends))
    lead = ""
    if not whole:
        head = text[: len(text) - len(text.lstrip(" \t\f"))]
        if "\f" in head:
            lead = head[: head.rindex("\f") + 1]
    return lead, text, ends


def _import_lines(tree: ast.Module) -> set[int]:
    """Every line (1-based) an import statement spans."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return out


_NOT_FOUND = "no import statement or string literal this tool can rewrite was found here"
# A bare `import a.b` is fixed with its uses (`a.b.x`), which are checked against what the file
# binds (`bare.bindings`, read with `ast`): not where only LibCST reads the file.
_NEWER_BARE = (f"a bare `import` in a file with syntax newer than Python {sys.version_info[0]}."
               f"{sys.version_info[1]} reads: its uses are not rewritten here; rewrite it by hand or run "
               f"--fix under a newer Python")


def _newer_syntax(data: bytes, exc: BaseException) -> tuple[str, str] | None:
    """(encoding, text) of a file this interpreter's `ast` rejected with `exc` where LibCST's
    parser, which knows every Python version's syntax, reads it (a PEP 701 f-string on 3.11, a
    t-string, `lazy import`); None where nothing may be rewritten."""
    if not other_syntax_may_read(exc):
        return None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
        if text.encode(encoding) != data:
            return None
        parse(text.lstrip("\ufeff"))
    except Exception:  # noqa: BLE001 - no parser reads it: the file is left alone
        return None
    return encoding, text


def _cst_import_lines(text: str) -> set[int] | None:
    """Every line (1-based) an import statement of `text` spans, read with LibCST (plain and
    `lazy` imports); None when it does not parse."""
    try:
        tree = parse(text.lstrip("\ufeff"))
    except Exception:  # noqa: BLE001 - what no parser reads is no rewrite
        return None
    out: set[int] = set()
    positions = MetadataWrapper(tree, unsafe_skip_copy=True).resolve(PositionProvider)
    for node, where in positions.items():
        if isinstance(node, (cst.Import, cst.ImportFrom, cst.LazyImport, cst.LazyImportFrom)):
            out.update(range(where.start.line, where.end.line + 1))
    return out


def _checked_newer(result: FileFix, text: str, new_text: str, encoding: str, data: bytes, lines: list[str],
                   removed: tuple[str, ...]) -> FileFix:
    """The rewrite of a file only LibCST reads, kept where the new text parses too and nothing
    changed but import statements and lines that name a removed module (`compile`, the check
    of other files, would reject the syntax this Python does not know)."""
    imports = _cst_import_lines(text)
    reason = None
    if imports is None or _cst_import_lines(new_text) is None:
        reason = "the rewritten file would not parse; left unchanged"
    else:
        outside = _changed_outside(lines, LINE_RE.findall(new_text), _last_parts(removed), imports)
        if outside is not None:
            reason = f"the rewrite would change line {outside}, which names nothing removed; left unchanged"
    if reason is not None:
        result.take_back(reason)
        return result
    new = new_text.encode(encoding)
    result.new = None if new == data else new
    return result


def _last_parts(removed: tuple[str, ...]) -> set[str]:
    """The removed prefixes' last parts: a changed line that holds one may be a reference's."""
    return {p.rsplit(".", 1)[-1] for p in removed}


def _changed_outside(old: list[str], new: list[str], words, imports: set[int]) -> int | None:
    """The first line (1-based) of `old` the rewrite changes or removes although it is no import
    statement's and holds none of `words` (the removed prefixes' last parts), or None: every
    change is a reference's."""
    for tag, i1, i2, _, _ in opcodes(old, new):
        if tag == "equal":
            continue
        if i1 == i2:
            return i1 + 1  # lines added where there were none
        for i in range(i1, i2):
            if i + 1 not in imports and not any(w in old[i] for w in words):
                return i + 1
    return None


def _keep_form_feeds(old: str, new: str) -> str:
    """`new` with each line's leading form feeds as in `old` (LibCST drops or copies them): line
    by line, where the rewrite kept the line count."""
    if "\f" not in old and "\f" not in new:
        return new
    old_lines, new_lines = LINE_RE.findall(old), LINE_RE.findall(new)
    if len(old_lines) != len(new_lines):
        return new
    out = []
    for o, n in zip(old_lines, new_lines):
        o_ws = o[: len(o) - len(o.lstrip(" \t\f"))]
        n_ws = n[: len(n) - len(n.lstrip(" \t\f"))]
        if o_ws != n_ws and o_ws.replace("\f", "") == n_ws.replace("\f", ""):
            n = o_ws + n[len(n_ws):]
        out.append(n)
    return "".join(out)


def _restore_ends(text: str, ends: list[str]) -> str:
    """`text` (`\n` line ends) with the piece's own line ends back: line by line where the line
    count is unchanged, else the first line's end for every line."""
    if all(end in ("\n", "") for end in ends):
        return text
    lines = LINE_RE.findall(text)
    if len(lines) == len(ends):
        return "".join(line[:-1] + end if line.endswith("\n") else line for line, end in zip(lines, ends))
    end = ends[0] or "\n"
    return "".join(line[:-1] + end if line.endswith("\n") else line for line in lines)


def alias_attributes(tree: ast.Module) -> dict[str, set[str]]:
    """Name -> the attributes read off it anywhere in the file (`m.X` gives `m` -> {`X`}): what
    `import new.mod as m` must bind for the code that uses `m` (`--verify-against`)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load):
            out.setdefault(node.value.id, set()).add(node.attr)
    return out


class _LeaveAlone(Exception):
    """The file stays as it is: every fixable finding of it is refused, for this reason."""


def fix_source(data: bytes, module: str, is_package: bool, findings: list[Finding],
               removed: tuple[str, ...], path: str = "<file>", names: NameTargets | None = None,
               verifier: Verifier | None = None) -> FileFix:
    """Rewrite one file's `removed-module` findings. Pure: takes bytes, returns bytes.

    Only the top-level statements that hold a finding go through LibCST (parsing a whole large
    file costs seconds); the rest of the file is not touched at all. A file with a bare
    `import a.b.c` to fix is parsed whole: its chains can be anywhere.
    """
    result = FileFix(None)
    fixable = _sort_fixable(findings, result)
    if not fixable:
        return result
    try:
        rewrite = _FileRewrite(data, module, is_package, fixable, findings, removed, names, verifier)
        rewrite.run_pieces()
    except _LeaveAlone as e:
        result.unfixable.extend((f, str(e)) for f in fixable.values())
        return result
    rewrite.sort_out(result)
    if not result.fixed:
        return result
    return rewrite.checked(result, path)


def _sort_fixable(findings: list[Finding], result: FileFix) -> dict[Key, Finding]:
    """The findings `--fix` may rewrite, by place; those that name no new place go to
    `result.unfixable` with what the user can do about them."""
    fixable: dict[Key, Finding] = {}
    for f in findings:
        if f.replacement is None and f.rule in ("missing-module", "missing-name"):
            result.unfixable.append((f, "no unique module is the proven new home of what it imports (the "
                                        "finding says what is known: the candidates, or why none); rewrite it by hand"))
        elif f.replacement is None:
            result.unfixable.append((f, f"`replacements` names no new place for `{f.imported}`; "
                                        f"add a line for it to the contract"))
        else:
            fixable[(f.line, f.col, f.imported)] = f
    return fixable


def _read(data: bytes) -> tuple[str, str, ast.Module | None]:
    """(encoding, text, `ast` tree) of the file; the tree is None for a file only LibCST reads
    (syntax newer than this Python's, `_newer_syntax`). Raises `_LeaveAlone` for a file neither
    reads, or one whose bytes do not survive decoding."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = decode_declared(data, encoding)
        if text.encode(encoding) != data:
            raise _LeaveAlone(f"the file does not survive decoding as {encoding}; left unchanged")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return encoding, text, ast.parse(text.lstrip("\ufeff"))
    except (SyntaxError, ValueError, LookupError, RecursionError, MemoryError) as e:  # UnicodeError is a ValueError
        newer = _newer_syntax(data, e)
        if newer is None:
            raise _LeaveAlone(f"the file cannot be parsed ({_first_line(e)}); left unchanged") from None
        encoding, text = newer
        return encoding, text, None


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


class _FileRewrite:
    """One file's rewrite: its text read once, the pieces that hold a finding rewritten through
    LibCST from the end backwards, and what each finding came to (`claimed`, `refused`)."""

    def __init__(self, data: bytes, module: str, is_package: bool, fixable: dict[Key, Finding],
                 findings: list[Finding], removed: tuple[str, ...], names: NameTargets | None,
                 verifier: Verifier | None) -> None:
        self.data, self.module, self.is_package, self.fixable = data, module, is_package, fixable
        self.removed, self.names, self.verifier = removed, names, verifier
        self.known = {(f.line, f.col, f.imported) for f in findings}
        self.encoding, self.text, self.tree = _read(data)
        self.lines = LINE_RE.findall(self.text)
        self.new_lines = list(self.lines)
        self.claimed: set[Key] = set()
        self.refused: dict[Key, str] = {}
        tree = self.tree
        # A file only LibCST reads (newer syntax than this Python's, `_newer_syntax`) goes to it whole.
        self.uses = alias_attributes(tree) if verifier is not None and tree is not None else {}
        self.whole_file = tree is not None and bare_keys(tree, fixable)  # a bare import to fix
        self.whole = self.whole_file or tree is None

    def run_pieces(self) -> None:
        """Rewrite each piece that holds a finding into `new_lines`, from the end, so that earlier
        line numbers stay valid."""
        lines = self.lines
        pieces = [(1, len(lines))] if self.whole else statement_ranges(self.tree, lines,
                                                                        {key[0] for key in self.fixable})
        for first, last in reversed(pieces):
            self._piece(first, last)

    def _piece(self, first: int, last: int) -> None:
        """One piece (lines `first`..`last`): LibCST is given it with `\\n` line ends (it drops a
        lone `\\r`) and may drop or copy a leading form feed; both are put back exactly."""
        lead, chunk, ends = _normalized(self.lines[first - 1:last], self.whole)
        try:
            new_chunk = self._rewritten(chunk, first)
        except RecursionError:
            raise _LeaveAlone("nesting too deep to rewrite safely; left unchanged") from None
        except Exception as e:  # e.g. LibCST cannot parse what `ast` could: leave the file alone
            raise _LeaveAlone(f"cannot rewrite lines {first}-{last} ({_first_line(e)}); left unchanged") from None
        if lead:  # the form feeds stay where they were: before the statement, nowhere else
            rest = new_chunk.lstrip(" \t\f")
            if "\f" not in chunk[len(lead):]:
                rest = rest.replace("\f", "")  # none was there: LibCST's copies
            new_chunk = lead + rest
        new_chunk = _keep_form_feeds(chunk, new_chunk)
        if new_chunk != chunk:
            self.new_lines[first - 1:last] = [_restore_ends(new_chunk, ends)]
        else:
            self.new_lines[first - 1:last] = ["".join(self.lines[first - 1:last])]

    def _rewritten(self, chunk: str, first: int) -> str:
        """`chunk` through the LibCST passes. An indented statement is parsed inside `if True:`,
        so that statements split from it get its indentation; the wrapper line is dropped again."""
        indent = "" if self.whole else chunk[: len(chunk) - len(chunk.lstrip(" \t"))]
        wrapper_line = "if True:\n" if indent else ""
        chunk_tree = cst.parse_module(wrapper_line + chunk)
        wrapper = MetadataWrapper(chunk_tree, unsafe_skip_copy=True)
        pos = Positions(wrapper_line + chunk, wrapper.resolve(PositionProvider), first - (1 if wrapper_line else 0))
        bare_ok: dict[str, str] = {}
        survey = None
        if self.whole_file:
            survey = Survey(pos, wrapper.resolve(ExpressionContextProvider), self.module, self.is_package)
            chunk_tree.visit(survey)
            bare_ok = self._bare_verdicts(survey)
        rewriter = Rewriter(pos, self.module, self.is_package, self.fixable, self.known, bare_ok, survey,
                            self.names, self.verifier)
        rewriter.alias_uses = self.uses
        new_chunk = chunk_tree.visit(rewriter).code
        if wrapper_line:
            if not new_chunk.startswith(wrapper_line):
                raise ValueError("the rewrite changed the wrapper line")
            new_chunk = new_chunk[len(wrapper_line):]
        self.claimed |= rewriter.claimed
        self.refused.update(rewriter.refused)
        return new_chunk

    def _bare_verdicts(self, survey: Survey) -> dict[str, str]:
        """{module: new} of the bare imports whose statement and chains may be rewritten (and,
        with a verifier, whose new module resolves); the others' findings are refused."""
        bare_ok, bare_refused = bare_import_verdicts(survey, bindings(self.tree), self.fixable, self.removed)
        for name, new in list(bare_ok.items()):
            why = self.verifier.module(new) if self.verifier is not None else None
            if why is not None:  # neither the import nor its chains are rewritten
                del bare_ok[name]
                bare_refused[name] = f"not rewritten: {why}"
        for key, name in survey.bare:
            if key in self.fixable and name in bare_refused:
                self.refused[key] = f"bare `import {name}`: {bare_refused[name]}; rewrite it by hand"
        return bare_ok

    def sort_out(self, result: FileFix) -> None:
        """Each fixable finding into `result`: fixed where a pass claimed it and none refused it."""
        not_found = _NOT_FOUND if self.tree is not None else _NEWER_BARE
        for key, finding in sorted(self.fixable.items()):
            if key in self.claimed and key not in self.refused:
                result.fixed.append(finding)
            else:
                result.unfixable.append((finding, self.refused.get(key, not_found)))

    def checked(self, result: FileFix, path: str) -> FileFix:
        """`result` with the new bytes, once the new text passes the checks that apply: statement
        by statement, nothing outside the statements can change; a whole-file rewrite (a bare
        `import a.b` and its uses) is checked line by line (see the fuzz test); the new file must
        compile."""
        new_text = "".join(self.new_lines)
        if self.tree is None:  # LibCST alone reads it: no `compile` below; only its import lines may change
            return _checked_newer(result, self.text, new_text, self.encoding, self.data, self.lines, self.removed)
        outside = _changed_outside(self.lines, LINE_RE.findall(new_text), _last_parts(self.removed),
                                   _import_lines(self.tree)) if self.whole_file else None
        if outside is not None:
            result.take_back(f"the rewrite would change line {outside}, which names nothing removed; left unchanged")
            return result
        new = new_text.encode(self.encoding)
        if new == self.data:
            return result
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile(new, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            result.take_back(f"the rewritten file would not compile ({type(e).__name__}: {e}); left unchanged")
            return result
        result.new = new
        return result
