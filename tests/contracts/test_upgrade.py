"""`namespace-lint upgrade PACKAGE --to SPEC --from SPEC`: a downstream project's references to a
dependency, checked against a new release of it, on generated before/after releases (tmp_path).

Each kind of change has its own reference in the project: a moved module, a name moved out of a
module that stays, a module made private (`foo` -> `_foo`) with edited bodies, a deleted module, a
deleted name, an ambiguous move, an extension module, a `"module:attr"` string target and a
`mock.patch` dotted target. Each goes through the report, `--diff`, `--fix` and a re-run; after
`--fix` an independent `ast` resolver (not the tool's verifier) checks every import resolves.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from contracts.cli import main
from tests.contracts.conftest import cwd, write_tree

ENGINE = '''\
class Engine:
    """The engine."""

    def __init__(self, size):
        self.size = size
        self.blocks = [0] * size

    def step(self):
        return sum(self.blocks) + self.size


def run(engine):
    for _ in range(3):
        engine.step()
    return engine.size
'''

MOVED_FN = '''\
def moved_fn(x, y):
    total = 0
    for i in range(x):
        total += i * y
    return total
'''

FOO_BEFORE = '''\
class Foo:
    def __init__(self, a):
        self.a = a

    def value(self):
        return self.a * 2


def make_foo(a):
    return Foo(a)
'''

FOO_AFTER = '''\
class Foo:
    def __init__(self, a, b=0, *, scale=1.0, name="foo"):
        self.a = a
        self.b = b
        self.scale = scale
        self.name = name

    def value(self):
        return (self.a + self.b) * 2 * self.scale

    def describe(self):
        return f"{self.name}: {self.value()}"


def make_foo(a, b=0, **kw):
    foo = Foo(a, b, **kw)
    foo.describe()
    return foo
'''

AMB = '''\
def f1(x):
    return [i * x for i in range(10)]


def f2(x):
    return {i: x for i in range(10)}
'''

BEFORE = {
    "lib/__init__.py": "",
    "lib/old_place.py": ENGINE,
    "lib/stays.py": "def helper():\n    return 1\n\n\n" + MOVED_FN + "\n\ndef deleted_fn():\n    return 2\n",
    "lib/foo.py": FOO_BEFORE,
    "lib/deleted.py": "def gone(a, b):\n    return a - b\n",
    "lib/amb.py": AMB,
    "lib/ext.cpython-311-x86_64-linux-gnu.so": "",
}

AFTER = {
    "lib/__init__.py": "",
    "lib/core/__init__.py": "",
    "lib/core/old_place.py": ENGINE,
    "lib/stays.py": "def helper():\n    return 1\n",
    "lib/util/__init__.py": "from lib.util.funcs import moved_fn\n\n__all__ = ['moved_fn']\n",
    "lib/util/funcs.py": MOVED_FN,
    "lib/_foo.py": FOO_AFTER,
    "lib/a1/__init__.py": "",
    "lib/a1/amb.py": AMB,
    "lib/a2/__init__.py": "",
    "lib/a2/amb.py": AMB,
    "lib/ext.cpython-311-x86_64-linux-gnu.so": "",
}

PROJECT = {
    "app/__init__.py": "",
    "app/main.py": '''\
from unittest import mock

from lib.old_place import Engine
from lib.stays import moved_fn
from lib.foo import Foo
from lib.deleted import gone
from lib.stays import deleted_fn
from lib.amb import f1
from lib.ext import anything
from lib.stays import helper

TARGET = "lib.old_place:Engine"


def patched():
    with mock.patch("lib.stays.moved_fn"):
        return Engine, moved_fn, Foo, gone, deleted_fn, f1, anything, helper
''',
}

# line of app/main.py -> (rule, fixable) of its finding
EXPECTED = {
    3: ("missing-module", True),    # moved module
    4: ("missing-name", True),      # moved name, out of a module that stays
    5: ("missing-module", True),    # folded name (`foo` -> `_foo`), bodies edited
    6: ("missing-module", False),   # deleted module
    7: ("missing-name", False),     # deleted name
    8: ("missing-module", False),   # ambiguous move
    12: ("missing-module", True),   # "module:attr" string target
    16: ("missing-name", True),     # mock.patch dotted target
}
LEFT = {6, 7, 8}


@pytest.fixture
def releases(tmp_path) -> tuple[Path, Path, Path]:
    before = write_tree(tmp_path / "before", BEFORE, config=None)
    after = write_tree(tmp_path / "after", AFTER, config=None)
    project = write_tree(tmp_path / "project", PROJECT, config=None)
    return before, after, project


def upgrade(project: Path, before: Path, after: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), cwd(project):
        code = main(["upgrade", "lib", "--from", str(before), "--to", str(after),
                     "--src", ".", "--root-package", "app", *args])
    return code, out.getvalue(), err.getvalue()


def findings_in(project: Path, before: Path, after: Path) -> list[dict]:
    code, out, _ = upgrade(project, before, after, "--output-format", "json")
    found = json.loads(out)["findings"]
    assert code == (1 if found else 0)
    return found


def findings(project: Path, before: Path, after: Path) -> dict[int, dict]:
    return {f["line"]: f for f in findings_in(project, before, after) if f["path"] == "app/main.py"}


def _module_file(release: Path, module: str) -> Path | None:
    """The file of `module` in `release` (an extension module: its directory entry), or None."""
    base = release.joinpath(*module.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    if base.is_dir() or base.parent.is_dir() and any(
            n.startswith(base.name + ".") and n.endswith((".so", ".pyd")) for n in os.listdir(base.parent)):
        return base  # a namespace package, or an extension module (its names are unknown, not missing)
    return None


def _binds(release: Path, module: str, name: str, seen: frozenset = frozenset()) -> bool:
    """Does `from module import name` find `name` in `release`? Read with `ast`: definitions,
    assignments and imports at module level (inside `if`/`try` too), star imports followed."""
    path = _module_file(release, module)
    if path is None or module in seen:
        return False
    if path.suffix != ".py" or _module_file(release, f"{module}.{name}") is not None:
        return True
    package = path.name == "__init__.py"
    stack = list(ast.parse(path.read_bytes()).body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.If, ast.Try)):
            stack += node.body + node.orelse + getattr(node, "finalbody", []) + [
                s for h in getattr(node, "handlers", []) for s in h.body]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return True
        elif isinstance(node, ast.Import):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom):
            if any((a.asname or a.name) == name for a in node.names):
                return True
            if any(a.name == "*" for a in node.names):
                base = module.split(".") if package else module.split(".")[:-1]
                source = node.module or ""
                if node.level:
                    source = ".".join(base[:len(base) - node.level + 1] + ([source] if source else []))
                if _binds(release, source, name, seen | {module}):
                    return True
    return False


def unresolved(project: Path, release: Path, package: str = "lib") -> list[tuple[str, int]]:
    """(file, line) of every reference of the project to `package` that does not resolve in
    `release` -- `from m import n`, `import m`, `import_module("m")`, "m:attr" and a dotted
    "m.attr" string -- by its own reading of the files (`ast`; not the tool's index)."""
    def dotted(text: str) -> bool:
        parts = text.split(".")
        for i in range(len(parts), 0, -1):
            head = ".".join(parts[:i])
            if _module_file(release, head) is not None:
                return i == len(parts) or _binds(release, head, parts[i])
        return False

    bad = []
    for path in sorted(project.rglob("*.py")):
        rel = path.relative_to(project).as_posix()
        for node in ast.walk(ast.parse(path.read_bytes())):
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package and not node.level:
                if any(not _binds(release, node.module, a.name) for a in node.names):
                    bad.append((rel, line))
            elif isinstance(node, ast.Import):
                if any(a.name.split(".")[0] == package and _module_file(release, a.name) is None for a in node.names):
                    bad.append((rel, line))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.startswith(package + ".") and " " not in node.value:
                module, _, attr = node.value.partition(":")
                ok = _binds(release, module, attr.split(".")[0]) if attr else dotted(module)
                if not ok:
                    bad.append((rel, line))
    return sorted(set(bad))


def test_reports_each_broken_reference_with_what_is_known(releases):
    before, after, project = releases
    found = findings(project, before, after)
    assert {line: (f["rule"], f["replacement"] is not None) for line, f in found.items()} == EXPECTED
    assert found[3]["replacement"] == "lib.core.old_place"
    assert found[4]["replacement"] == "lib.util.moved_fn"  # the public re-exporting package
    assert found[5]["replacement"] == "lib._foo"
    assert found[12]["replacement"] == "lib.core.old_place:Engine"
    assert found[16]["replacement"] == "lib.util.moved_fn"
    assert "is defined nowhere in" in found[7]["message"]
    assert "`lib.a1.amb`" in found[8]["message"] and "`lib.a2.amb`" in found[8]["message"]
    assert all(f["importer"] == "app.main" for f in found.values())
    # every reference that does not resolve (by an independent reading) is reported, and no other
    assert unresolved(project, after) == [("app/main.py", line) for line in sorted(EXPECTED)]


def test_an_extension_module_is_unknown_not_missing(releases):
    before, after, project = releases
    assert 9 not in findings(project, before, after)  # `from lib.ext import anything`


def test_diff_writes_nothing_and_fix_leaves_only_what_has_no_home(releases):
    before, after, project = releases
    main_py = project / "app" / "main.py"
    original = main_py.read_text()
    code, out, _ = upgrade(project, before, after, "--diff")
    assert code == 1 and main_py.read_text() == original
    assert "+from lib.core.old_place import Engine" in out and "+from lib._foo import Foo" in out

    code, _, _ = upgrade(project, before, after, "--fix")
    assert code == 1  # the deleted module, the deleted name and the ambiguous move are left
    left = findings(project, before, after)
    assert set(left) == LEFT
    assert unresolved(project, after) == [("app/main.py", line) for line in sorted(LEFT)]
    assert len(unresolved(project, before)) == 5  # the resolver can fail: the fixed lines are new in `after`


def test_a_name_used_through_a_module_alias_is_checked_like_a_from_import(releases):
    before, after, project = releases
    (project / "app" / "alias.py").write_text(
        "import lib.stays as st\nfrom lib import stays\n\n"
        "def use():\n    return st.helper(), st.moved_fn, stays.deleted_fn\n")
    found = [f for f in findings_in(project, before, after) if f["path"] == "app/alias.py"]
    assert [(f["line"], f["col"], f["rule"], f["imported"], f["replacement"]) for f in found] == [
        (5, 25, "missing-name", "lib.stays.moved_fn", None),
        (5, 38, "missing-name", "lib.stays.deleted_fn", None),
    ]
    assert "`lib.util` defines it" in found[0]["message"] and "rewrite `st.moved_fn` by hand" in found[0]["message"]


def test_fix_without_verify_against_never_writes_a_module_the_tree_lacks(tmp_path):
    config = ("[importlinter]\nroot_packages =\n    pkg\ncontract_types =\n"
              "    removed_modules: contracts.RemovedModulesContract\n\n"
              "[importlinter:contract:old]\nname = old\ntype = removed_modules\nremoved_modules =\n"
              "    pkg.old\nreplacements =\n    pkg.old.mod -> pkg.nowhere.mod\n    pkg.old.ok -> pkg.new.ok\n")
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/new/__init__.py": "", "pkg/new/ok.py": "",
                                 "pkg/user.py": "import pkg.old.mod as m\nimport pkg.old.ok as k\n"}, config=config)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), cwd(root):
        assert main(["--fix", "--no-cache"]) == 1
    assert (root / "pkg" / "user.py").read_text() == "import pkg.old.mod as m\nimport pkg.new.ok as k\n"
    assert "`pkg.nowhere.mod` does not exist" in out.getvalue()


def test_a_moved_submodule_imported_from_its_package_gets_the_new_package(releases):
    before, after, project = releases
    (project / "app" / "sub.py").write_text("from lib import old_place\n")
    found = [f for f in findings_in(project, before, after) if f["path"] == "app/sub.py"]
    assert [(f["rule"], f["imported"], f["replacement"]) for f in found] == [
        ("missing-name", "lib.old_place", "lib.core.old_place")]
    upgrade(project, before, after, "--fix")
    assert (project / "app" / "sub.py").read_text() == "from lib.core import old_place\n"


def test_clean_project_exits_zero(releases):
    before, after, project = releases
    (project / "app" / "main.py").write_text("from lib.core.old_place import Engine\nfrom lib.stays import helper\n")
    assert upgrade(project, before, after)[0] == 0


def test_without_from_reports_but_offers_no_fix(releases, monkeypatch):
    before, after, project = releases
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), cwd(project):
        code = main(["upgrade", "lib", "--to", str(after), "--src", ".", "--root-package", "app",
                     "--output-format", "json"])
    found = json.loads(out.getvalue())["findings"]
    assert code == 1 and {f["line"] for f in found} == set(EXPECTED) - {16}  # a dotted string needs --from
    assert all(f["replacement"] is None for f in found)


def test_baseline_hides_recorded_findings(releases, tmp_path):
    before, after, project = releases
    baseline = tmp_path / "baseline.json"
    assert upgrade(project, before, after, "--write-baseline", str(baseline))[0] == 0
    assert upgrade(project, before, after, "--baseline", str(baseline))[0] == 0


def test_bad_to_is_one_line_exit_2(releases, tmp_path):
    before, _after, project = releases
    code, _, err = upgrade(project, before, tmp_path / "nowhere")
    assert code == 2 and "--to" in err and "Traceback" not in err


# ---- the CI contract: `dependency_upgrade` in the project's config, both faces

CI_CONFIG = """\
[importlinter]
root_packages =
    app
contract_types =
    dependency_upgrade: contracts.DependencyUpgradeContract

[importlinter:contract:runs-on-lib-2]
name = We run on lib 2
type = dependency_upgrade
package = lib
target = vendor/after
source = vendor/before
"""


@pytest.fixture
def ci_project(tmp_path) -> Path:
    project = write_tree(tmp_path / "project", PROJECT, config=CI_CONFIG)
    write_tree(project / "vendor" / "before", BEFORE, config=None)
    write_tree(project / "vendor" / "after", AFTER, config=None)
    return project


def check(project: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), cwd(project):
        code = main(["--no-cache", *args])
    return code, out.getvalue()


def test_contract_is_broken_by_each_broken_reference(ci_project):
    code, out = check(ci_project, "--output-format", "json")
    found = {f["line"]: (f["rule"], f["replacement"] is not None) for f in json.loads(out)["findings"]}
    assert code == 1 and found == EXPECTED


def test_contract_is_kept_after_the_upgrade_fix_leaves_nothing(ci_project):
    main_py = ci_project / "app" / "main.py"
    with cwd(ci_project), contextlib.redirect_stdout(io.StringIO()):
        assert main(["upgrade", "lib", "--fix"]) == 1  # --to and --from: the contract's
        assert main(["upgrade", "other", "--fix"]) == 2  # no contract for `other`, no --to
    left = {f["line"] for f in json.loads(check(ci_project, "--output-format", "json")[1])["findings"]}
    assert left == LEFT
    kept = [line for i, line in enumerate(main_py.read_text().splitlines(), 1) if i not in LEFT]
    main_py.write_text("\n".join(kept) + "\n")
    assert check(ci_project)[0] == 0


def test_contract_is_invalid_without_a_target(ci_project):
    (ci_project / ".importlinter").write_text(CI_CONFIG.replace("target = vendor/after\n", ""))
    err = io.StringIO()
    with contextlib.redirect_stderr(err), cwd(ci_project):
        assert main(["--no-cache"]) == 2
    assert "'target'" in err.getvalue()


def test_lint_imports_runs_the_contract(ci_project):
    from tests.contracts.conftest import run_cli

    done = run_cli(["lint-imports", "--no-cache"], cwd=ci_project)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "We run on lib 2 BROKEN" in done.stdout
    assert "app/main.py:3:1: missing-module" in done.stdout


def test_a_release_that_cannot_be_fetched_says_wheels_only_and_what_to_pass(tmp_path):
    from tests.contracts.conftest import run_cli

    write_tree(tmp_path, PROJECT, config=None)
    done = run_cli(["upgrade", "tinypkg", "--to", "tinypkg==9.9", "--src", ".", "--root-package", "app"],
                   cwd=tmp_path, env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--only-binary :all:" in done.stderr and "nothing is built" in done.stderr
    assert "an sdist unpacked by hand" in done.stderr


def test_a_target_in_another_distribution_is_made_and_said_unverified(tmp_path):
    config = ("[importlinter]\nroot_packages =\n    pkg\ncontract_types =\n"
              "    removed_modules: contracts.RemovedModulesContract\n\n"
              "[importlinter:contract:old]\nname = old\ntype = removed_modules\nremoved_modules =\n"
              "    pkg.externals\nreplacements =\n    pkg.externals.joblib -> joblib\n"
              "    pkg.externals.gone -> pkg.nowhere\n")
    root = write_tree(tmp_path / "p", {"pkg/__init__.py": "", "pkg/user.py": (
        "from pkg.externals.joblib import Parallel\nfrom pkg.externals.gone import x\n")}, config=config)
    release = write_tree(tmp_path / "release", {"pkg/__init__.py": ""}, config=None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), cwd(root):
        assert main(["--fix", "--no-cache", "--verify-against", str(release)]) == 1
    assert (root / "pkg" / "user.py").read_text() == "from joblib import Parallel\nfrom pkg.externals.gone import x\n"
    assert "`pkg.nowhere` does not exist in" in out.getvalue()
    assert "(those into `joblib`, another distribution than" in out.getvalue()


def test_missing_imports_never_sends_a_dependency_s_name_to_the_project_or_the_importer_itself(tmp_path):
    # The combined-tree workaround: the project beside the dependency's new release, both roots.
    config = ("[importlinter]\nroot_packages =\n    app\n    lib\ncontract_types =\n"
              "    missing_imports: contracts.MissingImportsContract\n\n"
              "[importlinter:contract:missing]\nname = missing\ntype = missing_imports\n")
    root = write_tree(tmp_path, {
        "app/__init__.py": "", "app/data.py": "from lib import data as d\n",
        "app/scorer.py": "def check():\n    return 1\n", "app/use.py": "from lib.scorer import check\n",
        "lib/__init__.py": "", "lib/_scorer.py": "def check():\n    return 2\n"}, config=config)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), cwd(root):
        assert main(["--no-cache", "--output-format", "json"]) == 1
    found = {f["path"]: f for f in json.loads(out.getvalue())["findings"]}
    assert found["app/data.py"]["replacement"] is None  # not `from app import data`: itself
    assert found["app/use.py"]["replacement"] == "lib._scorer"  # not the project's `app.scorer`


def test_from_defaults_to_the_installed_distribution_read_as_files(releases, tmp_path, monkeypatch):
    import sys

    before, after, project = releases
    site = tmp_path / "site"
    write_tree(site, BEFORE, config=None)
    info = site / "lib-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lib\nVersion: 1.0\n")
    (info / "RECORD").write_text("".join(f"{rel},,\n" for rel in BEFORE) + "lib-1.0.dist-info/METADATA,,\n")
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), cwd(project):
        code = main(["upgrade", "lib", "--to", str(after), "--src", ".", "--root-package", "app",
                     "--output-format", "json"])
    found = {f["line"]: f for f in json.loads(out.getvalue())["findings"]}
    assert code == 1 and found[3]["replacement"] == "lib.core.old_place"
    assert "lib" not in sys.modules or not str(getattr(sys.modules["lib"], "__file__", "")).startswith(str(site))


def test_verify_against_checks_the_names_used_through_a_module_alias(tmp_path):
    config = ("[importlinter]\nroot_packages =\n    pkg\ncontract_types =\n"
              "    removed_modules: contracts.RemovedModulesContract\n\n"
              "[importlinter:contract:old]\nname = old\ntype = removed_modules\nremoved_modules =\n"
              "    pkg.old\nreplacements =\n    pkg.old.a -> pkg.new.a\n    pkg.old.b -> pkg.new.b\n")
    source = "import pkg.old.a as a\nimport pkg.old.b as b\n\n\ndef f():\n    return a.kept(), b.dropped()\n"
    root = write_tree(tmp_path / "p", {"pkg/__init__.py": "", "pkg/user.py": source}, config=config)
    release = write_tree(tmp_path / "release", {"pkg/__init__.py": "", "pkg/new/__init__.py": "",
                                                "pkg/new/a.py": "def kept():\n    pass\n",
                                                "pkg/new/b.py": "def other():\n    pass\n"}, config=None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), cwd(root):
        assert main(["--fix", "--no-cache", "--verify-against", str(release)]) == 1
    assert (root / "pkg" / "user.py").read_text() == source.replace("import pkg.old.a as a", "import pkg.new.a as a")
    assert "`pkg.new.b` in" in out.getvalue() and "has no `dropped`" in out.getvalue()


def test_the_project_includes_the_config_s_importer_paths(ci_project):
    config = ci_project / ".importlinter"
    config.write_text(CI_CONFIG.replace("root_packages =\n    app\n", "root_packages =\n    app\nimporter_paths =\n    scripts\n"))
    write_tree(ci_project, {"scripts/run.py": "def main():\n    from lib.old_place import run\n    return run\n"},
               config=None)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), cwd(ci_project):
        assert main(["upgrade", "lib", "--output-format", "json"]) == 1
    found = [f for f in json.loads(out.getvalue())["findings"] if f["path"] == "scripts/run.py"]
    assert [(f["line"], f["importer"], f["replacement"]) for f in found] == [(2, "scripts.run", "lib.core.old_place")]


def test_check_fix_rewrites_the_contract_s_findings_verified_against_its_target(ci_project, monkeypatch):
    from contracts.fix import verify

    checked = []
    names = verify.Verifier.names

    def spy(self, module, wanted):
        checked.append((self.spec, module))
        return names(self, module, wanted)

    monkeypatch.setattr(verify.Verifier, "names", spy)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()), cwd(ci_project):
        assert main(["--fix", "--no-cache"]) == 1
    assert "Fixed 5 imports in 1 file" in out.getvalue()
    assert ("vendor/after", "lib.core.old_place") in checked  # by the contract's target release
    assert {f["line"] for f in json.loads(check(ci_project, "--output-format", "json")[1])["findings"]} == LEFT
