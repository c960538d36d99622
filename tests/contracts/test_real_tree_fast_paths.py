"""The fast paths on a real tree: the `ast` windows find what a whole-file parse finds, and the
files split over processes give what one process gives.

Slow (a large wheel): run with `-m slow`. The wheel comes from `$SGLANG_WHEELS` (a directory with
`sglang-<version>-*.whl`) or `pip download`; without either the test is skipped, saying why.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile

import pytest

from contracts.engine import window
from contracts.engine.model import file_refs
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


def test_windows_find_what_the_whole_file_parse_finds(tree_0_5_23):
    checked = 0
    for top, _dirs, names in os.walk(tree_0_5_23 / "sglang"):
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(top, name)
            with open(path, "rb") as f:
                data = f.read()
            hot = [i + 1 for i, line in enumerate(data.split(b"\n")) if _HOT.search(line)]
            if not hot or len(data) < window.MIN_BYTES:
                continue
            module = os.path.relpath(path, tree_0_5_23)[:-3].replace(os.sep, ".")
            package = module.endswith(".__init__")
            module = module[: -len(".__init__")] if package else module
            whole = scan_source(data, module, package, (), hot)
            if whole.error is not None:
                continue
            fast = file_refs(data, module, package, (), hot, checked=True)
            assert (fast.error, fast.refs) == (None, whole.refs), path
            checked += 1
    assert checked > 1000  # (0.5.23: 2,300 such files)


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
