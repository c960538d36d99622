"""Over a run's findings: fix or diff each file, write it atomically, report what is left."""

from __future__ import annotations

import io
import os
import stat
import sys
import tokenize
from dataclasses import dataclass, field

from contracts.config_source import shown as printable
from contracts.engine.files import atomic_write
from contracts.engine.importers import Layout, importer_files
from contracts.engine.scan import decode_declared
from contracts.findings import Finding, shown_path
from contracts.fix.linediff import opcodes, unified_diff
from contracts.fix.rewrite import NameTargets
from contracts.fix.source import fix_source
from contracts.fix.syntax import LINE_RE
from contracts.fix.verify import Verifiers, given_verifier
from contracts.fix.write import Refused, open_for_fix, replace, writable_roots

RULE_ID = "removed-module"  # the rule whose findings this fixes (`contracts.rules.removed_module`)
# ... and the rules of `missing_imports`, whose replacement is the unique module that defines
# what the statement imports (`contracts.rules._missing`).
MISSING_RULES = ("missing-module", "missing-name")
FIXED_RULES = (RULE_ID, *MISSING_RULES)


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


@dataclass
class FixRun:
    """What `fix_findings` did (or, with write=False, would do)."""

    fixed: list[Finding] = field(default_factory=list)
    left: list[tuple[Finding, str]] = field(default_factory=list)  # (finding, why not)
    files: int = 0  # files rewritten (or that would be)
    edits: dict = field(default_factory=dict)  # rel -> (old bytes, new bytes), when not writing


def name_targets(cfg) -> NameTargets:
    """(module, name) -> where `from module import name` finds `name` now, by the contract whose
    removed prefix holds `module`: its per-name line, else its module line."""
    specs = list(cfg.removed)

    def targets(module: str, name: str):
        for spec in specs:
            if spec.removed_prefix_of(module):
                return spec.name_replacement(module, name)
        return None

    return targets


def apply_fixes(cfg, src: str, result, write: bool, out=None, verify_against: str | list[str] | None = None) -> int:
    """`fix_findings`; 0 when nothing is left to fix by hand, 1 otherwise."""
    return 1 if fix_findings(cfg, src, result, write, out, verify_against=verify_against).left else 0


def fix_findings(cfg, src: str, result, write: bool, out=None, notes=None, diff: bool = True,
                 verify_against: str | list[str] | None = None, named: list[str] | None = None) -> FixRun:
    """Fix (write=True) or show as a unified diff (write=False, `diff`) every fixable
    `removed-module` finding of `result`. Prints one line per rewritten file and per finding
    left, then a summary, to `notes` (default: `out` when writing, stderr for a diff, whose
    stdout is the patch alone; False: nowhere). With `verify_against` (a tree: a directory, a
    wheel or name==version; or a list of them, each for its own top-level packages), a rewrite
    whose import would not resolve there is reported and not made. Files are read and written
    only through `write.py`: under the root packages, the importer paths, or `named` (the PATHs
    given)."""
    out = out if out is not None else sys.stdout
    if notes is None:
        notes = out if write else sys.stderr
    # No target given: the checked tree itself is one (its own packages' rewrites must resolve).
    verifier, verify_against = given_verifier(cfg, src, verify_against)
    fixer = _Fixer(cfg, src, result, write, out, notes, diff, verifier, named)
    by_path = _by_path(result.findings)
    seen: set[str] = set()
    for rel in sorted(by_path):
        path = os.path.join(src, *rel.split("/"))
        if os.path.realpath(path) in seen:
            continue  # a link to a file fixed under its own name (both were named)
        seen.add(os.path.realpath(path))
        fixer.fix_file(rel, path, sorted(by_path[rel]))
    run = fixer.run
    if notes:
        verb = "Fixed" if write else "Would fix"
        print(f"{verb} {_plural(len(run.fixed), 'import')} in {_plural(run.files, 'file')}"
              f"{_checked(verifier, verify_against)}; {_plural(len(run.left), 'finding')} not auto-fixable.",
              file=notes)
    return run


def _by_path(findings: list[Finding]) -> dict[str, list[Finding]]:
    """The findings `--fix` works on (`FIXED_RULES`), by file."""
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        if f.rule in FIXED_RULES:
            by_path.setdefault(f.path, []).append(f)
    return by_path


class _Fixer:
    """What every file of one `fix_findings` run shares: the removed prefixes, the name targets,
    the verifier, the writable roots, where notes go, and the `FixRun` being filled."""

    def __init__(self, cfg, src: str, result, write: bool, out, notes, diff: bool, verifier, named) -> None:
        self.src, self.write, self.out, self.notes, self.diff, self.verifier = src, write, out, notes, diff, verifier
        self.run = FixRun()
        removed = tuple(p for spec in cfg.removed for p in spec.removed)
        # A missing module is, for the rewrite, a removed one: chains through it are its uses.
        self.removed = removed + tuple(sorted({f.imported.partition(":")[0] for f in result.findings
                                               if f.rule == "missing-module"}))
        self.targets = name_targets(cfg)
        self.allowed, self.refused = writable_roots(src, cfg.root_packages, _importer_files(cfg, src, named))

    def fix_file(self, rel: str, path: str, findings: list[Finding]) -> None:
        """Read one file, fix or diff it, write it back (when writing), and say what happened."""
        shown = shown_path(rel, self.src)  # what the output names: relative to cwd (see findings.py)
        try:
            snap = open_for_fix(path, self.allowed, self.refused)
        except OSError as e:
            self._unreadable(shown, findings, e)
            return
        data = snap.data
        try:
            is_package = rel.rsplit("/", 1)[-1] == "__init__.py"
            outcome = fix_source(data, findings[0].importer, is_package, findings, self.removed, path,
                                 names=self.targets, verifier=self.verifier)
            if outcome.new is not None and self.write:
                _write(snap, outcome)
        finally:
            snap.close()
        if outcome.new is not None and not self.write:
            self.run.edits[rel] = (data, outcome.new)
            if self.diff:
                self.out.write(_diff(shown, data, outcome.new))
        self._account(shown, outcome)

    def _unreadable(self, shown: str, findings: list[Finding], e: OSError) -> None:
        """A file that cannot be opened for fixing: each of its findings is left, with why."""
        reason = str(e) if isinstance(e, Refused) else f"cannot read the file: {e.strerror or e}"
        self.run.left.extend((f, reason) for f in findings)
        if self.notes:
            for f in findings:
                print(f"{shown}:{f.line}:{f.col}: not auto-fixable: `{f.imported}`: {reason}", file=self.notes)

    def _account(self, shown: str, outcome) -> None:
        """One file's outcome into the run, and its note lines."""
        run, notes = self.run, self.notes
        label = printable(shown)  # in the notes, control characters escaped (the diff header is _diff's)
        if outcome.fixed:
            run.fixed.extend(outcome.fixed)
            run.files += 1
            if notes:
                print(f"{label}: {'fixed' if self.write else 'would fix'} {_plural(len(outcome.fixed), 'import')}",
                      file=notes)
        if notes:
            for f, reason in sorted(outcome.unfixable):
                print(f"{label}:{f.line}:{f.col}: not auto-fixable: `{f.imported}`: {printable(reason)}", file=notes)
        run.left.extend(outcome.unfixable)


def _write(snap, outcome) -> None:
    """Replace the file with `outcome.new`; when that fails, its fixed findings are left, with why."""
    try:
        replace(snap, outcome.new)
    except Refused as e:
        outcome.take_back(str(e))
    except OSError as e:
        outcome.take_back(f"cannot write the file ({e.strerror or e}); left unchanged")


def _checked(verifier, label: str | None) -> str:
    """The summary's account of verification: against which trees (when given), and which
    top-level packages no tree given holds (made, not verified)."""
    if not label:
        return ""
    out = f", every rewritten import checked against {label}"
    if verifier.unverified:
        outside = ", ".join(f"`{m}`" for m in sorted(verifier.unverified))
        holder = (f"a distribution none of {label} holds" if isinstance(verifier, Verifiers)
                  else f"another distribution than {label} holds")
        out += f" (those into {outside}, {holder}, not verified)"
    return out


def _importer_files(cfg, src: str, named) -> list[str]:
    """The files outside the root packages that may be fixed: those `importer_paths` names, and
    the `.py` files named on the command line."""
    files = [os.path.abspath(p) for p in named or () if p.endswith(".py") and os.path.isfile(p)]
    if getattr(cfg, "importer_paths", ()):
        inside = [os.path.join(src, r) for r in cfg.root_packages]
        files += importer_files(Layout(cfg.base, tuple(cfg.exclude), tuple(cfg.importer_paths)), inside)[0]
    return files


def line_edits(old: bytes, new: bytes) -> list[tuple[int, int, str]]:
    """The changed line ranges of a rewrite: (first line, line after the last, new text), with
    1-based line numbers of `old` (what SARIF's `fixes` and editors apply)."""
    old_lines, new_lines = LINE_RE.findall(_decode(old)), LINE_RE.findall(_decode(new))
    return [(i1 + 1, i2 + 1, "".join(new_lines[j1:j2]))
            for tag, i1, i2, j1, j2 in opcodes(old_lines, new_lines) if tag != "equal"]


def _one_line(name: str) -> str:
    """A file name fit for a diff header: a newline (or any control character) in it is written
    as its escape, so it cannot end the header and start lines of its own."""
    return name if name.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _diff(rel: str, old: bytes, new: bytes) -> str:
    old_text, new_text = _decode(old), _decode(new)
    rel = _one_line(rel)
    old_name, new_name = (rel, rel) if os.path.isabs(rel) else (f"a/{rel}", f"b/{rel}")
    lines = unified_diff(LINE_RE.findall(old_text), LINE_RE.findall(new_text), old_name, new_name)
    text = "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in lines)
    return text


def _decode(data: bytes) -> str:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return decode_declared(data, encoding)
