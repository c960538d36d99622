"""The survey of a file with a bare `import a.b.c` to fix: its chains, what it binds, and
whether rewriting the import and its chains is exact."""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import ExpressionContext

from contracts.engine.resolve import is_under, resolve_relative
from contracts.findings import Finding
from contracts.fix.syntax import Chain, Key, Positions, chain_nodes, dotted_name, root_of


class Survey(cst.CSTVisitor):
    """First pass: bare `import a.b.c` statements, every dotted chain, what the file imports."""

    def __init__(self, pos: Positions, ctx, module: str, is_package: bool) -> None:
        self.pos, self.ctx, self.module, self.is_package = pos, ctx, module, is_package
        self.bare: list[tuple[Key, str]] = []  # (key, module) of `import a.b.c` without `as`
        self.chains: list[Chain] = []
        self.loaded: set[str] = set()  # modules this file's import statements load
        self._inside: set[int] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = dotted_name(alias.name)
            self.loaded.add(name)
            if alias.asname is None:
                self.bare.append((self.pos.key(node, name), name))
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        base = resolve_relative(self.module, self.is_package, len(node.relative),
                                dotted_name(node.module) if node.module is not None else None)
        if base:
            self.loaded.add(base)
            if not isinstance(node.names, cst.ImportStar):
                self.loaded.update(f"{base}.{a.name.value}" for a in node.names)
        return False

    def _chain(self, node) -> None:
        if id(node) in self._inside or self.ctx.get(node) is None:
            return
        dotted = dotted_name(node)
        if dotted is None:
            return
        nodes = chain_nodes(node)
        self._inside.update(id(n) for n in nodes)
        self.chains.append(Chain(dotted, self.pos.line(node), self.ctx.get(node), nodes))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._chain(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._chain(node)


def bindings(tree: ast.Module) -> dict[str, int]:
    """Names the file binds (first line), other than by `import a.b` (which binds `a` to the
    same top-level package whatever `a.b` is)."""
    bound: dict[str, int] = {}

    def add(name, node):
        if name and name not in bound:
            bound[name] = getattr(node, "lineno", 0)

    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            add(node.id, node)
        elif isinstance(node, ast.arg):
            add(node.arg, node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(node.name, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname:
                    add(alias.asname, node)
                elif isinstance(node, ast.ImportFrom) and alias.name != "*":
                    add(alias.name, node)
        elif isinstance(node, ast.ExceptHandler):
            add(node.name, node)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)):
            add(node.name, node)
        elif isinstance(node, ast.MatchMapping):
            add(node.rest, node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                add(name, node)
    return bound


def bare_import_verdicts(survey: Survey, bound: dict[str, int], fixable: dict[Key, Finding],
                          removed: tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """Decide, per bare-imported module `M` with a replacement, whether `import M` and its chains
    can be rewritten. Returns ({M: new}, {M: reason not to}).

    `import a.b.c` binds `a`; code then reaches the module as `a.b.c.f`. Rewriting the import and
    every chain under `a.b.c` is exact only if `a` means that package everywhere in the file and
    no use of `a` depends on what the old import happened to load. So it is refused when `a` is
    bound any other way (assignment, parameter, `as a`, `def a`, `global a`), when `a.b.c` itself
    is assigned or deleted, when a chain reaches the removed path other than through an imported
    module (`a.b` alone, `a.b.other`), when a chain uses `a` through a module this file never
    imports (`a.other`: it worked only because some import loaded it), and, when the new path
    starts with another name, when `a` is used for anything else or that name is bound.
    """
    targets: dict[str, str] = {}
    for key, module in survey.bare:
        finding = fixable.get(key)
        if finding is not None:
            targets[module] = finding.replacement
    if not targets:
        return {}, {}
    all_bare = {m for _, m in survey.bare}
    reasons: dict[str, str] = {}

    def refuse(module: str, reason: str) -> None:
        reasons.setdefault(module, reason)

    for module, new in targets.items():
        old_root, new_root = root_of(module), root_of(new)
        if old_root in bound:
            refuse(module, f"`{old_root}` is also bound at line {bound[old_root]}, so a "
                           f"`{module}.…` chain may not mean the module")
        if new_root != old_root and new_root in bound:
            refuse(module, f"the new path starts with `{new_root}`, which this file binds at line "
                           f"{bound[new_root]}")
    for chain in survey.chains:
        root = root_of(chain.dotted)
        owners = [m for m in all_bare if is_under(chain.dotted, m)]
        owner = max(owners, key=len) if owners else None
        for module, new in targets.items():
            if root_of(module) != root:
                continue
            if owner == module:
                if chain.dotted == module and chain.context in (ExpressionContext.STORE, ExpressionContext.DEL):
                    refuse(module, f"line {chain.line} assigns to or deletes `{module}`")
                continue
            if owner is not None:
                continue  # a chain of another bare import: that finding's business
            if any(is_under(chain.dotted, p) for p in removed):
                refuse(module, f"`{chain.dotted}` (line {chain.line}) reaches the removed path, "
                               f"but not through a module this file imports")
            elif root_of(new) != root:
                refuse(module, f"`{chain.dotted}` (line {chain.line}) uses `{root}`, which the "
                               f"rewritten import (`{new}`) would no longer bind")
            elif chain.dotted != root and not any(
                    is_under(chain.dotted, m) or is_under(m, chain.dotted) for m in survey.loaded
                    if not any(is_under(m, p) for p in removed)):
                refuse(module, f"`{chain.dotted}` (line {chain.line}) uses the name `{root}` this "
                               f"import binds, through a module this file does not import")
    return {m: new for m, new in targets.items() if m not in reasons}, reasons
