"""`parse-error`: a file a rule needs to parse that cannot be parsed.

## What it does
Reports a file a rule needed to parse but could not: it does not decode (invalid UTF-8, an
unknown encoding declared, a NUL byte), does not parse (a syntax error, Python 2 code), is
nested too deeply for the parser, or is larger than the 4 MiB the tool parses. The reason and,
where known, the line are given; the run goes on and checks everything else. (A file that
cannot be read at all is `not-scanned`.) "Does not parse" means no Python's grammar reads it: a
file the running interpreter's `ast` rejects is read with LibCST's parser, which knows the
syntax of 3.0 through 3.15 (3.12's f-strings and `type X = ...`, 3.14's t-strings, PEP 810's
`lazy import`), so the findings are the same whichever Python runs the tool; the reason given
is the running interpreter's.

Which files are parsed: every file is read, and a file is parsed when a line of it may name a
removed module (an import or a quoted dotted path under one, found by name parts on the text as
Python decodes it, identifiers NFKC-normalized), when a line of it may name the kernel package
a rule checks (the same search, for that package), or when it lies in a package a rule checks.
A syntax error in any other file cannot hide a finding, since that file names nothing checked.
A file of a higher layer parsed only because it may name the kernel package is parsed up to the
first top-level statement after its last line that may: a syntax error after that cannot hide
a finding either, and is not reported (`docs/guarantees.md`).

## Why is this bad?
An import in a file the tool cannot read is an import it cannot check: silence there would
mean "not looked at", not "clean".

## Example
```text
sglang/srt/x.py:3:1: parse-error cannot check `sglang/srt/x.py`: syntax error, line 3: invalid syntax
```

## Use instead
Fix the file (or delete it if it is not Python).

## Fix safety
Never; `--fix` leaves such files untouched.

## Options
None.
"""

from __future__ import annotations

import re

from contracts.engine.records import UNREADABLE
from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "parse-error"
FIX = "never"


def check(model: Model) -> list[Finding]:
    by_rel = {f.rel: f for f in model.discovery.files}
    findings = []
    for rel, reason in sorted(model.errors.items()):
        if reason.startswith(UNREADABLE):
            continue  # reported by `not-scanned`
        findings.append(finding(rel, by_rel[rel].module if rel in by_rel else "", reason))
    return findings


def finding(rel: str, module: str, reason: str) -> Finding:
    """The finding for a file that cannot be parsed (`reason`: why, with `line N` when known)."""
    m = re.search(r"\bline (\d+)", reason)
    return Finding(rel, int(m.group(1)) if m else 1, 1, RULE_ID, module, "", f"cannot check `{rel}`: {reason}")
