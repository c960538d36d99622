"""`derive-map`: the `replacements` lines of a `removed_modules` contract, read off the code.

    namespace-lint derive-map --removed PREFIX [--src DIR]
    namespace-lint derive-map [--removed PREFIX ...] --before TREE --after TREE [--format text|json]
                              [--write-config FILE]

Writing the old -> new map by hand is where a migration goes wrong: a module left out, a typo
that sends `--fix` to a module that does not exist. Two ways to derive it, both from the source
text alone (`ast`; nothing is imported, so neither tree needs its dependencies):

- one tree in the middle of a migration (`--src`, default `.`): compat shims (`shims`);
- two versions of the tree (`--before TREE --after TREE`; each a directory that contains the root
  package, a wheel file, or `name==version` fetched with `pip download --no-deps`): modules
  matched by name, folded name and content, then names one by one (`moves`, `names`). The
  prefixes accumulate; none means every module of `--before` that `--after` does not have; a
  prefix `--after` still has means its modules that `--after` does not have.

stdout is a `replacements =` block ready to paste into the contract: module lines
(`old.mod -> new.mod`), then per-name lines (`old.mod:name -> new.mod:name`), then `#` comment
lines for what got no line, with the reason and the candidates' scores; a one-line count goes to
stderr. `--format json` prints every module and name with its status, score and evidence.
Exit status: 0 when every module and name got a line, 1 when some did not, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from contracts.derive_map.model import Derived
from contracts.derive_map.moves import moved_map
from contracts.derive_map.output import render, summary, to_json
from contracts.derive_map.shims import shim_map
from contracts.derive_map.write_config import merge
from contracts.engine.trees import open_tree
from contracts.errors import NamespaceLintError, UsageError

EXIT_MAPPED = 0
EXIT_INCOMPLETE = 1
EXIT_USAGE = 2

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")

__all__ = ["Derived", "main", "moved_map", "render", "shim_map", "summary"]


def _check_prefix(prefix: str, directory: str, option: str, shown: str) -> None:
    if not _MODULE_RE.match(prefix):
        raise UsageError(f"--removed {prefix}: not a dotted module name")
    path = os.path.join(directory, *prefix.split("."))
    if not (os.path.isdir(path) or os.path.isfile(path + ".py") or _compiled(path)):
        raise UsageError(f"--removed {prefix}: no package or module {prefix} under {option} "
                         f"{shown} (no {os.path.join(*prefix.split('.'))}/ or .py in it)")


def _compiled(path: str) -> bool:
    """Is there an extension module `path.*.so` / `.pyd` (ABI-tagged or not)?"""
    folder, stem = os.path.split(path)
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(n.endswith((".so", ".pyd")) and n.split(".", 1)[0] == stem for n in names)


def _check_dir(directory: str, option: str) -> str:
    if not os.path.isdir(directory):
        raise UsageError(f"{option} {directory}: no such directory")
    return os.path.abspath(directory)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="namespace-lint derive-map",
                description="Print `replacements` lines for a removed_modules contract, derived from "
                            "compat shims in one tree, or from two versions of the tree.")
    p.add_argument("--removed", action="append", metavar="PREFIX",
                   help="a removed module prefix, e.g. sglang.jit_kernel (repeatable: the prefixes "
                        "accumulate). With --before/--after it may be left out: every module of --before "
                        "that --after does not have; a PREFIX that --after still has stands for its "
                        "modules that --after does not have. Required with --src")
    p.add_argument("--src", metavar="DIR", help="one tree mid-migration: the directory that contains the "
                   "root package (default: .)")
    p.add_argument("--before", metavar="TREE", help="the tree before the move: a directory that contains the "
                   "root package, a wheel, or name==version (fetched with pip download --no-deps)")
    p.add_argument("--after", metavar="TREE", help="the tree after the move (as --before)")
    p.add_argument("--write-config", metavar="FILE",
                   help="also merge the lines into the `replacements` of the removed_modules contract of FILE "
                        "(an INI config: .importlinter, setup.cfg) whose `removed_modules` covers each; lines "
                        "FILE already has for an old module are kept as they are")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: a replacements block to paste; json: every score and piece of evidence")
    return p


def _two_trees(args) -> tuple[Derived, str, dict]:
    """`--before TREE --after TREE [--removed PREFIX ...]`: (the map, its header, the command)."""
    if args.src is not None:
        raise UsageError("--src is for one tree; with --before/--after leave it out")
    removed = tuple(dict.fromkeys(args.removed or ()))
    for prefix in removed:
        if not _MODULE_RE.match(prefix):
            raise UsageError(f"--removed {prefix}: not a dotted module name")
    before = open_tree(args.before, "--before")
    after = open_tree(args.after, "--after")
    for prefix in removed:
        _check_prefix(prefix, before, "--before", args.before)
        root = prefix.split(".", 1)[0]
        if not (os.path.isdir(os.path.join(after, root)) or os.path.isfile(os.path.join(after, root + ".py"))):
            raise UsageError(f"--after {args.after}: does not contain the root package '{root}'")
    result = moved_map(before, after, removed or None)
    shown = "".join(f" --removed {p}" for p in removed)
    header = f"derive-map --before {args.before} --after {args.after}{shown}"
    command = {"before": args.before, "after": args.after,
               "removed": removed[0] if len(removed) == 1 else list(removed) or None}
    return result, header, command


def _one_tree(args) -> tuple[Derived, str, dict]:
    """`--src DIR --removed PREFIX`: the shims of one tree mid-migration."""
    if len(args.removed) > 1:
        raise UsageError("--src takes one --removed PREFIX (the shims of one prefix)")
    src = _check_dir(args.src if args.src is not None else ".", "--src")
    _check_prefix(args.removed[0], src, "--src", args.src or ".")
    result = shim_map(src, args.removed[0])
    header = f"derive-map --src {args.src or '.'} --removed {args.removed[0]}"
    return result, header, {"src": args.src or ".", "removed": args.removed[0]}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.before is None and args.after is None and not args.removed:
        parser.error("the following arguments are required: --removed (with --src; with --before/--after "
                     "it may be left out)")
    try:
        if (args.before is None) != (args.after is None):
            raise UsageError("--before and --after go together")
        result, header, command = _two_trees(args) if args.before is not None else _one_tree(args)
    except NamespaceLintError as e:
        print(f"namespace-lint derive-map: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.write_config:
        try:
            added, kept = merge(args.write_config, result.lines() + result.name_lines())
        except NamespaceLintError as e:
            print(f"namespace-lint derive-map: error: {e}", file=sys.stderr)
            return EXIT_USAGE
        print(f"namespace-lint derive-map: {args.write_config}: {added} replacement line(s) added, "
              f"{kept} already there (kept as written).", file=sys.stderr)
    for warning in result.warnings:
        print(f"namespace-lint derive-map: warning: {warning}", file=sys.stderr)
    if args.format == "json":
        print(to_json(result, command))
    else:
        print(render(result, f"{header}: {summary(result)}"))
    print(f"namespace-lint derive-map: {summary(result)}.", file=sys.stderr)
    return EXIT_MAPPED if result.complete() else EXIT_INCOMPLETE
