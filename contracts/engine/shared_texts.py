"""The texts a cold run's readers read, kept where the rules of every process can read them in
place instead of again from disk (a pipe would copy and carry each byte: 80 ms for one child's
36 MB of 0.5.23; figures in docs/benchmarks.md, "Kept tricks"), and search them all with one
`find` per word and map.

No size need be known before a text is read (the walk does not `stat` the files for it): each
reader appends what it reads. A forked reader appends to a memory file of its own, with `pwrite`
(the kernel fills the pages: 28 ms for 34 MB of 0.5.23, against 37 through a shared map, which
faults each page in); this process, to blocks of its own anonymous memory, which the processes
it forks later inherit with their page tables (none of them faults those pages in again, and
they cost a third as much to free as a memory file's). Once every reader has finished
(`sealed`), this process maps each memory file as far as its texts go.
"""

from __future__ import annotations

import mmap
import os
from bisect import bisect_right

# What one forked reader puts in its file at most (a map is address space, not memory, until it
# is written; this keeps a huge tree's run from asking for what a 32-bit process cannot map).
MAX_BYTES = 1 << 30
_BLOCK = 16 << 20  # this process's texts go in blocks of this many bytes (a longer text: its own)


class SharedTexts:
    """Where `readers` readers put their texts: this process (reader 0) in blocks of its memory,
    the children `workers.map_parts` forks (1, 2, ...) each in a memory file made before the fork."""

    def __init__(self, readers: int, limit: int) -> None:
        self.limit = limit  # the largest text put
        self.fds: list[int] = []
        try:
            for _ in range(readers - 1):
                self.fds.append(_memory_file())
        except OSError:
            for fd in self.fds:
                os.close(fd)
            raise
        self.ends = [0] * len(self.fds)  # where each forked reader's next text goes (its own copy)
        # The maps, by number: a forked reader's file (number: the reader's, less 1) once `sealed`,
        # then the blocks of this process's memory.
        self.maps: list[mmap.mmap | None] = [None] * len(self.fds)
        self._block: mmap.mmap | None = None  # this process's last block
        self._block_end = 0  # where the next text goes in it
        self.slots: dict[str, tuple[int, int, int]] = {}  # rel -> (map, start, end), once received
        self._sealed = False

    @classmethod
    def for_readers(cls, readers: int, limit: int) -> SharedTexts | None:
        """The places, or None where none can be had (the texts are then read again)."""
        try:
            return cls(readers, limit)
        except OSError:
            return None

    def put(self, rel: str, data: bytes, reader: int) -> tuple[int, int, int] | None:
        """Append `rel`'s text to `reader`'s place: (map, start, end), or None where it does not go
        (too large, the place full, no memory for it): the text is then kept where it was read."""
        if not data or len(data) > self.limit:
            return None
        try:
            return self._keep(data) if reader == 0 else self._write(data, reader - 1)
        except (OSError, ValueError, OverflowError):
            return None

    def _keep(self, data: bytes) -> tuple[int, int, int]:
        """`data` in this process's last block, or a new one."""
        size, at = len(data), self._block_end
        if self._block is None or at + size > len(self._block):
            # (no file: `mmap` asks for anonymous memory itself, as each platform spells it)
            self._block = mmap.mmap(-1, max(_BLOCK, size), flags=mmap.MAP_PRIVATE)
            self.maps.append(self._block)
            at = 0
        self._block[at:at + size] = data
        self._block_end = at + size
        return len(self.maps) - 1, at, at + size

    def _write(self, data: bytes, number: int) -> tuple[int, int, int] | None:
        """`data` at the end of the memory file `number`."""
        at = self.ends[number]
        if at + len(data) > MAX_BYTES or not self.fds:
            return None
        view, end = memoryview(data), at
        while view:  # (whole on a memory file, unless a signal cuts a write short)
            done = os.pwrite(self.fds[number], view, end)
            view, end = view[done:], end + done
        self.ends[number] = end
        return number, at, end

    def received(self, placed: dict[str, tuple[int, int, int]]) -> None:
        """The texts a reader that has finished put (`put`'s answers, by rel)."""
        self.slots.update(placed)

    def sealed(self) -> None:
        """Every reader has finished: each memory file is mapped as far as the received texts go,
        and its descriptor closed (the map keeps what it holds). Again: nothing."""
        fds, self.fds = self.fds, []
        self._sealed = True
        if not fds:
            return
        extents = [0] * len(fds)
        for number, _start, end in self.slots.values():
            if number < len(fds):
                extents[number] = max(extents[number], end)
        try:
            for number, (fd, size) in enumerate(zip(fds, extents)):
                self.maps[number] = mmap.mmap(fd, size, prot=mmap.PROT_READ) if size else None
        except (OSError, ValueError, OverflowError):  # (no address space for it: read again)
            self.slots = {rel: slot for rel, slot in self.slots.items() if self.maps[slot[0]] is not None}
        finally:
            for fd in fds:
                os.close(fd)

    def span(self, rel: str) -> tuple[int, int, int] | None:
        """(map, start, end) of `rel`'s text in `maps`, where a reader put it, else None."""
        return self.slots.get(rel) if self._sealed else None

    def text(self, rel: str) -> bytes | None:
        """`rel`'s text as bytes of this process's (a copy), where a reader put it, else None."""
        span = self.span(rel)
        return None if span is None else self.maps[span[0]][span[1]:span[2]]

    def tables(self, spans) -> list[tuple[mmap.mmap, SpanTable]]:
        """(map, its `SpanTable`) for each map that (name, span) pairs fall in."""
        by_map: dict[int, list] = {}
        for name, (number, start, end) in spans:
            by_map.setdefault(number, []).append((start, end, name))
        out = []
        for number, rows in sorted(by_map.items()):
            rows.sort()
            out.append((self.maps[number], ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])))
        return out


# (starts, ends, names) of some texts in a map, by start: what `holding` searches.
SpanTable = tuple[list[int], list[int], list[str]]


def holding(text, word: bytes, table: SpanTable):
    """(name, start, end) of each text of `table` in `text` (a map) that holds `word`, in order:
    one search of the map from text to text, past the rest of each text it is found in (a
    search per text costs a call, and a shorter haystack, for each of thousands of texts)."""
    starts, ends, names = table
    if not starts:
        return
    find, at, size, last, stop = text.find, 0, len(word), len(starts) - 1, ends[-1]
    while (pos := find(word, at, stop)) >= 0:
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
