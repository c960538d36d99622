"""The files of a cold run, split over processes: both cores read, filter and parse.

Most of a cold run is per-file Python (reading, the prefilter, the `ast` windows) that one
interpreter runs on one core, however many it has. So the files to read are cut into chunks,
and children forked at that moment take chunks from a shared queue as this process does:
whoever is free takes the next, so a part heavy with `ast` work does not keep the other core
idle. Each child scans its chunks (then grimp's scans of its part, on grimp's own threads) and
sends back its records, pickled, over a pipe. What comes back is
plain data, merged in walk order, so the findings are those of the serial run
(`tests/contracts/engine/test_parallel.py` compares them).

A fork is taken only when it is safe and pays: the platform has `os.fork`, this process has no
other thread and has not loaded grimp's native module (its thread pool does not survive a fork:
the `lint-imports` face, where import-linter has built its graph first, stays serial), more
than one core is ours, and there are enough files (`MIN_FILES`). A child that fails, dies or
sends something unreadable costs nothing but time: the chunks it took are scanned here again.
Nothing is spawned, so nothing is imported afresh and no code of the checked tree can run.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref

# Below this many files to read (without a cached record) a fork's fixed costs (the child's
# grimp set-up, the pickling) are not won back; a warm run with a few changed files never forks.
MIN_FILES = 400
ENV = "NAMESPACE_LINT_JOBS"  # the number of processes, as `--jobs` sets it (0 or unset: automatic)
CHUNK_FILES = 48  # files per chunk: small enough to balance, large enough to batch
CHUNKS_PER_PROCESS = 32  # chunks of equal weight, when files are weighed
_INDEX_BYTES = 2  # a chunk number in the queue (all of it written before the fork: atomic reads)
MAX_CHUNKS = 2048  # (4,096 bytes: one atomic pipe write)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def jobs(asked: int | None, files: int, new: int | None = None) -> int:
    """How many processes to scan `files` files with: `asked` (`--jobs`; None: the environment
    variable, else automatic), and 1 wherever a fork is unsafe. `new`: how many of them have no
    cached record; automatically, only those count (a file with one is usually told unchanged
    by its hash, too little work to send to another process: after a fresh copy of 0.5.16 two
    processes took 0.31-0.34 s and 0.34-0.37 CPU-s, one 0.28-0.33 s and 0.28-0.31 CPU-s)."""
    if asked is None:
        raw = os.environ.get(ENV, "").strip()
        asked = int(raw) if raw.isdigit() else 0
    if asked == 1 or files < 2 or not fork_is_safe():
        return 1
    if asked == 0:  # automatic: both cores (more would only split the same two), enough files
        return min(2, cores()) if (files if new is None else new) >= MIN_FILES else 1
    return min(asked, files)


# Threads that hold no lock a child could need (the objects: an ident is reused once a thread ends).
_FORK_SAFE: weakref.WeakSet = weakref.WeakSet()


def declare_fork_safe(thread: threading.Thread) -> None:
    """`thread` may run while this module forks: it takes no lock the scan needs, or gives it up
    around a fork (`os.register_at_fork`), as the terminal's progress line does."""
    _FORK_SAFE.add(thread)


def fork_is_safe() -> bool:
    """Nothing but this thread (and threads declared safe) runs, and grimp's native module,
    whose thread pool would not survive a fork, is not loaded."""
    here = threading.current_thread()
    others = [t for t in threading.enumerate() if t is not here and t not in _FORK_SAFE]
    return hasattr(os, "fork") and not others and "grimp._rustgrimp" not in sys.modules


def chunks(files: list, n: int, weight=None) -> list[list]:
    """`files` in chunks of consecutive files (walk order: a directory's files are alike).

    `weight(file)`: what a file costs, roughly; then the heaviest files come first, in chunks of
    about equal weight (`CHUNKS_PER_PROCESS` for each process), and the last chunks are many
    light files: whoever takes the last one is done soon after the other. (Then each process
    scans the edges of its graph files in one native call: on 0.5.23 the two took 12.5-12.9 and
    13.4-13.8 MB, and ended 0-46 ms apart.)"""
    if n <= 1:
        return [list(files)]
    if weight is None:
        size = max(CHUNK_FILES, -(-len(files) // MAX_CHUNKS))
        return [files[i:i + size] for i in range(0, len(files), size)]
    weights = [weight(f) for f in files]
    total = sum(weights)
    if total <= 0:  # nothing to weigh by: chunks of consecutive files
        return chunks(files, n)
    order = sorted(range(len(files)), key=lambda i: -weights[i])  # (stable: ties in walk order)
    target = max(total / (n * CHUNKS_PER_PROCESS), total / MAX_CHUNKS * 1.01)
    out: list[list] = []
    chunk: list = []
    held = 0.0
    for i in order:
        chunk.append(files[i])
        held += weights[i]
        if held >= target:
            out.append(chunk)
            chunk, held = [], 0.0
    if chunk:
        out.append(chunk)
    return out


def map_parts(scan, context, files: list, n: int, meanwhile=None, weight=None, own=None) -> list:
    """`scan(context, chunks)` in `n` processes, which share the chunks of `files`: a list of
    what each returned (`scan` takes an iterable of chunks, each a list of files). `meanwhile()`,
    if given, runs in this process once the others have started, before it takes its share.
    `weight`: as `chunks` takes it (the order in which files are scanned is then not theirs).

    `own(file)`: the files this process scans itself, before it takes from the shared queue (a
    part that needs all of them at once: `reading.scan_part` closes the graph over the kernel
    package's edges while the other chunks are read). Then this process's call is
    `scan(context, chunks, lead=K)`, its first K chunks being those files (K is 0 where they
    weigh more than this process's share of the whole); the result comes first in the list."""
    mine_first: list[list] = []
    if own is not None:
        owned: list = []
        rest: list = []
        for f in files:
            (owned if own(f) else rest).append(f)
        # (Not where they outweigh this process's share: the others would wait at the end.)
        heavy = n > 1 and weight is not None and sum(map(weight, owned)) * (n - 1) > sum(map(weight, rest))
        if owned and not heavy:
            files = rest
            mine_first = [owned[i:i + CHUNK_FILES] for i in range(0, len(owned), CHUNK_FILES)]
    lead = {"lead": len(mine_first)} if own is not None else {}
    # (With chunks of its own first, one process still reads the rest in several chunks: the
    # part acts on what comes back from its scans between two chunks.)
    pieces = chunks(files, max(n, 2), weight) if mine_first else chunks(files, n, weight)
    n = min(n, len(pieces) + (1 if mine_first else 0))  # (`--jobs 10000`: a process per chunk at most)
    try:
        queue = _Queue(len(pieces)) if n > 1 else None
    except OSError:  # no pipe to be had (out of file descriptors): this process alone
        queue = None
    if queue is None:
        if meanwhile is not None:
            meanwhile()
        return [scan(context, iter(mine_first + pieces), **lead)]
    forked = [_fork(scan, context, pieces, queue) for _ in range(n - 1)]  # every fork before any thread
    queue.close_write()
    children = [_Child(*f) for f in forked if f is not None]
    if meanwhile is not None:
        meanwhile()
    mine: list[int] = []

    def ours():
        yield from mine_first
        yield from queue.take(pieces, mine)

    results = [scan(context, ours(), **lead)]
    queue.close()
    done = set(mine)
    for child in children:
        answer = child.result()
        if answer is not None:
            taken, value = answer
            results.append(value)
            done.update(taken)
    missing = [i for i in range(len(pieces)) if i not in done]
    if missing:  # a child failed: its chunks again, here
        results.append(scan(context, iter([pieces[i] for i in missing])))
    return results


class _Queue:
    """Chunk numbers in a pipe, written at once; each process reads the next one when free."""

    def __init__(self, count: int) -> None:
        self.read_fd, write_fd = os.pipe()
        os.write(write_fd, b"".join(i.to_bytes(_INDEX_BYTES, "big") for i in range(count)))
        self.write_fd = write_fd

    def close_write(self) -> None:
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None

    def take(self, pieces: list, taken: list[int]):
        while True:
            raw = os.read(self.read_fd, _INDEX_BYTES)
            if len(raw) < _INDEX_BYTES:  # empty: every writer is gone, so it stays empty
                return
            i = int.from_bytes(raw, "big")
            taken.append(i)
            yield pieces[i]

    def close(self) -> None:
        self.close_write()
        os.close(self.read_fd)


class _Child:
    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.chunks: list[bytes] = []
        # Read while this process scans: the child never blocks on a full pipe.
        self.reader = threading.Thread(target=self._read, args=(fd,), name="namespace-lint-worker", daemon=True)
        self.reader.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as pipe:
            while chunk := pipe.read(1 << 20):
                self.chunks.append(chunk)

    def result(self):
        """(the chunk numbers it took, what `scan` returned), or None if it failed."""
        self.reader.join()
        _, status = os.waitpid(self.pid, 0)
        if status != 0:
            return None
        import pickle

        try:
            ok, taken, value = pickle.loads(b"".join(self.chunks))
        except Exception:  # noqa: BLE001 - a truncated or garbled answer: its chunks are scanned here
            return None
        return (taken, value) if ok else None


def _fork(scan, context, pieces: list, queue: _Queue) -> tuple[int, int] | None:
    """(pid, the read end of its answer) of a child taking chunks from `queue`, or None."""
    import pickle  # (here, before the fork: a run that forks nothing never loads it)

    try:
        read_end, write_end = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: scan, answer, leave without running this process's exit handlers
        code = 0
        try:
            os.close(read_end)
            queue.close_write()
            taken: list[int] = []
            try:
                value = scan(context, queue.take(pieces, taken))
                if hasattr(value, "before_transfer"):
                    value.before_transfer()  # what need not travel (it can be read again)
                answer = (True, taken, value)
            except BaseException as e:  # noqa: BLE001 - reported as a failure; the parent rescans
                answer = (False, taken, repr(e))
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end
