"""`derive-map --src DIR`: the map read off compat shims in one tree, mid-migration.

Every old module under PREFIX that is a compat shim -- it only re-exports from one module
elsewhere (`from new.place import *`, or `from new.place import a, b`), with `__all__` and
deprecation warnings allowed -- gives `old -> new.place`. Two more real shim styles count: a
star import beside a deprecation helper imported from elsewhere and called
(`from pkg._compat import deprecated_module; deprecated_module(__name__)`: the helper's module is
not a target), and a module-level `__getattr__` that warns and returns the new module's attribute
(`return getattr(_new, name)` with `_new` an imported module, or `import_module("new.place")`;
reported with a warning, since the names it serves are read off the code, not declared). A shim of a shim is followed to the end.
Old modules that still hold code (a `def`, a `class`, anything but imports, `__all__` and
deprecation warnings) get a warning: they have not moved yet.
"""

from __future__ import annotations

import ast

from contracts.derive_map.model import Derived, Evidence
from contracts.engine.index import TreeIndex
from contracts.engine.resolve import is_under, resolve_relative

_DEPRECATION_CALLS = {"warn", "warn_explicit", "deprecated", "warn_deprecated"}


class _Shim:
    """What one module's top-level statements re-export, read as a shim (see the module
    docstring); `code` is the first line that holds code, or None."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.module, self.is_package = module, is_package
        self.star: set[str] = set()  # `from new.place import *`
        self.named: set[str] = set()  # `from new.place import a, b`
        self.helpers: set[str] = set()  # modules of names the shim calls (a deprecation helper)
        self.aliases: dict[str, str] = {}  # `import new.place as _p`: _p -> new.place
        self.imported: dict[str, str] = {}  # name -> the module it was imported from
        self.dynamic: set[str] = set()  # what a module-level `__getattr__` reads its names from
        self.code: str | None = None

    def targets(self) -> set[str]:
        """A star import or a `__getattr__` names the new place; a deprecation helper's module
        is not one."""
        return self.star or self.dynamic or (self.named - self.helpers)

    def read(self, tree: ast.Module) -> _Shim:
        for i, stmt in enumerate(tree.body):
            if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                continue  # docstring
            if not self._allowed(stmt):
                kind = type(stmt).__name__
                label = f"{kind} `{stmt.name}`" if hasattr(stmt, "name") else kind
                self.code = f"line {stmt.lineno}: {label}"
                break
        return self

    def _allowed(self, stmt) -> bool:
        if isinstance(stmt, ast.ImportFrom):
            self._from(stmt)
            return True
        if isinstance(stmt, ast.Import):  # `import warnings`; `import new.place as _p` for `__getattr__`
            self.aliases.update({a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                                 for a in stmt.names})
            return True
        if isinstance(stmt, (ast.Pass, ast.Delete)):
            return True
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            assigned = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            return all(isinstance(t, ast.Name) and t.id == "__all__" for t in assigned)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            return self._call(stmt.value)
        if isinstance(stmt, ast.FunctionDef) and stmt.name in ("__getattr__", "__dir__"):
            self._getattr(stmt)
            return True
        return False

    def _from(self, stmt: ast.ImportFrom) -> None:
        if stmt.module == "__future__":
            return
        base = resolve_relative(self.module, self.is_package, stmt.level or 0, stmt.module)
        if base is None:
            return
        if any(a.name == "*" for a in stmt.names):
            self.star.add(base)
            return
        self.named.add(base)
        self.imported.update({a.asname or a.name: base for a in stmt.names})

    def _call(self, call: ast.Call) -> bool:
        """A deprecation warning, or a call of an imported helper (`_deprecated(__name__)`)."""
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in _DEPRECATION_CALLS:
            return True
        if name in self.imported:
            self.helpers.add(self.imported[name])
            return True
        return False

    def _getattr(self, func: ast.FunctionDef) -> None:
        """`return getattr(_p, name)` with `_p` an imported module, or `import_module("new.place")`."""
        for node in ast.walk(func):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            first = node.args[0]
            if callee == "getattr" and isinstance(first, ast.Name):
                target = self.aliases.get(first.id) or (
                    f"{self.imported[first.id]}.{first.id}" if first.id in self.imported else None)
                if target:
                    self.dynamic.add(target)
            elif callee == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str):
                self.dynamic.add(first.value)


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
        shim = _Shim(module, f.is_package).read(parsed)
        targets, code = shim.targets(), shim.code
        if shim.dynamic and code is None:
            result.warnings.append(f"`{module}` ({f.rel}) is a module-level `__getattr__` shim: read as "
                                   f"re-exporting from {', '.join(f'`{t}`' for t in sorted(shim.dynamic))}")
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
    _follow(result, direct, prefix, tree, src)
    return result


def _follow(result: Derived, direct: dict[str, str], prefix: str, tree: TreeIndex, src: str) -> None:
    """A shim that re-exports another shim: follow it to the module that holds the code."""
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
