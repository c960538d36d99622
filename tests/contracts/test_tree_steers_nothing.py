"""Nothing the checked tree commits steers a write, stalls the run or fills the disk (issue 35):
symlinked output files, importer files and configured directories that lead out of the
repository, globs built to backtrack, wheels that unpack without bound, file names that are not
URIs. Each test fails on the tool before the issue."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from contracts.engine import trees
from contracts.errors import UsageError
from contracts.globs import compile_pattern
from tests.contracts.conftest import BASE_CONFIG, CLEAN_TREE, cwd, run_cli, write_tree

STALE = "from pkg.jit_kernel.hicache import transfer\n"
VICTIM_TEXT = "# the runner's shell start-up file\n"


@pytest.fixture
def victim(tmp_path_factory) -> Path:
    """A file outside the checked tree that a committed symlink points at."""
    path = tmp_path_factory.mktemp("outside") / "bashrc"
    path.write_text(VICTIM_TEXT)
    return path


def test_a_symlinked_output_file_is_refused_and_its_target_never_written(tree, victim):
    root = tree({"pkg/srt/stale.py": STALE})
    (root / "report.json").symlink_to(victim)
    proc = run_cli(["--no-cache", "--format", "json", "-o", "report.json"], root)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "report.json" in proc.stderr and "symlink" in proc.stderr
    assert victim.read_text() == VICTIM_TEXT


def test_an_output_file_under_a_symlinked_directory_is_refused(tree, victim):
    root = tree({"pkg/srt/stale.py": STALE})
    (root / "reports").symlink_to(victim.parent, target_is_directory=True)
    proc = run_cli(["--no-cache", "-o", "reports/bashrc"], root)
    assert proc.returncode == 2 and "symlink" in proc.stderr, proc.stderr
    assert victim.read_text() == VICTIM_TEXT


def test_a_plain_output_file_is_still_written(tree):
    root = tree({"pkg/srt/stale.py": STALE})
    proc = run_cli(["--no-cache", "--format", "json", "-o", "out/report.json"], root)
    assert proc.returncode == 1, proc.stderr
    assert json.loads((root / "out/report.json").read_text())["findings"]


def test_a_symlinked_baseline_to_write_replaces_the_link_not_the_target(tree, victim):
    root = tree({"pkg/srt/stale.py": STALE})
    (root / "baseline.json").symlink_to(victim)
    proc = run_cli(["--no-cache", "--write-baseline", "baseline.json"], root)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == VICTIM_TEXT
    assert not (root / "baseline.json").is_symlink()
    assert json.loads((root / "baseline.json").read_text())["entries"]


def test_a_baseline_under_a_symlinked_directory_is_refused(tree, victim):
    root = tree({"pkg/srt/stale.py": STALE})
    (root / "ci").symlink_to(victim.parent.parent, target_is_directory=True)  # a link above the last directory
    proc = run_cli(["--no-cache", "--write-baseline", f"ci/{victim.parent.name}/bashrc"], root)
    assert proc.returncode == 2 and "symlink" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert victim.read_text() == VICTIM_TEXT


def test_fix_never_writes_through_a_symlink_in_an_importer_path(tree, victim):
    victim.write_text(STALE)
    config = BASE_CONFIG.replace("root_packages =\n    pkg\n", "root_packages =\n    pkg\nimporter_paths =\n    test\n")
    root = tree({"test/test_ok.py": "x = 1\n"}, config=config)
    (root / "test/test_linked.py").symlink_to(victim)
    proc = run_cli(["--no-cache", "--fix"], root)
    assert victim.read_text() == STALE, proc.stdout
    check = run_cli(["--no-cache", "--format", "json"], root)
    skipped = [f for f in json.loads(check.stdout)["findings"] if f["rule"] == "not-scanned"]
    assert [f["path"] for f in skipped] == ["test/test_linked.py"], check.stdout
    assert "outside the tree" in skipped[0]["message"]


@pytest.mark.parametrize("option, value", [
    ("source_dir", "../.."), ("source_dir", "/"), ("importer_paths", "\n    ../outside"),
    ("importer_paths", "\n    ../*/x"),
])
def test_configured_directories_outside_the_repository_are_a_config_error(tmp_path, option, value):
    config = BASE_CONFIG.replace("root_packages =\n    pkg\n", f"root_packages =\n    pkg\n{option} = {value}\n")
    repo = write_tree(tmp_path / "repo", CLEAN_TREE, config)
    (repo / ".git").mkdir()
    proc = run_cli(["--no-cache"], repo)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"option '{option}'" in proc.stderr and "outside the repository" in proc.stderr
    # The same directory named on the command line (`--src`) is the user's choice.
    own = tmp_path / "own.ini"
    own.write_text(BASE_CONFIG)
    assert run_cli(["--no-cache", "--config", str(own), "--src", str(repo)], tmp_path).returncode == 0


def _timed(pattern: str, name: str) -> float:
    matcher = compile_pattern(pattern)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(50):
            matcher.match(name)
        best = min(best, time.perf_counter() - start)
    return best


def test_a_ten_star_glob_costs_a_few_plain_globs():
    name = "a" * 60 + "/x.py"  # a long directory name that never ends in `b`
    plain = _timed("a" * 10 + "*", name)
    starred = _timed("a*" * 10 + "b", name)
    assert starred < 10 * plain, (starred, plain)  # measured 2.2x; the backtracking regex: 8 stars 42 s vs 0.11 s


def test_an_over_long_glob_is_a_config_error_naming_it(tree):
    long = "a*" * 600
    config = BASE_CONFIG.replace("root_packages =\n    pkg\n", f"root_packages =\n    pkg\nexclude =\n    {long}\n")
    root = tree(config=config)
    proc = run_cli(["--no-cache"], root)
    assert proc.returncode == 2 and "option 'exclude'" in proc.stderr and "a*a*a*" in proc.stderr, proc.stderr
    assert len(proc.stderr) < 400


def test_double_star_does_not_follow_symlinked_directories(tree):
    config = BASE_CONFIG.replace("root_packages =\n    pkg\n", "root_packages =\n    pkg\nimporter_paths =\n    test/**/*.py\n")
    root = tree({"test/a.py": STALE}, config=config)
    for i in range(12):  # links to `.`: followed, 12 levels of 12 links would never end
        (root / f"test/loop{i}").symlink_to(".", target_is_directory=True)
    proc = run_cli(["--no-cache", "--format", "json"], root)
    paths = [f["path"] for f in json.loads(proc.stdout)["findings"] if f["rule"] == "removed-module"]
    assert paths == ["test/a.py"], proc.stdout


def _wheel(path: Path, members: dict[str, int]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, size in members.items():
            z.writestr(name, b"#" * size)
    return path


def test_a_wheel_over_the_total_cap_is_refused_naming_it_and_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(trees, "MAX_WHEEL_BYTES", 1_000_000)
    wheel = _wheel(tmp_path / "bomb-1.0-py3-none-any.whl", {f"bomb/m{i}.py": 300_000 for i in range(4)})
    assert wheel.stat().st_size < 20_000
    with pytest.raises(UsageError) as e:
        trees.unpack_wheel(str(wheel), "--verify-against")
    assert "bomb-1.0-py3-none-any.whl" in str(e.value) and "1000000" in str(e.value)
    under = _wheel(tmp_path / "ok-1.0-py3-none-any.whl", {f"ok/m{i}.py": 200_000 for i in range(4)})
    assert len(list(Path(trees.unpack_wheel(str(under), "--verify-against")).rglob("*.py"))) == 4


def test_a_wheel_with_too_many_members_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(trees, "MAX_WHEEL_MEMBERS", 10)
    wheel = _wheel(tmp_path / "many-1.0-py3-none-any.whl", {f"many/m{i}.py": 1 for i in range(11)})
    with pytest.raises(UsageError, match="11 files to unpack, over the limit of 10"):
        trees.unpack_wheel(str(wheel), "--before")


ODD = "pkg/srt/a b;c|d#e?f%g.py"


def test_odd_file_names_are_written_safely_in_every_format(tree):
    root = tree({ODD: STALE})
    with cwd(root):
        sarif = json.loads(run_cli(["--no-cache", "--format", "sarif"], root).stdout)
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
        assert "pkg/srt/a%20b%3Bc%7Cd%23e%3Ff%25g.py" in uris, uris
        for fmt in ("json", "gitlab"):
            assert ODD in run_cli(["--no-cache", "--format", fmt], root).stdout
        lines = run_cli(["--no-cache", "--format", "json-lines"], root).stdout.splitlines()
        assert ODD in {json.loads(line).get("path") for line in lines}
        junit = ET.fromstring(run_cli(["--no-cache", "--format", "junit"], root).stdout)
        assert ODD in ET.tostring(junit, encoding="unicode")
