"""`--statistics`: how many findings each rule has, and how many of them `--fix` can repair.

    12  removed-module          [*] 10 fixable
     3  group-boundary
"""

from __future__ import annotations

from collections import Counter

from contracts.renderers import Report
from contracts.renderers._common import escape


def rows(report: Report) -> list[dict]:
    count = Counter(f.rule for f in report.findings)
    fixable = Counter(f.rule for f in report.findings if f in report.fixable)
    return [{"rule": rule, "count": n, "fixable": fixable[rule]}
            for rule, n in sorted(count.items(), key=lambda item: (-item[1], item[0]))]


def render(report: Report, as_json: bool = False) -> str:
    table = rows(report)
    if as_json:
        import json  # (1.5 ms to import: only here, a text table needs none)

        return json.dumps(table, indent=2)
    width = max((len(str(r["count"])) for r in table), default=1)
    name = max((len(r["rule"]) for r in table), default=1)
    return "\n".join(
        (f"{r['count']:>{width}}  {escape(r['rule']):<{name}}"
         + (f"  [*] {r['fixable']} fixable" if r["fixable"] else "")).rstrip()
        for r in table
    )
