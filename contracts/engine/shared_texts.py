"""The texts a cold run's forked readers read, handed back in one memory map the processes share,
so that the rules read them in place instead of again from disk (a pipe would copy and carry
each byte: 80 ms for one child's 36 MB of 0.5.23; figures in docs/benchmarks.md, "Kept tricks").

Each file has a slot sized by the walk's `stat`; a file whose size changed since, or that has
no slot, is not put, and is read again where it is wanted.
"""

from __future__ import annotations

import mmap
import os

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
        self.map = mmap.mmap(-1, at) if 0 < at <= MAX_BYTES else None

    @classmethod
    def for_files(cls, files, limit: int) -> SharedTexts | None:
        """The slots, or None where no map can be had (or no file would go in one)."""
        try:
            shared = cls(files, limit)
        except (OSError, ValueError, OverflowError):  # no memory map to be had: the texts are read again
            return None
        return shared if shared.map is not None else None

    def put(self, rel: str, data: bytes) -> bool:
        """Put `rel`'s text in its slot (in a forked reader); False where it has none that fits."""
        slot = self.slots.get(rel)
        if slot is None or len(data) != slot[1] or self.map is None:
            return False
        at, size = slot
        self.map[at:at + size] = data
        return True

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
