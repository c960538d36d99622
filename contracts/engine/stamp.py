"""The last run's findings, and the state of the tree they were computed from.

A full run stores its findings with the stat of every directory and `.py` file under the roots
(`save_result`); the next run answers from them without building anything when a walk finds
the same stats (`load_result`): one `scandir` per directory, one `lstat` per file. A symlink
anywhere, or anything modified within `RACY_SECONDS` of the run's start, leaves no stamp.
"""

from __future__ import annotations

import os
import stat as stat_mod
from typing import TYPE_CHECKING

from contracts.engine.cache import RACY_SECONDS, Cache
from contracts.engine.records import ScanPlan, cache_key

if TYPE_CHECKING:  # (a stamp that answers the run means no model is built, nor loaded)
    from contracts.engine.model import Model


def _stamp(cache_dir: str, src: str, plan: ScanPlan) -> Cache:
    return Cache(cache_dir, cache_key(os.path.abspath(src), plan), kind="stamp")


def load_result(src: str, plan: ScanPlan, cache_dir: str, key: str, generation: str | None = None):
    """The value stored under `key` by the last run, if it still holds, else None.

    Without `generation`: it holds when the tree is the one the stamp recorded (`_same_tree`).
    With `generation` (of a model just built): when it was computed from a model of that
    generation.
    """
    cache = _stamp(cache_dir, src, plan)
    data = cache.load()
    value = data.get("results", {}).get(key) if data else None
    if value is None:
        return None
    if generation is not None:
        return value if data.get("generation") == generation else None
    return value if _same_tree(data.get("state"), os.path.abspath(src), plan) else None


def _same_tree(state, src: str, plan: ScanPlan) -> bool:
    """Whether the tree under the roots is the recorded one: walked again (one `scandir` per
    directory, one `lstat` per `.py` file: as cheap as stat'ing the recorded paths), every `.py`
    file found must be recorded with its (mtime, ctime, size), and every recorded one found. So
    the state vouches for the files that are there, never for a list someone wrote: a stamp
    that leaves out a root, a directory or a file -- an empty state, say -- vouches for nothing."""
    try:
        roots, _, files = state
        recorded = {path: (m, c, s) for path, m, c, s in files}
        if [r[0] for r in roots] != [os.path.join(src, r) for r in plan.roots]:
            return False
        seen = 0
        for top, is_dir, is_file in roots:
            if (os.path.isdir(top), os.path.isfile(top + ".py")) != (is_dir, is_file):
                return False
            if is_file:
                st = os.lstat(top + ".py")
                if recorded.get(top + ".py") != (st.st_mtime_ns, st.st_ctime_ns, st.st_size):
                    return False
                seen += 1
            if is_dir and os.path.islink(top):
                return False
            stack = [top] if is_dir else []
            while stack:
                with os.scandir(stack.pop()) as it:
                    for entry in it:
                        if entry.is_symlink():
                            return False  # the state never holds one (`_tree_state`)
                        if entry.is_dir(follow_symlinks=False):
                            if entry.name != "__pycache__":
                                stack.append(entry.path)
                        elif entry.name.endswith(".py"):
                            st = entry.stat(follow_symlinks=False)
                            if recorded.get(entry.path) != (st.st_mtime_ns, st.st_ctime_ns, st.st_size):
                                return False
                            seen += 1
        return seen == len(recorded)
    except (OSError, TypeError, ValueError):  # a tree that changed under us, a state of another shape
        return False


def save_result(model: Model, plan: ScanPlan, cache_dir: str, key: str, value) -> None:
    """Store `value` (the findings of `model`, plain data) for `load_result`, with the state of
    the tree, so the next run can answer from it without building anything."""
    cache = _stamp(cache_dir, model.src, plan)
    data = cache.load()
    same = data.get("generation") == model.generation
    results = dict(data.get("results", {})) if same else {}  # findings depend on the generation only
    results[key] = value
    state = _tree_state(model, plan, model.started)
    cache.save({"generation": model.generation, "state": state, "results": results}, model.started)


def _tree_state(model: Model, plan: ScanPlan, started: float):
    """(roots, dirs, files) with the stat of every directory and `.py` file under the roots, or
    None when it cannot vouch for the run's findings: a symlink (what it points to can change
    without any stat under the roots changing), something modified while the run read it (or
    within `RACY_SECONDS` of its start), an unreadable directory.

    Where the build's walk saw everything (`Discovery.whole`: no link, nothing excluded or
    unreadable) its stats are the state, with the directories it did not enter (a dotted name)
    walked here: stats taken before the files were read, so an edit during the run shows as a
    different stat next time (a second walk of 0.5.23 costs 0.05 s). Else the tree is walked."""
    limit = int((started - RACY_SECONDS) * 1e9)
    src = model.src
    disc = model.discovery
    roots, dirs, files = [], [], []
    try:
        if disc.whole and disc.files and all(f.ctime_ns for f in disc.files):
            roots = [(os.path.join(src, r), os.path.isdir(os.path.join(src, r)),
                      os.path.isfile(os.path.join(src, r) + ".py")) for r in plan.roots]
            dirs = list(disc.dirs)
            files = [(f.path, f.mtime_ns, f.ctime_ns, f.size) for f in disc.files]
            for directory in disc.unwalked:
                if not _walk_state(directory, dirs, files):
                    return None
        else:
            for root in plan.roots:
                top = os.path.join(src, root)
                roots.append((top, os.path.isdir(top), os.path.isfile(top + ".py")))
                if os.path.isfile(top + ".py"):
                    st = os.stat(top + ".py", follow_symlinks=False)
                    files.append((top + ".py", st.st_mtime_ns, st.st_ctime_ns, st.st_size))
                if os.path.isdir(top) and not _walk_state(top, dirs, files):
                    return None
    except OSError:
        return None
    if any(m >= limit or c >= limit for _, m, c in dirs) or any(m >= limit or c >= limit for _, m, c, _ in files):
        return None
    seen = {path: (m, s) for path, m, _, s in files}
    for f in model.discovery.files:  # the files the findings were computed from are these
        if seen.get(f.path) != (f.mtime_ns, f.size):
            return None
    dirs.sort()
    files.sort()
    return roots, dirs, files


def _walk_state(top: str, dirs: list, files: list) -> bool:
    """Add the stats of `top`, every directory and `.py` file under it to `dirs` and `files`;
    False at a symlink (raises OSError where a directory cannot be read)."""
    stack = [top]
    while stack:
        directory = stack.pop()
        st = os.stat(directory, follow_symlinks=False)
        if stat_mod.S_ISLNK(st.st_mode):
            return False
        dirs.append((directory, st.st_mtime_ns, st.st_ctime_ns))
        with os.scandir(directory) as it:
            for entry in it:
                if entry.is_symlink():
                    return False
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat(follow_symlinks=False)
                    files.append((entry.path, st.st_mtime_ns, st.st_ctime_ns, st.st_size))
    return True
