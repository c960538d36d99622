"""`not-scanned`: a path under a root package that was not looked at.

## What it does
Reports every file or directory under a root package that the walk could not enter or read:
a symlink pointing outside the tree, a symlink loop, a broken link, a directory that cannot be
listed, nesting deeper than the walk's bound.

## Why is this bad?
"No findings" must mean "everything was looked at". A linter that skips what it cannot read
turns every such path into a blind spot.

## Example
`sglang/vendor:1:1: not-scanned symlink to outside the tree`

## Use instead
Make the path readable, or move it out of the package.

## Fix safety
Never.

## Options
None.
"""

from __future__ import annotations

from contracts.engine.model import Model
from contracts.findings import Finding

RULE_ID = "not-scanned"
FIX = "never"


def check(model: Model) -> list[Finding]:
    return [Finding(rel, 1, 1, RULE_ID, "", "", f"`{rel}` was not scanned: {reason}")
            for rel, reason in sorted(model.discovery.skipped)]
