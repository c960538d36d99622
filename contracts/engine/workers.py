"""The files of a cold run, split over processes: both cores read, filter and parse.

Most of a cold run is per-file Python (reading, the prefilter, the `ast` windows) that one
interpreter runs on one core, however many it has. So the files to read are cut into chunks,
and child processes forked at that moment (`os.fork`) take chunks from a
shared queue as this process does: whoever is free takes the next, so a part heavy with `ast`
work does not keep the other core idle. Each child scans its chunks (then grimp's scans of its
part, on grimp's own threads) and sends back its records, pickled, over a pipe. What comes back
is plain data, merged in walk order, so the findings are those of the serial run
(`tests/contracts/engine/test_parallel.py` compares them).

A fork is taken only when it is safe and pays: the platform forks, this process runs no thread
but its own (and those declared safe), Python or native (a thread pool, grimp's included, does
not survive a fork: the `lint-imports` face, where import-linter has built its graph first,
stays serial), more than one core is ours, and there are enough files (`MIN_FILES`). A run that
stays serial says why (`serial_reason`, shown by `-v`). A child that fails, dies or sends
something unreadable costs nothing but time: the chunks it took are scanned here again. The
children are forked, not spawned, so nothing is imported afresh and no code of the checked tree
can run.
"""

from __future__ import annotations

import os
import signal
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
_TASKS = "/proc/self/task"  # one entry per thread of this process, native ones included (Linux)

_SERIAL = [None]  # why the last `jobs` answered one process (`serial_reason`)
_FORKED = [0]  # in a child `_fork` started: its number (1 for the first child of a `map_parts`), else 0


def in_worker() -> bool:
    """Is this process a child that `map_parts` forked (what it returns goes to its parent, pickled)?"""
    return _FORKED[0] != 0


def worker_number() -> int:
    """0 in the process that called `map_parts`; in the children it forked, 1, 2, ... in order."""
    return _FORKED[0]


def serial_reason() -> str | None:
    """Why the last run asked (`jobs`) stayed in one process, or None where it did not."""
    return _SERIAL[0]


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def jobs(asked: int | None, files: int, new: int | None = None) -> int:
    """How many processes to scan `files` files with: `asked` (`--jobs`; None: the environment
    variable, else automatic), and 1 wherever a fork is unsafe. `new`: how many of them have no
    cached record; automatically, only those count (a file with one is usually told unchanged
    by its hash, too little work to send to another process)."""
    if asked is None:
        raw = os.environ.get(ENV, "").strip()
        asked = int(raw) if raw.isdigit() else 0
    n, why = _jobs(asked, files, new)
    _SERIAL[0] = why if n == 1 else None
    return n


def _jobs(asked: int, files: int, new: int | None) -> tuple[int, str | None]:
    """(`jobs`' answer, why it is 1 where it is)."""
    if asked == 1:
        return 1, "one process asked for (--jobs 1)"
    if files < 2:
        return 1, f"{files} file{'' if files == 1 else 's'} to read"
    unsafe = fork_problem()
    if unsafe is not None:
        return 1, unsafe
    if asked:
        return min(asked, files), None
    # Automatic: both cores (more would only split the same two), enough files.
    if cores() < 2:
        return 1, "one core"
    count = files if new is None else new
    if count < MIN_FILES:
        return 1, f"{count} files to read, fewer than the {MIN_FILES} that pay for a second process"
    return 2, None


# Threads that hold no lock a child could need (the objects: an ident is reused once a thread ends).
_FORK_SAFE: weakref.WeakSet = weakref.WeakSet()


def declare_fork_safe(thread: threading.Thread) -> None:
    """`thread` may run while this module forks: it takes no lock the scan needs, or gives it up
    around a fork (`os.register_at_fork`), as the terminal's progress line does."""
    _FORK_SAFE.add(thread)


def fork_is_safe() -> bool:
    """Nothing but this thread (and threads declared safe) runs, Python or native."""
    return fork_problem() is None


def fork_problem() -> str | None:
    """Why forking this process now is unsafe (or impossible), or None."""
    if not hasattr(os, "fork"):
        return "this platform cannot fork"
    here = threading.current_thread()
    python = [t for t in threading.enumerate() if t is not here and t not in _FORK_SAFE]
    if python:
        return f"another thread runs in this process ({python[0].name})"
    native = _native_threads()
    if native is None:
        return "this platform does not show a process's native threads"
    if native:
        return f"{native} native thread{'' if native == 1 else 's'} run in this process (a thread pool: grimp's?)"
    return None


def _native_threads() -> int | None:
    """How many threads of this process Python did not start (a native library's), or None where
    the platform does not tell."""
    try:
        tasks = os.listdir(_TASKS)
    except OSError:
        return None
    ours = {t.native_id for t in threading.enumerate()}
    return sum(1 for task in tasks if int(task) not in ours)


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
    files, mine_first = _own_first(files, n, weight, own)
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
    return _in_processes(scan, context, pieces, queue, n, meanwhile, mine_first, lead)


def _own_first(files: list, n: int, weight, own) -> tuple[list, list[list]]:
    """(the files left for the shared queue, the chunks this process scans first): `own`'s files
    in chunks, unless they outweigh this process's share (the others would wait at the end)."""
    if own is None:
        return files, []
    owned: list = []
    rest: list = []
    for f in files:
        (owned if own(f) else rest).append(f)
    heavy = n > 1 and weight is not None and sum(map(weight, owned)) * (n - 1) > sum(map(weight, rest))
    if not owned or heavy:
        return files, []
    return rest, [owned[i:i + CHUNK_FILES] for i in range(0, len(owned), CHUNK_FILES)]


def _in_processes(scan, context, pieces: list, queue: _Queue, n: int, meanwhile, mine_first: list, lead: dict
                  ) -> list:
    """`map_parts` over `n` processes: `n - 1` children forked first, then this process's share;
    the chunks of a child that failed are scanned here again."""
    _pickler()  # (loaded once, before the fork: neither the child nor the reader thread loads it)
    children = [c for c in (_fork(scan, context, pieces, queue, i) for i in range(1, n)) if c is not None]
    queue.close_write()  # (every fork before any thread of this process)
    for child in children:
        child.start_reading()
    if meanwhile is not None:
        meanwhile()
    mine: list[int] = []

    def ours():
        yield from mine_first
        yield from queue.take(pieces, mine)

    try:
        results = [scan(context, ours(), **lead)]
    except BaseException:  # (an error, ^C: no child is left running on its own)
        for child in children:
            child.stop()
        raise
    finally:
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
    """A forked child (`os.fork`: `multiprocessing` adds 5-7 ms of imports to every run that forks,
    and its exit handler waits for every child to end) and the read end of its answer (a pipe's
    file descriptor)."""

    def __init__(self, pid: int, receive_fd: int) -> None:
        self.pid, self.receive_fd = pid, receive_fd
        self.answer: list = []  # (ok, taken, value), once read whole
        self.reader = None

    def start_reading(self) -> None:
        """Read the answer on a thread while this process scans: the child never blocks on a full
        pipe, and its answer is unpickled as it comes, while the child still pickles the rest
        (after the pickle, then the read, then the unpickle, one after the other: 8-10 ms more
        at each hand-over of a cold run on 0.5.23)."""
        self.reader = threading.Thread(target=self._read, name="namespace-lint-worker", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        try:
            with open(self.receive_fd, "rb") as answer:
                self.answer.append(_pickler().load(answer))
        except Exception:  # noqa: BLE001 - it died before answering, or a truncated or garbled
            return  # answer: its chunks are scanned here

    def result(self):
        """(the chunk numbers it took, what `scan` returned), or None if it failed. A whole answer
        is taken without waiting for the child to exit (leaving a large process takes it 5-10 ms;
        it is reaped later, `_reap`)."""
        if self.reader is not None:
            self.reader.join()
        ok, taken, value = self.answer[0] if self.answer else (False, None, None)
        if not ok:
            _wait(self.pid, 0)
            return None
        _leaving(self.pid)
        return taken, value

    def stop(self) -> None:
        """End the child now (this process failed while it ran): it is killed and reaped, and the
        thread reading its answer ends (the pipe closes with it)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:  # it has ended already
            pass
        _wait(self.pid, 0)
        if self.reader is not None:
            self.reader.join()


_EXITING: list[int] = []  # children that answered and may still be leaving


def _reap(block: bool = False) -> None:
    """Reap the children that answered and have ended since; with `block`, wait for every one
    (at this process's exit, `atexit`: no child outlives it, and the time the children took is
    counted among its children's, as `time` and a benchmark's `RUSAGE_CHILDREN` read it)."""
    flags = 0 if block else os.WNOHANG
    _EXITING[:] = [pid for pid in _EXITING if not _wait(pid, flags)]


def _leaving(pid: int) -> None:
    """`pid` answered and is leaving: reaped now if it is gone, else later (`_reap`)."""
    if not _EXITING:
        import atexit  # (built in: nothing to load)

        atexit.unregister(_reap)
        atexit.register(_reap, True)
    _EXITING.append(pid)
    _reap()


def _wait(pid: int, flags: int) -> bool:
    """`waitpid`; True once the child is reaped (or is no child of ours to reap)."""
    try:
        return os.waitpid(pid, flags)[0] != 0
    except ChildProcessError:
        return True
    except InterruptedError:  # (retried by Python since 3.5; kept for a handler that raises)
        return False


def _pickler():
    """The module whose `dump` and `load` carry an answer: `pickle`'s C core where there is one
    (importing `pickle` itself costs 3-5 ms, which a run that forks paid twice: in the child before
    it answers, and in the parent's reader thread in the middle of the parent's scan)."""
    try:
        import _pickle
    except ImportError:  # (an interpreter without it)
        import pickle as _pickle
    return _pickle


def _fork(scan, context, pieces: list, queue: _Queue, number: int) -> _Child | None:
    """The child number `number`, forked now, taking chunks from `queue`, or None where none can be started."""
    try:
        receive, send = os.pipe()
    except OSError:
        return None
    for stream in (sys.stdout, sys.stderr):  # (what is buffered is written once, by this process)
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    try:
        pid = os.fork()
    except OSError:
        os.close(receive)
        os.close(send)
        return None
    if pid == 0:  # the child: it never returns from here
        code = 1
        _FORKED[0] = number
        try:
            os.close(receive)
            _child_main(scan, context, pieces, queue, send)
            code = 0
        finally:
            os._exit(code)
    os.close(send)
    return _Child(pid, receive)


def _child_main(scan, context, pieces: list, queue: _Queue, send: int) -> None:
    """In a child: scan the chunks it takes from `queue`, and send back (ok, the chunk numbers
    taken, what `scan` returned or why it failed), pickled."""
    queue.close_write()
    taken: list[int] = []
    try:
        value = scan(context, queue.take(pieces, taken))
        if hasattr(value, "before_transfer"):
            value.before_transfer()  # what need not travel (it can be read again)
        answer = (True, taken, value)
    except BaseException as e:  # noqa: BLE001 - reported as a failure; the parent rescans
        answer = (False, taken, repr(e))
    with open(send, "wb") as out:  # (pickled into the pipe, frame by frame: the parent unpickles as it comes)
        _pickler().dump(answer, out, protocol=-1)  # (-1: the highest protocol)
