"""`missing-module`: an import of a module that does not exist in the tree.

## What it does
Flags every import of a module under the contract's `packages` (default: the root packages)
that the tree does not have, in every form `removed-module` understands: `import a.b.c`,
`from a.b import f` (where `a.b` is missing), relative imports, imports nested in functions,
methods, class bodies, `if`/`try`/`with` and `if TYPE_CHECKING:` blocks,
`importlib.import_module("...")` and `__import__("...")` literals, and `"module:attr"` string
targets. A relative import that climbs above the top-level package is flagged too. A module
exists when the tree has it as a `.py` file, a package directory (with or without
`__init__.py`), a `.pyi` stub or an extension module (`.so`/`.pyd`, ABI-tagged names such as
`foo.cpython-311-x86_64-linux-gnu.so` included). Each finding says whether the import is lazy
(inside a function), type-only (`TYPE_CHECKING`) or at module level.

When another module of the tree defines every name the statement imports (by `def`, `class` or
assignment; a module that merely re-imports them is not where they moved) and is the only one
-- or the only one of several with the missing module's last name part -- the message says
"moved? `new.module` defines `a`, `b`" and the finding's replacement names it. For `import
a.b.c` (no names), a unique module named `c` elsewhere is the candidate. Several candidates are
listed, never guessed. A candidate is always under the missing module's own top-level package
(a project checked beside a dependency's tree never gets its own module for the dependency's
names), and never the importing module itself, through its package.

Not flagged: imports inside a `try:` whose handlers catch `ImportError`, `ModuleNotFoundError`,
`Exception`, `BaseException` or everything (and `with suppress(ImportError):`) -- optional by
intent -- unless `include_guarded = true`; modules outside `packages`; modules under a prefix a
`removed_modules` contract of the same configuration names (`removed-module` reports those);
plain dotted strings without `:` (they are as often logger names or attribute paths).

## Why is this bad?
Such an import fails with `ModuleNotFoundError` only when its code path first runs: most of
these are lazy imports or `TYPE_CHECKING` blocks, so the release imports fine. grimp drops
imports of missing internal modules, so import-linter never sees them; ruff has no such rule.

## Example
```python
def load():
    from sglang.srt.layers.old_place import helper  # the module moved to sglang.srt.utils.helpers
```

## Use instead
```python
def load():
    from sglang.srt.utils.helpers import helper
```

## Fix safety
Sometimes: `--fix` rewrites the statement (or string) to the unique candidate, with the same
machinery and guarantees as the `removed-module` fix; with several candidates or none it is
reported, not guessed.

## Options
`packages`, `include_guarded`, `ignore_imports` (import-linter's syntax, `*`/`**` wildcards;
`importer -> missing.module`; a line that matches nothing is an `unused-allowed-import` finding).
"""

from __future__ import annotations

from contracts.config import Config, MissingSpec
from contracts.findings import Finding
from contracts.rules import _missing

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = _missing.MODULE_RULE
FIX = "sometimes"


def check(model: Model, config: Config, spec: MissingSpec) -> list[Finding]:
    return [f for f in _missing.findings(model, config, spec) if f.rule == RULE_ID]
