"""Findings: plain data every face renders and every rule returns."""

from __future__ import annotations

import os

from contracts._record import Record


class Finding(Record, frozen=True, order=True):
    """One thing wrong, at one place.

    `path` is relative to the source directory with `/` separators (`displayed` makes it what
    every output prints: relative to the working directory, absolute outside it); `line` is the 1-based first
    line of the offending statement (or string literal); `col` is 1-based. `imported` is what was
    referenced, `replacement` what to write instead (None when there is nothing to suggest).
    """

    path: str
    line: int
    col: int
    rule: str
    importer: str
    imported: str
    message: str
    replacement: str | None = None

    def __init__(self, path: str, line: int, col: int, rule: str, importer: str, imported: str, message: str,
                 replacement: str | None = None) -> None:
        self.__dict__.update(path=path, line=line, col=col, rule=rule, importer=importer, imported=imported,
                             message=message, replacement=replacement)

    # Written out as `dataclass` writes them: sorting findings and putting them in sets is hot.
    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return (self.path, self.line, self.col, self.rule, self.importer, self.imported, self.message,
                    self.replacement) == (other.path, other.line, other.col, other.rule, other.importer,
                                          other.imported, other.message, other.replacement)
        return NotImplemented

    def __lt__(self, other):
        if other.__class__ is self.__class__:
            return (self.path, self.line, self.col, self.rule, self.importer, self.imported, self.message,
                    self.replacement) < (other.path, other.line, other.col, other.rule, other.importer,
                                         other.imported, other.message, other.replacement)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.path, self.line, self.col, self.rule, self.importer, self.imported, self.message,
                     self.replacement))

    def to_json(self) -> dict:
        return {key: getattr(self, key) for key in JSON_FIELDS}  # (`asdict` deep-copies: 10x slower)

    def as_tuple(self) -> tuple:
        """The fields in order, as `Finding(*t)` takes them (what the cache stores)."""
        return (self.path, self.line, self.col, self.rule, self.importer, self.imported, self.message,
                self.replacement)

    @property
    def baseline_key(self) -> tuple[str, str, str]:
        """Identity that survives unrelated edits (no line numbers)."""
        return (self.rule, self.importer, self.imported)


JSON_FIELDS = ("rule", "path", "line", "col", "importer", "imported", "message", "replacement")


def shown_path(path: str, src: str, cwd: str | None = None) -> str:
    """`path` as a finding carries it (relative to `src`, `/`) as every output prints it: relative
    to the directory the command runs in, with `/`, or absolute when outside it. So a GitHub
    annotation's `file=` and an editor link name the file whatever `--src` was."""
    full = os.path.normpath(path if os.path.isabs(path) else os.path.join(src, *path.split("/")))
    here = os.getcwd() if cwd is None else cwd
    # As given, then resolved (a symlinked cwd): resolving costs syscalls per path component,
    # so only when the paths as given do not do (0.3 s for upstream's 730 findings otherwise).
    for resolve in (False, True):
        a, b = (os.path.realpath(full), os.path.realpath(here)) if resolve else (full, here)
        try:
            rel = os.path.relpath(a, b)
        except ValueError:  # another drive
            continue
        if rel != os.pardir and not rel.startswith(os.pardir + os.sep):
            return rel.replace(os.sep, "/")
    return full


def displayed(findings, src: str, cwd: str | None = None) -> list[Finding]:
    """`findings` with `shown_path` paths, also where a message quotes its own path. The one place
    paths are made for output: every renderer and face takes its findings from here."""
    out = []
    here = os.getcwd() if cwd is None else cwd
    # Run from `src` itself (the usual case), a normalized relative path is already the answer
    # (`os.path.relpath` costs ~20 us a path, paid by every finding of a warm run).
    at_src = os.sep == "/" and os.path.normpath(src) == os.path.normpath(here)
    paths: dict[str, str] = {}  # a file's findings share its path (a file often has several)
    for f in findings:
        shown = paths.get(f.path)
        if shown is None:
            p = f.path
            plain = at_src and not p.startswith(("/", "../")) and p != ".." and os.path.normpath(p) == p
            shown = paths[p] = p if plain else shown_path(p, src, here)
        if shown != f.path:
            f = Finding(shown, f.line, f.col, f.rule, f.importer, f.imported,
                        f.message.replace(f"`{f.path}`", f"`{shown}`"), f.replacement)
        out.append(f)
    return out
