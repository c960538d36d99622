"""`derive-map`: the `replacements` lines of a `removed_modules` contract, read off the code.

    namespace-lint derive-map --removed PREFIX [--src DIR]
    namespace-lint derive-map --removed PREFIX --before DIR --after DIR

Writing the old -> new map by hand is where a migration goes wrong: a module left out, a typo
that sends `--fix` to a module that does not exist. Two ways to derive it, both from the source
text alone (`ast`; nothing is imported, so neither tree needs its dependencies):

- one tree in the middle of a migration (`--src`, default `.`): every old module under PREFIX
  that is a compat shim -- it only re-exports from one module elsewhere (`from new.place import
  *`, or `from new.place import a, b`) -- gives `old -> new.place`. Old modules that still hold
  code (a `def`, a `class`, anything but imports, `__all__` and deprecation warnings) get a
  warning on stderr: they have not moved yet.
- two versions of the tree (`--before DIR --after DIR`, each the directory that contains the root
  package): each module under PREFIX in `before` is matched to the module of the same name in
  `after` (or the same name with a `_jit_` prefix), outside PREFIX, and the match is confirmed by
  its top-level definitions: the candidate must define at least half of the `def`/`class` names
  the old module defined (its top-level assigned names when it defines none). A package is
  confirmed the same way, or by where its submodules went. Exactly one confirmed candidate: a
  line. Several: `# ambiguous:`. None: `# unmatched:`, with the candidates that failed, or the
  module that now holds most of its definitions as a hint. Nothing is guessed.

stdout is a `replacements =` block ready to paste into the contract, with the modules that got
no line as `#` comment lines after it; a one-line count goes to stderr. A line is left out when
its package's line already implies it (the longest matching prefix wins). Exit status: 0 when
every module got a line, 1 when some did not, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
import warnings
from dataclasses import dataclass, field

from contracts.engine.discover import SourceFile, discover
from contracts.engine.resolve import is_under, resolve_relative
from contracts.engine.scan import decode_source
from contracts.errors import NamespaceLintError, UsageError

EXIT_MAPPED = 0
EXIT_INCOMPLETE = 1
EXIT_USAGE = 2

JIT_PREFIX = "_jit_"  # upstream's name for a moved JIT wrapper: hicache -> _jit_hicache
_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass
class Derived:
    """The map for the modules under one prefix, and what could not be mapped."""

    modules: list[str]  # every module under the prefix, sorted
    mapped: dict[str, str] = field(default_factory=dict)
    unmatched: dict[str, str] = field(default_factory=dict)  # module -> why
    ambiguous: dict[str, list[str]] = field(default_factory=dict)  # module -> candidates
    warnings: list[str] = field(default_factory=list)

    def lines(self) -> list[tuple[str, str]]:
        """The `old -> new` pairs to print: a module whose line its package's line implies is left out."""
        out = []
        for old in sorted(self.mapped):
            new = self.mapped[old]
            parent = _mapped_ancestor(old, self.mapped)
            if parent is not None and self.mapped[parent] + old[len(parent):] == new:
                continue
            out.append((old, new))
        return out


def _mapped_ancestor(module: str, mapped: dict[str, str]) -> str | None:
    parts = module.split(".")
    for i in range(len(parts) - 1, 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in mapped:
            return candidate
    return None


# --------------------------------------------------------------------------- reading modules


def _parse(f: SourceFile) -> ast.Module | None:
    try:
        with open(f.path, "rb") as fh:
            data = fh.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(decode_source(data))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError, LookupError, RecursionError):
        return None


def _top_level(body: list) -> list:
    """Module-level statements, looking through `if`/`try`/`with` (still module level)."""
    out = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, (ast.If, ast.Try, ast.With)) or type(stmt).__name__ == "TryStar":
            for name in ("body", "orelse", "finalbody"):
                out.extend(_top_level(getattr(stmt, name, []) or []))
            for handler in getattr(stmt, "handlers", []):
                out.extend(_top_level(handler.body))
    return out


def definitions(tree: ast.Module | None) -> tuple[frozenset[str], str]:
    """Top-level `def`/`class` names; when there are none (a module of constants, a shim), the
    names it assigns or imports with `from ... import`; and which of the two it is."""
    if tree is None:
        return frozenset(), "definitions"
    stmts = _top_level(tree.body)
    defs = {s.name for s in stmts if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    if defs:
        return frozenset(defs), "definitions"
    provided = set()
    for s in stmts:
        if isinstance(s, ast.ImportFrom):
            provided.update(a.asname or a.name for a in s.names if a.name != "*")
            continue
        targets = s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, ast.AnnAssign) else []
        for t in targets:
            provided.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    provided = {n for n in provided if not (n.startswith("__") and n.endswith("__"))}
    return frozenset(provided), "names"


class _Tree:
    """The modules of one source directory, parsed on demand."""

    def __init__(self, src: str, root: str) -> None:
        self.src = src
        # A file whose path is not a dotted name (`csrc/fast-hadamard-transform/x.py`) cannot be
        # imported, so it is not a module anything refers to.
        self.files = {m: f for m, f in discover(src, (root,)).by_module.items() if _MODULE_RE.match(m)}
        self._defs: dict[str, tuple[frozenset[str], str]] = {}
        self._trees: dict[str, ast.Module | None] = {}

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            self._trees[module] = _parse(self.files[module])
        return self._trees[module]

    def defs(self, module: str) -> frozenset[str]:
        return self.defs_kind(module)[0]

    def defs_kind(self, module: str) -> tuple[frozenset[str], str]:
        if module not in self._defs:
            self._defs[module] = definitions(self.tree(module))
        return self._defs[module]

    def is_package(self, module: str) -> bool:
        f = self.files.get(module)
        return f is not None and f.is_package


def _check_prefix(prefix: str, directory: str, option: str) -> None:
    if not _MODULE_RE.match(prefix):
        raise UsageError(f"--removed {prefix}: not a dotted module name")
    path = os.path.join(directory, *prefix.split("."))
    if not (os.path.isdir(path) or os.path.isfile(path + ".py")):
        raise UsageError(f"--removed {prefix}: no package or module {prefix} under {option} "
                         f"{directory} (no {path}/ or {path}.py)")


def _check_dir(directory: str, option: str) -> str:
    if not os.path.isdir(directory):
        raise UsageError(f"{option} {directory}: no such directory")
    return os.path.abspath(directory)


# --------------------------------------------------------------------------- --before / --after


def _share(mine: frozenset[str], theirs: frozenset[str]) -> int:
    return len(mine & theirs)


def _confirms(mine: frozenset[str], theirs: frozenset[str]) -> bool:
    shared = _share(mine, theirs)
    return shared > 0 and 2 * shared >= len(mine)


def moved_map(before: str, after: str, prefix: str) -> Derived:
    """Match every module under `prefix` in `before` to the module in `after` it moved to."""
    root = prefix.split(".", 1)[0]
    old = _Tree(before, root)
    new = _Tree(after, root)
    modules = sorted(m for m in old.files if is_under(m, prefix))
    result = Derived(modules)
    by_name: dict[str, list[str]] = {}
    for m in new.files:
        if is_under(m, prefix):
            continue  # still there: not where anything moved to
        last = m.rsplit(".", 1)[-1]
        by_name.setdefault(last, []).append(m)
        if last.startswith(JIT_PREFIX) and len(last) > len(JIT_PREFIX):
            by_name.setdefault(last[len(JIT_PREFIX):], []).append(m)
    hint_index = _HintIndex(new, prefix)

    # Deepest first: a package is confirmed by where its submodules went.
    for module in sorted(modules, key=lambda m: (-m.count("."), m)):
        last = module.rsplit(".", 1)[-1]
        candidates = sorted(set(by_name.get(last, [])))
        mine, kind = old.defs_kind(module)
        children = {m: t for m, t in result.mapped.items() if m.rpartition(".")[0] == module}
        confirmed = []
        for c in candidates:
            by_defs = bool(mine) and _confirms(mine, new.defs(c))
            by_children = False
            if old.is_package(module) and new.is_package(c) and children:
                support = sum(1 for t in children.values() if is_under(t, c))
                by_children = support > 0 and 2 * support >= len(children)
            if by_defs or by_children:
                confirmed.append(c)
        if len(confirmed) == 1:
            result.mapped[module] = confirmed[0]
        elif confirmed:
            result.ambiguous[module] = confirmed
        else:
            result.unmatched[module] = _why_unmatched(module, last, candidates, mine, kind, new,
                                                      hint_index, bool(children))
    return result


def _why_unmatched(module, last, candidates, mine, kind, new: _Tree, hints: "_HintIndex",
                   had_children: bool) -> str:
    if candidates:
        shares = ", ".join(f"`{c}` ({_share(mine, new.defs(c))} of {len(mine)})" for c in candidates[:4])
        more = f" and {len(candidates) - 4} more" if len(candidates) > 4 else ""
        if not mine:
            what = "where its submodules went does not confirm one" if had_children else \
                "it has no top-level definitions to confirm one"
            return f"modules named `{last}` exist ({', '.join(f'`{c}`' for c in candidates[:4])}{more}), but {what}"
        return f"modules named `{last}` share too few of its {len(mine)} {kind}: {shares}{more}"
    text = f"no module named `{last}` or `{JIT_PREFIX}{last}` in the after tree"
    hint = hints.best(mine) if mine else None
    if hint:
        where, shared = hint
        text += f"; {shared} of its {len(mine)} {kind} are now in `{where}` (check, then add a line by hand)"
    elif not mine:
        text += " (and no top-level definitions to look for)"
    return text


_DEF_RE = re.compile(rb"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.M)


class _HintIndex:
    """Where an unmatched module's definitions went: the module that defines most of them."""

    def __init__(self, tree: _Tree, prefix: str) -> None:
        self.tree, self.prefix = tree, prefix
        self._by_name: dict[bytes, set[str]] | None = None

    def best(self, names: frozenset[str]) -> tuple[str, int] | None:
        if self._by_name is None:
            # A text index first (every `def NAME`/`class NAME`, at any depth): parsing only the
            # few files it points at keeps this cheap on a large tree.
            self._by_name = {}
            for m, f in self.tree.files.items():
                if is_under(m, self.prefix):
                    continue
                try:
                    with open(f.path, "rb") as fh:
                        data = fh.read()
                except OSError:
                    continue
                for name in set(_DEF_RE.findall(data)):
                    self._by_name.setdefault(name, set()).add(m)
        hits: dict[str, int] = {}
        for n in names:
            for m in self._by_name.get(n.encode(), ()):
                hits[m] = hits.get(m, 0) + 1
        best = None
        for m in sorted(hits, key=lambda m: (-hits[m], m)):
            if 2 * hits[m] < len(names):
                break
            shared = _share(names, self.tree.defs(m))
            if shared and 2 * shared >= len(names) and (best is None or shared > best[1]):
                best = (m, shared)
        return best


# --------------------------------------------------------------------------- compat shims


_DEPRECATION_CALLS = {"warn", "warn_explicit", "deprecated", "warn_deprecated"}


def _shim_target(module: str, is_package: bool, tree: ast.Module) -> tuple[set[str], str | None]:
    """({modules it re-exports from}, first line that holds code or None)."""
    targets: set[str] = set()
    for i, stmt in enumerate(tree.body):
        if i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                and isinstance(stmt.value.value, str):
            continue  # docstring
        if isinstance(stmt, ast.ImportFrom):
            if stmt.module == "__future__":
                continue
            base = resolve_relative(module, is_package, stmt.level or 0, stmt.module)
            if base is not None:
                targets.add(base)
            continue
        if isinstance(stmt, (ast.Import, ast.Pass, ast.Delete)):
            continue  # `import warnings`, `del _x`
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            assigned = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if all(isinstance(t, ast.Name) and t.id == "__all__" for t in assigned):
                continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in _DEPRECATION_CALLS:
                continue
        kind = type(stmt).__name__
        label = f"{kind} `{stmt.name}`" if hasattr(stmt, "name") else kind
        return targets, f"line {stmt.lineno}: {label}"
    return targets, None


def shim_map(src: str, prefix: str) -> Derived:
    """One line per compat shim under `prefix` in the tree at `src`."""
    root = prefix.split(".", 1)[0]
    tree = _Tree(src, root)
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
        targets, code = _shim_target(module, f.is_package, parsed)
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
    # A shim that re-exports another shim: follow it to the module that holds the code.
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
    return result


# --------------------------------------------------------------------------- the command


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="namespace-lint derive-map",
                description="Print `replacements` lines for a removed_modules contract, derived from "
                            "compat shims in one tree, or from two versions of the tree.")
    p.add_argument("--removed", required=True, metavar="PREFIX", help="the removed module prefix, e.g. sglang.jit_kernel")
    p.add_argument("--src", metavar="DIR", help="one tree mid-migration: the directory that contains the "
                   "root package (default: .)")
    p.add_argument("--before", metavar="DIR", help="the tree before the move (contains the root package)")
    p.add_argument("--after", metavar="DIR", help="the tree after the move (contains the root package)")
    return p


def render(result: Derived, header: str) -> str:
    lines = [f"# {header}", "replacements ="]
    lines += [f"    {old} -> {new}" for old, new in result.lines()]
    for module, why in sorted(result.unmatched.items()):
        lines.append(f"# unmatched: {module}: {why}")
        parent = _mapped_ancestor(module, result.mapped)
        if parent is not None:
            lines.append(f"#   (the line for `{parent}` still sends it to "
                         f"`{result.mapped[parent] + module[len(parent):]}`)")
    for module, candidates in sorted(result.ambiguous.items()):
        lines.append(f"# ambiguous: {module} -> {' | '.join(candidates)}")
    return "\n".join(lines)


def summary(result: Derived) -> str:
    return (f"{len(result.mapped)} of {len(result.modules)} modules mapped "
            f"({len(result.lines())} lines), {len(result.unmatched)} unmatched, "
            f"{len(result.ambiguous)} ambiguous")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    try:
        if (args.before is None) != (args.after is None):
            raise UsageError("--before and --after go together")
        if args.before is not None:
            if args.src is not None:
                raise UsageError("--src is for one tree; with --before/--after leave it out")
            before = _check_dir(args.before, "--before")
            after = _check_dir(args.after, "--after")
            _check_prefix(args.removed, before, "--before")
            root = args.removed.split(".", 1)[0]
            if not (os.path.isdir(os.path.join(after, root)) or os.path.isfile(os.path.join(after, root + ".py"))):
                raise UsageError(f"--after {args.after}: does not contain the root package '{root}'")
            result = moved_map(before, after, args.removed)
            header = f"derive-map --before {args.before} --after {args.after} --removed {args.removed}"
        else:
            src = _check_dir(args.src if args.src is not None else ".", "--src")
            _check_prefix(args.removed, src, "--src")
            result = shim_map(src, args.removed)
            header = f"derive-map --src {args.src or '.'} --removed {args.removed}"
    except NamespaceLintError as e:
        print(f"namespace-lint derive-map: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    for warning in result.warnings:
        print(f"namespace-lint derive-map: warning: {warning}", file=sys.stderr)
    print(render(result, f"{header}: {summary(result)}"))
    print(f"namespace-lint derive-map: {summary(result)}.", file=sys.stderr)
    return EXIT_MAPPED if not (result.unmatched or result.ambiguous) else EXIT_INCOMPLETE
