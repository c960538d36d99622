"""`gitlab`: a GitLab Code Quality report (a JSON array; GitLab reads `description`,
`check_name`, `fingerprint`, `severity`, `location.path`, `location.lines.begin`).

The fingerprint hashes what identifies a finding without its line (rule, path, importer,
imported, message, and which occurrence of those it is), so a finding keeps its fingerprint
when lines above it move, and GitLab does not show it as fixed and new.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from contracts.renderers import Report
from contracts.renderers._common import repo_path, use_text


def render(report: Report) -> str:
    seen: Counter = Counter()
    issues = []
    for f in report.findings:
        path = repo_path(report, f)
        identity = (f.rule, path, f.importer, f.imported, f.message)
        seen[identity] += 1
        digest = hashlib.sha256(json.dumps([*identity, seen[identity]]).encode()).hexdigest()
        issues.append({
            "type": "issue",
            "check_name": f.rule,
            "description": f.message + use_text(f),
            "categories": ["Bug Risk"],
            "severity": "major",
            "fingerprint": digest,
            "location": {"path": path, "lines": {"begin": f.line, "end": f.line}},
        })
    return json.dumps(issues, indent=2)
