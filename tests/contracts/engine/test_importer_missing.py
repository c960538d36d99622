"""`missing_imports` in the files outside the root packages (`importer_paths`: tests, benchmarks,
scripts): their imports are checked against the package's modules and names as the package's
own files are, and a change to the package that breaks an unchanged test is found, with or
without a cache."""

from __future__ import annotations

import pytest

from contracts import check
from contracts import config as config_mod
from contracts.engine import model as model_mod

CONFIG = """\
[importlinter]
root_packages =
    pkg
source_dir = src
importer_paths =
    tests
contract_types =
    missing_imports: contracts.MissingImportsContract

[importlinter:contract:missing]
name = Imports of modules and names the tree does not have
type = missing_imports
"""

TREE = {
    ".importlinter": CONFIG,
    "src/pkg/__init__.py": "",
    "src/pkg/norm.py": "def rmsnorm():\n    return 1\n",
    "tests/test_norm.py": "from pkg.norm import rmsnorm\nimport pkg.norm\n",
}




def _write(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _found(root, cache=None):
    cfg = config_mod.load(str(root / ".importlinter"))
    result = check.run(cfg, str(root / "src"), cache_dir=str(cache) if cache else None)
    return sorted((f.path, f.line, f.rule, f.imported) for f in result.findings)


@pytest.mark.parametrize("cached", [False, True])
def test_is_broken_when_a_test_imports_a_module_or_name_the_package_lacks(tmp_path, not_racy, cached):
    root = _write(tmp_path / "repo", TREE)
    cache = tmp_path / "cache" if cached else None
    assert _found(root, cache) == []
    (root / "tests/test_norm.py").write_text("from pkg.norm import rms_norm\nimport pkg.norms\n")
    expected = [("../tests/test_norm.py", 1, "missing-name", "pkg.norm.rms_norm"),
                ("../tests/test_norm.py", 2, "missing-module", "pkg.norms")]
    assert _found(root, cache) == expected
    assert _found(root, cache) == expected  # answered again (from the cache, when there is one)


@pytest.mark.parametrize("change", ["rename_module", "rename_def"])
def test_a_package_change_breaks_an_unchanged_test(tmp_path, not_racy, change):
    root = _write(tmp_path / "repo", TREE)
    cache = tmp_path / "cache"
    assert _found(root, cache) == []
    norm = root / "src/pkg/norm.py"
    if change == "rename_module":
        norm.rename(root / "src/pkg/norm_v2.py")
        expected = {("../tests/test_norm.py", 1, "missing-module", "pkg.norm"),
                    ("../tests/test_norm.py", 2, "missing-module", "pkg.norm")}
    else:
        norm.write_text("def rms_norm():\n    return 1\n")
        expected = {("../tests/test_norm.py", 1, "missing-name", "pkg.norm.rmsnorm")}
    found = set(_found(root, cache))
    assert found == expected == set(_found(root))  # the cached run and the uncached one agree


def test_a_warm_run_reads_the_package_model_only_for_a_changed_test(tmp_path, not_racy, monkeypatch):
    root = _write(tmp_path / "repo", {**TREE, "tests/test_other.py": "import pkg.gone\n"})
    cache = tmp_path / "cache"
    first = _found(root, cache)
    built = []
    real = model_mod.build_model

    def counted(*args, **kwargs):
        built.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(model_mod, "build_model", counted)
    assert _found(root, cache) == first and built == []  # nothing changed: no model
    (root / "tests/test_norm.py").write_text("import pkg.nothere\n")
    assert ("../tests/test_norm.py", 1, "missing-module", "pkg.nothere") in _found(root, cache)
    assert built == [1]
    again = _found(root, cache)
    assert built == [1]  # remembered for the next run
    assert again == _found(root)
