"""`--fix` verifies every rewrite before it writes it: without `--verify-against` against the
checked tree itself, names included; with several `--verify-against`, each rewrite against the
tree that holds its top-level package (a target in another distribution, `-> joblib`)."""

from __future__ import annotations

import contextlib
import io

from contracts.cli import main
from tests.contracts.conftest import cwd, write_tree

EXTERNALS = ("[importlinter]\nroot_packages =\n    pkg\ncontract_types =\n"
             "    removed_modules: contracts.RemovedModulesContract\n\n"
             "[importlinter:contract:old]\nname = old\ntype = removed_modules\nremoved_modules =\n"
             "    pkg.externals\nreplacements =\n    pkg.externals.joblib -> joblib\n"
             "    pkg.externals.six -> six\n    pkg.externals.tools -> pkg.tools\n")
USER = ("from pkg.externals.joblib import Parallel\nfrom pkg.externals.joblib import Gone\n"
        "from pkg.externals.six import moves\nfrom pkg.externals.tools import helper\n")


def _fix(root, *args) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), cwd(root):
        code = main(["--fix", "--no-cache", *args])
    return code, out.getvalue()


def test_fix_without_verify_against_checks_the_names_in_the_checked_tree(tmp_path):
    config = ("[importlinter]\nroot_packages =\n    pkg\ncontract_types =\n"
              "    removed_modules: contracts.RemovedModulesContract\n\n"
              "[importlinter:contract:old]\nname = old\ntype = removed_modules\nremoved_modules =\n"
              "    pkg.old\nreplacements =\n    pkg.old.mod -> pkg.new.mod\n")
    user = ("from pkg.old.mod import Here\nfrom pkg.old.mod import Gone\nimport pkg.old.mod as m\n\n"
            "def use():\n    return m.Here\n")
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/new/__init__.py": "",
                                 "pkg/new/mod.py": "class Here:\n    pass\n", "pkg/user.py": user}, config=config)
    code, out = _fix(root)
    assert code == 1
    assert (root / "pkg" / "user.py").read_text() == user.replace(
        "from pkg.old.mod import Here", "from pkg.new.mod import Here").replace(
        "import pkg.old.mod as m", "import pkg.new.mod as m")
    assert "pkg/user.py:2:1: not auto-fixable: `pkg.old.mod`: not rewritten: `pkg.new.mod` in " in out
    assert "has no `Gone`" in out
    assert "Fixed 2 imports in 1 file; 1 finding not auto-fixable." in out


def test_a_module_alias_whose_name_the_checked_tree_lacks_is_not_rewritten(tmp_path):
    config = ("[importlinter]\nroot_packages =\n    pkg\ncontract_types =\n"
              "    removed_modules: contracts.RemovedModulesContract\n\n"
              "[importlinter:contract:old]\nname = old\ntype = removed_modules\nremoved_modules =\n"
              "    pkg.old\nreplacements =\n    pkg.old.mod -> pkg.new.mod\n")
    user = "import pkg.old.mod as m\n\n\ndef use():\n    return m.Gone\n"
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/new/__init__.py": "",
                                 "pkg/new/mod.py": "class Here:\n    pass\n", "pkg/user.py": user}, config=config)
    code, out = _fix(root)
    assert code == 1 and (root / "pkg" / "user.py").read_text() == user
    assert "has no `Gone`" in out


def _trees(tmp_path):
    root = write_tree(tmp_path / "p", {"pkg/__init__.py": "", "pkg/user.py": USER}, config=EXTERNALS)
    release = write_tree(tmp_path / "release", {"pkg/__init__.py": "", "pkg/tools.py": "def helper():\n    pass\n"},
                         config=None)
    joblib = write_tree(tmp_path / "joblib", {"joblib/__init__.py": "from joblib.parallel import Parallel\n",
                                              "joblib/parallel.py": "class Parallel:\n    pass\n"}, config=None)
    return root, release, joblib


def test_a_target_in_another_distribution_is_verified_against_the_tree_given_for_it(tmp_path):
    root, release, joblib = _trees(tmp_path)
    code, out = _fix(root, "--verify-against", str(release), "--verify-against", str(joblib))
    assert code == 1
    assert (root / "pkg" / "user.py").read_text() == (
        "from joblib import Parallel\nfrom pkg.externals.joblib import Gone\n"
        "from six import moves\nfrom pkg.tools import helper\n")
    assert f"`joblib` in {joblib} has no `Gone`" in out
    # six: no tree given holds it, so made and said unverified; joblib is verified, not listed.
    assert f"checked against {release}, {joblib} (those into `six`, a distribution none of" in out
    assert "`joblib`, " not in out.split("checked against", 1)[1]


def test_one_verify_against_keeps_calling_another_distribution_unverified(tmp_path):
    root, release, _ = _trees(tmp_path)
    code, out = _fix(root, "--verify-against", str(release))
    assert code == 0
    assert (root / "pkg" / "user.py").read_text() == (
        "from joblib import Parallel\nfrom joblib import Gone\nfrom six import moves\nfrom pkg.tools import helper\n")
    assert f"(those into `joblib`, `six`, another distribution than {release} holds, not verified)" in out


def test_a_tree_given_for_another_distribution_refuses_a_module_it_lacks(tmp_path):
    root, release, joblib = _trees(tmp_path)
    (root / "pkg" / "user.py").write_text("from pkg.externals.joblib.nowhere import x\n")
    (root / ".importlinter").write_text(EXTERNALS.replace("pkg.externals.joblib -> joblib",
                                                          "pkg.externals.joblib.nowhere -> joblib.nowhere"))
    code, out = _fix(root, "--verify-against", str(release), "--verify-against", str(joblib))
    assert code == 1 and (root / "pkg" / "user.py").read_text() == "from pkg.externals.joblib.nowhere import x\n"
    assert f"`joblib.nowhere` does not exist in {joblib}" in out
