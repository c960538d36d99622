"""What a tree binds only when it runs: names and modules no statement of the imported module shows.

Unknown is not missing. These are read off the whole tree's text, and only asked about an import
the statements alone would call missing (so a clean tree never pays for them):

- a name another module assigns onto a module: `setattr(pkg.sub, "X", v)`, `pkg.sub.X = v`,
  also through an alias (`import pkg.sub as s; s.X = v`, `from pkg import sub; sub.X = v`) or
  `sys.modules["pkg.sub"]`: `X` is bound on `pkg.sub`;
- a module that imports from a module setting attributes on a `sys.modules[...]` entry it
  computes (`setattr(sys.modules[cls.__module__], name, v)`, a class decorator exporting names
  into the decorated class's module): its names are unknown;
- a module created by writing into `sys.modules`: a literal key anywhere in the tree
  (`sys.modules["pkg.fake"] = m`, `sys.modules.setdefault("pkg.fake", m)`) makes it and what is
  below it exist; a missing module whose nearest existing ancestor is an extension module (it
  registers its submodules when it is imported) or a module that writes into `sys.modules` under
  a key it computes or installs an import hook (`six.moves`) is unknown. A module replacing
  itself (`sys.modules[__name__] = m`) makes its own names unknown (`index.py`), not its
  submodules: they are still files.
"""

from __future__ import annotations

import ast
import re

from contracts.engine.resolve import resolve_relative

# Writes into `sys.modules` (not reads): an item assignment, `setdefault`, `update`.
SYS_MODULES_WRITE = re.compile(rb"sys\.modules\[[^\]\n]*\]\s*=(?!=)|sys\.modules\.(?:setdefault|update)\(")
_IMPORT_HOOK = re.compile(rb"sys\.(?:meta_path|path_hooks)\.(?:append|insert|extend)\(")
_LITERAL_KEY = re.compile(
    rb"""sys\.modules(?:\[\s*|\.setdefault\(\s*)(["'])([A-Za-z_][\w.]*)\1\s*(?:\]\s*=(?!=)|,)""")
_SELF_KEY = re.compile(rb"sys\.modules\[\s*__name__\s*\]")
# `.name = ...` or `.name: T = ...` (not `==`): a name assigned as an attribute, perhaps of a module.
_ATTRIBUTE_TARGET = re.compile(rb"\.\s*([A-Za-z0-9_\x80-\xff]+)\s*(?::[^=\n]*)?=(?!=)")
_INJECT = re.compile(rb"setattr\(\s*sys\.modules\[\s*[^\]\"'\s]")


def text_facts(text: bytes) -> tuple[tuple[str, ...], bool]:
    """What `Runtime` needs of one file's text: (the module names it writes into `sys.modules` as
    string literals, whether it sets attributes on a `sys.modules` entry it computes). Read with
    each file where the file is read (in the workers), so the whole tree is not read again."""
    if b"sys.modules" not in text:
        return (), False
    keys = tuple(dict.fromkeys(m.group(2).decode() for m in _LITERAL_KEY.finditer(text)))
    return keys, _INJECT.search(text) is not None


def makes_modules(text: bytes) -> bool:
    """Can `text` make modules no file is: a write into `sys.modules` under another key than its
    own name (`sys.modules[__name__] = m` replaces the module itself; its submodules are still
    files), or an import hook?"""
    if b"sys." not in text:
        return False
    if any(_SELF_KEY.match(m.group()) is None for m in SYS_MODULES_WRITE.finditer(text)):
        return True
    return _IMPORT_HOOK.search(text) is not None


class Runtime:
    """The run-time bindings of one tree, over a `ModuleIndex` (computed on first use)."""

    def __init__(self, index) -> None:
        self.index = index
        self._keys: set[str] | None = None
        self._injectors: set[str] | None = None
        self._aliases: dict[str, dict[str, str]] = {}
        self._assigned: dict[str, frozenset[tuple[str, str]]] = {}
        self._targets: dict[str, frozenset[bytes] | None] = {}  # writer -> `_attribute_targets`
        # module -> `text_facts` of its `.py`, for every module of the index (read with the files),
        # or None: then they are searched for in the whole tree's text.
        self.facts: dict[str, tuple[tuple[str, ...], bool]] | None = None

    # ---- modules

    def literal_keys(self) -> set[str]:
        """The module names the tree writes into `sys.modules` as string literals."""
        if self._keys is None and self.facts is not None:
            self._keys = {k for keys, _ in self.facts.values() for k in keys}
        elif self._keys is None:
            self._keys = {k.group(2).decode() for _, k in self.index.matches(_LITERAL_KEY)}
        return self._keys

    def module(self, module: str) -> bool:
        """Might `module`, which no file or directory of the tree is, exist at run time?"""
        keys = self.literal_keys()
        parts = module.split(".")
        for i in range(len(parts), 0, -1):
            prefix = ".".join(parts[:i])
            if prefix in keys:
                return True
            if i < len(parts) and self.index.exists(prefix):
                return self._creates_below(prefix)
        return False

    def _creates_below(self, module: str) -> bool:
        """Can the existing `module` have submodules no file is: an extension module, or a module
        that writes into `sys.modules` or installs an import hook?"""
        if self.index.other.get(module) == "extension":
            return True
        text = self.index.text(module)
        return text is not None and makes_modules(text)

    # ---- names

    def bound(self, module: str, name: str) -> bool:
        """Is `name` bound on `module` at run time by another module (see the module docstring)?"""
        return self._injected(module) or any(
            self._assigns(writer, module, name) for writer in sorted(self.index.modules_containing(name)))

    def _injected(self, module: str) -> bool:
        if self._injectors is None:
            self._injectors = self._injector_modules()
        if not self._injectors:
            return False
        package = self.index.is_package(module)
        for s in self.index.statements_of(module):
            if s.kind in ("from", "import"):
                targets = [resolve_relative(module, package, s.level, s.module)] if s.kind == "from" else s.names
                if any(t in self._injectors for t in targets if t):
                    return True
        return False

    def _injector_modules(self) -> set[str]:
        """The modules that set attributes on a `sys.modules` entry they compute."""
        if self.facts is not None:
            return {m for m, (_, injects) in self.facts.items() if injects}
        return {m for m, _ in self.index.matches(_INJECT)}

    def _assigns(self, writer: str, module: str, name: str) -> bool:
        """Does `writer` assign `name` onto `module`? A name `writer` never assigns as an attribute is
        answered off its text; otherwise its tree is walked once for every name (a search or a walk
        per name would be quadratic in a file of many missing names)."""
        targets = self._attribute_targets(writer)
        if targets is not None and name.encode() not in targets:
            return False
        return (module, name) in self._assignments(writer)

    def _assignments(self, writer: str) -> frozenset[tuple[str, str]]:
        """Every (module, name) that `writer` assigns onto a module (`m.name = v`, `setattr`)."""
        if writer not in self._assigned:
            self._assigned[writer] = self._read_assignments(writer)
        return self._assigned[writer]

    def _read_assignments(self, writer: str) -> frozenset[tuple[str, str]]:
        tree = self.index.parsed(writer)
        if tree is None:
            return frozenset()
        aliases = self._alias_map(writer, tree)
        found = set()
        for node in ast.walk(tree):
            for name in _assigned_names(node):
                target = _onto(node, name, aliases)
                if target is not None:
                    found.add((target, name))
        return frozenset(found)

    def _attribute_targets(self, writer: str) -> frozenset[bytes] | None:
        """The names `writer` may assign as an attribute (`.name = `, `.name: T = `), or None
        where it calls `setattr` (any name): found in one pass per writer, not searched for once
        per name (a file importing N names was searched N times, N times its own size in all)."""
        if writer not in self._targets:
            text = self.index.text(writer) or b""
            names: set[bytes] | None = None
            if b"setattr(" not in text:
                names, pos = set(), 0
                while (m := _ATTRIBUTE_TARGET.search(text, pos)) is not None:
                    names.add(m.group(1))
                    pos = m.start() + 1  # (overlapping: `.a: x.b = 1` assigns `b` too)
            self._targets[writer] = None if names is None else frozenset(names)
        return self._targets[writer]

    def _alias_map(self, writer: str, tree: ast.Module) -> dict[str, str]:
        """Local name -> module, from every import statement of `writer` (a function's too)."""
        if writer not in self._aliases:
            self._aliases[writer] = _aliases(tree, writer, self.index.is_package(writer), self.index.exists)
        return self._aliases[writer]


def _aliases(tree: ast.Module, writer: str, package: bool, exists) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    top = a.name.split(".", 1)[0]
                    out[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(writer, package, node.level or 0, node.module)
            for a in node.names:
                if base and a.name != "*" and exists(f"{base}.{a.name}"):
                    out[a.asname or a.name] = f"{base}.{a.name}"
    return out


def _assigned_names(node) -> list[str]:
    """The names `node` may assign onto something: an attribute target's, `setattr`'s literal."""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [t.attr for t in targets if isinstance(t, ast.Attribute)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return [node.args[1].value]
    return []


def _onto(node, name: str, aliases: dict[str, str]) -> str | None:
    """The module `node` assigns `name` onto (`m.name = v`, `setattr(m, "name", v)`), or None."""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
            if isinstance(t, ast.Attribute) and t.attr == name:
                return _dotted(t.value, aliases)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value == name:
        return _dotted(node.args[0], aliases)
    return None


def _dotted(node, aliases: dict[str, str]) -> str | None:
    """The module an expression names: `s`, `pkg.sub`, `sys.modules["pkg.sub"]`; else None."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and isinstance(node.slice.value, str) and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "modules" and isinstance(node.value.value, ast.Name) \
            and node.value.value.id == "sys":
        return node.slice.value
    return None
