"""Renderers of findings: text, json, github. They only format; they decide nothing."""

from __future__ import annotations

import json
from collections import Counter

from contracts.findings import Finding


def text(findings: list[Finding], files_scanned: int, files_total: int, extra: list[str] = ()) -> str:
    lines = []
    for f in findings:
        use = f" (use `{f.replacement}` instead)" if f.replacement else ""
        lines.append(f"{f.path}:{f.line}:{f.col}: {f.rule} {f.message}{use}")
    lines.extend(extra)
    coverage = f"Scanned {files_scanned} of {files_total} .py files"
    if findings:
        counts = ", ".join(f"{rule}: {n}" for rule, n in sorted(Counter(f.rule for f in findings).items()))
        noun = "finding" if len(findings) == 1 else "findings"
        lines.append(f"{coverage}: {len(findings)} {noun} ({counts}).")
    else:
        lines.append(f"{coverage}: no findings.")
    return "\n".join(lines)


def json_report(findings: list[Finding], files_scanned: int) -> str:
    return json.dumps({"files_scanned": files_scanned, "findings": [f.to_json() for f in findings]},
                      indent=2)


def _gh_escape(value: str, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(findings: list[Finding]) -> str:
    out = []
    for f in findings:
        use = f" (use `{f.replacement}` instead)" if f.replacement else ""
        out.append(
            f"::error file={_gh_escape(f.path, True)},line={f.line},col={f.col},"
            f"title={_gh_escape(f.rule, True)}::{_gh_escape(f.message + use)}"
        )
    return "\n".join(out)
