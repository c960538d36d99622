"""`json`: one object, `files_scanned`, `files_total` and `findings` (each finding's fields and
`fixable`). JSON escapes every control character itself."""

from __future__ import annotations

from contracts.findings import Finding
from contracts.renderers import Report

try:  # what json.dumps uses for a str (ensure_ascii): the C encoder, without loading `json` (1.5 ms)
    from _json import encode_basestring_ascii as _ENCODE
except ImportError:  # (another Python: its own)
    from json.encoder import encode_basestring_ascii as _ENCODE


def finding_object(report: Report, f: Finding) -> dict:
    return {**f.to_json(), "fixable": f in report.fixable}


def render(report: Report) -> str:
    """What `json.dumps(..., indent=2)` writes, byte for byte, built from the C encoder's pieces:
    with `indent`, `json` falls back to its pure-Python encoder, far slower on a long report."""
    findings = [finding_object(report, f) for f in report.findings]
    if not findings:
        body = "[]"
    else:
        body = "[\n" + ",\n".join(
            "    {\n" + ",\n".join(f"      {_ENCODE(key)}: {_scalar(value)}" for key, value in obj.items()) + "\n    }"
            for obj in findings) + "\n  ]"
    return (f'{{\n  "files_scanned": {_scalar(report.files_scanned)},\n  "files_total": '
            f'{_scalar(report.files_total)},\n  "findings": {body}\n}}')


def _scalar(value) -> str:
    if isinstance(value, str):
        return _ENCODE(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    import json  # (1.5 ms to import, see above: no value written takes this path)

    return json.dumps(value)  # (no other type is written; kept exact if one ever is)
