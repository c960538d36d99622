"""`group-boundary`: a module of one operator group imports another group.

## What it does
Flags a module under `<container>.<group>` that imports a module of another group, directly or
through a chain of imports (the chain is shown), unless the import goes through a
`shared_modules` module or matches an `allowed_imports` line (`importer.prefix -> imported.prefix`).

## Why is this bad?
Groups are classified by the computation they expose ("classify the public computation, not
the model"). A kernel that reaches into another group couples their release, testing and
ownership, and makes moving an operator break code far from it.

## Example
```python
# sglang/kernels/ops/gemm/fused_a_gemm.py
from sglang.kernels.ops.quantization.per_token_group_quant_8bit import per_token_group_quant_8bit
```

## Use instead
Move the shared piece into a shared module (`sglang.kernels.jit`), or, after review, add
`sglang.kernels.ops.gemm -> sglang.kernels.ops.quantization` to `allowed_imports` with a comment.

## Fix safety
Never.

## Options
`container`, `groups`, `shared_modules`, `allowed_imports` (an unused line is reported as
`unused-allowed-import`).
"""

from __future__ import annotations

from contracts.config import GroupsSpec
from contracts.findings import Finding
from contracts.prefixes import PrefixIndex, ancestors_or_self
from contracts.rules._common import (
    adjacency_of,
    chain_text,
    chains_from,
    col_of,
    first_hop,
    higher_layers,
    rel_of,
    top_packages,
)

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "group-boundary"
FIX = "never"


def _allowed_table(spec: GroupsSpec) -> dict[str, dict[str, int]]:
    """importer prefix -> imported prefix -> the first `allowed_imports` line naming the pair."""
    table: dict[str, dict[str, int]] = {}
    for i, (a, b) in enumerate(spec.allowed_imports):
        table.setdefault(a, {}).setdefault(b, i)
    return table


def _allowed(table: dict, importer: str, imported: str, used: set) -> bool:
    """Does an `allowed_imports` line cover the import? Marks the first such line used. (By the
    modules' name parts: the cost does not grow with the number of lines.)"""
    best = None
    for a in ancestors_or_self(importer):
        row = table.get(a)
        if row is None:
            continue
        for b in ancestors_or_self(imported):
            i = row.get(b)
            if i is not None and (best is None or i < best):
                best = i
    if best is None:
        return False
    used.add(best)
    return True


def check(model: Model, spec: GroupsSpec, used: set | None = None, stop: tuple = ()) -> list[Finding]:
    """`stop`: packages whose modules chains may not pass through (the higher layers: a chain
    through them starts with a `layer` finding at its first hop, reported there)."""
    used = set() if used is None else used
    table = _allowed_table(spec)
    findings, cross = _direct(model, spec, table, used)
    return findings + _through_chains(model, spec, table, used, stop, cross)


def _direct(model: Model, spec: GroupsSpec, table: dict, used: set) -> tuple[list[Finding], list]:
    """(the findings of imports from one group straight into another, every such edge allowed
    or not)."""
    findings = []
    cross = []
    for e in model.edges:
        g, h = spec.group_of(e.importer), spec.group_of(e.imported)
        if g is None or h is None or g == h:
            continue
        cross.append(e)
        if _allowed(table, e.importer, e.imported, used):
            continue
        findings.append(Finding(
            rel_of(model, e.importer), e.line, col_of(model, e.importer, e.line, e.contents), RULE_ID,
            e.importer, e.imported,
            f"group `{g}` imports group `{h}`: `{e.importer}` -> `{e.imported}`; groups may "
            f"share code only through {_shared(spec)} or a reviewed `allowed_imports` line",
        ))
    return findings, cross


def _through_chains(model: Model, spec: GroupsSpec, table: dict, used: set, stop: tuple, cross: list
                    ) -> list[Finding]:
    """The findings of chains from one group to another through modules of no group (not
    through a shared module, nor `stop`, nor a direct cross-group edge: those are reported as
    such)."""
    direct = {(e.importer, e.imported) for e in cross}
    edges = adjacency_of([e for e in model.edges if (e.importer, e.imported) not in direct])
    blocked = PrefixIndex((*spec.shared_modules, *stop))
    members: dict[str, set[str]] = {}
    for m in model.graph_modules:
        g = spec.group_of(m)
        if g is not None:
            members.setdefault(g, set()).add(m)
    findings = []
    for g in spec.groups:
        sources = members.get(g, set())
        if not sources:
            continue
        chains = chains_from(
            edges, sources,
            target_key=lambda m, g=g: (spec.group_of(m) if spec.group_of(m) not in (None, g) else None),
            passable=lambda m: spec.group_of(m) is None and blocked.longest_of(m) is None,
        )
        for h, chain in sorted(chains.items()):
            if _allowed(table, chain[0], chain[-1], used):
                continue
            line, col = first_hop(model, chain)
            findings.append(Finding(
                rel_of(model, chain[0]), line, col, RULE_ID, chain[0], chain[-1],
                f"group `{g}` imports group `{h}` through a chain: {chain_text(chain)}",
            ))
    return findings


def _shared(spec: GroupsSpec) -> str:
    if not spec.shared_modules:
        return "`shared_modules`"
    return ", ".join(f"`{m}`" for m in spec.shared_modules)


def needs(spec: GroupsSpec, config) -> dict:
    """What the scan must find for this rule (`engine.records.NEEDS`): the edges into the groups'
    package and the chains to it, which stop at a higher layer."""
    return {"edges_named": top_packages(spec), "closure_stop": higher_layers(config)}
