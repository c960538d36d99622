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
    for node in ast.walk(tree):
        for name in _bound_by(node):
            if name and name not in bound:
                bound[name] = getattr(node, "lineno", 0)
    return bound


def _bound_by(node: ast.AST):
    """The names `node` itself binds (None where a pattern or handler binds none)."""
    if isinstance(node, ast.Name):
        return (node.id,) if isinstance(node.ctx, (ast.Store, ast.Del)) else ()
    if isinstance(node, ast.arg):
        return (node.arg,)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs,
                         ast.MatchStar)):
        return (node.name,)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname if alias.asname else alias.name for alias in node.names
                if alias.asname or (isinstance(node, ast.ImportFrom) and alias.name != "*")]
    if isinstance(node, ast.MatchMapping):
        return (node.rest,)
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return node.names
    return ()


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
    targets = {module: fixable[key].replacement for key, module in survey.bare if key in fixable}
    if not targets:
        return {}, {}
    reasons: dict[str, str] = {}  # the first reason found for a module is the one given
    for module, reason in _binding_reasons(targets, bound):
        reasons.setdefault(module, reason)
    all_bare = {m for _, m in survey.bare}
    for chain in survey.chains:
        root = root_of(chain.dotted)
        owner = owner_of(chain.dotted, all_bare)
        for module, new in targets.items():
            reason = _chain_reason(chain, root, owner, module, new, survey.loaded, removed)
            if reason is not None:
                reasons.setdefault(module, reason)
    return {m: new for m, new in targets.items() if m not in reasons}, reasons


def owner_of(dotted: str, bare: set[str]) -> str | None:
    """The bare-imported module a chain belongs to: the longest of `bare` it starts with."""
    owners = [m for m in bare if is_under(dotted, m)]
    return max(owners, key=len) if owners else None


def _binding_reasons(targets: dict[str, str], bound: dict[str, int]):
    """(module, reason) for each bare import whose old or new first name the file binds some
    other way: a chain starting with that name may not mean the module."""
    for module, new in targets.items():
        old_root, new_root = root_of(module), root_of(new)
        if old_root in bound:
            yield module, (f"`{old_root}` is also bound at line {bound[old_root]}, so a "
                           f"`{module}.…` chain may not mean the module")
        if new_root != old_root and new_root in bound:
            yield module, (f"the new path starts with `{new_root}`, which this file binds at line "
                           f"{bound[new_root]}")


def _chain_reason(chain: Chain, root: str, owner: str | None, module: str, new: str, loaded: set[str],
                  removed: tuple[str, ...]) -> str | None:
    """Why `chain` (whose longest bare-imported module is `owner`) forbids rewriting `import
    module` to `new`, or None: it assigns the module itself, reaches the removed path around an
    imported module, uses the first name the new import would no longer bind, or reaches a
    module this file never imports."""
    if root_of(module) != root:
        return None
    if owner == module:
        if chain.dotted == module and chain.context in (ExpressionContext.STORE, ExpressionContext.DEL):
            return f"line {chain.line} assigns to or deletes `{module}`"
        return None
    if owner is not None:
        return None  # a chain of another bare import: that finding's business
    if any(is_under(chain.dotted, p) for p in removed):
        return (f"`{chain.dotted}` (line {chain.line}) reaches the removed path, "
                f"but not through a module this file imports")
    if root_of(new) != root:
        return (f"`{chain.dotted}` (line {chain.line}) uses `{root}`, which the "
                f"rewritten import (`{new}`) would no longer bind")
    if chain.dotted != root and not any(is_under(chain.dotted, m) or is_under(m, chain.dotted) for m in loaded
                                        if not any(is_under(m, p) for p in removed)):
        return (f"`{chain.dotted}` (line {chain.line}) uses the name `{root}` this "
                f"import binds, through a module this file does not import")
    return None
