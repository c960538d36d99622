"""`derive-map --src DIR`: the map read off compat shims in one tree, mid-migration.

Every old module under PREFIX that is a compat shim -- it only re-exports from one module
elsewhere (`from new.place import *`, or `from new.place import a, b`), with `__all__` and
deprecation warnings allowed -- gives `old -> new.place`. A shim of a shim is followed to the end.
Old modules that still hold code (a `def`, a `class`, anything but imports, `__all__` and
deprecation warnings) get a warning: they have not moved yet.
"""

from __future__ import annotations

import ast

from contracts.derive_map.model import Derived, Evidence
from contracts.engine.index import TreeIndex
from contracts.engine.resolve import is_under, resolve_relative

_DEPRECATION_CALLS = {"warn", "warn_explicit", "deprecated", "warn_deprecated"}


def _shim_target(module: str, is_package: bool, tree: ast.Module) -> tuple[set[str], str | None]:
    """({modules it re-exports from}, first line that holds code or None)."""
    targets: set[str] = set()
    for i, stmt in enumerate(tree.body):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                and isinstance(stmt.value.value, str):
            continue  # docstring
        if isinstance(stmt, ast.ImportFrom):
            if stmt.module == "__future__":
                continue
            base = resolve_relative(module, is_package, stmt.level or 0, stmt.module)
            if base is not None:
                targets.add(base)
            continue
        if isinstance(stmt, (ast.Import, ast.Pass, ast.Delete)):
            continue  # `import warnings`, `del _x`
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            assigned = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if all(isinstance(t, ast.Name) and t.id == "__all__" for t in assigned):
                continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in _DEPRECATION_CALLS:
                continue
        kind = type(stmt).__name__
        label = f"{kind} `{stmt.name}`" if hasattr(stmt, "name") else kind
        return targets, f"line {stmt.lineno}: {label}"
    return targets, None


def shim_map(src: str, prefix: str) -> Derived:
    """One line per compat shim under `prefix` in the tree at `src`."""
    root = prefix.split(".", 1)[0]
    tree = TreeIndex(src, (root,))
    modules = sorted(m for m in tree.files if is_under(m, prefix))
    result = Derived(modules)
    direct: dict[str, str] = {}
    for module in modules:
        f = tree.files[module]
        parsed = tree.tree(module)
        if parsed is None:
            result.unmatched[module] = "cannot be parsed"
            result.warnings.append(f"`{module}` ({f.rel}) cannot be parsed")
            continue
        targets, code = _shim_target(module, f.is_package, parsed)
        if code is not None:
            result.unmatched[module] = f"still holds code ({code}); not a shim"
            result.warnings.append(f"`{module}` ({f.rel}) still holds code ({code}): it has not moved yet")
        elif not targets:
            has_children = any(m != module and is_under(m, module) for m in modules)
            if not has_children:
                result.unmatched[module] = "re-exports nothing"
                result.warnings.append(f"`{module}` ({f.rel}) re-exports nothing")
        elif len(targets) > 1:
            result.ambiguous[module] = sorted(targets)
        else:
            direct[module] = next(iter(targets))
    # A shim that re-exports another shim: follow it to the module that holds the code.
    for module, target in direct.items():
        seen = [module]
        while is_under(target, prefix) and target in direct and target not in seen:
            seen.append(target)
            target = direct[target]
        if is_under(target, prefix):
            why = (f"re-exports from `{target}`, which is under the removed prefix and "
                   f"{'still holds code' if target in result.unmatched else 'is not a shim to one place'}")
            result.unmatched[module] = why
            result.warnings.append(f"`{module}` {why}")
            continue
        if target not in tree.files:
            result.warnings.append(f"`{module}` re-exports from `{target}`, which is not under "
                                   f"{src}; check it")
        result.mapped[module] = target
        result.evidence[module] = Evidence("shim")
    return result
