"""Where the configuration is, and its raw options, read the way `lint-imports` reads them.

One file serves both faces, so it is found among the files import-linter reads:
`.importlinter`, `setup.cfg` (an `[importlinter]` section) and `pyproject.toml` (a
`[tool.importlinter]` table, contracts as the `[[tool.importlinter.contracts]]` array import-linter
writes), in that order in a directory, searching upward from the working directory to the
repository root (the first directory with a `.git`; outside one, the filesystem root), as ruff
does. `--config FILE` wins.

Whatever the two faces would read differently is a one-line warning naming the file and the
option (`divergences`): import-linter reads INI values with `%` interpolation, takes a one-line
`root_packages` or `contract_types` as a string (and then its characters), splits `contract_types`
lines on `": "` exactly, and, given no `--config`, reads only the working directory, `setup.cfg`
before `.importlinter`.
"""

from __future__ import annotations

import configparser
import os
import re

from contracts._record import Record
from contracts.errors import ConfigError

SECTION = "importlinter"
CONTRACT_PREFIX = "importlinter:contract:"
CANDIDATES = (".importlinter", "setup.cfg", "pyproject.toml")
# The session options import-linter reads as a list (a one-line INI value stays a string there).
LIST_OPTIONS = ("root_packages", "contract_types")


class RawConfig(Record):
    """The options of one file: the session's, and each contract's as (section label, id, options);
    values are strings or lists of strings, as import-linter passes them to contracts."""

    path: str  # absolute
    display: str  # as messages name it
    session: dict
    contracts: list[tuple[str, str, dict]]
    warnings: list[str]
    is_toml: bool

    def __init__(self, path: str, display: str, session: dict, contracts: list[tuple[str, str, dict]] | None = None,
                 warnings: list[str] | None = None, is_toml: bool = False) -> None:
        self.path, self.display, self.session = path, display, session
        self.contracts = [] if contracts is None else contracts
        self.warnings = [] if warnings is None else warnings
        self.is_toml = is_toml


def shown(text: str) -> str:
    """`text` for a one-line message: control characters (a vertical tab, a NUL, a newline read
    from the file) are written as escapes."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def display_name(path: str) -> str:
    """A config path as messages print it: relative to the working directory, absolute outside."""
    full = os.path.abspath(path)
    try:
        rel = os.path.relpath(full)
    except ValueError:
        return full
    return full if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def has_section(path: str) -> bool:
    """Does `path` configure import-linter (the file exists and has its section / table)?"""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    if path.endswith(".toml"):
        # Cheap and enough to decide where to look; `read` parses it properly.
        return re.search(rb"(?m)^\s*\[\[?\s*tool\s*\.\s*importlinter\b", data) is not None
    if os.path.basename(path) == "setup.cfg":
        return re.search(rb"(?m)^\s*\[\s*importlinter\s*\]", data) is not None
    return True  # `.importlinter`: its own file (a missing section is reported when it is read)


def repository_root(start: str) -> str | None:
    """The first directory at or above `start` holding `.git` (git itself is never run: it
    would read the tree's own hooks and config), or None."""
    directory = start
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def find(start: str | None = None) -> str | None:
    """The configuration for a run in `start` (default: the working directory): the first of
    `CANDIDATES` with an import-linter section, in `start` or a directory above it up to the
    repository root (outside a repository, up to the filesystem root, as ruff does). None when
    there is none."""
    start = os.path.abspath(start or os.getcwd())
    top = repository_root(start)
    directory = start
    while True:
        for name in CANDIDATES:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and has_section(path):
                return path
        parent = os.path.dirname(directory)
        if directory == top or parent == directory:
            return None
        directory = parent


def importlinter_choice(directory: str) -> str | None:
    """The file `lint-imports` (no `--config`) reads when run in `directory`."""
    for name in ("setup.cfg", ".importlinter", "pyproject.toml"):
        path = os.path.join(directory, name)
        if os.path.isfile(path) and has_section(path):
            return path
    return None


def read(path: str) -> RawConfig:
    display = shown(display_name(path))
    if not os.path.isfile(path):
        raise ConfigError("no such file (pass --config FILE, or run in or below the directory that "
                          "holds .importlinter, setup.cfg or pyproject.toml).", file=display)
    raw = _read_toml(path, display) if path.endswith(".toml") else _read_ini(path, display)
    raw.warnings[:0] = _location_warnings(raw)
    return raw


def _clean(section: configparser.SectionProxy) -> dict:
    # The same cleaning import-linter applies: a value with newlines becomes a list of lines.
    return {k: (v.strip().split("\n") if "\n" in v else v) for k, v in section.items()}


def _read_ini(path: str, display: str) -> RawConfig:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_file(f)
    except (configparser.Error, UnicodeDecodeError, OSError) as e:
        raise ConfigError(shown(f"cannot be read as INI: {_first_line(e)}"), file=display) from None
    if SECTION not in parser:
        raise ConfigError(f"has no [{SECTION}] section.", file=display)
    raw = RawConfig(os.path.abspath(path), display, _clean(parser[SECTION]))
    for section in parser.sections():
        if section.startswith(CONTRACT_PREFIX):
            raw.contracts.append((section, section[len(CONTRACT_PREFIX):], _clean(parser[section])))
    raw.warnings += _ini_divergences(parser, raw.session, display)
    return raw


def _first_line(e: Exception) -> str:
    """The first line of a parser's error message (its name when it has none)."""
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def _ini_divergences(parser: configparser.ConfigParser, session: dict, display: str) -> list[str]:
    """What lint-imports reads differently in this INI file: a `%` (interpolation there), a
    one-line list option (a string there)."""
    warnings = []
    for section in [SECTION] + [s for s in parser.sections() if s.startswith(CONTRACT_PREFIX)]:
        for option, value in parser[section].items():
            if "%" in value:
                warnings.append(f"{display}, section [{shown(section)}], option '{shown(option)}': the value has "
                                f"a `%`, which lint-imports reads as interpolation (`%%` for a literal `%`), this "
                                f"tool literally")
    for option in LIST_OPTIONS:
        value = session.get(option)
        if isinstance(value, str) and value.strip():
            warnings.append(f"{display}, section [{SECTION}], option '{option}': a one-line value; lint-imports "
                            f"reads it as a string, not a list: put each item on its own line below `{option} =`")
    return warnings


def _toml_loader(display: str):
    """`tomllib`, or `tomli` before Python 3.11."""
    try:
        import tomllib  # only for a pyproject.toml: every other start-up would pay for it
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise ConfigError("reading pyproject.toml needs Python 3.11+ or the `tomli` package "
                              "(pip install tomli), or pass --config .importlinter", file=display) from None
    return tomllib


def _read_toml(path: str, display: str) -> RawConfig:
    tomllib = _toml_loader(display)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as e:
        raise ConfigError(shown(f"cannot be read as TOML: {_first_line(e)}"), file=display) from None
    tool = data.get("tool")
    session = tool.get("importlinter") if isinstance(tool, dict) else None
    if not isinstance(session, dict) or not session:
        raise ConfigError("has no [tool.importlinter] table.", file=display)
    session = dict(session)
    contracts = session.pop("contracts", [])
    section = "tool.importlinter"
    if not isinstance(contracts, list) or not all(isinstance(c, dict) for c in contracts):
        raise ConfigError("expected an array of tables `[[tool.importlinter.contracts]]`.",
                          file=display, section=section, option="contracts")
    raw = RawConfig(os.path.abspath(path), display, _strings(session), is_toml=True)
    raw.contracts += [_toml_contract(i, contract) for i, contract in enumerate(contracts)]
    for option in LIST_OPTIONS:
        if isinstance(raw.session.get(option), str):
            raw.warnings.append(f"{display}, section [{section}], option '{option}': a string; lint-imports "
                                f"needs a list (`{option} = [\"...\"]`)")
    return raw


def _toml_contract(i: int, contract: dict) -> tuple[str, str, dict]:
    """(section label, id, options) of the `i`th `[[tool.importlinter.contracts]]` table."""
    options = _strings(contract)
    label = f"tool.importlinter.contracts[{i}]"
    cid = options.get("id")
    if not isinstance(cid, str) or not cid.strip():
        # import-linter needs no id; this tool names findings and `--contract` by it.
        name = options.get("name")
        cid = name if isinstance(name, str) and name.strip() else str(i)
    return label, cid.strip(), options


def _strings(table: dict) -> dict:
    """Values as the INI reader gives them: strings, or lists of strings (import-linter turns
    TOML booleans into strings too)."""
    out = {}
    for key, value in table.items():
        if isinstance(value, bool):
            value = str(value)
        elif isinstance(value, (int, float)):
            value = str(value)
        elif isinstance(value, list):
            value = [str(v) if isinstance(v, (str, int, float, bool)) else v for v in value]
        out[str(key)] = value
    return out


def _location_warnings(raw: RawConfig) -> list[str]:
    """Another file that lint-imports, run in the same directory, would read instead."""
    theirs = importlinter_choice(os.path.dirname(raw.path))
    if theirs is None or os.path.samefile(theirs, raw.path):
        return []
    return [f"{raw.display}: {display_name(theirs)} also configures import-linter, and lint-imports "
            f"(without --config) reads that one; keep one of the two"]


def contract_type_warnings(raw: RawConfig, lines: list[str]) -> list[str]:
    """`contract_types` lines lint-imports cannot split (it needs exactly `name: module.Class`)."""
    section = "tool.importlinter" if raw.is_toml else SECTION
    return [f"{raw.display}, section [{section}], option 'contract_types': line '{shown(line)}' works here "
            f"but not in lint-imports, which needs exactly `name: module.Class` (one space after the colon)"
            for line in lines if len(line.split(": ")) != 2]
