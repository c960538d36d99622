"""Changed-files mode (`namespace-lint PATH ...`, what pre-commit runs): the findings of the whole
tree in those files only. Every file of the tree is stat'ed (never trusted from the cache): with a
warm cache only the changed files are read again, and a change a pull made elsewhere is seen."""

from __future__ import annotations

import json

import pytest

from contracts import check
from contracts import config as config_mod
from contracts.cli import main
from contracts.engine import model as model_mod
from contracts.engine import reading as reading_mod
from tests.contracts.conftest import BASE_CONFIG, cwd, run_cli

TREE = {
    "pkg/srt/a.py": "import os\nfrom pkg.jit_kernel import hicache\n",
    "pkg/srt/b.py": "import pkg.jit_kernel.norm\n",
    # a chain's middle: not in any group, imports group kvcache
    "pkg/kernels/util.py": "from pkg.kernels.ops.kvcache import hicache\n",
}




def _run(root, paths=None, cache=None):
    cfg = config_mod.load(str(root / ".importlinter"))
    return check.run(cfg, str(root), paths=[str(root / p) for p in paths] if paths else None,
                     cache_dir=str(cache) if cache else None)


def _found(result):
    return sorted((f.path, f.line, f.rule, f.imported) for f in result.findings)


def test_reports_the_findings_of_the_whole_tree_in_the_given_files_only(tree):
    root = tree(TREE)
    full = _found(_run(root))
    assert {p for p, *_ in full} == {"pkg/srt/a.py", "pkg/srt/b.py"}
    assert _found(_run(root, ["pkg/srt/a.py"])) == [f for f in full if f[0] == "pkg/srt/a.py"]


@pytest.mark.parametrize("cached", [False, True])
def test_matches_the_full_run_filtered_with_or_without_a_cache(tree, tmp_path_factory, not_racy, cached):
    root = tree(TREE)
    cache = tmp_path_factory.mktemp("cache") if cached else None
    if cached:
        _run(root, cache=cache)
    (root / "pkg/kernels/ops/gemm/fused_a_gemm.py").write_text("from pkg.kernels import util\n")
    full = _found(_run(root))
    paths = ["pkg/kernels/ops/gemm/fused_a_gemm.py", "pkg/srt/b.py"]
    assert _found(_run(root, paths, cache)) == [f for f in full if f[0] in paths]
    # the chain gemm -> util -> kvcache: the edited file's new edge, the cached rest of the graph
    assert ("pkg/kernels/ops/gemm/fused_a_gemm.py", 1, "group-boundary", "pkg.kernels.ops.kvcache.hicache") in full


def test_stats_the_whole_tree_but_reads_only_what_changed(tree, tmp_path_factory, not_racy, monkeypatch):
    root = tree(TREE)
    cache = tmp_path_factory.mktemp("cache")
    _run(root, cache=cache)
    (root / "pkg/srt/b.py").write_text("import pkg.jit_kernel.hicache  # edited\n")
    opened = []
    real_read = reading_mod.read_source

    def spy(path, *args):
        opened.append(str(path))
        return real_read(path, *args)

    monkeypatch.setattr(reading_mod, "read_source", spy)  # what the scan reads (rules may read more)
    checked = []
    real_unchanged = model_mod._unchanged

    def unchanged(entry, f):
        checked.append(f.rel)
        return real_unchanged(entry, f)

    monkeypatch.setattr(model_mod, "_unchanged", unchanged)
    result = _run(root, ["pkg/srt/b.py"], cache)
    assert opened == [str(root / "pkg/srt/b.py")]
    # every other file's record is checked against its stat, none taken on trust
    assert sorted(checked) == sorted(f.rel for f in model_mod.discover(str(root), ("pkg",)).files)
    assert _found(result) == [("pkg/srt/b.py", 1, "removed-module", "pkg.jit_kernel.hicache")]


CHAIN = ("pkg/kernels/ops/gemm/fused_a_gemm.py", 1, "group-boundary", "pkg.kernels.ops.kvcache.hicache")


def test_a_chain_through_a_module_a_pull_changed_is_found(tree, tmp_path_factory, not_racy):
    # Attack 3: the user's file is unchanged; a pull changed the module in the middle of the chain.
    root = tree({**TREE, "pkg/kernels/util.py": "import os\n",
                 "pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels import util\n"})
    cache = tmp_path_factory.mktemp("cache")
    assert CHAIN[:3] not in [f[:3] for f in _found(_run(root, cache=cache))]
    (root / "pkg/kernels/util.py").write_text("from pkg.kernels.ops.kvcache import hicache\n")
    given = ["pkg/kernels/ops/gemm/fused_a_gemm.py"]
    assert CHAIN in _found(_run(root, given, cache)) == [f for f in _found(_run(root)) if f[0] in given]


def test_a_chain_through_a_module_a_pull_added_is_found_and_counted(tree, tmp_path_factory, not_racy):
    root = tree(TREE)
    cache = tmp_path_factory.mktemp("cache")
    before = _run(root, cache=cache)
    (root / "pkg/kernels/util2.py").write_text("from pkg.kernels.ops.kvcache import hicache\n")
    gemm = root / "pkg/kernels/ops/gemm/fused_a_gemm.py"
    gemm.write_text("from pkg.kernels import util2\n")
    result = _run(root, ["pkg/kernels/ops/gemm/fused_a_gemm.py"], cache)
    assert CHAIN in _found(result)
    assert result.files_total == before.files_total + 1 == result.files_scanned


def test_a_path_spelled_through_a_symlink_is_the_file_it_names(tree, tmp_path_factory, not_racy):
    root = tree(TREE)
    (root / "alias").symlink_to(root / "pkg", target_is_directory=True)
    cache = tmp_path_factory.mktemp("cache")
    for c in (None, cache):
        assert _found(_run(root, ["alias/srt/b.py"], c)) == [
            ("pkg/srt/b.py", 1, "removed-module", "pkg.jit_kernel.norm")]


def test_falls_back_to_a_full_walk_for_a_new_module(tree, tmp_path_factory, not_racy):
    # A new module can change how other files' imports resolve, so the cached file list is not used.
    root = tree(TREE)
    cache = tmp_path_factory.mktemp("cache")
    _run(root, cache=cache)
    new = root / "pkg/srt/new.py"
    new.write_text("from pkg.jit_kernel.utils import x\n")
    assert _found(_run(root, ["pkg/srt/new.py"], cache)) == [
        ("pkg/srt/new.py", 1, "removed-module", "pkg.jit_kernel.utils")]


def test_a_directory_path_runs_the_whole_tree_filtered(tree, tmp_path_factory, not_racy):
    root = tree(TREE)
    cache = tmp_path_factory.mktemp("cache")
    _run(root, cache=cache)
    assert _found(_run(root, ["pkg/srt"], cache)) == _found(_run(root, ["pkg/srt"]))
    assert {p for p, *_ in _found(_run(root, ["pkg/srt"], cache))} == {"pkg/srt/a.py", "pkg/srt/b.py"}


def test_a_named_file_outside_the_root_packages_is_checked_as_an_importer(tree, tmp_path_factory, not_racy):
    root = tree(TREE)
    (root / "setup.py").write_text("import pkg.jit_kernel\n")
    cache = tmp_path_factory.mktemp("cache")
    _run(root, cache=cache)
    # Not a module of the graph (no graph rule sees it), but a stale import there breaks all the same.
    assert _found(_run(root, ["setup.py"], cache)) == [("setup.py", 1, "removed-module", "pkg.jit_kernel")]
    assert "setup.py" not in {p for p, *_ in _found(_run(root, None, cache))}  # not named: not an importer path


def test_cli_with_changed_files_and_the_default_cache(tree):
    # As pre-commit runs it: from the repository root, relative paths, the default cache directory.
    root = tree(TREE)
    first = run_cli(["pkg/srt/a.py", "pkg/srt/b.py"], cwd=root)
    assert first.returncode == 1
    assert [line.split(":")[0] for line in first.stdout.splitlines() if line.startswith("pkg/")] == [
        "pkg/srt/a.py", "pkg/srt/b.py"]
    assert (root / ".namespace_lint_cache").is_dir()
    (root / "pkg/srt/a.py").write_text("import os\nfrom pkg.kernels.ops.kvcache import hicache\n")
    second = run_cli(["pkg/srt/a.py"], cwd=root)
    assert second.returncode == 0, second.stdout
    assert second.stdout.strip().endswith("no findings.")


def test_cli_reports_changed_files_in_json(tree, capsys):
    root = tree(TREE)
    with cwd(root):
        code = main(["--config", str(root / ".importlinter"), "--cache-dir", str(root / "c"), "--format", "json",
                     str(root / "pkg/srt/b.py")])
    out = capsys.readouterr().out
    assert code == 1
    assert [f["path"] for f in json.loads(out)["findings"]] == ["pkg/srt/b.py"]

IMPORTER = ("pkg/srt/layers/layernorm.py", 1)  # imports pkg.kernels.ops.layernorm.norm; never changed below


def _missing_tree(tree):
    config = BASE_CONFIG.replace("    layer: contracts.LayerContract\n",
                                 "    layer: contracts.LayerContract\n    missing_imports: contracts.MissingImportsContract\n")
    return tree(TREE, config=config + "\n[importlinter:contract:missing]\nname = missing\ntype = missing_imports\n")


@pytest.mark.parametrize("cached", [False, True])
def test_a_rename_reports_the_unchanged_importer_it_broke(tree, tmp_path_factory, not_racy, cached):
    root = _missing_tree(tree)
    cache = tmp_path_factory.mktemp("cache") if cached else None
    _run(root, cache=cache)
    old, new = "pkg/kernels/ops/layernorm/norm.py", "pkg/kernels/ops/layernorm/norm_v2.py"
    (root / old).rename(root / new)
    for given in ([old, new], [old]):  # `git diff --name-only` lists both; the old name alone will do
        found = _found(_run(root, given, cache))
        assert (*IMPORTER, "missing-module", "pkg.kernels.ops.layernorm.norm") in found
        assert {p for p, *_ in found} == {IMPORTER[0]}  # the other findings are not the change's


def test_a_def_rename_reports_the_unchanged_importer_it_broke(tree, not_racy):
    root = _missing_tree(tree)
    norm = root / "pkg/kernels/ops/layernorm/norm.py"
    norm.write_text(norm.read_text().replace("def rmsnorm", "def rms_norm"))
    found = _found(_run(root, ["pkg/kernels/ops/layernorm/norm.py"]))
    assert found == [(*IMPORTER, "missing-name", "pkg.kernels.ops.layernorm.norm.rmsnorm")]


def test_a_chain_through_a_changed_module_is_reported_in_the_unchanged_file(tree, not_racy):
    root = tree({**TREE, "pkg/kernels/util.py": "import os\n",
                 "pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels import util\n"})
    (root / "pkg/kernels/util.py").write_text("from pkg.kernels.ops.kvcache import hicache\n")
    assert CHAIN in _found(_run(root, ["pkg/kernels/util.py"]))
    assert CHAIN not in _found(_run(root, ["pkg/srt/a.py"]))  # a file the chain does not pass


def test_a_deleted_path_is_accepted_and_a_missing_other_path_is_an_error(tree, capsys):
    root = _missing_tree(tree)
    (root / "pkg/kernels/ops/layernorm/norm.py").unlink()
    with cwd(root):
        assert main(["--no-cache", "pkg/kernels/ops/layernorm/norm.py"]) == 1
        assert f"{IMPORTER[0]}:1:1: missing-module" in capsys.readouterr().out
        assert main(["--no-cache", "docs/nothere.md"]) == 2
    assert "PATH docs/nothere.md: no such file or directory" in capsys.readouterr().err
