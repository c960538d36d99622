"""`github`: GitHub Actions workflow commands, one `::error` annotation per finding.

    ::error file=pkg/srt/m.py,line=2,col=1,title=removed-module::`pkg.jit_kernel.hicache` was removed (...)
"""

from __future__ import annotations

from contracts.renderers import Report
from contracts.renderers._common import escape, shown_path, use_text


def _escape(value: str, prop: bool = False) -> str:
    # The runner's own escapes first (`%`, CR, LF), then every other control character as text.
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return escape(value)


def render(report: Report) -> str:
    return "\n".join(
        f"::error file={_escape(shown_path(report, f), True)},line={f.line},col={f.col},"
        f"title={_escape(f.rule, True)}::{_escape(f.message + use_text(f))}"
        for f in report.findings
    )
