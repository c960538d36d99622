"""The one use case: configuration -> scan -> rules -> findings. Both faces call `run`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from contracts.config import Config, ConfigError, GroupsSpec, LayerSpec, RemovedSpec
from contracts.engine.model import Model, ScanPlan, build_model
from contracts.engine.resolve import is_under
from contracts.errors import UsageError
from contracts.findings import Finding
from contracts import rules


@dataclass
class ContractResult:
    id: str
    name: str
    kind: str
    findings: list[Finding]


@dataclass
class Result:
    files_scanned: int
    files_total: int
    findings: list[Finding]
    contracts: list[ContractResult] = field(default_factory=list)
    skipped_contracts: list[str] = field(default_factory=list)
    cache_status: str = "off"
    engine_findings: list[Finding] = field(default_factory=list)  # parse-error, not-scanned


def _below_root(module: str) -> str:
    """`sglang.kernels.ops` -> `sglang.kernels`: the top-level subpackage holding it."""
    parts = module.split(".")
    return ".".join(parts[:2])


def plan_for(config: Config) -> ScanPlan:
    ast_words = {p.rsplit(".", 1)[-1].encode() for spec in config.removed for p in spec.removed}
    ast_prefixes = {p for spec in config.removed for p in spec.removed}
    graph_prefixes: set[str] = set()
    graph_words: set[bytes] = set()
    name_prefixes: set[str] = set()
    stop: set[str] = set()
    for spec in config.groups:
        for m in (spec.container, *spec.shared_modules):
            top = _below_root(m)
            graph_prefixes.add(top)
            graph_words.add(top.rsplit(".", 1)[-1].encode())
            name_prefixes.add(m)
    for spec in config.layers:
        graph_prefixes.update(spec.layers[1:])
        stop.update(spec.layers[:-1])
    return ScanPlan(
        roots=config.root_packages,
        ast_words=tuple(sorted(ast_words)),
        ast_prefixes=tuple(sorted(ast_prefixes)),
        graph_words=tuple(sorted(graph_words)),
        graph_prefixes=tuple(sorted(graph_prefixes)),
        closure_stop=tuple(sorted(stop)),
        name_prefixes=tuple(sorted(name_prefixes)),
    )


def _validate_tree(config: Config, src: str) -> None:
    missing = [r for r in config.root_packages
               if not (os.path.isdir(os.path.join(src, r)) or os.path.isfile(os.path.join(src, r + ".py")))]
    if missing:
        raise UsageError(
            f"--src {src}: does not contain the root package '{missing[0]}' (no {missing[0]}/ "
            f"directory or {missing[0]}.py); pass the directory that contains it"
        )
    for spec in config.groups:
        if not os.path.isdir(os.path.join(src, *spec.container.split("."))):
            raise ConfigError(
                f"'{spec.container}' is not a package under {src}.",
                file=config.path, section=f"importlinter:contract:{spec.id}", option="container",
            )


def contract_findings(model: Model, config: Config, spec) -> list[Finding]:
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
    raise TypeError(spec)


def run(config: Config, src: str, paths: list[str] | None = None,
        cache_dir: str | None = None, contract_ids: list[str] | None = None) -> Result:
    src = os.path.abspath(src)
    _validate_tree(config, src)
    model = build_model(src, plan_for(config), cache_dir)
    engine = rules.parse_error.check(model) + rules.not_scanned.check(model)
    keep = _path_filter(src, paths)
    results = []
    for spec in (*config.removed, *config.groups, *config.layers):
        if contract_ids and spec.id not in contract_ids:
            continue
        found = sorted(set(contract_findings(model, config, spec)))
        kind = {RemovedSpec: "removed_modules", GroupsSpec: "operator_groups", LayerSpec: "layer"}[type(spec)]
        results.append(ContractResult(spec.id, spec.name, kind, [f for f in found if keep(f.path)]))
    engine = [f for f in engine if keep(f.path)]
    everything = sorted(set(engine).union(*(set(r.findings) for r in results)))
    return Result(
        files_scanned=model.files_read,
        files_total=len(model.discovery.files) + len(model.discovery.skipped),
        findings=everything,
        contracts=results,
        skipped_contracts=list(config.skipped),
        cache_status=model.cache_status,
        engine_findings=engine,
    )


def _path_filter(src: str, paths: list[str] | None):
    if not paths:
        return lambda rel: True
    wanted = set()
    for p in paths:
        rel = os.path.relpath(os.path.abspath(p), src).replace(os.sep, "/")
        wanted.add(rel.rstrip("/"))

    def keep(rel: str) -> bool:
        return any(rel == w or rel.startswith(w + "/") or w == "." for w in wanted)

    return keep
