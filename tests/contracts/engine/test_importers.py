"""The layout options: `source_dir`, `importer_paths` (files outside the root packages, checked
as importers) and `exclude`, with their glob syntax."""

from __future__ import annotations

import json

import pytest

from contracts.engine.importers import Layout, compile_pattern, importer_files, importer_name
from tests.contracts.conftest import BASE_CONFIG, CLEAN_TREE, run_cli, write_tree

STALE = "from pkg.jit_kernel.norm import rmsnorm\n"


def layout_config(source_dir=".", importers=(), exclude=()) -> str:
    extra = f"source_dir = {source_dir}\n"
    if importers:
        extra += "importer_paths =\n" + "".join(f"    {p}\n" for p in importers)
    if exclude:
        extra += "exclude =\n" + "".join(f"    {p}\n" for p in exclude)
    return BASE_CONFIG.replace("root_packages =\n    pkg\n", "root_packages =\n    pkg\n" + extra)


@pytest.mark.parametrize("pattern, path, hit", [
    ("test", "test", True),
    ("test", "test/a/b.py", True),
    ("test", "tests/a.py", False),
    ("test/", "test/a.py", True),
    ("./test", "test/a.py", True),
    ("scripts/*.py", "scripts/a.py", True),
    ("scripts/*.py", "scripts/ci/a.py", False),
    ("scripts/**/*.py", "scripts/a.py", True),
    ("scripts/**/*.py", "scripts/ci/deep/a.py", True),
    ("**/generated", "python/pkg/generated/x.py", True),
    ("**/generated", "generated/x.py", True),
    ("**/generated", "python/pkg/generated_x.py", False),
    ("docs/**", "docs/a/b.py", True),
    ("te?t", "test/a.py", True),
    ("[tb]est", "best/a.py", True),
    ("[!t]est", "test/a.py", False),
    ("a.b", "axb/c.py", False),  # a dot is a dot
])
def test_pattern_syntax(pattern, path, hit):
    assert bool(compile_pattern(pattern).match(path)) is hit


def test_importer_files_walks_directories_and_globs_and_leaves_out_packages_and_exclusions(tmp_path):
    files = {
        "python/pkg/__init__.py": "", "python/pkg/m.py": "",
        "test/a.py": "", "test/sub/b.py": "", "test/__pycache__/c.py": "", "test/.hidden/d.py": "",
        "test/data.txt": "", "test/vendor/e.py": "", "scripts/s.py": "", "scripts/ci/t.py": "",
    }
    write_tree(tmp_path, files, config=None)
    layout = Layout(str(tmp_path), exclude=("test/vendor",),
                    importer_paths=("test", "scripts/*.py", "python", "missing", "docs/**/*.py"))
    found, empty = importer_files(layout, [str(tmp_path / "python" / "pkg")])
    assert [p[len(str(tmp_path)) + 1:] for p in found] == ["scripts/s.py", "test/a.py", "test/sub/b.py"]
    assert empty == ["python", "missing", "docs/**/*.py"]


def test_importer_name_is_dotted_when_it_can_be(tmp_path):
    layout = Layout(str(tmp_path))
    assert importer_name(layout, str(tmp_path / "test" / "srt" / "test_x.py")) == "test.srt.test_x"
    assert importer_name(layout, str(tmp_path / "test" / "__init__.py")) == "test"
    assert importer_name(layout, str(tmp_path / "scripts" / "run-it.py")) == "scripts/run-it.py"


def upstream_like(tmp_path, extra=None, **layout):
    files = {f"python/{k}": v for k, v in CLEAN_TREE.items()}
    files.update(extra or {})
    return write_tree(tmp_path, files, layout_config(**layout))


def test_files_outside_the_packages_are_checked_for_removed_modules_only(tmp_path):
    root = upstream_like(tmp_path, {
        "test/test_a.py": STALE,
        # not a graph module: a group-internal import from a test is no group-boundary finding
        "test/test_b.py": "from pkg.kernels.ops.kvcache.hicache import _private_helper\n",
        "benchmark/b.py": "import pkg.jit_kernel\n",
    }, source_dir="python", importers=("test", "benchmark"))
    proc = run_cli(["--no-cache", "--format", "json"], cwd=root)
    assert proc.returncode == 1, proc.stderr
    found = [(f["path"], f["rule"], f["importer"]) for f in json.loads(proc.stdout)["findings"]]
    assert found == [("benchmark/b.py", "removed-module", "benchmark.b"),
                     ("test/test_a.py", "removed-module", "test.test_a")]


def test_an_importer_is_seen_at_once_by_a_warm_cache(tmp_path):
    root = upstream_like(tmp_path, {"test/test_a.py": "import os\n"}, source_dir="python", importers=("test",))
    assert run_cli([], cwd=root).returncode == 0
    (root / "test/test_a.py").write_text(STALE)
    proc = run_cli([], cwd=root)
    assert proc.returncode == 1 and "test/test_a.py:1:1: removed-module" in proc.stdout


def test_exclude_inside_the_package_is_not_walked_and_not_reported(tmp_path):
    root = upstream_like(tmp_path, {"python/pkg/srt/vendored/old.py": STALE, "python/pkg/srt/gen/x_pb2.py": STALE},
                         source_dir="python", exclude=("python/pkg/srt/vendored", "**/*_pb2.py"))
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 0, proc.stdout
    total = len(CLEAN_TREE)
    assert f"Scanned {total} of {total} .py files: no findings." in proc.stdout


def test_an_importer_path_that_names_nothing_is_one_warning(tmp_path):
    root = upstream_like(tmp_path, source_dir="python", importers=("tset",))
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 0
    (line,) = [x for x in proc.stderr.splitlines() if "warning" in x]
    assert "option 'importer_paths': 'tset' names no .py file" in line


def test_a_source_dir_that_is_not_a_directory_is_a_config_error(tmp_path):
    root = upstream_like(tmp_path, source_dir="pyhton")
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 2 and "option 'source_dir'" in proc.stderr and "Traceback" not in proc.stderr


def test_a_parse_error_in_an_importer_that_names_a_removed_module_is_reported(tmp_path):
    root = upstream_like(tmp_path, {"test/broken.py": "import pkg.jit_kernel\ndef (:\n", "test/other.py": "def (:\n"},
                         source_dir="python", importers=("test",))
    proc = run_cli(["--no-cache"], cwd=root)
    assert "test/broken.py:2:1: parse-error" in proc.stdout
    assert "test/other.py" not in proc.stdout  # names nothing a rule checks: not parsed


def test_a_named_directory_outside_the_packages_is_checked_as_importers(tmp_path):
    root = upstream_like(tmp_path, {"tools/a.py": STALE, "tools/vendor/b.py": STALE},
                         source_dir="python", exclude=("tools/vendor",))
    assert run_cli(["--no-cache"], cwd=root).returncode == 0  # not an importer path
    proc = run_cli(["--no-cache", "tools"], cwd=root)
    assert proc.returncode == 1
    assert [line.split(":")[0] for line in proc.stdout.splitlines() if ": removed-module " in line] == ["tools/a.py"]


def test_ignore_imports_applies_to_importers_and_counts_as_used(tmp_path):
    config = layout_config(source_dir="python", importers=("test",)).replace(
        "replacements =\n", "ignore_imports =\n    test.legacy -> pkg.jit_kernel.**\nreplacements =\n", 1)
    files = {f"python/{k}": v for k, v in CLEAN_TREE.items()}
    files.update({"test/legacy.py": STALE, "test/new.py": STALE})
    root = write_tree(tmp_path, files, config)
    proc = run_cli(["--no-cache", "--format", "json"], cwd=root)
    found = [(f["path"], f["rule"]) for f in json.loads(proc.stdout)["findings"]]
    assert found == [("test/new.py", "removed-module")], proc.stdout + proc.stderr


def test_a_named_script_in_a_dotted_directory_is_checked(tmp_path):
    # No import can name it (`.agents` is no package name): a script, read as an importer.
    root = upstream_like(tmp_path, {"python/pkg/srt/.agents/skill.py": STALE}, source_dir="python")
    proc = run_cli(["--no-cache", "python/pkg/srt/.agents/skill.py"], cwd=root)
    assert "notice" not in proc.stderr, proc.stderr
    assert proc.stdout.startswith("python/pkg/srt/.agents/skill.py:1:1: removed-module"), proc.stdout


def test_a_bad_glob_is_a_config_error_and_a_non_utf8_importer_name_is_reported(tmp_path):
    root = upstream_like(tmp_path, source_dir="python", exclude=("[z-a]",))
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 2 and "option 'exclude': '[z-a]' is not a valid glob" in proc.stderr
    assert "Traceback" not in proc.stderr
    root = upstream_like(tmp_path / "two", {"test/ok.py": STALE}, source_dir="python", importers=("test",))
    import os
    try:
        open(os.path.join(os.fsencode(root / "test"), b"bad\xff.py"), "wb").close()
    except OSError:
        pytest.skip("this filesystem refuses non-UTF-8 names")
    proc = run_cli(["--no-cache"], cwd=root)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "test/ok.py:1:1: removed-module" in proc.stdout
    assert "not-scanned" in proc.stdout and "not valid UTF-8" in proc.stdout
