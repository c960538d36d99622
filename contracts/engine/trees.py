"""A source tree named on the command line: a directory, a wheel, or `name==version`.

`derive-map --before/--after` and `--verify-against` read other releases of a package than the
one checked. Each may be given as

- a directory that contains the top-level package(s) (`site-packages`, an unpacked wheel, a
  checkout's `python/`);
- a wheel file (`.whl`): its `.py`/`.pyi` files are unpacked into a temporary directory (its
  extension modules as empty files: only their existence is read);
- `name==version`: fetched with `pip download --no-deps --only-binary :all:` into a temporary
  directory, then unpacked as a wheel: wheels only, never an sdist (building one would run its
  code). A release with no wheel for this Python is passed as a wheel file or a directory. Without network (or without that release) it is a usage error that says
  what pip said; pip's own settings apply (`PIP_INDEX_URL`, `PIP_FIND_LINKS`, `pip.conf`).
  pip runs isolated (`python -I`: no working directory or script directory on `sys.path`, no
  `PYTHON*` variables, no user site) in a fresh empty working directory, so a `pip/`,
  `sitecustomize.py` or `usercustomize.py` committed in the checked tree is never seen.

Nothing is ever imported or installed. Temporary directories are removed at exit.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

from contracts.errors import UsageError

_REQUIREMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!_-]*$")
_SOURCE_SUFFIXES = (".py", ".pyi")
_EXTENSION_SUFFIXES = (".so", ".pyd")  # unpacked empty: only their existence is ever read
PIP_TIMEOUT_S = 300  # a large wheel on a slow link; a hung pip is stopped, not waited on forever
_MAX_MEMBER_BYTES = 64 * 1024 * 1024  # no real source file is this large: a zip bomb is refused
# The whole unpacked tree is bounded too, or a few MB of wheel (many members, each under the
# member cap) fill the temporary directory. torch 2.x, the largest wheel this tool is pointed at,
# unpacks to about 15,000 source files and 60 MB of them (extension modules are empty files).
MAX_WHEEL_BYTES = 512 * 1024 * 1024
MAX_WHEEL_MEMBERS = 200_000

_temp_dirs: list[str] = []


def _cleanup() -> None:
    for d in _temp_dirs:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)


def _temp_dir(label: str) -> str:
    d = tempfile.mkdtemp(prefix=f"namespace-lint-{label}-")
    _temp_dirs.append(d)
    return d


def is_requirement(spec: str) -> bool:
    return bool(_REQUIREMENT_RE.match(spec)) and not os.path.exists(spec)


_downloaded: dict[str, str] = {}  # name==version -> its directory: one download per run


def open_tree(spec: str, option: str) -> str:
    """The directory that holds the packages of `spec` (see the module docstring). Raises
    UsageError with `option` in the message when it cannot be had."""
    if not is_requirement(spec):
        return _open_tree(spec, option)
    if spec not in _downloaded:
        _downloaded[spec] = _open_tree(spec, option)
    return _downloaded[spec]


def _open_tree(spec: str, option: str) -> str:
    if os.path.isdir(spec):
        return os.path.abspath(spec)
    if os.path.isfile(spec):
        if spec.endswith(".whl") or zipfile.is_zipfile(spec):
            return unpack_wheel(spec, option)
        raise UsageError(f"{option} {spec}: not a directory or a wheel (.whl)")
    if is_requirement(spec):
        return unpack_wheel(download(spec, option), option)
    raise UsageError(f"{option} {spec}: no such directory or file, and not a `name==version` to download")


def _members(z: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The members of a wheel that are unpacked: source files and extension modules, none that
    climbs out (`../x.py`, `/etc/x.py`: not part of the package)."""
    out = []
    for info in z.infolist():
        name = info.filename
        if info.is_dir() or not name.endswith(_SOURCE_SUFFIXES + _EXTENSION_SUFFIXES):
            continue
        parts = name.split("/")
        if name.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\\" in name:
            continue
        out.append(info)
    return out


def _check_bounds(path: str, option: str, members: list[zipfile.ZipInfo]) -> None:
    """Refuse a wheel whose members, or their total size, exceed the bounds -- before a byte is
    written. (zipfile never yields more than a member's declared size, so the sum is exact.)"""
    if len(members) > MAX_WHEEL_MEMBERS:
        raise UsageError(f"{option} {path}: {len(members)} files to unpack, over the limit of "
                         f"{MAX_WHEEL_MEMBERS}; not unpacked")
    total = sum(i.file_size for i in members
                if i.filename.endswith(_SOURCE_SUFFIXES) and i.file_size <= _MAX_MEMBER_BYTES)
    if total > MAX_WHEEL_BYTES:
        raise UsageError(f"{option} {path}: {total} bytes of source to unpack, over the limit of "
                         f"{MAX_WHEEL_BYTES} bytes; not unpacked")


def unpack_wheel(path: str, option: str) -> str:
    out = _temp_dir("wheel")
    try:
        with zipfile.ZipFile(path) as z:
            members = _members(z)
            _check_bounds(path, option, members)
            for info in members:
                name = info.filename
                parts = name.split("/")
                target = os.path.join(out, *parts)
                if name.endswith(_EXTENSION_SUFFIXES):
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    open(target, "wb").close()
                    continue
                if info.file_size > _MAX_MEMBER_BYTES:
                    continue
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with z.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise UsageError(f"{option} {path}: cannot be read as a wheel ({e})") from None
    return out


def download(requirement: str, option: str) -> str:
    """`pip download --no-deps REQUIREMENT` into a temporary directory; the wheel's path."""
    out = _temp_dir("download")
    cmd = [sys.executable, "-I", "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
           "--disable-pip-version-check", "-q", "-d", out, requirement]
    try:
        # The working directory is an empty one of our own: never the checked tree.
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, cwd=_temp_dir("pip-cwd"))
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"{option} {requirement}: `pip download` did not finish ({e}); pass a "
                         f"directory or a wheel file instead") from None
    wheels = sorted(f for f in os.listdir(out) if f.endswith(".whl"))
    if proc.returncode != 0 or not wheels:
        said = [line.strip() for line in (proc.stderr or proc.stdout or "").splitlines() if line.strip()]
        last = said[-1] if said else f"exit status {proc.returncode}, no wheel"
        raise UsageError(f"{option} {requirement}: `pip download --no-deps {requirement}` failed "
                         f"({last}); without network, pass a directory or a wheel file instead (wheels only are "
                         f"fetched, `--only-binary :all:`, and nothing is built: where no wheel exists for Python "
                         f"{sys.version_info[0]}.{sys.version_info[1]}, pass a wheel, or a directory such as "
                         f"an sdist unpacked by hand)")
    return os.path.join(out, wheels[0])


def top_level_names(directory: str) -> list[str]:
    """The importable top-level packages and modules of a tree directory."""
    names = set()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for e in entries:
        name = e.name
        if name.endswith(".py"):
            name = name[:-3]
        elif not e.is_dir():
            continue
        if name.isidentifier():
            names.add(name)
    return sorted(names)
