"""The import-linter face: contract types `lint-imports` runs beside its stock ones.

Each `check()` runs the same engine and rules as the CLI (`contracts.check`), on the same
`.importlinter`, sharing the CLI's cache (`lint-imports --no-cache` turns it off here too). The
graph import-linter passes in is not used for the rules: it lacks what grimp drops (imports of
removed modules, directories without `__init__.py`), which is the point of these contracts.
import-linter 2.17 builds it before any contract runs and reports its size, and offers a
contract type no way to skip it: that cost stays (docs/benchmarks.md gives it).
"""

from __future__ import annotations

import importlib.util
import os
import sys

from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck, InvalidContractOptions
from rich.markup import escape

from contracts import config as config_mod
from contracts.check import Result, run
from contracts.config_source import shown
from contracts.errors import ConfigError, NamespaceLintError
from contracts.findings import Finding, displayed

_RUNS: dict[tuple, Result | ConfigError] = {}  # (a ConfigError: the full run stopped on another contract)


def _config_path() -> str | None:
    """The file this lint-imports run reads: `--config FILE`, the first config file argument
    (import-linter 2.4+), else the one it finds in the working directory."""
    argv = sys.argv[1:]
    positional = []
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
        if not arg.startswith("-") and not (i and argv[i - 1] in ("--contract", "--cache-dir")):
            positional.append(arg)
    if positional:
        return positional[0]
    # The file lint-imports itself reads without --config (the working directory only).
    return config_mod.config_source.importlinter_choice(os.getcwd())


def _fallback_note() -> None:
    """Once per run, where grimp's native scanner was not used and files were read with `ast`
    instead (more slowly): why, as the CLI says it (`cli._engine_notes`)."""
    graph = sys.modules.get("contracts.engine.graph")  # (not loaded: nothing was scanned)
    reason, files = graph.native_fallback() if graph is not None else (None, 0)
    if reason is not None and files:
        print(f"namespace-lint: note: grimp's native scanner not used: {reason}; {files} "
              f"file{'' if files == 1 else 's'} read with `ast` instead, more slowly", file=sys.stderr)


def _no_cache() -> bool:
    return "--no-cache" in sys.argv[1:]


def _src_for(root: str) -> str:
    # find_spec on a top-level name locates it without importing (executing) it.
    spec = importlib.util.find_spec(root)
    if spec is None or not spec.submodule_search_locations and not spec.origin:
        raise NamespaceLintError(f"root package '{root}' is not importable from {os.getcwd()}")
    location = list(spec.submodule_search_locations or [])[:1] or [spec.origin]
    return os.path.dirname(os.path.abspath(location[0]))


class _OwnContract(Contract):
    kind = ""
    # import-linter's exemptions, on every type (parsed and applied by contracts/ignores.py).
    ignore_imports = fields.ListField(subfield=fields.StringField(), required=False)
    unmatched_ignore_imports_alerting = fields.StringField(required=False)

    def validate(self) -> None:
        try:
            self.spec = config_mod.SPEC_BUILDERS[self.kind](self._id(), self.contract_options)
        except config_mod.OptionError as e:
            raise InvalidContractOptions({e.option: str(e)}) from None

    def _id(self) -> str:
        return str(self.contract_options.get("id", self.name))

    def _result(self) -> tuple[Result, str]:
        """(the run this contract is read from, the source directory): every contract of one
        config is checked in one run per lint-imports run; a contract whose full run another
        contract's error stopped is run alone, so each is broken by its own error only."""
        cfg, src = self._config()
        key = (src, cfg.fingerprint)
        # `lint-imports --no-cache` turns off this tool's cache too: every run is then cold.
        cache_dir = None if _no_cache() else os.path.join(os.path.dirname(cfg.path), ".namespace_lint_cache")
        if key not in _RUNS:
            _RUNS[key] = self._run_all(cfg, src, cache_dir)
        if isinstance(_RUNS[key], ConfigError):
            own = (key, self.spec.id)
            if own not in _RUNS:
                _RUNS[own] = run(cfg, src, cache_dir=cache_dir, contract_ids=[self.spec.id])
            return _RUNS[own], src
        return _RUNS[key], src

    def _config(self) -> tuple[config_mod.Config, str]:
        """(the configuration holding this contract, the source directory): the file lint-imports
        reads, else one made of this contract alone."""
        roots = config_mod.as_lines(self.session_options.get("root_packages")) or \
            config_mod.as_lines(self.session_options.get("root_package"))
        path = _config_path()
        try:
            cfg = config_mod.load(path) if path else None
        except NamespaceLintError:
            cfg = None
        # The config's `source_dir` names the user's packages; else wherever they are importable
        # from (lint-imports puts the working directory on sys.path).
        src = cfg.source_dir if cfg is not None and cfg.source_dir else _src_for(roots[0])
        if cfg is None or self.spec not in cfg.specs:
            cfg = config_mod.Config(path=os.path.abspath(path or ".importlinter"), root_packages=tuple(roots))
            getattr(cfg, config_mod.SPEC_FIELDS[self.kind]).append(self.spec)
        return cfg, src

    def _run_all(self, cfg: config_mod.Config, src: str, cache_dir: str | None) -> Result | ConfigError:
        """Every contract of `cfg` in one run, its warnings printed once; the ConfigError of
        another contract (a container this tree lacks) as the value."""
        if not _RUNS:
            for line in cfg.warnings:  # once per lint-imports run
                print(f"namespace-lint: warning: {line}", file=sys.stderr)
        try:
            result = run(cfg, src, cache_dir=cache_dir)
        except ConfigError as e:
            if e.section != f"importlinter:contract:{self.spec.id}":
                return e
            raise
        for line in result.warnings:  # once per run, not per contract
            print(f"namespace-lint: warning: {line}", file=sys.stderr)
        _fallback_note()
        return result

    def check(self, graph, verbose: bool) -> ContractCheck:
        try:
            result, src = self._result()
        except NamespaceLintError as e:
            return ContractCheck(kept=False, metadata={"error": str(e), "findings": []})
        mine = next(c for c in result.contracts if c.id == self.spec.id)
        findings = displayed(sorted(set(mine.findings) | set(result.engine_findings)), src)
        return ContractCheck(
            kept=not findings,
            metadata={"findings": [f.to_json() for f in findings], "files_scanned": result.files_scanned,
                      "files_total": result.files_total},
        )

    def render_broken_contract(self, check: ContractCheck) -> None:
        if check.metadata.get("error"):
            output.print_error(escape(check.metadata["error"]), bold=False)
            return
        findings = [Finding(**f) for f in check.metadata["findings"]]
        count = len(findings)
        output.print(f"{count} finding{'s' if count != 1 else ''} in "
                     f"{check.metadata['files_scanned']} scanned files:")
        output.new_line()
        for f in findings:
            use = f" (use {f.replacement} instead)" if f.replacement else ""
            # escape: output is rich markup; a `[section]` or a path like `[/x].py` is text here
            # shown: control characters in a path or message as escapes (a newline forges no line)
            output.print_error(escape(shown(f"-   {f.path}:{f.line}:{f.col}: {f.rule} {f.message}{use}")),
                               bold=False)
        output.new_line()


class RemovedModulesContract(_OwnContract):
    """Nothing may reference a removed module; the removed path may not exist again.

    Rules: `removed-module`, `shim-present` (and `parse-error`, `not-scanned`).
    """

    type_name = "removed_modules"
    kind = "removed_modules"
    removed_modules = fields.ListField(subfield=fields.StringField())
    replacements = fields.ListField(subfield=fields.StringField(), required=False)


class OperatorGroupsContract(_OwnContract):
    """Operator groups are independent, expose a public surface, and match the declaration.

    Rules: `group-boundary`, `private-import`, `unknown-group`, `unused-allowed-import`.
    """

    type_name = "operator_groups"
    kind = "operator_groups"
    container = fields.StringField()
    groups = fields.ListField(subfield=fields.StringField())
    shared_modules = fields.ListField(subfield=fields.StringField(), required=False)
    allowed_imports = fields.ListField(subfield=fields.StringField(), required=False)


class LayerContract(_OwnContract):
    """A lower layer does not import a higher one, namespace packages included. Rule: `layer`."""

    type_name = "layer"
    kind = "layer"
    layers = fields.ListField(subfield=fields.StringField())


class MissingImportsContract(_OwnContract):
    """Imports of modules (and names) under `packages` that the tree does not have.

    Rules: `missing-module`, `missing-name` (and `unused-allowed-import` for `ignore_imports`
    lines that match nothing).
    """

    type_name = "missing_imports"
    kind = "missing_imports"
    packages = fields.ListField(subfield=fields.StringField(), required=False)
    include_guarded = fields.StringField(required=False)


class DependencyUpgradeContract(_OwnContract):
    """The project runs on a given release of a dependency: every reference to `package` resolves
    in `target` (a directory or wheel in the repository, or name==version). Rules:
    `missing-module`, `missing-name` (with the new home `source` -> `target` gives, if any).
    """

    type_name = "dependency_upgrade"
    kind = "dependency_upgrade"
    package = fields.StringField()
    target = fields.StringField()
    source = fields.StringField(required=False)
