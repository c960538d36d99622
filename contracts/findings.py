"""Findings: plain data every face renders and every rule returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True, order=True)
class Finding:
    """One thing wrong, at one place.

    `path` is relative to the source directory with `/` separators; `line` is the 1-based first
    line of the offending statement (or string literal); `col` is 1-based. `imported` is what was
    referenced, `replacement` what to write instead (None when there is nothing to suggest).
    """

    path: str
    line: int
    col: int
    rule: str
    importer: str
    imported: str
    message: str
    replacement: str | None = None

    def to_json(self) -> dict:
        data = asdict(self)
        return {key: data[key] for key in JSON_FIELDS}

    @property
    def baseline_key(self) -> tuple[str, str, str]:
        """Identity that survives unrelated edits (no line numbers)."""
        return (self.rule, self.importer, self.imported)


JSON_FIELDS = ("rule", "path", "line", "col", "importer", "imported", "message", "replacement")
