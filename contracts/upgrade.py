"""`namespace-lint upgrade PACKAGE --to SPEC`: will this project run on another release of PACKAGE?

A project downstream of a library imports its modules and names. When the library moves or
deletes them, nothing in the project's own tree says so: the library is not part of it. This
use case reads every reference the project makes to PACKAGE -- module-level, lazy and
`TYPE_CHECKING` imports, `importlib` calls, `"module:attr"` string targets and dotted strings
(`mock.patch("pkg.mod.name")`) -- and checks each against the release `--to` names (a
directory that holds PACKAGE, a wheel, or `name==version`: `engine/trees.py`):

- `missing-module`: the module does not exist there (a `.py`, package, stub or extension
  module is a module);
- `missing-name`: the module exists but binds no such name (`engine/index.py`: defined,
  imported, re-exported, a submodule). What the tree cannot settle -- an extension module's
  names, a module-level `__getattr__`, `globals()` writes -- is never a finding.

Where it went comes from the release the project was written against (`--from`; by default the
installed distribution of PACKAGE, read as files, never imported): the map from `--from` to
`--to` is derived as `derive-map` derives it (`derive_map/moves.py`: every module `--to` lacks,
by name, folded name and content; then names one by one, by definition). A finding gets a
replacement only when that map gives one new home, and that home resolves in `--to` (the
statement's every name bound there); among the modules that bind a moved name, the most public
re-exporting one is written (`lib._testing` over `lib._testing.asserters`). A name match alone
is only listed, never written. A dotted string without `:` is reported only when it named
something in `--from` (many dotted strings are logger names or attribute paths).

Nothing of the project or of either release is imported or run.
"""

from __future__ import annotations

import ast
import os
import re

from contracts.config import Config
from contracts.derive_map.model import SAME_DEFINITION, TIE_MARGIN, Derived
from contracts.derive_map.moves import derive
from contracts.derive_map.names import place_name
from contracts.engine.discover import discover
from contracts.engine.importers import Layout, importer_files, importer_name
from contracts.engine.index import ModuleIndex, TreeIndex
from contracts.engine.resolve import is_under
from contracts.engine.scan import ImportRef, decode_source, scan_source, searchable
from contracts.engine.trees import is_requirement, open_tree
from contracts.errors import UsageError
from contracts.findings import Finding

MODULE_RULE = "missing-module"
NAME_RULE = "missing-name"
MAX_LISTED = 5  # candidates named in a message
_VERSION_RE = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)-(?P<version>[^-]+)\.dist-info$")


def tree_label(package: str, spec: str, directory: str) -> str:
    """How messages name a release: `sglang 0.5.23` (from `name==version` or the tree's
    `.dist-info`), else the spec as given."""
    if "==" in spec and not os.path.exists(spec):
        return f"{package} {spec.split('==', 1)[1]}"
    try:
        for entry in sorted(os.listdir(directory)):
            m = _VERSION_RE.match(entry)
            if m and m.group("name").replace("-", "_").lower() == package.lower():
                return f"{package} {m.group('version')}"
    except OSError:
        pass
    return spec


def installed_tree(package: str) -> tuple[str, str] | None:
    """(the directory that holds the installed PACKAGE, its label), read from the distribution's
    file list (`importlib.metadata`: nothing is imported), or None when it is not installed."""
    from importlib import metadata  # (~10 ms to import: read only by `upgrade` without --from)

    for dist in metadata.distributions():
        files = dist.files or ()
        if any(f.parts and f.parts[0] in (package, f"{package}.py") for f in files):
            where = os.path.abspath(str(dist.locate_file("")))
            if os.path.isdir(os.path.join(where, package)) or os.path.isfile(os.path.join(where, package + ".py")):
                return where, f"{package} {dist.version} (installed)"
    return None


class Release:
    """One release of PACKAGE as files: what exists, what binds what, and its definitions."""

    def __init__(self, package: str, spec: str, option: str, directory: str | None = None,
                 label: str | None = None) -> None:
        self.spec = spec
        self.directory = directory or open_tree(spec, option)
        if not (os.path.isdir(os.path.join(self.directory, package))
                or os.path.isfile(os.path.join(self.directory, package + ".py"))):
            raise UsageError(f"{option} {spec}: holds no package `{package}` (name the directory, wheel or "
                             f"name==version of a release of `{package}`)")
        self.label = label or tree_label(package, spec, self.directory)
        self.tree = TreeIndex(self.directory, (package,))
        found = discover(self.directory, (package,))
        self.index = ModuleIndex(self.directory, found)
        self.index.unsure = set(found.by_module)  # settle every module from its whole `ast`


def _under(findings: list[Finding], src: str, paths: list[str]) -> list[Finding]:
    """The findings in `paths` (files or directories, relative to the working directory)."""
    wanted = {os.path.relpath(os.path.abspath(p), src).replace(os.sep, "/") for p in paths}
    return [f for f in findings if any(f.path == w or f.path.startswith(w + "/") or w == "." for w in wanted)]


class Upgrade:
    """PACKAGE's `--to` release, and (with `--from`) the map from the release the project was
    written against."""

    def __init__(self, package: str, to: Release, old: Release | None) -> None:
        self.package, self.to, self.old = package, to, old
        self.map: Derived | None = None
        self._mapped: set[str] = set()  # the gone packages and modules `map` covers
        self._names: dict[tuple[str, str], tuple[str | None, str]] = {}

    def _derive_for(self, modules) -> None:
        """Derive the map for the gone modules the project references: for each, its highest
        ancestor `--to` lacks, whole (a package's line is confirmed by its submodules). Only
        these: the rest of the release is no business of this project's."""
        if self.old is None:
            return
        old, new = self.old.tree, self.to.tree
        tops = set()
        for module in modules:
            parts = module.split(".")
            top = None
            for i in range(len(parts), 1, -1):
                head = ".".join(parts[:i])
                if new.has_module(head):
                    break
                if old.has_module(head):
                    top = head
            if top is not None:
                tops.add(top)
        if tops - self._mapped:
            self._mapped |= tops
            self.map = derive(old, new, tuple(sorted(self._mapped)))

    # ---- the project

    def check(self, cfg: Config, src: str, paths: list[str] | None = None) -> tuple[list[Finding], int]:
        """(the findings of every file of the project -- the root packages under `src`, the
        `importer_paths` -- filtered to `paths` when given; the number of files read)."""
        src = os.path.abspath(src)
        files = _project_files(cfg, src)
        scanned = [read for read in (self._read(*f) for f in files) if read is not None]
        self._derive_for({m for _, _, refs in scanned for r in refs for m in _modules_of(r)
                          if not self.to.index.exists(m)})
        findings = sorted({f for rel, module, refs in scanned for f in self._file(rel, module, refs)})
        return (_under(findings, src, paths) if paths else findings), len(files)

    def _read(self, path: str, rel: str, module: str, is_package: bool) -> tuple[str, str, list] | None:
        """(rel, module, the file's references to PACKAGE), or None when it has none (or cannot be
        read or parsed: `check` reports those files)."""
        word = self.package.encode()
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        if word not in data or word not in searchable(data):
            return None
        result = scan_source(data, module, is_package, (word,))
        if result.error is not None:
            return None
        refs = [r for r in result.refs if is_under(r.imported, self.package)]
        return rel, module, refs + self._attribute_uses(data, refs)

    def _file(self, rel: str, module: str, refs) -> list[Finding]:
        """One file's findings: its string targets and alias attributes as they come, then one
        finding per statement that imports a missing module or names its module lacks."""
        out: list[Finding] = []
        groups: dict[tuple, list] = {}  # one statement's missing names, reported together
        for ref in refs:
            if ref.guarded or not is_under(ref.imported, self.package):
                continue  # optional by intent (`except ImportError`), or not PACKAGE's
            if ref.kind in ("from", "import", "importlib"):
                self._group(ref, groups)
            elif ref.kind == "string":
                out.extend(self._string(rel, module, ref))
            elif ref.kind == "attribute" and self.to.index.exists(ref.imported) \
                    and self.to.index.binds(ref.imported, ref.name) is False:
                out.extend(self._missing_names(rel, module, ref, ref.imported, (ref.name,)))
        for (rule, _line, _col, imported), (ref, *names) in groups.items():
            names = tuple(dict.fromkeys(names))
            if rule == MODULE_RULE:
                out.append(self._missing_module(rel, module, ref, imported, names))
            else:
                out.extend(self._missing_names(rel, module, ref, imported, names))
        return out

    def _group(self, ref, groups: dict[tuple, list]) -> None:
        """Add an import statement's `ref` to its group when the `--to` release lacks its module
        (its names go with it, for the hint) or the name it imports."""
        index = self.to.index
        named = ref.kind == "from" and bool(ref.name) and ref.name != "*"
        if not index.exists(ref.imported):
            group = groups.setdefault((MODULE_RULE, ref.line, ref.col, ref.imported), [ref])
            if named:
                group.append(ref.name)
        elif named and index.binds(ref.imported, ref.name) is False:
            groups.setdefault((NAME_RULE, ref.line, ref.col, ref.imported), [ref]).append(ref.name)

    # ---- `import pkg.mod as m; m.X`: the names used through a module alias

    def _attribute_uses(self, data: bytes, refs) -> list:
        """`m.X` for each alias `m` bound to a module of PACKAGE (`import a.b as m`, `from a import
        b as m` with `a.b` a module, a bare `import a`), as a `from a.b import X` reference at the attribute's place
        (`kind` "attribute": reported, never rewritten: the fix rewrites statements)."""
        aliases = self._module_aliases(refs)
        if not aliases:
            return []
        try:
            tree = ast.parse(decode_source(data))
        except (SyntaxError, ValueError):
            return []
        return [ImportRef(node.lineno, node.col_offset + 1, node.end_lineno or node.lineno, "attribute",
                          aliases[node.value.id], name=node.attr, asname=node.value.id)
                for node in ast.walk(tree)
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and isinstance(node.ctx, ast.Load)]

    def _module_aliases(self, refs) -> dict[str, str]:
        """Name -> the module of PACKAGE it is bound to in the file."""
        aliases: dict[str, str] = {}
        for r in refs:
            if r.kind == "import" and (r.asname or "." not in r.imported):
                aliases[r.asname or r.imported] = r.imported  # `import pandas`: `pandas.X` too
            elif r.kind == "from" and r.name and r.name != "*":
                sub = f"{r.imported}.{r.name}"
                if self.to.index.exists(sub) or (self.old is not None and self.old.index.exists(sub)):
                    aliases[r.asname or r.name] = sub
        return aliases

    # ---- string targets

    def _string(self, rel: str, module: str, ref) -> list[Finding]:
        index = self.to.index
        if ref.attr:
            first = ref.attr.split(".", 1)[0]
            if not index.exists(ref.imported):
                return [self._missing_module(rel, module, ref, ref.imported, (first,))]
            if index.binds(ref.imported, first) is False:
                return self._missing_names(rel, module, ref, ref.imported, (first,))
            return []
        # A dotted string: a module, or a module and an attribute path. Only one that named
        # something in `--from` was a reference (the rest are logger names, attribute paths).
        parts = ref.imported.split(".")
        if self.old is None or index.exists(ref.imported):
            return []
        for i in range(len(parts) - 1, 0, -1):
            head = ".".join(parts[:i])
            if index.exists(head):
                if index.binds(head, parts[i]) is not False:
                    return []
                if not self._resolved_in_old(parts):
                    return []
                return self._missing_names(rel, module, ref, head, (parts[i],), dotted=".".join(parts[i + 1:]))
        return []

    def _resolved_in_old(self, parts: list[str]) -> bool:
        old = self.old.index
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if old.exists(head):
                return i == len(parts) or old.binds(head, parts[i]) is True
        return False

    # ---- where it went

    def _module_home(self, module: str) -> str | None:
        """The module `module` moved to, by the derived map, when it exists in `--to`."""
        if self.map is None:
            return None
        target = self.map.effective(module)
        return target if target is not None and self.to.index.exists(target) else None

    def name_home(self, module: str, name: str) -> tuple[str | None, str]:
        """(the module that binds `name` of `--from`'s `module` in `--to`, or None; what is known)."""
        key = (module, name)
        if key not in self._names:
            self._names[key] = self._find_name_home(module, name)
        return self._names[key]

    def _unbound_before(self, module: str, name: str) -> str:
        """Why `--from` says nothing of where `name` went: no source of `module` binds it there."""
        if module in self.old.tree.files and self.old.tree.names(module).dynamic:
            # pandas 1.5's `pd.Int64Index`: served by a deprecation `__getattr__`, then dropped.
            return (f"`{module}` of {self.old.label} gives `{name}` only through its module-level "
                    f"`__getattr__`: no source there says where it went")
        return f"`{module}` of {self.old.label} does not bind `{name}` either"

    def _find_name_home(self, module: str, name: str) -> tuple[str | None, str]:
        to = self.to
        if self.old is None:
            return None, f"no `--from` release to say where `{name}` went"
        found = self.old.tree.origin(module, name)
        if found is None:
            if self.old.index.exists(f"{module}.{name}"):
                target = self._module_home(f"{module}.{name}")
                if target is not None and "." in target:
                    parent, _, last = target.rpartition(".")
                    if last == name:
                        return parent, f"`{module}.{name}` moved to `{target}`"
                return None, f"`{module}.{name}` is a module that {to.label} does not have"
            return None, self._unbound_before(module, name)
        home, definition = found
        key = (module, name)
        result = self.map if self.map is not None else Derived([])
        target = result.names.get(key, (None, None))[0] if key in result.names else None
        if target is None:
            probe = Derived([module], mapped=dict(result.mapped), scores=dict(result.scores))
            place_name(probe, to.tree, (module,), module, name, home, definition, SAME_DEFINITION, TIE_MARGIN)
            if key in probe.names:
                target = probe.names[key][0]
            elif key in probe.names_ambiguous:
                listed = ", ".join(f"`{m}` ({s:.0%})" for m, s in probe.names_ambiguous[key][:MAX_LISTED])
                return None, f"several modules of {to.label} define `{name}` alike ({listed}); not guessed, choose one"
            else:
                why = probe.names_unmatched.get(key, "")
                if why.startswith("no module of the after tree"):
                    return None, f"`{name}` is defined nowhere in {to.label}"
                return None, why.replace("the after tree", to.label)
        target = self._public(target, name)
        if to.index.binds(target, name) is False:
            return None, f"`{target}` defines `{name}` by the map, but does not bind it in {to.label}"
        return target, f"`{target}` defines it (same definition)"

    def _public(self, target: str, name: str) -> str:
        """The most public module that binds `name` as `target` does: `target` or a package above
        it that re-exports it (fewest `_private` parts, then the shortest)."""
        parts = target.split(".")
        binders = [".".join(parts[:i]) for i in range(len(parts), 1, -1)
                   if self.to.index.binds(".".join(parts[:i]), name) is True]
        if not binders:
            return target
        return min(binders, key=lambda m: (sum(p.startswith("_") for p in m.split(".")), len(m)))

    # ---- findings

    def _where(self, ref) -> str:
        what = {"string": "string target", "importlib": "dynamic import",
                "attribute": f"used as `{ref.asname}.{ref.name}`"}.get(ref.kind)
        if what is None:
            what = "type-only import" if ref.type_checking else "lazy import" if ref.lazy else "module-level import"
        return what

    def _missing_module(self, rel: str, importer: str, ref, module: str, names: tuple[str, ...]) -> Finding:
        to = self.to
        gone = f"`{module}` does not exist in {to.label} ({self._where(ref)})"
        hint, new = self._module_hint(module, names)
        shown = module + (f":{ref.attr}" if ref.kind == "string" and ref.attr else "")
        replacement = None if new is None else new + (f":{ref.attr}" if ref.kind == "string" and ref.attr else "")
        return Finding(rel, ref.line, ref.col, MODULE_RULE, importer, shown, f"{gone}; {hint}", replacement)

    def _module_hint(self, module: str, names: tuple[str, ...]) -> tuple[str, str | None]:
        """What is known of where `module` (and the statement's `names`) went, and the one new
        home that resolves in `--to`, if there is one."""
        to = self.to
        if self.old is None:
            return "no `--from` release to say where it went (pass --from SPEC)", None
        target = self._module_home(module)
        if names:
            homes = {n: self.name_home(module, n) for n in names}
            places = {h for h, _ in homes.values()}
            if target is not None and all(to.index.binds(target, n) is not False for n in names):
                return f"moved: `{target}`", target
            if len(places) == 1 and None not in places:
                new = places.pop()
                return f"moved: `{new}` binds {', '.join(f'`{n}`' for n in names)}", new
            said = "; ".join(f"`{n}`: {why}" for n, (_, why) in homes.items())
            return f"no one module of {to.label} binds this statement's names ({said})", None
        if target is not None:
            return f"moved: `{target}`", target
        return self._unmapped(module), None

    def _unmapped(self, module: str) -> str:
        """Why the map gives `module` no home: ambiguous (the candidates), unmatched, unknown."""
        m = self.map
        if m is not None:
            if module in m.ambiguous:
                listed = ", ".join(f"`{c}`" for c in m.ambiguous[module][:MAX_LISTED])
                return f"several modules of {self.to.label} hold its code ({listed}); not guessed, choose one"
            if module in m.unmatched:
                return f"no new home: {m.unmatched[module].replace('the after tree', self.to.label)}"
            if module in m.withheld:
                return f"no new home: {m.withheld[module]}"
        if not self.old.index.exists(module):
            return f"it does not exist in {self.old.label} either"
        return f"no module of {self.to.label} holds its code"

    def _missing_names(self, rel: str, importer: str, ref, module: str, names: tuple[str, ...],
                       dotted: str = "") -> list[Finding]:
        out = []
        package = " and has no submodule of that name" if self.to.index.is_package(module) else ""
        for name in names:
            home, why = self.name_home(module, name)
            if ref.kind == "string" and ref.attr:
                shown, new = f"{module}:{ref.attr}", (f"{home}:{ref.attr}" if home else None)
            elif ref.kind == "string":
                tail = f".{dotted}" if dotted else ""
                shown, new = f"{module}.{name}{tail}", (f"{home}.{name}{tail}" if home else None)
            else:
                shown, new = f"{module}.{name}", (f"{home}.{name}" if home else None)
            said = f"moved: {why}" if home else why
            if ref.kind == "attribute":
                new = None  # an attribute of an alias: rewritten by hand (the import stays right)
                said += f"; rewrite `{ref.asname}.{name}` by hand" if home else ""
            message = (f"`{module}` has no name `{name}` in {self.to.label} ({self._where(ref)}): it does "
                       f"not define, import or re-export it{package}; {said}")
            out.append(Finding(rel, ref.line, ref.col, NAME_RULE, importer, shown, message, new))
        return out


def _project_files(cfg: Config, src: str) -> list[tuple[str, str, str, bool]]:
    """(path, rel, module, is_package) of each file of the project: the root packages under `src`
    and the files `importer_paths` names."""
    layout = Layout(cfg.base, tuple(cfg.exclude), tuple(cfg.importer_paths))
    files = [(f.path, f.rel, f.module, f.is_package) for f in discover(src, cfg.root_packages, layout).files]
    if cfg.importer_paths:
        inside = [os.path.join(src, r) for r in cfg.root_packages]
        files += [(path, os.path.relpath(path, src).replace(os.sep, "/"), importer_name(layout, path), False)
                  for path in importer_files(layout, inside)[0]]
    return files


def _modules_of(ref) -> tuple[str, ...]:
    """The modules a reference may name: `a.b` (and `a.b.c` for `from a.b import c`, a
    submodule perhaps); a dotted string `a.b.c`, `a.b` too (its parent)."""
    if ref.kind in ("from", "attribute") and ref.name and ref.name != "*":
        return ref.imported, f"{ref.imported}.{ref.name}"
    if ref.kind == "string" and not ref.attr:
        return ref.imported, ref.imported.rpartition(".")[0] or ref.imported
    return (ref.imported,)


_OPENED: dict[tuple, Upgrade] = {}  # one reading of the releases per process (both faces, every contract)


def contract_upgrade(cfg: Config, spec) -> Upgrade:
    """The `Upgrade` a `dependency_upgrade` contract names (`config.UpgradeSpec`): paths are
    relative to the config file's directory."""
    def located(value: str | None) -> str | None:
        if value is None or is_requirement(value):
            return value
        return os.path.normpath(os.path.join(cfg.base, value))

    key = (spec.package, located(spec.target), located(spec.source))
    if key not in _OPENED:
        _OPENED[key] = open_upgrade(*key)
    return _OPENED[key]


def open_upgrade(package: str, to_spec: str, from_spec: str | None) -> Upgrade:
    """The `--to` release, the `--from` release (given, else the installed distribution of
    PACKAGE, else none), and the map between them."""
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", package):
        raise UsageError(f"PACKAGE {package}: not a top-level package name (e.g. sglang)")
    to = Release(package, to_spec, "--to")
    if from_spec is not None:
        old = Release(package, from_spec, "--from")
    else:
        installed = installed_tree(package)
        old = Release(package, "(installed)", "--from", *installed) if installed else None
    return Upgrade(package, to, old)
