"""`unused-allowed-import`: an `allowed_imports` or `ignore_imports` line that no import uses.

## What it does
Flags a line of an `operator_groups` contract's `allowed_imports`, or of any contract's
`ignore_imports`, that matched no import in this run (as import-linter's
`unmatched_ignore_imports_alerting = error` does for its own contracts; with `warn` the line is a
warning on stderr instead, with `none` nothing).

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
`allowed_imports`, `ignore_imports`.
"""

from __future__ import annotations

import os

from contracts.config import GroupsSpec
from contracts.findings import Finding

RULE_ID = "unused-allowed-import"
FIX = "never"


def check(src: str, config_path: str, spec: GroupsSpec, used: set) -> list[Finding]:
    lines = [f"{a} -> {b}" for i, (a, b) in enumerate(spec.allowed_imports) if i not in used]
    return unmatched_lines(src, config_path, spec.id, "allowed_imports", lines)


def unmatched_lines(src: str, config_path: str, contract_id: str, option: str, lines: list[str]) -> list[Finding]:
    """A finding for each `importer -> imported` line of `option` that matched no import, at its
    line in the configuration file."""
    if not lines:
        return []
    try:
        with open(config_path, encoding="utf-8") as f:
            text = f.read().splitlines()
    except OSError:
        text = []
    rel = os.path.relpath(config_path, src).replace(os.sep, "/")
    findings = []
    for entry in lines:
        a, _, b = (part.strip() for part in entry.partition("->"))
        line = next((n for n, t in enumerate(text, 1)
                     if "->" in t and t.split("->")[0].strip() == a
                     and t.split("->")[1].strip() == b), 1)
        findings.append(Finding(rel, line, 1, RULE_ID, a, b,
            f"`{option}` line `{a} -> {b}` of contract `{contract_id}` matches no import; delete it"))
    return findings


def needs(spec: GroupsSpec, config) -> dict:
    """What the scan must find for this rule: nothing (it reads what the other rules matched)."""
    return {}
