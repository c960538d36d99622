"""`derive-map --before --after`: where each module under PREFIX went, matched by content.

Like git's rename detection, a module is matched to the module of the `after` tree (outside
PREFIX) that holds its code, whatever it is called now. Candidates are

- modules of the same name (`hicache`), or with upstream's `_jit_` prefix (`_jit_hicache`);
- modules named after the *folded* package path (`pkg/minimax_m3/rmsnorm.py` ->
  `minimax_m3_rmsnorm`, and for deeper paths every tail: `a/b/c.py` -> `a_b_c`, `b_c`);
- any module that defines one of its top-level definitions (found through a text index).

Each candidate gets a **score**: the share of the old module's top-level definitions (`def`,
`class`, assigned names; weighted by their size in characters) that the candidate defines *with the
same body* -- a same-named definition counts with its body similarity when that is at least
`SAME_DEFINITION` (the normalized bodies of `contracts.engine.index`), and not at all below it.
So one shared common name (`get_version`, a different function) carries nothing.

- A candidate needs a score of at least `MODULE_MIN` (git's default rename threshold: half).
- A candidate found only by content also needs `MIN_SHARED` same definitions (or, for a module
  of one definition, an identical one): one copied helper does not make a move. A plain value
  (`N = 36`, `_STATE = None`) is not one of them: two modules can hold the same by chance.
- Candidates within `TIE_MARGIN` of the best are a tie. A tie is broken only by a name (exactly
  one of the tied candidates has the same or folded name); otherwise all are listed as
  `# ambiguous:` with their scores. Below the threshold: `# unmatched:` with the best scores.
- A module without definitions of its own (a package `__init__` that re-exports, a module of
  imports) is scored on name candidates only: by the share of its re-exported names the
  candidate binds, or, for a package, the share of its mapped submodules that went under it.

A module's line is a *prefix* for every module under it without a line of its own. A line that
would send such a module (unmatched, ambiguous) to a place that does not exist in `after` is
withheld (printed as a comment), and its names are mapped one by one instead: a line derive-map
prints is right for every module it covers.
"""

from __future__ import annotations

import contextlib
import gc

from contracts.derive_map.model import (
    COMMON_NAME,
    MIN_SHARED,
    MODULE_MIN,
    SAME_DEFINITION,
    SAME_SIGNATURE,
    TIE_MARGIN,
    Derived,
    Evidence,
)
from contracts.derive_map.names import map_names
from contracts.engine.index import Definition, TreeIndex, plain_value, same_definition
from contracts.engine.resolve import is_under, is_under_any
from contracts.engine.trees import top_level_names

MAX_CONTENT_CANDIDATES = 20  # the candidates by content scored per module, most shared names first
JIT_PREFIX = "_jit_"  # upstream's name for a moved JIT wrapper: hicache -> _jit_hicache


def _own(defs: dict[str, Definition]) -> dict[str, Definition]:
    return {n: d for n, d in defs.items() if not (n.startswith("__") and n.endswith("__"))}


def folded_names(module: str, prefix: str) -> list[str]:
    """`prefix.a.b.c` -> [`a_b_c`, `b_c`]: the package path folded into the module name."""
    parts = module[len(prefix) + 1:].split(".") if module != prefix else []
    return ["_".join(parts[i:]) for i in range(len(parts) - 1)]


def score(mine: dict[str, Definition], theirs: dict[str, Definition]) -> tuple[float, tuple]:
    """(share of `mine`'s size that `theirs` defines with the same body, the shared evidence)."""
    total = sum(d.size for d in mine.values())
    if not total:
        return 0.0, ()
    got = 0.0
    shared = []
    for name, d in mine.items():
        other = theirs.get(name)
        if other is None:
            continue
        s = same_definition(d, other, SAME_DEFINITION, SAME_SIGNATURE)
        if s:
            got += s * d.size
            shared.append((name, s))
    return got / total, tuple(sorted(shared, key=lambda x: (-x[1], x[0])))


def _bare(name: str) -> str:
    """`_spam`, `spam_`, `__spam` -> `spam`: a module made private (or public) keeps its name."""
    return name.strip("_") or name


def _too_few(mine: dict[str, Definition], shared) -> bool:
    """Is what a content candidate shares with the module too little to list it: fewer than
    `MIN_SHARED` definitions that are not plain values (a plain value, `N = 36`, shared by chance
    is no evidence: `names.py`), unless the module's only definition is the same there?"""
    evidence = [n for n, s in shared if not plain_value(mine[n])]
    return len(evidence) < MIN_SHARED and not (len(mine) == 1 and evidence and shared[0][1] == 1.0)


def _best(eligible: list, named: dict) -> list:
    """The candidates within `TIE_MARGIN` of the best score; of a tie, the one named like the
    module when it is the only such."""
    top = eligible[0][1].score
    tied = [(c, e) for c, e in eligible if e.score >= top - TIE_MARGIN]
    if len(tied) > 1:
        by_name = [(c, e) for c, e in tied if c in named]
        if len(by_name) == 1:
            return by_name
    return tied


class _Matcher:
    def __init__(self, old: TreeIndex, new: TreeIndex, prefixes: tuple[str, ...]) -> None:
        self.old, self.new, self.prefixes = old, new, frozenset(prefixes)
        self.by_name: dict[str, set[str]] = {}
        self.by_bare: dict[str, set[str]] = {}
        for m in sorted(set(new.files) | new.compiled):
            if is_under_any(m, self.prefixes):
                continue  # still there: not where anything moved to
            last = m.rsplit(".", 1)[-1]
            self.by_name.setdefault(last, set()).add(m)
            self.by_bare.setdefault(_bare(last), set()).add(m)
            if last.startswith(JIT_PREFIX) and len(last) > len(JIT_PREFIX):
                self.by_name.setdefault(last[len(JIT_PREFIX):], set()).add(m)

    def outside(self, modules) -> set[str]:
        return {m for m in modules if not is_under_any(m, self.prefixes)}

    def prefix_of(self, module: str) -> str:
        parts = module.split(".")
        return next((p for i in range(len(parts), 0, -1) if (p := ".".join(parts[:i])) in self.prefixes), module)

    def named(self, module: str) -> dict[str, str]:
        """Candidates by name: the same name, or a folded one -> "same name" / "folded name"."""
        last = module.rsplit(".", 1)[-1]
        same = self.by_name.get(last, set())
        folded = set().union(*(self.by_name.get(f, set()) for f in folded_names(module, self.prefix_of(module))))
        # `foo` -> `_foo` (made private) or back: a folded name too, when it is the only such.
        bare = self.by_bare.get(_bare(last), set()) - same
        if len(bare) == 1:
            folded |= bare
        return {c: ("same name" if c in same else "folded name") for c in same | folded}

    def evidence(self, module: str, c: str, how: str, mine, children) -> Evidence | None:
        """How far candidate `c` holds `module`'s code (None: a content candidate too weak to list)."""
        s, shared = score(mine, _own(self.new.definitions(c))) if mine else (0.0, ())
        if how == "content" and _too_few(mine, shared):
            return None
        best = Evidence(how, s, shared)
        if module in self.old.compiled and c in self.new.compiled:
            best = Evidence(f"{how}, compiled", 1.0)  # no code to compare: the name is the evidence
        elif how != "content" and s < MODULE_MIN and mine:
            best = self._named_evidence(mine, c, how, shared) or best
        if how != "content" and not mine:
            alt = self._without_definitions(module, c, children)
            if alt is not None:
                best = alt
        return best

    def _named_evidence(self, mine, c: str, how: str, shared) -> Evidence | None:
        """A same- or folded-name candidate that does not define the code itself: one that
        re-exports it (`lib._testing`, whose submodules define it: the public home), or one that
        defines the same functions and classes with changed bodies (moved and edited at once)."""
        total = sum(d.size for d in mine.values()) or 1
        # Only a package re-exporting from its own submodules: a module that imports the code
        # from elsewhere is a user of it, not its home.
        bound = [(n, same_definition(d, there[1], SAME_DEFINITION, SAME_SIGNATURE))
                 for n, d in mine.items() if self.new.is_package(c) and not plain_value(d)
                 and (there := self.new.origin(c, n)) is not None and is_under(there[0], c)]
        bound = [(n, v) for n, v in bound if v]
        share = sum(mine[n].size * v for n, v in bound) / total
        if len(bound) >= min(MIN_SHARED, len(mine)) and share >= MODULE_MIN:
            return Evidence(f"{how}, re-exported", share, tuple(sorted(bound, key=lambda x: (-x[1], x[0]))))
        if _same_names(mine, self.new.definitions(c)):
            # Moved and edited at once (a parameter added to each class): the same set of
            # functions and classes under the same or a folded name is the evidence.
            return Evidence(f"{how}, same definitions", MODULE_MIN, shared)
        return None

    def match(self, module: str, result: Derived) -> None:
        named = self.named(module)
        mine = _own(self.old.definitions(module))
        children = {m: t for m, t in result.mapped.items() if m.rpartition(".")[0] == module}
        scored: dict[str, Evidence] = {}
        for c in sorted(set(named) | self._by_content(mine)):
            best = self.evidence(module, c, named.get(c, "content"), mine, children)
            if best is not None:
                scored[c] = best
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1].score, kv[0]))
        result.scores[module] = [(c, e.score) for c, e in ranked[:5]]
        eligible = [(c, e) for c, e in ranked if e.score >= MODULE_MIN]
        if not eligible:
            result.unmatched[module] = self._why_unmatched(module, mine, ranked, bool(children))
            return
        tied = _best(eligible, named)
        if len(tied) == 1:
            result.mapped[module] = tied[0][0]
            result.evidence[module] = tied[0][1]
        else:
            result.ambiguous[module] = [c for c, _ in tied]

    def _by_content(self, mine: dict[str, Definition]) -> set[str]:
        """Modules of `after` whose text defines several of `mine`'s names (or its only one).
        A name defined in more than `COMMON_NAME` modules (`main`, `logger`) is no evidence."""
        hits: dict[str, int] = {}
        for name, d in mine.items():
            if plain_value(d):
                continue
            where = self.outside(self.new.defining(name))
            if len(where) > COMMON_NAME:
                continue
            for m in where:
                hits[m] = hits.get(m, 0) + 1
        need = 1 if len(mine) == 1 else MIN_SHARED
        ranked = sorted((m for m, h in hits.items() if h >= need), key=lambda m: (-hits[m], m))
        return set(ranked[:MAX_CONTENT_CANDIDATES])

    def _without_definitions(self, module: str, c: str, children: dict[str, str]) -> Evidence | None:
        """Score a name candidate of a module with no definitions of its own (or too few that
        moved): by where its submodules went, or by the names it re-exports."""
        out = None
        if self.old.is_package(module) and children:
            support = sum(1 for t in children.values() if is_under(t, c))
            out = Evidence("submodules", support / len(children),
                           tuple((m.rsplit(".", 1)[-1], 1.0) for m, t in sorted(children.items())
                                 if is_under(t, c)))
        exported = self._re_exported(module)
        if exported:
            bound = [n for n in exported if self._knowably_binds(c, n)]
            e = Evidence("re-exported names", len(bound) / len(exported), tuple((n, 1.0) for n in bound))
            if out is None or e.score > out.score:
                out = e
        return out

    def _re_exported(self, module: str) -> list[str]:
        """The names a module of imports passes on: those it imports from a definition in the
        tree, and the public names of each module it star-imports (`from lib._testing import *`,
        the whole body of a deprecated alias module)."""
        names = self.old.names(module)
        out = {n for n in names.imported if not n.startswith("__") and self.old.origin(module, n) is not None}
        for star in names.stars:
            if star in self.old.files:
                out |= {n for n in self.old.names(star).bound() | set(self.old.definitions(star)) if not n.startswith("_")}
        return sorted(out)

    def _knowably_binds(self, module: str, name: str) -> bool:
        """`module` of the after tree binds `name`, as read from its source: an extension module,
        a module-level `__getattr__` or a file too large to parse may bind anything, which is no
        evidence of a move."""
        if module in self.new.compiled:
            return False
        if module in self.new.files and (self.new.names(module).dynamic or not self.new.names(module).parsed):
            return False
        return self.new.binds(module, name)

    def _why_unmatched(self, module, mine, ranked, had_children) -> str:
        last = module.rsplit(".", 1)[-1]
        if ranked:
            best = ", ".join(f"`{c}` ({e.how}, {e.score:.0%})" for c, e in ranked[:3])
            return (f"no module holds at least {MODULE_MIN:.0%} of its code; best: {best}")
        if not mine:
            what = "where its submodules went does not confirm one" if had_children else \
                "it has no top-level definitions to look for"
            return f"no module named `{last}` (or a folded name) in the after tree, and {what}"
        elsewhere: dict[str, list[str]] = {}  # module -> the definitions it has with the same body
        for name, d in sorted(mine.items()):
            for m, other in self.new.definitions_of(name):
                if not is_under_any(m, self.prefixes) and same_definition(d, other, SAME_DEFINITION, SAME_SIGNATURE):
                    elsewhere.setdefault(m, []).append(name)
        if not elsewhere:
            return (f"none of its {len(mine)} definitions is defined, with the same body, by a module "
                    f"of the after tree")
        most, names = min(elsewhere.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        return (f"no module of the after tree defines enough of its {len(mine)} definitions with the same "
                f"body: at most {len(names)}, in `{most}` ({', '.join(f'`{n}`' for n in names[:5])})")


def _same_names(mine: dict[str, Definition], theirs: dict[str, Definition]) -> bool:
    """Do both modules define the same functions and classes (two at least; plain values, which
    two modules can share by chance, aside)?"""
    code = {n for n, d in mine.items() if not plain_value(d)}
    return len(code) >= MIN_SHARED and code == {n for n, d in _own(theirs).items() if not plain_value(d)}


def moved_map(before: str, after: str, prefix: str | tuple[str, ...] | None) -> Derived:
    """Match every module under `prefix` (one or several; None: every module of `before` that
    `after` does not have) in `before` to the module in `after` it moved to, then every name
    those modules bind to the module that now defines it."""
    roots = _roots(before, after, prefix)
    with _no_cycle_collection():
        old = TreeIndex(before, roots)
        new = TreeIndex(after, roots)
        return derive(old, new, prefix)


@contextlib.contextmanager
def _no_cycle_collection():
    """The indexes allocate many small objects (definitions, name sets) and no cycles worth
    collecting; the collector's passes over them took a tenth of a whole release's run."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _roots(before: str, after: str, prefix) -> tuple[str, ...]:
    if prefix is None:
        return tuple(sorted(set(top_level_names(before)) & set(top_level_names(after))))
    prefixes = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    return tuple(sorted({p.split(".", 1)[0] for p in prefixes}))


def gone_prefixes(old: TreeIndex, new: TreeIndex, within: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The modules of `old` that `new` does not have, each under the highest such package only
    (`a.b` for `a.b` and `a.b.c`), optionally only those under `within`."""
    gone = sorted(m for m in set(old.files) | old.compiled
                  if not new.has_module(m) and (not within or is_under_any(m, within)))
    out: list[str] = []
    for m in gone:
        if not out or not is_under(m, out[-1]):
            out.append(m)
    return tuple(out)


def derive(old: TreeIndex, new: TreeIndex, prefix: str | tuple[str, ...] | None) -> Derived:
    """`moved_map` over indexes already built."""
    if prefix is None:
        prefixes = gone_prefixes(old, new)
    else:
        # A prefix `after` still has stands for its modules that `after` does not have: what is
        # still there did not move (mapping it sent `pkg.sub.a:MAX_INT` to an unrelated module).
        asked = (prefix,) if isinstance(prefix, str) else tuple(dict.fromkeys(prefix))
        kept = tuple(p for p in asked if new.has_module(p))
        prefixes = tuple(p for p in asked if p not in kept) + (gone_prefixes(old, new, kept) if kept else ())
    gone = frozenset(prefixes)
    modules = sorted(m for m in set(old.files) | old.compiled if is_under_any(m, gone))
    result = Derived(modules)
    matcher = _Matcher(old, new, prefixes)
    # Deepest first: a package is confirmed by where its submodules went.
    for module in sorted(modules, key=lambda m: (-m.count("."), m)):
        matcher.match(module, result)
    _withhold_unsafe_prefixes(result, new)
    map_names(result, old, new, prefixes)
    return result


def _withhold_unsafe_prefixes(result: Derived, new: TreeIndex) -> None:
    """Withhold every line that, as a prefix, sends a module that did not move with it to a
    module that does not exist; repeat (withholding one line changes where the next applies)."""
    changed = True
    while changed:
        changed = False
        for module in sorted(result.modules):
            if module in result.mapped:
                continue
            target = result.effective(module)
            if target is None or new.has_module(target):
                continue
            printed = result.printed()
            owner = max((m for m in printed if is_under(module, m) and m != module), key=len)
            result.withheld[owner] = (f"as a prefix it would send `{module}` (not matched: "
                                      f"{'ambiguous' if module in result.ambiguous else 'unmatched'}) "
                                      f"to `{target}`, which does not exist")
            changed = True
