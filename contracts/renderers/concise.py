"""`concise` (alias `text`, the default): one line per finding, then a summary.

    pkg/srt/m.py:2:1: removed-module `pkg.jit_kernel.hicache` was removed (...) (use `...` instead) [*]
    Scanned 13 of 13 .py files: 1 finding (removed-module: 1).
    [*] 1 fixable with `--fix`.
"""

from __future__ import annotations

from contracts.renderers import Report
from contracts.renderers._common import escape, head_line, summary_lines


def render(report: Report) -> str:
    lines = [head_line(report, f) for f in report.findings]
    if not report.quiet:
        lines.extend(escape(note) for note in report.notes)
        lines.extend(summary_lines(report))
    return "\n".join(lines)
