"""The texts a cold run's readers read, in one memory file the processes share, so that the rules
read them in place instead of again from disk (a pipe would copy and carry each byte: 80 ms for
one child's 36 MB of 0.5.23; figures in docs/benchmarks.md, "Kept tricks"), and search them all
with one `find` per word.

Each file has a slot sized by the walk's `stat`; a file whose size changed since, or that has
no slot, is not put, and is read again where it is wanted.
"""

from __future__ import annotations

import mmap
import os
import weakref
from bisect import bisect_right

# A tree's texts above this stay out of the map (a map is address space, not memory, until it
# is written; this keeps a huge tree's run from reserving what a 32-bit process cannot).
MAX_BYTES = 1 << 30


class SharedTexts:
    """Slots for the texts of `files`, in a map shared with the processes forked after it."""

    def __init__(self, files, limit: int) -> None:
        self.owner = os.getpid()
        self.slots: dict[str, tuple[int, int]] = {}
        self.filled: set[str] = set()  # the slots put by readers that have finished (`received`)
        at = 0
        for f in files:
            if 0 < f.size <= limit:
                self.slots[f.rel] = (at, f.size)
                at += f.size
        self.fd, self.map = _backing(at) if 0 < at <= MAX_BYTES else (None, None)
        # (the memory file's descriptor is closed with this object, or once nothing is put: `sealed`)
        self._close = weakref.finalize(self, os.close, self.fd) if self.fd is not None else None

    @classmethod
    def for_files(cls, files, limit: int) -> SharedTexts | None:
        """The slots, or None where no map can be had (or no file would go in one)."""
        try:
            shared = cls(files, limit)
        except (OSError, ValueError, OverflowError):  # no memory map to be had: the texts are read again
            return None
        return shared if shared.map is not None else None

    def put(self, rel: str, data: bytes) -> bool:
        """Put `rel`'s text in its slot (in any reader); False where it has none that fits."""
        slot = self.slots.get(rel)
        if slot is None or len(data) != slot[1] or self.map is None:
            return False
        at, size = slot
        if self.fd is None:
            self.map[at:at + size] = data
            return True
        try:
            view = memoryview(data)
            while view:  # (whole on a memory file, unless a signal cuts a write short)
                done = os.pwrite(self.fd, view, at)
                view, at = view[done:], at + done
        except OSError:  # (out of memory for it: the text is kept where it was read)
            return False
        return True

    def sealed(self) -> None:
        """Every reader has finished: the memory file's descriptor goes (its map stays)."""
        if self._close is not None:
            self._close()

    def received(self, rels) -> None:
        """`rels` were put by a reader that has finished: their texts can be read here now."""
        self.filled.update(rels)

    def span(self, rel: str) -> tuple[int, int] | None:
        """[start, end) of `rel`'s text in `map`, where a reader put it, else None."""
        if rel not in self.filled or self.map is None:
            return None
        at, size = self.slots[rel]
        return at, at + size

    def text(self, rel: str) -> bytes | None:
        """`rel`'s text as bytes of this process's (a copy), where a reader put it, else None."""
        span = self.span(rel)
        return None if span is None else self.map[span[0]:span[1]]

    def holds(self, word: bytes, span: tuple[int, int]) -> bool:
        """Does the text at `span` hold `word`? (Searched in place: the text is not copied.)"""
        return self.map.find(word, span[0], span[1]) >= 0

    def holding(self, word: bytes, table: SpanTable):
        """(name, start, end) of each text of `table` that holds `word`, in map order: one search
        of the whole map from text to text, past the rest of each text it is found in (a search
        per text costs a call, and a shorter haystack, for each of thousands of texts)."""
        starts, ends, names = table
        find, at, size, last = self.map.find, 0, len(word), len(starts) - 1
        while (pos := find(word, at)) >= 0:
            i = bisect_right(starts, pos) - 1
            if i >= 0 and pos < ends[i]:  # in text i (if it ends there: no later one in i fits)
                if pos + size <= ends[i]:
                    yield names[i], starts[i], ends[i]
                at = ends[i]
            elif i < last:  # between texts of the table (another file's, or an empty slot)
                at = starts[i + 1]
            else:
                return


# (starts, ends, names) of some texts in a map, by start: what `SharedTexts.holding` searches.
SpanTable = tuple[list[int], list[int], list[str]]


def span_table(spans) -> SpanTable:
    """The `SpanTable` of (name, (start, end)) pairs."""
    ordered = sorted(spans, key=lambda item: item[1][0])
    return [s for _, (s, _e) in ordered], [e for _, (_s, e) in ordered], [n for n, _ in ordered]


def _backing(size: int) -> tuple[int | None, mmap.mmap]:
    """(descriptor, map) of `size` bytes shared with forked processes: a memory file (Linux), which
    `put` writes with `pwrite` (the kernel fills its pages: 28 ms for 34 MB of 0.5.23, against 37
    through the map, which faults each page in; docs/benchmarks.md), else an anonymous map."""
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        try:
            fd = memfd("namespace-lint-texts", getattr(os, "MFD_CLOEXEC", 0))
        except OSError:
            fd = None
        if fd is not None:
            try:
                os.ftruncate(fd, size)
                return fd, mmap.mmap(fd, size)
            except (OSError, ValueError, OverflowError):
                os.close(fd)
    return None, mmap.mmap(-1, size)
