"""Renderers: one module per output format, each `render(report) -> str`. They only format:
what is a finding, what is fixable, which paths are shown and which source line a finding sits
on are decided before (by the faces) and handed over in a `Report`.

Formats (`--output-format`): `concise` (alias `text`, the default), `full`, `json`,
`json-lines`, `github`, `sarif`, `gitlab`, `junit`. `statistics` renders `--statistics`.
"""

from __future__ import annotations

import importlib

from contracts._record import Record
from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from typing import Callable


class RuleDoc(Record, frozen=True):
    """A rule's documentation, read from its module's docstring (for SARIF's `rules`)."""

    id: str
    summary: str  # the docstring's first line, without the "`id`: " prefix
    what: str  # the "What it does" section
    text: str  # the whole documentation (markdown)
    fix: str  # always / sometimes / never

    def __init__(self, id: str, summary: str, what: str, text: str, fix: str) -> None:
        self.__dict__.update(id=id, summary=summary, what=what, text=text, fix=fix)


class Edit(Record, frozen=True):
    """What `--fix` would write for a finding: the lines `start`..`end` (1-based, `end`
    exclusive) become `text`."""

    start: int
    end: int
    text: str

    def __init__(self, start: int, end: int, text: str) -> None:
        self.__dict__.update(start=start, end=end, text=text)


def _no_line(finding: Finding) -> str | None:
    return None


class Report(Record):
    """Everything a renderer may show. `findings` carry their paths as shown
    (`findings.displayed`: relative to the working directory, absolute outside it)."""

    findings: list[Finding]
    files_scanned: int
    files_total: int
    fixable: frozenset  # the findings `--fix` offers to repair
    notes: list[str]  # extra lines for people (baseline entries gone)
    root: str  # the repository root (the configuration's directory): SARIF / GitLab paths
    rules: dict[str, RuleDoc]
    version: str
    colour: bool
    quiet: bool  # findings only: no summary, no notes, no hint
    hint: bool  # the "N fixable with `--fix`" line (not after --fix ran)
    source_line: Callable[[Finding], str | None]
    edits: dict  # Finding -> [Edit]: SARIF's `fixes`
    stale: int  # baseline entries that no longer occur and fail the run (--strict-baseline)

    def __init__(self, findings: list[Finding], files_scanned: int = 0, files_total: int = 0,
                 fixable: frozenset = frozenset(), notes: list[str] | None = None, root: str = ".",
                 rules: dict[str, RuleDoc] | None = None, version: str = "", colour: bool = False,
                 quiet: bool = False, hint: bool = True, source_line: Callable[[Finding], str | None] = _no_line,
                 edits: dict | None = None, stale: int = 0) -> None:
        self.findings, self.files_scanned, self.files_total, self.fixable = findings, files_scanned, files_total, fixable
        self.notes = [] if notes is None else notes
        self.root = root
        self.rules = {} if rules is None else rules
        self.version, self.colour, self.quiet, self.hint, self.source_line = version, colour, quiet, hint, source_line
        self.edits = {} if edits is None else edits
        self.stale = stale


# Format -> its renderer module, imported when asked for (a run renders one format).
_MODULES = {"concise": "concise", "text": "concise", "full": "full", "json": "json_report",
            "json-lines": "json_lines", "github": "github", "sarif": "sarif", "gitlab": "gitlab", "junit": "junit"}


FORMATS = ("concise", "full", "json", "json-lines", "github", "sarif", "gitlab", "junit", "text")
MACHINE_FORMATS = frozenset({"json", "json-lines", "github", "sarif", "gitlab", "junit"})


def render(fmt: str, report: Report) -> str:
    """The text of `report` in format `fmt` (one of FORMATS); ends without a newline."""
    return importlib.import_module(f"contracts.renderers.{_MODULES[fmt]}").render(report)
