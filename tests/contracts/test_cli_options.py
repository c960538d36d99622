"""The command line as ruff users expect it: the exit-code table, --fix/--diff exit codes and
formats, --statistics, --exit-zero, --version, -q, --verbose, --output-file, colour, progress,
Ctrl-C, subcommands in --help, `rules`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from contracts import rules
from contracts._version import __version__
from contracts.cli import main
from contracts.terminal import Progress, use_colour
from tests.contracts.conftest import REPO, cwd, run_cli

FIXABLE = {"pkg/srt/a.py": "from pkg.jit_kernel import hicache\n"}
UNFIXABLE = {"pkg/srt/b.py": "import pkg.jit_kernel.gone\n"}
OTHER_RULE = {"pkg/kernels/ops/gemm/x.py": "from pkg.kernels.ops.kvcache.hicache import _private_helper\n"}


def cli(root, *args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), cwd(root):
        code = main(["--no-cache", *args])
    return code, out.getvalue(), err.getvalue()


# --------------------------------------------------------------------------- exit codes


@pytest.mark.parametrize("files, args, code", [
    ({}, [], 0),  # clean
    (FIXABLE, [], 1),  # findings
    (FIXABLE, ["--exit-zero"], 0),
    (FIXABLE, ["--fix"], 0),  # fixed all
    ({**FIXABLE, **UNFIXABLE}, ["--fix"], 1),  # fixed some
    ({**FIXABLE, **OTHER_RULE}, ["--fix"], 1),  # fixed all it can; another rule's finding remains
    ({**FIXABLE, **UNFIXABLE}, ["--fix", "--exit-zero"], 0),
    ({}, ["--diff"], 0),  # nothing to change, nothing left
    (FIXABLE, ["--diff"], 1),  # would change something
    (UNFIXABLE, ["--diff"], 1),  # would change nothing, a finding remains
    ({}, ["--contract", "nope"], 2),  # usage error
])
def test_exit_code_table(tree, files, args, code):
    root = tree(files)
    assert cli(root, *args)[0] == code


def test_exit_2_on_a_config_error(tree):
    root = tree(config="[importlinter]\nroot_packages = pkg\n")
    code, _, err = cli(root)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_ctrl_c_is_one_line_and_exit_130(tree, monkeypatch):
    root = tree()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("contracts.check.run", interrupted)
    code, out, err = cli(root)
    assert code == 130
    assert err == "namespace-lint: interrupted\n" and out == ""


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_to_a_running_process_exits_130_without_a_traceback(tree):
    root = tree()
    # The check waits (as a slow run would) after saying so; SIGINT arrives during the wait.
    script = ("import sys, time, contracts.check as c\n"
              "def slow(*a, **k):\n    print('ready', file=sys.stderr, flush=True); time.sleep(60)\n"
              "c.run = slow\nfrom contracts.cli import main\nsys.exit(main(['--no-cache']))\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # A shell's background job (`bash .ci/run &`) starts with SIGINT ignored, and a child inherits
    # that: the child gets the default disposition back, so Python installs its own handler.
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=root, env=env, stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    assert proc.stderr.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == "namespace-lint: interrupted\n"


def test_fix_honours_output_format_for_what_remains(tree):
    root = tree({**FIXABLE, **UNFIXABLE, **OTHER_RULE})
    code, out, err = cli(root, "--fix", "--output-format", "json")
    assert code == 1
    data = json.loads(out)  # stdout is the report alone; the fixer's lines went to stderr
    assert sorted(f["rule"] for f in data["findings"]) == ["group-boundary", "private-import", "removed-module"]
    assert "Fixed 1 import in 1 file" in err
    assert (root / "pkg/srt/a.py").read_text() == "from pkg.kernels.ops.kvcache import hicache\n"


def test_fix_lists_other_rules_findings_that_remain(tree):
    root = tree({**FIXABLE, **OTHER_RULE})
    code, out, _ = cli(root, "--fix")
    assert code == 1
    assert "pkg/kernels/ops/gemm/x.py:1:1: group-boundary " in out
    assert out.rstrip().endswith("2 findings of other rules remain; --fix does not repair them.")


def test_diff_keeps_stdout_a_patch_and_lists_what_remains_on_stderr(tree):
    root = tree({**FIXABLE, **UNFIXABLE})
    code, out, err = cli(root, "--diff")
    assert code == 1
    assert out.startswith("--- a/pkg/srt/a.py\n+++ b/pkg/srt/a.py\n")
    assert "pkg/srt/b.py:1:1: removed-module `pkg.jit_kernel.gone`" in err


# --------------------------------------------------------------------------- options


def test_statistics_counts_per_rule_and_fixable(tree):
    root = tree({**FIXABLE, **UNFIXABLE, **OTHER_RULE})
    code, out, _ = cli(root, "--statistics")
    assert code == 1
    assert out.splitlines() == [
        "2  removed-module  [*] 1 fixable",
        "1  group-boundary",
        "1  private-import",
    ]
    _, out, _ = cli(root, "--statistics", "--output-format", "json")
    assert json.loads(out) == [{"rule": "removed-module", "count": 2, "fixable": 1},
                               {"rule": "group-boundary", "count": 1, "fixable": 0},
                               {"rule": "private-import", "count": 1, "fixable": 0}]


def test_quiet_prints_findings_only(tree):
    root = tree(FIXABLE)
    code, out, err = cli(root, "-q")
    assert code == 1
    assert out.splitlines() == ["pkg/srt/a.py:1:1: removed-module `pkg.jit_kernel.hicache` was removed (import; "
                                "`pkg.jit_kernel` no longer exists) (use `pkg.kernels.ops.kvcache.hicache` instead) [*]"]
    (root / "pkg/srt/a.py").unlink()
    assert cli(root, "--quiet") == (0, "", "")


def test_verbose_prints_timings_per_phase_and_what_the_cache_did(tree):
    root = tree(FIXABLE)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), cwd(root):
        main(["--verbose"])
        first = err.getvalue()
        err.truncate(0), err.seek(0)
        main(["--verbose"])
        second = err.getvalue()
    assert "cache cold" in first and "model " in first and "rules " in first and "render " in first
    assert "cache warm" in second and "config " in second and "render " in second


def test_output_file_gets_the_report_and_stdout_stays_empty(tree, tmp_path):
    root = tree(FIXABLE)
    target = tmp_path / "out" / "report.sarif"
    code, out, _ = cli(root, "--output-format", "sarif", "--output-file", str(target))
    assert code == 1 and out == ""
    assert json.loads(target.read_text())["version"] == "2.1.0"


def test_output_file_that_cannot_be_written_is_a_usage_error(tree, tmp_path):
    root = tree()
    (tmp_path / "file").write_text("")
    code, _, err = cli(root, "--output-file", str(tmp_path / "file" / "x.txt"))
    assert code == 2 and "--output-file" in err and "cannot be written" in err


def test_version(tree, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"namespace-lint {__version__}\n"


def test_help_lists_the_subcommands_and_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for word in ("rules", "derive-map", "check", "--output-format", "--output-file", "--statistics",
                 "--exit-zero", "--version", "--quiet", "--verbose", "--strict-baseline", "130"):
        assert word in text


def test_check_subcommand_is_the_default_command(tree):
    root = tree(FIXABLE)
    assert cli(root, "--output-format", "json")[1] == _strip_check(cli, root)


def _strip_check(cli, root):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), cwd(root):
        main(["check", "--no-cache", "--output-format", "json"])
    return out.getvalue()


def test_rules_lists_one_line_per_rule(capsys):
    assert main(["rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len([line for line in lines[:len(rules.ALL)] if line.split()[0] in rules.BY_ID]) == len(rules.ALL)
    assert lines[0].startswith("removed-module") and "[*]" in lines[0] and "removed" in lines[0]


def test_rules_id_prints_the_full_documentation(capsys):
    assert main(["rules", "layer"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# layer\n") and "## What it does" in out and "## Fix safety" in out


def test_rules_json(capsys):
    assert main(["rules", "--output-format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["id"] for d in data] == [r.RULE_ID for r in rules.ALL]
    assert all(d["summary"] and d["text"] and d["fix"] in ("always", "sometimes", "never") for d in data)


def test_rules_help_and_unknown_rule(capsys):
    with pytest.raises(SystemExit) as e:
        main(["rules", "--help"])
    assert e.value.code == 0 and "RULE_ID" in capsys.readouterr().out
    assert main(["rules", "nope"]) == 2
    assert "unknown rule 'nope'" in capsys.readouterr().err


# --------------------------------------------------------------------------- terminal


class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("env, tty, expected", [
    ({}, False, False), ({}, True, True), ({"NO_COLOR": "1"}, True, False),
    ({"FORCE_COLOR": "1"}, False, True), ({"NO_COLOR": ""}, True, True), ({"FORCE_COLOR": ""}, False, False),
])
def test_colour_decision(monkeypatch, env, tty, expected):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert use_colour(_Tty() if tty else io.StringIO()) is expected


def test_colour_in_the_output_with_force_color_and_none_with_no_color(tree):
    root = tree(FIXABLE)
    coloured = run_cli(["--no-cache"], cwd=root, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[1;31mremoved-module\x1b[0m" in coloured
    plain = run_cli(["--no-cache"], cwd=root, env={"NO_COLOR": "1", "FORCE_COLOR": ""}).stdout
    assert "\x1b" not in plain
    assert "\x1b" not in run_cli(["--no-cache", "--format", "json"], cwd=root, env={"FORCE_COLOR": "1"}).stdout


def test_progress_line_only_on_a_terminal_and_only_after_the_delay():
    tty = _Tty()
    with Progress(stream=tty, delay=0.05).phase("checking"):
        time.sleep(0.4)
    assert "namespace-lint: checking... " in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[K")  # erased before anything else is printed
    quick = _Tty()
    with Progress(stream=quick, delay=5).phase("checking"):
        pass
    assert quick.getvalue() == ""
    piped = io.StringIO()
    with Progress(stream=piped, delay=0).phase("checking"):
        time.sleep(0.1)
    assert piped.getvalue() == ""


def test_progress_line_is_erased_before_code_that_prints_as_it_goes(monkeypatch):
    tty = _Tty()
    progress = Progress(stream=tty, delay=0.01)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    with progress.phase("deriving the map"), progress.guarding():
        time.sleep(0.2)
        print("result")
        shown = tty.getvalue()
        time.sleep(0.2)
    assert "namespace-lint: deriving the map... " in shown and shown.endswith("\r\x1b[K")
    assert tty.getvalue() == shown  # nothing drawn after the first print
    assert out.getvalue() == "result\n" and sys.stdout is out
