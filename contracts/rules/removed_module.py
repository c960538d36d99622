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
`removed_modules`, `replacements`: `old.module -> new.module` lines (longest matching prefix
wins) and `old.module:name -> new.module:name` lines (where one name a statement imports from
`old.module` went; it wins over the module's line for that name).
"""

from __future__ import annotations

from contracts.config import RemovedSpec
from contracts.findings import Finding

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "removed-module"
FIX = "sometimes"

_WHERE = {"string": "string target", "importlib": "dynamic import target"}


def references(model: Model, spec: RemovedSpec):
    """(rel, importer, ref, imported) for every reference into a removed prefix."""
    for rel, importer, ref, imported, _ in references_with_names(model, spec):
        yield rel, importer, ref, imported


def references_with_names(model: Model, spec: RemovedSpec):
    """(rel, importer, ref, imported, names) for every reference into a removed prefix; `names`:
    the names a `from imported import ...` statement takes from the module itself (not its
    submodules), in order ([] for other forms)."""
    by_rel = {f.rel: f for f in model.discovery.files}
    for rel in sorted(model.refs):
        importer = by_rel[rel].module
        if spec.removed_prefix_of(importer):
            continue  # a file inside the removed path is reported by `shim-present`
        for (_, _, imported), (ref, names) in _file_references(spec, model.refs[rel]).items():
            yield rel, importer, ref, imported, names


def _file_references(spec: RemovedSpec, refs) -> dict[tuple, tuple]:
    """(line, col, imported) -> (the first ref there, the names it takes from `imported`) for one
    file's references into a removed prefix: one entry per statement and module."""
    found: dict[tuple, tuple] = {}
    for ref in refs:
        imported, from_module = _removed_target(spec, ref)
        if imported is None:
            continue
        key = (ref.line, ref.col, imported)
        if key not in found:
            found[key] = (ref, [])
        if from_module and ref.name:
            found[key][1].append(ref.name)
    return found


def _removed_target(spec: RemovedSpec, ref) -> tuple[str | None, bool]:
    """(the removed module `ref` reaches, or None; whether it takes a name from that module
    itself). `from removed.pkg import x`: `x` is a submodule when a replacement line names it
    more precisely than the package (and no per-name line names `x` itself); otherwise an
    attribute."""
    if ref.kind in ("import", "string", "importlib"):
        return (ref.imported if spec.removed_prefix_of(ref.imported) else None), False
    if ref.kind != "from":
        return None, False
    candidate = f"{ref.imported}.{ref.name}" if ref.name and ref.name != "*" else None
    if spec.removed_prefix_of(ref.imported):
        if candidate and spec.names_replacement(candidate) and not _name_line(spec, ref.imported, ref.name):
            return candidate, False
        return ref.imported, True
    if candidate and spec.removed_prefix_of(candidate):
        return candidate, False
    return None, False


def _name_line(spec: RemovedSpec, module: str, name: str | None) -> bool:
    return name is not None and spec.has_name_line(module, name)


def _string_target(spec: RemovedSpec, imported: str, attr: str | None) -> str | None:
    """The new text of a string target `imported[:attr]`: `module:attr` through the attr's
    per-name line, else the module's line; a dotted `module.name` (a `mock.patch` target)
    through `module:name`'s per-name line when the whole has no line of its own."""
    if attr:
        head = attr.split(".", 1)[0]
        if _name_line(spec, imported, head):
            new_module, new_name = spec.name_replacement(imported, head)
            return f"{new_module}:{new_name}{attr[len(head):]}"
        new = spec.replacement_for(imported)
        return f"{new}:{attr}" if new else None
    parent, _, last = imported.rpartition(".")
    if parent and _name_line(spec, parent, last):
        new_module, new_name = spec.name_replacement(parent, last)
        return f"{new_module}.{new_name}"
    return spec.replacement_for(imported)


def from_targets(spec: RemovedSpec, module: str, names: list[str]) -> dict[str, tuple[str, str] | None]:
    """name -> (new module, new name) for the names of `from module import ...` (`*`: the
    module's line; per-name lines cannot say where a star's names went)."""
    out: dict[str, tuple[str, str] | None] = {}
    for n in names:
        if n == "*":
            new = spec.replacement_for(module)
            out[n] = (new, n) if new else None
        else:
            out[n] = spec.name_replacement(module, n)
    return out


def check(model: Model, spec: RemovedSpec) -> list[Finding]:
    findings = []
    for rel, importer, ref, imported, names in references_with_names(model, spec):
        shown = imported + (f":{ref.attr}" if ref.attr else "")
        replacement, missing = _replacement(spec, ref, imported, names)
        message = _message(shown, _WHERE.get(ref.kind, ref.context), spec.removed_prefix_of(imported),
                           replacement, missing, names)
        findings.append(Finding(rel, ref.line, ref.col, RULE_ID, importer, shown, message, replacement))
    return findings


def _replacement(spec: RemovedSpec, ref, imported: str, names: list[str]) -> tuple[str | None, list[str]]:
    """(what `--fix` writes for the reference, or None; the names `replacements` has no new place
    for). A statement whose names go to several modules (or change name) gets each one's
    `module:name`, which says where each goes."""
    if ref.kind in ("string", "importlib"):
        return _string_target(spec, imported, ref.attr), []
    if not (names and (spec.has_name_lines(imported) or "*" in names)):
        return spec.replacement_for(imported), []
    targets = from_targets(spec, imported, names)
    missing = [n for n, t in targets.items() if t is None]
    if missing:
        return None, missing
    places = sorted({t[0] for t in targets.values()})
    renamed = any(t[1] != n for n, t in targets.items())
    if len(places) == 1 and not renamed:
        return places[0], missing
    return ", ".join(f"{t[0]}:{t[1]}" for t in targets.values()), missing


def _message(shown: str, what: str, prefix: str | None, replacement: str | None, missing: list[str],
             names: list[str]) -> str:
    """The finding's message: what was removed, and, without a replacement, which line to add."""
    if replacement:
        return f"`{shown}` was removed ({what}; `{prefix}` no longer exists)"
    if missing and len(missing) < len(names):
        return (f"`{shown}` was removed ({what}; `{prefix}` no longer exists) and "
                f"`replacements` names no new place for "
                f"{', '.join(f'`{n}`' for n in missing)}; add a line for it")
    return (f"`{shown}` was removed ({what}; `{prefix}` no longer exists) and "
            f"`replacements` names no new place for it; add a line for it")


def needs(spec: RemovedSpec, config) -> dict:
    """What the scan must find for this rule (`engine.records.NEEDS`): the files that may name a
    removed module."""
    return {"removed": spec.removed}
