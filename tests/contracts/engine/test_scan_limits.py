"""The scan's smaller hardening items (issue 13, finding 5): dotted names, bounded reads, one
parse-error policy for every file size, inputs too deep or too large, linear config validation.
Each test fails on the tool before the hardening."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contracts import config as config_mod
from contracts.engine import reading as reading_mod
from contracts.engine import window
from tests.contracts.conftest import BASE_CONFIG, REPO, run_cli, run_json

CHAIN = "from pkg.kernels.ops.kvcache import hicache\n"  # in group gemm: a group-boundary finding


def _by_path(report: dict) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for f in report["findings"]:
        out.setdefault(f["path"], []).append((f["rule"], f["message"]))
    return out


@pytest.mark.parametrize("dotted", ["pkg/srt/v1.2/x.py", "pkg/srt/.agents/skills/scripts/x.py"])
def test_a_dotted_directory_is_read_as_importers_and_grimp_never_panics(tree, dotted):
    # 0.5.23 has `sglang/multimodal_gen/.agents/.../scripts/*.py`: grimp's scanner panicked on
    # such a name (20 KB of Rust backtrace) and the run fell back to `ast` for every file. No
    # import names such a file: it is a script, and its own imports are checked.
    root = tree({dotted: "from pkg.kernels.ops.kvcache import hicache\nimport pkg.jit_kernel.norm\n",
                 "pkg/kernels/ops/gemm/g.py": CHAIN})
    done = run_cli(["--no-cache", "--format", "json"], cwd=root)
    assert "panicked" not in done.stderr and done.stderr == "", done.stderr[:500]
    report = json.loads(done.stdout)
    found = _by_path(report)
    assert [r for r, _ in found[dotted]] == ["removed-module"]
    assert [r for r, _ in found["pkg/kernels/ops/gemm/g.py"]] == ["group-boundary"]
    assert report["files_scanned"] == report["files_total"] == len(list(root.rglob("*.py")))


def test_a_dotted_directory_without_python_files_is_not_reported(tree):
    root = tree({"pkg/srt/.claude/notes.md": "# notes\n"})
    (root / "pkg/srt/.claude/notes.md").write_text("# notes\n")
    code, report = run_json(root)
    assert code == 0 and report["findings"] == []


def test_a_dotted_file_name_is_scanned_without_grimp_panicking(tree):
    root = tree({"pkg/kernels/ops/gemm/g.v2.py": CHAIN, "pkg/kernels/ops/gemm/g.py": CHAIN})
    done = run_cli(["--no-cache", "--format", "json"], cwd=root)
    assert "panicked" not in done.stderr and done.stderr == "", done.stderr[:500]
    found = _by_path(json.loads(done.stdout))
    assert [r for r, _ in found["pkg/kernels/ops/gemm/g.v2.py"]] == ["group-boundary"]  # its edges from ast
    assert [r for r, _ in found["pkg/kernels/ops/gemm/g.py"]] == ["group-boundary"]


def test_a_file_over_the_read_limit_is_reported_before_it_is_read(tree, monkeypatch):
    root = tree({"pkg/srt/big.py": "x = 1\n" * 1000, "pkg/srt/m.py": "from pkg.jit_kernel import hicache\n"})
    monkeypatch.setattr(reading_mod, "MAX_READ_BYTES", 4000)
    reads = []
    real = os.read

    def spy(fd, n):
        data = real(fd, n)
        reads.append(len(data))
        return data

    monkeypatch.setattr(os, "read", spy)
    code, report = run_json(root)
    found = _by_path(report)
    [(rule, message)] = found["pkg/srt/big.py"]
    assert rule == "not-scanned" and "over the 0 MiB this tool reads" in message
    assert max(reads) < 6000  # the 6 kB file was never read
    assert [r for r, _ in found["pkg/srt/m.py"]] == ["removed-module"]


def test_an_8_gib_file_is_reported_not_read(tree):
    root = tree({"pkg/srt/m.py": "from pkg.jit_kernel import hicache\n"})
    with open(root / "pkg/srt/huge.py", "wb") as f:  # sparse: no disk used
        f.truncate(8 << 30)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
            "from contracts.cli import main; sys.exit(main(['--no-cache']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "pkg/srt/huge.py:1:1: not-scanned" in done.stdout and "8192.0 MiB, over the" in done.stdout
    assert "pkg/srt/m.py:1:1: removed-module" in done.stdout


_PAD = "".join(f"def f{i}(a, b):\n    return a + b\n\n\n" for i in range(200))  # ~8 kB of other code
_DEFECTS = {
    "tab-error": "def g():\n        x = 1\n\tif x:\n            pass\n",
    "nul-byte": "x = 1  # \0\n",
    "f-string-quotes-3.12": 'y = f"{ {"k": 1}["k"]}"\n',
    "type-alias-3.12": "type Alias = int\n",
    "generic-def-3.12": "def h[T](x: T) -> T:\n    return x\n",
    "f-string-second-field-3.12": 'y = f"{a:>{w}} {{ {b["k"]}"\n',  # past a whole field and a `{{`
    "f-string-comment-3.12": 'y = f"{{{a  # why\n}"\n',
    "t-string-3.14": "z = (t'{a}')\n",
    "t-string-upper-3.14": 'z = [T"{a}"]\n',
    "t-string-after-a-string-3.14": 's = """\n# """ ; z = t\'{a}\'\n',  # the `#` is in the string
}


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("defect", sorted(_DEFECTS))
def test_the_parse_error_policy_is_the_same_for_every_file_size(tree, defect, size):
    # A newer Python's syntax (`-3.12`, `-3.14`) is read whatever Python runs this (LibCST's
    # parser where `ast` rejects it), so the stale import is reported; what no Python reads
    # (a TabError, a NUL byte) is a parse error.
    since = defect.rpartition("-")[2]
    newer = since[0].isdigit()
    body = "from pkg.jit_kernel.hicache import a\n" + (_PAD if size == "large" else "") + _DEFECTS[defect]
    assert (len(body) >= window.MIN_BYTES) == (size == "large")
    root = tree({"pkg/srt/m.py": ""})
    (root / "pkg/srt/m.py").write_bytes(body.encode())
    if not newer or sys.version_info < tuple(map(int, since.split("."))):
        with pytest.raises((SyntaxError, ValueError)):
            compile(body.encode(), "m.py", "exec")  # this Python itself rejects the file
    code, report = run_json(root)
    assert [r for r, _ in _by_path(report)["pkg/srt/m.py"]] == (["removed-module"] if newer else ["parse-error"])


@pytest.mark.parametrize("tail", [
    "",
    'y = f"{{"\n',  # an escaped brace opens no field
    "y = f'--x \"{{\\\"v\\\": 1}}\"'\n",  # backslashes outside any field
    'y = f"{off:#x} {a!r:>{w}}"\n',  # a `#` in a format spec
    'z = "\\n\\t"\n',  # `t"` after a backslash is inside a string
    "# shape [B, T' * H', C]\n",  # prose in a comment
    "    # use def h[T](x) on 3.12\n",
])
def test_a_file_python_accepts_keeps_the_fast_window(tree, tail):
    body = ("from pkg.jit_kernel.hicache import a\n" + _PAD + tail).encode()
    compile(body, "m.py", "exec")  # valid on every Python this runs on
    assert not window.python_alone_rejects(body)
    assert window.keep_hot_statements(body, (b"jit_kernel",)) is not None


@pytest.mark.parametrize("depth", [100_000])
def test_a_deeply_nested_baseline_is_a_clear_error(tree, depth):
    root = tree({"pkg/srt/m.py": "import os\n"})
    (root / "baseline.json").write_text("[" * depth + "]" * depth)
    done = run_cli(["--no-cache", "--baseline", "baseline.json"], cwd=root)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "baseline.json: not a baseline file: nested too deeply" in done.stderr


def test_a_baseline_that_is_not_a_regular_file_is_not_read(tree):
    root = tree({"pkg/srt/m.py": "import os\n"})
    os.symlink("/dev/zero", root / "baseline.json")
    done = run_cli(["--no-cache", "--baseline", "baseline.json"], cwd=root)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "not a regular file" in done.stderr


def _config_with(n: int, tmp: Path) -> Path:
    lines = "".join(f"    pkg.jit_kernel.m{i} -> pkg.kernels.ops.gemm.m{i}\n" for i in range(n))
    path = tmp / f"c{n}.ini"
    path.write_text(BASE_CONFIG.replace("replacements =\n", "replacements =\n" + lines))
    return path


def test_config_validation_is_linear_in_the_replacement_lines(tmp_path, monkeypatch):
    # 20,000 lines took 54 s: each target was tested against every other line.
    calls = []
    real = config_mod.is_under
    monkeypatch.setattr(config_mod, "is_under", lambda a, b: calls.append(1) or real(a, b))
    counts = []
    for n in (1000, 4000):
        calls.clear()
        config_mod.load(str(_config_with(n, tmp_path)))
        counts.append(len(calls))
    assert counts[1] <= 4 * counts[0] + 100  # linear, not 16 times


def test_a_replacement_cycle_is_still_found(tmp_path):
    text = BASE_CONFIG.replace("replacements =\n", "replacements =\n"
                               "    pkg.jit_kernel.a -> pkg.jit_kernel.b\n    pkg.jit_kernel.b -> pkg.jit_kernel.a\n")
    path = tmp_path / "c.ini"
    path.write_text(text)
    with pytest.raises(config_mod.ConfigError):
        config_mod.load(str(path))
