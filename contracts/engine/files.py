"""The two file operations the tool does itself: read a file's lines, and replace a file whole."""

from __future__ import annotations

import os
import stat
import tempfile

from contracts.engine.resolve import physical_lines


def read_lines(path: str) -> list[str]:
    """`path`'s lines as Python numbers them; [] when it cannot be read (the caller reports it)."""
    try:
        with open(path, "rb") as fh:
            return physical_lines(fh.read())
    except OSError:
        return []


def atomic_write(path: str, data: bytes, mode: int | None = None, fsync: bool = False) -> None:
    """Replace `path` by `data` at once: a temporary file in the same directory, then a rename.

    Readers see the old file or the new one, never a part. `mode`: the permission bits of the
    new file (default 0o644). Raises OSError; the original is then untouched.
    """
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=directory or ".", prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(0o644 if mode is None else mode))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
