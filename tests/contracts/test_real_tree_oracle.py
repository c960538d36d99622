"""`removed-module` on a real tree against an oracle that shares no code with the engine.

The oracle parses every file whole with `ast` and walks every node: each import (relative ones
resolved by hand) and each string constant that is exactly a dotted path or a `module:attr`
target. The checker, run as a user runs it, must report the same (file, line) pairs for removal
sets cut out of a real release: modules and packages that the tree imports, with the common
words (`utils`, `base`, `config`) such sets hold. That covers the walk, the byte-level prefilter,
the `ast` windows and both processes at once, on code nobody wrote for the test.

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

from tests.contracts.conftest import run_cli
from tests.contracts.test_downstream_example import _wheel

pytestmark = pytest.mark.slow

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?::[\w.]+)?")


def _module_of(rel: str) -> tuple[str, bool]:
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _oracle_refs(root) -> dict[str, list[tuple[int, str]]]:
    """rel path -> (line, dotted name) of every import target and every dotted string constant."""
    out: dict[str, list[tuple[int, str]]] = {}
    for top, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            module, package = _module_of(rel)
            with open(path, "rb") as f, warnings.catch_warnings():
                warnings.simplefilter("ignore")  # upstream's invalid escapes: not the test's business
                tree = ast.parse(f.read())
            in_fstring = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
            refs = []
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    refs += [(node.lineno, a.name) for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        parts = module.split(".") if package else module.split(".")[:-1]
                        if node.level - 1 > len(parts) - 1:
                            continue  # above the top package
                        parts = parts[:len(parts) - (node.level - 1)]
                        base = ".".join(parts + ([node.module] if node.module else []))
                    refs.append((node.lineno, base))
                    refs += [(node.lineno, f"{base}.{a.name}") for a in node.names if a.name != "*"]
                elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                      and id(node) not in in_fstring and _DOTTED.fullmatch(node.value)):
                    refs.append((node.lineno, node.value.split(":", 1)[0]))
            out[rel] = refs
    return out


def _under(name: str, prefixes: set[str]) -> bool:
    while name:
        if name in prefixes:
            return True
        name = name.rpartition(".")[0]
    return False


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """(tree, the oracle's references of every file)."""
    tmp = tmp_path_factory.mktemp("sglang-oracle")
    with zipfile.ZipFile(_wheel("0.5.23", tmp)) as wheel:
        wheel.extractall(tmp / "tree", [n for n in wheel.namelist() if n.startswith("sglang/")])
    return tmp / "tree", _oracle_refs(tmp / "tree")


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
    root, refs = release
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
