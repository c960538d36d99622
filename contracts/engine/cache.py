"""What a run keeps for the next one: per-file scan results, and the last run's findings.

Two files per (source directory, scan plan) under the cache directory, in one format:

- the records: one per `.py` file, the scan results (references, edges, errors) of its content,
  valid while its (mtime, size) is unchanged; a file modified within `RACY_SECONDS` of the run
  that recorded it (where an edit of the same size could keep its mtime) is confirmed by a hash
  of its content instead;
- the stamp: the findings of the last full run, with the (mtime, ctime, size) of every file and
  directory under the roots at that run. When nothing differs, the findings are reused without
  building anything: no file is read or parsed, and grimp and the rules are not even imported.

The cache directory usually sits in the checkout (beside the configuration), where anyone who
can write the tree can also write, commit or replace it. So nothing in it is trusted:

- data only: `marshal` of plain values (no pickle, so nothing in a cache names code to run;
  Python 3.13+ is also told to refuse code objects); it is the fastest of the formats measured
  (see `docs/guarantees.md`);
- every file starts with a magic string and an HMAC-SHA-256 of the payload under a random key
  kept outside the tree (`$XDG_CACHE_HOME/namespace-lint/key` or `~/.cache/...`, mode 0600): a
  corrupt, truncated or forged cache is detected (status "corrupt") and rebuilt. A key location
  that is relative (an unset `HOME` leaves `~` literal), inside the checked tree, the
  configuration's directory or the cache directory, or not this user's, is refused: the run
  warns once and goes on without a cache (`usable`);
- cache files are opened without following symlinks, must be regular files of this user, at
  most `MAX_CACHE_BYTES`, and are written 0600 in a 0700 directory, by a rename relative to the
  directory's descriptor (a cache directory that is a symlink is refused).

A cache can therefore at worst make a run slower, never hide a finding. Writes go to a temporary
file renamed into place: two runs sharing the directory each read a whole cache, theirs or the
other's, and each one's entries are checked against the files before use.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys

from contracts.engine.files import open_dir, read_regular, replace_in_dir

MAGIC = b"namespace-lint-cache-v4\n"
# A file whose mtime is this close to the start of the run that read it is confirmed by its
# hash: filesystems with coarse timestamps (1 s on some, 2 s on FAT) can hide a second edit.
RACY_SECONDS = 2.0
# Upstream sglang's records are 2.4 MB for 4,719 files: this is room for 200 times that tree. A
# larger cache file (a link to /dev/zero is refused anyway) is ignored, never read.
MAX_CACHE_BYTES = 512 * 2**20
KEY_BYTES = 32

_geteuid = getattr(os, "geteuid", None)


def _loads(payload: bytes):
    return marshal.loads(payload, **_NO_CODE)


try:  # Python 3.13+: refuse code objects outright (older ones never run what they load either)
    marshal.loads(marshal.dumps(0), allow_code=False)
    _NO_CODE = {"allow_code": False}
except TypeError:
    _NO_CODE = {}


# `hashlib` and `hmac` are imported where a cache is used: loading OpenSSL costs a run without
# one (`--no-cache`, CI) 3 ms before its files are split over the cores.
_sha1 = None


def content_digest(data: bytes) -> bytes:
    # SHA-1 is the fastest hashlib digest here (0.04 s for upstream's 68 MB, blake2b 0.11 s); it
    # tells one version of a file from the next (the cache file itself is authenticated).
    global _sha1
    if _sha1 is None:
        from hashlib import sha1 as _sha1
    return _sha1(data).digest()


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
        dfd = open_dir(directory)  # written relative to it: a symlink swapped in is not followed
        try:
            for name, data in ((".gitignore", GITIGNORE), ("CACHEDIR.TAG", CACHEDIR_TAG)):
                if not os.path.lexists(os.path.join(directory, name)):
                    replace_in_dir(dfd, name, data, mode=0o600)
        finally:
            os.close(dfd)
        if not os.access(directory, os.W_OK | os.X_OK):
            return "not writable"
    except OSError as e:
        return e.strerror or str(e)
    return None


def key_directory() -> str:
    """Where this user's cache key lives: `$XDG_CACHE_HOME/namespace-lint`, else
    `~/.cache/namespace-lint` (an empty XDG_CACHE_HOME counts as unset, as the XDG spec says)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "namespace-lint")


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _owner_problem(st: os.stat_result, what: str) -> str | None:
    if _geteuid is not None and st.st_uid != _geteuid():
        return f"{what} belongs to uid {st.st_uid}, not to this user (uid {_geteuid()})"
    if st.st_mode & 0o022:
        return f"{what} is writable by other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


_KEY: bytes | None = None
_KEY_DIR: str | None = None  # the directory _KEY was read from


def _load_key(key_dir: str) -> tuple[bytes | None, str | None]:
    """(key, None), or (None, why not). The directory is made 0700; a key file that is a
    symlink, not a regular file, not this user's or readable by others is refused."""
    try:
        os.makedirs(key_dir, mode=0o700, exist_ok=True)
        dfd = open_dir(key_dir)
    except OSError as e:
        return None, f"the key directory `{key_dir}` cannot be used: {e.strerror or e}"
    try:
        problem = _owner_problem(os.fstat(dfd), f"the key directory `{key_dir}`")
        if problem:
            return None, problem
        for _ in range(2):
            try:
                data, st = read_regular("key", limit=4 * KEY_BYTES, dir_fd=dfd)
            except FileNotFoundError:
                key = os.urandom(KEY_BYTES)
                try:
                    fd = os.open("key", os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                                 0o600, dir_fd=dfd)
                except FileExistsError:
                    continue  # another run made it first: read theirs
                with os.fdopen(fd, "wb") as f:
                    f.write(key)
                return key, None
            problem = _owner_problem(st, f"the key `{key_dir}/key`")
            if problem is None and st.st_mode & 0o077:
                problem = f"the key `{key_dir}/key` is readable by other users (mode {stat.S_IMODE(st.st_mode):o})"
            if problem is None and len(data) != KEY_BYTES:
                problem = f"the key `{key_dir}/key` is not {KEY_BYTES} bytes long; delete it"
            return (None, problem) if problem else (data, None)
        return None, f"the key `{key_dir}/key` cannot be read"
    except OSError as e:
        return None, f"the key `{key_dir}/key` cannot be used: {e.strerror or e}"
    finally:
        os.close(dfd)


def usable(cache_dir: str, checked: list[tuple[str, str]]) -> str | None:
    """None when `cache_dir` can be used (its key loaded, the directory made), else why not.

    `checked`: (label, directory) pairs the key must not be inside -- the checked tree, the
    configuration's directory: whoever can write those could otherwise forge the cache.
    """
    global _KEY, _KEY_DIR
    key_dir = key_directory()
    if not os.path.isabs(key_dir):
        return (f"the cache key directory `{key_dir}` is a relative path (from XDG_CACHE_HOME or "
                f"HOME); set HOME or XDG_CACHE_HOME to an absolute directory outside the checkout")
    real_key = os.path.realpath(key_dir)
    for label, place in [*checked, ("the cache directory", cache_dir)]:
        if _inside(real_key, os.path.realpath(place)):
            return (f"the cache key directory `{key_dir}` is inside {label} `{place}`, where the tree's "
                    f"writers could forge the cache; set XDG_CACHE_HOME to a directory outside it")
    if _KEY is None or _KEY_DIR != key_dir:
        key, problem = _load_key(key_dir)
        if problem:
            return problem
        _KEY, _KEY_DIR = key, key_dir
    try:
        os.makedirs(cache_dir, mode=0o700, exist_ok=True)
        dfd = open_dir(cache_dir)
    except OSError as e:
        if os.path.islink(cache_dir):
            return f"the cache directory `{cache_dir}` is a symlink; it is not followed"
        return f"the cache directory `{cache_dir}` cannot be used: {e.strerror or e}"
    try:
        st = os.fstat(dfd)
        if _geteuid is not None and st.st_uid != _geteuid():
            return f"the cache directory `{cache_dir}` belongs to uid {st.st_uid}, not to this user"
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(dfd, 0o700)
    except OSError as e:
        return f"the cache directory `{cache_dir}` cannot be used: {e.strerror or e}"
    finally:
        os.close(dfd)
    return None


def _key() -> bytes:
    """The key `usable` loaded; without it (a caller that skipped `usable`), a key for this
    process only: the cache then lasts one process (slower, never wrong)."""
    global _KEY
    if _KEY is None:
        _KEY = os.urandom(KEY_BYTES)
    return _KEY


def _mac(payload: bytes) -> bytes:
    import hashlib
    import hmac

    return hmac.new(_key(), payload, hashlib.sha256).digest()


# The distributions whose code makes or reads what the cache keeps (grimp's edges, import-linter's
# contract options, libcst's parses), by their names as installed (`<name>-<version>.dist-info`).
KEYED_DISTRIBUTIONS = ("grimp", "import_linter", "libcst")
_VERSIONS: tuple[str, ...] | None = None


def versions() -> tuple[str, ...]:
    """(this tool's version, grimp's, import-linter's, libcst's, Python's): what the cache key
    holds besides the scan plan, so that an upgrade of any of them starts a new cache."""
    global _VERSIONS
    if _VERSIONS is None:
        from contracts._version import __version__

        found = _installed(KEYED_DISTRIBUTIONS)
        _VERSIONS = (__version__, *(found.get(name) or _metadata_version(name) for name in KEYED_DISTRIBUTIONS),
                     sys.version)
    return _VERSIONS


def _installed(names: tuple[str, ...]) -> dict[str, str]:
    """name -> version, read off the first `<name>-<version>.dist-info` directory on `sys.path`
    (where `importlib.metadata` finds the distribution first): one listing per path entry, where
    importing `importlib.metadata` would cost every warm run 25-35 ms."""
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            listing = os.listdir(entry or ".")
        except OSError:
            continue
        for item in listing:
            if item.endswith(".dist-info"):
                name, _, version = item[:-len(".dist-info")].partition("-")
                name = name.lower().replace("-", "_").replace(".", "_")
                if name in names and name not in found:
                    found[name] = version
        if len(found) == len(names):
            break
    return found


def _metadata_version(name: str) -> str:
    """`importlib.metadata`'s version of `name` (installed otherwise than as a `.dist-info`
    directory on `sys.path`), or "absent"."""
    from importlib import metadata  # (25-35 ms: only where a distribution is laid out otherwise)

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


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
        import hashlib

        _FINGERPRINT = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return _FINGERPRINT


class Cache:
    """One cache file: `load()` -> dict ({} when absent, corrupt or from another tool version),
    `save(data, started)`. `data` holds plain values only (what `marshal` writes)."""

    def __init__(self, directory: str, key: str, kind: str = "records") -> None:
        import hashlib

        self.directory = directory
        self.name = f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.{kind}"
        self.path = os.path.join(directory, self.name)
        self.started_at = 0.0  # when the run that wrote it started (before it read anything)
        self.status = "cold"  # cold | warm | corrupt

    def load(self) -> dict:
        try:
            dfd = open_dir(self.directory)
        except OSError:
            return {}
        try:
            blob, st = read_regular(self.name, limit=MAX_CACHE_BYTES, dir_fd=dfd)
        except FileNotFoundError:
            return {}
        except OSError:  # a symlink, a FIFO, a device, too large
            self.status = "corrupt"
            return {}
        finally:
            os.close(dfd)
        if _geteuid is not None and st.st_uid != _geteuid():
            self.status = "corrupt"  # another user's: never trusted (they may know another key)
            return {}
        if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 32:
            self.status = "corrupt"
            return {}
        digest, payload = blob[len(MAGIC):len(MAGIC) + 32], blob[len(MAGIC) + 32:]
        import hmac

        if not hmac.compare_digest(_mac(payload), digest):
            self.status = "corrupt"
            return {}
        try:
            data = _loads(payload)
        except Exception:  # noqa: BLE001 - any failure to load means "do not trust it"
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
        try:
            payload = marshal.dumps(data)
        except ValueError:  # pragma: no cover - a value marshal cannot write: a bug, not a crash
            return
        try:
            dfd = open_dir(self.directory)  # `usable` made it; a symlink put there since is refused
            try:
                replace_in_dir(dfd, self.name, MAGIC + _mac(payload) + payload, mode=0o600)
            finally:
                os.close(dfd)
        except OSError:
            pass  # a cache that cannot be written only costs speed next time

    def is_racy(self, mtime_ns: int) -> bool:
        return mtime_ns / 1e9 >= self.started_at - RACY_SECONDS
