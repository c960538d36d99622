"""The fast paths on a real tree: the `ast` windows find what a whole-file parse finds, and the
files split over processes give what one process gives.

Slow (a large wheel): run with `-m slow`. The wheel comes from `$SGLANG_WHEELS` (a directory with
`sglang-<version>-*.whl`) or `pip download`; without either the test is skipped, saying why.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import zipfile

import pytest

from contracts.engine import window
from contracts.engine.reading import file_refs
from contracts.engine.scan import scan_source
from tests.contracts.conftest import REPO
from tests.contracts.test_downstream_example import _wheel

pytestmark = pytest.mark.slow

# Far more hot lines than any removal set makes: every import and every quoted dotted name.
_HOT = re.compile(rb"import|['\"][A-Za-z_]+\.[A-Za-z_.]+")


@pytest.fixture(scope="module")
def tree_0_5_23(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sglang-0.5.23")
    with zipfile.ZipFile(_wheel("0.5.23", tmp)) as wheel:
        wheel.extractall(tmp / "tree", [n for n in wheel.namelist() if n.startswith("sglang/")])
    return tmp / "tree"


def _large_files(root):
    """(path, data, module, is_package) of every file the windows take apart (4 kB or more)."""
    for top, _dirs, names in os.walk(root / "sglang"):
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = os.path.join(top, name)
            with open(path, "rb") as f:
                data = f.read()
            if len(data) < window.MIN_BYTES:
                continue
            module = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
            package = module.endswith(".__init__")
            yield path, data, module[: -len(".__init__")] if package else module, package


def _same_as_whole(data, module, package, hot, path) -> bool:
    whole = scan_source(data, module, package, (), hot)
    if whole.error is not None:
        return False
    fast = file_refs(data, module, package, (), hot, checked=True)
    assert (fast.error, fast.refs) == (None, whole.refs), (path, hot)
    return True


def test_windows_find_what_the_whole_file_parse_finds(tree_0_5_23):
    checked = 0
    for path, data, module, package in _large_files(tree_0_5_23):
        hot = [i + 1 for i, line in enumerate(data.split(b"\n")) if _HOT.search(line)]
        if hot and _same_as_whole(data, module, package, hot, path):
            checked += 1
    assert checked > 1000  # (0.5.23: 2,300 such files)


def test_windows_of_a_few_hot_lines_anywhere_find_what_the_whole_file_parse_finds(tree_0_5_23):
    # A real removal set makes one to a few lines hot, which cuts a file in far more shapes than
    # all its imports at once: random ones, among the import lines and among any lines at all
    # (a docstring, a decorator, an `else:`, a continuation line).
    rng = random.Random(23)
    checked = 0
    for path, data, module, package in _large_files(tree_0_5_23):
        rows = data.count(b"\n") + 1
        imports = [i + 1 for i, line in enumerate(data.split(b"\n")) if _HOT.search(line)]
        for pool in (imports, range(1, rows + 1)):
            if pool:
                hot = sorted(rng.sample(pool, min(len(pool), rng.choice((1, 2, 3, 5)))))
                checked += _same_as_whole(data, module, package, hot, path)
    assert checked > 2000


def test_processes_give_what_one_process_gives_on_a_real_tree(tree_0_5_23):
    config = REPO / "examples" / "upstream-sglang.importlinter"
    env = {k: v for k, v in os.environ.items() if k != "NAMESPACE_LINT_JOBS"}
    env["PYTHONPATH"] = str(REPO)
    out = {}
    for jobs in ("1", "2"):
        proc = subprocess.run([sys.executable, "-m", "contracts", "--config", str(config), "--src", str(tree_0_5_23),
                               "--no-cache", "--format", "json", "--jobs", jobs, "-v"],
                              cwd=tree_0_5_23, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 1, proc.stderr[-2000:]
        assert f"in {jobs} process" in proc.stderr
        out[jobs] = proc.stdout
    assert out["1"] == out["2"]
