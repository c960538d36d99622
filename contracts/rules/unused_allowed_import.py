"""`unused-allowed-import`: an `allowed_imports` line that no import uses.

## What it does
Flags a line of an `operator_groups` contract's `allowed_imports` that matched no import in
this run.

## Why is this bad?
Exceptions are reviewed once and then forgotten. A stale one silently allows the next
regression of the same kind.

## Example
`sglang.kernels.ops.gemm -> sglang.kernels.ops.quantization` after gemm stopped importing
quantization.

## Use instead
Delete the line.

## Fix safety
Never.

## Options
`allowed_imports`.
"""

from __future__ import annotations

import os

from contracts.config import GroupsSpec
from contracts.findings import Finding

RULE_ID = "unused-allowed-import"
FIX = "never"


def check(src: str, config_path: str, spec: GroupsSpec, used: set) -> list[Finding]:
    findings = []
    try:
        with open(config_path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    rel = os.path.relpath(config_path, src).replace(os.sep, "/")
    for i, (a, b) in enumerate(spec.allowed_imports):
        if i in used:
            continue
        line = next((n for n, text in enumerate(lines, 1)
                     if "->" in text and text.split("->")[0].strip() == a
                     and text.split("->")[1].strip() == b), 1)
        findings.append(Finding(rel, line, 1, RULE_ID, a, b,
            f"`allowed_imports` line `{a} -> {b}` of contract `{spec.id}` matches no import; "
            f"delete it"))
    return findings
