"""`sarif`: SARIF 2.1.0 (GitHub code scanning and most CI dashboards read it).

One run; `tool.driver` names this tool, its version and every rule (descriptions from the rule
modules' docstrings); each result has `ruleId`, `ruleIndex`, `level`, `message`, one location
(`artifactLocation.uri` relative to the repository root, percent-encoded, under `uriBaseId`
`%SRCROOT%`, and a `region`), and `fixes` when `--fix` would repair it (the lines it would write).
"""

from __future__ import annotations

import json
from urllib.parse import quote

from contracts.renderers import Report
from contracts.renderers._common import repo_path, use_text

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/sgl-project/sglang"


def _rule(doc) -> dict:
    return {
        "id": doc.id,
        "name": doc.id,
        "shortDescription": {"text": doc.summary},
        "fullDescription": {"text": doc.what or doc.summary},
        "help": {"text": doc.text, "markdown": doc.text},
        "defaultConfiguration": {"level": "error"},
        "properties": {"fix": doc.fix},
    }


def _location(path: str) -> dict:
    """An `artifactLocation`: a URI, so `#`, `?`, `%`, a space (any byte but letters, digits,
    `-._~` and `/`) is percent-encoded -- a file `a#b.py` is not the fragment `b.py` of `a`. A path
    outside the repository root is an absolute `file:` URI, with no base."""
    if path.startswith("/"):
        return {"uri": "file://" + quote(path, safe="/")}
    return {"uri": quote(path, safe="/"), "uriBaseId": "%SRCROOT%"}


def render(report: Report) -> str:
    ids = sorted(set(report.rules) | {f.rule for f in report.findings})
    index = {rule: i for i, rule in enumerate(ids)}
    rules = [_rule(report.rules[r]) if r in report.rules else {"id": r, "name": r} for r in ids]
    results = []
    for f in report.findings:
        location = _location(repo_path(report, f))
        result = {
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": "error",
            "message": {"text": f.message + use_text(f)},
            "locations": [{"physicalLocation": {
                "artifactLocation": location,
                "region": {"startLine": f.line, "startColumn": f.col},
            }}],
        }
        edits = report.edits.get(f)
        if f in report.fixable and edits:
            result["fixes"] = [{
                "description": {"text": f"use `{f.replacement}`" if f.replacement else "--fix"},
                "artifactChanges": [{"artifactLocation": location, "replacements": [
                    {"deletedRegion": {"startLine": e.start, "startColumn": 1, "endLine": e.end, "endColumn": 1},
                     "insertedContent": {"text": e.text}}
                    for e in edits
                ]}],
            }]
        results.append(result)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "namespace-lint", "version": report.version,
                                "informationUri": INFORMATION_URI, "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(log, indent=2)

