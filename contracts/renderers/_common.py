"""What the renderers share: the shown path of a finding, escapes, colour, counts.

`escape`: a newline, CR, ESC, NUL, a bidi override (any character that is not printable) is
written as its Python escape (`\\n`, `\\x1b`, `\\u202e`), so a file named `a\\nb.py` cannot forge
a second finding line or drive the terminal."""

from __future__ import annotations

import os
from collections import Counter

from contracts.config_source import shown as escape  # noqa: F401 (the one escaper of control characters)
from contracts.findings import Finding
from contracts.renderers import Report

BOLD, RED, CYAN, BLUE_BAR, RESET = "\x1b[1m", "\x1b[1;31m", "\x1b[36m", "\x1b[1;34m", "\x1b[0m"
FIX_MARK = "[*]"


def shown_path(report: Report, finding: Finding) -> str:
    """The path people see for `finding` (made by `findings.displayed` before rendering)."""
    return finding.path


def repo_path(report: Report, finding: Finding) -> str:
    """`finding`'s path relative to the repository root, with `/` (SARIF URIs, GitLab paths)."""
    full = os.path.abspath(finding.path)
    try:
        rel = os.path.relpath(full, os.path.abspath(report.root))
    except ValueError:  # another drive
        return full.replace(os.sep, "/")
    return full.replace(os.sep, "/") if rel.startswith(os.pardir) else rel.replace(os.sep, "/")


def use_text(finding: Finding) -> str:
    return f" (use `{finding.replacement}` instead)" if finding.replacement else ""


def paint(report: Report, code: str, text: str) -> str:
    return f"{code}{text}{RESET}" if report.colour else text


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_lines(report: Report) -> list[str]:
    """The closing lines of the human formats: coverage, counts per rule, the fix hint."""
    findings = report.findings
    coverage = f"Scanned {report.files_scanned} of {report.files_total} .py files"
    if not findings:
        return [f"{coverage}: no findings{stale_text(report.stale)}."]
    counts = ", ".join(f"{rule}: {n}" for rule, n in sorted(Counter(f.rule for f in findings).items()))
    lines = [f"{coverage}: {plural(len(findings), 'finding')} ({counts}){stale_text(report.stale)}."]
    fixable = sum(1 for f in findings if f in report.fixable)
    if fixable and report.hint:
        lines.append(f"{paint(report, CYAN, FIX_MARK)} {fixable} fixable with `--fix`.")
    return lines


def stale_text(stale: int) -> str:
    """What a summary adds when stale baseline entries fail the run: a failed run never reads as
    clean."""
    if not stale:
        return ""
    entries = "1 baseline entry that no longer occurs fails" if stale == 1 else \
        f"{stale} baseline entries that no longer occur fail"
    return f"; {entries} the run (--strict-baseline)"


def head_line(report: Report, f: Finding, use: bool = True) -> str:
    """`path:line:col: rule message (use ... instead) [*]`, escaped, coloured on a terminal. The
    fixable marker goes last, so the `path:line:col: rule message` a script reads is unchanged."""
    mark = f" {paint(report, CYAN, FIX_MARK)}" if f in report.fixable else ""
    where = paint(report, BOLD, f"{escape(shown_path(report, f))}:{f.line}:{f.col}:")
    message = f.message + (use_text(f) if use else "")
    return f"{where} {paint(report, RED, escape(f.rule))} {escape(message)}{mark}"
