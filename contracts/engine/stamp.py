"""The last run's findings, and the state of the tree they were computed from.

A full run stores its findings with the stat of every directory and `.py` file under the roots,
and each file's content hash (`save_result`); the next run answers from them without building
anything when a walk finds the same stats (`load_result`): one `scandir` per directory, one
`lstat` per file. Where only stats moved (a fresh copy, a checkout that rewrote files to the
same content: every ctime new), the files whose stat changed are read and hashed, on both cores
when there are many (where most moved, by the other process while this one walks the names:
`_contents_compared`), and the stamp answers if every content is the recorded one. A symlink
anywhere leaves no stamp; a file modified within `RACY_SECONDS` of the run's start is always
compared by content.
"""

from __future__ import annotations

import os
import stat as stat_mod
import time

from contracts.engine.cache import RACY_SECONDS, Cache, content_digest
from contracts.engine.files import open_regular, read_fd, read_regular
from contracts.engine.records import MAX_READ_BYTES, ScanPlan, cache_key

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:  # (a stamp that answers the run means no model is built, nor loaded)
    from contracts.engine.model import Model


def _stamp(cache_dir: str, src: str, plan: ScanPlan) -> Cache:
    return Cache(cache_dir, cache_key(os.path.abspath(src), plan), kind="stamp")


def load_result(src: str, plan: ScanPlan, cache_dir: str, key: str, generation: str | None = None,
                report: dict | None = None):
    """The value stored under `key` by the last run, if it still holds, else None. `report`, if
    given, gets `hashed`: how many files were read to compare their contents.

    Without `generation`: it holds when the tree is the one the stamp recorded: the same stats
    (`_changed_stats`), or the same contents where only stats changed (`compared_contents`).
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
    src = os.path.abspath(src)
    state = data.get("state")
    if _looks_copied(state):
        changed = _contents_compared(state, src, plan)
    else:
        changed = _changed_stats(state, src, plan)
        if changed:
            changed = compared_contents(changed)
    if changed is None:
        return None
    if changed:
        if report is not None:
            report["hashed"] = len(changed)
        _refresh(cache, data, changed)
    return value


class _Differs(Exception):
    """The tree is not the recorded one (`_walk`)."""


def _walk(state, src: str, plan: ScanPlan):
    """Every `.py` file under the roots the state records, as (path, its `DirEntry` or None):
    one `scandir` per directory. Raises `_Differs` where the roots are not the recorded ones, and
    at a symlink (the state never holds one, `_tree_state`)."""
    roots = state[0]
    if [r[0] for r in roots] != [os.path.join(src, r) for r in plan.roots]:
        raise _Differs
    for top, is_dir, is_file in roots:
        if (os.path.isdir(top), os.path.isfile(top + ".py")) != (is_dir, is_file):
            raise _Differs
        if is_file:
            yield top + ".py", None
        if is_dir and os.path.islink(top):
            raise _Differs
        if is_dir:
            yield from _py_files(top)


def _py_files(top: str, dirs: list | None = None):
    """Each `.py` file under the directory `top` as (path, its `DirEntry`), `__pycache__` left
    out: one `scandir` per directory; with `dirs`, each directory's (path, mtime, ctime) is
    appended to it. Raises `_Differs` at a symlink (the state never holds one)."""
    stack = [top]
    while stack:
        directory = stack.pop()
        if dirs is not None:
            st = os.stat(directory, follow_symlinks=False)
            if stat_mod.S_ISLNK(st.st_mode):
                raise _Differs
            dirs.append((directory, st.st_mtime_ns, st.st_ctime_ns))
        with os.scandir(directory) as it:
            for entry in it:
                if entry.is_symlink():
                    raise _Differs
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(entry.path)
                elif entry.name.endswith(".py"):
                    yield entry.path, entry


def _changed_stats(state, src: str, plan: ScanPlan) -> list | None:
    """The recorded files whose stat changed, as (path, recorded (mtime, ctime, size), digest),
    when the tree under the roots may be the recorded one ([]: every stat the same), else None.

    Walked again (one `scandir` per directory, one `lstat` per `.py` file: as cheap as stat'ing
    the recorded paths), every `.py` file found must be recorded, and every recorded one found;
    a file whose stat changed must have kept its size and have a recorded content hash (the
    caller compares its content, `compared_contents`). So the state vouches for the files that are
    there, never for a list someone wrote: a stamp that leaves out a root, a directory or a
    file -- an empty state, say -- vouches for nothing."""
    try:
        recorded = {path: (m, c, s, d) for path, m, c, s, d in state[2]}
        changed: list = []
        seen = 0
        for path, entry in _walk(state, src, plan):
            rec = recorded.get(path)
            if rec is None:
                return None
            st = os.lstat(path) if entry is None else entry.stat(follow_symlinks=False)
            if (st.st_mtime_ns, st.st_ctime_ns, st.st_size) != rec[:3]:
                if st.st_size != rec[2] or not isinstance(rec[3], bytes):
                    return None
                changed.append((path, rec[:3], rec[3]))
            seen += 1
        return changed if seen == len(recorded) else None
    except (_Differs, OSError, TypeError, ValueError, IndexError):  # a tree that changed under us, a state of another shape
        return None


# How many recorded files `_looks_copied` stats before the walk.
_SAMPLE = 16


def _looks_copied(state) -> bool:
    """Whether most of a sample of the recorded files have new stats but their sizes (a fresh copy,
    a checkout that rewrote every file): then the contents are compared while the tree is walked
    (`_contents_compared`), not after."""
    from contracts.engine.workers import MIN_FILES  # (fewer: no second process pays)

    try:
        files = state[2]
        if len(files) < MIN_FILES:
            return False
        sample = files[::max(1, len(files) // _SAMPLE)][:_SAMPLE]
        moved = 0
        for path, m, c, s, d in sample:
            st = os.lstat(path)
            if (st.st_mtime_ns, st.st_ctime_ns) != (m, c) and st.st_size == s and isinstance(d, bytes):
                moved += 1
        return moved * 2 > len(sample)
    except (OSError, TypeError, ValueError, IndexError):
        return False


def _contents_compared(state, src: str, plan: ScanPlan) -> list | None:
    """What `_changed_stats` answers, where (nearly) every stat moved: other processes stat every
    recorded file and compare the contents of those whose stat changed (`_compare_part`) while
    this one walks the tree, checking names only (every `.py` file found recorded, as many found
    as recorded), then takes its share of what is left. None where anything differs."""
    try:
        entries = [(path, (m, c, s), d) for path, m, c, s, d in state[2]]
        recorded = {path for path, _, _ in entries}
    except (TypeError, ValueError, IndexError):
        return None
    walked: list[bool] = []

    def walk() -> None:
        try:
            count = 0
            for path, _ in _walk(state, src, plan):
                if path not in recorded:
                    break
                count += 1
            else:
                walked.append(count == len(recorded))
        except Exception:  # noqa: BLE001 - whatever stops the walk, the stamp cannot vouch (a full run says why)
            pass

    changed = compared_contents(entries, meanwhile=walk)
    return changed if walked == [True] else None


def compared_contents(entries: list, meanwhile=None) -> list | None:
    """The files of `entries` ((path, recorded stat, digest)) whose stat moved, with their new
    stat, when each of those kept its size and holds the content of its digest, else None: each
    file opened once, its `fstat` telling whether to hash it (`_compare_part`); in two processes
    when there are enough (`workers.py`; on 0.5.16's 2,644 files, 38 MB: 0.036-0.038 s against
    0.058-0.062 s in one). `meanwhile()` runs here while the other process starts on them."""
    from contracts.engine import workers

    parts = workers.map_parts(_compare_part, None, entries, workers.jobs(None, len(entries)), meanwhile=meanwhile)
    return None if any(part is None for part in parts) else [c for part in parts for c in part]


def _compare_part(_context, chunks) -> list | None:
    """The files of `chunks` ((path, recorded stat, digest)) whose stat changed, with their new
    stat, when each of those holds the content of its digest (and kept its size), else None."""
    out = []
    for chunk in chunks:
        for path, stat, digest in chunk:
            try:
                fd, st = open_regular(path)  # (its fstat: no `lstat` besides; a symlink is refused)
                try:
                    now = (st.st_mtime_ns, st.st_ctime_ns, st.st_size)
                    if now == stat:
                        continue
                    if st.st_size != stat[2] or not isinstance(digest, bytes):
                        return None
                    data = read_fd(fd, st, MAX_READ_BYTES)
                finally:
                    os.close(fd)
            except OSError:
                return None
            if content_digest(data) != digest:
                return None
            out.append((path, now, digest))
    return out


def _refresh(cache: Cache, data: dict, changed: list) -> None:
    """Record the new stats of `changed`, whose contents were just found the recorded ones, so the
    next run answers from stats alone; not where one is so recent (`RACY_SECONDS`) that a second
    edit could keep it, nor where a file changed since it was hashed."""
    limit = int((time.time() - RACY_SECONDS) * 1e9)
    now = {path: stat for path, stat, _ in changed}
    if any(m >= limit or c >= limit for m, c, _ in now.values()):
        return
    for path, (m, c, size) in now.items():  # stat'ed again: a write while it was hashed shows
        try:
            st = os.lstat(path)
        except OSError:
            return
        if (st.st_mtime_ns, st.st_ctime_ns, st.st_size) != (m, c, size):
            return
    roots, dirs, files = data["state"]
    files = [(p, *now[p], d) if p in now else (p, m, c, s, d) for p, m, c, s, d in files]
    cache.save({"generation": data.get("generation"), "state": (roots, dirs, files),
                "results": data.get("results", {})}, cache.started_at)


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
    """(roots, dirs, files) with the stat of every directory and `.py` file under the roots (and
    each file's content hash, `Model.digests`), or None when it cannot vouch for the run's
    findings: a symlink (what it points to can change without any stat under the roots
    changing), a file modified while the run read it (or within `RACY_SECONDS` of its start)
    whose content hash is not known, an unreadable directory."""
    try:
        state = _stats_from_walk(model, plan) if _walk_saw_everything(model) else _stats_walked(model, plan)
    except OSError:
        return None
    if state is None or not _holds_the_files_read(state[2], model):
        return None
    return _settled(state, int((started - RACY_SECONDS) * 1e9))


def _walk_saw_everything(model: Model) -> bool:
    """Did the build's walk see the whole tree (`Discovery.whole`: no link, nothing excluded or
    unreadable), with every file's ctime?"""
    disc = model.discovery
    return bool(disc.whole and disc.files and all(f.ctime_ns for f in disc.files))


def _root_entries(src: str, plan: ScanPlan) -> list[tuple]:
    """(path, is a directory, has a `.py` file beside it) of each root."""
    tops = [os.path.join(src, r) for r in plan.roots]
    return [(top, os.path.isdir(top), os.path.isfile(top + ".py")) for top in tops]


def _stats_from_walk(model: Model, plan: ScanPlan):
    """The state from the build's walk: its stats, taken before the files were read (so an edit
    during the run shows as a different stat next time), with the directories it did not enter
    (a dotted name) walked here. None at a symlink there."""
    disc = model.discovery
    dirs = list(disc.dirs)
    files = [(f.path, f.mtime_ns, f.ctime_ns, f.size, model.digests.get(f.path)) for f in disc.files]
    for directory in disc.unwalked:
        if not _walk_state(directory, dirs, files, model.digests):
            return None
    return _root_entries(model.src, plan), dirs, files


def _stats_walked(model: Model, plan: ScanPlan):
    """The state from a walk of the roots made here (the build's walk left something out). None
    at a symlink."""
    roots = _root_entries(model.src, plan)
    dirs: list = []
    files: list = []
    for top, is_dir, is_file in roots:
        if is_file:
            st = os.stat(top + ".py", follow_symlinks=False)
            files.append((top + ".py", st.st_mtime_ns, st.st_ctime_ns, st.st_size, model.digests.get(top + ".py")))
        if is_dir and not _walk_state(top, dirs, files, model.digests):
            return None
    return roots, dirs, files


def _holds_the_files_read(files: list, model: Model) -> bool:
    """Are the files the findings were computed from in `files`, with the stats they were read at?"""
    seen = {path: (m, s) for path, m, _, s, _ in files}
    return all(seen.get(f.path) == (f.mtime_ns, f.size) for f in model.discovery.files)


def _settled(state, limit: int):
    """`state` sorted, each file modified at or after `limit` (ns) recorded without its mtime, or
    None where such a file has no digest.

    A stat so recent that a second edit could keep it vouches for nothing: such a file is
    recorded with no mtime, so the next run compares its content with the digest of what the
    findings were computed from (a fresh copy, a file saved just before the run); without a
    digest there is nothing to compare, and no stamp. (The directories' stats are not compared:
    the walk finds what they hold.)"""
    roots, dirs, files = state
    if any((m >= limit or c >= limit) and d is None for _, m, c, _, d in files):
        return None
    files = [(p, None if m >= limit or c >= limit else m, c, s, d) for p, m, c, s, d in files]
    dirs.sort()
    files.sort()
    return roots, dirs, files


def _walk_state(top: str, dirs: list, files: list, digests: dict) -> bool:
    """Add the stats of `top`, every directory and `.py` file under it to `dirs` and `files`, with
    each file's content hash (from `digests`, else read here: a file the build did not read, in a
    directory it did not enter); False at a symlink (raises OSError where a directory cannot be
    read)."""
    try:
        for path, entry in _py_files(top, dirs):
            st = entry.stat(follow_symlinks=False)
            digest = digests.get(path)
            files.append((path, st.st_mtime_ns, st.st_ctime_ns, st.st_size,
                          _digest_of(path) if digest is None else digest))
    except _Differs:
        return False
    return True


def _digest_of(path: str) -> bytes | None:
    try:
        return content_digest(read_regular(path, limit=MAX_READ_BYTES)[0])
    except OSError:
        return None
