"""grimp's import scanner, behind one adapter: the only module of this package that imports grimp.

grimp's public API builds a whole graph (`grimp.build_graph`), which skips directories without
`__init__.py` and drops imports of modules that do not exist; the rules need both. So the
engine asks grimp for the imports of given files instead, through the function grimp's own
graph build calls for that (`grimp.application.scanning.scan_imports`), with grimp's own
classes (`ModuleFile`, `FoundPackage`, `Module`) and its real file system.

That function is not part of grimp's public API, so its use is gated: a grimp outside the
tested range (`TESTED`, the range `setup.cfg` declares), one without that function, or one
whose function no longer takes these arguments raises `Unusable`, and the caller reads the
files with `ast` instead (the same edges, more slowly) and says why (`graph.native_fallback`).
"""

from __future__ import annotations

import grimp
from grimp.application.ports.modulefinder import FoundPackage, ModuleFile
from grimp.domain.valueobjects import Module
from grimp.exceptions import SourceSyntaxError

try:
    from grimp.application.scanning import scan_imports
except ImportError:  # another grimp's internals: `Unusable` at the first scan
    scan_imports = None

# The grimp releases this adapter is tested with, [lowest, above the highest): as `setup.cfg`'s
# `install_requires` says.
TESTED = ((3, 13), (4,))
TESTED_TEXT = ">=3.13,<4"


class Unusable(Exception):
    """grimp's scanner cannot be used here; the message says why."""


class FileSyntaxError(Exception):
    """grimp's parser rejects a file: `filename`, `lineno`, `text` (as Python's SyntaxError)."""

    def __init__(self, filename: str, lineno, text) -> None:
        super().__init__(filename, lineno, text)
        self.filename, self.lineno, self.text = filename, lineno, text


def _release(version: str) -> tuple[int, ...]:
    """The release numbers at the start of `version` ("3.20rc1" -> (3, 20))."""
    parts = []
    for piece in version.split("."):
        digits = piece[:len(piece) - len(piece.lstrip("0123456789"))]
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) < len(piece):  # a pre-release or local part follows
            break
    return tuple(parts)


def version_problem() -> str | None:
    """Why this grimp is not one the adapter is tested with, or None."""
    version = getattr(grimp, "__version__", "unknown")
    lowest, above = TESTED
    if not lowest <= _release(version) < above:
        return f"grimp {version} is outside the tested range {TESTED_TEXT}"
    if scan_imports is None:
        return f"grimp {version} has no `grimp.application.scanning.scan_imports`"
    return None


def module_file(name: str) -> ModuleFile:
    """grimp's description of the module `name` (no mtime: grimp's cache is not used)."""
    return ModuleFile(module=Module(name), mtime=0)


def packages(roots: dict[str, str], files: dict[str, ModuleFile], is_under) -> set[FoundPackage]:
    """grimp's description of each root package (`roots`: name -> directory) with the module
    files of `files` under it (`is_under(module, root)`)."""
    return {
        FoundPackage(name=root, directory=directory,
                     module_files=frozenset(mf for m, mf in files.items() if is_under(m, root)))
        for root, directory in roots.items()
    }


def scan(files: tuple[ModuleFile, ...], found: set[FoundPackage]) -> dict[str, list[tuple]]:
    """module -> its imports of the modules of `found` as sorted (imported, line, contents).

    Raises `FileSyntaxError` where grimp's parser rejects one of `files` (the others are then
    not answered), and `Unusable` where this grimp cannot be called so (a missing or renamed
    function or argument)."""
    problem = version_problem()
    if problem is not None:
        raise Unusable(problem)
    try:
        scanned = scan_imports(files, found_packages=found, include_external_packages=False,
                               exclude_type_checking_imports=False)
    except SourceSyntaxError as e:
        raise FileSyntaxError(e.filename, e.lineno, e.text) from e
    except (TypeError, AttributeError, ImportError) as e:
        raise Unusable(f"grimp {grimp.__version__}'s scanner cannot be called as this tool calls it "
                       f"({type(e).__name__}: {e})") from e
    return {mf.module.name: sorted((di.imported.name, di.line_number, di.line_contents) for di in imports)
            for mf, imports in scanned.items()}
