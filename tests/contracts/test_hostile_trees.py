"""Bad input and hostile trees: every run completes, reports the bad path with a clear reason,
and still checks every other file.

Each tree is the clean fixture tree plus `pkg/srt/witness.py`, which holds a real violation at
line 2: if the bad file made the run skip the rest, the witness finding would be missing. The
CLI runs in a subprocess, the way a user runs it, and no run may print a traceback.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from contracts.engine.discover import discover
from tests.contracts.conftest import CLEAN_TREE, REPO, run_cli, write_tree

WITNESS = {"pkg/srt/witness.py": "import os\nfrom pkg.jit_kernel.norm import rms\n"}
WITNESS_FINDING = ("pkg/srt/witness.py", 2, "removed-module")

_LINE_RE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<rule>[a-z-]+) (?P<message>.*)$")
_SUMMARY_RE = re.compile(r"^Scanned (\d+) of (\d+) \.py files")


@dataclass
class Run:
    code: int
    findings: list[tuple[str, int, str, str]]  # (path, line, rule, message)
    scanned: int
    total: int
    output: str

    def at(self, path: str) -> list[tuple[int, str, str]]:
        return [(line, rule, message) for p, line, rule, message in self.findings if p == path]


def lint(root: Path, *args: str, preexec_fn=None, env: dict | None = None) -> Run:
    """The CLI on `root` (text format, no cache); asserts the run completed without a traceback
    and (but for --fix, which reports what it wrote) stated its coverage."""
    if preexec_fn is None:
        proc = run_cli(["--no-cache", *args], cwd=root, env=env)
    else:
        full_env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1", **(env or {}))
        proc = subprocess.run([sys.executable, "-m", "contracts", "--no-cache", *args], cwd=root,
                              env=full_env, capture_output=True, text=True, timeout=120,
                              preexec_fn=preexec_fn)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    findings, scanned, total = [], -1, -1
    for line in proc.stdout.splitlines():
        m = _LINE_RE.match(line)
        if m:
            findings.append((m["path"], int(m["line"]), m["rule"], m["message"]))
        m = _SUMMARY_RE.match(line)
        if m:
            scanned, total = int(m[1]), int(m[2])
    assert scanned >= 0 or "--fix" in args, f"no coverage line in the output:\n{proc.stdout}\n{proc.stderr}"
    return Run(proc.returncode, findings, scanned, total, proc.stdout + proc.stderr)


def make_tree(root: Path, files: dict[str, bytes | str] | None = None) -> Path:
    write_tree(root, {**CLEAN_TREE, **WITNESS})
    for rel, data in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return root


def assert_rest_checked(run: Run) -> None:
    assert run.code == 1
    assert WITNESS_FINDING in [(p, line, rule) for p, line, rule, _ in run.findings], run.output


N_CLEAN = len(CLEAN_TREE) + len(WITNESS)  # .py files of the base tree

# --------------------------------------------------------------------------- bad file contents

REMOVED = "removed-module"
PARSE = "parse-error"

# id -> (bytes of pkg/srt/bad.py, [(line, rule, text in the message)] expected for it).
# A file is parsed when it names what a rule checks, so each bad file names a removed module.
BAD_FILES = {
    "syntax_error": (
        b"import os\ndef f(:\n    pass\nfrom pkg.jit_kernel.hicache import t\n",
        [(2, PARSE, "syntax error, line 2")]),
    "nul_byte": (
        b"from pkg.jit_kernel.hicache import t\nx = '\0'\n",
        [(2, PARSE, "NUL byte, line 2")]),
    "invalid_utf8": (
        b"import pkg.jit_kernel.hicache\nx = '\xff'\n",
        [(2, PARSE, "byte 0xff, line 2")]),
    "invalid_utf8_on_line_1": (
        b"x = '\xff'\nimport pkg.jit_kernel.hicache\n",
        [(1, PARSE, "not valid UTF-8 and declares no encoding (byte 0xff, line 1)")]),
    "latin1_declared_and_valid": (
        b"# -*- coding: latin-1 -*-\nNAME = '\xe9t\xe9'\nfrom pkg.jit_kernel.hicache import t\n",
        [(3, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "unknown_codec_declared": (
        b"# -*- coding: klingon -*-\nimport pkg.jit_kernel.hicache\n",
        [(1, PARSE, "declares an unknown encoding: klingon")]),
    "utf7_declared_hides_the_name_from_a_byte_search": (
        # Python reads `jit+AF8-kernel` as `jit_kernel` under this declaration.
        b"# coding: utf-7\nimport pkg.jit+AF8-kernel.hicache\n",
        [(2, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "nfkc_identifier_hides_the_name_from_a_byte_search": (
        # Fullwidth `ｋ`: Python normalizes identifiers (NFKC), so this imports pkg.jit_kernel.
        "import pkg.jit_\uff4bernel.hicache\n".encode(),
        [(1, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "bom": (
        b"\xef\xbb\xbfimport os\nfrom pkg.jit_kernel.hicache import t\n",
        [(2, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "bom_contradicting_a_latin1_declaration": (
        b"\xef\xbb\xbf# coding: latin-1\nimport pkg.jit_kernel.hicache\n",
        [(1, PARSE, "encoding problem")]),
    "crlf_line_endings": (
        b"import os\r\n\r\n\r\nfrom pkg.jit_kernel.hicache import t\r\n",
        [(4, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "cr_only_line_endings": (
        b"import os\r\rx = 1\rfrom pkg.jit_kernel.hicache import t\r",
        [(4, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "form_feed_is_not_a_line_break": (
        b"import os\n\x0c\nx = 1\x0c\nfrom pkg.jit_kernel.hicache import t\n",
        [(4, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "empty_file": (b"", []),
    "python2_file": (
        b"print 'hello'\nimport pkg.jit_kernel.hicache\n",
        [(1, PARSE, "syntax error, line 1")]),
    # Python 2's `except E, e:` is 3.14's unparenthesized `except (E, e):` (PEP 758): a file
    # some Python reads, so its import is checked whatever Python runs the tool.
    "python2_except_comma_reads_as_3_14": (
        b"try:\n    import pkg.jit_kernel.hicache\nexcept ImportError, e:\n    pass\n",
        [(2, REMOVED, "`pkg.jit_kernel.hicache` was removed (import;")]),
    "future_import_after_a_docstring": (
        b'"""Doc."""\nfrom __future__ import annotations\nfrom pkg.jit_kernel.hicache import t\n',
        [(3, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "future_import_parenthesized_over_lines": (
        b"from __future__ import (\n    annotations,\n    division,\n)\nfrom pkg.jit_kernel.hicache import t\n",
        [(5, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "future_import_late_is_still_read": (
        # Python refuses to compile this; its import of the removed module is still reported.
        b"import os\nfrom __future__ import annotations\nimport pkg.jit_kernel.hicache\n",
        [(3, REMOVED, "`pkg.jit_kernel.hicache` was removed")]),
    "future_barry_as_flufl_is_parsed_as_python_parses_it": (
        # `<>` is a syntax error in a file, even after this import (as `python file.py` says).
        b"from __future__ import barry_as_FLUFL\nimport pkg.jit_kernel.hicache\nok = 1 <> 2\n",
        [(3, PARSE, "syntax error, line 3")]),
    "string_annotations_under_future_annotations": (
        b"from __future__ import annotations\n\ndef f(x: 'pkg.jit_kernel.hicache') -> None:\n    pass\n",
        [(3, REMOVED, "`pkg.jit_kernel.hicache` was removed (string target")]),
    "type_ignore_and_noqa_do_not_suppress": (
        b"# type: ignore\n# ruff: noqa\n# flake8: noqa\n# pylint: skip-file\n"
        b"from pkg.jit_kernel.hicache import t  # type: ignore\n"
        b"import pkg.jit_kernel.norm  # noqa\n"
        b"import pkg.jit_kernel.utils  # noqa: F401  # pragma: no cover  # namespace-lint: ignore\n",
        [(5, REMOVED, "`pkg.jit_kernel.hicache`"), (6, REMOVED, "`pkg.jit_kernel.norm`"),
         (7, REMOVED, "`pkg.jit_kernel.utils`")]),
    "deeply_nested_expression": (
        b"import pkg.jit_kernel.hicache\nx = " + b"(" * 300 + b"1" + b")" * 300 + b"\n",
        [(2, PARSE, "too many nested parentheses")]),
    "operator_chain_too_long_for_python_to_compile": (
        b"import pkg.jit_kernel.hicache\nx = 1" + b" + 1" * 200_000 + b"\n",
        [(1, PARSE, "nested too deeply for the parser")]),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_file_is_reported_and_the_rest_is_still_checked(tmp_path, case):
    data, expected = BAD_FILES[case]
    run = lint(make_tree(tmp_path, {"pkg/srt/bad.py": data}))
    assert_rest_checked(run)
    got = run.at("pkg/srt/bad.py")
    assert len(got) == len(expected), run.output
    for (line, rule, text), (got_line, got_rule, message) in zip(expected, sorted(got)):
        assert (got_line, got_rule) == (line, rule), run.output
        assert text in message, message
    assert (run.scanned, run.total) == (N_CLEAN + 1, N_CLEAN + 1)


def test_line_numbers_of_graph_findings_survive_cr_line_endings_and_a_bom(tmp_path):
    # The graph rules read edges through grimp's native scanner, not `ast`: same lines.
    run = lint(make_tree(tmp_path, {
        "pkg/kernels/ops/gemm/cr.py": b"x = 1\r\ry = 2\rimport pkg.kernels.ops.kvcache.hicache\r",
        "pkg/kernels/ops/gemm/bom.py": b"\xef\xbb\xbf\nimport pkg.kernels.ops.kvcache.hicache\n",
        "pkg/kernels/ops/gemm/crlf.py": b"\r\n\r\nimport pkg.kernels.ops.kvcache.hicache\r\n",
    }))
    assert_rest_checked(run)
    assert [line for line, rule, _ in run.at("pkg/kernels/ops/gemm/cr.py")] == [4]
    assert [line for line, rule, _ in run.at("pkg/kernels/ops/gemm/bom.py")] == [2]
    assert [line for line, rule, _ in run.at("pkg/kernels/ops/gemm/crlf.py")] == [3]


def test_columns_of_graph_findings_are_the_statements_own_whatever_the_line_endings(tmp_path):
    # The column is the first non-blank character of the import's line, as Python numbers lines.
    lazy = "def f():\n\tif True:\n\t    import pkg.kernels.ops.kvcache.hicache\n"
    root = make_tree(tmp_path, {
        "pkg/kernels/ops/gemm/lf.py": "x = 1\n" * 40 + lazy,
        "pkg/kernels/ops/gemm/cr.py": ("x = 1\n" * 40 + lazy).replace("\n", "\r"),
        "pkg/kernels/ops/gemm/crlf.py": ("x = 1\n" * 40 + lazy).replace("\n", "\r\n"),
        "pkg/kernels/ops/gemm/ff.py": "x = 1\n\x0cimport pkg.kernels.ops.kvcache.hicache\n",
    })
    proc = run_cli(["--no-cache", "--format", "json"], cwd=root)
    found = {(f["path"], f["line"], f["col"]) for f in json.loads(proc.stdout)["findings"]
             if f["path"].startswith("pkg/kernels/ops/gemm/") and f["rule"] == "group-boundary"}
    assert found == {("pkg/kernels/ops/gemm/lf.py", 43, 6), ("pkg/kernels/ops/gemm/cr.py", 43, 6),
                     ("pkg/kernels/ops/gemm/crlf.py", 43, 6), ("pkg/kernels/ops/gemm/ff.py", 2, 2)}


def test_a_syntax_error_in_a_checked_package_is_reported_by_the_graph_rules(tmp_path):
    run = lint(make_tree(tmp_path, {"pkg/kernels/ops/gemm/py2.py": b"print 'x'\nimport os\n"}))
    assert_rest_checked(run)
    [(line, rule, message)] = run.at("pkg/kernels/ops/gemm/py2.py")
    assert (line, rule) == (1, PARSE) and "syntax error" in message


# --------------------------------------------------------------------------- large files

def _generated(size: int, tail: bytes) -> bytes:
    line = b"TABLE_0000 = (1, 2, 3, 4, 5, 6, 7, 8)  # generated\n"
    return line * (size // len(line)) + tail


def test_a_20_mb_generated_file_naming_nothing_checked_is_read_and_counted(tmp_path):
    root = make_tree(tmp_path, {"pkg/srt/generated.py": _generated(20 * 2**20, b"END = 1\n")})
    start = time.monotonic()
    run = lint(root)
    assert_rest_checked(run)
    assert run.at("pkg/srt/generated.py") == []
    assert (run.scanned, run.total) == (N_CLEAN + 1, N_CLEAN + 1)
    assert time.monotonic() - start < 20  # read and searched, not parsed


def test_a_20_mb_generated_file_naming_a_removed_module_is_reported_not_parsed(tmp_path):
    # Parsing it would take ~10 s and ~2.4 GB; it is reported with the reason instead.
    root = make_tree(tmp_path, {
        "pkg/srt/generated.py": _generated(20 * 2**20, b"from pkg.jit_kernel.hicache import t\n")})
    run = lint(root)
    assert_rest_checked(run)
    [(line, rule, message)] = run.at("pkg/srt/generated.py")
    assert rule == PARSE and "20.0 MiB, over the 4 MiB this tool parses" in message


# --------------------------------------------------------------------------- unreadable paths

_libc = ctypes.CDLL(None, use_errno=True)
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _drop_root_file_access() -> None:
    """In the child: drop the capabilities that let root ignore file permissions, so that
    `chmod 000` means for it what it means for everyone else (the kernel then returns EACCES)."""
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def permissions_apply(probe: Path):
    """A preexec_fn under which `probe` (mode 000) cannot be read, or skip: as a normal user
    permissions apply as they are; as root, only once the DAC capabilities are dropped."""
    if os.geteuid() != 0:
        return lambda: None
    check = subprocess.run([sys.executable, "-c", f"open({str(probe)!r}).read()"],
                           preexec_fn=_drop_root_file_access, capture_output=True, text=True)
    if "PermissionError" not in check.stderr:
        pytest.skip("running as root, and root's file capabilities cannot be dropped here")
    return _drop_root_file_access


def test_an_unreadable_file_and_directory_are_not_scanned_and_say_why(tmp_path):
    root = make_tree(tmp_path, {"pkg/srt/secret.py": "import pkg.jit_kernel.hicache\n",
                                "pkg/srt/locked/inner.py": "import pkg.jit_kernel.hicache\n"})
    (root / "pkg/srt/secret.py").chmod(0)
    (root / "pkg/srt/locked").chmod(0)
    try:
        run = lint(root, preexec_fn=permissions_apply(root / "pkg/srt/secret.py"))
    finally:
        (root / "pkg/srt/locked").chmod(0o755)
        (root / "pkg/srt/secret.py").chmod(0o644)
    assert_rest_checked(run)
    assert run.at("pkg/srt/secret.py") == [
        (1, "not-scanned", "`pkg/srt/secret.py` was not scanned: cannot read: Permission denied")]
    assert run.at("pkg/srt/locked") == [
        (1, "not-scanned", "`pkg/srt/locked` was not scanned: cannot list directory: Permission denied")]
    # The unreadable file is found but not scanned; the locked directory counts as one path.
    assert (run.scanned, run.total) == (N_CLEAN, N_CLEAN + 2)


def test_a_fifo_named_like_a_module_is_reported_and_never_opened(tmp_path):
    root = make_tree(tmp_path)
    os.mkfifo(root / "pkg/srt/pipe.py")  # opening it for reading would block forever
    run = lint(root)
    assert_rest_checked(run)
    [(_, rule, message)] = run.at("pkg/srt/pipe.py")
    assert rule == "not-scanned" and "a FIFO, not a regular file" in message
    assert (run.scanned, run.total) == (N_CLEAN, N_CLEAN + 1)


def test_a_walk_without_stat_finds_the_same_files_and_reports_a_fifo_alike(tmp_path):
    """A run that keeps no cache walks without a `stat` per file (`discover`'s `sizes`): the kind
    of each entry comes from its directory, so the same files are found, a FIFO is still
    reported and never opened, and only the sizes and times are not known."""
    root = make_tree(tmp_path)
    os.mkfifo(root / "pkg/srt/pipe.py")
    with_stat, without = (discover(str(root), ["pkg"], sizes=sizes) for sizes in (True, False))
    assert [(f.rel, f.module, f.is_package) for f in without.files] == \
        [(f.rel, f.module, f.is_package) for f in with_stat.files]
    assert without.skipped == with_stat.skipped and any("a FIFO" in why for _, why in without.skipped)
    assert {(f.size, f.mtime_ns) for f in without.files} == {(-1, 0)}
    assert all(f.size >= 0 for f in with_stat.files)


def test_a_file_name_that_is_not_utf8_is_reported_with_its_bytes(tmp_path):
    root = make_tree(tmp_path)
    with open(os.fsencode(root / "pkg/srt") + b"/caf\xe9.py", "wb") as fh:
        fh.write(b"import pkg.jit_kernel.hicache\n")
    run = lint(root)
    assert_rest_checked(run)
    [(_, rule, message)] = run.at("pkg/srt/caf\\xe9.py")
    assert rule == "not-scanned" and "not valid UTF-8" in message


def test_a_directory_named_like_a_module_is_read_as_scripts(tmp_path):
    # `odd.py/inner.py` would be module `pkg.srt.odd.py.inner`, which no import reaches: a
    # script, whose imports are checked (grimp's scanner, handed such names, panicked).
    run = lint(make_tree(tmp_path, {"pkg/srt/odd.py/inner.py": "import pkg.jit_kernel.hicache\n"}))
    assert_rest_checked(run)
    assert run.at("pkg/srt/odd.py") == []
    assert [rule for _, rule, _ in run.at("pkg/srt/odd.py/inner.py")] == ["removed-module"]


# --------------------------------------------------------------------------- symlinks

def test_a_symlink_to_a_data_file_is_not_reported(tmp_path):
    root = make_tree(tmp_path)
    (tmp_path / "weights.bin").write_bytes(b"\0")
    os.symlink(tmp_path / "weights.bin", root / "pkg/srt/weights.bin")  # outside, not Python
    os.symlink(tmp_path / "missing.bin", root / "pkg/srt/missing.bin")  # broken, not Python
    run = lint(root)
    assert_rest_checked(run)
    assert len(run.findings) == 1 and (run.scanned, run.total) == (N_CLEAN, N_CLEAN)


def test_a_symlink_loop_is_reported_not_followed(tmp_path):
    root = make_tree(tmp_path)
    os.symlink("..", root / "pkg/srt/up")  # points to pkg, which contains it
    os.symlink("self.py", root / "pkg/srt/self.py")  # points to itself
    run = lint(root)
    assert_rest_checked(run)
    [(_, rule, message)] = run.at("pkg/srt/up")
    assert rule == "not-scanned" and "symlink loop: points to `pkg`" in message
    [(_, rule, message)] = run.at("pkg/srt/self.py")
    assert rule == "not-scanned" and "symlink loop" in message


def test_a_symlinked_directory_outside_the_tree_is_reported_not_followed(tmp_path):
    outside = tmp_path / "elsewhere"
    (outside / "vendor").mkdir(parents=True)
    (outside / "vendor/mod.py").write_text("import pkg.jit_kernel.hicache\n")
    (outside / "one.py").write_text("import pkg.jit_kernel.hicache\n")
    root = make_tree(tmp_path / "src")
    os.symlink(outside / "vendor", root / "pkg/srt/vendor")
    os.symlink(outside / "one.py", root / "pkg/srt/one.py")
    run = lint(root)
    assert_rest_checked(run)
    for rel in ("pkg/srt/vendor", "pkg/srt/one.py"):
        assert run.at(rel) == [(1, "not-scanned", f"`{rel}` was not scanned: symlink to outside the tree; "
                                                  f"not followed")]
    assert (run.scanned, run.total) == (N_CLEAN, N_CLEAN + 2)


def test_a_symlinked_alias_of_a_directory_in_the_tree_is_scanned_once(tmp_path):
    root = make_tree(tmp_path)
    os.symlink("../kernels", root / "pkg/srt/kernels_alias")
    run = lint(root)
    assert_rest_checked(run)
    [(_, rule, message)] = run.at("pkg/srt/kernels_alias")
    assert rule == "not-scanned" and "symlink to `pkg/kernels`, scanned there; not scanned again" in message
    assert not [f for f in run.findings if f[0].startswith("pkg/srt/kernels_alias/")]


def test_symlink_fan_out_does_not_make_the_walk_exponential(tmp_path):
    # level_i holds two links to level_{i+1}: 2**30 paths if links were followed each time.
    root = make_tree(tmp_path)
    for i in range(30):
        level = root / f"pkg/srt/level_{i}"
        level.mkdir()
        (level / "m.py").write_text("X = 1\n")
        if i:
            os.symlink(f"../level_{i}", root / f"pkg/srt/level_{i - 1}/a")
            os.symlink(f"../level_{i}", root / f"pkg/srt/level_{i - 1}/b")
    start = time.monotonic()
    run = lint(root)
    assert time.monotonic() - start < 20
    assert_rest_checked(run)
    assert run.scanned == N_CLEAN + 30


def test_a_symlinked_file_inside_the_tree_is_scanned_under_its_own_name(tmp_path):
    root = make_tree(tmp_path, {"pkg/srt/real.py": "import pkg.jit_kernel.hicache\n"})
    os.symlink("real.py", root / "pkg/srt/alias.py")
    run = lint(root)
    assert_rest_checked(run)
    assert [rule for _, rule, _ in run.at("pkg/srt/alias.py")] == [REMOVED]
    assert [rule for _, rule, _ in run.at("pkg/srt/real.py")] == [REMOVED]


# --------------------------------------------------------------------------- tree shapes

def test_a_module_beside_a_package_of_the_same_name_is_reported(tmp_path):
    run = lint(make_tree(tmp_path, {
        "pkg/srt/mod/__init__.py": "import os\n",
        "pkg/srt/mod.py": "import pkg.jit_kernel.hicache\n",  # Python never imports this file
    }))
    assert_rest_checked(run)
    [(_, rule, message)] = run.at("pkg/srt/mod.py")
    assert rule == "not-scanned" and "shadowed by the package `pkg/srt/mod/`" in message
    assert (run.scanned, run.total) == (N_CLEAN + 1, N_CLEAN + 2)


def test_a_root_module_beside_the_root_package_is_reported(tmp_path):
    run = lint(make_tree(tmp_path, {"pkg.py": "import pkg.jit_kernel.hicache\n"}))
    assert_rest_checked(run)
    [(_, rule, message)] = run.at("pkg.py")
    assert rule == "not-scanned" and "shadowed by the package `pkg/`" in message


def test_a_200_level_directory_chain_is_walked_and_resolved(tmp_path):
    chain = "/".join(["d"] * 200)
    # 202 dots climb from pkg.srt.d...d (202 parts below pkg) back to `pkg`.
    run = lint(make_tree(tmp_path, {
        f"pkg/srt/{chain}/deep.py": "import os\nfrom " + "." * 202 + " import jit_kernel\n"}))
    assert_rest_checked(run)
    assert run.at(f"pkg/srt/{chain}/deep.py") == [
        (2, REMOVED, "`pkg.jit_kernel` was removed (import; `pkg.jit_kernel` no longer exists) and "
                     "`replacements` names no new place for it; add a line for it")]


def test_nesting_deeper_than_the_bound_is_reported(tmp_path):
    chain = "/".join(["d"] * 300)
    run = lint(make_tree(tmp_path, {f"pkg/srt/{chain}/deep.py": "import pkg.jit_kernel.hicache\n"}))
    assert_rest_checked(run)
    [(path, _, rule, message)] = [f for f in run.findings if f[0].startswith("pkg/srt/d/")]
    assert rule == "not-scanned" and "nested deeper than 256 directories" in message
    assert path == "pkg/srt/" + "/".join(["d"] * 256)  # pkg/srt/d is 2 below the root


def test_directories_without_init_are_scanned(tmp_path):
    run = lint(make_tree(tmp_path, {"pkg/srt/a/b/c/mod.py": "from pkg.jit_kernel import hicache\n"}))
    assert_rest_checked(run)
    assert [rule for _, rule, _ in run.at("pkg/srt/a/b/c/mod.py")] == [REMOVED]


def test_an_import_cycle_completes_and_chains_are_still_reported(tmp_path):
    run = lint(make_tree(tmp_path, {
        "pkg/kernels/ops/gemm/a.py": "from pkg.kernels.ops.gemm import b\n",
        "pkg/kernels/ops/gemm/b.py": "from pkg.kernels.ops.gemm import a\nimport pkg.srt.helper\n",
        "pkg/srt/helper.py": "import pkg.kernels.ops.gemm.a\n",
        "pkg/srt/cycle_one.py": "import pkg.srt.cycle_two\nimport pkg.jit_kernel.hicache\n",
        "pkg/srt/cycle_two.py": "import pkg.srt.cycle_one\n",
    }))
    assert_rest_checked(run)
    assert [(line, rule) for line, rule, _ in run.at("pkg/kernels/ops/gemm/b.py")] == [(2, "layer")]
    assert [(line, rule) for line, rule, _ in run.at("pkg/srt/cycle_one.py")] == [(2, REMOVED)]


# --------------------------------------------------------------------------- coverage honesty

def test_coverage_counts_every_file_and_every_path_not_scanned(tmp_path):
    root = make_tree(tmp_path, {"pkg/srt/mod/__init__.py": "", "pkg/srt/mod.py": ""})
    os.mkfifo(root / "pkg/srt/pipe.py")
    os.symlink(tmp_path, root / "pkg/srt/out")
    run = lint(root)
    not_scanned = [f for f in run.findings if f[2] == "not-scanned"]
    assert len(not_scanned) == 3
    assert run.total - run.scanned == len(not_scanned)
    assert run.scanned == N_CLEAN + 1


# --------------------------------------------------------------------------- --fix under faults

FIX_SOURCE = ("# padding\n" * 400) + "from pkg.jit_kernel.hicache import transfer\n"
FIXED_LINE = "from pkg.kernels.ops.kvcache.hicache import transfer\n"

needs_fix = pytest.mark.skipif(not (REPO / "contracts/fix").is_dir(), reason="contracts/fix/ not there yet")


def _limit_file_size(limit: int):
    def preexec() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


@needs_fix
def test_fix_that_cannot_write_the_whole_file_leaves_the_original_intact(tmp_path):
    # Disk full half way: the process may write at most a few bytes more than the original
    # holds, and the fixed file is 9 bytes longer.
    root = make_tree(tmp_path, {"pkg/srt/user.py": FIX_SOURCE})
    original = (root / "pkg/srt/user.py").read_bytes()
    run = lint(root, "--fix", preexec_fn=_limit_file_size(len(original) + 4))
    assert (root / "pkg/srt/user.py").read_bytes() == original
    assert run.code != 0 and "pkg/srt/user.py" in run.output and "left unchanged" in run.output
    assert not [p for p in (root / "pkg/srt").iterdir() if p.name.startswith(".")]  # no temp left


@needs_fix
def test_fix_of_a_read_only_file_leaves_it_intact_and_says_so(tmp_path):
    root = make_tree(tmp_path, {"pkg/srt/user.py": FIX_SOURCE})
    path = root / "pkg/srt/user.py"
    original = path.read_bytes()
    path.chmod(0o444)
    try:
        run = lint(root, "--fix", preexec_fn=permissions_apply(_unreadable_probe(tmp_path)))
    finally:
        path.chmod(0o644)
    assert path.read_bytes() == original
    assert run.code != 0 and "pkg/srt/user.py" in run.output and "left unchanged" in run.output


@needs_fix
def test_fix_in_a_read_only_directory_never_leaves_a_half_written_file(tmp_path):
    root = make_tree(tmp_path, {"pkg/srt/ro/user.py": FIX_SOURCE})
    path = root / "pkg/srt/ro/user.py"
    original = path.read_bytes()
    (root / "pkg/srt/ro").chmod(0o555)
    try:
        run = lint(root, "--fix", preexec_fn=permissions_apply(_unreadable_probe(tmp_path)))
    finally:
        (root / "pkg/srt/ro").chmod(0o755)
    after = path.read_bytes()
    if after == original:
        assert run.code != 0 and "pkg/srt/ro/user.py" in run.output
    else:  # written in place: then it must be the whole fixed file
        assert after.decode().endswith(FIXED_LINE) and after.count(b"\n") == original.count(b"\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def _unreadable_probe(tmp_path: Path) -> Path:
    probe = tmp_path / "probe.txt"
    probe.write_text("x")
    probe.chmod(0)
    return probe


# --------------------------------------------------------------------------- through lint-imports

def test_lint_imports_prints_paths_that_look_like_markup_as_they_are(tmp_path):
    # import-linter prints through rich: `[/b]` in a path would be a closing tag (an error).
    import shutil

    root = make_tree(tmp_path, {"pkg/srt/a[/b]c.py": "import pkg.jit_kernel.hicache\n"})
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports is not installed")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(root)]), COLUMNS="400")
    proc = subprocess.run([exe, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "pkg/srt/a[/b]c.py:1:1: removed-module" in proc.stdout
    assert "pkg/srt/witness.py:2:1: removed-module" in proc.stdout


# --------------------------------------------------------------------------- the guarantees doc

def test_every_test_the_guarantees_cite_exists():
    doc = (REPO / "docs/guarantees.md").read_text()
    cited = re.findall(r"(tests/contracts/test_\w+\.py)::(test_\w+)", doc)
    assert len(cited) > 20
    for path, name in cited:
        assert re.search(rf"^def {name}\(", (REPO / path).read_text(), re.M), f"{path}::{name}"
