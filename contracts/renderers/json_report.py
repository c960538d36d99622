"""`json`: one object, `files_scanned`, `files_total` and `findings` (each finding's fields and
`fixable`). JSON escapes every control character itself."""

from __future__ import annotations

import json

from contracts.findings import Finding
from contracts.renderers import Report


def finding_object(report: Report, f: Finding) -> dict:
    return {**f.to_json(), "fixable": f in report.fixable}


def render(report: Report) -> str:
    return json.dumps({
        "files_scanned": report.files_scanned,
        "files_total": report.files_total,
        "findings": [finding_object(report, f) for f in report.findings],
    }, indent=2)
