"""Renderers: one module per output format, each `render(report) -> str`. They only format:
what is a finding, what is fixable, which paths are shown and which source line a finding sits
on are decided before (by the faces) and handed over in a `Report`.

Formats (`--output-format`): `concise` (alias `text`, the default), `full`, `json`,
`json-lines`, `github`, `sarif`, `gitlab`, `junit`. `statistics` renders `--statistics`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from typing import Callable


@dataclass(frozen=True)
class RuleDoc:
    """A rule's documentation, read from its module's docstring (for SARIF's `rules`)."""

    id: str
    summary: str  # the docstring's first line, without the "`id`: " prefix
    what: str  # the "What it does" section
    text: str  # the whole documentation (markdown)
    fix: str  # always / sometimes / never


@dataclass(frozen=True)
class Edit:
    """What `--fix` would write for a finding: the lines `start`..`end` (1-based, `end`
    exclusive) become `text`."""

    start: int
    end: int
    text: str


@dataclass
class Report:
    """Everything a renderer may show. `findings` carry their paths as shown
    (`findings.displayed`: relative to the working directory, absolute outside it)."""

    findings: list[Finding]
    files_scanned: int = 0
    files_total: int = 0
    fixable: frozenset = frozenset()  # the findings `--fix` offers to repair
    notes: list[str] = field(default_factory=list)  # extra lines for people (baseline entries gone)
    root: str = "."  # the repository root (the configuration's directory): SARIF / GitLab paths
    rules: dict[str, RuleDoc] = field(default_factory=dict)
    version: str = ""
    colour: bool = False
    quiet: bool = False  # findings only: no summary, no notes, no hint
    hint: bool = True  # the "N fixable with `--fix`" line (not after --fix ran)
    source_line: Callable[[Finding], str | None] = lambda finding: None
    edits: dict = field(default_factory=dict)  # Finding -> [Edit]: SARIF's `fixes`


# Format -> its renderer module, imported when asked for (a run renders one format).
_MODULES = {"concise": "concise", "text": "concise", "full": "full", "json": "json_report",
            "json-lines": "json_lines", "github": "github", "sarif": "sarif", "gitlab": "gitlab", "junit": "junit"}


FORMATS = ("concise", "full", "json", "json-lines", "github", "sarif", "gitlab", "junit", "text")
MACHINE_FORMATS = frozenset({"json", "json-lines", "github", "sarif", "gitlab", "junit"})


def render(fmt: str, report: Report) -> str:
    """The text of `report` in format `fmt` (one of FORMATS); ends without a newline."""
    import importlib

    return importlib.import_module(f"contracts.renderers.{_MODULES[fmt]}").render(report)
