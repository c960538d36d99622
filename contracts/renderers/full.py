"""`full`: each finding with its source line and a caret under what it names, as ruff's `full`.

    pkg/srt/m.py:2:1: removed-module `pkg.jit_kernel.hicache` was removed (...) [*]
      |
    2 | from pkg.jit_kernel import hicache
      | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ removed-module
      |
      = help: use `pkg.kernels.ops.kvcache.hicache` instead
"""

from __future__ import annotations

from contracts.findings import Finding
from contracts.renderers import Report
from contracts.renderers._common import BLUE_BAR, RED, escape, head_line, paint, summary_lines


def span(line: str, finding: Finding) -> tuple[int, int]:
    """0-based [start, end) of what `finding` names in its source `line`: the longest dotted
    prefix of the imported name found at or after its column, else the rest of the statement."""
    start = max(0, min(finding.col - 1, len(line)))
    parts = finding.imported.split(":", 1)[0].split(".")
    for n in range(len(parts), 0, -1):
        at = line.find(".".join(parts[:n]), start)
        if at >= 0:
            return at, at + len(".".join(parts[:n]))
    end = len(line.rstrip())
    return start, max(end, start + 1)


def _block(report: Report, f: Finding) -> list[str]:
    lines = [head_line(report, f, use=False)]
    source = report.source_line(f)
    if source is not None:
        source = source.rstrip("\r\n").replace("\t", " ")
        start, end = span(source, f)
        number = str(f.line)
        pad = " " * len(number)
        bar = paint(report, BLUE_BAR, "|")
        caret_at = len(escape(source[:start]))
        width = max(1, len(escape(source[start:end])))
        lines += [
            f"{pad} {bar}",
            f"{paint(report, BLUE_BAR, number)} {bar} {escape(source)}",
            f"{pad} {bar} {' ' * caret_at}{paint(report, RED, '^' * width + ' ' + escape(f.rule))}",
            f"{pad} {bar}",
        ]
        if f.replacement:
            lines.append(f"{pad} = help: use `{escape(f.replacement)}` instead")
    elif f.replacement:
        lines.append(f"  = help: use `{escape(f.replacement)}` instead")
    return lines + [""]


def render(report: Report) -> str:
    lines: list[str] = []
    for f in report.findings:
        lines.extend(_block(report, f))
    if not report.quiet:
        lines.extend(escape(note) for note in report.notes)
        lines.extend(summary_lines(report))
    elif lines:
        lines.pop()
    return "\n".join(lines)
