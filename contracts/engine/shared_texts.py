"""The texts a cold run's readers read, in memory files the processes share, so that the rules
read them in place instead of again from disk (a pipe would copy and carry each byte: 80 ms for
one child's 36 MB of 0.5.23; figures in docs/benchmarks.md, "Kept tricks"), and search them all
with one `find` per word and file.

Each reader appends the texts it reads to a file of its own (`put`, with `pwrite`: the kernel
fills the pages, 28 ms for 34 MB of 0.5.23 against 37 through a map, which faults each page in),
so no size need be known before a text is read: the walk does not `stat` the files for it.
Once every reader has finished (`sealed`), this process maps each file as far as its texts go;
the processes forked after it inherit the maps.
"""

from __future__ import annotations

import mmap
import os
from bisect import bisect_right

# What one reader puts in its file at most (a map is address space, not memory, until it is
# written; this keeps a huge tree's run from asking for what a 32-bit process cannot map).
MAX_BYTES = 1 << 30


class SharedTexts:
    """One memory file for each of `readers` readers (this process is reader 0, the children
    `workers.map_parts` forks 1, 2, ...), written before the fork, mapped after the read."""

    def __init__(self, readers: int, limit: int) -> None:
        self.limit = limit  # the largest text put
        self.fds: list[int] = []
        try:
            for _ in range(readers):
                self.fds.append(_memory_file())
        except OSError:
            self.sealed()
            raise
        self.ends = [0] * readers  # where each reader's next text goes (a forked reader's own copy)
        self.slots: dict[str, tuple[int, int, int]] = {}  # rel -> (reader, start, end), once received
        self.maps: list[mmap.mmap | None] = []  # by reader, once `sealed`

    @classmethod
    def for_readers(cls, readers: int, limit: int) -> SharedTexts | None:
        """The files, or None where none can be had (the texts are then read again)."""
        try:
            return cls(readers, limit)
        except OSError:
            return None

    def put(self, rel: str, data: bytes, reader: int) -> tuple[int, int, int] | None:
        """Append `rel`'s text to `reader`'s file: (reader, start, end), or None where it does not go
        (too large, the file full, no memory for it): the text is then kept where it was read."""
        at = self.ends[reader]
        if not data or len(data) > self.limit or at + len(data) > MAX_BYTES or not self.fds:
            return None
        try:
            view, end = memoryview(data), at
            while view:  # (whole on a memory file, unless a signal cuts a write short)
                done = os.pwrite(self.fds[reader], view, end)
                view, end = view[done:], end + done
        except OSError:
            return None
        self.ends[reader] = end
        return reader, at, end

    def received(self, placed: dict[str, tuple[int, int, int]]) -> None:
        """The texts a reader that has finished put (`put`'s answers, by rel)."""
        self.slots.update(placed)

    def sealed(self) -> None:
        """Every reader has finished: each file is mapped as far as the received texts go, and its
        descriptor closed (the map keeps what it holds). Again: nothing."""
        fds, self.fds = self.fds, []
        if not fds:
            return
        extents = [0] * len(fds)
        for reader, _start, end in self.slots.values():
            extents[reader] = max(extents[reader], end)
        try:
            self.maps = [mmap.mmap(fd, size, prot=mmap.PROT_READ) if size else None
                         for fd, size in zip(fds, extents)]
        except (OSError, ValueError, OverflowError):  # (no address space for it: read again)
            self.maps, self.slots = [], {}
        finally:
            for fd in fds:
                os.close(fd)

    def span(self, rel: str) -> tuple[int, int, int] | None:
        """(reader, start, end) of `rel`'s text in `maps[reader]`, where a reader put it, else None."""
        return self.slots.get(rel) if self.maps else None

    def text(self, rel: str) -> bytes | None:
        """`rel`'s text as bytes of this process's (a copy), where a reader put it, else None."""
        span = self.span(rel)
        return None if span is None else self.maps[span[0]][span[1]:span[2]]

    def holds(self, word: bytes, span: tuple[int, int, int]) -> bool:
        """Does the text at `span` hold `word`? (Searched in place: the text is not copied.)"""
        return self.maps[span[0]].find(word, span[1], span[2]) >= 0

    def tables(self, spans) -> list[tuple[mmap.mmap, SpanTable]]:
        """(map, its `SpanTable`) for each map that (name, span) pairs fall in."""
        by_map: dict[int, list] = {}
        for name, (reader, start, end) in spans:
            by_map.setdefault(reader, []).append((start, end, name))
        out = []
        for reader, rows in sorted(by_map.items()):
            rows.sort()
            out.append((self.maps[reader], ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])))
        return out


# (starts, ends, names) of some texts in a map, by start: what `holding` searches.
SpanTable = tuple[list[int], list[int], list[str]]


def holding(text, word: bytes, table: SpanTable):
    """(name, start, end) of each text of `table` in `text` (a map) that holds `word`, in order:
    one search of the whole map from text to text, past the rest of each text it is found in
    (a search per text costs a call, and a shorter haystack, for each of thousands of texts)."""
    starts, ends, names = table
    find, at, size, last = text.find, 0, len(word), len(starts) - 1
    while (pos := find(word, at)) >= 0:
        i = bisect_right(starts, pos) - 1
        if i >= 0 and pos < ends[i]:  # in text i (if it ends there: no later one in i fits)
            if pos + size <= ends[i]:
                yield names[i], starts[i], ends[i]
            at = ends[i]
        elif i < last:  # between texts of the table (another file's)
            at = starts[i + 1]
        else:
            return


def _memory_file() -> int:
    """A descriptor of a new file that lives in memory and has no name: `memfd_create` (Linux),
    else an unlinked temporary file (its pages stay in the page cache while the run needs them)."""
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        try:
            return memfd("namespace-lint-texts", getattr(os, "MFD_CLOEXEC", 0))
        except OSError:
            pass
    import tempfile  # (start-up: only where there is no memory file)

    with tempfile.TemporaryFile() as f:  # (the descriptor outlives the file object: a duplicate)
        return os.dup(f.fileno())
