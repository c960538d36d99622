"""The whole migration on two real releases, run as a new user would, then checked independently.

    python benchmarks/migration_check.py [--before sglang==0.5.16] [--after sglang==0.5.17]
                                         [--removed sglang.jit_kernel] [--wheels DIR]

1. `namespace-lint derive-map --before B --after A --removed PREFIX` (B and A: `name==version`,
   fetched with `pip download --no-deps`; or a wheel found in `--wheels DIR`);
2. a copy of B without PREFIX, the derived lines pasted into a `removed_modules` contract, then
   `namespace-lint --fix --verify-against A`, and `--fix` again (must change nothing);
3. checks that do not reuse the tool's own index: every rewritten file compiles; in each, the
   `ast` with import statements and the rewritten string targets left out is unchanged; every
   module a rewritten import names is a file or directory of A, and every name it imports is a
   submodule there or appears as a binding in that module's text (`def`/`class`/assignment/import).

Prints the numbers the README reports, and each finding left with its reason.
"""

from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cli(*args: str, cwd: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "contracts", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)


def _tree_arg(spec: str, wheels: list[str]) -> str:
    """A wheel from --wheels for `name==version` when there is one (saves the download)."""
    if "==" in spec:
        name, version = spec.split("==", 1)
        for d in wheels:
            found = sorted(glob.glob(os.path.join(d, f"{name}-{version}-*.whl")))
            if found:
                return found[0]
    return spec


def _unpack(spec: str, into: str) -> str:
    if os.path.isdir(spec):
        shutil.copytree(spec, into, ignore=shutil.ignore_patterns("__pycache__"))
        return into
    wheel = spec
    if not os.path.isfile(spec):
        dl = tempfile.mkdtemp()
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", dl, spec], check=True)
        wheel = glob.glob(os.path.join(dl, "*.whl"))[0]
    with zipfile.ZipFile(wheel) as z:
        z.extractall(into, [n for n in z.namelist() if n.endswith(".py")])
    return into


def _strip(tree: ast.AST, targets: set[str]) -> str:
    """ast.dump without import statements and without the string targets in `targets`."""

    class Strip(ast.NodeTransformer):
        def generic_visit(self, node):
            for name in ("body", "orelse", "finalbody"):
                value = getattr(node, name, None)
                if isinstance(value, list):
                    setattr(node, name, [s for s in value if not isinstance(s, (ast.Import, ast.ImportFrom))] or
                            [ast.Pass()])
            return super().generic_visit(node)

        def visit_Constant(self, node):
            if isinstance(node.value, str) and node.value in targets:
                return ast.Constant("<target>")
            return node

    return ast.dump(Strip().visit(tree))


def _binds(after: str, module: str, name: str) -> bool:
    """A submodule, or a name the module's text binds anywhere (a simpler, looser test than the
    tool's index: any `def`/`class`/assignment/import alias of that name, at any depth)."""
    base = os.path.join(after, *module.split("."))
    if os.path.isdir(os.path.join(base, name)) or os.path.isfile(os.path.join(base, name + ".py")):
        return True
    path = os.path.join(base, "__init__.py") if os.path.isdir(base) else base + ".py"
    try:
        tree = ast.parse(open(path, "rb").read())
    except (OSError, SyntaxError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in (name, "__getattr__"):
            return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name.split(".")[0]) == name or a.name == "*" for a in node.names):
            return True
    return False


def _module_exists(after: str, module: str) -> bool:
    base = os.path.join(after, *module.split("."))
    return os.path.isdir(base) or os.path.isfile(base + ".py")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", default="sglang==0.5.16")
    p.add_argument("--after", default="sglang==0.5.17")
    p.add_argument("--removed", default="sglang.jit_kernel")
    p.add_argument("--wheels", action="append", default=[], help="a directory with wheels (else pip download)")
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="migration-check-")
    before, after = _tree_arg(args.before, args.wheels), _tree_arg(args.after, args.wheels)
    root = args.removed.split(".", 1)[0]

    derived = _cli("derive-map", "--before", before, "--after", after, "--removed", args.removed, cwd=work)
    if derived.returncode == 2:
        print(derived.stderr, file=sys.stderr)
        return 2
    block = [line for line in derived.stdout.splitlines() if not line.startswith("# derive-map")]
    module_lines = sum(1 for line in block if line.startswith("    ") and ":" not in line)
    name_lines = sum(1 for line in block if line.startswith("    ") and ":" in line)
    print(f"derive-map: {derived.stderr.strip().splitlines()[-1]}")
    print(f"  lines: {module_lines} module lines, {name_lines} per-name lines")

    tree = _unpack(before, os.path.join(work, "before"))
    shutil.rmtree(os.path.join(tree, *args.removed.split(".")), ignore_errors=True)
    original = os.path.join(work, "original")
    shutil.copytree(tree, original)
    after_dir = _unpack(after, os.path.join(work, "after"))
    config = os.path.join(work, "derived.importlinter")
    with open(config, "w") as f:
        f.write(f"[importlinter]\nroot_packages =\n    {root}\ncontract_types =\n"
                f"    removed_modules: contracts.RemovedModulesContract\n\n"
                f"[importlinter:contract:removed]\nname = {args.removed} was removed\ntype = removed_modules\n"
                f"removed_modules =\n    {args.removed}\n" + "\n".join(block) + "\n")
    found = _cli("--config", config, "--src", tree, "--no-cache", "--format", "json", cwd=work)
    findings = [f for f in json.loads(found.stdout)["findings"] if f["rule"] == "removed-module"]
    strings = [f for f in findings if "target;" in f["message"]]
    print(f"removed-module findings before: {len(findings)} ({len(findings) - len(strings)} imports, "
          f"{len(strings)} string targets)")
    fixed = _cli("--config", config, "--src", tree, "--fix", "--verify-against", after, cwd=work)
    print(f"--fix --verify-against: {_summary(fixed.stdout)}")
    for line in fixed.stdout.splitlines():
        if " removed-module " not in line and ": not auto-fixable: " not in line and line.startswith(tree):
            print(f"  other rule: {line.split(tree + os.sep, 1)[-1]}")
    left = [line for line in fixed.stdout.splitlines() if ": not auto-fixable: " in line]
    string_keys = {(os.path.realpath(os.path.join(work, f["path"])), f["line"], f["col"]) for f in strings}
    left_strings = sum(1 for line in left if _where(line, work) in string_keys)
    print(f"  rewritten: {len(findings) - len(left)} of {len(findings)} "
          f"({len(findings) - len(strings) - (len(left) - left_strings)} of {len(findings) - len(strings)} imports, "
          f"{len(strings) - left_strings} of {len(strings)} string targets)")
    for line in left:
        print(f"  left: {line.split(tree + os.sep, 1)[-1]}")
    again = _cli("--config", config, "--src", tree, "--fix", cwd=work)
    print(f"second --fix: {_summary(again.stdout)}")

    changed = []
    for dirpath, _, files in os.walk(tree):
        for name in files:
            if name.endswith(".py"):
                new_path = os.path.join(dirpath, name)
                old_path = os.path.join(original, os.path.relpath(new_path, tree))
                if open(new_path, "rb").read() != open(old_path, "rb").read():
                    changed.append((old_path, new_path))
    compiled = ast_same = 0
    imports = names = unresolved = 0
    problems = []
    old_targets = {f["imported"] for f in strings} | {f["imported"].split(":")[0] for f in strings}
    for old_path, new_path in changed:
        old_src, new_src = open(old_path, "rb").read(), open(new_path, "rb").read()
        try:
            compile(new_src, new_path, "exec", dont_inherit=True)
            compiled += 1
        except SyntaxError as e:
            problems.append(f"{new_path}: does not compile: {e}")
        old_tree, new_tree = ast.parse(old_src), ast.parse(new_src)
        new_strings = {n.value for n in ast.walk(new_tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        old_strings = {n.value for n in ast.walk(old_tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        targets = (old_strings - new_strings) | (new_strings - old_strings)
        if _strip(ast.parse(old_src), targets | old_targets) == _strip(ast.parse(new_src), targets | old_targets):
            ast_same += 1
        else:
            problems.append(f"{new_path}: changed outside imports and string targets")
        old_imports = {ast.dump(n) for n in ast.walk(old_tree) if isinstance(n, (ast.Import, ast.ImportFrom))}
        for node in ast.walk(new_tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or ast.dump(node) in old_imports:
                continue
            imports += 1
            if isinstance(node, ast.Import):
                for a in node.names:
                    if not _module_exists(after_dir, a.name):
                        unresolved += 1
                        problems.append(f"{new_path}:{node.lineno}: `{a.name}` not in the after tree")
                continue
            if not _module_exists(after_dir, node.module or ""):
                unresolved += 1
                problems.append(f"{new_path}:{node.lineno}: `{node.module}` not in the after tree")
                continue
            for a in node.names:
                names += 1
                if a.name != "*" and not _binds(after_dir, node.module, a.name):
                    unresolved += 1
                    problems.append(f"{new_path}:{node.lineno}: `{node.module}` has no `{a.name}`")
        for value in new_strings - old_strings:
            module = value.split(":")[0]
            if is_target(value, root) and not (_module_exists(after_dir, module) or
                                               _module_exists(after_dir, module.rpartition(".")[0])):
                unresolved += 1
                problems.append(f"{new_path}: string `{value}` not in the after tree")
    print(f"files rewritten: {len(changed)}; compile: {compiled} of {len(changed)}; "
          f"ast unchanged outside imports and string targets: {ast_same} of {len(changed)}")
    print(f"new import statements: {imports} (from-imports import {names} names); "
          f"not resolving in the after tree: {unresolved}")
    for line in problems:
        print(f"  problem: {line}")
    return 1 if problems else 0


def _summary(stdout: str) -> str:
    """The fixer's summary line (`Fixed N imports in M files...`)."""
    return next((line for line in stdout.splitlines() if line.startswith("Fixed ")), stdout.strip()[-300:])


def _where(line: str, cwd: str) -> tuple:
    """(real path, line, col) of a `path:line:col: not auto-fixable` line printed in `cwd`."""
    path, line_no, col = line.split(": not auto-fixable: ", 1)[0].rsplit(":", 2)
    return os.path.realpath(os.path.join(cwd, path)), int(line_no), int(col)


def is_target(value: str, root: str) -> bool:
    return value.startswith(root + ".")


if __name__ == "__main__":
    sys.exit(main())
