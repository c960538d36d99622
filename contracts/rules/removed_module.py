"""`removed-module`: a reference to a module that was removed.

## What it does
Flags every reference to a module under a prefix named in `removed_modules`, in every form:
`import a.b.c`, `import a.b as x`, `from a.b.c import f`, `from a.b import c`, `from a import b`
(where `a.b` is removed), relative imports that resolve into the removed path, imports nested
in functions, methods, class bodies, `if`/`try`/`with` and `if TYPE_CHECKING:` blocks,
`importlib.import_module("...")`, `__import__("...")`, and string literals that are exactly a
dotted path or a `"module:attr"` target under the removed prefix (lazy registry targets,
`mock.patch` targets).

Not flagged: names that merely contain the text (`can_use_hicache_jit_kernel`), prose in
docstrings and comments, and other modules that share a prefix string (`sglang.jit_kernel_utils`
is not `sglang.jit_kernel`).

## Why is this bad?
The removed package has no compatibility shim: such an import fails with `ModuleNotFoundError`
only when that code path first runs (a lazy import, a registry lookup, a rarely used backend),
often in production. grimp drops imports of missing modules, so a stock import-linter contract
cannot see them.

## Example
```python
from sglang.jit_kernel.hicache import transfer_hicache_all_layer

def causal_conv1d(x):
    from sglang.jit_kernel.inkling_sconv import causal_conv1d as _cuda  # lazy
```

## Use instead
```python
from sglang.kernels.ops.kvcache.hicache import transfer_hicache_all_layer

def causal_conv1d(x):
    from sglang.kernels.ops.mamba.inkling_sconv import causal_conv1d as _cuda
```

## Fix safety
Sometimes: `--fix` rewrites the statement or string when `replacements` names the new place; a
bare `import a.b.c` whose attribute chains are used is rewritten with them when that is safe,
and left alone (reported as not auto-fixable, with the reason) otherwise.

## Options
`removed_modules`, `replacements` (longest matching prefix wins).
"""

from __future__ import annotations

from contracts.config import RemovedSpec
from contracts.engine.model import Model
from contracts.findings import Finding

RULE_ID = "removed-module"
FIX = "sometimes"

_WHERE = {"string": "string target", "importlib": "dynamic import target"}


def references(model: Model, spec: RemovedSpec):
    """(rel, importer, ref, imported) for every reference into a removed prefix."""
    by_rel = {f.rel: f for f in model.discovery.files}
    for rel in sorted(model.refs):
        importer = by_rel[rel].module
        if spec.removed_prefix_of(importer):
            continue  # a file inside the removed path is reported by `shim-present`
        seen = set()
        for ref in model.refs[rel]:
            imported = None
            if ref.kind in ("import", "string", "importlib"):
                if spec.removed_prefix_of(ref.imported):
                    imported = ref.imported
            elif ref.kind == "from":
                candidate = f"{ref.imported}.{ref.name}" if ref.name and ref.name != "*" else None
                if spec.removed_prefix_of(ref.imported):
                    # `from removed.pkg import x`: `x` is a submodule when a replacement line
                    # names it more precisely than the package; otherwise an attribute.
                    imported = ref.imported
                    if candidate and spec.names_replacement(candidate):
                        imported = candidate
                elif candidate and spec.removed_prefix_of(candidate):
                    imported = candidate
            if imported is None or (ref.line, ref.col, imported) in seen:
                continue
            seen.add((ref.line, ref.col, imported))
            yield rel, importer, ref, imported


def check(model: Model, spec: RemovedSpec) -> list[Finding]:
    findings = []
    for rel, importer, ref, imported in references(model, spec):
        new = spec.replacement_for(imported)
        shown = imported + (f":{ref.attr}" if ref.attr else "")
        replacement = (new + (f":{ref.attr}" if ref.attr else "")) if new else None
        what = _WHERE.get(ref.kind, "lazy import" if ref.lazy else "import")
        prefix = spec.removed_prefix_of(imported)
        if replacement:
            message = f"`{shown}` was removed ({what}; `{prefix}` no longer exists)"
        else:
            message = (f"`{shown}` was removed ({what}; `{prefix}` no longer exists) and "
                       f"`replacements` names no new place for it; add a line for it")
        findings.append(Finding(rel, ref.line, ref.col, RULE_ID, importer, shown, message, replacement))
    return findings
