"""Every `.py` file under the root packages, namespace directories included, with coverage.

grimp walks only directories that have an `__init__.py`; a directory without one inside a root
package (an implicit namespace package, as upstream `sglang/srt` is) is walked here too. Nothing
is skipped silently: what cannot be walked is returned in `skipped` with a reason.
"""

from __future__ import annotations

import functools
import os
import stat as stat_mod
from dataclasses import dataclass, field

# Deeper than any real package; bounds the walk on pathological trees.
MAX_DEPTH = 256


@dataclass(frozen=True)
class SourceFile:
    path: str  # absolute
    rel: str  # relative to the source directory, '/' separators
    module: str  # dotted name ('pkg.sub.mod'; a package's __init__ is 'pkg.sub')
    is_package: bool  # an __init__.py
    mtime_ns: int
    size: int


@dataclass
class Discovery:
    src: str
    files: list[SourceFile] = field(default_factory=list)
    # (relative path, reason) for every path under a root that was not walked or read
    skipped: list[tuple[str, str]] = field(default_factory=list)
    missing_roots: list[str] = field(default_factory=list)

    @functools.cached_property
    def by_module(self) -> dict[str, SourceFile]:
        out: dict[str, SourceFile] = {}
        for f in self.files:
            # A package and a module of the same name: Python imports the package.
            if f.module not in out or f.is_package:
                out[f.module] = f
        return out


def discover(src: str, roots: tuple[str, ...] | list[str]) -> Discovery:
    src = os.path.abspath(src)
    result = Discovery(src=src)
    real_src = os.path.realpath(src)
    for root in roots:
        top = os.path.join(src, root)
        if os.path.isdir(top):
            _walk(result, top, [root], real_src, set(), 0)
        elif os.path.isfile(top + ".py"):
            _add_file(result, top + ".py", [root], is_init=False)
        else:
            result.missing_roots.append(root)
    result.files.sort(key=lambda f: f.rel)
    return result


def _rel(result: Discovery, path: str) -> str:
    return os.path.relpath(path, result.src).replace(os.sep, "/")


def _add_file(result: Discovery, path: str, parts: list[str], is_init: bool, st=None) -> None:
    try:
        st = st or os.stat(path)
    except OSError as e:
        result.skipped.append((_rel(result, path), f"cannot stat: {e.strerror or e}"))
        return
    result.files.append(
        SourceFile(path, _rel(result, path), ".".join(parts), is_init, st.st_mtime_ns, st.st_size)
    )


def _walk(result: Discovery, directory: str, parts: list[str], real_src: str,
          seen: set[tuple[int, int]], depth: int) -> None:
    if depth > MAX_DEPTH:
        result.skipped.append((_rel(result, directory), f"nested deeper than {MAX_DEPTH} directories"))
        return
    try:
        st = os.stat(directory)
    except OSError as e:
        result.skipped.append((_rel(result, directory), f"cannot stat directory: {e.strerror or e}"))
        return
    key = (st.st_dev, st.st_ino)
    if key in seen:
        result.skipped.append((_rel(result, directory), "symlink loop (directory already walked)"))
        return
    seen = seen | {key}
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as e:
        result.skipped.append((_rel(result, directory), f"cannot list directory: {e.strerror or e}"))
        return
    for entry in entries:
        name = entry.name
        try:
            is_link = entry.is_symlink()
            if is_link:
                target = os.path.realpath(entry.path)
                if not (target == real_src or target.startswith(real_src + os.sep)):
                    result.skipped.append((_rel(result, entry.path), "symlink to outside the tree"))
                    continue
            est = entry.stat()  # follows links (inside the tree only, checked above)
        except OSError as e:
            if entry.is_symlink():
                result.skipped.append((_rel(result, entry.path), "broken symlink or symlink loop"))
            else:
                result.skipped.append((_rel(result, entry.path), f"cannot stat: {e.strerror or e}"))
            continue
        if stat_mod.S_ISDIR(est.st_mode):
            if name == "__pycache__":
                continue
            _walk(result, entry.path, parts + [name], real_src, seen, depth + 1)
        elif stat_mod.S_ISREG(est.st_mode) and name.endswith(".py"):
            if name == "__init__.py":
                _add_file(result, entry.path, parts, True, est)
            else:
                _add_file(result, entry.path, parts + [name[:-3]], False, est)
