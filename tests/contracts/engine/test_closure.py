"""The import closure: predicted from import lines and scanned at once, then walked exactly. The
prediction decides only when a module is scanned: the findings and the graph are those of the
round-by-round walk, whatever it predicts (too much, too little, a file that does not parse)."""

from __future__ import annotations

import pytest

from contracts import config as config_mod
from contracts.check import run
from contracts.engine import closure, workers
from contracts.engine import model as model_mod
from contracts.engine.model import build_model
from tests.contracts.engine.test_parallel import _generated, _summary

# Chains the closure must follow from the kernels, written every way the prediction reads (or
# misreads) them, and modules it may predict that nothing reaches.
_CHAIN = {
    "pkg/kernels/ops/gemm/walk.py": (
        "from pkg.bridge import (  # noqa: F401 -- a comment in the brackets\n"
        "    a,\n"
        "    b as bee,\n"
        ")\n"
        "import pkg.deep.one as one, pkg.deep.two\n"
        "from . import sibling\n"
        "from pkg.cont \\\n"
        "    import far\n"
        "def lazy():\n"
        "    from ...bridge2 import c\n"
    ),
    "pkg/kernels/ops/gemm/sibling.py": "from pkg.kernels.ops.gemm import walk\n",
    "pkg/bridge/__init__.py": "from pkg.bridge.a import x\n",
    "pkg/bridge/a.py": "from pkg.srt.runtime import R\nx = 1\n",
    "pkg/bridge/b.py": "from pkg.hop.h1 import y\n",
    "pkg/hop/__init__.py": "",
    "pkg/hop/h1.py": '"""Docs:\nimport pkg.unreached.broken\n"""\nfrom pkg.hop.h2 import z\ny = 1\n',  # not an import
    "pkg/hop/h2.py": "import pkg.srt.engine\nz = 1\n",
    "pkg/deep/__init__.py": "",
    "pkg/deep/one.py": "x = 1\n",
    "pkg/deep/two.py": "from pkg.srt import runtime\n",
    "pkg/cont/__init__.py": "",
    "pkg/cont/far.py": "import pkg.srt.utils\n",
    "pkg/kernels/bridge2.py": "c = 1\n",
    "pkg/srt/runtime.py": "R = 1\n",
    "pkg/srt/engine.py": "E = 1\n",
    "pkg/unreached/__init__.py": "",
    "pkg/unreached/broken.py": "def f(:\n",  # predicted from the docstring, reached by nothing
}


@pytest.fixture
def chain_tree(tree):
    files = dict(_generated(tree))
    files.update(_CHAIN)
    return tree(files)


def _without_prediction(monkeypatch):
    monkeypatch.setattr(closure, "predicted", lambda *a, **k: [])


@pytest.mark.parametrize("max_bytes", [closure.MAX_PREDICTED_BYTES, 10])  # 10: no file is read for it
def test_the_predicted_closure_gives_the_round_by_round_findings(chain_tree, monkeypatch, max_bytes):
    monkeypatch.setattr(closure, "MAX_PREDICTED_BYTES", max_bytes)
    cfg = config_mod.load(str(chain_tree / ".importlinter"))
    predicted = _summary(run(cfg, str(chain_tree)))
    _without_prediction(monkeypatch)
    walked = _summary(run(cfg, str(chain_tree)))
    assert predicted == walked
    layer = {f[0] for f in predicted if f[3] == "layer"}
    assert "pkg/kernels/ops/gemm/walk.py" in layer  # the chains through bridge, hop, deep, cont
    assert not any(f[0] == "pkg/unreached/broken.py" for f in predicted)  # scanned in vain: no trace


def test_the_predicted_closure_gives_the_round_by_round_graph(chain_tree, monkeypatch):
    cfg = config_mod.load(str(chain_tree / ".importlinter"))
    from contracts.check import plan_for

    plan = plan_for(cfg)
    scanned = []
    real = closure.predicted

    def spy(*a, **k):
        out = real(*a, **k)
        scanned.extend(out)
        return out

    monkeypatch.setattr(closure, "predicted", spy)
    fast = build_model(str(chain_tree), plan, jobs=1)
    assert "pkg.unreached.broken" in scanned and "pkg.hop.h2" in scanned  # what it is for
    _without_prediction(monkeypatch)
    slow = build_model(str(chain_tree), plan, jobs=1)
    assert fast.graph_modules == slow.graph_modules and sorted(map(repr, fast.edges)) == sorted(map(repr, slow.edges))
    assert fast.errors == slow.errors and "pkg/unreached/broken.py" not in fast.errors
    assert {"pkg.hop.h2", "pkg.cont.far", "pkg.deep.two", "pkg.kernels.bridge2"} <= fast.graph_modules


def _close_spy(monkeypatch):
    """What the build's closure got from the parts (`early`) and the scans it made itself."""
    seen = {"early": [], "scans": []}
    real = model_mod.close

    def spy(graph_index, stop, known, records, rel_of, needs_edges, scan, store, early=None):
        seen["early"].append(early)

        def counted(files):
            seen["scans"].append(sorted(f.module for f in files))
            return scan(files)

        return real(graph_index, stop, known, records, rel_of, needs_edges, counted, store, early)

    monkeypatch.setattr(model_mod, "close", spy)
    return seen


def test_the_closure_predicted_while_the_files_are_read_gives_the_graph_of_the_late_one(chain_tree, monkeypatch):
    from contracts.check import plan_for

    plan = plan_for(config_mod.load(str(chain_tree / ".importlinter")))
    seen = _close_spy(monkeypatch)
    early = build_model(str(chain_tree), plan, jobs=1)
    (given,) = seen["early"]
    assert given is not None and {"pkg.hop.h2", "pkg.cont.far", "pkg.deep.two"} <= given[2]
    assert "pkg.unreached.broken" in given[2] and "pkg.unreached.broken" in given[1]  # scanned, failed
    assert seen["scans"] == []  # it predicted every module the walk reached: nothing left to scan
    real_map = workers.map_parts
    monkeypatch.setattr(workers, "map_parts", lambda *a, own=None, **k: real_map(*a, **k))  # no lead part
    late = build_model(str(chain_tree), plan, jobs=1)
    assert seen["early"][1] is None and seen["scans"]  # the build predicted and scanned it itself
    assert early.graph_modules == late.graph_modules
    assert sorted(map(repr, early.edges)) == sorted(map(repr, late.edges))
    assert early.errors == late.errors and "pkg/unreached/broken.py" not in early.errors  # no trace


def test_a_closure_the_parts_predicted_in_part_is_finished_after_the_merge(chain_tree, monkeypatch):
    from contracts.check import plan_for

    plan = plan_for(config_mod.load(str(chain_tree / ".importlinter")))
    real = closure.early_closure
    monkeypatch.setattr(closure, "early_closure",
                        lambda *a: [f for f in real(*a) if f.module not in ("pkg.hop.h2", "pkg.deep.two")])
    seen = _close_spy(monkeypatch)
    fast = build_model(str(chain_tree), plan, jobs=1)
    assert sorted(m for scan in seen["scans"] for m in scan) == ["pkg.deep.two", "pkg.hop.h2"]  # the rest early
    _without_prediction(monkeypatch)
    slow = build_model(str(chain_tree), plan, jobs=1)
    assert fast.graph_modules == slow.graph_modules
    assert sorted(map(repr, fast.edges)) == sorted(map(repr, slow.edges))


def test_a_forked_build_predicts_the_closure_as_one_process_does(chain_tree):
    from tests.contracts.engine.test_parallel import _cli

    one = _cli(chain_tree, "--jobs", "1", "--format", "json")
    two = _cli(chain_tree, "--jobs", "2", "--format", "json", "-v")
    assert " processes " in two.stderr, two.stderr
    assert two.stdout == one.stdout and '"layer"' in one.stdout


@pytest.mark.parametrize("text, module, is_package, expected", [
    (b"from pkg.bridge import (  # c\n    a,\n    b as bee,\n)\n", "pkg.x", False, {"pkg.bridge.a", "pkg.bridge.b"}),
    (b"import pkg.deep.one as one, pkg.deep.two\n", "pkg.x", False, {"pkg.deep.one", "pkg.deep.two"}),
    (b"from . import sibling\n", "pkg.kernels.ops.gemm.walk", False, {"pkg.kernels.ops.gemm.sibling"}),
    (b"from .. import gemm\n", "pkg.kernels.ops.gemm", True, {"pkg.kernels.ops.gemm"}),
    (b"from pkg.bridge import nothing_here\n", "pkg.x", False, {"pkg.bridge"}),
    (b"from pkg.bridge import *\n", "pkg.x", False, {"pkg.bridge"}),
    (b"x = 'no import here'\nimportant = 1\n", "pkg.x", False, set()),
    (b"from ....... import far\n", "pkg.x", False, set()),
    (b"from pkg.bridge import (a,\n" * 3, "pkg.x", False, {"pkg.bridge.a"}),  # never closed
    (b"from pkg.bridge import (a)\nfrom pkg.deep import (one,\n  two)  # both\n", "pkg.x", False,
     {"pkg.bridge.a", "pkg.deep.one", "pkg.deep.two"}),
    (b"x = 1  # import pkg.deep.one\n", "pkg.x", False, set()),
])
def test_import_lines_resolve_as_grimp_does(text, module, is_package, expected):
    known = {m: None for m in ("pkg", "pkg.bridge", "pkg.bridge.a", "pkg.bridge.b", "pkg.deep", "pkg.deep.one",
                               "pkg.deep.two", "pkg.kernels.ops.gemm", "pkg.kernels.ops.gemm.sibling")}
    assert closure.import_lines(text, module, is_package, known) == expected
