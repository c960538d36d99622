"""`not-scanned`: a path under a root package that was not looked at.

## What it does
Reports every path under a root package that was not looked at, with the reason: a `.py` file
that cannot be read (permissions), a directory that cannot be listed, a symlink pointing
outside the tree, a symlink loop or a link to a directory already scanned under its own name, a
broken link, a `.py` entry that is not a regular file (a FIFO is never opened), a name that is
not valid UTF-8, `mod.py` shadowed by a package `mod/`, nesting deeper than the walk's bound, a
directory name with a dot (`v1.2/`, `.agents/`: no import reaches the files in it), a file over the
64 MiB the tool reads (reported before it is read).
Every such path is also counted in "Scanned N of M .py files": N < M whenever one is reported.

## Why is this bad?
"No findings" must mean "everything was looked at". A linter that skips what it cannot read
turns every such path into a blind spot.

## Example
```text
sglang/vendor:1:1: not-scanned `sglang/vendor` was not scanned: symlink to outside the tree; not followed
```

## Use instead
Make the path readable, or move it out of the package.

## Fix safety
Never.

## Options
None.
"""

from __future__ import annotations

from contracts.engine.records import UNREADABLE
from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "not-scanned"
FIX = "never"


def check(model: Model) -> list[Finding]:
    skipped = list(model.discovery.skipped)
    # A file found but not readable was never looked at: not scanned, not a parse error.
    skipped += [(rel, reason) for rel, reason in model.errors.items() if reason.startswith(UNREADABLE)]
    return [Finding(rel, 1, 1, RULE_ID, "", "", f"`{rel}` was not scanned: {reason}")
            for rel, reason in sorted(skipped)]
