"""Per-file scan results kept between runs, keyed by content.

One file per (source directory, configuration, tool version) under the cache directory. Entries
are validated by (mtime, size) and, for a file modified within `RACY_SECONDS` of the cache being
written (where a same-size edit could keep its mtime), by a hash of its content. The file starts
with a magic string and a SHA-256 of the payload: a corrupt or truncated cache is detected and
ignored (then rebuilt), never trusted. Writes go to a temporary file renamed into place, so two
runs sharing the directory each see a whole cache, their own or the other's.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import time

MAGIC = b"namespace-lint-cache-v1\n"
RACY_SECONDS = 2.0


def content_digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class Cache:
    def __init__(self, directory: str, key: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, hashlib.sha256(key.encode()).hexdigest()[:24] + ".cache")
        self.written_at = 0.0
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
        if hashlib.sha256(payload).digest() != digest:
            self.status = "corrupt"
            return {}
        try:
            data = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - any unpickling failure means "do not trust it"
            self.status = "corrupt"
            return {}
        if not isinstance(data, dict) or not isinstance(data.get("written_at"), float):
            self.status = "corrupt"
            return {}
        self.written_at = data["written_at"]
        self.status = "warm"
        return data

    def save(self, data: dict) -> None:
        data = dict(data, written_at=time.time())
        payload = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            os.makedirs(self.directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".cache")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + hashlib.sha256(payload).digest() + payload)
                os.replace(tmp, self.path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            pass  # a cache that cannot be written only costs speed next time

    def is_racy(self, mtime_ns: int) -> bool:
        return mtime_ns / 1e9 >= self.written_at - RACY_SECONDS
