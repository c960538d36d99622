"""A higher layer's file that keeps only its edges into the kernel package (`ScanPlan.narrow`) is
still scanned whole: a syntax error anywhere in it is reported, before or after its imports of
the package, as in every other file the tool reads. (An earlier "narrow cut" scanned such a
file only up to its last line naming the package, and missed an error after it.)"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.engine.discover import discover
from contracts.engine.graph import EdgeScanner
from contracts.prefixes import PrefixIndex
from tests.contracts.conftest import run_cli, run_json


def _narrow_tree(root, body: str, where: str = "pkg/srt/m.py"):
    files = {"pkg/__init__.py": "", "pkg/k/__init__.py": "", "pkg/k/ops/__init__.py": "", "pkg/k/ops/a.py": "",
             "pkg/other/__init__.py": "", "pkg/other/x.py": "", where: body}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode() if isinstance(text, str) else text)
    disc = discover(str(root), ("pkg",))
    return disc, next(f for f in disc.files if f.rel == where)


def _scan_into(root, disc, files):
    return EdgeScanner(disc.by_module, {"pkg": str(root / "pkg")}).scan_into(files, PrefixIndex(["pkg.k"]))


# Top-level pieces, each whole Python: imports of the package in every place the rules read them,
# and the shapes around them.
_PIECES = [
    "from pkg.k.ops import a\n", "import pkg.k.ops.a as z\n", "from pkg import k\n", "from .. import k\n",
    "from ..k.ops import a\n", "import os\n", "from pkg.other import x\n", "x = 1\n",
    "try:\n    from pkg.k.ops import a\nexcept ImportError:\n    a = None\nelse:\n    pass\nfinally:\n    pass\n",
    "if TYPE_CHECKING:\n    import pkg.k.ops\nelif X:\n    pass\n",
    "def f():\n    from pkg.k.ops.a import thing\n    return thing\n",
    "class C:\n    \"\"\"Docs: from pkg.k.ops import a\n\nimport pkg.k.ops\n\"\"\"\n    y = 2\n",
    "S = '''\nfrom pkg.k.ops import a\nz = 1\n'''\n",
    "from pkg.k.ops import (\n    a,\n)\n", "from pkg.k.ops import \\\n    a\n",
    "# from pkg.k.ops import a\n", "x = 'pkg.k.ops.a'\n",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8), broken_at=st.none() | st.integers(0, 8))
def test_a_narrowed_file_keeps_the_whole_files_edges_into_the_package_or_its_syntax_error(
        tmp_path_factory, pieces, broken_at):
    """The edges into the package are those of a full scan of the file; a syntax error anywhere
    in it (`broken_at`: before that piece) makes it a failure, whatever it imports."""
    body = list(pieces)
    if broken_at is not None:
        body.insert(min(broken_at, len(body)), "def broken(:\n    pass\n")
    root = tmp_path_factory.mktemp("narrow")
    disc, f = _narrow_tree(root, "".join(body))
    got, failed = _scan_into(root, disc, [f])
    if broken_at is not None:
        assert failed.keys() == {f.module} and "syntax error" in failed[f.module] and not got
        return
    whole, whole_failed = EdgeScanner(disc.by_module, {"pkg": str(root / "pkg")}).scan([f])
    assert not failed and not whole_failed
    assert got == {m: [e for e in found if e[0].startswith("pkg.k")] for m, found in whole.items()}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_syntax_error_anywhere_in_a_narrowed_file_is_reported(tree, jobs):
    root = tree({
        "pkg/srt/after.py": "from pkg.kernels.ops.kvcache.hicache import _private_helper\n\ndef f(:\n    pass\n",
        "pkg/srt/before.py": "def f(:\n    pass\nfrom pkg.kernels.ops.kvcache.hicache import _private_helper\n",
        "pkg/srt/inside.py": "def f():\n    from pkg.kernels.ops.kvcache.hicache import _private_helper\n    x = (\n",
        "pkg/srt/fine.py": "from pkg.kernels.ops.kvcache.hicache import _private_helper\n",
    })
    if jobs == 1:
        _, report = run_json(root, "--jobs", "1")
    else:  # (forked in a process of its own: this one may have run grimp's threads)
        proc = run_cli(["--config", str(root / ".importlinter"), "--no-cache", "--format", "json", "--jobs", "2"],
                       cwd=root)
        report = json.loads(proc.stdout)
    by_path = {}
    for finding in report["findings"]:
        by_path.setdefault(finding["path"], []).append(finding["rule"])
    assert by_path["pkg/srt/after.py"] == ["parse-error"]
    assert by_path["pkg/srt/before.py"] == ["parse-error"]
    assert by_path["pkg/srt/inside.py"] == ["parse-error"]
    assert by_path["pkg/srt/fine.py"] == ["private-import"]
