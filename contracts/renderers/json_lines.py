"""`json-lines`: one JSON object per finding per line (the `json` format's finding objects)."""

from __future__ import annotations

import json

from contracts.renderers import Report
from contracts.renderers.json_report import finding_object


def render(report: Report) -> str:
    return "\n".join(json.dumps(finding_object(report, f)) for f in report.findings)
