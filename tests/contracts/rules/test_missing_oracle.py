"""`missing_imports` reads every file's statements off its text and parses with `ast` only the
statements the text pass suspects (`rules/_missing.py`). Its findings must be those of the same
analysis over every file parsed whole, every reference looked at: generated packages, each
module a mix of the import forms (lazy, guarded, type-only, relative, over several lines, after a
`;` or a backslash, in a docstring, string targets and dynamic imports), of present and missing
modules and names, padded so that the statements are read in windows."""

from __future__ import annotations

import dataclasses
import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from contracts.check import plan_for
from contracts.config import zero_config
from contracts.engine.model import build_model
from contracts.rules import _missing

_PIECES = [
    "import pkg.a\n",
    "import pkg.gone\n",
    "import pkg.a.deeper_gone as alias\n",
    "from pkg import a, gone_name\n",
    "from pkg.a import x, missing_x\n",
    "from pkg.a import (\n    x,\n    missing_y,  # why\n)\n",
    "from pkg.a import \\\n    missing_z\n",
    "from . import a\n",
    "from .gone_rel import y\n",
    "from ... import too_far\n",
    "x = 1; from pkg.gone_semi import a\n",
    "def f():\n    from pkg.gone_lazy import q\n    return q\n",
    "class K:\n    def m(self):\n        import pkg.gone_method\n",
    "try:\n    import pkg.gone_try\nexcept ImportError:\n    pass\n",
    "if TYPE_CHECKING:\n    from pkg.gone_tc import T\n",
    'TARGET = "pkg.gone_str:attr"\n',
    'OTHER = "pkg.a:missing_attr"\n',
    'importlib.import_module("pkg.gone_dyn")\n',
    'pytest.importorskip("pkg.gone_skip")\n',
    '"""\nfrom pkg.gone_doc import nope\n"""\n',
    "# from pkg.gone_comment import nope\n",
    "from pkg.sub import m, absent_sub_name\n",
    "from pkg.sub.m import helper, missing_helper\n",
    "def pad():\n    return 1\n",
    "if True: import pkg.gone_colon\n",
    "import os, pkg.gone_tail\n",
]
_PAD = "def filler_{i}():\n    return {i}  # so that files are large enough to be read in windows\n"


def _module(pieces: list[str], pad: int) -> str:
    filler = "".join(_PAD.format(i=i) for i in range(pad))
    return "import importlib\nimport pytest\nfrom typing import TYPE_CHECKING\n" + filler + "".join(pieces) + filler


def _write(root: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def _analysis(root: str, guarded: bool):
    config = zero_config(["pkg"], root)
    (spec,) = config.missing
    if guarded:
        spec = dataclasses.replace(spec, include_guarded=True)
    model = build_model(root, plan_for(config), jobs=1)
    analysis = _missing._Analysis(model, config, spec)
    return analysis, analysis.run()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6), min_size=1, max_size=3),
       st.sampled_from([0, 80]), st.booleans())
@example([["from pkg.a import x, missing_x\n", 'pytest.importorskip("pkg.gone_skip")\n']], 80, True)
def test_the_suspects_pass_finds_what_a_whole_file_pass_finds(tmp_path_factory, modules, pad, guarded):
    root = str(tmp_path_factory.mktemp("tree"))
    files = {"pkg/__init__.py": "", "pkg/a.py": "x = 1\n", "pkg/sub/__init__.py": "", "pkg/sub/m.py": "def helper():\n    pass\n"}
    for i, pieces in enumerate(modules):
        files[f"pkg/sub/user{i}.py"] = _module(pieces, pad)
    _write(root, files)
    analysis, found = _analysis(root, guarded)
    whole = []
    for f in analysis.model.discovery.files:
        with open(f.path, "rb") as handle:
            whole.extend(analysis._exact(f, handle.read(), None))
    assert sorted(set(found)) == sorted(set(whole))
