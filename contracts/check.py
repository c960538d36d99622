"""The one use case: configuration -> scan -> rules -> findings. Both faces call `run`.

With a cache directory, a run whose tree has not changed since the last one answers from the
cache without building the model (reading no file, importing neither grimp nor the rules); a run
whose files changed but whose scan results did not reuses the findings without running the
rules. Given `paths` (pre-commit passes the changed files), every file of the tree is still
stat'ed and each changed or new one scanned again: the findings are always those of the whole
tree, filtered to `paths` afterwards. A cache that cannot be trusted (`engine/cache.py`) is not
used: one warning, and the run goes on without it.
"""

from __future__ import annotations

import functools
import gc
import os
import time

from contracts import ignores, rules
from contracts._record import Record
from contracts.config import Config, ConfigError, GroupsSpec, LayerSpec, MissingSpec, RemovedSpec, UpgradeSpec
from contracts.config_source import display_name
from contracts.engine import cache
from contracts.engine.cache import content_digest
from contracts.engine.importers import Layout, importer_files
from contracts.engine.records import ScanPlan
from contracts.engine.stamp import load_result, save_result
from contracts.errors import UsageError
from contracts.findings import Finding, shown_path

TYPE_CHECKING = False  # (type checkers read it as typing's; importing typing costs a warm run 5 ms)
if TYPE_CHECKING:  # (a warm run answered by the stamp builds no model: not even loaded)
    from contracts.engine.model import Model


class ContractResult(Record):
    id: str
    name: str
    kind: str
    findings: list[Finding]

    def __init__(self, id: str, name: str, kind: str, findings: list[Finding]) -> None:
        self.id, self.name, self.kind, self.findings = id, name, kind, findings


class Result(Record):
    files_scanned: int
    files_total: int
    findings: list[Finding]
    contracts: list[ContractResult]
    skipped_contracts: list[str]
    cache_status: str
    engine_findings: list[Finding]  # parse-error, not-scanned
    # One line each, for the face to print (never cached: they describe this run).
    warnings: list[str]
    src: str  # absolute; finding paths are relative to it (`findings.displayed` shows them)
    # Seconds per phase (`--verbose`): "cache" (looking up stored findings), "model" (walk, scan,
    # graph), "rules"; a phase that did not run is absent.
    timings: dict[str, float]
    notices: list[str]  # named files no rule checks, one line each
    hashed: int  # files the stamp read and hashed to answer (their stats had moved; `--verbose`)

    def __init__(self, files_scanned: int, files_total: int, findings: list[Finding],
                 contracts: list[ContractResult] | None = None, skipped_contracts: list[str] | None = None,
                 cache_status: str = "off", engine_findings: list[Finding] | None = None,
                 warnings: list[str] | None = None, src: str = "", timings: dict[str, float] | None = None,
                 notices: list[str] | None = None, hashed: int = 0) -> None:
        self.files_scanned, self.files_total, self.findings = files_scanned, files_total, findings
        self.contracts = [] if contracts is None else contracts
        self.skipped_contracts = [] if skipped_contracts is None else skipped_contracts
        self.cache_status = cache_status
        self.engine_findings = [] if engine_findings is None else engine_findings
        self.warnings = [] if warnings is None else warnings
        self.src = src
        self.timings = {} if timings is None else timings
        self.notices = [] if notices is None else notices
        self.hashed = hashed


# The rules each kind of contract runs (`_rule_findings`): the scan plan is the union of their `needs`.
_RULES = {
    RemovedSpec: ("removed_module", "shim_present"),
    GroupsSpec: ("group_boundary", "private_import", "unknown_group", "unused_allowed_import"),
    LayerSpec: ("layer",),
    MissingSpec: ("missing_module", "missing_name"),
}


def plan_for(config: Config, contract_ids: list[str] | None = None) -> ScanPlan:
    """What to scan for the contracts asked for (all by default): what their rules need, united
    (`ScanPlan.united`). A run of `--contract ID` for a `removed_modules` contract builds no graph."""
    specs = [spec for spec in config.specs
             if type(spec) in _RULES and (not contract_ids or spec.id in contract_ids)]
    needs = [getattr(rules, name).needs(spec, config) for spec in specs for name in _RULES[type(spec)]]
    return ScanPlan.united(config.root_packages, needs, exclude=tuple(config.exclude),
                           exclude_base=config.base if config.exclude else "",
                           narrow=not any(getattr(spec, "ignore_imports", ()) for spec in specs))


def _validate_tree(config: Config, src: str, contract_ids: list[str] | None = None) -> None:
    """The tree has the root packages, and the checked contracts' containers (a contract
    `--contract` leaves out may name a package this tree does not have yet)."""
    missing = [r for r in config.root_packages
               if not (os.path.isdir(os.path.join(src, r)) or os.path.isfile(os.path.join(src, r + ".py")))]
    if missing:
        raise UsageError(
            f"--src {src}: does not contain the root package '{missing[0]}' named in {config.path}, "
            f"section [importlinter], option 'root_packages' (no {missing[0]}/ directory or "
            f"{missing[0]}.py); pass the directory that contains it"
        )
    for spec in config.groups:
        if contract_ids and spec.id not in contract_ids:
            continue
        if not os.path.isdir(os.path.join(src, *spec.container.split("."))):
            raise ConfigError(
                f"'{spec.container}' is not a package under {src}.",
                file=config.path, section=f"importlinter:contract:{spec.id}", option="container",
            )


def contract_findings(model: Model, config: Config, spec) -> list[Finding]:
    """The findings of one contract, its `ignore_imports` applied (contracts/ignores.py): the
    imports they match are taken out of the graph the rules see (so chains through them go too,
    as in import-linter), then the findings they match are dropped, and a line that matched
    nothing is an `unused-allowed-import` finding (`_filtered` turns it into a warning under
    `unmatched_ignore_imports_alerting = warn`)."""
    patterns = getattr(spec, "ignore_imports", ())
    if not patterns or not isinstance(spec, (RemovedSpec, GroupsSpec, LayerSpec, MissingSpec)):
        return _rule_findings(model, config, spec)
    import copy  # (start-up: 0.5 ms of a warm run, answered from the cache, which never needs it)

    used: set[int] = set()
    view = copy.copy(model)
    view.edges = ignores.without_ignored(model.edges, patterns, used)
    found = ignores.filter_findings(_rule_findings(view, config, spec), patterns, used)
    unmatched = [p.text for i, p in enumerate(patterns) if i not in used]
    if unmatched and spec.unmatched_alerting != "none":
        found += rules.unused_allowed_import.unmatched_lines(model.src, config.path, spec.id, "ignore_imports",
                                                             unmatched)
    return found


def _rule_findings(model: Model, config: Config, spec) -> list[Finding]:
    """The findings of the rules of one contract, on the model its `ignore_imports` leave."""
    if isinstance(spec, RemovedSpec):
        return rules.removed_module.check(model, spec) + rules.shim_present.check(model, spec)
    if isinstance(spec, GroupsSpec):
        used: set = set()
        stop = tuple(m for layer in config.layers for m in layer.layers[:-1])
        found = rules.group_boundary.check(model, spec, used, stop)
        found += rules.private_import.check(model, spec)
        found += rules.unknown_group.check(model, spec)
        found += rules.unused_allowed_import.check(model.src, config.path, spec, used)
        return found
    if isinstance(spec, LayerSpec):
        return rules.layer.check(model, spec)
    if isinstance(spec, MissingSpec):
        return rules.missing_module.check(model, config, spec) + rules.missing_name.check(model, config, spec)
    if isinstance(spec, UpgradeSpec):
        # (start-up: `upgrade` and its index load only for a `dependency_upgrade` contract)
        from contracts.upgrade import contract_upgrade

        return contract_upgrade(config, spec).check(config, model.src)[0]
    raise TypeError(spec)


def run(config: Config, src: str, paths: list[str] | None = None,
        cache_dir: str | None = None, contract_ids: list[str] | None = None, jobs: int | None = None) -> Result:
    """`jobs`: processes for reading the files (`engine/workers.py`; None: automatic)."""
    # No cyclic garbage collection while the tree is read and checked: what a run makes (records,
    # edges, parse trees, findings) holds no cycles, and the collector's passes over a heap that
    # only grows cost a cold run tens of milliseconds in this process alone (a forked child
    # inherits the setting). Whatever was collected before is collected again after.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(config, src, paths, cache_dir, contract_ids, jobs)
    finally:
        if collecting:
            if not gc.get_freeze_count():  # (a caller that freezes objects itself keeps them so)
                # What the run made goes to the oldest generation at once (frozen, then unfrozen
                # there), not walked by the first collection once enabled; a full collection
                # still looks at it.
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def _run(config: Config, src: str, paths: list[str] | None, cache_dir: str | None,
         contract_ids: list[str] | None, jobs: int | None) -> Result:
    src = os.path.abspath(src)
    _validate_tree(config, src, contract_ids)
    warnings: list[str] = []
    if config.upgrades:
        cache_dir = None  # the findings depend on a release outside the tree, which no stamp covers
    if cache_dir:
        cache_dir = _usable_cache(os.path.abspath(cache_dir), config, src, warnings)
    plan = plan_for(config, contract_ids)
    key = _result_key(config, src, contract_ids) if cache_dir else None
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    stamp: dict = {}
    built: list = []  # the package's model, once built (the importers' `missing_imports` reads it)
    data = load_result(src, plan, cache_dir, key, report=stamp) if key else None
    full = _from_data(data)
    status = "warm"
    computed = full is None
    if full is None:
        model, data, full = _from_model(config, src, plan, contract_ids, cache_dir, key, jobs, timings, clock)
        built.append(model)
        status = model.cache_status
    else:
        timings["cache"] = time.perf_counter() - clock
    known = _importer_cache(data)
    remembered: dict = {}
    package = full
    full, notes = _with_importers(full, config, src, plan, paths, contract_ids,
                                  functools.partial(_package_model, src, plan, cache_dir, jobs, built),
                                  (known, remembered))
    if key and built and (computed or remembered != known):
        # The package's findings, and the importers' `missing_imports` findings by content, for
        # the next run (which reads again only the importers that changed).
        save_result(built[0], plan, cache_dir, key, (*_to_data(package), remembered))
    result = _filtered(full, config, src, paths, status)
    result.timings = timings
    result.hashed = stamp.get("hashed", 0) if "cache" in timings else 0
    result.warnings.extend(warnings + notes)
    result.notices = named_file_notices(config, src, paths)
    return result


def _from_model(config: Config, src: str, plan: ScanPlan, contract_ids: list[str] | None, cache_dir: str | None,
                key: str | None, jobs: int | None, timings: dict[str, float], clock: float) -> tuple:
    """(the package's model, built; the value stored for its generation, or None; the findings:
    those stored where the model's generation has them, else the rules')."""
    # Every file is stat'ed even when PATHs are given (pre-commit): a module another commit
    # changed or added can carry a chain into a given file.
    # (start-up: the model's modules, and grimp, load only where the cache does not answer)
    from contracts.engine.model import build_model

    model = build_model(src, plan, cache_dir, jobs, lazy=True)
    data = load_result(src, plan, cache_dir, key, generation=model.generation) if key else None
    full = _from_data(data)
    timings["model"] = time.perf_counter() - clock
    timings.update({f"model: {step}": seconds for step, seconds in model.phases.items()})
    if full is None:
        clock = time.perf_counter()
        full = _evaluate(model, config, contract_ids)
        timings["rules"] = time.perf_counter() - clock
    return model, data, full


def _usable_cache(cache_dir: str, config: Config, src: str, warnings: list[str]) -> str | None:
    """`cache_dir`, or None (with one warning) when it cannot be trusted or used."""
    why = cache.usable(cache_dir, [("the checked tree", src),
                                   ("the configuration's directory", os.path.dirname(os.path.abspath(config.path)))])
    if why is None:
        why = cache.prepare_directory(cache_dir)
        if why:
            why = f"cache directory {cache_dir} cannot be used ({why})"
    if why is None:
        return cache_dir
    warnings.append(f"{why}; running without a cache")
    return None


def _to_data(result: Result) -> tuple:
    """`result` as plain values (what the cache stores: no class is ever rebuilt from it by name)."""
    return (result.files_scanned, result.files_total,
            [(c.id, c.name, c.kind, [f.as_tuple() for f in c.findings]) for c in result.contracts],
            [f.as_tuple() for f in result.engine_findings])


def _importer_cache(data) -> dict:
    """The importers' `missing_imports` findings a stored value carries: {contract id: {path:
    [content digest, [finding tuples]]}} (empty for a value stored without them)."""
    if isinstance(data, (tuple, list)) and len(data) == 5 and isinstance(data[4], dict):
        return data[4]
    return {}


def _from_data(data) -> Result | None:
    if data is None:
        return None
    try:
        scanned, total, contracts, engine = data[:4]
        return Result(scanned, total, [], [ContractResult(i, n, k, [Finding(*f) for f in fs])
                                           for i, n, k, fs in contracts],
                      engine_findings=[Finding(*f) for f in engine])
    except (TypeError, ValueError):
        return None  # another shape: rebuild


def _layout(config: Config) -> Layout:
    return Layout(config.base, tuple(config.exclude), tuple(config.importer_paths))


def _root_dirs(config: Config, src: str) -> list[str]:
    return [os.path.join(src, r) for r in config.root_packages] + \
        [os.path.join(src, r + ".py") for r in config.root_packages]


def _package_model(src: str, plan: ScanPlan, cache_dir: str | None, jobs: int | None, built: list) -> Model:
    """The package's model, assembled: the one this run built, else built now (a run answered by
    the stamp has none; unchanged files come from the cache)."""
    if not built:
        from contracts.engine.model import build_model  # (start-up: as in `_run`)

        built.append(build_model(src, plan, cache_dir, jobs, lazy=True))
    model = built[0]
    model.assemble()
    return model


def _with_importers(full: Result, config: Config, src: str, plan: ScanPlan, paths: list[str] | None,
                    contract_ids: list[str] | None, package_model=None,
                    remembered: tuple[dict, dict] = ({}, {})) -> tuple[Result, list[str]]:
    """`full` with the findings of the files outside the root packages: those `importer_paths`
    names, and any `.py` file named on the command line (always checked): `removed-module`, and
    `missing-module`/`missing-name` against the package (`package_model()` gives its model).
    Read on every run (see `engine/importers.py`); `remembered`: (the last run's
    `missing_imports` findings of each importer by content digest, this run's, filled here): an
    importer whose content is the one recorded, checked against the same package, is answered
    from it without the package's model."""
    specs = [spec for spec in config.removed if not contract_ids or spec.id in contract_ids]
    missing = [spec for spec in config.missing if not contract_ids or spec.id in contract_ids]
    if not specs and not missing:
        return full, []
    layout = _layout(config)
    files, outside, notes = _importer_paths(config, src, layout, paths)
    if not files and not outside:
        return full, notes
    from contracts.engine.model import importer_model  # (start-up: as in `_run`)

    model = importer_model(sorted(set(files)), src, layout, plan.ast_words)
    model.discovery.skipped += [(os.path.relpath(path, src).replace(os.sep, "/"), reason) for path, reason in outside]
    results = [ContractResult(r.id, r.name, r.kind, _importers_of(r, config, specs, missing, model, package_model,
                                                                  remembered))
               for r in full.contracts]
    engine = sorted(set(full.engine_findings) | set(rules.parse_error.check(model))
                    | set(rules.not_scanned.check(model)))
    return Result(
        files_scanned=full.files_scanned + model.files_read,
        files_total=full.files_total + len(model.discovery.files) + len(model.discovery.skipped),
        findings=[], contracts=results, skipped_contracts=full.skipped_contracts,
        cache_status=full.cache_status, engine_findings=engine,
    ), notes


def _importer_paths(config: Config, src: str, layout: Layout,
                    paths: list[str] | None) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    """(the importer files to read; the symlinks out of the tree, as (path, reason): not-scanned,
    never read or written; a note for each `importer_paths` entry that names no file)."""
    inside = _root_dirs(config, src)
    outside: list[tuple[str, str]] = []
    files, empty = importer_files(layout, inside, outside) if config.importer_paths else ([], [])
    notes = [f"{config_source_display(config)}, section [importlinter], option 'importer_paths': "
             f"'{entry}' names no .py file outside the root packages" for entry in empty]
    if paths:
        # Every importer is read (an unchanged test can import a module a given file was), and
        # the PATHs decide what is reported (`_changed_filter`).
        files = _with_named(files, paths, layout, inside)
    return files, outside, notes


def _with_named(files: list[str], paths: list[str], layout: Layout, inside: list[str]) -> list[str]:
    """`files` and the importers `paths` name explicitly: checked even where `importer_paths`
    does not reach (a directory outside the root packages: its `.py` files)."""
    chosen = set(files)
    for path in sorted({os.path.abspath(p) for p in paths}):
        if path in chosen:
            continue
        if os.path.isdir(path) and not _is_inside(path, inside):
            chosen.update(importer_files(Layout(layout.base, layout.exclude, (path,)), inside)[0])
        elif (path.endswith(".py") and os.path.isfile(path)
                and not _is_inside(path, inside) and not layout.excluded_by(path)):
            chosen.add(path)
    return sorted(chosen)


def _importer_findings(model, spec: RemovedSpec, package_findings) -> tuple[list[Finding], set[Finding]]:
    """(`removed-module` findings of the importers, with the contract's `ignore_imports` applied;
    the package's "`ignore_imports` line ... matches no import" findings whose line an importer
    did match)."""
    patterns = getattr(spec, "ignore_imports", ())
    used: set[int] = set()
    extra = ignores.filter_findings(rules.removed_module.check(model, spec), patterns, used)
    matched = {tuple(part.strip() for part in patterns[i].text.partition("->")[::2]) for i in used}
    stale = {f for f in package_findings if f.rule == "unused-allowed-import"
             and f.message.startswith("`ignore_imports` line") and (f.importer, f.imported) in matched}
    return extra, stale


def _importers_of(r: ContractResult, config: Config, specs, missing, model, package_model,
                  remembered) -> list[Finding]:
    """The findings of contract result `r` with those of the importers (`model`) added."""
    found = r.findings
    spec = next((s for s in specs if s.id == r.id), None) if r.kind == "removed_modules" else None
    if spec is not None:
        extra, unused_after_all = _importer_findings(model, spec, found)
        found = sorted((set(found) - unused_after_all) | set(extra))
    wanted = next((s for s in missing if s.id == r.id), None) if r.kind == "missing_imports" else None
    if wanted is not None and model.discovery.files:
        extra, unused_after_all = _importer_missing(package_model, config, wanted, model.discovery.files, found,
                                                    remembered)
        found = sorted((set(found) - unused_after_all) | set(extra))
    return found


def _importer_missing(package_model, config: Config, spec: MissingSpec, files, package_findings,
                      remembered: tuple[dict, dict]) -> tuple[list[Finding], set[Finding]]:
    """As `_importer_findings`, for a `missing_imports` contract: the importers' imports of
    modules and names the package does not have (see `_with_importers` for `remembered`)."""
    from contracts.rules import _missing  # (start-up: 4.4 ms of a warm run, which never needs it)

    new = remembered[1].setdefault(spec.id, {})
    found, todo = _remembered(files, remembered[0].get(spec.id, {}), new)
    if todo:
        fresh = _missing.importer_findings(package_model(), config, spec, [f for f, _ in todo])
        by_rel: dict[str, list] = {}
        for finding in fresh:
            by_rel.setdefault(finding.path, []).append(finding.as_tuple())
        for f, digest in todo:
            new[f.rel] = [digest, by_rel.get(f.rel, [])]
        found.extend(fresh)
    patterns = getattr(spec, "ignore_imports", ())
    used: set[int] = set()
    extra = ignores.filter_findings(sorted(set(found)), patterns, used)
    matched = {tuple(part.strip() for part in patterns[i].text.partition("->")[::2]) for i in used}
    stale = {f for f in package_findings if f.rule == "unused-allowed-import"
             and f.message.startswith("`ignore_imports` line") and (f.importer, f.imported) in matched}
    return extra, stale


def _remembered(files, old: dict, new: dict) -> tuple[list[Finding], list]:
    """(the findings `old` holds for the files of `files` whose content is the recorded one,
    the other files with their content digests); `new` gets the entries used."""
    found: list[Finding] = []
    todo = []
    for f in files:
        try:
            with open(f.path, "rb") as fh:
                digest = content_digest(fh.read()).hex()
        except OSError:
            continue  # `not-scanned` reports it
        entry = old.get(f.rel)
        try:
            if entry is None or entry[0] != digest:
                raise ValueError(f.rel)
            found.extend([Finding(*t) for t in entry[1]])
            new[f.rel] = entry
        except (TypeError, ValueError, IndexError):  # not recorded, changed, or another shape
            todo.append((f, digest))
    return found, todo


def _is_inside(path: str, tops: list[str]) -> bool:
    """Is `path` in one of `tops` (as written, or once links are resolved)?"""
    if any(path == t or path.startswith(t + os.sep) for t in tops):
        return True  # the common case, without a system call
    real = os.path.realpath(path)
    return any(real == t or real.startswith(t + os.sep) for t in _realpaths(tuple(tops)))


@functools.lru_cache(maxsize=8)
def _realpaths(tops: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(os.path.realpath(t) for t in tops)


def config_source_display(config: Config) -> str:
    return display_name(config.path)


def named_file_notices(config: Config, src: str, paths: list[str] | None) -> list[str]:
    """One line for each file named on the command line that no rule checks: excluded by the
    config, or not Python. (A `.py` file is otherwise always checked: as a module of the root
    packages, or as an importer.)"""
    notices = []
    layout = _layout(config)
    for p in paths or ():
        if not os.path.isfile(p):
            continue
        shown = shown_path(os.path.abspath(p), src)
        pattern = layout.excluded_by(p)
        if pattern is not None:
            notices.append(f"{shown}: not checked: excluded by the pattern '{pattern}' of option 'exclude' "
                           f"in {config_source_display(config)}")
        elif not p.endswith(".py"):
            notices.append(f"{shown}: not checked: not a `.py` file, so no rule applies to it")
    return notices


def _evaluate(model: Model, config: Config, contract_ids: list[str] | None) -> Result:
    """The findings of the whole tree (no path filter)."""
    model.assemble()
    engine = rules.parse_error.check(model) + rules.not_scanned.check(model)
    results = []
    for spec in config.specs:
        if contract_ids and spec.id not in contract_ids:
            continue
        found = sorted(set(contract_findings(model, config, spec)))
        kind = {RemovedSpec: "removed_modules", GroupsSpec: "operator_groups", LayerSpec: "layer",
                MissingSpec: "missing_imports", UpgradeSpec: "dependency_upgrade"}[type(spec)]
        results.append(ContractResult(spec.id, spec.name, kind, found))
    return Result(
        files_scanned=model.files_read,
        files_total=len(model.discovery.files) + len(model.discovery.skipped),
        findings=[],
        contracts=results,
        engine_findings=engine,
    )


def _filtered(full: Result, config: Config, src: str, paths: list[str] | None, status: str) -> Result:
    keep = _changed_filter(config, src, paths)
    warn = {spec.id for spec in config.specs
            if getattr(spec, "unmatched_alerting", "error") == "warn"}
    warnings = []
    results = []
    for r in full.contracts:
        kept = []
        for f in r.findings:
            if r.id in warn and f.rule == "unused-allowed-import" and f.message.startswith("`ignore_imports` line"):
                warnings.append(f"{f.path}:{f.line}: {f.message}")  # unmatched_ignore_imports_alerting = warn
            elif keep(f):
                kept.append(f)
        results.append(ContractResult(r.id, r.name, r.kind, kept))
    engine = [f for f in full.engine_findings if keep(f)]
    everything = sorted(set(engine).union(*(set(r.findings) for r in results)))
    return Result(
        files_scanned=full.files_scanned,
        files_total=full.files_total,
        findings=everything,
        contracts=results,
        skipped_contracts=list(config.skipped),
        cache_status=status,
        engine_findings=engine,
        src=src,
        warnings=warnings,
    )


def _result_key(config: Config, src: str, contract_ids: list[str] | None) -> str | None:
    """What the findings depend on besides the tree: the configuration file (its path appears
    in findings), the contracts asked for. None when the configuration cannot be read again."""
    try:
        with open(config.path, "rb") as f:
            text = f.read()
    except OSError:
        return None
    import hashlib  # (a run without a cache never loads it)

    ids = tuple(sorted(contract_ids)) if contract_ids else None
    return repr((src, config.path, hashlib.sha1(text).hexdigest(), ids))


def _changed_filter(config: Config, src: str, paths: list[str] | None):
    """Keeps the findings the files at `paths` (changed, renamed or deleted: pre-commit's, or
    `git diff --name-only`'s) can have caused: those in these files, and those anywhere whose
    import names a module of these files (or a name or submodule of one: an importer the change
    did not touch, whose import it broke), or whose chain passes through one. What is left out
    cannot have been affected by them."""
    in_paths = _path_filter(src, paths)
    modules = modules_of(config, src, paths or ())
    if not modules:
        return lambda f: in_paths(f.path)

    def touched(name: str) -> bool:  # `name` or a package above it is one of `modules`
        parts = name.split(".")
        return any(".".join(parts[:i]) in modules for i in range(1, len(parts) + 1))

    def keep(f: Finding) -> bool:
        if in_paths(f.path) or touched(f.imported.partition(":")[0]):
            return True
        chain = f.message.partition("through a chain: ")[2]
        return bool(chain) and any(touched(m) for m in chain.split("`")[1::2])

    return keep


def modules_of(config: Config, src: str, paths) -> set[str]:
    """The dotted names of the modules (and packages) of the root packages at `paths`, whether
    the files still exist or not."""
    out: set[str] = set()
    for p in paths:
        rel = os.path.relpath(os.path.abspath(p), src).replace(os.sep, "/")
        parts = rel.split("/")
        if rel.startswith("../") or parts[0].removesuffix(".py") not in config.root_packages:
            continue
        if parts[-1].endswith((".py", ".pyi")):
            parts[-1] = parts[-1].rsplit(".", 1)[0]
            if parts[-1] == "__init__":
                parts.pop()
        elif not os.path.isdir(p) and os.path.splitext(parts[-1])[1]:
            continue  # not a module: a data file
        if parts and all(part.isidentifier() for part in parts):
            out.add(".".join(parts))
    return out


def _path_filter(src: str, paths: list[str] | None):
    """Keeps the findings under `paths`, each spelled as given and as its real path (a PATH
    through a symlink names the file the tree holds)."""
    if not paths:
        return lambda rel: True
    wanted = set()
    real_src = os.path.realpath(src)
    for p in paths:
        for rel in (os.path.relpath(os.path.abspath(p), src), os.path.relpath(os.path.realpath(p), real_src)):
            wanted.add(rel.replace(os.sep, "/").rstrip("/"))

    def keep(rel: str) -> bool:
        return any(rel == w or rel.startswith(w + "/") or w == "." for w in wanted)

    return keep
