"""No module of the working directory is ever imported in place of one the tool needs (issue 13,
finding 4): `lint-imports` puts the working directory first on `sys.path` before it imports
`contract_types`, and `python -m` does so before anything runs. Every standard-library module
(and the tool's own dependencies) gets a canary of its name in the working directory that writes
a marker when imported; each face then runs a full check, `--fix`, `--diff` and the cache, and no
marker may appear. The canaries are shown to work (importing one writes its marker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contracts.conftest import CLEAN_TREE, REPO, write_tree

# What a canary may not shadow without breaking the interpreter before any tool code runs (and
# what the interpreter has loaded by then anyway): shadowing them tests nothing.
_STARTUP = {"__future__", "__main__", "antigravity", "this", "site", "sitecustomize", "usercustomize",
            "encodings", "codecs", "io", "abc", "os", "stat", "posixpath", "ntpath", "genericpath",
            "_collections_abc", "_sitebuiltins", "runpy", "sys", "builtins"}
DEPENDENCIES = ("grimp", "libcst", "importlinter", "tomli", "rich", "typing_extensions", "yaml")


def _names() -> list[str]:
    std = {n for n in sys.stdlib_module_names if not n.startswith("_") or n in ("_strptime",)}
    return sorted((std - _STARTUP) | set(DEPENDENCIES))


def _plant(root: Path) -> Path:
    marker = root.parent / "SHADOWED"
    for name in _names():
        (root / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
    return marker


@pytest.fixture
def planted(tmp_path):
    root = write_tree(tmp_path / "tree", {**CLEAN_TREE, "pkg/srt/m.py": "from pkg.jit_kernel.hicache import a\n"})
    return root, _plant(root)


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    env["PYTHONPATH"] = str(REPO)  # the tool itself; the canaries are only in the working directory
    env.update(extra)
    return env


def _shadowed(marker: Path) -> list[str]:
    return sorted(set(marker.read_text().split())) if marker.exists() else []


def _preloaded_by_python_m(tmp_path: Path) -> set[str]:
    """What `python -m` has imported before any code of the module it runs: Python's own doing
    (runpy), which no tool can change (`python -P -m ...` avoids it)."""
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "probe_mod.py").write_text("import sys\nprint(' '.join(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-m", "probe_mod"], cwd=probe, env=_env(), capture_output=True,
                         text=True, timeout=60).stdout
    return {name.split(".")[0] for name in out.split()}


def _shadowed_at_startup(tmp_path: Path, env: dict) -> set[str]:
    """What the interpreter itself takes from the working directory before a script's first line
    under `env`: site's doing (an editable install's `.pth` finder imports `importlib.machinery`
    and `pathlib`, which tries `nt`), which no tool can change. Found with canaries of its own,
    removed until none fires."""
    probe = tmp_path / "startup-probe"
    probe.mkdir(exist_ok=True)
    marker = _plant(probe)
    found: set[str] = set()
    for _ in range(100):  # each round can uncover the next import of a cascade
        marker.unlink(missing_ok=True)
        subprocess.run([sys.executable, "-c", "pass"], cwd=probe, env=env, capture_output=True, timeout=60)
        new = set(_shadowed(marker)) - found
        if not new:
            break
        found |= new
        for name in new:
            (probe / f"{name}.py").unlink()
    marker.unlink(missing_ok=True)
    return found


def _script(tmp_path: Path, body: str) -> Path:
    """A runner outside the working directory: sys.path[0] is its own directory, as for a
    console script."""
    path = tmp_path / "bin" / "runner.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(body)
    return path


def test_the_canaries_work(planted, tmp_path):
    root, marker = planted
    runner = _script(tmp_path, "import sys; sys.path.insert(0, ''); import hmac\n")
    subprocess.run([sys.executable, str(runner)], cwd=root, env=_env(), timeout=60)
    assert _shadowed(marker) == ["hmac"]


@pytest.mark.parametrize("args", [[], ["--fix"], ["--diff"], ["--cache-dir", "../cache"]],
                         ids=["check", "fix", "diff", "cache"])
def test_python_m_contracts_imports_nothing_from_the_working_directory(planted, tmp_path, args):
    root, marker = planted
    for name in _preloaded_by_python_m(tmp_path):
        (root / f"{name}.py").unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "contracts", *args], cwd=root, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert _shadowed(marker) == [], done.stderr[-2000:]
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr[-2000:]


def test_lint_imports_imports_nothing_from_the_working_directory(planted, tmp_path):
    # import-linter itself puts the working directory first on sys.path before it imports
    # `contract_types` (stock import-linter loads nothing after that).
    root, marker = planted
    runner = _script(tmp_path, "import sys\nfrom importlinter.cli import lint_imports_command\n"
                               "sys.exit(lint_imports_command())\n")
    done = subprocess.run([sys.executable, str(runner), "--no-cache"], cwd=root, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert _shadowed(marker) == [], done.stdout[-2000:] + done.stderr[-2000:]
    assert "removed-module" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_namespace_lint_with_the_working_directory_on_sys_path_imports_nothing_from_it(planted, tmp_path):
    # The console script's directory is sys.path[0]; an empty PYTHONPATH entry (the common
    # `PYTHONPATH=$PYTHONPATH:...` slip) puts the working directory on it too.
    root, marker = planted
    runner = _script(tmp_path, "import sys\nfrom contracts.cli import main\nsys.exit(main())\n")
    env = _env(PYTHONPATH=os.pathsep.join(["", str(REPO)]))
    for name in _shadowed_at_startup(tmp_path, env):
        (root / f"{name}.py").unlink(missing_ok=True)
    done = subprocess.run([sys.executable, str(runner), "--fix"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)
    assert _shadowed(marker) == [], done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
