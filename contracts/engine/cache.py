"""What a run keeps for the next one: per-file scan results, and the last run's findings.

Two files per (source directory, scan plan) under the cache directory, in one format:

- the records: one per `.py` file, the scan results (references, edges, errors) of its content,
  valid while its (mtime, size) is unchanged; a file modified within `RACY_SECONDS` of the run
  that recorded it (where an edit of the same size could keep its mtime) is confirmed by a hash
  of its content instead;
- the stamp: the findings of the last full run, with the (mtime, ctime, size) of every file and
  directory under the roots at that run. When nothing differs, the findings are reused without
  building anything: no file is read or parsed, and grimp and the rules are not even imported.

Both carry the tool's fingerprint (its own source files and the Python version): editing the
tool invalidates them. Every file starts with a magic string and an HMAC-SHA-256 of the payload
under a random key kept outside the tree (`~/.cache/namespace-lint/key`, mode 0600): a corrupt or
truncated cache is detected (status "corrupt") and rebuilt, and so is one this user's runs did
not write -- a cache directory committed to a repository cannot hide a finding from CI or, being
a pickle, run code there (the unpickler also refuses every class but the tool's own results).
Writes go to a temporary file renamed into place: two runs sharing the directory each read a
whole cache, theirs or the other's, and each one's entries are checked against the files before
use.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import pickle
import sys

from contracts.engine.files import atomic_write

MAGIC = b"namespace-lint-cache-v3\n"
# A file whose mtime is this close to the start of the run that read it is confirmed by its
# hash: filesystems with coarse timestamps (1 s on some, 2 s on FAT) can hide a second edit.
RACY_SECONDS = 2.0


def content_digest(data: bytes) -> bytes:
    # SHA-1 is the fastest hashlib digest here (0.04 s for upstream's 68 MB, blake2b 0.11 s); it
    # tells one version of a file from the next (the cache file itself is authenticated).
    return hashlib.sha1(data).digest()


# What ruff and import-linter put in theirs: git ignores the directory's contents, and backup
# tools that honour https://bford.info/cachedir/ skip it.
GITIGNORE = b"# Automatically created by namespace-lint.\n*\n"
CACHEDIR_TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
                b"# This file is a cache directory tag created by namespace-lint.\n"
                b"# For information about cache directory tags see https://bford.info/cachedir/\n")


def prepare_directory(directory: str) -> str | None:
    """Make `directory` a cache directory (created with its `.gitignore` and `CACHEDIR.TAG`).
    Returns None when it is usable, else why not (the caller warns once and runs without it)."""
    try:
        os.makedirs(directory, exist_ok=True)
        if not os.path.isdir(directory):
            return "not a directory"
        for name, data in ((".gitignore", GITIGNORE), ("CACHEDIR.TAG", CACHEDIR_TAG)):
            marker = os.path.join(directory, name)
            if not os.path.lexists(marker):
                atomic_write(marker, data)
        if not os.access(directory, os.W_OK | os.X_OK):
            return "not writable"
    except OSError as e:
        return e.strerror or str(e)
    return None


_KEY: bytes | None = None


def _key() -> bytes:
    """This user's cache key: made once, kept outside any repository. Where it cannot be kept,
    a key for this process only (the cache then lasts one run: slower, never wrong)."""
    global _KEY
    if _KEY is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "namespace-lint", "key")
        try:
            with open(path, "rb") as f:
                key = f.read()
        except OSError:
            key = b""
        if len(key) != 32:
            key = os.urandom(32)
            try:
                os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(key)
            except OSError:
                try:  # another run made it first: use theirs
                    with open(path, "rb") as f:
                        theirs = f.read()
                    key = theirs if len(theirs) == 32 else key
                except OSError:
                    pass
        _KEY = key
    return _KEY


def _mac(payload: bytes) -> bytes:
    return hmac.new(_key(), payload, hashlib.sha256).digest()


class _Unpickler(pickle.Unpickler):
    """Builds plain data and the tool's result classes, nothing else."""

    ALLOWED = {("contracts.check", "Result"), ("contracts.check", "ContractResult"),
               ("contracts.findings", "Finding")}

    def find_class(self, module: str, name: str):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} has no place in a cache")


_FINGERPRINT: str | None = None


def tool_fingerprint() -> str:
    """Changes when the tool's code (this package's `.py` files) or the Python version does."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        parts = [sys.version]
        for directory, dirnames, filenames in os.walk(package):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(directory, name))
                    parts.append(f"{os.path.relpath(directory, package)}/{name}:{st.st_mtime_ns}:{st.st_size}")
        _FINGERPRINT = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return _FINGERPRINT


class Cache:
    """One cache file: `load()` -> dict ({} when absent, corrupt or from another tool version),
    `save(data, started)`."""

    def __init__(self, directory: str, key: str, kind: str = "records") -> None:
        self.directory = directory
        name = hashlib.sha256(key.encode()).hexdigest()[:24]
        self.path = os.path.join(directory, f"{name}.{kind}")
        self.started_at = 0.0  # when the run that wrote it started (before it read anything)
        self.status = "cold"  # cold | warm | corrupt

    def load(self) -> dict:
        try:
            with open(self.path, "rb") as f:
                blob = f.read()
        except OSError:
            return {}
        if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 32:
            self.status = "corrupt"
            return {}
        digest, payload = blob[len(MAGIC):len(MAGIC) + 32], blob[len(MAGIC) + 32:]
        if not hmac.compare_digest(_mac(payload), digest):
            self.status = "corrupt"
            return {}
        try:
            data = _Unpickler(io.BytesIO(payload)).load()
        except Exception:  # noqa: BLE001 - any unpickling failure means "do not trust it"
            self.status = "corrupt"
            return {}
        if not isinstance(data, dict) or not isinstance(data.get("started_at"), float):
            self.status = "corrupt"
            return {}
        if data.get("tool") != tool_fingerprint():
            return {}  # another version of the tool wrote it: start over, quietly
        self.started_at = data["started_at"]
        self.status = "warm"
        return data

    def save(self, data: dict, started: float) -> None:
        data = dict(data, started_at=float(started), tool=tool_fingerprint())
        payload = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            os.makedirs(self.directory, exist_ok=True)
            atomic_write(self.path, MAGIC + _mac(payload) + payload)  # mkstemp: a name no other run uses
        except OSError:
            pass  # a cache that cannot be written only costs speed next time

    def is_racy(self, mtime_ns: int) -> bool:
        return mtime_ns / 1e9 >= self.started_at - RACY_SECONDS
