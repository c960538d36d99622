"""`junit`: JUnit XML, one `testsuite` per file and one failed `testcase` per finding (as
ruff's); a clean run is one passing test case. XML 1.0 cannot hold most control characters at
all, so every string is escaped first."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from contracts.renderers import Report
from contracts.renderers._common import escape, shown_path, use_text


def render(report: Report) -> str:
    suites = ET.Element("testsuites", name="namespace-lint", tests=str(max(1, len(report.findings))),
                        failures=str(len(report.findings)), errors="0")
    if not report.findings:
        suite = ET.SubElement(suites, "testsuite", name="namespace-lint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name="No findings", classname="namespace-lint")
    by_path: dict[str, list] = {}
    for f in report.findings:
        by_path.setdefault(escape(shown_path(report, f)), []).append(f)
    for path, findings in by_path.items():
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(len(findings)),
                              failures=str(len(findings)), errors="0")
        classname = path[:-3] if path.endswith(".py") else path
        for f in findings:
            case = ET.SubElement(suite, "testcase", name=f"namespace-lint.{escape(f.rule)}",
                                 classname=classname, file=path, line=str(f.line))
            message = escape(f.message + use_text(f))
            failure = ET.SubElement(case, "failure", message=message, type=escape(f.rule))
            failure.text = f"line {f.line}, col {f.col}, {message}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")
