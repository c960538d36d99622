"""`removed-module` and the import graph on a real tree, against an oracle that shares no code
with the engine.

The oracle parses every file whole with `ast` and walks every node: each import (relative ones
resolved by hand) and each string constant that is exactly a dotted path or a `module:attr`
target. The checker, run as a user runs it, must report the same (file, line) pairs for removal
sets cut out of a real release: modules and packages that the tree imports, with the common
words (`utils`, `base`, `config`) such sets hold. That covers the walk, the byte-level prefilter,
the `ast` windows and both processes at once, on code nobody wrote for the test. The same
imports, resolved as grimp resolves them, must all be edges of the model where the graph rules
need them: every import into the kernel package, and every import of its modules.

Slow (a large wheel, and `ast` over all of it once): run with `-m slow`. The wheel comes from
`$SGLANG_WHEELS` or `pip download`; without either the test is skipped, saying why.
"""

from __future__ import annotations

import ast
import json
import os
import random
import re
import shutil
import warnings
import zipfile

import pytest

from tests.contracts.conftest import REPO, run_cli
from tests.contracts.engine.test_fuzz import _resolve  # relative imports, by hand
from tests.contracts.test_downstream_example import _wheel

pytestmark = pytest.mark.slow

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[\w.]+)?")


def _module_of(rel: str) -> tuple[str, bool]:
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _oracle(root) -> tuple[dict[str, list[tuple[int, str]]], list[tuple[str, str, int]], set[str]]:
    """One whole-file `ast` walk of the tree: rel path -> (line, dotted name) of every import
    target and every dotted string constant; (importer, import target, line) of every import;
    the modules of the tree (its files, and its directories as packages)."""
    refs: dict[str, list[tuple[int, str]]] = {}
    imports: list[tuple[str, str, int]] = []
    modules: set[str] = set()
    for top, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel_top = os.path.relpath(top, root).replace(os.sep, "/")
        if rel_top != "." and any(n.endswith(".py") for n in names):
            modules.add(rel_top.replace("/", "."))
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            module, package = _module_of(rel)
            modules.add(module)
            with open(path, "rb") as f, warnings.catch_warnings():
                warnings.simplefilter("ignore")  # upstream's invalid escapes: not the test's business
                tree = ast.parse(f.read())
            in_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
            found = []
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found += [(node.lineno, a.name) for a in node.names]
                    imports += [(module, a.name, node.lineno) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = _resolve(module, package, node.level, node.module)
                    if base is None:
                        continue  # above the top package
                    found.append((node.lineno, base))
                    found += [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
                    imports += [(module, f"{base}.{a.name}", node.lineno) for a in node.names]
                elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and id(node) not in in_fstring and _DOTTED.fullmatch(node.value)):
                    found.append((node.lineno, node.value.split(":", 1)[0]))
            refs[rel] = found
    return refs, imports, modules


def _under(name: str, prefixes: set[str]) -> bool:
    while name:
        if name in prefixes:
            return True
        name = name.rpartition(".")[0]
    return False


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """(tree, what the oracle found in it)."""
    tmp = tmp_path_factory.mktemp("sglang-oracle")
    with zipfile.ZipFile(_wheel("0.5.23", tmp)) as wheel:
        wheel.extractall(tmp / "tree", [n for n in wheel.namelist() if n.startswith("sglang/")])
    return tmp / "tree", _oracle(tmp / "tree")


def _removal_set(refs, size: int, seed: int) -> list[str]:
    """`size` modules or packages of the tree that something in it imports (a release's removal
    set is code that was in use), drawn with `seed`; never the root, never nested in another."""
    modules = {_module_of(rel)[0] for rel in refs}
    imported = sorted({name for found in refs.values() for _, name in found if name in modules and "." in name})
    rng = random.Random(seed)
    chosen: list[str] = []
    for name in rng.sample(imported, len(imported)):
        if not any(_under(name, {c}) or _under(c, {name}) for c in chosen):
            chosen.append(name)
        if len(chosen) == size:
            break
    return chosen


@pytest.mark.parametrize(("size", "seed"), [(1, 1), (12, 2), (60, 3), (250, 4)])
def test_removed_module_findings_are_what_a_whole_ast_walk_finds(release, tmp_path, size, seed):
    root, (refs, _, _) = release
    removed = _removal_set(refs, size, seed)
    assert len(removed) == size
    prefixes = set(removed)
    tree = tmp_path / "tree"
    shutil.copytree(root, tree, ignore=shutil.ignore_patterns("__pycache__"))
    for prefix in removed:  # the release without them, as the next one ships
        base = tree.joinpath(*prefix.split("."))
        shutil.rmtree(base, ignore_errors=True)
        base.with_suffix(".py").unlink(missing_ok=True)
    (tree / ".importlinter").write_text(
        "[importlinter]\nroot_packages =\n    sglang\ncontract_types =\n"
        "    removed_modules: contracts.RemovedModulesContract\n\n"
        "[importlinter:contract:removed]\nname = removed\ntype = removed_modules\nremoved_modules =\n"
        + "".join(f"    {p}\n" for p in removed))
    expected = {(rel, line) for rel, found in refs.items() if not _under(_module_of(rel)[0], prefixes)
                for line, name in found if _under(name, prefixes)}
    proc = run_cli(["--src", ".", "--no-cache", "--format", "json"], tree)
    assert proc.returncode in (0, 1), proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    got = {(f["path"], f["line"]) for f in findings if f["rule"] == "removed-module"}
    assert not {f["rule"] for f in findings} - {"removed-module", "not-scanned"}, findings
    assert got == expected, (sorted(expected - got)[:20], sorted(got - expected)[:20])
    assert len(expected) >= size  # every prefix drawn is imported somewhere


def _resolved(imports, modules: set[str]) -> set[tuple[str, str, int]]:
    """(importer, imported, line): each import target resolved as grimp resolves it, to the
    module named, else its parent (`from m import f`), if the tree has it."""
    edges = set()
    for importer, target, line in imports:
        if target in modules:
            edges.add((importer, target, line))
        elif target.rpartition(".")[0] in modules:
            edges.add((importer, target.rpartition(".")[0], line))
    return edges


def test_every_import_of_the_kernel_package_is_an_edge_of_the_model(release):
    """The graph files are chosen by a word and then by the prefilter (`reading.classify`): on
    a real tree no import into the checked package may be left out of the graph, and every
    module of the package has all its imports there."""
    from contracts import config as config_mod
    from contracts.check import plan_for
    from contracts.engine.model import build_model

    root, (_, imports, modules) = release
    plan = plan_for(config_mod.load(str(REPO / "examples" / "upstream-sglang.importlinter")))
    model = build_model(str(root), plan, None, jobs=1)
    got = {(e.importer, e.imported, e.line) for e in model.edges}
    expected = _resolved(imports, modules)
    into = {e for e in expected if _under(e[1], {"sglang.kernels"})}
    of = {e for e in expected if _under(e[0], {"sglang.kernels"})}
    assert len(into) > 2000 and len(of) > 1000  # (0.5.23: 2,448 and 1,388)
    assert into <= got, sorted(into - got)[:20]
    assert of <= got, sorted(of - got)[:20]
    assert {e for e in got if _under(e[0], {"sglang.kernels"})} == of
