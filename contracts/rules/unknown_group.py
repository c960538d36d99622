"""`unknown-group`: the container and the declared groups disagree.

## What it does
Flags a subpackage of the container that is not a declared group, a declared group with no
package, and a module placed directly in the container instead of in a group.

## Why is this bad?
`group-boundary` and `private-import` reason about declared groups only: an undeclared group
is a blind spot, a declared group with no package is a stale declaration, and an operator
module directly in the container belongs to no group at all.

## Example
`sglang/kernels/ops/misc/topk.py` with `misc` not in `groups`; `sglang/kernels/ops/topk.py`.

## Use instead
Move the operator into the group of what it computes, or declare the group in `.importlinter`.

## Fix safety
Never.

## Options
`container`, `groups`.
"""

from __future__ import annotations

import os

from contracts.config import GroupsSpec
from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "unknown-group"
FIX = "never"


def check(model: Model, spec: GroupsSpec) -> list[Finding]:
    findings = []
    prefix = spec.container + "."
    container_rel = spec.container.replace(".", "/")
    seen_groups: dict[str, str] = {}
    for f in model.discovery.files:
        if not f.module.startswith(prefix):
            continue
        head, _, rest = f.module[len(prefix):].partition(".")
        if not rest and not f.is_package and f.rel.endswith(f"/{head}.py") and \
                f.rel == f"{container_rel}/{head}.py":
            findings.append(Finding(f.rel, 1, 1, RULE_ID, f.module, f.module,
                f"module `{f.module}` sits directly in the container `{spec.container}`; move it "
                f"into the group of what it computes"))
            continue
        seen_groups.setdefault(head, f.rel)
    for head, rel in sorted(seen_groups.items()):
        if head not in spec.groups:
            findings.append(Finding(rel, 1, 1, RULE_ID, f"{prefix}{head}", f"{prefix}{head}",
                f"`{prefix}{head}` is not a declared group; declare it in `groups` or move its "
                f"operators into a declared group"))
    anchor = next((f.rel for f in model.discovery.files if f.module == spec.container), container_rel)
    for g in spec.groups:
        if g not in seen_groups and not os.path.isdir(os.path.join(model.src, container_rel, g)):
            findings.append(Finding(anchor, 1, 1, RULE_ID, spec.container, f"{prefix}{g}",
                f"declared group `{g}` has no package `{prefix}{g}`; remove it from `groups` or "
                f"create it"))
    return findings


def needs(spec: GroupsSpec, config) -> dict:
    """What the scan must find for this rule: nothing (it reads the container's directories)."""
    return {}
