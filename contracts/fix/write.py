"""The one place `--fix` reads a file it may rewrite and writes it back: nothing in the tree can
redirect the write, and nothing anyone does meanwhile is lost.

- Only regular files under the root packages (a root that is a symlink out of `--src` is not
  rewritten) or the importer paths the configuration or the command line names are written.
- Every directory from the root down and the file itself are opened with `O_NOFOLLOW`: a symlink
  swapped in anywhere on the way is refused, never followed (a file reached through a symlink
  inside the tree is written where it really lives).
- The rewrite goes to a temporary file beside it, with the original's owner, group, mode and
  extended attributes (ACLs included); what cannot be kept -- another user's file this user
  cannot give back its owner, an attribute it cannot set -- makes the file skipped with the
  reason. A hard-linked file is reported, not split from its other names.
- Just before the rename (relative to the directory's descriptor), the entry must still be the
  file that was read (device, inode) with the content that was read. The rename is an exchange
  where the system has one (`renameat2(RENAME_EXCHANGE)`): what it took out is checked again
  and, if anyone changed or replaced the file in the last instant, put back. Without it, a
  change seen after the rename is restored from the open original. Either way a concurrent edit
  is reported and kept, never lost.

`HOOK`, when set, is called between the read and the write (tests make the race deterministic
with it).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
from dataclasses import dataclass

from contracts.engine.files import NOFOLLOW, open_dir, read_fd, replace_in_dir

HOOK = None  # HOOK(path) between the read and the write

_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class Refused(OSError):
    """The file is left as it is, for the reason given."""


def _renameat2():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn


_EXCHANGE = _renameat2() if hasattr(os, "O_NOFOLLOW") else None


def _exchange(dir_fd: int, a: str, b: str) -> bool:
    """Swap the entries `a` and `b` of `dir_fd` at once; False where the system cannot."""
    global _EXCHANGE
    if _EXCHANGE is None:
        return False
    if _EXCHANGE(dir_fd, os.fsencode(a), dir_fd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):  # an old kernel, a filesystem without it
        _EXCHANGE = None
        return False
    raise OSError(err, os.strerror(err))


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def writable_roots(src: str, roots, importer_files=()) -> tuple[list[str], dict[str, str]]:
    """(directories and files `--fix` may write under, real paths; root -> why not, for a root
    that leaves `--src`)."""
    real_src = os.path.realpath(src)
    allowed, refused = [], {}
    for root in roots:
        for top in (os.path.join(src, root), os.path.join(src, root + ".py")):
            if not os.path.lexists(top):
                continue
            real = os.path.realpath(top)
            if not _inside(real, real_src):
                refused[root] = (f"the root package `{root}` is a symlink to `{real}`, outside --src "
                                 f"`{src}`; files there are not rewritten")
            else:
                allowed.append(real)
    allowed += [os.path.realpath(p) for p in importer_files]
    return allowed, refused


@dataclass
class Snapshot:
    """A file opened for fixing: its content and stat as read, its directory's descriptor."""

    path: str  # as named
    real: str  # where it lives
    dir_fd: int
    name: str
    fd: int
    st: os.stat_result
    data: bytes

    def close(self) -> None:
        for fd in (self.fd, self.dir_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def open_for_fix(path: str, allowed: list[str], refused: dict[str, str] | None = None,
                 limit: int | None = None) -> Snapshot:
    """Read `path` for a rewrite. Raises Refused (or OSError) when it may not be written."""
    real = os.path.realpath(path)
    top = next((t for t in sorted(allowed, key=len, reverse=True) if _inside(real, t)), None)
    if top is None:
        why = next(iter((refused or {}).values()), None)
        raise Refused(why or f"`{real}` is outside the root packages and the importer paths; left unchanged")
    directory, name = os.path.split(real)
    if real == top:  # an importer file named itself, or a root module `pkg.py`
        base, parts = directory, []
    else:
        base = top if os.path.isdir(top) else os.path.dirname(top)
        parts = os.path.relpath(directory, base).split(os.sep) if directory != base else []
    dir_fd = open_dir(base)
    try:
        for part in parts:  # one component at a time: a symlink swapped in on the way is refused
            nxt = os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = nxt
        try:
            fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Refused(f"`{path}` became a symlink; not followed") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise Refused("not a regular file; left unchanged")
        try:
            data = read_fd(fd, st, limit)
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        os.close(dir_fd)
        raise
    return Snapshot(path, real, dir_fd, name, fd, st, data)


def _same_file(snap: Snapshot, st: os.stat_result) -> bool:
    return (st.st_dev, st.st_ino) == (snap.st.st_dev, snap.st.st_ino) and stat.S_ISREG(st.st_mode)


def _unchanged(snap: Snapshot) -> bool:
    """The open original still holds what was read: its mtime, its size, its bytes. (Not its
    ctime: the exchange renames it and an unlink drops a link, and both move the ctime.)"""
    st = os.fstat(snap.fd)
    if (st.st_mtime_ns, st.st_size) != (snap.st.st_mtime_ns, snap.st.st_size):
        return False
    return os.pread(snap.fd, len(snap.data) + 1, 0) == snap.data


CHANGED = "changed while it was being fixed; left unchanged (the change kept), run again"


def _copy_attributes(snap: Snapshot, tmp_fd: int) -> None:
    st = snap.st
    try:
        os.fchown(tmp_fd, st.st_uid, st.st_gid)
    except OSError:
        raise Refused(f"owned by uid {st.st_uid} gid {st.st_gid}, which this user cannot give the "
                      f"rewritten file; left unchanged") from None
    os.fchmod(tmp_fd, stat.S_IMODE(st.st_mode))  # after fchown, which clears setuid/setgid
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(snap.fd)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.ENOSYS):
            return
        raise
    for attr in names:
        try:
            os.setxattr(tmp_fd, attr, os.getxattr(snap.fd, attr))
        except OSError as e:
            raise Refused(f"its extended attribute `{attr}` cannot be kept ({e.strerror or e}); "
                          f"left unchanged") from None


def replace(snap: Snapshot, new: bytes) -> None:
    """Write `new` in place of the file `snap` read. Raises Refused (nothing written) or OSError."""
    st = snap.st
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(
            snap.name, os.W_OK, dir_fd=snap.dir_fd):
        raise Refused(f"{snap.path} is read-only; left unchanged")
    if st.st_nlink > 1:
        raise Refused(f"has {st.st_nlink} hard links: a rewrite would split it from the others; "
                      f"fix it by hand (or break the links first)")
    if HOOK is not None:
        HOOK(snap.path)
    def check_then_swap(tmp_fd: int, tmp: str) -> bool:
        _copy_attributes(snap, tmp_fd)
        os.fsync(tmp_fd)
        now = os.stat(snap.name, dir_fd=snap.dir_fd, follow_symlinks=False)
        if not _same_file(snap, now) or not _unchanged(snap):
            raise Refused(CHANGED)
        if _exchange(snap.dir_fd, tmp, snap.name):
            # `tmp` now names what was there an instant ago: it must be what we checked.
            took = os.stat(tmp, dir_fd=snap.dir_fd, follow_symlinks=False)
            if not _same_file(snap, took) or not _unchanged(snap):
                _exchange(snap.dir_fd, tmp, snap.name)  # put theirs back
                raise Refused(CHANGED)
            return True
        return False

    replace_in_dir(snap.dir_fd, snap.name, new, mode=stat.S_IMODE(st.st_mode), before_rename=check_then_swap)
    if not _unchanged(snap):  # written to the original after the last check: put it back
        restored = os.pread(snap.fd, os.fstat(snap.fd).st_size + 1, 0)
        replace_in_dir(snap.dir_fd, snap.name, restored, mode=stat.S_IMODE(st.st_mode),
                       before_rename=lambda fd, tmp: _copy_attributes(snap, fd))
        raise Refused(CHANGED)
