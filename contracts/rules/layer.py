"""`layer`: a lower layer imports a higher one (the kernel layer imports the runtime).

## What it does
With `layers` listing packages highest first (`sglang.srt`, then `sglang.kernels`), flags a
module of a lower layer that imports a higher layer, directly or through a chain (shown).

## Why is this bad?
Callable kernels live in `sglang.kernels`; runtime integration that owns process groups,
buffers or model dispatch stays in `sglang.srt`. A kernel that imports the runtime drags the
whole server into every kernel test and benchmark, and creates import cycles. The stock
`layers` contract cannot check this on upstream sglang: `sglang/srt` has no `__init__.py`, so
grimp never sees it.

## Example
```python
# sglang/kernels/ops/layernorm/rmsnorm_hf.py
from sglang.srt.utils import is_cuda
```

## Use instead
Use (or add to) the shared kernel infra: `from sglang.kernels.jit import has_cuda`.

## Fix safety
Never.

## Options
`layers` (highest first, one per line).
"""

from __future__ import annotations

from contracts.config import LayerSpec
from contracts.engine.resolve import is_under
from contracts.findings import Finding
from contracts.rules._common import (
    adjacency_of,
    chain_text,
    chains_from,
    col_of,
    first_hop,
    higher_layers,
    rel_of,
)

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model

RULE_ID = "layer"
FIX = "never"


def check(model: Model, spec: LayerSpec) -> list[Finding]:
    findings = []
    pairs = [(spec.layers[j], spec.layers[i]) for i in range(len(spec.layers))
             for j in range(i + 1, len(spec.layers))]
    direct = []
    for e in model.edges:
        for lower, higher in pairs:
            if is_under(e.importer, lower) and is_under(e.imported, higher):
                direct.append(e)
                findings.append(Finding(
                    rel_of(model, e.importer), e.line, col_of(model, e.importer, e.line, e.contents), RULE_ID,
                    e.importer, e.imported,
                    f"`{lower}` is a lower layer than `{higher}` and may not import it: "
                    f"`{e.importer}` -> `{e.imported}`",
                ))
    direct_pairs = {(e.importer, e.imported) for e in direct}
    # (one adjacency for every pair of layers, not one per pair)
    adjacency = adjacency_of(e for e in model.edges if (e.importer, e.imported) not in direct_pairs)
    for lower, higher in pairs:
        sources = {m for m in model.graph_modules if is_under(m, lower)}
        chains = chains_from(adjacency, sources,
                             target_key=lambda m, h=higher: h if is_under(m, h) else None,
                             passable=lambda m: True)
        for chain in sorted(chains.values()):
            line, col = first_hop(model, chain)
            findings.append(Finding(
                rel_of(model, chain[0]), line, col, RULE_ID, chain[0], chain[-1],
                f"`{lower}` is a lower layer than `{higher}` and may not import it, even "
                f"through a chain: {chain_text(chain)}",
            ))
    return findings


def needs(spec: LayerSpec, config) -> dict:
    """What the scan must find for this rule (`engine.records.NEEDS`): the edges of the lower
    layers' modules and the chains from them, which stop at a higher layer."""
    return {"edges": spec.layers[1:], "closure_stop": higher_layers(config)}
