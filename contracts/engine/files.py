"""The file operations the tool does itself: read a file (bounded, without following a link),
read its lines, and replace a file whole (relative to its directory's descriptor).

Every open here refuses a symlink in the last component (`O_NOFOLLOW`) and anything that is not a
regular file (checked with `fstat` on the open descriptor, so nothing can be swapped in between
the check and the read); a FIFO is opened non-blocking, so it cannot hang the run. Sizes are
checked before a byte is read.
"""

from __future__ import annotations

import errno
import os
import stat

from contracts.engine.resolve import physical_lines

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
_READ = os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | _CLOEXEC


class TooLarge(OSError):
    """A file over the caller's size limit; nothing of it was read."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size} bytes, over the limit of {limit}")
        self.size, self.limit = size, limit


class NotRegular(OSError):
    """A symlink, FIFO, device, socket or directory where a regular file was expected."""


def open_regular(path: str, dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """(fd, fstat) of the regular file `path`, opened read-only without following a symlink."""
    try:
        fd = os.open(path, _READ, dir_fd=dir_fd)
    except OSError as e:
        if NOFOLLOW and e.errno == errno.ELOOP:  # what O_NOFOLLOW answers for a symlink
            raise NotRegular(e.errno, "a symlink; not followed", path) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegular(0, "not a regular file; not read", path)
    return fd, st


def read_fd(fd: int, st: os.stat_result, limit: int | None = None) -> bytes:
    """The whole content of the open file `fd` (`st` its fstat), at most `limit` bytes: a file
    that is larger, or grows past the limit while it is read, raises TooLarge."""
    if limit is not None and st.st_size > limit:
        raise TooLarge(st.st_size, limit)
    data = os.read(fd, st.st_size + 1)
    if len(data) != st.st_size:  # it changed while we looked: read to the end, bounded
        parts, total = [data], len(data)
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if limit is not None and total > limit:
                raise TooLarge(total, limit)
            parts.append(chunk)
        data = b"".join(parts)
    return data


def read_regular(path: str, limit: int | None = None, dir_fd: int | None = None
                 ) -> tuple[bytes, os.stat_result]:
    """(content, fstat) of the regular file `path`; OSError (NotRegular, TooLarge) otherwise."""
    fd, st = open_regular(path, dir_fd)
    try:
        return read_fd(fd, st, limit), st
    finally:
        os.close(fd)


def read_capped(path: str, limit: int) -> bytes:
    """The content of the regular file `path`, at most `limit` bytes (a FIFO, a device, a link to
    `/dev/zero`, a file over the limit: OSError). A symlink is resolved first: the walks decide
    which links are followed, and one that leaves the tree never reaches a reader. (Resolved only
    when `path` is one: `realpath` costs a dozen system calls, asked of every file a whole-tree
    search reads.)"""
    try:
        return read_regular(path, limit)[0]
    except NotRegular:
        return read_regular(os.path.realpath(path), limit)[0]


def read_lines(path: str) -> list[str]:
    """`path`'s lines as Python numbers them; [] when it cannot be read (the caller reports it)."""
    try:
        data, _ = read_regular(path)
    except OSError:
        return []
    return physical_lines(data)


def open_dir(path: str) -> int:
    """A descriptor of the directory `path`, refusing a symlink as its last component."""
    return os.open(path, _DIR)


def replace_in_dir(dir_fd: int, name: str, data: bytes, mode: int = 0o600, fsync: bool = False,
                   before_rename=None) -> None:
    """Replace the entry `name` of the directory `dir_fd` by a new file holding `data`, at once.

    The temporary file is created beside it (`O_EXCL | O_NOFOLLOW`, a name no other run uses) and
    renamed over `name` relative to the same descriptor: a directory swapped for a symlink after
    it was opened cannot redirect the write. `before_rename(tmp_fd, tmp_name)` runs last (the
    caller's final checks; it raises to abort, or returns True when it has put the file in place
    itself, by an exchange: `tmp_name` then holds the old file, which is removed). Raises
    OSError; `name` is then untouched.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | _CLOEXEC
    for _ in range(100):
        tmp = f".{name}.{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise FileExistsError(f"no free temporary name for {name}")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, stat.S_IMODE(mode))
            if fsync:
                os.fsync(fd)
            done = before_rename(fd, tmp) if before_rename is not None else False
        finally:
            os.close(fd)
        if done:
            os.unlink(tmp, dir_fd=dir_fd)
        else:
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def atomic_write(path: str, data: bytes, mode: int | None = None, fsync: bool = False) -> None:
    """Replace `path` by `data` at once (see `replace_in_dir`); `mode` defaults to 0o644.

    Readers see the old file or the new one, never a part. Raises OSError; the original is then
    untouched.
    """
    directory, name = os.path.split(path)
    dir_fd = open_dir(directory or ".")
    try:
        replace_in_dir(dir_fd, name, data, 0o644 if mode is None else mode, fsync)
    finally:
        os.close(dir_fd)
