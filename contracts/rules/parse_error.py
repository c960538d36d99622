"""`parse-error`: a file that cannot be read or parsed.

## What it does
Reports a file a rule needed to parse but could not read (permissions), decode (invalid
UTF-8, an unknown encoding declaration) or parse (a syntax error, a NUL byte), with the reason.
The run goes on and checks everything else.

## Why is this bad?
An import in a file the tool cannot read is an import it cannot check: silence there would
mean "not looked at", not "clean".

## Example
`sglang/srt/x.py:3:1: parse-error syntax error, line 3: invalid syntax`

## Use instead
Fix the file (or delete it if it is not Python).

## Fix safety
Never; `--fix` leaves such files untouched.

## Options
None.
"""

from __future__ import annotations

import re

from contracts.engine.model import Model
from contracts.findings import Finding

RULE_ID = "parse-error"
FIX = "never"


def check(model: Model) -> list[Finding]:
    by_rel = {f.rel: f for f in model.discovery.files}
    findings = []
    for rel, reason in sorted(model.errors.items()):
        m = re.search(r"line (\d+)", reason)
        module = by_rel[rel].module if rel in by_rel else ""
        findings.append(Finding(rel, int(m.group(1)) if m else 1, 1, RULE_ID, module, "",
                                f"cannot check `{rel}`: {reason}"))
    return findings
