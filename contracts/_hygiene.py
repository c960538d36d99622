"""The working directory never supplies a module the tool needs.

`python -m contracts` and `lint-imports` (import-linter inserts it before it imports
`contract_types`) run with the working directory -- the checked tree -- first on `sys.path`. A file
there named like a module the tool imports later (`hmac.py`, `tempfile.py`, `libcst/`) would be
imported in its place: code from the tree, run by the linter. Imported first by the package, this
puts a finder before Python's path finder that looks up every standard-library module and every
dependency of the tool on `sys.path` without the working directory (`''`, `.`, or the directory
itself). Nothing else changes: other names (the checked package, which `lint-imports` finds on the
working directory) are found as before, and nothing is imported eagerly (a warm run stays cheap).
"""

# No `from __future__` and no `importlib` here: both would be imported (from the working
# directory, were it first on sys.path) before the finder is in place.
import os
import sys
from _frozen_importlib_external import PathFinder

# The tool's dependencies and theirs (top-level names), besides the standard library.
DEPENDENCIES = frozenset({"grimp", "libcst", "importlinter", "tomli", "rich", "typing_extensions", "yaml",
                          "click", "markdown_it", "mdurl", "pygments", "joblib", "_rustgrimp"})
_PROTECTED = frozenset(sys.stdlib_module_names) | DEPENDENCIES


_REAL: dict[str, str] = {}


def _real(path: str) -> str:
    if path not in _REAL:
        try:
            _REAL[path] = os.path.realpath(path)
        except (OSError, ValueError):
            _REAL[path] = path
    return _REAL[path]


def _split_path() -> tuple[list[str], list[str]]:
    """(sys.path without the working directory, the entries that are it)."""
    try:
        cwd = _real(os.getcwd())
    except OSError:  # a removed working directory: only '' and '.' can mean it
        cwd = None
    keep, dropped = [], []
    for entry in sys.path:
        is_cwd = entry in ("", ".") or (cwd is not None and isinstance(entry, str) and _real(entry) == cwd)
        (dropped if is_cwd else keep).append(entry)
    return keep, dropped


class _NotFromTheWorkingDirectory:
    """A meta-path finder: protected top-level names are found on `sys.path` less the working
    directory; for anything else it answers None and the usual finders go on."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if path is not None or name not in _PROTECTED:
            return None
        keep, dropped = _split_path()
        spec = PathFinder.find_spec(name, keep, target)
        if spec is None and dropped and PathFinder.find_spec(name, dropped, target) is not None:
            # not installed, but the working directory has a file of that name: never that one
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return spec  # None: the finders after this one (an editable install's) go on

    @classmethod
    def invalidate_caches(cls) -> None:
        pass


def install() -> None:
    if any(f is _NotFromTheWorkingDirectory for f in sys.meta_path):
        return
    at = next((i for i, f in enumerate(sys.meta_path) if f is PathFinder), len(sys.meta_path))
    sys.meta_path.insert(at, _NotFromTheWorkingDirectory)  # after the builtin and frozen importers
