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
`packages`, writes into `sys.modules`, imports from a module that sets attributes on a computed
`sys.modules[...]` entry, or is an extension module (any tag; with a non-empty `.pyi` beside it
the stub is the truth), nothing is said; nor for a name another module assigns onto `M` at run
time (`setattr(pkg.sub, "X", v)`, `pkg.sub.X = v`, through an alias or `sys.modules["pkg.sub"]`),
nor for the attributes every module has (`__doc__`, `__file__`, `__name__`, `__package__`,
`__spec__`, `__loader__`, `__builtins__`, `__cached__`, `__annotations__`, `__dict__`; `__path__`
of a package): unknown is not missing. Each finding
says whether the import is lazy, type-only or at module level, and, as `missing-module` does,
where the name moved when the evidence proves it ("moved? `new.module` defines `X`"; a name
match alone is a "hint:", see `missing-module`).

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
Sometimes: with a proven new home (see `missing-module`), `--fix` moves the name to `from
new.module import X` (a statement of its own when other names stay); otherwise reported, not
guessed.

## Options
`packages`, `include_guarded`, `ignore_imports` (matched as `importer -> M.X`).
"""

from __future__ import annotations

from contracts.config import Config, MissingSpec
from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "missing-name"  # (`_missing.NAME_RULE`, the id of the findings it makes)
FIX = "sometimes"


def check(model: Model, config: Config, spec: MissingSpec) -> list[Finding]:
    # The shared analysis and the engine parts it reads with: not loaded by a warm run (`fixable`).
    from contracts.rules import _missing

    return [f for f in _missing.findings(model, config, spec) if f.rule == RULE_ID]


def needs(spec: MissingSpec, config: Config) -> dict:
    """What the scan must find for this rule (`engine.records.NEEDS`): every file's text, and its
    import statements read with it."""
    return {"texts": True, "statement_roots": spec.statement_roots(config.root_packages)}
