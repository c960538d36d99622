"""A baseline: the findings a tree already has when it adopts the checker, recorded so that only
new ones fail a run, and so that the record can only shrink.

    namespace-lint --write-baseline namespace-lint.baseline.json   # once, on adoption
    namespace-lint --baseline namespace-lint.baseline.json          # in CI and pre-commit

An entry is a finding's identity `(rule, importer, imported)` -- no line number, so an edit
that moves the import (or anything above it) does not break the baseline; a second import of
the same module by the same importer is covered by the same entry. A run with `--baseline`
reports the findings whose identity is not in the file, and the entries that no longer occur
(delete them: the baseline can only shrink).

The file is JSON, sorted, one entry per identity, with a `version` field; an entry may carry a
`reason` (written by hand), which `--write-baseline` keeps for entries that still occur. A file
that cannot be read as such a baseline is a usage error naming the file, never silently empty.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable

from contracts.errors import UsageError
from contracts.findings import Finding

VERSION = 1
FIELDS = ("rule", "importer", "imported")


def load(path: str) -> dict[tuple[str, str, str], dict]:
    """The entries of the baseline at `path`, by key. Raises UsageError naming the file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise UsageError(f"--baseline {path}: no such file (create it with --write-baseline {path})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--baseline {path}: cannot be read: {getattr(e, 'strerror', None) or e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"--baseline {path}: not a baseline file: invalid JSON at line {e.lineno}, "
                         f"column {e.colno}: {e.msg}") from None
    if not isinstance(data, dict) or "entries" not in data:
        raise UsageError(f"--baseline {path}: not a baseline file: expected a JSON object with "
                         f"'version' and 'entries'")
    if data.get("version") != VERSION:
        raise UsageError(f"--baseline {path}: unsupported baseline version {data.get('version')!r} "
                         f"(this tool reads version {VERSION}); write it again with --write-baseline")
    entries = data["entries"]
    if not isinstance(entries, list):
        raise UsageError(f"--baseline {path}: 'entries' must be a list")
    out: dict[tuple[str, str, str], dict] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in FIELDS):
            raise UsageError(f"--baseline {path}: entry {i + 1} must be an object with string fields "
                             f"{', '.join(repr(k) for k in FIELDS)}")
        if "reason" in entry and not isinstance(entry["reason"], str):
            raise UsageError(f"--baseline {path}: entry {i + 1}: 'reason' must be a string")
        out[tuple(entry[k] for k in FIELDS)] = entry
    return out


def apply(path: str, findings: Iterable[Finding]) -> tuple[list[Finding], list[tuple[str, str, str]]]:
    """(the findings not in the baseline, the baseline keys that no longer occur), both sorted.

    The second list is only meaningful when `findings` are those of the whole tree (not of some
    PATHs): an entry whose findings were filtered away would look gone."""
    known = load(path)
    findings = list(findings)
    seen = {f.baseline_key for f in findings}
    new = sorted(f for f in findings if f.baseline_key not in known)
    gone = sorted(key for key in known if key not in seen)
    return new, gone


def write(path: str, findings: Iterable[Finding]) -> int:
    """Record `findings` at `path` (replacing it atomically); returns the number of entries.

    A `reason` of an existing entry that still occurs is kept."""
    reasons: dict[tuple[str, str, str], str] = {}
    if os.path.exists(path):
        try:
            reasons = {key: entry["reason"] for key, entry in load(path).items() if "reason" in entry}
        except UsageError:
            reasons = {}  # not a baseline we can read: it is being replaced
    entries = []
    for key in sorted({f.baseline_key for f in findings}):
        entry = dict(zip(FIELDS, key))
        if key in reasons:
            entry["reason"] = reasons[key]
        entries.append(entry)
    # One entry per line: a fixed finding is one deleted line in review.
    lines = ",\n".join("    " + json.dumps(entry, ensure_ascii=False) for entry in entries)
    text = (f'{{\n  "version": {VERSION},\n  "tool": "namespace-lint",\n  "entries": [\n'
            + (lines + "\n" if entries else "") + "  ]\n}\n")
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise UsageError(f"--write-baseline {path}: cannot be written: {e.strerror or e}") from None
    return len(entries)
