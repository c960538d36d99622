"""`private-import`: code outside a group reaches into its private parts or the JIT infra.

## What it does
Flags an import, from outside a group, of that group's private modules or names (a leading
underscore: `sglang.kernels.ops.gemm._tiles`, `from ...fused_a_gemm import _fused_a_gemm_kernel`),
of a module deeper than the group's public surface (`<container>.<group>` or
`<container>.<group>.<op>`), and an import of a `shared_modules` module (the JIT infra) from
outside the kernel package (the container's parent).

## Why is this bad?
A group's public surface is what it promises to keep: the group package and its operator
modules with their public functions. Private kernels and helpers change without notice, and
runtime code that launches a Triton kernel directly skips the input checks and the dispatch
between Triton and torch.

## Example
```python
# sglang/srt/layers/layernorm.py
from sglang.kernels.ops.layernorm.rmsnorm_hf import _rmsnorm_hf_kernel
from sglang.kernels.jit import use_triton
```

## Use instead
```python
from sglang.kernels.ops.layernorm.rmsnorm_hf import rmsnorm_hf
```

## Fix safety
Never.

## Options
`container`, `groups`, `shared_modules`.
"""

from __future__ import annotations

from contracts.config import GroupsSpec
from contracts.engine.resolve import is_under
from contracts.findings import Finding
from contracts.rules._common import col_of, rel_of, top_packages

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "private-import"
FIX = "never"


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _where(model, e) -> tuple[str, int, int]:
    """(path, line, col) of an edge that becomes a finding (the column reads the file)."""
    return (rel_of(model, e.importer), e.line, col_of(model, e.importer, e.line, e.contents))


def check(model: Model, spec: GroupsSpec) -> list[Finding]:
    findings = []
    kernel_package = spec.container.rpartition(".")[0] or spec.container
    group_of = spec.group_of
    # The shared modules outside the container: an edge into none of them (most) is told by one
    # `startswith` (a module under `m` starts with `m`).
    shared = tuple(m for m in spec.shared_modules if not is_under(m, spec.container))
    for e in model.edges:
        group = group_of(e.imported)
        in_kernels = is_under(e.importer, kernel_package)
        if group is None and in_kernels:
            continue  # (most edges: nothing below can apply)
        if group is not None and group_of(e.importer) != group:
            findings.extend(Finding(*_where(model, e), RULE_ID, e.importer, imported, message)
                            for imported, message in _into_group(spec, e, group))
        elif not in_kernels and shared and e.imported.startswith(shared):
            findings.extend(Finding(*_where(model, e), RULE_ID, e.importer, e.imported,
                                    f"`{e.importer}` imports the kernel infra `{e.imported}` directly; code "
                                    f"outside `{kernel_package}` calls the operator groups' public surface")
                            for m in shared if is_under(e.imported, m))
    return findings


def _into_group(spec: GroupsSpec, e, group: str):
    """(imported, message) for what an edge from outside `group` takes below its public surface:
    a private module, a module deeper than an operator module, or private names."""
    importer = e.importer
    surface = f"{spec.container}.{group}"
    rest = e.imported[len(surface) + 1:].split(".") if e.imported != surface else []
    if any(_private(p) for p in rest):
        yield e.imported, (f"`{importer}` imports the private module `{e.imported}` of group `{group}`; "
                           f"import from `{surface}` or its public operator modules")
        return
    if len(rest) > 1:
        yield e.imported, (f"`{importer}` imports `{e.imported}`, below the public surface of group "
                           f"`{group}`; import from `{surface}` or `{surface}.{rest[0]}`")
        return
    for name in e.names or ():
        if _private(name):
            yield f"{e.imported}.{name}", (f"`{importer}` imports the private name `{name}` from `{e.imported}` "
                                           f"(group `{group}`); use the group's public functions")


def needs(spec: GroupsSpec, config) -> dict:
    """What the scan must find for this rule (`engine.records.NEEDS`): the edges into the groups'
    package, with the names they import from the container."""
    return {"edges_named": top_packages(spec), "names": (spec.container,)}
