"""`derive-map --write-config FILE`: merge the derived lines into the `replacements` option of the
`removed_modules` contract(s) of an existing INI config (`.importlinter`, `setup.cfg`).

`>> .importlinter` appends a block that belongs to whatever section comes last. Here each line
goes to the contract whose `removed_modules` covers its old module; a line whose old module (or
`old.module:name`) that option already has is left as it is (the file wins: it may be a hand
correction), and a line no contract covers is an error that says which prefix to add. The file is
edited as text: comments, order and every other line stay byte for byte; it is replaced
atomically.
"""

from __future__ import annotations

import configparser
import re

from contracts.engine.files import atomic_write
from contracts.engine.resolve import is_under
from contracts.errors import UsageError

_SECTION_RE = re.compile(r"^\[(?P<name>[^\]]+)\]\s*$")
_OPTION_RE = re.compile(r"^(?P<key>[A-Za-z_][\w-]*)\s*[=:]")
_CONTRACT = "importlinter:contract:"


def _contracts(text: str, path: str) -> dict[str, tuple[str, ...]]:
    """Section name -> the removed prefixes of each `removed_modules` contract of the file."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=path)
    except configparser.Error as e:
        raise UsageError(f"--write-config {path}: cannot be read as an INI file ({str(e).splitlines()[0]})") from None
    out = {}
    for section in parser.sections():
        if section.startswith(_CONTRACT) and parser.get(section, "type", fallback="").strip() == "removed_modules":
            out[section] = tuple(line.strip() for line in parser.get(section, "removed_modules", fallback="").splitlines()
                                 if line.strip())
    return out


def _owner(old: str, contracts: dict[str, tuple[str, ...]]) -> str | None:
    module = old.partition(":")[0]
    return next((s for s, prefixes in contracts.items() if any(is_under(module, p) for p in prefixes)), None)


def merge(path: str, pairs: list[tuple[str, str]]) -> tuple[int, int]:
    """Merge `old -> new` lines into `path`; (lines added, lines the file already had)."""
    if path.endswith(".toml"):
        raise UsageError(f"--write-config {path}: only INI configs (.importlinter, setup.cfg) are edited; "
                         f"paste the printed lines into its `replacements` array instead")
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            text = fh.read()
    except OSError as e:
        raise UsageError(f"--write-config {path}: cannot be read ({e.strerror or e})") from None
    contracts = _contracts(text, path)
    by_section: dict[str, list[tuple[str, str]]] = {}
    for old, new in pairs:
        section = _owner(old, contracts)
        if section is None:
            raise UsageError(f"--write-config {path}: no removed_modules contract in it covers `{old}`; "
                             f"add its prefix to a contract's `removed_modules` first")
        by_section.setdefault(section, []).append((old, new))
    lines = text.splitlines(keepends=True)
    newline = "\r\n" if text.count("\r\n") * 2 > text.count("\n") else "\n"
    added = kept = 0
    for section, items in by_section.items():
        lines, a, k = _merge_section(lines, section, items, newline)
        added, kept = added + a, kept + k
    if added:
        atomic_write(path, "".join(lines).encode("utf-8"))
    return added, kept


def _merge_section(lines: list[str], section: str, items, newline: str) -> tuple[list[str], int, int]:
    start = next(i for i, line in enumerate(lines) if (m := _SECTION_RE.match(line)) and m["name"] == section)
    end = next((i for i in range(start + 1, len(lines)) if _SECTION_RE.match(lines[i])), len(lines))
    option = next((i for i in range(start + 1, end) if (m := _OPTION_RE.match(lines[i])) and m["key"] == "replacements"),
                  None)
    if option is None:
        insert, have = _new_option(lines, start, end, newline), set()
    else:
        insert, have = _existing_lines(lines, option)
    fresh = [(old, new) for old, new in items if old not in have]
    lines[insert:insert] = [f"    {old} -> {new}{newline}" for old, new in fresh]
    return lines, len(fresh), len(items) - len(fresh)


def _new_option(lines: list[str], start: int, end: int, newline: str) -> int:
    """Add `replacements =` at the end of the section (before its trailing blank lines); the
    index its lines go to."""
    last = end
    while last > start + 1 and not lines[last - 1].strip():
        last -= 1
    if not lines[last - 1].endswith(("\n", "\r")):
        lines[last - 1] += newline
    lines[last:last] = [f"replacements ={newline}"]
    return last + 1


def _existing_lines(lines: list[str], option: int) -> tuple[int, set[str]]:
    """(the index after the option's last line, the old modules it already has)."""
    have: set[str] = set()
    head = re.split(r"[=:]", lines[option], maxsplit=1)[1]
    if "->" in head:
        have.add(head.split("->")[0].strip())
    insert = option + 1
    while insert < len(lines) and lines[insert][:1] in (" ", "\t") and lines[insert].strip():
        have.add(lines[insert].split("->")[0].strip())
        insert += 1
    while insert > option + 1 and lines[insert - 1].lstrip().startswith("#"):
        insert -= 1  # (a trailing comment stays below the lines)
    return insert, have
