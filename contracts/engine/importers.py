"""Files outside the root packages that import them: tests, benchmarks, scripts (`importer_paths`),
and what `exclude` leaves out of every walk.

A repository may keep its package in one directory and much code beside it (`test/`,
`benchmark/`, `scripts/`): a stale import there breaks just the same. Those files are importers, not modules
of the graph: they are scanned for references (for the rules that need no graph),
never given graph edges. They are read on every run, never cached, so the cached findings of
the package never hide an edit to a test; only a file that contains a word a rule looks for is
parsed, and only around those words. (With PATHs, as in pre-commit, only the files under them
are read.)

Patterns are relative to the config file's directory, with `/`: a plain path names that file or
everything under that directory; `*`, `?` and `[...]` match within one path segment and `**` any
number of segments (`docs/**/*.py`, `**/generated`). A pattern matches a path when it matches
the path or one of its parent directories.
"""

from __future__ import annotations

import os
import re

from contracts._record import Record
from contracts.globs import compile_pattern  # noqa: F401  (its home before `contracts.globs`)

_GLOB_CHARS = re.compile(r"[*?\[]")
OUTSIDE = "symlink to outside the tree; not followed"


class Layout(Record, hidden=("_compiled",)):
    """`exclude` and `importer_paths` of one config, relative to `base` (its directory)."""

    base: str  # absolute
    exclude: tuple[str, ...]
    importer_paths: tuple[str, ...]
    _compiled: list

    def __init__(self, base: str, exclude: tuple[str, ...] = (), importer_paths: tuple[str, ...] = (),
                 _compiled: list | None = None) -> None:
        self.base, self.exclude, self.importer_paths = base, exclude, importer_paths
        self._compiled = [compile_pattern(p) for p in exclude]

    def rel(self, path: str) -> str | None:
        """`path` relative to the base with `/`, or None outside it."""
        rel = os.path.relpath(os.path.abspath(path), self.base)
        if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
            return None
        return rel.replace(os.sep, "/")

    def excluded_by(self, path: str) -> str | None:
        """The `exclude` pattern that leaves `path` out, or None."""
        if not self.exclude:
            return None
        rel = self.rel(path)
        if rel is None or rel == ".":
            return None
        for pattern, regex in zip(self.exclude, self._compiled):
            if regex.match(rel):
                return pattern
        return None


def importer_files(layout: Layout, inside: list[str], skipped: list | None = None) -> tuple[list[str], list[str]]:
    """(the `.py` files `importer_paths` names, absolute and sorted; the entries that name no
    file). Files under `inside` (the root packages' directories: their files are modules) and
    excluded files are left out; directories are walked without following symlinks, skipping
    `__pycache__` and hidden directories; a pattern is matched against that walk (never
    `glob`, which follows symlinked directories: links to `.` made it exponential). As in the
    package walk, a symlink whose target lies outside the repository (the base's real path) is
    not followed: `--fix` writes only what the tree holds. `skipped`, when given, receives
    (path, reason) for each such link."""
    walker = _ImporterWalk(layout, inside, skipped)
    empty: list[str] = []
    for entry in layout.importer_paths:
        if not walker.entry(entry):
            empty.append(entry)
    return sorted(walker.found), empty


class _ImporterWalk:
    """One `importer_files` run: what it found, and where the tree ends."""

    def __init__(self, layout: Layout, inside: list[str], skipped: list | None) -> None:
        self.layout = layout
        self.inside = sorted({os.path.abspath(p) for p in inside} | {os.path.realpath(p) for p in inside})
        self.top = os.path.realpath(layout.base)
        self.found: set[str] = set()
        self.skipped = skipped if skipped is not None else []

    def is_inside(self, path: str) -> bool:
        # realpath (a dozen system calls) only for a link: a walk does not follow directory links
        real = os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)
        return any(real == top or real.startswith(top + os.sep) for top in self.inside)

    def leaves_the_tree(self, path: str) -> bool:
        """Whether `path` (a link, or reached through one) resolves outside the base; reported."""
        real = os.path.realpath(path)
        if real == self.top or real.startswith(self.top + os.sep):
            return False
        self.skipped.append((path, OUTSIDE))
        return True

    def add(self, path: str, matcher=None) -> bool:
        if not path.endswith(".py") or not os.path.isfile(path) or self.is_inside(path):
            return False
        if self.layout.excluded_by(path) or (matcher is not None and not matcher.match(self.layout.rel(path) or "")):
            return False
        if os.path.islink(path) and self.leaves_the_tree(path):
            return False
        self.found.add(os.path.abspath(path))
        return True

    def walk(self, top: str, matcher=None) -> bool:
        any_file = False
        for directory, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith(".")
                                 and not self.layout.excluded_by(os.path.join(directory, d))
                                 and not self.is_inside(os.path.join(directory, d)))
            for name in filenames:
                any_file = self.add(os.path.join(directory, name), matcher) or any_file
        return any_file

    def entry(self, entry: str) -> bool:
        full = os.path.join(self.layout.base, entry)
        matcher = None
        if _GLOB_CHARS.search(entry):
            matcher = compile_pattern(entry)
            full = os.path.join(self.layout.base, *matcher.literal_prefix)
        if self.layout.excluded_by(full) or not os.path.lexists(full):
            return False
        if self.leaves_the_tree(full):
            return False
        if os.path.isdir(full) and not self.is_inside(full):
            return self.walk(full, matcher)
        return os.path.isfile(full) and self.add(full, matcher)


def importer_name(layout: Layout, path: str) -> str:
    """What findings name a file outside the packages as: its dotted path from the base
    (`test.srt.test_x`) when every part is an identifier, else its path (`scripts/run-it.py`)."""
    rel = layout.rel(path) or os.path.abspath(path).replace(os.sep, "/")
    parts = rel[:-3].split("/") if rel.endswith(".py") else rel.split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    if parts and all(p.isidentifier() for p in parts):
        return ".".join(parts)
    return rel
