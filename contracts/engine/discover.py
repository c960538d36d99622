"""Every `.py` file under the root packages, namespace directories included, with coverage.

grimp walks only directories that have an `__init__.py`; a directory without one inside a root
package (an implicit namespace package) is walked here too. Nothing is skipped silently: what
is not walked or not read is returned in `skipped` with a reason, and the rule `not-scanned`
reports each. The walk is bounded on hostile trees:

- every real directory is walked once, under its own name: a symlink to a directory already
  walked (a loop, or an alias of a sibling) is reported, not followed again, so links cannot
  make the walk loop or grow exponentially;
- a symlink that leaves the tree is not followed (what it points to is not part of the package);
- nesting deeper than `MAX_DEPTH` directories is reported, not walked;
- a `.py` entry that is not a regular file (a FIFO, a socket, a device) is reported, never
  opened (reading a FIFO would block forever);
- a name that is not valid UTF-8 is reported (it cannot be a module name, nor printed as one);
- `mod.py` beside a package `mod/` is reported: Python imports the package and never that file,
  and two files with one module name would blur the import graph.
"""

from __future__ import annotations

import errno
import functools
import os
import stat as stat_mod
from collections import deque
from operator import attrgetter

from contracts._record import Record

_NAME = attrgetter("name")
_REL = attrgetter("rel")

# Deeper than any real package nests; bounds the walk on hostile trees.
MAX_DEPTH = 256

_KINDS = {stat_mod.S_IFIFO: "a FIFO", stat_mod.S_IFSOCK: "a socket", stat_mod.S_IFCHR: "a character device",
          stat_mod.S_IFBLK: "a block device"}


class SourceFile(Record, frozen=True):
    path: str  # absolute
    rel: str  # relative to the source directory, '/' separators
    module: str  # dotted name ('pkg.sub.mod'; a package's __init__ is 'pkg.sub')
    is_package: bool  # an __init__.py
    mtime_ns: int  # (0: not known)
    size: int  # (-1: not known, the walk did not `stat` it: `discover`'s `sizes`)
    ctime_ns: int  # as the walk saw it (0: not known, stat again)

    def __init__(self, path: str, rel: str, module: str, is_package: bool, mtime_ns: int, size: int,
                 ctime_ns: int = 0) -> None:
        self.__dict__.update(path=path, rel=rel, module=module, is_package=is_package, mtime_ns=mtime_ns,
                             size=size, ctime_ns=ctime_ns)


class Discovery(Record):
    src: str
    files: list[SourceFile]
    # (relative path, reason) for every path under a root that was not walked or read
    skipped: list[tuple[str, str]]
    missing_roots: list[str]
    # Modules that are not `.py` files: every directory (a package, or a namespace package
    # without `__init__.py`), `.pyi` stubs and extension modules (`.so`, `.pyd`), by name ->
    # "directory" / "stub" / "extension" / "excluded" (by the config: it and everything below
    # it exist, unread). What exists is the union of these and `files`.
    other_modules: dict[str, str]
    # (path, mtime_ns, ctime_ns) of every directory walked, and whether the walk saw all there
    # is under the roots: no link, nothing excluded, skipped or dropped. Then `dirs` and `files`
    # are the tree's full state (the cache's stamp is made of them, not of a second walk).
    dirs: list[tuple[str, int, int]]
    whole: bool
    unwalked: list[str]  # directories under a root not entered (a dotted name)

    def __init__(self, src: str, files: list[SourceFile] | None = None, skipped: list[tuple[str, str]] | None = None,
                 missing_roots: list[str] | None = None, other_modules: dict[str, str] | None = None,
                 dirs: list[tuple[str, int, int]] | None = None, whole: bool = True,
                 unwalked: list[str] | None = None) -> None:
        self.src = src
        self.files = [] if files is None else files
        self.skipped = [] if skipped is None else skipped
        self.missing_roots = [] if missing_roots is None else missing_roots
        self.other_modules = {} if other_modules is None else other_modules
        self.dirs = [] if dirs is None else dirs
        self.whole = whole
        self.unwalked = [] if unwalked is None else unwalked

    @functools.cached_property
    def by_module(self) -> dict[str, SourceFile]:
        out: dict[str, SourceFile] = {}
        for f in self.files:
            # A package and a module of the same name: Python imports the package.
            if f.module not in out or f.is_package:
                out[f.module] = f
        return out


def discover(src: str, roots: tuple[str, ...] | list[str], layout=None, sizes: bool = True) -> Discovery:
    """`layout` (an `importers.Layout`): what its `exclude` names is not walked, not reported.
    `sizes`: each `.py` file `stat`ed for its size and times; without, a regular file is told by
    its directory entry, and its size and times are -1 and 0 (not known: a run that keeps no
    cache has no use for them, and a `stat` per file was 12 of the 29 ms of 0.5.23's walk)."""
    src = os.path.abspath(src)
    result = Discovery(src=src)
    walker = _Walker(result)
    walker.layout, walker.sizes = layout, sizes
    for root in roots:
        top = os.path.join(src, root)
        if os.path.islink(top) or os.path.islink(top + ".py"):
            result.whole = False
        if os.path.isdir(top):
            walker.inside.append(os.path.realpath(top))  # a root may itself be a link
    for root in roots:
        top = os.path.join(src, root)
        found = False
        if os.path.isdir(top):
            walker.walk(top, [root], 0)
            found = True
        if os.path.isfile(top + ".py"):  # beside a package `root/`, reported as shadowed below
            walker.add_file(top + ".py", [root], is_init=False)
            found = True
        if not found:
            result.missing_roots.append(root)
    walker.follow_links()
    _drop_shadowed(result)
    result.files.sort(key=_REL)
    result.skipped.sort()
    return result


class _Walker:
    def __init__(self, result: Discovery) -> None:
        self.result = result
        self.inside = [os.path.realpath(result.src)]
        self._top = os.path.join(result.src, "")
        self.walked: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) -> rel of its walk
        self.links: deque[tuple[str, list[str], int]] = deque()  # symlinked dirs, walked last

    def rel(self, path: str) -> str:
        top = self._top
        # Below the source directory (every path the walk makes): cut the prefix off, not the
        # far slower `relpath` (a large share of the walk).
        rel = path[len(top):] if path.startswith(top) and ".." not in path else os.path.relpath(path, self.result.src)
        rel = rel.replace(os.sep, "/") if os.sep != "/" else rel
        if rel.isascii():
            return rel
        # A name that is not UTF-8 arrives with surrogate escapes; show its bytes instead.
        return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

    def skip(self, path: str, reason: str) -> None:
        self.result.whole = False
        self.result.skipped.append((self.rel(path), reason))

    def add_file(self, path: str, parts: list[str], is_init: bool, st=None) -> None:
        try:
            st = st or os.stat(path)
        except OSError as e:
            self.skip(path, f"cannot stat: {e.strerror or e}")
            return
        self.result.files.append(
            SourceFile(path, self.rel(path), ".".join(parts), is_init, st.st_mtime_ns, st.st_size, st.st_ctime_ns))

    def _is_inside(self, target: str) -> bool:
        return any(target == top or target.startswith(top + os.sep) for top in self.inside)

    importers = False  # walking a directory no import can name (`walk_importers`)
    sizes = True  # `discover`'s

    def walk(self, directory: str, parts: list[str], depth: int) -> None:
        if depth and "." in parts[-1] and not self.importers:
            self.walk_importers(directory, parts, depth)
            return
        entries = self._enter(directory, parts, depth)
        if entries is None:
            return
        if self.layout is not None and self.layout.exclude:
            for entry in entries:
                self._entry(entry, parts, depth)
        else:
            self._walk_plain(directory, entries, parts, depth)

    def _enter(self, directory: str, parts: list[str], depth: int) -> list[os.DirEntry] | None:
        """`directory`'s entries, sorted by name, once it is recorded as walked and as a module;
        None where it is not walked (too deep, seen already under another name, unreadable)."""
        if depth > MAX_DEPTH:
            self.skip(directory, f"nested deeper than {MAX_DEPTH} directories; not walked")
            return None
        try:
            st = os.stat(directory)
        except OSError as e:
            self.skip(directory, f"cannot stat directory: {e.strerror or e}")
            return None
        self.result.dirs.append((directory, st.st_mtime_ns, st.st_ctime_ns))
        key = (st.st_dev, st.st_ino)
        if key in self.walked:  # a bind mount or a hard-linked directory: walk it once
            self.skip(directory, f"same directory as `{self.walked[key]}`, scanned there")
            return None
        self.walked[key] = self.rel(directory)
        self.result.other_modules[".".join(parts)] = "directory"
        try:
            with os.scandir(directory) as it:
                return sorted(it, key=_NAME)
        except OSError as e:
            self.skip(directory, f"cannot list directory: {e.strerror or e}")
            return None

    def _walk_plain(self, directory: str, entries: list[os.DirEntry], parts: list[str], depth: int) -> None:
        """What nearly every entry is -- an ASCII name, no link, a directory or a regular `.py`
        file -- is taken here, its relative path and module name made from its directory's (no
        `rel` per file); anything else goes through `_entry`, which says why it is skipped."""
        rel_dir = self.rel(directory) + "/"
        prefix = ".".join(parts)
        files = self.result.files
        for entry in entries:
            name = entry.name
            try:
                plain = name.isascii() and not entry.is_symlink()
                if plain and entry.is_dir(follow_symlinks=False):
                    if name != "__pycache__":
                        self.walk(entry.path, parts + [name], depth + 1)
                    continue
                st = self._regular(entry) if plain and name.endswith(".py") else None
            except OSError:
                st = None
            if st is None:
                self._entry(entry, parts, depth)
            else:
                init = name == "__init__.py"
                files.append(SourceFile(entry.path, rel_dir + name, prefix if init else f"{prefix}.{name[:-3]}", init,
                                        *st))

    def _regular(self, entry: os.DirEntry) -> tuple[int, int, int] | None:
        """(mtime_ns, size, ctime_ns) of a regular file's entry (not `sizes`: -1 and 0 for what is
        not known), or None where it is no regular file (`_entry` says what it is)."""
        if not self.sizes:
            return (0, -1, 0) if entry.is_file(follow_symlinks=False) else None
        st = entry.stat(follow_symlinks=False)
        return (st.st_mtime_ns, st.st_size, st.st_ctime_ns) if stat_mod.S_ISREG(st.st_mode) else None

    def walk_importers(self, directory: str, parts: list[str], depth: int) -> None:
        """A directory with a dot in its name (`.agents/`, `v1.2/`): `a.b/x.py` would be module
        `a.b.x`, which is `a/b/x.py`, so no import reaches its files; they are scripts (an agent's
        skills, a tool's helpers) that import the package, read as `importer_paths` files are:
        each a `SourceFile` named by its path (`importers.importer_name`), never a module of the
        graph (grimp's scanner, handed such a name, panicked). The walk's bounds hold as for
        any directory; the directories below it are no packages."""
        files, modules = len(self.result.files), set(self.result.other_modules)
        self.importers = True
        try:
            self.walk(directory, parts, depth)
        finally:
            self.importers = False
        for name in set(self.result.other_modules) - modules:
            del self.result.other_modules[name]
        self.result.files[files:] = [
            SourceFile(f.path, f.rel, f.rel, False, f.mtime_ns, f.size, f.ctime_ns) for f in self.result.files[files:]]

    layout = None

    def _entry(self, entry: os.DirEntry, parts: list[str], depth: int) -> None:
        """One entry of a walked directory, whatever it is: excluded, a link, a directory, a
        `.py` file, a stub or extension module, or anything else (ignored)."""
        name = entry.name
        if self.layout is not None and self.layout.excluded_by(entry.path):
            self._excluded(name, parts)
            return
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            self.skip(entry.path, "the name is not valid UTF-8, so it cannot be a module name")
            return
        try:
            if entry.is_symlink():
                self.result.whole = False
                self._link(entry, parts, depth)
                return
            # The kind from the directory listing (no system call where the file system gives
            # it); only a `.py` file is stat'ed here (a directory is, by `walk`).
            is_dir = entry.is_dir(follow_symlinks=False)
            est = entry.stat(follow_symlinks=False) if not is_dir and name.endswith(".py") else None
        except OSError as e:
            self.skip(entry.path, f"cannot stat: {e.strerror or e}")
            return
        if is_dir:
            if name != "__pycache__":
                self.walk(entry.path, parts + [name], depth + 1)
        elif est is not None:
            self._py(entry.path, name, parts, est)
        elif name.endswith((".pyi", ".so", ".pyd")):
            self._compiled(name, parts)

    def _excluded(self, name: str, parts: list[str]) -> None:
        """An entry the config excludes (vendored, generated): deliberately not scanned, yet it
        exists for whoever imports it (`index.py` knows nothing of what it holds)."""
        self.result.whole = False
        stem = name.split(".", 1)[0] if name.endswith((".py", ".pyi", ".so", ".pyd")) else name
        if stem != "__init__" and stem.isidentifier():
            self.result.other_modules[".".join(parts + [stem])] = "excluded"

    def _compiled(self, name: str, parts: list[str]) -> None:
        """A stub (`.pyi`) or an extension module (`.so`, `.pyd`, ABI-tagged or not): a module no
        `.py` is. An extension module wins over its stub whichever sorts first (the stub is read
        beside it)."""
        stem = name[:-4] if name.endswith(".pyi") else name.split(".", 1)[0]  # foo.cpython-311-x86_64-linux-gnu.so
        module = ".".join(parts if stem == "__init__" else parts + [stem])
        if self.result.other_modules.get(module) not in ("directory", "extension"):
            self.result.other_modules[module] = "stub" if name.endswith(".pyi") else "extension"

    def _py(self, path: str, name: str, parts: list[str], st) -> None:
        if not stat_mod.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat_mod.S_IFMT(st.st_mode), "not a regular file")
            self.skip(path, f"{kind}, not a regular file; not opened")
        elif name == "__init__.py":
            self.add_file(path, parts, True, st)
        else:
            self.add_file(path, parts + [name[:-3]], False, st)

    def _link(self, entry: os.DirEntry, parts: list[str], depth: int) -> None:
        is_py = entry.name.endswith(".py")
        try:
            est = os.stat(entry.path)  # the target's kind; nothing is opened
        except OSError as e:
            if is_py:  # a module Python would fail to import; a broken data link holds nothing
                why = "symlink loop" if e.errno == errno.ELOOP else "broken symlink"
                self.skip(entry.path, f"{why}: {e.strerror or e}")
            return
        is_dir = stat_mod.S_ISDIR(est.st_mode)
        if not (is_py or is_dir) or entry.name == "__pycache__":
            return  # a link to a data file: nothing to scan
        if not self._is_inside(os.path.realpath(entry.path)):
            self.skip(entry.path, "symlink to outside the tree; not followed")
        elif is_dir and self.importers:  # (walked after every real directory: as modules, not scripts)
            self.skip(entry.path, "symlink to a directory, inside a directory no import can name; not followed")
        elif is_dir:
            self.links.append((entry.path, parts + [entry.name], depth + 1))
        else:
            self._py(entry.path, entry.name, parts, est)

    def follow_links(self) -> None:
        """Symlinked directories, after every real one: a link to a directory walked under its
        own name is reported, not walked twice; a link to one outside the roots is walked."""
        while self.links:
            path, parts, depth = self.links.popleft()
            try:
                st = os.stat(path)
            except OSError as e:
                self.skip(path, f"cannot stat directory: {e.strerror or e}")
                continue
            target = os.path.realpath(path)
            parent = os.path.realpath(os.path.dirname(path))
            first = self.walked.get((st.st_dev, st.st_ino))
            if parent == target or parent.startswith(target + os.sep):
                self.skip(path, f"symlink loop: points to `{self.rel(target)}`, which contains it; "
                                f"not followed")
            elif first is None:
                self.walk(path, parts, depth)
            else:
                self.skip(path, f"symlink to `{first}`, scanned there; not scanned again under this name")


def _drop_shadowed(result: Discovery) -> None:
    packages = {f.module: f.rel for f in result.files if f.is_package}
    kept = []
    for f in result.files:
        if not f.is_package and f.module in packages:
            result.whole = False
            result.skipped.append((f.rel, f"shadowed by the package `{packages[f.module].rpartition('/')[0]}/`: "
                                          f"Python imports the package, never this file; delete or rename it"))
        else:
            kept.append(f)
    result.files = kept
