"""Helper code, not a rule: what several rules share (positions of graph edges, chain rendering)."""

from __future__ import annotations

from contracts.engine.files import read_regular
from contracts.engine.resolve import line_holding, physical_lines

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:
    from contracts.engine.model import Model


def rel_of(model: Model, module: str) -> str:
    f = model.modules.get(module)
    return f.rel if f else module.replace(".", "/") + ".py"


def col_of(model: Model, module: str, line: int, contents: str | None = None) -> int:
    """1-based column of the first non-blank character of `line` in `module`'s file. `contents`:
    a piece of that line (the edge's text, as grimp reports it), by which the line is found
    without splitting the file up to it (`line_holding`)."""
    f = model.modules.get(module)
    if f is None or line < 1:
        return 1
    cache = model.__dict__.setdefault("_texts", {})
    data = cache.get(f.path)
    if data is None:
        try:
            data = cache[f.path] = read_regular(f.path)[0]
        except OSError:
            data = cache[f.path] = b""
    start = line_holding(data, line, contents) if contents else None
    if start is not None:
        end = data.find(b"\n", start)
        raw = data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
    elif b"\r" in data:  # Python's line breaks (\r\n, \r, \n): the slow, exact path, once a file
        split = model.__dict__.setdefault("_physical_lines", {})
        lines = split.get(f.path)
        if lines is None:
            lines = split[f.path] = physical_lines(data)
        raw = lines[line - 1] if line <= len(lines) else ""
    else:  # split only as far as the line: imports are near the top (no split of the whole file)
        pieces = data.split(b"\n", line)
        raw = pieces[line - 1].decode("utf-8", "replace") if line <= len(pieces) else ""
    return len(raw) - len(raw.lstrip()) + 1


def chain_text(chain) -> str:
    return " -> ".join(f"`{m}`" for m in chain)


def adjacency_of(edges) -> dict[str, list]:
    """importer -> sorted imported modules; `chains_from` takes it in place of `edges`."""
    adjacency: dict[str, list] = {}
    for e in edges:
        adjacency.setdefault(e.importer, []).append(e.imported)
    for targets in adjacency.values():
        targets.sort()
    return adjacency


def chains_from(edges, sources: set[str], target_key, passable) -> dict:
    """Shortest chain from any of `sources` to each target, by breadth-first search.

    `target_key(module)` -> a key (e.g. the target's group) or None; `passable(module)` -> may a
    chain pass through it. Ties break by sorted module name, so output is deterministic.
    Returns key -> chain (tuple of modules); only chains of length > 2 are searched, since the
    caller removed the direct edges it reports itself.
    """
    adjacency = edges if isinstance(edges, dict) else adjacency_of(edges)
    parent: dict[str, str | None] = {m: None for m in sorted(sources)}
    frontier = sorted(sources)
    found: dict = {}
    while frontier:
        nxt = []
        for m in frontier:
            for t in adjacency.get(m, ()):
                if t in parent:
                    continue
                key = target_key(t)
                if key is not None:
                    if key not in found and parent[m] is not None:
                        chain = [t, m]
                        while parent[chain[-1]] is not None:
                            chain.append(parent[chain[-1]])
                        found[key] = tuple(reversed(chain))
                    continue
                if not passable(t):
                    continue
                parent[t] = m
                nxt.append(t)
        frontier = nxt
    return found


def first_hop(model, chain) -> tuple[int, int]:
    first = model.__dict__.get("_first_line")
    if first is None:  # (importer, imported) -> its first line, built once per model
        first = model.__dict__["_first_line"] = {}
        for e in model.edges:
            key = (e.importer, e.imported)
            if e.line < first.get(key, (e.line + 1,))[0]:
                first[key] = (e.line, e.contents)
    line, contents = first.get((chain[0], chain[1]), (1, None))
    return line, col_of(model, chain[0], line, contents)


def top_packages(spec) -> list[str]:
    """The top-level subpackages holding an `operator_groups` contract's container and shared
    modules (`sglang.kernels.ops` -> `sglang.kernels`): the packages whose edges its rules read."""
    return [".".join(m.split(".")[:2]) for m in (spec.container, *spec.shared_modules)]


def higher_layers(config) -> list[str]:
    """The packages above the lowest layer of every configured `layer` contract, whichever
    contracts run: a chain stops there (`layer` reports the first hop), so the closure need not
    enter them."""
    return [m for spec in config.layers for m in spec.layers[:-1]]
