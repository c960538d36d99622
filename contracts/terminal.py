"""What the command line does with a terminal: whether to colour, and a progress line.

Colour: on when `FORCE_COLOR` is set (not empty); else off when `NO_COLOR` is set (not empty,
https://no-color.org); else on when the stream is a terminal. The progress line appears on
stderr only when it is a terminal and the run has taken more than a second, and is erased
before anything else is printed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import weakref


def use_colour(stream) -> bool:
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


# The progress lines showing now. Around a fork (the engine's workers) their locks are held, so
# the line is never half written, and no lock of stderr's held, when a child starts.
_LIVE: weakref.WeakSet = weakref.WeakSet()


def _before_fork() -> None:
    for progress in list(_LIVE):
        progress._lock.acquire()


def _after_fork() -> None:
    for progress in list(_LIVE):
        progress._lock.release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork, after_in_child=_after_fork)


class Progress:
    """`with progress.phase("checking"):` shows `namespace-lint: checking... 3s` on a terminal's
    stderr once the run has lasted `delay` seconds, updated twice a second, erased on exit."""

    def __init__(self, enabled: bool | None = None, stream=None, delay: float = 1.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.delay = delay
        self.start = time.monotonic()
        self.label = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False
        self._lock = threading.Lock()

    def phase(self, label: str) -> Progress:
        self.label = label
        return self

    def __enter__(self) -> Progress:
        if self.enabled and self._thread is None:
            # Not at the top: `--help` imports this module, and does not need the engine.
            from contracts.engine import workers

            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
            _LIVE.add(self)
            workers.declare_fork_safe(self._thread)  # it writes only under `_lock`, held around a fork
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            _LIVE.discard(self)
        with self._lock:
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False

    @contextlib.contextmanager
    def guarding(self):
        """While inside: the first write to sys.stdout or sys.stderr (by code that prints as it
        goes, as derive-map does) ends the progress line first, so the two never interleave."""
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _StopOnWrite(saved[0], self), _StopOnWrite(saved[1], self)
        try:
            yield self
        finally:
            sys.stdout, sys.stderr = saved

    def _loop(self) -> None:
        wait = self.delay - (time.monotonic() - self.start)
        while not self._stop.wait(max(wait, 0.0)):
            with self._lock:
                elapsed = time.monotonic() - self.start
                try:
                    self.stream.write(f"\r\x1b[Knamespace-lint: {self.label}... {elapsed:.0f}s")
                    self.stream.flush()
                except (OSError, ValueError):
                    return
                self._shown = True
            wait = 0.5


class _StopOnWrite:
    def __init__(self, stream, progress: Progress) -> None:
        self._stream, self._progress = stream, progress

    def write(self, text):
        self._progress.stop()
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)
