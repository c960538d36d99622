"""What the build knows of one file: `FileRecord`.

Its stat when read, its content hash, what the plan asked of it (`flags`), and what was found
(references, edges, an error). The cache and a worker sending its part back hold it as a plain
list (`stored()`, `FileRecord.of`): `marshal` writes only plain values, and a list pickles
several times faster than a slotted dataclass. (A `Record`, not a dataclass: a cold run's start
does not pay for the import of `dataclasses`.)
"""

from __future__ import annotations

from contracts._record import Record
from contracts.engine.records import AST


class FileRecord(Record):
    """One file's record: its stat when read, and what the scan found in it. (Slotted: one is made
    for every file a run reads, at a dataclass's speed.)"""

    __slots__ = ("mtime_ns", "size", "ctime_ns", "digest", "flags", "refs", "error", "edges", "names", "read_at")

    mtime_ns: int
    size: int
    ctime_ns: int
    digest: bytes | None  # SHA-1 of the content (a cache is kept), else None
    flags: int  # AST | GRAPH | DECODED
    refs: list | None  # `ref_tuple`s of the references `ast` found (None: not parsed)
    error: str | None  # why it could not be read or parsed
    edges: list | None  # grimp's (imported, line, contents) (None: not scanned)
    names: dict | None  # line -> the from-imported names of the edges that keep them
    read_at: float  # when the run that read it started

    def __init__(self, mtime_ns: int, size: int, ctime_ns: int, digest: bytes | None, flags: int, refs: list | None,
                 error: str | None, edges: list | None, names: dict | None, read_at: float) -> None:
        self.mtime_ns, self.size, self.ctime_ns, self.digest, self.flags = mtime_ns, size, ctime_ns, digest, flags
        self.refs, self.error, self.edges, self.names, self.read_at = refs, error, edges, names, read_at

    @classmethod
    def of(cls, stored) -> FileRecord:
        """The record a plain list (`stored()`) holds."""
        return cls(*stored)

    def stored(self) -> list:
        """The record as a plain list (what the cache writes and a worker sends)."""
        return [self.mtime_ns, self.size, self.ctime_ns, self.digest, self.flags, self.refs, self.error,
                self.edges, self.names, self.read_at]

    def semantic(self) -> tuple:
        """What the rules see of the record: equal for two reads, equal findings."""
        return self.flags, self.refs, self.error, self.edges, self.names

    def restamped(self, mtime_ns: int, size: int, ctime_ns: int, read_at: float) -> FileRecord:
        """The same findings for a file whose stat moved but whose content did not."""
        return FileRecord(mtime_ns, size, ctime_ns, self.digest, self.flags, self.refs, self.error, self.edges,
                          self.names, read_at)

    def wants_ast(self) -> bool:
        """Marked for `ast` but not parsed yet (a run stopped between reading and parsing)."""
        return bool(self.flags & AST) and self.refs is None and self.error is None

    def wants_edges(self) -> bool:
        """Without edges yet, though it could have some (it read and parsed)."""
        return self.edges is None and self.error is None
