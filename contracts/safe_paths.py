"""Output files the user names (`-o`): written where the user said, never where the tree points.

The checked tree may commit a symlink where a report is written (`-o report.json`, with
`report.json -> ~/.bashrc`); as root in CI that would be any file on the runner. So a path whose
last component is a symlink, or that goes through a symlinked directory below the working
directory, is refused with one line (exit 2), and the file is opened with `O_NOFOLLOW`, so a
link swapped in after the check is refused too. What lies outside the working directory (the
user's own `$RUNNER_TEMP`, a home directory behind a symlink) is the user's choice and is taken
as it is, and so is a name under `/dev` (`-o /dev/stdout`, itself a symlink): nothing in a tree
can put a file there.
"""

from __future__ import annotations

import os

from contracts.errors import UsageError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_WRITE = (os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
          | getattr(os, "O_CLOEXEC", 0))


def is_inside(path: str, top: str) -> bool:
    """Whether the (real, absolute) `path` is `top` or lies under it."""
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _symlink_on_the_way(path: str) -> str | None:
    """The first symlink among `path`'s components below the working directory, or None."""
    cwd = os.getcwd()
    full = os.path.abspath(path)
    rel = os.path.relpath(full, cwd)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return full if os.path.islink(full) else None
    here = cwd
    for part in rel.split(os.sep):
        here = os.path.join(here, part)
        if os.path.islink(here):
            return here
    return None


def refuse_linked_directories(path: str, option: str) -> None:
    """UsageError when a directory on the way to `path` below the working directory is a
    symlink (for a file replaced by a rename, `--write-baseline`: the last component itself
    is replaced, never followed)."""
    directory = os.path.dirname(os.path.abspath(path))
    link = _symlink_on_the_way(directory)
    if link is not None:
        raise UsageError(f"{option} {path}: `{os.path.relpath(link)}` is a symlink (to `{os.readlink(link)}`); "
                         f"not written through it -- remove the link or name another file")


def write_output(path: str, text: str, option: str) -> None:
    """Write `text` to the file `path` the user named with `option`; UsageError when `path` is, or
    goes through, a symlink (see the module docstring) or cannot be written."""
    full = os.path.abspath(path)
    if full.startswith("/dev/"):
        _write_plain(path, text, option)
        return
    link = _symlink_on_the_way(path)
    if link is not None:
        target = os.readlink(link)
        raise UsageError(f"{option} {path}: `{os.path.relpath(link)}` is a symlink (to `{target}`); not "
                         f"written through it -- remove the link or name another file")
    try:
        os.makedirs(os.path.dirname(full), exist_ok=True)
        fd = os.open(full, _WRITE, 0o666)
        os.set_blocking(fd, True)  # opened non-blocking only so that a FIFO cannot hang the open
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text + "\n" if text else "")
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot be written: {e.strerror or e}") from None


def _write_plain(path: str, text: str, option: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n" if text else "")
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot be written: {e.strerror or e}") from None
