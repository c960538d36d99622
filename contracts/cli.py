"""The command-line face: `python -m contracts` / `namespace-lint`.

    namespace-lint [check] [OPTIONS] [PATH ...]     check the tree (the default command)
    namespace-lint rules [--output-format text|json] [RULE_ID ...]
    namespace-lint derive-map --removed PREFIX [--before DIR --after DIR] [--src DIR]
    namespace-lint upgrade PACKAGE --to SPEC [--from SPEC] [--fix | --diff] [PATH ...]
    namespace-lint --pre-commit [ARGS] [FILE ...]   the hook's entry: trailing FILEs are paths only

Exit codes, as ruff's: 0 no finding (left), 1 findings (after `--fix`: findings remain, of any
rule; with `--diff`: it would change something, or findings remain), 2 a usage or configuration
error (one line on stderr, never a traceback), 130 interrupted (Ctrl-C). `--exit-zero` turns 1
into 0.

A check runs as parse -> load (`_project`) -> run (`contracts.check`) -> report (`_report`:
baseline, fix, render) -> exit code. What only a run needs is imported once the arguments are
parsed, where a comment says so: `--help` and a usage error load neither the engine nor libcst.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib.util
import os
import sys
import threading
import time

from contracts import config as config_mod
from contracts import rules
from contracts._version import __version__
from contracts.config_source import shown
from contracts.errors import NamespaceLintError, UsageError
from contracts.findings import displayed
from contracts.renderers import Edit, Report, RuleDoc, render
from contracts.renderers._common import stale_text
from contracts.safe_paths import refuse_linked_directories, write_output
from contracts.terminal import Progress, use_colour

EXIT_CLEAN = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C

CACHE_DIRNAME = ".namespace_lint_cache"

FORMAT_CHOICES = ("concise", "full", "json", "json-lines", "github", "sarif", "gitlab", "junit", "text")
# The formats read by a person at a terminal (colour, notes in the report, the skipped contracts).
_HUMAN_FORMATS = ("concise", "text", "full")

COMMANDS = """\
commands:
  check                 check the tree (the default; `namespace-lint check ...` is the same)
  rules [RULE_ID ...]   list the rules, one line each; with RULE_IDs, their full documentation
  derive-map            derive the `replacements` lines of a removed_modules contract
                        (`namespace-lint derive-map --help`)
  upgrade PACKAGE --to SPEC
                        will this project run on that release of PACKAGE? its references to
                        PACKAGE checked (and with --fix, moved) (`namespace-lint upgrade --help`)
  lint-imports [ARGS]   import-linter's lint-imports on the configured packages (`source_dir` first
                        on sys.path, no logo): what the pre-commit hook runs

exit status: 0 clean, 1 findings, 2 usage or configuration error, 130 interrupted
"""

_NO_CONFIG = ("no configuration found: no .importlinter, setup.cfg with [importlinter] or "
              "pyproject.toml with [tool.importlinter] in this directory or above it up to the "
              "repository root")


# --------------------------------------------------------------------------- parsing

_COLUMNS: list[int] = []


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's, with the width `shutil.get_terminal_size` gives (`COLUMNS`, else the terminal,
    else 80) found once, without importing `shutil` (and through it `bz2` and `lzma`): argparse
    makes a formatter for every option it is given, on every run."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            if not _COLUMNS:
                _COLUMNS.append(_terminal_columns())
            width = _COLUMNS[0] - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _terminal_columns() -> int:
    raw = os.environ.get("COLUMNS", "")
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's own code for usage errors)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _jobs(text: str) -> int:
    """`--jobs N`: a whole number of processes, 0 for automatic."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number of processes (0: automatic), got {text!r}")
    return int(text)


def _jobs_asked(args) -> int | None:
    """`--jobs`, else `NAMESPACE_LINT_JOBS` (checked here: a typo there is an error, not a default)."""
    if args.jobs is not None:
        return args.jobs
    raw = os.environ.get("NAMESPACE_LINT_JOBS", "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise UsageError(f"NAMESPACE_LINT_JOBS={raw!r}: expected a whole number of processes (0: automatic)")
    return int(raw)


def _check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="namespace-lint", description="Guard a namespace migration: removed modules, "
                "operator-group boundaries, the kernel layer. Reads the same .importlinter as lint-imports.",
                epilog=COMMANDS, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"namespace-lint {__version__}")
    p.add_argument("--config", metavar="FILE",
                   help="the import-linter config (default: the first .importlinter, setup.cfg with "
                   "[importlinter] or pyproject.toml with [tool.importlinter], in the current directory "
                   "or above it up to the repository root)")
    p.add_argument("--root-package", action="append", metavar="NAME",
                   help="no config file: check this package (under --src) for imports of modules and "
                        "names it does not have (the missing_imports contract alone; repeatable)")
    p.add_argument("--src", metavar="DIR", help="the directory that contains the root package(s) "
                   "(default: the config's `source_dir`, else the config file's directory)")
    p.add_argument("--output-format", "--format", dest="format", choices=FORMAT_CHOICES, default="concise",
                   metavar="FORMAT", help="concise (default; alias text), full, json, json-lines, github, "
                   "sarif, gitlab, junit")
    p.add_argument("-o", "--output-file", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--contract", action="append", metavar="ID", help="check only this contract id (repeatable)")
    p.add_argument("--cache-dir", metavar="DIR", help=f"where to keep per-file results (default: {CACHE_DIRNAME}/ beside the config)")
    p.add_argument("--no-cache", action="store_true", help="read every file again; write no cache")
    p.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                   help="processes that read and parse the files (default: both cores when there are "
                        "enough files, else 1; 1: this process only; also NAMESPACE_LINT_JOBS)")
    p.add_argument("--baseline", metavar="FILE", help="fail only on findings not recorded in FILE")
    p.add_argument("--strict-baseline", action="store_true", default=None,
                   help="with --baseline: also fail when an entry of FILE no longer occurs")
    p.add_argument("--write-baseline", metavar="FILE", help="record today's findings in FILE and exit 0; with --baseline: write that baseline pruned (nothing added)")
    fix = p.add_mutually_exclusive_group()
    fix.add_argument("--fix", action="store_true", help="rewrite fixable findings in place; report what is left")
    fix.add_argument("--diff", action="store_true", help="print the --fix rewrite as a unified diff; write nothing")
    p.add_argument("--verify-against", metavar="TREE", action="append",
                   help="check every rewrite against the new release (a directory, a wheel, or "
                   "name==version): one that would not resolve there is reported and not made; without "
                   "--fix/--diff, only report. Repeatable: each rewrite is checked against the TREE that "
                   "holds its top-level package (another distribution's, e.g. -> joblib)")
    p.add_argument("--statistics", action="store_true", help="count findings per rule (and how many are fixable)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="print the findings only (no summary, no notes)")
    talk.add_argument("-v", "--verbose", action="store_true", help="also print timings per phase and what the cache did")
    p.add_argument("paths", nargs="*", metavar="PATH", help="report only what these files (changed, "
                   "renamed or deleted) can have caused: findings in them, imports of their modules and "
                   "names, chains through them (the graph is still built for the whole tree)")
    return p


def _upgrade_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="namespace-lint upgrade", formatter_class=_Formatter,
                description="Check every reference this project makes to PACKAGE (imports at any depth,\n"
                "importlib, string targets, mock.patch targets, names used through a module alias)\n"
                "against another release of it: missing-module and missing-name findings, each with\n"
                "where it went when the map derived from --from to --to gives one home that resolves\n"
                "in --to (then --fix writes it).")
    p.add_argument("package", metavar="PACKAGE", help="the dependency's top-level package, e.g. sglang")
    spec = ("a directory that holds PACKAGE, a wheel, or name==version (fetched as a wheel with "
            "`pip download --no-deps --only-binary :all:`; never built from an sdist)")
    p.add_argument("--to", metavar="SPEC", help=f"the release to run on: {spec}; default: the `target` of "
                   f"the config's dependency_upgrade contract for PACKAGE")
    p.add_argument("--from", dest="from_spec", metavar="SPEC", help=f"the release the project was written "
                   f"against (where things moved from): {spec}; default: the contract's `source`, else "
                   f"the installed distribution of PACKAGE, read as files")
    p.add_argument("--config", metavar="FILE", help="the project's import-linter config (default: found "
                   "upward, as for check): its root packages and importer_paths are the project")
    p.add_argument("--root-package", action="append", metavar="NAME", help="no config file: the "
                   "project's package under --src (repeatable)")
    p.add_argument("--src", metavar="DIR", help="the directory that contains the project's package(s)")
    p.add_argument("--output-format", "--format", dest="format", choices=FORMAT_CHOICES, default="concise",
                   metavar="FORMAT", help="as for check")
    p.add_argument("-o", "--output-file", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--baseline", metavar="FILE", help="fail only on findings not recorded in FILE")
    p.add_argument("--strict-baseline", action="store_true", default=None,
                   help="with --baseline: also fail when an entry of FILE no longer occurs")
    p.add_argument("--write-baseline", metavar="FILE", help="record today's findings in FILE and exit 0")
    fix = p.add_mutually_exclusive_group()
    fix.add_argument("--fix", action="store_true", help="rewrite each finding with one verified new home")
    fix.add_argument("--diff", action="store_true", help="print the --fix rewrite as a unified diff; write nothing")
    p.add_argument("--statistics", action="store_true", help="count findings per rule")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    talk = p.add_mutually_exclusive_group()
    talk.add_argument("-q", "--quiet", action="store_true", help="print the findings only")
    talk.add_argument("-v", "--verbose", action="store_true", help="also print timings per phase")
    p.add_argument("paths", nargs="*", metavar="PATH", help="report findings in these files only")
    p.set_defaults(contract=None, jobs=1, no_cache=True, cache_dir=None, verify_against=None)
    return p


def _rules_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="namespace-lint rules", description="The rules: one line each (id, whether "
                "--fix repairs it, what it flags); with RULE_IDs, their full documentation.")
    p.add_argument("--output-format", "--format", dest="format", choices=("text", "json"), default="text")
    p.add_argument("rule_ids", nargs="*", metavar="RULE_ID")
    return p


def _valued_options(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings of `parser` that take a separate value."""
    return {s for action in parser._actions if action.option_strings and action.nargs != 0
            for s in action.option_strings}


# --------------------------------------------------------------------------- the process

def entry() -> None:
    """The `namespace-lint` command and `python -m contracts`: `main`, then the exit. What the run
    made (findings, records, stamps: no cycles among them) is frozen out of the interpreter's last
    garbage collection, which would walk all of it only to find nothing."""
    code = main()
    gc.freeze()
    _leave(code)


def _leave(code: int) -> None:
    """Exit with `code` as `sys.exit` would, without the interpreter's teardown: what it would
    still do for this process is free, one by one, what is left (every module, and what they
    hold), which nothing reads again (mypy leaves so too: its `util.hard_exit`, which runs no exit
    handlers). The output is flushed and the exit handlers run first (`atexit`: the temporary
    trees of `--verify-against` are removed there), as at a normal exit; where a thread still
    runs, or the handlers cannot be run as the interpreter runs them, the interpreter exits as
    usual."""
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None or not isinstance(code, int) or _other_threads():
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`), a closed stream: as at exit, ignored
            pass
    run_handlers()
    os._exit(code)


def _other_threads() -> bool:
    """Does a thread other than this one (and daemon threads) still run? (A normal exit waits for
    it; `_leave` then leaves it to the interpreter.)"""
    here = threading.current_thread()
    return any(t is not here and not t.daemon and t.is_alive() for t in threading.enumerate())


def main(argv: list[str] | None = None) -> int:
    """Run one command line (`sys.argv` by default) and return its exit code; every error a run
    can end in is one line on stderr, never a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(argv)
    except NamespaceLintError as e:
        print(f"namespace-lint: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except (MemoryError, RecursionError) as e:  # an input no check above bounded: say so, briefly
        kind = "too large" if isinstance(e, MemoryError) else "nested too deeply"
        print(f"namespace-lint: error: an input is {kind} to process ({type(e).__name__}); "
              f"if it is a file under --src, exclude it", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("namespace-lint: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `namespace-lint | head`
        return EXIT_FINDINGS


def _dispatch(argv: list[str]) -> int:
    """The command `argv` names (`check` when it names none)."""
    if argv and argv[0] == "--pre-commit":  # the hook's entry: file names are never options
        from contracts.hook_args import split  # only for the hook: 0.2 ms of every other start-up

        argv = split(argv[1:], _valued_options(_check_parser()))
    command = _SUBCOMMANDS.get(argv[0]) if argv else None
    if command is not None:
        return command(argv[1:])
    return _check(argv[1:] if argv and argv[0] == "check" else argv)


# --------------------------------------------------------------------------- the other commands

def _derive_map(argv: list[str]) -> int:
    """`namespace-lint derive-map`: `contracts.derive_map`, under a progress line."""
    from contracts.derive_map import main as derive_main  # only for this command: it loads the model builder

    progress = Progress()
    with progress.phase("deriving the map"), progress.guarding():
        return derive_main(argv)


def _rules(argv: list[str]) -> int:
    """`namespace-lint rules`: the rules, one line each, or the full documentation of some."""
    args = _rules_parser().parse_args(argv)
    for rule_id in args.rule_ids:
        if rule_id not in rules.BY_ID:
            raise UsageError(f"unknown rule '{rule_id}' (known: {', '.join(rules.BY_ID)})")
    chosen = [rules.BY_ID[r] for r in args.rule_ids] or list(rules.ALL)
    docs = [rules.doc(rule) for rule in chosen]
    if args.format == "json":
        import json  # only here: a check's start-up would pay for it (about 1 ms)

        print(json.dumps(docs, indent=2))
    elif args.rule_ids:
        print("\n".join(f"# {d['id']}\n\n{d['text']}\n" for d in docs))
    else:
        _print_rule_list(docs)
    return EXIT_CLEAN


def _print_rule_list(docs: list[dict]) -> None:
    width = max(len(d["id"]) for d in docs)
    print("\n".join(f"{d['id']:<{width}}  {'[*]' if d['fix'] != 'never' else '   '}  {d['summary']}"
                    for d in docs))
    print("\n[*]: --fix can repair some findings. `namespace-lint rules RULE_ID` shows the full documentation.")


def _lint_imports(argv: list[str]) -> int:
    """`namespace-lint lint-imports [ARGS]`: import-linter's `lint-imports` on the user's code, as a
    pre-commit hook runs it. The config is found as `namespace-lint` finds it (upward, or
    `--config`), the directory holding the root packages (`source_dir`) goes first on `sys.path`
    so that grimp and these contract types read the user's packages and never a copy installed in
    the hook's environment, and the logo is left out."""
    # Only this command needs import-linter (click, rich); imported before `source_dir` goes on
    # sys.path, so that nothing of the user's can stand in for it.
    from importlinter.cli import lint_imports_command

    given = _config_option(argv)
    path = given or config_mod.find()
    if path is None:
        raise UsageError(f"{_NO_CONFIG} (pass --config FILE)")
    cfg = config_mod.load(path)
    src = _configured_source_dir(cfg)
    sys.path.insert(0, src)
    _require_roots_under(cfg, src)
    args = _lint_imports_args(argv, lint_imports_command.params, path, given)
    sys.argv = ["lint-imports", *args]  # the contract types read --config from it
    try:
        lint_imports_command.main(args=args, prog_name="lint-imports", standalone_mode=False)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return EXIT_CLEAN


def _config_option(argv: list[str]) -> str | None:
    """The value of `--config FILE` / `--config=FILE` in `argv`, if given."""
    return next((a.split("=", 1)[1] if "=" in a else argv[i + 1]
                 for i, a in enumerate(argv) if a == "--config" and i + 1 < len(argv) or a.startswith("--config=")),
                None)


def _require_roots_under(cfg, src: str) -> None:
    """Each root package must be found in `src` (first on sys.path), not in an installed copy."""
    for root in cfg.root_packages:
        spec = importlib.util.find_spec(root)  # locates it without importing it
        where = list(spec.submodule_search_locations or [spec.origin or ""]) if spec else []
        if not where or not os.path.realpath(where[0]).startswith(os.path.realpath(src) + os.sep):
            raise UsageError(f"root package '{root}' is not in {config_mod.display_name(src)} "
                             f"(found: {where[0] if where else 'nowhere'}); set 'source_dir' in "
                             f"{config_mod.display_name(cfg.path)}")


def _lint_imports_args(argv: list[str], params, path: str, given: str | None) -> list[str]:
    """`argv` for `lint-imports`: the config file named when the user named none, and no logo."""
    args = list(argv)
    names = {p.name for p in params}
    if given is None and not _positional(args, params):
        # import-linter 2.4+ takes config files as arguments (and deprecates --config).
        args += [path] if "config_files" in names else ["--config", path]
    if "--no-logo" not in args and "no_logo" in names:
        args.append("--no-logo")
    return args


def _positional(args: list[str], params) -> list[str]:
    """The arguments of `args` that are neither options nor an option's value."""
    valued = {p for param in params if not getattr(param, "is_flag", True)
              for p in getattr(param, "opts", ())}  # --contract ID, --cache-dir DIR, --config FILE
    return [a for i, a in enumerate(args) if not a.startswith("-") and not (i and args[i - 1] in valued)]


def _upgrade(argv: list[str]) -> int:
    """`namespace-lint upgrade`: `contracts.upgrade` on the project, reported as `check` reports."""
    args = _upgrade_parser().parse_args(argv)
    # After parsing: the checker loads the engine, `contracts.upgrade` the wheel readers.
    from contracts.check import Result

    timings: dict[str, float] = {}
    cfg, src, _ = _project(args, timings)
    spec = next((s for s in cfg.upgrades if s.package == args.package), None)
    if args.to is None and spec is None:
        raise UsageError(f"--to SPEC: name the release of `{args.package}` to check against (or configure a "
                         f"dependency_upgrade contract with package = {args.package})")
    _check_run_args(args, cfg, src)
    progress = _progress(args)
    clock = time.perf_counter()
    with progress.phase("reading the releases"):
        upgrade = _open_upgrade(args, cfg, spec)
    timings["releases"] = time.perf_counter() - clock
    if args.fix or args.diff:
        args.verify_against = [args.to]  # a rewrite is written only when it resolves in --to

    def checked() -> Result:
        findings, files = upgrade.check(cfg, src, args.paths or None)
        return Result(files_scanned=files, files_total=files, findings=findings, src=os.path.abspath(src))

    with progress.phase("checking"):
        result = checked()
    if upgrade.old is None and not args.quiet:
        print(f"namespace-lint: notice: no --from release (and `{args.package}` is not installed): "
              f"findings say what is missing, not where it went", file=sys.stderr)
    return _report(args, cfg, src, result, progress, timings, checked)


def _open_upgrade(args, cfg, spec):
    """The two releases `args` name (`--to`, `--from`), else the configured contract's; sets
    `args.to` to the contract's target when it came from there."""
    from contracts.upgrade import contract_upgrade, open_upgrade  # after parsing: the wheel readers

    if args.to is not None:
        return open_upgrade(args.package, args.to, args.from_spec)
    if args.from_spec is not None:
        spec = type(spec)(spec.id, spec.name, spec.package, spec.target, args.from_spec)
    upgrade = contract_upgrade(cfg, spec)
    args.to = upgrade.to.spec
    return upgrade


# The commands named by the first argument; any other command line is `check`'s.
_SUBCOMMANDS = {"derive-map": _derive_map, "rules": _rules, "upgrade": _upgrade, "lint-imports": _lint_imports}


# --------------------------------------------------------------------------- check: parse -> load -> run

def _check(argv: list[str]) -> int:
    """`namespace-lint [check]`: parse, load the project, run its contracts, report."""
    args = _check_parser().parse_args(argv)
    # After parsing: the checker loads the engine, which `--help` and a usage error do not need.
    from contracts import check

    timings: dict[str, float] = {}
    cfg, src, cache_dir = _project(args, timings)
    _check_run_args(args, cfg, src)
    progress = _progress(args)

    def run(cache: str | None):
        return check.run(cfg, src, paths=args.paths or None, cache_dir=cache, contract_ids=args.contract,
                         jobs=_jobs_asked(args))

    with progress.phase("checking"):
        result = run(cache_dir)
    timings.update(result.timings)
    _print_run_messages(result)
    _engine_notes(args)
    _require_known_contracts(args, result)
    return _report(args, cfg, src, result, progress, timings, lambda: run(None))


def _progress(args) -> Progress:
    """The progress line of a run (never with `--quiet`)."""
    return Progress(enabled=None if not args.quiet else False)


def _print_run_messages(result) -> None:
    for line in result.warnings:
        print(f"namespace-lint: warning: {line}", file=sys.stderr)
    for line in result.notices:
        print(f"namespace-lint: notice: {line}", file=sys.stderr)


def _require_known_contracts(args, result) -> None:
    """Each `--contract ID` must name a contract this tool ran."""
    if args.contract:
        unknown = sorted(set(args.contract) - {c.id for c in result.contracts})
        if unknown:
            raise UsageError(f"--contract {unknown[0]}: no contract of this tool's types has that id")


def _check_run_args(args, cfg, src: str) -> None:
    """The PATHs and baseline options of a run, checked before it: a PATH that does not exist must
    name a module of the root packages (deleted or renamed away: `git diff --name-only` lists it);
    `--write-baseline` never writes through a linked directory."""
    for p in args.paths:
        if not os.path.exists(p):
            from contracts.check import modules_of  # the engine: not loaded by --help

            if not modules_of(cfg, src, [p]):
                raise UsageError(f"PATH {p}: no such file or directory (nor a module of "
                                 f"{', '.join(cfg.root_packages)} under {src})")
    if args.strict_baseline and not args.baseline:
        raise UsageError("--strict-baseline needs --baseline FILE")
    if args.write_baseline:
        refuse_linked_directories(args.write_baseline, "--write-baseline")


def _project(args, timings: dict[str, float]):
    """(the configuration, the source directory, the cache directory or None) that `args` name:
    the config found upward (or `--config`), or `--root-package` without one."""
    clock = time.perf_counter()
    if args.root_package:
        cfg, src = _zero_config_project(args)
        timings["config"] = time.perf_counter() - clock
        # Nothing is written into the tree checked (often someone else's): a cache only when asked.
        return cfg, src, None if _cache_off(args) else args.cache_dir
    cfg = config_mod.load(_config_path(args))
    timings["config"] = time.perf_counter() - clock
    for line in cfg.warnings:
        print(f"namespace-lint: warning: {line}", file=sys.stderr)
    src = _given_directory(args.src) if args.src is not None else _configured_source_dir(cfg)
    cache_dir = None if _cache_off(args) else (args.cache_dir or os.path.join(cfg.base, CACHE_DIRNAME))
    args.baseline = _beside_config(cfg, args.baseline)
    args.write_baseline = _beside_config(cfg, args.write_baseline)
    return cfg, src, cache_dir


def _zero_config_project(args):
    """(the configuration, the source directory) of `--root-package NAME`, which has no file."""
    if args.config is not None:
        raise UsageError("--root-package runs without a config file; drop --config (or the option)")
    src = _given_directory(args.src if args.src is not None else ".")
    return config_mod.zero_config(args.root_package, src), src


def _config_path(args) -> str:
    """`--config FILE`, else the config file found upward."""
    path = args.config or config_mod.find()
    if path is None:
        raise UsageError(f"{_NO_CONFIG} (pass --config FILE, or --root-package NAME to check for "
                         f"missing imports without one)")
    return path


def _given_directory(src: str) -> str:
    if not os.path.isdir(src):
        raise UsageError(f"--src {src}: no such directory")
    return src


def _configured_source_dir(cfg) -> str:
    """The config's `source_dir`, else the config file's directory; it must be a directory."""
    src = cfg.source_dir or cfg.base
    if not os.path.isdir(src):
        raise UsageError(f"{config_mod.display_name(cfg.path)}, section [importlinter], option "
                         f"'source_dir': {config_mod.display_name(src)} is not a directory")
    return src


def _cache_off(args) -> bool:
    """No cache is read or written: `--no-cache`, or a run that rewrites (or verifies) the tree."""
    return bool(args.no_cache or args.fix or args.diff or args.verify_against)


def _beside_config(cfg, path: str | None) -> str | None:
    """A relative `--baseline`/`--write-baseline` FILE, resolved against the config file's
    directory as the config's own paths are, so the hook's `--baseline FILE` works from any
    subdirectory; shown relative to the working directory when it is under it."""
    if not path or os.path.isabs(path):
        return path
    full = os.path.normpath(os.path.join(cfg.base, path))
    rel = os.path.relpath(full)
    return full if rel.startswith(os.pardir) else rel


# --------------------------------------------------------------------------- report: baseline, fix, render

def _report(args, cfg, src: str, result, progress, timings: dict[str, float], rerun) -> int:
    """Baseline, fix, render and exit status of a run's `result` (`check` and `upgrade` alike);
    `rerun()` checks the tree again after `--fix` wrote something."""
    if args.write_baseline and not args.baseline:
        return _write_baseline(args, src, result)
    if args.write_baseline and args.paths:
        raise UsageError("--write-baseline with --baseline prunes the baseline by the whole tree's "
                         "findings; leave out the PATHs")
    if args.verify_against and not (args.fix or args.diff):
        return _verify_only(args, cfg, src, result)
    return _fix_and_report(args, cfg, src, result, progress, timings, rerun)


def _fix_and_report(args, cfg, src: str, result, progress, timings: dict[str, float], rerun) -> int:
    """Fix (`--fix`, `--diff`), hold against the baseline, render; the exit status."""
    human = args.format in _HUMAN_FORMATS and not args.output_file
    findings, changes = result.findings, False  # changes: with --diff, would it change something?
    if args.fix or args.diff:
        result, findings, changes = _fix(args, cfg, src, result, progress, timings, rerun, human)
    strict = args.strict_baseline or cfg.strict_baseline
    findings, notes, failing, stale = _against_baseline(args, cfg, src, result, findings, strict)
    failed = bool(findings) or bool(strict and stale)
    if args.fix and human:
        return _report_after_fix(args, cfg, src, result, findings, notes, failed)
    _show(args, cfg, src, result, findings, notes, failing, timings)
    return _exit(args, failed or changes)


def _write_baseline(args, src: str, result) -> int:
    """`--write-baseline FILE` without `--baseline`: record today's findings, exit 0."""
    # Only with a baseline option: it would cost every run's start-up (json, dataclasses).
    from contracts import baseline

    baseline.write(args.write_baseline, result.findings, statement=_statement_of(result, src))
    print(f"Wrote {_plural(len(result.findings), 'finding')} to {args.write_baseline}.", file=sys.stderr)
    return EXIT_CLEAN


def _verify_only(args, cfg, src: str, result) -> int:
    """`--verify-against` without `--fix`/`--diff`: what --fix would rewrite, each rewrite
    resolved in TREE, reported; nothing written."""
    from contracts.fix import fix_findings  # only when a fix is asked for: it loads libcst

    outcome = fix_findings(cfg, src, result, write=False, out=sys.stdout, diff=False,
                           notes=False if args.quiet else sys.stdout, verify_against=args.verify_against)
    return _exit(args, bool(outcome.left))


def _fix(args, cfg, src: str, result, progress, timings: dict[str, float], rerun, human: bool):
    """`--fix` / `--diff`: (the result, the findings left, whether `--diff` would change
    something). After `--fix` wrote something, what is left is what a fresh check of the
    rewritten tree finds: a rewrite can move lines, and the new import is checked by every
    contract."""
    from contracts.fix import fix_findings  # only when a fix is asked for: it loads libcst

    notes = False if args.quiet else (sys.stdout if human and args.fix else sys.stderr)
    clock = time.perf_counter()
    with progress.phase("fixing" if args.fix else "computing the diff"):
        outcome = fix_findings(cfg, src, result, write=args.fix, out=sys.stdout, notes=notes,
                               verify_against=args.verify_against, named=args.paths)
        if args.fix and outcome.fixed:
            result = rerun()
            findings = result.findings
        else:
            fixed = set(outcome.fixed)
            findings = [f for f in result.findings if f not in fixed]
    timings["fix"] = time.perf_counter() - clock
    return result, findings, bool(outcome.fixed) and args.diff


def _against_baseline(args, cfg, src: str, result, findings, strict: bool):
    """`--baseline FILE`: (the findings it does not cover, notes on its stale entries, how many
    of those fail the run, whether it records more than occurs). With `--write-baseline` too,
    the baseline is rewritten pruned, and then nothing of it is stale."""
    if not args.baseline:
        return findings, [], 0, False
    # Only with a baseline option: it would cost every run's start-up (json, dataclasses).
    from contracts import baseline

    statement, exists = _statement_of(result, src), _exists_in(cfg, result, src)
    comparison = baseline.compare(args.baseline, findings, statement, exists)
    if comparison.version < 2:
        print(f"namespace-lint: warning: --baseline {args.baseline}: a version 1 baseline (no counts: an "
              f"entry covers any number of findings); rewrite it with --baseline {args.baseline} "
              f"--write-baseline {args.baseline}", file=sys.stderr)
    notes, failing, stale = [], 0, False
    if not args.paths:  # only some files were reported on: absence elsewhere proves nothing
        stale = comparison.stale
        failing = len(comparison.gone) + len(comparison.fewer) if strict else 0
        notes = _stale_notes(args.baseline, comparison, strict)
    if args.write_baseline:
        n = baseline.write(args.write_baseline, result.findings, prune=args.baseline, statement=statement,
                           exists=exists)
        print(f"Wrote {args.write_baseline}: {n} {'entry' if n == 1 else 'entries'} "
              f"still occurring (pruned; new findings are not added).", file=sys.stderr)
        notes, failing, stale = [], 0, False
    return comparison.new, notes, failing, stale


def _stale_notes(path: str, comparison, strict: bool) -> list[str]:
    """One note per baseline entry that no longer occurs, or occurs fewer times than counted."""
    verb = "fails the run with --strict-baseline" if strict else "remove it"
    notes = [f"{path}: baseline entry no longer occurs: {rule} {importer} -> {imported} ({verb})"
             for rule, importer, imported in comparison.gone]
    verb = "fails the run with --strict-baseline" if strict else "lower it"
    notes += [f"{path}: baseline entry occurs fewer times than counted ({now} of {count}): "
              f"{rule} {importer} -> {imported} ({verb})"
              for (rule, importer, imported), count, now in comparison.fewer]
    return notes


def _report_after_fix(args, cfg, src: str, result, findings, notes: list[str], failed: bool) -> int:
    """`--fix` at a terminal: the fixer's own lines named what it left of its rules, with the
    reason; the findings of other rules are listed here."""
    from contracts.fix.apply import FIXED_RULES  # loaded with the fixer (libcst): only after a fix

    rest = [f for f in findings if f.rule not in FIXED_RULES]
    if rest and not args.quiet:
        _emit(_render(args, cfg, src, result, rest, [], quiet=True), None)
        print(f"{_plural(len(rest), 'finding')} of other rules remain; --fix does not repair them.")
    for note in notes:
        print(shown(note), file=sys.stderr)
    return _exit(args, failed)


def _show(args, cfg, src: str, result, findings, notes: list[str], failing: int,
          timings: dict[str, float]) -> None:
    """The report, to stdout or `--output-file` (with `--diff`, stdout is the patch alone: what
    --fix would leave goes to stderr), then what goes beside it on stderr."""
    clock = time.perf_counter()
    text = _render(args, cfg, src, result, findings, notes, stale=failing)
    timings["render"] = time.perf_counter() - clock
    if args.diff:
        if findings and not args.quiet:
            print(_render(args, cfg, src, result, findings, [], quiet=True, fmt="concise"), file=sys.stderr)
    else:
        _emit(text, args.output_file)
    _print_beside_report(args, result, findings, notes, failing)
    if args.verbose:
        _verbose(result, timings)


def _print_beside_report(args, result, findings, notes: list[str], failing: int) -> None:
    """On stderr: github's summary line, the notes a machine format has no place for, and the
    contracts of import-linter's own types this tool left to lint-imports."""
    if args.format in ("github",) and not args.quiet and not args.statistics:
        _print_summary(result, findings, failing)
    if notes and args.format not in _HUMAN_FORMATS or (notes and args.statistics):
        for note in notes:
            print(shown(note), file=sys.stderr)
    if result.skipped_contracts and args.format in _HUMAN_FORMATS and not args.quiet:
        print(f"({len(result.skipped_contracts)} contract(s) of import-linter's own types "
              f"not run here: {', '.join(result.skipped_contracts)}; lint-imports runs them.)",
              file=sys.stderr)


def _print_summary(result, findings, failing: int) -> None:
    """The summary line of a format that has none of its own (github's annotations)."""
    print(f"Scanned {result.files_scanned} of {result.files_total} .py files: "
          f"{len(findings)} finding{'' if len(findings) == 1 else 's'}{stale_text(failing)}.", file=sys.stderr)


def _line_reader(root: str):
    """Finding -> the line (of the file under `root`) it is on, or None past the file's end;
    each file is read once."""
    from contracts.engine.files import read_lines  # the engine: not loaded by --help

    lines: dict[str, list[str]] = {}

    def line_of(f) -> str | None:
        if f.path not in lines:
            lines[f.path] = read_lines(os.path.join(root, *f.path.split("/")))
        got = lines[f.path]
        return got[f.line - 1] if 0 < f.line <= len(got) else None

    return line_of


def _statement_of(result, src: str):
    """Finding -> the text of the line its import starts on, stripped (what a baseline entry
    records, so that an entry follows its finding through a rename: docs/baseline.md)."""
    line_of = _line_reader(result.src or os.path.abspath(src))

    def statement(f) -> str | None:
        line = line_of(f)
        return None if line is None else line.strip() or None

    return statement


def _exists_in(cfg, result, src: str):
    """Module name (or an importer's path) -> does the tree still have it? Only a plain `.py`
    file, a package directory or a stub counts as absent when missing; anything else that could
    be there (an extension module) is taken as present: unknown is never "renamed"."""
    bases = (result.src or os.path.abspath(src), cfg.base)

    def exists(name: str) -> bool:
        if "/" in name:
            return os.path.exists(os.path.join(cfg.base, name))
        return any(_module_file_at(os.path.join(base, *name.partition(":")[0].split("."))) for base in bases)

    return exists


def _module_file_at(path: str) -> bool:
    """Is there a package, a module, a stub or an extension module at `path` (no suffix)?"""
    import glob  # only with a baseline: 0.2 ms of every other start-up

    return bool(os.path.isdir(path) or os.path.isfile(path + ".py") or os.path.isfile(path + ".pyi")
                or glob.glob(glob.escape(path) + ".*.so") or os.path.isfile(path + ".so"))


def _exit(args, failed: bool) -> int:
    return EXIT_CLEAN if not failed or args.exit_zero else EXIT_FINDINGS


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --------------------------------------------------------------------------- render

def _render(args, cfg, src: str, result, findings, notes: list[str], quiet: bool | None = None,
            fmt: str | None = None, stale: int = 0) -> str:
    """`findings` as the text of a report in `fmt` (default: `--output-format`)."""
    fmt = fmt or args.format
    src = result.src or os.path.abspath(src)
    findings = list(findings)
    shown_findings = displayed(findings, src)  # the one place paths are made for output
    original = dict(zip(shown_findings, findings))
    line_of = _line_reader(src)
    report = Report(
        findings=shown_findings,
        files_scanned=result.files_scanned,
        files_total=result.files_total,
        fixable=frozenset(s for s, f in zip(shown_findings, findings) if rules.fixable(f)),
        notes=notes,
        root=os.path.dirname(cfg.path),
        version=__version__,
        colour=_colour(args, fmt),
        quiet=args.quiet if quiet is None else quiet,
        hint=not args.fix,
        source_line=lambda f: line_of(original.get(f, f)),
        stale=stale,
    )
    if args.statistics:
        from contracts.renderers import stats  # a format's renderer is imported when asked for

        return stats.render(report, as_json=fmt in ("json", "json-lines"))
    if fmt == "sarif":
        _add_sarif_fixes(report, cfg, src, result, shown_findings, findings)
    return render(fmt, report)


def _colour(args, fmt: str) -> bool:
    """Colour a human format written to a terminal (stderr when `fmt` is not the one asked for)."""
    stream = sys.stderr if fmt != args.format else sys.stdout
    return fmt in _HUMAN_FORMATS and not args.output_file and use_colour(stream)


def _add_sarif_fixes(report: Report, cfg, src: str, result, shown_findings, findings) -> None:
    """SARIF carries every rule's documentation, and the edits `--fix` would make."""
    report.rules = {rule.RULE_ID: RuleDoc(**rules.doc(rule)) for rule in rules.ALL}
    edits = _edits(cfg, src, result, {f for f in findings if rules.fixable(f)})
    report.edits = {s: edits[f] for s, f in zip(shown_findings, findings) if f in edits}


def _edits(cfg, src: str, result, fixable) -> dict:
    """Finding -> the line edits `--fix` would make for it (SARIF's `fixes`), without writing."""
    if not fixable:
        return {}
    from contracts.fix import fix_findings, line_edits  # only when a fix is asked for: it loads libcst

    outcome = fix_findings(cfg, src, result, write=False, notes=False, diff=False)
    out: dict = {}
    by_path: dict[str, list] = {}
    for f in outcome.fixed:
        by_path.setdefault(f.path, []).append(f)
    for rel, (old, new) in outcome.edits.items():
        hunks = [Edit(*h) for h in line_edits(old, new)]
        for f in by_path.get(rel, []):
            mine = [h for h in hunks if h.start <= f.line < max(h.end, h.start + 1)]
            if mine and f in fixable:
                out[f] = mine
    return out


def _emit(text: str, output_file: str | None) -> None:
    if output_file is None:
        if text:
            print(text)
        return
    write_output(output_file, text, "--output-file")


def _engine_notes(args) -> None:
    """Where grimp's native scanner was not used: why, on `-v`, and once on stderr (not under `-q`)
    when files were read with `ast` instead; on `-v`, why the run stayed in one process."""
    # (Read where the engine loaded them: a run answered from the cache scanned nothing, and
    # importing them would cost it more than the rest of the answer.)
    graph, workers = sys.modules.get("contracts.engine.graph"), sys.modules.get("contracts.engine.workers")
    reason, files = graph.native_fallback() if graph is not None else (None, 0)
    if reason is not None and (args.verbose or files and not args.quiet):
        cost = f"; {files} file{'' if files == 1 else 's'} read with `ast` instead, more slowly" if files else ""
        print(f"namespace-lint: note: grimp's native scanner not used: {reason}{cost}", file=sys.stderr)
    serial = workers.serial_reason() if workers is not None else None
    if args.verbose and serial is not None:
        print(f"namespace-lint: one process: {serial}", file=sys.stderr)


def _verbose(result, timings: dict[str, float]) -> None:
    """`-v`: what the cache did, and the time of each phase."""
    cache = {
        "off": "off (--no-cache, --fix or --diff)",
        "cold": "cold: no usable cache, every file read and stored",
        "warm": "warm: unchanged files answered from the cache",
        "corrupt": "corrupt: discarded and rebuilt",
    }.get(result.cache_status, result.cache_status)
    if getattr(result, "hashed", 0):
        cache = (f"warm: the files' contents are unchanged ({result.hashed} read and hashed: their stats "
                 "had moved), findings answered from the cache")
    elif "cache" in timings:
        cache = "warm: the tree is unchanged, findings answered from the cache (no file read)"
    phases = ", ".join(f"{name} {seconds:.3f}s" for name, seconds in timings.items())
    print(f"namespace-lint: cache {cache}", file=sys.stderr)
    print(f"namespace-lint: {result.files_scanned} of {result.files_total} .py files scanned; {phases}",
          file=sys.stderr)
