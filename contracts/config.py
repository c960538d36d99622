"""Reads `.importlinter`: the single source of truth for `lint-imports` and the CLI.

The file is the INI format import-linter reads (multi-line values are one item per line). This
module validates the options of this project's contract types with plain functions, so that the
CLI and the import-linter adapters (`importlinter_types.py`) reject the same bad options with the
same one-line messages. Every invalid option is reported; the first one found is raised.
"""

from __future__ import annotations

import os
import re
from functools import cached_property

from contracts import config_source, ignores
from contracts._record import Record
from contracts.config_source import repository_root, shown
from contracts.errors import ConfigError
from contracts.globs import GlobError, check_patterns, compile_pattern
from contracts.ignores import ImportPattern
from contracts.prefixes import PrefixIndex, ancestors_or_self
from contracts.safe_paths import is_inside

SECTION = config_source.SECTION
CONTRACT_PREFIX = config_source.CONTRACT_PREFIX

# The class paths `.importlinter` registers under `contract_types`, by our contract kind.
OWN_CLASSES = {
    "contracts.RemovedModulesContract": "removed_modules",
    "contracts.OperatorGroupsContract": "operator_groups",
    "contracts.LayerContract": "layer",
    "contracts.MissingImportsContract": "missing_imports",
    "contracts.DependencyUpgradeContract": "dependency_upgrade",
}
# import-linter's built-in contract types (run by `lint-imports`, not by this CLI).
STOCK_TYPES = frozenset(
    {"forbidden", "layers", "independence", "protected", "private_modules", "acyclic_siblings"}
)

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class OptionError(ValueError):
    """A bad option value; carries the option name. Turned into ConfigError with file/section."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


# --------------------------------------------------------------------------- option values


def as_lines(raw: str | list | tuple | None) -> list[str]:
    """import-linter's convention: a multi-line value is a list, one item per non-blank line."""
    if raw is None:
        return []
    if isinstance(raw, (list, tuple)):
        items = list(raw)
    else:
        items = str(raw).strip().split("\n")
    return [item.strip() for item in items if item.strip()]


def _module(option: str, value: str) -> str:
    if not _MODULE_RE.match(value):
        raise OptionError(option, f"'{value}' is not a dotted module name.")
    return value


def is_under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def parse_arrow_lines(option: str, raw) -> list[tuple[str, str]]:
    pairs = []
    for line in as_lines(raw):
        if "->" not in line:
            raise OptionError(option, f"line '{line}' has no '->'; expected 'old.module -> new.module'.")
        left, _, right = line.partition("->")
        left, right = left.strip(), right.strip()
        if not left or not right or "->" in right:
            raise OptionError(option, f"line '{line}' must be exactly 'old.module -> new.module'.")
        pairs.append((_module(option, left), _module(option, right)))
    return pairs


def parse_replacement_lines(option: str, raw) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, str]]]:
    """`replacements` lines: `old.module -> new.module` (a module and everything under it), and
    `old.module:name -> new.module:name` (one name a statement imports from `old.module`; the
    right side may leave out `:name` when the name is the same, and may name another name)."""
    modules, names = [], []
    for line in as_lines(raw):
        if "->" not in line:
            raise OptionError(option, f"line '{line}' has no '->'; expected 'old.module -> new.module' "
                                      f"or 'old.module:name -> new.module:name'.")
        left, _, right = line.partition("->")
        left, right = left.strip(), right.strip()
        if not left or not right or "->" in right:
            raise OptionError(option, f"line '{line}' must be exactly 'old.module -> new.module' "
                                      f"or 'old.module:name -> new.module:name'.")
        if ":" not in left:
            if ":" in right:
                raise OptionError(option, f"line '{line}': a module maps to a module; write "
                                          f"'old.module:name -> {right}' for one name.")
            modules.append((_module(option, left), _module(option, right)))
            continue
        old_module, _, old_name = left.partition(":")
        new_module, _, new_name = right.partition(":")
        for part in (old_name, new_name or old_name):
            if not _IDENT_RE.match(part.strip()):
                raise OptionError(option, f"line '{line}': '{part.strip()}' is not a name.")
        names.append((_module(option, old_module.strip()), old_name.strip(),
                      _module(option, new_module.strip()), (new_name or old_name).strip()))
    return modules, names


class RemovedSpec(Record, frozen=True):
    """Options of a `removed_modules` contract."""

    id: str
    name: str
    removed: tuple[str, ...]
    # (old prefix, new prefix), longest old prefix first: the first match is the longest one.
    replacements: tuple[tuple[str, str], ...]
    # (old module, name, new module, new name): where one imported name went.
    names: tuple[tuple[str, str, str, str], ...]
    ignore_imports: tuple[ImportPattern, ...]  # see contracts/ignores.py
    unmatched_alerting: str

    def __init__(self, id: str, name: str, removed: tuple[str, ...], replacements: tuple[tuple[str, str], ...] = (),
                 names: tuple[tuple[str, str, str, str], ...] = (), ignore_imports: tuple[ImportPattern, ...] = (),
                 unmatched_alerting: str = "error") -> None:
        self.__dict__.update(id=id, name=name, removed=removed, replacements=replacements, names=names,
                             ignore_imports=ignore_imports, unmatched_alerting=unmatched_alerting)

    @cached_property
    def _name_map(self) -> dict[tuple[str, str], tuple[str, str]]:
        return {(old, old_name): (new, new_name) for old, old_name, new, new_name in self.names}

    @cached_property
    def _modules_with_name_lines(self) -> frozenset[str]:
        return frozenset(old for old, _ in self._name_map)

    def name_replacement(self, module: str, name: str) -> tuple[str, str] | None:
        """Where `from module import name` finds `name` now: a per-name line, else the module's
        line (the same name); None when neither knows."""
        found = self._name_map.get((module, name))
        if found is not None:
            return found
        new = self.replacement_for(module)
        return (new, name) if new else None

    def has_name_line(self, module: str, name: str) -> bool:
        return (module, name) in self._name_map

    def has_name_lines(self, module: str) -> bool:
        return module in self._modules_with_name_lines

    # Lookups by the module's name parts (`prefixes.py`): as fast with 1,000 prefixes as with 1.
    @cached_property
    def removed_index(self) -> PrefixIndex:
        return PrefixIndex(self.removed)

    @cached_property
    def _replacement_map(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for old, new in self.replacements:
            out.setdefault(old, new)
        return out

    def replacement_for(self, module: str) -> str | None:
        """The new name of `module` by the longest `replacements` prefix it lies under."""
        table = self._replacement_map
        for old in ancestors_or_self(module):
            new = table.get(old)
            if new is not None:
                return new + module[len(old):]
        return None

    def names_replacement(self, module: str) -> bool:
        """Does a `replacements` line name `module` itself (not only a package above it)?"""
        return module in self._replacement_map

    def removed_prefix_of(self, module: str) -> str | None:
        """The first `removed_modules` prefix (in the order written) `module` is or lies under."""
        return self.removed_index.first_of(module)


class GroupsSpec(Record, frozen=True):
    """Options of an `operator_groups` contract."""

    id: str
    name: str
    container: str
    groups: tuple[str, ...]
    shared_modules: tuple[str, ...]
    allowed_imports: tuple[tuple[str, str], ...]
    ignore_imports: tuple[ImportPattern, ...]
    unmatched_alerting: str

    def __init__(self, id: str, name: str, container: str, groups: tuple[str, ...],
                 shared_modules: tuple[str, ...] = (), allowed_imports: tuple[tuple[str, str], ...] = (),
                 ignore_imports: tuple[ImportPattern, ...] = (), unmatched_alerting: str = "error") -> None:
        self.__dict__.update(id=id, name=name, container=container, groups=groups, shared_modules=shared_modules,
                             allowed_imports=allowed_imports, ignore_imports=ignore_imports,
                             unmatched_alerting=unmatched_alerting)

    def group_of(self, module: str) -> str | None:
        memo = self._group_memo  # the rules ask once per edge end: a tree has few modules
        if module in memo:
            return memo[module]
        group = None
        if module.startswith(self.container + "."):
            head = module[len(self.container) + 1:].split(".", 1)[0]
            group = head if head in self._group_set else None
        memo[module] = group
        return group

    @cached_property
    def _group_memo(self) -> dict[str, str | None]:
        return {}

    @cached_property
    def _group_set(self) -> frozenset[str]:
        return frozenset(self.groups)


class LayerSpec(Record, frozen=True):
    """Options of a `layer` contract: `layers`, highest first; a lower one may not import a higher one."""

    id: str
    name: str
    layers: tuple[str, ...]
    ignore_imports: tuple[ImportPattern, ...]
    unmatched_alerting: str

    def __init__(self, id: str, name: str, layers: tuple[str, ...], ignore_imports: tuple[ImportPattern, ...] = (),
                 unmatched_alerting: str = "error") -> None:
        self.__dict__.update(id=id, name=name, layers=layers, ignore_imports=ignore_imports,
                             unmatched_alerting=unmatched_alerting)


def parse_ignore_imports(option: str, raw) -> tuple[ImportPattern, ...]:
    """import-linter's `ignore_imports` lines (`contracts.ignores`), as config option errors."""
    try:
        return ignores.parse_ignore_imports(option, raw)
    except ignores.PatternError as e:
        raise OptionError(e.option, str(e)) from None


def _exemptions(options: dict) -> tuple[tuple[ImportPattern, ...], str]:
    """(`ignore_imports`, `unmatched_ignore_imports_alerting`) of any contract type."""
    patterns = parse_ignore_imports("ignore_imports", options.get("ignore_imports"))
    try:
        alerting = ignores.parse_alerting("unmatched_ignore_imports_alerting",
                                          options.get("unmatched_ignore_imports_alerting"))
    except ignores.PatternError as e:
        raise OptionError(e.option, str(e)) from None
    return patterns, alerting


def parse_bool(option: str, raw, default: bool = False) -> bool:
    if raw is None:
        return default
    if isinstance(raw, list):
        raise OptionError(option, "expected a single value, true or false.")
    value = raw.strip().lower()
    if value in ("true", "yes", "on", "1"):
        return True
    if value in ("false", "no", "off", "0"):
        return False
    raise OptionError(option, f"'{raw.strip()}' is not true or false.")


class MissingSpec(Record, frozen=True):
    """Options of a `missing_imports` contract: imports of modules (and names) under `packages`
    that the tree does not have."""

    id: str
    name: str
    packages: tuple[str, ...]  # empty: the root packages
    include_guarded: bool
    ignore_imports: tuple[ImportPattern, ...]  # see contracts/ignores.py
    unmatched_alerting: str

    def __init__(self, id: str, name: str, packages: tuple[str, ...] = (), include_guarded: bool = False,
                 ignore_imports: tuple[ImportPattern, ...] = (), unmatched_alerting: str = "error") -> None:
        self.__dict__.update(id=id, name=name, packages=packages, include_guarded=include_guarded,
                             ignore_imports=ignore_imports, unmatched_alerting=unmatched_alerting)

    def packages_for(self, roots: tuple[str, ...]) -> tuple[str, ...]:
        return self.packages or roots

    def statement_roots(self, roots: tuple[str, ...]) -> tuple[str, ...]:
        """The root package names whose import statements the contract reads."""
        return tuple(sorted({p.split(".", 1)[0] for p in self.packages_for(roots)}))


def missing_spec(cid: str, options: dict) -> MissingSpec:
    packages = tuple(_module("packages", m) for m in as_lines(options.get("packages")))
    for i, a in enumerate(packages):
        if a in packages[:i]:
            raise OptionError("packages", f"'{a}' is named twice.")
    patterns, alerting = _exemptions(options)
    return MissingSpec(cid, options.get("name", cid), packages,
                       parse_bool("include_guarded", options.get("include_guarded")),
                       ignore_imports=patterns, unmatched_alerting=alerting)


def removed_spec(cid: str, options: dict) -> RemovedSpec:
    """The options of a `removed_modules` contract, checked: every line of `replacements` maps
    something under a removed prefix, once, to somewhere outside them, and the module lines
    form no cycle."""
    removed = tuple(_module("removed_modules", m) for m in as_lines(options.get("removed_modules")))
    if not removed:
        raise OptionError("removed_modules", "name at least one removed module prefix.")
    pairs, name_lines = parse_replacement_lines("replacements", options.get("replacements"))
    _check_name_lines(name_lines, removed)
    seen = _check_module_lines(pairs, removed)
    _check_module_targets(pairs, seen, removed)
    ordered = tuple(sorted(pairs, key=lambda p: (-p[0].count("."), -len(p[0]), p[0])))
    patterns, alerting = _exemptions(options)
    return RemovedSpec(cid, options.get("name", cid), removed, ordered, tuple(name_lines),
                       ignore_imports=patterns, unmatched_alerting=alerting)


def _check_name_lines(name_lines: list[tuple[str, str, str, str]], removed: tuple[str, ...]) -> None:
    """Each `old.module:name` line: one per name, under a removed prefix, its target outside them."""
    seen_names: dict[tuple[str, str], str] = {}
    for old, old_name, new, new_name in name_lines:
        if (old, old_name) in seen_names:
            raise OptionError("replacements", f"'{old}:{old_name}' has two replacements "
                                              f"('{seen_names[old, old_name]}' and '{new}:{new_name}').")
        seen_names[old, old_name] = f"{new}:{new_name}"
        if not any(is_under(old, prefix) for prefix in removed):
            raise OptionError("replacements", f"'{old}:{old_name}' is not under a removed prefix "
                                              f"({', '.join(removed)}).")
        for prefix in removed:
            if is_under(new, prefix):
                raise OptionError("replacements", f"target '{new}:{new_name}' of '{old}:{old_name}' is "
                                                  f"itself under the removed prefix '{prefix}'.")


def _check_module_lines(pairs: list[tuple[str, str]], removed: tuple[str, ...]) -> dict[str, str]:
    """Each `old.module -> new.module` line: one per module, under a removed prefix; returns
    them as old -> new."""
    seen: dict[str, str] = {}
    for old, new in pairs:
        if old in seen:
            raise OptionError("replacements", f"'{old}' has two replacements ('{seen[old]}' and '{new}').")
        seen[old] = new
        if not any(is_under(old, prefix) for prefix in removed):
            raise OptionError(
                "replacements", f"'{old}' is not under a removed prefix ({', '.join(removed)})."
            )
    return seen


def _check_module_targets(pairs: list[tuple[str, str]], seen: dict[str, str], removed: tuple[str, ...]) -> None:
    """Each module line's target: on no cycle of lines, and outside the removed prefixes."""
    acyclic: set[str] = set()
    for old, new in pairs:
        _check_no_cycle(old, new, seen, acyclic)
        for prefix in removed:
            if is_under(new, prefix):
                raise OptionError(
                    "replacements",
                    f"target '{new}' of '{old}' is itself under the removed prefix '{prefix}'.",
                )


def _check_no_cycle(old: str, new: str, seen: dict[str, str], acyclic: set[str]) -> None:
    """Following the lines from `old -> new` never comes back to a module on the way. Linear in
    the number of lines: a target's prefixes are looked up (not every line tested against every
    other), and a chain already followed to its end (`acyclic`) is not followed again."""
    parts = new.split(".")
    if not any(".".join(parts[:i]) in seen for i in range(len(parts), 0, -1)):
        return
    chain, on_chain, cur = [old], {old}, new
    while cur in seen and cur not in on_chain and cur not in acyclic:
        chain.append(cur)
        on_chain.add(cur)
        cur = seen[cur]
    if cur in on_chain:
        raise OptionError("replacements", f"replacements form a cycle: {' -> '.join(chain + [cur])}.")
    acyclic.update(on_chain)


def groups_spec(cid: str, options: dict) -> GroupsSpec:
    container = options.get("container")
    if not container or isinstance(container, list):
        raise OptionError("container", "expected a single module name, e.g. 'sglang.kernels.ops'.")
    container = _module("container", container.strip())
    groups: list[str] = []
    for g in as_lines(options.get("groups")):
        if not _IDENT_RE.match(g):
            raise OptionError("groups", f"'{g}' is not a group name (one identifier per line).")
        if g in groups:
            raise OptionError("groups", f"group '{g}' is declared twice.")
        groups.append(g)
    if not groups:
        raise OptionError("groups", "declare at least one group.")
    shared = tuple(_module("shared_modules", m) for m in as_lines(options.get("shared_modules")))
    allowed = tuple(parse_arrow_lines("allowed_imports", options.get("allowed_imports")))
    patterns, alerting = _exemptions(options)
    return GroupsSpec(cid, options.get("name", cid), container, tuple(groups), shared, allowed,
                      ignore_imports=patterns, unmatched_alerting=alerting)


def layer_spec(cid: str, options: dict) -> LayerSpec:
    layers = tuple(_module("layers", m) for m in as_lines(options.get("layers")))
    if len(layers) < 2:
        raise OptionError("layers", "name at least two layers, highest first, one per line.")
    for i, a in enumerate(layers):
        for b in layers[i + 1:]:
            if is_under(a, b) or is_under(b, a):
                raise OptionError("layers", f"layers '{a}' and '{b}' overlap.")
    patterns, alerting = _exemptions(options)
    return LayerSpec(cid, options.get("name", cid), layers, ignore_imports=patterns, unmatched_alerting=alerting)


class UpgradeSpec(Record, frozen=True):
    """Options of a `dependency_upgrade` contract: the project's references to `package` resolve
    in the release `target` (a directory or wheel, relative to the config file, or
    name==version); `source` is the release the project was written against (where things
    moved from; default: the installed distribution)."""

    id: str
    name: str
    package: str
    target: str
    source: str | None

    def __init__(self, id: str, name: str, package: str, target: str, source: str | None = None) -> None:
        self.__dict__.update(id=id, name=name, package=package, target=target, source=source)


def _single(options: dict, option: str, example: str) -> str | None:
    value = options.get(option)
    if value is None:
        return None
    if isinstance(value, list) or not str(value).strip():
        raise OptionError(option, f"expected a single value, e.g. '{example}'.")
    return str(value).strip()


def upgrade_spec(cid: str, options: dict) -> UpgradeSpec:
    package = _single(options, "package", "sglang")
    if package is None or not _IDENT_RE.match(package):
        raise OptionError("package", "name the dependency's top-level package, e.g. 'sglang'.")
    target = _single(options, "target", "vendor/sglang-0.5.23-py3-none-any.whl")
    if target is None:
        raise OptionError("target", "name the release to run on: a directory or a wheel (relative to this "
                                    "file), or name==version, e.g. 'vendor/sglang-0.5.23-py3-none-any.whl'.")
    return UpgradeSpec(cid, options.get("name", cid), package, target,
                       _single(options, "source", "vendor/sglang-0.5.16-py3-none-any.whl"))


SPEC_BUILDERS = {"removed_modules": removed_spec, "operator_groups": groups_spec, "layer": layer_spec,
                 "missing_imports": missing_spec, "dependency_upgrade": upgrade_spec}
KNOWN_OPTIONS = {
    "removed_modules": {"removed_modules", "replacements"},
    "operator_groups": {"container", "groups", "shared_modules", "allowed_imports"},
    "layer": {"layers"},
    "missing_imports": {"packages", "include_guarded"},
}
# Every contract type takes import-linter's exemptions (contracts/ignores.py).
EXEMPTION_OPTIONS = ("ignore_imports", "unmatched_ignore_imports_alerting")
for _options in KNOWN_OPTIONS.values():
    _options.update(EXEMPTION_OPTIONS)
KNOWN_OPTIONS["dependency_upgrade"] = {"package", "target", "source"}


# --------------------------------------------------------------------------- the file


class Config(Record):
    path: str
    root_packages: tuple[str, ...]
    removed: list[RemovedSpec]
    groups: list[GroupsSpec]
    layers: list[LayerSpec]
    missing: list[MissingSpec]
    # Contracts of other types (stock import-linter ones): `lint-imports` runs them, the CLI does not.
    skipped: list[str]
    # The repository's layout (`LAYOUT_OPTIONS`), paths relative to the config file's directory.
    source_dir: str | None  # absolute: the directory holding the root packages
    importer_paths: tuple[str, ...]  # files, directories, globs outside the root packages
    exclude: tuple[str, ...]  # globs/paths not walked, neither as modules nor as importers
    # What one face reads differently from the other: one line each (the face prints them).
    warnings: list[str]
    # `strict_baseline = true` in [importlinter]: as `--strict-baseline` on every run with a baseline.
    strict_baseline: bool
    upgrades: list[UpgradeSpec]  # `dependency_upgrade` contracts

    def __init__(self, path: str, root_packages: tuple[str, ...], removed: list[RemovedSpec] | None = None,
                 groups: list[GroupsSpec] | None = None, layers: list[LayerSpec] | None = None,
                 missing: list[MissingSpec] | None = None, skipped: list[str] | None = None,
                 source_dir: str | None = None, importer_paths: tuple[str, ...] = (), exclude: tuple[str, ...] = (),
                 warnings: list[str] | None = None, strict_baseline: bool = False,
                 upgrades: list[UpgradeSpec] | None = None) -> None:
        self.path, self.root_packages = path, root_packages
        self.upgrades = [] if upgrades is None else upgrades
        self.removed = [] if removed is None else removed
        self.groups = [] if groups is None else groups
        self.layers = [] if layers is None else layers
        self.missing = [] if missing is None else missing
        self.skipped = [] if skipped is None else skipped
        self.source_dir, self.importer_paths, self.exclude = source_dir, importer_paths, exclude
        self.warnings = [] if warnings is None else warnings
        self.strict_baseline = strict_baseline

    @property
    def base(self) -> str:
        """The directory the layout options are relative to: the config file's."""
        return os.path.dirname(self.path)

    @property
    def fingerprint(self) -> str:
        return repr((self.root_packages, self.removed, self.groups, self.layers, self.source_dir,
                     self.importer_paths, self.exclude, self.missing, self.upgrades))

    @property
    def specs(self) -> tuple:
        return (*self.removed, *self.groups, *self.layers, *self.missing, *self.upgrades)


ZERO_CONFIG_ID = "missing-imports"


def zero_config(roots: list[str], src: str) -> Config:
    """The configuration `--root-package NAME` stands for: the `missing_imports` contract alone,
    over those packages, with no file."""
    for r in roots:
        if not _IDENT_RE.match(r):
            raise ConfigError(f"'{r}' is not a top-level package name.", option="--root-package")
    path = os.path.join(os.path.abspath(src), "(no config file)")
    spec = MissingSpec(ZERO_CONFIG_ID, "Imports of modules and names the tree does not have")
    return Config(path=path, root_packages=tuple(dict.fromkeys(roots)), missing=[spec])


_shown = shown
find = config_source.find
display_name = config_source.display_name


def load(path: str) -> Config:
    """The configuration in the file at `path`, every option checked: the first bad one is a
    ConfigError naming the file, the section and the option."""
    raw = config_source.read(path)
    session, err = raw.session, _Errors(raw)
    _check_session_options(session, err)
    type_lines = as_lines(session.get("contract_types"))
    config = Config(path=raw.path, root_packages=_root_packages(session, err))
    kinds = _contract_kinds(type_lines, err)
    config.warnings = raw.warnings + config_source.contract_type_warnings(raw, type_lines)
    _layout(config, session, err)
    config.strict_baseline = _strict_baseline(session, err)
    for section, cid, options in raw.contracts:
        _add_contract(config, kinds, section, cid, options, err)
    if not config.specs:
        raise err(
            "no contract of this tool's types (removed_modules, operator_groups, layer, missing_imports, "
            "dependency_upgrade) "
            "is configured.",
            option="contract_types",
        )
    return config


class _Errors:
    """`err(message, section=the session's, option=None)`: a ConfigError naming one file."""

    def __init__(self, raw) -> None:
        self.display = raw.display
        # How messages name the session's section: `[importlinter]`, or pyproject's table.
        self.session = "tool.importlinter" if raw.is_toml else SECTION

    def __call__(self, message: str, section: str | None = None, option: str | None = None) -> ConfigError:
        section = self.session if section is None else section
        return ConfigError(_shown(message), file=self.display, section=_shown(section),
                           option=option and _shown(option))


def _check_session_options(session: dict, err) -> None:
    unknown = sorted(set(session) - SESSION_OPTIONS)
    if unknown:
        raise err(f"unrecognized option (known: {', '.join(sorted(SESSION_OPTIONS))}).", option=unknown[0])


def _root_packages(session: dict, err) -> tuple[str, ...]:
    """`root_packages` (or import-linter's `root_package`): top-level package names, at least one."""
    roots = as_lines(session.get("root_packages")) or as_lines(session.get("root_package"))
    if not roots:
        raise err("name the package(s) to check with 'root_packages'.", option="root_packages")
    for r in roots:
        if not _IDENT_RE.match(r):
            raise err(f"'{r}' is not a top-level package name.", option="root_packages")
    return tuple(roots)


def _contract_kinds(type_lines: list[str], err) -> dict[str, str]:
    """`contract_types` lines: type name -> this tool's contract kind, or `other:CLASS` for a
    class of someone else's."""
    kinds: dict[str, str] = {}
    for line in type_lines:
        name, sep, cls = line.partition(":")
        if not sep or not name.strip() or not cls.strip():
            raise err(f"line '{line}' must be 'name: module.Class'.", option="contract_types")
        kinds[name.strip()] = OWN_CLASSES.get(cls.strip(), "other:" + cls.strip())
    return kinds


def _strict_baseline(session: dict, err) -> bool:
    """`strict_baseline = true|false` (default false)."""
    strict = session.get("strict_baseline")
    if strict is None:
        return False
    value = strict.strip().lower() if isinstance(strict, str) else None
    if value not in ("true", "false", "yes", "no", "on", "off", "1", "0"):
        raise err("expected true or false.", option="strict_baseline")
    return value in ("true", "yes", "on", "1")


# The `Config` list that holds the specs of each contract kind.
SPEC_FIELDS = {"removed_modules": "removed", "operator_groups": "groups", "layer": "layers",
               "missing_imports": "missing", "dependency_upgrade": "upgrades"}


def _add_contract(config: Config, kinds: dict[str, str], section: str, cid: str, options: dict, err) -> None:
    """One contract section: its checked spec added to `config`, or its id to `config.skipped`
    when it is of a type `lint-imports` runs (a stock one, or another registered class)."""
    kind = _contract_kind(kinds, section, options, err)
    if kind is None or kind.startswith("other:"):
        config.skipped.append(cid)
        return
    unknown = sorted(set(options) - KNOWN_OPTIONS[kind] - {"name", "type", "id"})
    if unknown:
        raise err(f"unrecognized option for a '{options['type']}' contract.", section=section, option=unknown[0])
    try:
        spec = SPEC_BUILDERS[kind](cid, options)
    except OptionError as e:
        raise err(str(e), section=section, option=e.option) from None
    getattr(config, SPEC_FIELDS[kind]).append(spec)


def _contract_kind(kinds: dict[str, str], section: str, options: dict, err) -> str | None:
    """The kind of a contract's `type` (`_contract_kinds`); None for a stock import-linter type."""
    ctype = options.get("type")
    if not ctype or isinstance(ctype, list):
        raise err("every contract needs a single 'type'.", section=section, option="type")
    kind = kinds.get(ctype)
    if kind is None and ctype not in STOCK_TYPES:
        known = sorted(set(kinds) | STOCK_TYPES)
        raise err(
            f"unknown contract type '{ctype}' (known: {', '.join(known)}; register yours "
            f"under 'contract_types' in [{err.session}]).",
            section=section, option="type",
        )
    return kind


# Every option the [importlinter] section may have: import-linter's own session options (what
# its `application/use_cases.py` reads: `root_package(s)`, `contract_types`,
# `include_external_packages`, `exclude_type_checking_imports`, `show_timings`) and this tool's.
# Another is a typo (`importer_path`) that would leave files unchecked: an error, as in a contract.
SESSION_OPTIONS = frozenset({
    "root_package", "root_packages", "contract_types", "include_external_packages",
    "exclude_type_checking_imports", "show_timings",
    "source_dir", "importer_paths", "exclude", "strict_baseline",
})

# Options of the [importlinter] section that describe the repository's layout. import-linter
# ignores session options it does not know, so they can live beside `root_packages`.
LAYOUT_OPTIONS = ("source_dir", "importer_paths", "exclude")


def _layout(config: Config, session: dict, err) -> None:
    """The layout options (`LAYOUT_OPTIONS`) into `config`, each checked."""
    source = session.get("source_dir")
    if source is not None:
        if isinstance(source, list) or not str(source).strip():
            raise err("expected one directory (relative to this file), e.g. 'python'.", option="source_dir")
        config.source_dir = os.path.normpath(os.path.join(config.base, str(source).strip()))
    for option in ("importer_paths", "exclude"):
        items = as_lines(session.get(option))
        try:
            check_patterns(items)
        except GlobError as e:
            raise err(f"{e}; name directories, or fewer patterns.", option=option) from None
        for item in items:
            if "\0" in item or not item.isprintable():
                raise err(f"'{item}' is not a path or glob.", option=option)
            try:
                compile_pattern(item)
            except GlobError as e:
                raise err(f"'{_clip(item)}' is not a valid glob ({e}).", option=option) from None
        setattr(config, option, tuple(items))
    _inside_repository(config, err)


def _clip(text: str, keep: int = 60) -> str:
    return text if len(text) <= keep + 20 else f"{text[:keep]}... ({len(text)} characters)"


def _inside_repository(config: Config, err) -> None:
    """`source_dir` and `importer_paths` name what `--fix` rewrites, and the file naming them is
    committed with the tree: one that resolves outside the config's repository (its git top
    level, else the config's directory) is an error. The command line (`--src`, PATHs) may
    name anything: that is the user's choice, not the tree's."""
    repo = os.path.realpath(repository_root(config.base) or config.base)
    named = [("source_dir", config.source_dir)] if config.source_dir else []
    named += [("importer_paths", entry) for entry in config.importer_paths]
    for option, entry in named:
        lead = []
        for part in entry.replace(os.sep, "/").split("/"):
            if any(c in part for c in "*?["):
                break
            lead.append(part)
        real = os.path.realpath(os.path.join(config.base, "/".join(lead) or "."))
        if not is_inside(real, repo):
            raise err(f"'{_clip(entry)}' resolves to {real}, outside the repository {repo}; a directory "
                      f"outside it is named on the command line (--src, PATH), not in a committed file.",
                      option=option)
