"""`missing-name`: `from M import X` where `M` exists but has no `X`.

## What it does
Flags `from M import X` (absolute, relative, lazy, `TYPE_CHECKING`; and `"M:X"` string
targets) where `M` is a module under the contract's `packages` that exists but neither binds
`X` at module level nor has a submodule `X`. Bindings are every form Python has: `def`,
`class`, assignment (tuples, annotated, augmented, walrus), `import`/`from ... import`,
`for`/`with` targets, names a function declares `global`, and `__all__` entries, also inside
`if`/`try`/`with`/`for`/`while` blocks at module level. Star imports of modules under `packages`
are followed (through cycles). When `M` has a module-level `__getattr__`, binds names through
`globals()`, `vars()`, `exec` or `sys.modules[__name__]`, star-imports something outside
`packages`, or is an extension module, nothing is said: unknown is not missing. Each finding
says whether the import is lazy, type-only or at module level, and, as `missing-module` does,
where the name moved when one module defines it ("moved? `new.module` defines `X`").

Not flagged: guarded imports (see `missing-module`) unless `include_guarded = true`.

## Why is this bad?
The import raises `ImportError: cannot import name 'X'` when it runs (at import time, or at
type-check time under `TYPE_CHECKING`): the name was removed or renamed and a caller was left
behind.

## Example
```python
from sglang.srt.utils import get_device_name  # removed from sglang.srt.utils
```

## Use instead
```python
from sglang.srt.utils.device import get_device_name
```

## Fix safety
Sometimes: with a unique defining module, `--fix` moves the name to `from new.module import X`
(a statement of its own when other names stay); otherwise reported, not guessed.

## Options
`packages`, `include_guarded`, `ignore_imports` (matched as `importer -> M.X`).
"""

from __future__ import annotations

from contracts.config import Config, MissingSpec
from contracts.findings import Finding
from contracts.rules import _missing

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = _missing.NAME_RULE
FIX = "sometimes"


def check(model: Model, config: Config, spec: MissingSpec) -> list[Finding]:
    return [f for f in _missing.findings(model, config, spec) if f.rule == RULE_ID]
