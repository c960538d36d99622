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
`foo.cpython-311-x86_64-linux-gnu.so` included, built for any interpreter or platform). Each
finding says whether the import is lazy (inside a function), type-only (`TYPE_CHECKING`) or at
module level.

Unknown is not missing (`engine/runtime.py`): a module below an extension module (it registers
its submodules when imported), below a module that writes into `sys.modules` under a key it
computes or installs an import hook (`six.moves`), or named by a literal `sys.modules["a.b"]`
key anywhere in the tree, is not reported.

A fix needs evidence. When one module of the missing module's top-level package defines every
name the statement imports by a `def`, a `class` or an assignment of something other than a
literal, at module level, and no other module defines them (but by a literal fallback such as
`X = None`), the message says "moved? `new.module` defines `a`, `b`" and the finding's
replacement names it. A weaker match -- a literal, a definition inside a block, a package whose
submodule has the name (a module in place of a name), a unique module named like the missing
one for `import a.b.c`, the one of several candidates sharing the missing module's last name
part -- is a "hint: `new.module` defines `a` (a name match, not proof: not fixed)". Never
suggested: the importing module itself, a module for a dunder, a module outside the vendored
package (`_vendor/x`) a vendored module belongs to, a module of another top-level package (a
project checked beside a dependency's tree never gets its own module for the dependency's names).
Several candidates are listed, never guessed.

Not flagged: imports inside a `try:` whose handlers catch `ImportError`, `ModuleNotFoundError`,
`Exception`, `BaseException` or everything (and `with suppress(ImportError):`) -- optional by
intent -- and imports a test asserts must fail (`with pytest.raises(ImportError):`, `raises(...)`,
`self.assertRaises(...)`/`assertRaisesRegex(...)` with one of those exceptions or a tuple
holding one, `match=` or not; `pytest.importorskip("...")`) -- unless `include_guarded = true`,
and then never fixable; modules outside `packages`; modules under a prefix a
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
Sometimes: `--fix` rewrites the statement (or string) to the proven candidate (see above), with
the same machinery and guarantees as the `removed-module` fix; a hint, several candidates or
none are reported, not guessed.

## Options
`packages`, `include_guarded`, `ignore_imports` (import-linter's syntax, `*`/`**` wildcards;
`importer -> missing.module`; a line that matches nothing is an `unused-allowed-import` finding).
"""

from __future__ import annotations

from contracts.config import Config, MissingSpec
from contracts.findings import Finding
from contracts.rules import parse_error

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

PARSE_ERROR = parse_error.RULE_ID
RULE_ID = "missing-module"  # (`_missing.MODULE_RULE`, the id of the findings it makes)
FIX = "sometimes"


def check(model: Model, config: Config, spec: MissingSpec) -> list[Finding]:
    """This rule's findings, and the `parse-error` of a file the text pass found suspects in but
    `ast` could not read (over the parse cap, say): dropping it would say "no findings" of a
    file nobody checked. (`missing-name` takes its own findings only, so it is reported once.)"""
    # The shared analysis and the engine parts it reads with: not loaded by a warm run (`fixable`).
    from contracts.rules import _missing

    return [f for f in _missing.findings(model, config, spec) if f.rule in (RULE_ID, PARSE_ERROR)]


def needs(spec: MissingSpec, config: Config) -> dict:
    """What the scan must find for this rule (`engine.records.NEEDS`): every file's text, and its
    import statements read with it."""
    return {"texts": True, "statement_roots": spec.statement_roots(config.root_packages)}
