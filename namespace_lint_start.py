"""The `namespace-lint` command's first code: is the installed `contracts` package this
distribution's, and only its? Then on to `contracts.cli.entry`.

This distribution's top-level package is `contracts`, a name another distribution on the
registry (PyContracts) installs too. pip installs both into the same directory without a word:
the files merge, the last `__init__.py` written wins, and uninstalling either deletes files of
the other. The check lives outside `contracts` because importing anything in it runs that
`__init__.py` first, whichever distribution wrote it. What it costs a run: one directory walk of
`contracts/` and one read of this distribution's RECORD (a wheel install; an editable install
has no files of its own to merge with).

    ours replaced (the other's `__init__.py` won)    one line on stderr, exit 2
    importing `contracts` fails                      one line on stderr, exit 2
    ours intact, the other's files beside them       one warning line, then the run
"""

import os
import sys

DISTRIBUTION = "sglang_namespace_guard"  # as the .dist-info directory spells it
MARKER = b"_hygiene.install()"  # a line only this distribution's contracts/__init__.py has
EXIT_USAGE = 2


def entry() -> None:
    """The console script."""
    where = _contracts_dir()
    if where is not None:
        ours = _own_init(where)
        others = _foreign_files(where)
        if not ours or others:
            line = _explain(where, others, ours)
            if not ours:
                _fail(line)
            print(f"namespace-lint: warning: {line}", file=sys.stderr)
    try:
        from contracts.cli import entry as run
    except ImportError as e:  # a `contracts` not ours, or half of one: say so, no traceback
        _fail(f"`contracts` cannot be imported ({e}); "
              + (_explain(where, _foreign_files(where), False) if where else "reinstall sglang-namespace-guard"))
    run()


def _fail(line: str) -> None:
    print(f"namespace-lint: error: {line}", file=sys.stderr)
    sys.exit(EXIT_USAGE)


def _contracts_dir() -> str | None:
    """The directory `import contracts` would load, found without loading it."""
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("contracts")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return locations[0] if len(locations) == 1 else None


def _own_init(where: str) -> bool:
    try:
        with open(os.path.join(where, "__init__.py"), "rb") as f:
            return MARKER in f.read()
    except OSError:
        return False


def _record_paths(site: str, dist_info: str) -> set[str]:
    """The `contracts/...` files the RECORD of `dist_info` lists (forward slashes)."""
    try:
        with open(os.path.join(site, dist_info, "RECORD"), encoding="utf-8") as f:
            return {line.rsplit(",", 2)[0] for line in f if line.startswith("contracts/")}
    except OSError:
        return set()


def _dist_infos(site: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(site) if n.endswith(".dist-info"))
    except OSError:
        return []


def _foreign_files(where: str) -> list[str]:
    """The files under `where` this distribution's RECORD does not list (empty when it lists
    none there: an editable install, or none at all)."""
    site = os.path.dirname(where)
    mine = [n for n in _dist_infos(site) if n.split("-", 1)[0].lower() == DISTRIBUTION]
    ours = set().union(*(_record_paths(site, n) for n in mine)) if mine else set()
    if not ours:
        return []
    present = []
    for directory, dirnames, filenames in os.walk(where):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = os.path.relpath(directory, site).replace(os.sep, "/")
        present += [f"{rel}/{name}" for name in filenames if not name.endswith((".pyc", ".pyo"))]
    return sorted(p for p in present if p not in ours)


def _explain(where: str, others: list[str], ours: bool) -> str:
    """One line: whose files share the directory, and what to do."""
    site = os.path.dirname(where)
    owners = []
    for name in _dist_infos(site):
        if name.split("-", 1)[0].lower() != DISTRIBUTION and _record_paths(site, name):
            dist, _, version = name[:-len(".dist-info")].partition("-")
            owners.append(f"{dist} {version}".strip())
    who = ", ".join(owners) or "another distribution"
    state = "its files are mixed with this distribution's" if ours else "its files replaced this distribution's"
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    return (f"the `contracts` package in {where} is shared with {who}: {state}"
            + (f" ({shown})" if shown else "")
            + "; install namespace-lint in an environment of its own (`pipx install sglang-namespace-guard`, "
              "or a virtual environment), or uninstall both and reinstall sglang-namespace-guard")
