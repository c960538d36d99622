"""A baseline: the findings a tree already has when it adopts the checker, recorded so that only
new ones fail a run, and so that the record can only shrink.

    namespace-lint --write-baseline namespace-lint.baseline.json   # once, on adoption
    namespace-lint --baseline namespace-lint.baseline.json          # in CI and pre-commit
    namespace-lint --baseline B --strict-baseline                   # CI: B must shrink with the code
    namespace-lint --baseline B --write-baseline B                  # prune B to what still occurs

An entry is a finding's identity `(rule, importer, imported)` -- no line number, so an edit
that moves the import (or anything above it) does not break the baseline -- with the `count` of
findings it covers: one more occurrence of a baselined pair (a second stale import of the same
module by the same importer) is a new finding. A run with `--baseline` reports the findings
beyond their entry's count, and the entries that no longer occur (or occur fewer times than
counted); with `--strict-baseline` (or `strict_baseline = true` in `[importlinter]`) those fail
the run, so CI can require the file to shrink when the code does.

File format, version 2 (see docs/baseline.md): a JSON object `{"version": 2, "tool":
"namespace-lint", "entries": [...]}`, entries sorted, one per line, each `{"rule", "importer",
"imported"}` with `"count"` (an integer >= 1; absent means 1) and an optional hand-written
`"reason"` that rewriting keeps. Version 1 files (no counts) are still read: an entry then covers
any number of findings, as it did, and the run says to rewrite the file. A file that cannot be
read as such a baseline is a usage error naming the file, never silently empty.
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from contracts.engine.files import atomic_write
from contracts.errors import UsageError
from contracts.findings import Finding

VERSION = 2
READS = (1, 2)
MAX_BYTES = 256 * 2**20  # far beyond a real baseline (kilobytes): a bound on what is read, not a size
FIELDS = ("rule", "importer", "imported")


def load(path: str) -> dict[tuple[str, str, str], dict]:
    """The entries of the baseline at `path`, by key. Raises UsageError naming the file."""
    version, entries = _header(path, _parse(path, _read_text(path)))
    out: dict[tuple[str, str, str], dict] = {}
    for i, entry in enumerate(entries):
        key = _entry_key(path, i, entry, version)
        if key in out:
            raise UsageError(f"--baseline {path}: entry {i + 1} repeats the entry for {' '.join(key)} "
                             f"(one entry per rule, importer and imported; add up the counts)")
        # A version 1 entry has no count: it covers any number of findings, as it did.
        out[key] = {**entry, "count": entry.get("count", 1) if version >= 2 else None}
    return out


def _read_text(path: str) -> str:
    """The text of the regular file at `path`, of at most `MAX_BYTES`."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):  # /dev/zero, a FIFO: never read
                raise UsageError(f"--baseline {path}: not a regular file")
            if st.st_size > MAX_BYTES:
                raise UsageError(f"--baseline {path}: {st.st_size} bytes, over the {MAX_BYTES // 2**20} MiB "
                                 f"a baseline may have")
            return f.read(MAX_BYTES + 1).decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"--baseline {path}: no such file (create it with --write-baseline {path})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--baseline {path}: cannot be read: {getattr(e, 'strerror', None) or e}") from None


def _parse(path: str, text: str):
    try:
        return json.loads(text)
    except (RecursionError, MemoryError):
        raise UsageError(f"--baseline {path}: not a baseline file: nested too deeply or too large "
                         f"to read") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"--baseline {path}: not a baseline file: invalid JSON at line {e.lineno}, "
                         f"column {e.colno}: {e.msg}") from None


def _header(path: str, data) -> tuple[int, list]:
    """(the version, the entries) of a baseline file's JSON object."""
    if not isinstance(data, dict) or "entries" not in data:
        raise UsageError(f"--baseline {path}: not a baseline file: expected a JSON object with "
                         f"'version' and 'entries'")
    version = data.get("version")
    if version not in READS or isinstance(version, bool):
        raise UsageError(f"--baseline {path}: unsupported baseline version {version!r} "
                         f"(this tool reads versions {' and '.join(map(str, READS))}); write it again "
                         f"with --write-baseline")
    entries = data["entries"]
    if not isinstance(entries, list):
        raise UsageError(f"--baseline {path}: 'entries' must be a list")
    return version, entries


def _entry_key(path: str, i: int, entry, version: int) -> tuple[str, str, str]:
    """The key of entry `i` (from 0), each of its fields checked."""
    if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in FIELDS):
        raise UsageError(f"--baseline {path}: entry {i + 1} must be an object with string fields "
                         f"{', '.join(repr(k) for k in FIELDS)}")
    if "reason" in entry and not isinstance(entry["reason"], str):
        raise UsageError(f"--baseline {path}: entry {i + 1}: 'reason' must be a string")
    statements = entry.get("statements", [])
    if not isinstance(statements, list) or not all(isinstance(t, str) for t in statements):
        raise UsageError(f"--baseline {path}: entry {i + 1}: 'statements' must be a list of strings")
    if version >= 2 and not _is_count(entry.get("count", 1)):
        raise UsageError(f"--baseline {path}: entry {i + 1}: 'count' must be an integer >= 1")
    return tuple(entry[k] for k in FIELDS)


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def version_of(path: str) -> int:
    """The version of the readable baseline at `path` (after `load` succeeded)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)["version"]


@dataclass
class Comparison:
    """Today's findings against a baseline."""

    new: list[Finding]  # not covered: no entry, or beyond the entry's count
    gone: list[tuple[str, str, str]]  # entries with no finding left
    fewer: list[tuple[tuple[str, str, str], int, int]]  # (key, recorded count, findings now)
    version: int = VERSION
    moved: dict | None = None  # a finding's key -> the entry's key it matched as moved (`_moved`)

    @property
    def stale(self) -> bool:
        """Does the file record more than occurs (an entry to delete, or a count to lower)?"""
        return bool(self.gone or self.fewer)


def compare(path: str, findings: Iterable[Finding], statement=None, exists=None) -> Comparison:
    """`findings` against the baseline at `path`. Of the findings of one key, the first `count`
    (in path and line order) are covered and the rest are new. A finding no entry covers by its
    key is then covered by an entry left over that it matches as moved (`_moved`): `statement`
    (Finding -> the text of its import statement, or None) and `exists` (module name -> does the
    tree still have it) tell a rename from a new finding.

    `gone` and `fewer` are only meaningful when `findings` are those of the whole tree (not of
    some PATHs): an entry whose findings were filtered away would look gone."""
    known = load(path)
    by_key: dict[tuple[str, str, str], list[Finding]] = {}
    for f in sorted(findings):
        by_key.setdefault(f.baseline_key, []).append(f)
    left: dict[tuple[str, str, str], float] = {key: e["count"] or float("inf") for key, e in known.items()}
    new = _beyond_entries(by_key, known, left)
    still_new, moved = _match_moved(new, known, left, statement, exists)
    used = set(by_key) | set(moved.values())
    gone = sorted(key for key in known if key not in used)
    fewer = sorted((key, known[key]["count"], known[key]["count"] - int(left[key])) for key in known
                   if key in used and known[key]["count"] is not None and left[key] >= 1)
    version = 1 if any(e["count"] is None for e in known.values()) else VERSION
    return Comparison(still_new, gone, fewer, version, moved)


def _beyond_entries(by_key: dict, known: dict, left: dict) -> list[Finding]:
    """The findings their key's entry does not cover (none, or beyond its count); `left` is
    lowered by those it covers."""
    new: list[Finding] = []
    for key, found in by_key.items():
        if key not in known:
            new.extend(found)
            continue
        covered = found if known[key]["count"] is None else found[:known[key]["count"]]
        left[key] -= len(covered)
        new.extend(found[len(covered):])
    return new


def _match_moved(new: list[Finding], known: dict, left: dict, statement, exists) -> tuple[list[Finding], dict]:
    """(the findings of `new` no entry with room `left` covers as moved, {finding key: entry key}
    for those it does); `left` is lowered for each."""
    by_rule: dict[str, list] = {}
    for key in sorted(known):
        by_rule.setdefault(key[0], []).append(key)
    moved: dict = {}
    still_new = []
    for f in sorted(new):
        old = None
        if f.baseline_key not in known:  # (beyond its own entry's count, it is plainly new)
            old = next((k for k in by_rule.get(f.rule, ()) if left[k] >= 1
                        and _moved(k, known[k], f, statement, exists)), None)
        if old is None:
            still_new.append(f)
        else:
            left[old] -= 1
            moved[f.baseline_key] = old
    return still_new, moved


def _moved(key: tuple[str, str, str], entry: dict, f: Finding, statement, exists) -> bool:
    """Is `f` the finding of entry `key`, moved? The same rule and the same import statement
    (the entry's `statements`), where the importer and the imported module are each either the
    recorded one, or a module the tree no longer has (renamed, or moved into a subpackage), or
    (the imported) a parent or submodule of the recorded one (what a `replacements` line can
    change of `from removed import x`). An entry without statements (written before they were
    recorded) matches only that last change, of a `removed-module` finding of the same importer."""
    rule, importer, imported = key
    if f.rule != rule:
        return False
    related = _related(imported, f.imported)
    statements = entry.get("statements") or ()
    if not statements:
        return rule == "removed-module" and importer == f.importer and related
    text = statement(f) if statement is not None else None
    if text is None or text not in statements:
        return False
    gone = (lambda module: not exists(module)) if exists is not None else (lambda module: False)
    return (importer == f.importer or gone(importer)) and (imported == f.imported or related or gone(imported))


def _related(a: str, b: str) -> bool:
    """`a` and `b` differ, and one is a submodule or name of the other (`pkg.x` and `pkg.x.y`)."""
    a, b = a.partition(":")[0], b.partition(":")[0]
    return a != b and (a.startswith(b + ".") or b.startswith(a + "."))


def apply(path: str, findings: Iterable[Finding]) -> tuple[list[Finding], list[tuple[str, str, str]]]:
    """(the findings the baseline does not cover, the baseline keys that no longer occur), both
    sorted (`compare` also says which entries occur fewer times than counted)."""
    result = compare(path, findings)
    return result.new, result.gone


def _statements(findings: list[Finding], statement) -> dict[tuple[str, str, str], set[str]]:
    """Each key's import statement texts (none without `statement`)."""
    texts: dict[tuple[str, str, str], set[str]] = {}
    for f in findings if statement is not None else ():
        text = statement(f)
        if text is not None:
            texts.setdefault(f.baseline_key, set()).add(text)
    return texts


def write(path: str, findings: Iterable[Finding], prune: str | None = None, statement=None, exists=None) -> int:
    """Record `findings` at `path` (replacing it atomically), one entry per key with its count
    and, given `statement` (see `compare`), the texts of its import statements; returns the
    number of entries. A `reason` of an existing entry that still occurs is kept.

    `prune`: the path of the baseline in use. Then only its entries are written, each with the
    smaller of its count and today's, those that no longer occur dropped and nothing added: the
    file shrinks to what still occurs, and new findings stay new. An entry whose findings moved
    (`compare`) is written under their key."""
    findings = list(findings)
    old = _old_entries(path, prune)
    counts = dict(Counter(f.baseline_key for f in findings))
    texts = _statements(findings, statement)
    if prune:
        moved = compare(prune, findings, statement, exists).moved or {}
        old.update({key: old[was] for key, was in moved.items()})
        counts = {key: min(n, old[key]["count"] or n) for key, n in counts.items() if key in old}
    entries = [_entry(key, counts[key], texts.get(key), old.get(key, {})) for key in sorted(counts)]
    try:
        atomic_write(path, _file_text(entries).encode("utf-8"))
    except OSError as e:
        raise UsageError(f"--write-baseline {path}: cannot be written: {e.strerror or e}") from None
    return len(entries)


def _old_entries(path: str, prune: str | None) -> dict[tuple[str, str, str], dict]:
    """The entries being replaced: those of `prune` (which must be readable), else of `path`
    when it is a baseline (anything else there is simply replaced)."""
    source = prune or path
    if not os.path.exists(source):
        return {}
    try:
        return load(source)
    except UsageError:
        if prune:
            raise
        return {}


def _entry(key: tuple[str, str, str], count: int, texts: set[str] | None, old: dict) -> dict:
    """One entry as written: the key's fields, the count (left out when 1: a file of single
    occurrences reads as before), the statements, an existing entry's `reason`."""
    entry: dict = dict(zip(FIELDS, key))
    entry["count"] = count
    if texts:
        entry["statements"] = sorted(texts)
    if "reason" in old:
        entry["reason"] = old["reason"]
    if entry["count"] == 1:
        del entry["count"]
    return entry


def _file_text(entries: list[dict]) -> str:
    """The file: one entry per line, so that a fixed finding is one deleted line (or a lowered
    count) in review."""
    lines = ",\n".join("    " + json.dumps(entry, ensure_ascii=False) for entry in entries)
    return (f'{{\n  "version": {VERSION},\n  "tool": "namespace-lint",\n  "entries": [\n'
            + (lines + "\n" if entries else "") + "  ]\n}\n")
