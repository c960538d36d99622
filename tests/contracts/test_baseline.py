"""`--write-baseline` / `--baseline`: adopt on a tree with findings; fail only on new ones; the
baseline can only shrink; a bad baseline file is a one-line usage error naming it."""

from __future__ import annotations

import json

import pytest

from contracts import baseline
from contracts.cli import main
from contracts.errors import UsageError
from contracts.findings import Finding
from tests.contracts.conftest import cwd, run_cli

OLD = {
    "pkg/srt/models/m.py": "import os\nfrom pkg.jit_kernel import hicache\n",
    "pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels.ops.kvcache.hicache import transfer\n",
}


def _cli(root, *args, capsys):
    with cwd(root):
        code = main(["--config", str(root / ".importlinter"), "--no-cache", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_is_clean_against_the_baseline_it_wrote(tree, capsys):
    root = tree(OLD)
    code, _, err = _cli(root, "--write-baseline", str(root / "bl.json"), capsys=capsys)
    assert code == 0 and "Wrote 2 findings" in err
    code, out, _ = _cli(root, "--baseline", str(root / "bl.json"), capsys=capsys)
    assert code == 0, out
    assert out.strip().endswith("no findings.")


def test_is_kept_when_lines_move(tree, capsys):
    root = tree(OLD)
    _cli(root, "--write-baseline", str(root / "bl.json"), capsys=capsys)
    m = root / "pkg/srt/models/m.py"
    m.write_text("# a new header comment\n\n" + m.read_text())
    code, out, _ = _cli(root, "--baseline", str(root / "bl.json"), capsys=capsys)
    assert code == 0, out


def test_is_broken_when_a_new_finding_appears(tree, capsys):
    root = tree(OLD)
    _cli(root, "--write-baseline", str(root / "bl.json"), capsys=capsys)
    (root / "pkg/srt/other.py").write_text("import pkg.jit_kernel.norm\n")
    code, out, _ = _cli(root, "--baseline", str(root / "bl.json"), capsys=capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("pkg/srt/other.py:1:1: removed-module `pkg.jit_kernel.norm`")
    assert lines[-2:] == ["Scanned 14 of 14 .py files: 1 finding (removed-module: 1).", "[*] 1 fixable with `--fix`."]


def test_reports_entries_that_no_longer_occur(tree, capsys):
    root = tree(OLD)
    _cli(root, "--write-baseline", str(root / "bl.json"), capsys=capsys)
    (root / "pkg/srt/models/m.py").write_text("import os\nfrom pkg.kernels.ops.kvcache import hicache\n")
    code, out, _ = _cli(root, "--baseline", str(root / "bl.json"), capsys=capsys)
    assert code == 0
    assert (f"{root / 'bl.json'}: baseline entry no longer occurs: removed-module pkg.srt.models.m -> "
            f"pkg.jit_kernel.hicache (remove it)") in out.splitlines()


def test_file_is_sorted_versioned_and_written_the_same_twice(tree, capsys):
    root = tree(OLD)
    _cli(root, "--write-baseline", str(root / "a.json"), capsys=capsys)
    _cli(root, "--write-baseline", str(root / "b.json"), capsys=capsys)
    text = (root / "a.json").read_text()
    assert text == (root / "b.json").read_text()
    data = json.loads(text)
    assert data["version"] == baseline.VERSION
    keys = [(e["rule"], e["importer"], e["imported"]) for e in data["entries"]]
    assert keys == sorted(keys) == [
        ("group-boundary", "pkg.kernels.ops.gemm.fused_a_gemm", "pkg.kernels.ops.kvcache.hicache"),
        ("removed-module", "pkg.srt.models.m", "pkg.jit_kernel.hicache"),
    ]


def test_rewriting_keeps_the_reasons_of_entries_that_still_occur(tmp_path):
    path = tmp_path / "bl.json"
    kept = Finding("a.py", 1, 1, "group-boundary", "pkg.a", "pkg.b", "m")
    fixed = Finding("c.py", 1, 1, "group-boundary", "pkg.c", "pkg.d", "m")
    baseline.write(str(path), [kept, fixed])
    data = json.loads(path.read_text())
    for entry in data["entries"]:
        entry["reason"] = f"reviewed: {entry['importer']}"
    path.write_text(json.dumps(data))
    assert baseline.write(str(path), [kept]) == 1
    assert json.loads(path.read_text())["entries"] == [
        {"rule": "group-boundary", "importer": "pkg.a", "imported": "pkg.b", "reason": "reviewed: pkg.a"}]


def test_apply_returns_new_findings_and_gone_keys(tmp_path):
    path = tmp_path / "bl.json"
    a = Finding("a.py", 3, 1, "layer", "pkg.a", "pkg.srt.x", "m")
    b = Finding("b.py", 1, 1, "layer", "pkg.b", "pkg.srt.x", "m")
    baseline.write(str(path), [a, b])
    moved_a = Finding("a.py", 9, 5, "layer", "pkg.a", "pkg.srt.x", "m")
    c = Finding("c.py", 1, 1, "layer", "pkg.c", "pkg.srt.x", "m")
    new, gone = baseline.apply(str(path), [c, moved_a])
    assert new == [c]
    assert gone == [("layer", "pkg.b", "pkg.srt.x")]


@pytest.mark.parametrize("content, message", [
    ("{not json", "not a baseline file: invalid JSON at line 1"),
    ("", "not a baseline file: invalid JSON"),
    ("[]", "expected a JSON object with 'version' and 'entries'"),
    ('{"version": 1}', "expected a JSON object with 'version' and 'entries'"),
    ('{"version": 99, "entries": []}', "unsupported baseline version 99"),
    ('{"version": 1, "entries": {}}', "'entries' must be a list"),
    ('{"version": 1, "entries": [{"rule": "layer", "importer": "a"}]}', "entry 1 must be an object"),
    ('{"version": 1, "entries": [{"rule": "layer", "importer": "a", "imported": 3}]}', "entry 1 must be"),
    ('{"version": 1, "entries": [{"rule": "l", "importer": "a", "imported": "b", "reason": 1}]}',
     "entry 1: 'reason' must be a string"),
])
def test_is_invalid_when_the_file_is_not_a_baseline(tmp_path, content, message):
    path = tmp_path / "bl.json"
    path.write_text(content)
    with pytest.raises(UsageError) as info:
        baseline.apply(str(path), [])
    assert str(path) in str(info.value) and message in str(info.value)


def test_is_invalid_when_the_file_is_missing_or_binary(tmp_path):
    with pytest.raises(UsageError, match="no such file .*--write-baseline"):
        baseline.apply(str(tmp_path / "missing.json"), [])
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UsageError, match="bin.json: cannot be read"):
        baseline.apply(str(tmp_path / "bin.json"), [])


def test_cli_exits_2_with_one_line_naming_a_corrupt_baseline(tree):
    root = tree(OLD)
    (root / "bl.json").write_text('{"version": 1, "entries": [')
    proc = run_cli(["--no-cache", "--baseline", "bl.json"], cwd=root)
    assert proc.returncode == 2
    assert proc.stdout == ""
    [line] = proc.stderr.splitlines()
    assert line.startswith("namespace-lint: error: --baseline bl.json: not a baseline file: invalid JSON")


def test_write_replaces_a_corrupt_file(tmp_path):
    path = tmp_path / "bl.json"
    path.write_text("garbage")
    assert baseline.write(str(path), [Finding("a.py", 1, 1, "layer", "pkg.a", "pkg.b", "m")]) == 1
    assert baseline.apply(str(path), []) == ([], [("layer", "pkg.a", "pkg.b")])


def test_pre_commit_paths_do_not_report_entries_outside_them_as_gone(tree, capsys):
    root = tree(OLD)
    _cli(root, "--write-baseline", str(root / "bl.json"), capsys=capsys)
    code, out, _ = _cli(root, "--baseline", str(root / "bl.json"), str(root / "pkg/srt/models/m.py"),
                        capsys=capsys)
    assert code == 0
    assert "no longer occurs" not in out
    # Without PATHs, an entry that really disappeared is still reported.
    (root / "pkg/kernels/ops/gemm/fused_a_gemm.py").write_text("X = 1\n")
    code, out, _ = _cli(root, "--baseline", str(root / "bl.json"), capsys=capsys)
    assert "baseline entry no longer occurs: group-boundary" in out


# --------------------------------------------------------------------------- version 2: counts

TWICE = {"pkg/srt/models/m.py": "from pkg.jit_kernel import hicache\n\ndef f():\n    from pkg.jit_kernel import hicache\n"}


def test_counts_are_recorded_and_one_more_occurrence_fails(tree, capsys):
    root = tree(TWICE)
    _cli(root, "--write-baseline", str(root / "bl.json"), capsys=capsys)
    data = json.loads((root / "bl.json").read_text())
    assert data["version"] == 2
    [entry] = [e for e in data["entries"] if e["rule"] == "removed-module"]
    assert entry["count"] == 2
    assert _cli(root, "--baseline", str(root / "bl.json"), capsys=capsys)[0] == 0
    # A third import of the same module by the same importer: a new finding, not covered.
    path = root / "pkg/srt/models/m.py"
    path.write_text(path.read_text() + "\ndef g():\n    from pkg.jit_kernel import hicache\n")
    code, out, _ = _cli(root, "--baseline", str(root / "bl.json"), capsys=capsys)
    assert code == 1
    assert [line for line in out.splitlines() if "removed-module" in line and line.startswith("pkg/")] == [
        "pkg/srt/models/m.py:7:5: removed-module `pkg.jit_kernel.hicache` was removed (lazy import; "
        "`pkg.jit_kernel` no longer exists) (use `pkg.kernels.ops.kvcache.hicache` instead) [*]"]


def test_strict_baseline_fails_when_an_entry_no_longer_occurs_or_occurs_less(tree, capsys):
    root = tree(TWICE)
    bl = str(root / "bl.json")
    _cli(root, "--write-baseline", bl, capsys=capsys)
    path = root / "pkg/srt/models/m.py"
    path.write_text("from pkg.jit_kernel import hicache\n")  # one of the two fixed
    code, out, _ = _cli(root, "--baseline", bl, capsys=capsys)
    assert code == 0
    assert "occurs fewer times than counted (1 of 2)" in out
    code, out, _ = _cli(root, "--baseline", bl, "--strict-baseline", capsys=capsys)
    assert code == 1
    assert "fails the run with --strict-baseline" in out
    path.write_text("from pkg.kernels.ops.kvcache import hicache\n")  # both fixed
    code, out, _ = _cli(root, "--baseline", bl, "--strict-baseline", capsys=capsys)
    assert code == 1 and "baseline entry no longer occurs: removed-module" in out
    assert _cli(root, "--baseline", bl, "--strict-baseline", "--exit-zero", capsys=capsys)[0] == 0


def test_strict_baseline_from_the_config(tree, capsys):
    root = tree(TWICE)
    config = root / ".importlinter"
    bl = str(root / "bl.json")
    _cli(root, "--write-baseline", bl, capsys=capsys)
    (root / "pkg/srt/models/m.py").write_text("X = 1\n")
    assert _cli(root, "--baseline", bl, capsys=capsys)[0] == 0
    config.write_text(config.read_text().replace("[importlinter]\n", "[importlinter]\nstrict_baseline = true\n", 1))
    assert _cli(root, "--baseline", bl, capsys=capsys)[0] == 1
    config.write_text(config.read_text().replace("strict_baseline = true", "strict_baseline = maybe"))
    code, _, err = _cli(root, "--baseline", bl, capsys=capsys)
    assert code == 2 and "option 'strict_baseline': expected true or false" in err


def test_strict_baseline_needs_a_baseline(tree, capsys):
    root = tree()
    code, _, err = _cli(root, "--strict-baseline", capsys=capsys)
    assert code == 2 and "--strict-baseline needs --baseline FILE" in err


def test_write_baseline_with_baseline_prunes_and_adds_nothing(tree, capsys):
    root = tree({**TWICE, "pkg/srt/other.py": "import pkg.jit_kernel.norm\n"})
    bl = root / "bl.json"
    _cli(root, "--write-baseline", str(bl), capsys=capsys)
    data = json.loads(bl.read_text())
    data["entries"][-1]["reason"] = "kept by hand"
    bl.write_text(json.dumps(data))
    (root / "pkg/srt/other.py").write_text("X = 1\n")  # that entry is gone
    (root / "pkg/srt/models/m.py").write_text("from pkg.jit_kernel import hicache\n")  # 2 -> 1
    (root / "pkg/srt/new.py").write_text("import pkg.jit_kernel.gone\n")  # new: stays new
    code, out, err = _cli(root, "--baseline", str(bl), "--write-baseline", str(bl), capsys=capsys)
    assert code == 1 and "pkg/srt/new.py:1:1: removed-module" in out
    entries = {(e["rule"], e["importer"], e["imported"]): e for e in json.loads(bl.read_text())["entries"]}
    assert ("removed-module", "pkg.srt.other", "pkg.jit_kernel.norm") not in entries
    assert ("removed-module", "pkg.srt.new", "pkg.jit_kernel.gone") not in entries
    assert "count" not in entries[("removed-module", "pkg.srt.models.m", "pkg.jit_kernel.hicache")]
    assert "pruned" in err
    assert _cli(root, "--baseline", str(bl), "--strict-baseline", capsys=capsys)[0] == 1  # only new.py
    (root / "pkg/srt/new.py").unlink()
    assert _cli(root, "--baseline", str(bl), "--strict-baseline", capsys=capsys)[0] == 0


def test_version_1_files_are_still_read_and_cover_any_number(tree, capsys):
    root = tree(TWICE)
    bl = root / "bl.json"
    bl.write_text(json.dumps({"version": 1, "entries": [
        {"rule": "removed-module", "importer": "pkg.srt.models.m", "imported": "pkg.jit_kernel.hicache"},
        {"rule": "group-boundary", "importer": "pkg.kernels.ops.gemm.fused_a_gemm",
         "imported": "pkg.kernels.ops.kvcache.hicache"}]}))
    code, out, err = _cli(root, "--baseline", str(bl), capsys=capsys)
    assert code == 0
    assert "version 1 baseline" in err and "--write-baseline" in err
    _cli(root, "--baseline", str(bl), "--write-baseline", str(bl), capsys=capsys)
    data = json.loads(bl.read_text())
    assert data["version"] == 2
    assert {e["imported"]: e.get("count", 1) for e in data["entries"]}["pkg.jit_kernel.hicache"] == 2


@pytest.mark.parametrize("entry, message", [
    ({"rule": "l", "importer": "a", "imported": "b", "count": 0}, "'count' must be an integer >= 1"),
    ({"rule": "l", "importer": "a", "imported": "b", "count": "2"}, "'count' must be an integer >= 1"),
    ({"rule": "l", "importer": "a", "imported": "b", "count": True}, "'count' must be an integer >= 1"),
])
def test_bad_counts_are_usage_errors(tmp_path, entry, message):
    path = tmp_path / "bl.json"
    path.write_text(json.dumps({"version": 2, "entries": [entry]}))
    with pytest.raises(UsageError, match=message):
        baseline.compare(str(path), [])


def test_a_repeated_entry_is_a_usage_error(tmp_path):
    path = tmp_path / "bl.json"
    entry = {"rule": "l", "importer": "a", "imported": "b"}
    path.write_text(json.dumps({"version": 2, "entries": [entry, entry]}))
    with pytest.raises(UsageError, match="repeats the entry"):
        baseline.compare(str(path), [])


def test_relative_baseline_paths_are_beside_the_config_file(tree, capsys):
    # The hook's `--baseline FILE`, run from a subdirectory: the file beside the config is meant.
    root = tree(OLD)
    sub = root / "pkg" / "srt"
    with cwd(sub):
        assert main(["--no-cache", "--write-baseline", "bl.json"]) == 0
        assert (root / "bl.json").is_file() and not (sub / "bl.json").exists()
        capsys.readouterr()
        assert main(["--no-cache", "--baseline", "bl.json"]) == 0
    assert capsys.readouterr().out.strip().endswith("no findings.")


def test_a_strict_baseline_failure_says_so_in_the_summary(tree, capsys):
    root = tree(OLD)
    bl = str(root / "bl.json")
    _cli(root, "--write-baseline", bl, capsys=capsys)
    (root / "pkg/srt/models/m.py").write_text("import os\n")  # its entry no longer occurs
    code, out, _ = _cli(root, "--baseline", bl, "--strict-baseline", capsys=capsys)
    assert code == 1
    assert out.splitlines()[-1].endswith(
        ": no findings; 1 baseline entry that no longer occurs fails the run (--strict-baseline).")
    code, out, _ = _cli(root, "--baseline", bl, capsys=capsys)  # not strict: a note, and clean
    assert code == 0 and out.splitlines()[-1].endswith(": no findings.")
    code, _, err = _cli(root, "--baseline", bl, "--strict-baseline", "--format", "github", capsys=capsys)
    assert code == 1 and "0 findings; 1 baseline entry that no longer occurs fails the run" in err


GEMM = "pkg/kernels/ops/gemm/fused_a_gemm.py"
MODEL = "pkg/srt/models/m.py"


def _adopt(root, capsys):
    bl = str(root / "bl.json")
    assert _cli(root, "--write-baseline", bl, capsys=capsys)[0] == 0
    return bl


@pytest.mark.parametrize("old, new", [
    (GEMM, "pkg/kernels/ops/gemm/fused_b_gemm.py"),  # a rename
    (MODEL, "pkg/srt/models/sub/m.py"),  # a move into a subpackage
])
def test_an_entry_follows_its_finding_when_the_importer_moves(tree, capsys, old, new):
    root = tree(OLD)
    bl = _adopt(root, capsys)
    (root / new).parent.mkdir(parents=True, exist_ok=True)
    (root / old).rename(root / new)
    code, out, _ = _cli(root, "--baseline", bl, "--strict-baseline", capsys=capsys)
    assert code == 0, out
    assert out.splitlines()[-1].endswith(": no findings.") and "no longer occurs" not in out
    # pruning writes the entry under the finding's new key, statement and count kept
    assert _cli(root, "--baseline", bl, "--write-baseline", bl, capsys=capsys)[0] == 0
    importers = {e["importer"] for e in json.loads((root / "bl.json").read_text())["entries"]}
    assert new[:-3].replace("/", ".") in importers and old[:-3].replace("/", ".") not in importers


def test_a_moved_entry_covers_no_other_statement_nor_a_copy(tree, capsys):
    root = tree(OLD)
    bl = _adopt(root, capsys)
    (root / MODEL).rename(root / "pkg/srt/models/m2.py")
    (root / "pkg/srt/models/m2.py").write_text("import pkg.jit_kernel.hicache\n")  # another statement
    code, out, _ = _cli(root, "--baseline", bl, capsys=capsys)
    assert code == 1 and "pkg/srt/models/m2.py:1:1: removed-module" in out
    (root / "pkg/srt/models/m2.py").unlink()
    (root / "pkg/kernels/ops/gemm/fused_c_gemm.py").write_text((root / GEMM).read_text())  # the original stays
    code, out, _ = _cli(root, "--baseline", bl, capsys=capsys)
    assert code == 1 and "pkg/kernels/ops/gemm/fused_c_gemm.py:1:1: group-boundary" in out


def test_adding_a_replacements_line_keeps_the_findings_identity(tree, capsys):
    line = "    pkg.jit_kernel.hicache -> pkg.kernels.ops.kvcache.hicache\n"
    root = tree(OLD)
    config = root / ".importlinter"
    with_line = config.read_text()
    assert line in with_line
    config.write_text(with_line.replace(line, ""))  # adopted before the line was written
    bl = _adopt(root, capsys)
    assert ("removed-module", "pkg.srt.models.m", "pkg.jit_kernel") in baseline.load(bl)
    config.write_text(with_line)  # now `from pkg.jit_kernel import hicache` names the submodule
    code, out, _ = _cli(root, "--baseline", bl, "--strict-baseline", capsys=capsys)
    assert code == 0, out
    assert "no longer occurs" not in out
