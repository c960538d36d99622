"""Nothing in the checked tree runs, through any face (issue 35): the tree carries `pip/`,
`contracts/`, `grimp/`, `importlinter/` and `libcst/` packages and `sitecustomize.py` /
`usercustomize.py`, each writing a marker when imported, and every documented face and
subcommand is run with the tree as the working directory -- a check, `--fix`, `--diff`,
`--verify-against` with a directory, a wheel and `name==version` (the tree's `pip/` is the fake
pip it would run; the real download fails offline, which is fine: the point is the marker),
`derive-map` in each form, `rules`, `namespace-lint lint-imports`, and the pre-commit hook's
entry given a file named like an option. No marker may appear. The tripwires are shown to work
(a plain `python -m pip` in the tree does write the marker), so the test can fail.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from contracts.hook_args import split
from tests.contracts.conftest import BASE_CONFIG, CLEAN_TREE, REPO, write_tree

PLANTED = ("pip", "contracts", "grimp", "importlinter", "libcst")
STALE = {"pkg/srt/stale.py": "from pkg.jit_kernel.hicache import transfer\n"}
OPTION_NAMED = "--verify-against=x==1.py"  # a committed file whose name is an option
SHIM = {"pkg/jit_kernel/__init__.py": "", "pkg/jit_kernel/hicache.py": "from pkg.kernels.ops.kvcache.hicache import *\n"}

# `upgrade` in each form of SPEC (a directory, a wheel, name==version), reporting and fixing.
def _upgrade_faces(other: str, wheel: str) -> list[list[str]]:
    return [
        ["upgrade", "pkg", "--to", other], ["upgrade", "pkg", "--to", other, "--fix"],
        ["upgrade", "pkg", "--to", wheel, "--from", wheel, "--diff"],
        ["upgrade", "pkg", "--to", "pkg==1.0", "--from", "pkg==0.9"],
    ]


def _tripwire(marker: Path, name: str) -> str:
    return f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n"


@pytest.fixture
def planted(tmp_path):
    """(tree, marker, wheel): a checked tree with every planted package, and a wheel of it."""
    root, marker = tmp_path / "tree", tmp_path / "RAN"
    files = {**CLEAN_TREE, **STALE, **SHIM, OPTION_NAMED: "x = 1\n"}
    for name in PLANTED:
        files[f"{name}/__init__.py"] = _tripwire(marker, name)
        files[f"{name}/__main__.py"] = _tripwire(marker, name + ".__main__")
    files["sitecustomize.py"] = _tripwire(marker, "sitecustomize")
    files["usercustomize.py"] = _tripwire(marker, "usercustomize")
    write_tree(root, files, BASE_CONFIG)
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for rel, text in CLEAN_TREE.items():
            z.writestr(rel, text)
    return root, marker, wheel


def _env(tmp_path: Path) -> dict:
    # Offline and quick: pip finds no index; the working directory is the only way in.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
    empty = tmp_path / "no-index"
    empty.mkdir(exist_ok=True)
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(empty), PIP_DISABLE_PIP_VERSION_CHECK="1", COLUMNS="200")
    return env


def _exe(name: str) -> str:
    exe = shutil.which(name, path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip(f"{name} is not installed next to this interpreter")
    return exe


def _run(cmd: list[str], root: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=root, env=_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stdout + proc.stderr, (cmd, proc.stderr[-2000:])
    return proc


def _faces(root: Path, wheel: Path) -> list[list[str]]:
    other = str(root)
    derive = ["derive-map", "--removed", "pkg.jit_kernel"]
    return [
        [], ["check", "--no-cache"], ["--fix"], ["--diff"], ["--format", "sarif"],
        ["--verify-against", other], ["--verify-against", str(wheel)], ["--verify-against", "pkg==1.0"],
        ["--diff", "--verify-against", "pkg==1.0"],
        [*derive, "--src", "."], [*derive, "--before", other, "--after", other],
        [*derive, "--before", str(wheel), "--after", str(wheel)],
        [*derive, "--before", "pkg==0.9", "--after", "pkg==1.0"],
        ["rules"], ["rules", "removed-module"], ["lint-imports"], ["lint-imports", "--no-cache"],
        *_upgrade_faces(other, str(wheel)),
    ]


def test_the_tripwires_work(planted, tmp_path):
    root, marker, _ = planted
    subprocess.run([sys.executable, "-m", "pip", "--version"], cwd=root, env=_env(tmp_path),
                   capture_output=True, timeout=120)
    assert "pip.__main__" in marker.read_text()


def test_no_face_runs_anything_the_tree_holds(planted, tmp_path):
    root, marker, wheel = planted
    exe = _exe("namespace-lint")
    for args in _faces(root, wheel):
        _run([exe, *args], root, tmp_path)
        assert not marker.exists(), (args, marker.read_text())
    # The faces did their work (a run that stopped at once would prove nothing): --fix rewrote.
    assert "pkg.kernels.ops.kvcache.hicache" in (root / "pkg/srt/stale.py").read_text()
    if sys.version_info >= (3, 11):  # the documented module form: `python -P -m contracts`
        proc = _run([sys.executable, "-P", "-m", "contracts", "--no-cache", "--format", "json"], root, tmp_path)
        assert '"shim-present"' in proc.stdout, proc.stderr
        assert not marker.exists(), marker.read_text()


def test_a_failed_download_says_so_and_runs_no_pip_from_the_tree(planted, tmp_path):
    root, marker, _ = planted
    proc = _run([_exe("namespace-lint"), "--diff", "--verify-against", "pkg==1.0"], root, tmp_path)
    assert proc.returncode == 2 and "pip download" in proc.stderr, proc.stderr
    assert not marker.exists()


def _hook_entry(hook_id: str) -> list[str]:
    text = (REPO / ".pre-commit-hooks.yaml").read_text()
    block = next(b for b in re.split(r"^- id: ", text, flags=re.M) if b.startswith(hook_id + "\n"))
    return shlex.split(re.search(r"^\s*entry:\s*(.+)$", block, re.M).group(1))


@pytest.mark.parametrize("user_args", [[], ["--fix"], ["--config", ".importlinter"], ["--output-format", "json"]])
def test_a_file_named_like_an_option_is_a_path_through_the_hook(planted, tmp_path, user_args):
    """pre-commit runs `entry + args + file names`, no `--`: the name never becomes an option,
    whatever the user's `args:` are."""
    root, marker, _ = planted
    entry = _hook_entry("namespace-lint")
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*.py"))
    assert OPTION_NAMED in names
    proc = _run([_exe(entry[0]), *entry[1:], *user_args, *names], root, tmp_path)
    assert "pip download" not in proc.stderr and "verify" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    assert not marker.exists()
    if "--fix" in user_args:  # the user's own option still applies
        assert "pkg.kernels.ops.kvcache.hicache" in (root / "pkg/srt/stale.py").read_text()


@pytest.mark.parametrize("argv, expected", [
    (["a.py"], ["--", "a.py"]),
    (["--fix", "a.py", "--x=1.py"], ["--fix", "--", "a.py", "--x=1.py"]),
    (["--config", "cfg", "a.py"], ["--config", "cfg", "--", "a.py"]),
    (["--fix"], ["--fix"]),
    (["--", "a.py"], ["--", "a.py"]),
    (["-o", "new.json", "a.py"], ["-o", "new.json", "--", "a.py"]),
])
def test_hook_arguments_split_at_the_file_names(tmp_path, monkeypatch, argv, expected):
    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "--x=1.py", "cfg"):
        (tmp_path / name).write_text("")
    assert split(argv, {"--config", "-o"}) == expected
