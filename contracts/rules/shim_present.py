"""`shim-present`: a removed module exists on disk again.

## What it does
Flags a package directory or a `.py` file at a path named in `removed_modules`.

## Why is this bad?
The migration deleted the old package on purpose, with no compatibility shims. A file put back
there (a re-export "for compatibility", a merge that resurrected it) makes stale imports work
again, hides them from review, and splits the operators across two names.

## Example
`sglang/jit_kernel/hicache.py` containing `from sglang.kernels.ops.kvcache.hicache import *`.

## Use instead
Delete the file; import from `sglang.kernels.ops.kvcache.hicache` (run `--fix`).

## Fix safety
Never: deleting files is left to you.

## Options
`removed_modules`.
"""

from __future__ import annotations

import os

from contracts.config import RemovedSpec
from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "shim-present"
FIX = "never"


def check(model: Model, spec: RemovedSpec) -> list[Finding]:
    findings = []
    seen_dirs = set()
    prefix_of = spec.removed_index.first_of  # (`removed_prefix_of` itself: one call less a file)
    for f in model.discovery.files:
        prefix = prefix_of(f.module)
        if prefix:
            seen_dirs.add(prefix)
            findings.append(Finding(
                f.rel, 1, 1, RULE_ID, f.module, f.module,
                f"`{f.module}` exists again at `{f.rel}`, but `{prefix}` was removed with no "
                f"compatibility shims; delete it and import from the new place", spec.replacement_for(f.module),
            ))
    for prefix in spec.removed:
        if prefix in seen_dirs:
            continue
        directory = os.path.join(model.src, *prefix.split("."))
        if os.path.isdir(directory):
            rel = os.path.relpath(directory, model.src).replace(os.sep, "/")
            findings.append(Finding(
                rel, 1, 1, RULE_ID, prefix, prefix,
                f"directory `{rel}` exists again, but `{prefix}` was removed; delete it",
                spec.replacement_for(prefix),
            ))
    return findings


def needs(spec: RemovedSpec, config) -> dict:
    """What the scan must find for this rule (`engine.records.NEEDS`): every module under a
    removed prefix, parsed (a shim)."""
    return {"parsed": spec.removed}
