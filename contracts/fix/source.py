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

from contracts.engine.scan import decode_declared
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
    from contracts.engine.cst_scan import parse  # (LibCST's whole-file parse: only for such a file)
    from contracts.engine.scan import other_syntax_may_read

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
    from contracts.engine.cst_scan import parse

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
        outside = _changed_outside(lines, LINE_RE.findall(new_text), {p.rsplit(".", 1)[-1] for p in removed},
                                   imports)
        if outside is not None:
            reason = f"the rewrite would change line {outside}, which names nothing removed; left unchanged"
    if reason is not None:
        result.unfixable = [(f, reason) for f in result.fixed] + result.unfixable
        result.fixed = []
        return result
    new = new_text.encode(encoding)
    result.new = None if new == data else new
    return result


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


def fix_source(data: bytes, module: str, is_package: bool, findings: list[Finding],
               removed: tuple[str, ...], path: str = "<file>", names: NameTargets | None = None,
               verifier: Verifier | None = None) -> FileFix:
    """Rewrite one file's `removed-module` findings. Pure: takes bytes, returns bytes.

    Only the top-level statements that hold a finding go through LibCST (parsing a whole large
    file costs seconds); the rest of the file is not touched at all. A file with a bare
    `import a.b.c` to fix is parsed whole: its chains can be anywhere.
    """
    result = FileFix(None)
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
    if not fixable:
        return result
    known = {(f.line, f.col, f.imported) for f in findings}

    def refuse_all(reason: str) -> FileFix:
        result.unfixable.extend((f, reason) for f in fixable.values())
        return result

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = decode_declared(data, encoding)
        if text.encode(encoding) != data:
            return refuse_all(f"the file does not survive decoding as {encoding}; left unchanged")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text.lstrip("\ufeff"))
    except (SyntaxError, ValueError, LookupError, RecursionError, MemoryError) as e:  # UnicodeError is a ValueError
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        newer = _newer_syntax(data, e)
        if newer is None:
            return refuse_all(f"the file cannot be parsed ({first}); left unchanged")
        (encoding, text), tree = newer, None  # only LibCST reads it: rewritten whole, checked below
    lines = LINE_RE.findall(text)
    # A file only LibCST reads (newer syntax than this Python's, `_newer_syntax`) goes to it whole.
    uses = alias_attributes(tree) if verifier is not None and tree is not None else {}
    whole = tree is not None and bare_keys(tree, fixable)
    pieces = [(1, len(lines))] if whole or tree is None else statement_ranges(tree, lines, {key[0] for key in fixable})
    new_lines = list(lines)
    claimed: set[Key] = set()
    refused: dict[Key, str] = {}
    # Replace from the end, so earlier line numbers stay valid in `new_lines`.
    for first, last in reversed(pieces):
        original = "".join(lines[first - 1:last])
        # LibCST is given the statement with `\n` line ends (it drops a lone `\r`) and may drop
        # or copy a leading form feed; both are put back exactly below.
        lead, chunk, ends = _normalized(lines[first - 1:last], whole or tree is None)
        indent = "" if whole or tree is None else chunk[: len(chunk) - len(chunk.lstrip(" \t"))]
        # An indented statement is parsed inside `if True:`, so that statements split from it
        # get its indentation; the wrapper line is dropped again below.
        wrapper_line = "if True:\n" if indent else ""
        try:
            chunk_tree = cst.parse_module(wrapper_line + chunk)
            wrapper = MetadataWrapper(chunk_tree, unsafe_skip_copy=True)
            pos = Positions(wrapper_line + chunk, wrapper.resolve(PositionProvider),
                             first - (1 if wrapper_line else 0))
            bare_ok: dict[str, str] = {}
            survey = None
            if whole:
                survey = Survey(pos, wrapper.resolve(ExpressionContextProvider), module, is_package)
                chunk_tree.visit(survey)
                bare_ok, bare_refused = bare_import_verdicts(survey, bindings(tree), fixable, removed)
                for name, new in list(bare_ok.items()):
                    why = verifier.module(new) if verifier is not None else None
                    if why is not None:  # neither the import nor its chains are rewritten
                        del bare_ok[name]
                        bare_refused[name] = f"not rewritten: {why}"
                for key, name in survey.bare:
                    if key in fixable and name in bare_refused:
                        refused[key] = f"bare `import {name}`: {bare_refused[name]}; rewrite it by hand"
            rewriter = Rewriter(pos, module, is_package, fixable, known, bare_ok, survey, names, verifier)
            rewriter.alias_uses = uses
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
        if lead:  # the form feeds stay where they were: before the statement, nowhere else
            rest = new_chunk.lstrip(" \t\f")
            if "\f" not in chunk[len(lead):]:
                rest = rest.replace("\f", "")  # none was there: LibCST's copies
            new_chunk = lead + rest
        new_chunk = _keep_form_feeds(chunk, new_chunk)
        if new_chunk != chunk:
            new_lines[first - 1:last] = [_restore_ends(new_chunk, ends)]
        else:
            new_lines[first - 1:last] = [original]
    for key, finding in sorted(fixable.items()):
        if key in claimed and key not in refused:
            result.fixed.append(finding)
        else:
            result.unfixable.append((finding, refused.get(key, _NOT_FOUND if tree is not None else _NEWER_BARE)))
    if not result.fixed:
        return result
    new_text = "".join(new_lines)
    # Statement by statement, nothing outside the statements can change; a whole-file rewrite
    # (a bare `import a.b` and its uses) is checked line by line (see the fuzz test).
    if tree is None:  # LibCST alone reads it: no `compile` below; only its import lines may change
        return _checked_newer(result, text, new_text, encoding, data, lines, removed)
    outside = _changed_outside(lines, LINE_RE.findall(new_text), {p.rsplit(".", 1)[-1] for p in removed},
                               _import_lines(tree)) if whole else None
    if outside is not None:
        reason = f"the rewrite would change line {outside}, which names nothing removed; left unchanged"
        result.unfixable = [(f, reason) for f in result.fixed] + result.unfixable
        result.fixed = []
        return result
    new = new_text.encode(encoding)
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
