"""The command-line face: `python -m contracts` / `namespace-lint`.

    namespace-lint [--config FILE] [--src DIR] [--format text|json|github] [PATH ...]
    namespace-lint --fix | --diff [PATH ...]
    namespace-lint derive-map --removed PREFIX [--before DIR --after DIR] [--src DIR]
    namespace-lint rules [RULE_ID]

Exit codes are named below. User errors print one line to stderr and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

CACHE_DIRNAME = ".namespace_lint_cache"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's own code for usage errors)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="namespace-lint", description="Guard a namespace migration: removed modules, "
                "operator-group boundaries, the kernel layer. Reads the same .importlinter as lint-imports.")
    p.add_argument("--config", metavar="FILE",
                   help="the import-linter config (default: the first .importlinter, setup.cfg with "
                   "[importlinter] or pyproject.toml with [tool.importlinter], in the current directory "
                   "or above it up to the repository root)")
    p.add_argument("--src", metavar="DIR", help="the directory that contains the root package(s) "
                   "(default: the config's `source_dir`, else the config file's directory)")
    p.add_argument("--format", choices=("text", "json", "github"), default="text")
    p.add_argument("--contract", action="append", metavar="ID", help="check only this contract id (repeatable)")
    p.add_argument("--cache-dir", metavar="DIR", help=f"where to keep per-file results (default: {CACHE_DIRNAME}/ beside the config)")
    p.add_argument("--no-cache", action="store_true", help="read every file again; write no cache")
    p.add_argument("--baseline", metavar="FILE", help="fail only on findings not recorded in FILE")
    p.add_argument("--write-baseline", metavar="FILE", help="record today's findings in FILE and exit 0")
    fix = p.add_mutually_exclusive_group()
    fix.add_argument("--fix", action="store_true", help="rewrite fixable removed-module findings in place")
    fix.add_argument("--diff", action="store_true", help="print the --fix rewrite as a unified diff; write nothing")
    p.add_argument("paths", nargs="*", metavar="PATH", help="report findings in these files only "
                   "(the graph is still built for the whole tree)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from contracts.errors import NamespaceLintError

    try:
        if argv and argv[0] == "derive-map":
            from contracts.derive_map import main as derive_main

            return derive_main(argv[1:])
        if argv and argv[0] == "rules":
            return _rules(argv[1:])
        return _check(argv)
    except NamespaceLintError as e:
        print(f"namespace-lint: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `namespace-lint | head`
        return EXIT_FINDINGS


def _rules(argv: list[str]) -> int:
    from contracts import rules

    wanted = argv or list(rules.BY_ID)
    for rule_id in wanted:
        rule = rules.BY_ID.get(rule_id)
        if rule is None:
            print(f"namespace-lint: error: unknown rule '{rule_id}' (known: {', '.join(rules.BY_ID)})",
                  file=sys.stderr)
            return EXIT_USAGE
        print(f"# {rule.RULE_ID}\n\n{rule.__doc__.strip().split(chr(10), 1)[1].strip()}\n")
    return EXIT_CLEAN


def _check(argv: list[str]) -> int:
    from contracts import config as config_mod
    from contracts.check import run
    from contracts.errors import UsageError

    args = _check_parser().parse_args(argv)
    config_path = args.config or config_mod.find()
    if config_path is None:
        raise UsageError("no configuration found: no .importlinter, setup.cfg with [importlinter] or "
                         "pyproject.toml with [tool.importlinter] in this directory or above it up to the "
                         "repository root (pass --config FILE)")
    cfg = config_mod.load(config_path)
    for line in cfg.warnings:
        print(f"namespace-lint: warning: {line}", file=sys.stderr)
    if args.src is not None:
        src = args.src
        if not os.path.isdir(src):
            raise UsageError(f"--src {src}: no such directory")
    else:
        src = cfg.source_dir or cfg.base
        if not os.path.isdir(src):
            raise UsageError(f"{config_mod.display_name(cfg.path)}, section [importlinter], option "
                             f"'source_dir': {config_mod.display_name(src)} is not a directory")
    cache_dir = None if args.no_cache or args.fix or args.diff else (
        args.cache_dir or os.path.join(cfg.base, CACHE_DIRNAME))
    for p in args.paths:
        if not os.path.exists(p):
            raise UsageError(f"PATH {p}: no such file or directory")
    result = run(cfg, src, paths=args.paths or None, cache_dir=cache_dir, contract_ids=args.contract)
    for line in result.warnings:
        print(f"namespace-lint: warning: {line}", file=sys.stderr)
    if args.contract:
        unknown = sorted(set(args.contract) - {c.id for c in result.contracts})
        if unknown:
            raise UsageError(f"--contract {unknown[0]}: no contract of this tool's types has that id")

    if args.fix or args.diff:
        from contracts.fix import apply_fixes

        return apply_fixes(cfg, src, result, write=args.fix, out=sys.stdout)

    findings = result.findings
    extra: list[str] = []
    if args.write_baseline:
        from contracts.baseline import write

        write(args.write_baseline, findings)
        print(f"Wrote {len(findings)} findings to {args.write_baseline}.", file=sys.stderr)
        return EXIT_CLEAN
    if args.baseline:
        from contracts.baseline import apply

        findings, gone = apply(args.baseline, findings)
        if args.paths:
            gone = []  # only some files were reported on: absence elsewhere proves nothing
        extra = [f"{args.baseline}: baseline entry no longer occurs: {rule} {importer} -> {imported} "
                 f"(remove it)" for rule, importer, imported in gone]

    from contracts import report
    from contracts.findings import displayed

    findings = displayed(findings, result.src)
    if args.format == "json":
        print(report.json_report(findings, result.files_scanned))
    elif args.format == "github":
        out = report.github(findings)
        if out:
            print(out)
        print(f"Scanned {result.files_scanned} of {result.files_total} .py files: "
              f"{len(findings)} findings.", file=sys.stderr)
    else:
        print(report.text(findings, result.files_scanned, result.files_total, extra))
    if result.skipped_contracts and args.format == "text":
        print(f"({len(result.skipped_contracts)} contract(s) of import-linter's own types "
              f"not run here: {', '.join(result.skipped_contracts)}; lint-imports runs them.)",
              file=sys.stderr)
    return EXIT_FINDINGS if findings else EXIT_CLEAN
