"""Per name: for every name an old module binds, the module of `after` that now defines it.

A statement imports names, not modules: `from old.pkg import f` needs the module where `f` lives
now, which is not always where `old.pkg`'s line points (the package re-exported `f` from a
submodule that moved elsewhere; the module was split; the module matched nothing but `f` did).
For each name `N` that a module `M` under PREFIX binds -- defines, or re-exports from another
module of the tree (followed to the definition) --

- if the printed module lines send `M` to a module that binds `N` with the same definition (body
  similarity at least `SAME_DEFINITION`), nothing is needed;
- else the modules of `after` (outside PREFIX) that define `N` with the same definition are
  candidates; the one the defining module itself moved to wins, else the best; a tie (within
  `TIE_MARGIN`) is listed, never guessed. The result is a line `M:N -> new.module:N`.
- a plain value (`N = 36`, `_STATE: Optional[_State] = None`, `N = {}`) is the same definition
  only in a module that holds other code of the defining module (where it moved, or a candidate
  the module matcher scored): the same literal elsewhere is a coincidence (two unrelated modules
  may each have their own `_STATE = None`, for different state).

Names imported from outside the tree (`from typing import Optional`) are not mapped: they were
never the moved code.
"""

from __future__ import annotations

from collections.abc import Collection

from contracts.derive_map.model import SAME_DEFINITION, SAME_SIGNATURE, TIE_MARGIN, Derived, Evidence
from contracts.engine.index import Definition, TreeIndex, plain_value, same_definition
from contracts.engine.resolve import is_under_any


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def map_names(result: Derived, old: TreeIndex, new: TreeIndex, prefix: str | tuple[str, ...]) -> None:
    prefix = frozenset((prefix,) if isinstance(prefix, str) else prefix)
    for module in result.modules:
        # A module's own definitions; for a package, also the names it re-exports (a plain
        # module's imports are its own business, not its interface).
        wanted = set(old.definitions(module))
        if old.is_package(module):
            wanted |= set(old.names(module).imported)
        wanted = sorted(n for n in wanted if not _dunder(n))
        for name in wanted:
            found = old.origin(module, name)
            if found is None:
                continue  # from outside the tree, or a submodule (a module line's business)
            home, definition = found
            target = result.effective(module)
            if target is not None and _same_here(new, target, name, definition, SAME_DEFINITION):
                continue
            place_name(result, new, prefix, module, name, home, definition, SAME_DEFINITION, TIE_MARGIN)


def _same_here(new: TreeIndex, module: str, name: str, definition: Definition, threshold: float) -> bool:
    here = new.definitions(module).get(name)
    if here is not None:  # defined there at column 0: its own definition (read off the text, no parse)
        return same_definition(definition, here, threshold, SAME_SIGNATURE) > 0
    if not new.binds(module, name):
        return False
    there = new.origin(module, name)
    if there is None:
        return not new.has_module(f"{module}.{name}")  # bound, but from outside the tree
    return same_definition(definition, there[1], threshold, SAME_SIGNATURE) > 0


def place_name(result: Derived, new: TreeIndex, prefix: Collection[str], module: str, name: str, home: str,
               definition: Definition, threshold: float, margin: float) -> None:
    """Record in `result` where `name` of `module` (defined in `home` as `definition`) went: the
    module of `new` outside `prefix` with the same definition -- the one `home` moved to, else
    the best -- or why none is (unmatched), or the tie (ambiguous)."""
    key = (module, name)
    candidates = _same_definitions(new, prefix, definition, threshold)
    if not candidates:
        result.names_unmatched[key] = _why_none(result, new, prefix, module, name, definition)
        return
    # The module the defining module moved to wins; then the best; then a tie is listed.
    moved_home = result.mapped.get(home) or result.effective(home)
    if plain_value(definition):
        candidates, why = _where_its_code_went(result, home, moved_home, definition, candidates)
        if why is not None:
            result.names_unmatched[key] = why
            return
    pick = next(((m, s) for m, s in candidates if m == moved_home), None)
    if pick is None:
        tied = [(m, s) for m, s in candidates if s >= candidates[0][1] - margin]
        if len(tied) > 1:
            result.names_ambiguous[key] = tied
            return
        pick = candidates[0]
    result.names[key] = (pick[0], definition.name)
    result.name_evidence[key] = Evidence("definition", pick[1], ((definition.name, pick[1]),))


def _where_its_code_went(result: Derived, home: str, moved_home: str | None, definition: Definition,
                         candidates: list) -> tuple[list, str | None]:
    """The candidates for a plain value (`N = 36`): only where its module's code went -- the
    module it moved to, or a candidate the module matcher scored (same or folded name, or
    several same definitions) -- the same literal elsewhere being a coincidence; with none, why."""
    related = {moved_home} | {c for c, s in result.scores.get(home, ()) if s > 0}
    if not any(m in related for m, _ in candidates):
        shown = ", ".join(f"`{m}`" for m, _ in candidates[:3])
        return [], (f"{shown} define{'s' if len(candidates) == 1 else ''} the same plain value "
                    f"(`{definition.lines[0]}`), but none holds other code of `{home}`: no evidence that "
                    f"`{definition.name}` went there")
    return [(m, s) for m, s in candidates if m in related], None


def _same_definitions(new: TreeIndex, prefix: Collection[str], definition: Definition,
                      threshold: float) -> list[tuple[str, float]]:
    """(module, similarity) of each module of `new` outside `prefix` that defines the same
    `definition`, best first (then by name)."""
    candidates = []
    for m, d in new.definitions_of(definition.name):
        if is_under_any(m, prefix):
            continue
        s = same_definition(definition, d, threshold, SAME_SIGNATURE)
        if s:
            candidates.append((m, s))
    candidates.sort(key=lambda x: (-x[1], x[0]))
    return candidates


def _why_none(result: Derived, new: TreeIndex, prefix: Collection[str], module: str, name: str,
              definition: Definition) -> str:
    """Why no module of `new` has `name`'s definition: where the module went it changed, it is
    defined elsewhere with another body, or nowhere."""
    near = [m for m, _ in new.definitions_of(definition.name) if not is_under_any(m, prefix)]
    target = result.effective(module)
    if target is not None and new.binds(target, name):
        return (f"`{target}` still has a `{name}`, but not the same definition "
                f"(its body or parameters changed): check its callers")
    if near:
        return f"`{definition.name}` is defined in {', '.join(f'`{m}`' for m in near[:3])}, but with another body"
    return f"no module of the after tree defines `{definition.name}`"
