"""Per-name `replacements` lines (`old.mod:name -> new.mod:name`) read by the rule and `--fix`,
statements split by names, renamed names, top-level targets (`import six`), `--verify-against`
(with and without `--fix`), a downstream repository whose removed prefix is a dependency's."""

from __future__ import annotations

import pytest

from contracts import config as config_mod
from contracts.cli import main
from contracts.errors import ConfigError
from tests.contracts.conftest import write_tree

CASE = "myapp/case.py"

CONFIG = """\
[importlinter]
root_packages =
    myapp
contract_types =
    removed_modules: contracts.RemovedModulesContract

[importlinter:contract:moved]
name = dep.old moved
type = removed_modules
removed_modules =
    dep.old
replacements =
    dep.old.hicache -> dep.ops.kvcache.hicache
    dep.old.six -> six
    dep.old.m3:gemma_rmsnorm -> dep.ops.layernorm.m3_rmsnorm:gemma_rmsnorm
    dep.old.m3:swiglu_split -> dep.ops.moe.m3_swiglu
    dep.old.m3:old_name -> dep.ops.moe.m3_swiglu:new_name
"""

# The dependency's new release: what --verify-against checks the rewrites against.
AFTER = {
    "dep/__init__.py": "",
    "dep/ops/__init__.py": "",
    "dep/ops/kvcache/__init__.py": "",
    "dep/ops/kvcache/hicache.py": "def transfer(): pass\n",
    "dep/ops/layernorm/__init__.py": "",
    "dep/ops/layernorm/m3_rmsnorm.py": "def gemma_rmsnorm(x): pass\n",
    "dep/ops/moe/__init__.py": "",
    "dep/ops/moe/m3_swiglu.py": "def swiglu_split(x): pass\ndef new_name(x): pass\n",
    "six.py": "",
}


def run(root, *args) -> tuple[int, str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--config", str(root / ".importlinter"), "--no-cache", *args])
    return code, out.getvalue()


@pytest.fixture
def app(tmp_path):
    def make(source: str, config: str = CONFIG):
        write_tree(tmp_path / "app", {"myapp/__init__.py": "", CASE: source}, config=config)
        return tmp_path / "app"

    return make


@pytest.fixture
def after(tmp_path):
    return write_tree(tmp_path / "after", AFTER, config=None)


def test_per_name_lines_are_read_and_old_lines_stay_valid(tmp_path):
    (tmp_path / ".importlinter").write_text(CONFIG)
    [spec] = config_mod.load(str(tmp_path / ".importlinter")).removed
    assert spec.name_replacement("dep.old.m3", "gemma_rmsnorm") == ("dep.ops.layernorm.m3_rmsnorm", "gemma_rmsnorm")
    assert spec.name_replacement("dep.old.m3", "swiglu_split") == ("dep.ops.moe.m3_swiglu", "swiglu_split")
    assert spec.name_replacement("dep.old.m3", "old_name") == ("dep.ops.moe.m3_swiglu", "new_name")
    assert spec.name_replacement("dep.old.hicache", "transfer") == ("dep.ops.kvcache.hicache", "transfer")
    assert spec.name_replacement("dep.old.m3", "other") is None
    assert spec.replacement_for("dep.old.hicache.sub") == "dep.ops.kvcache.hicache.sub"


@pytest.mark.parametrize("line, message", [
    ("dep.old.m3:a -> dep.x:b:c", "'b:c' is not a name"),
    ("dep.old.m3:1a -> dep.x", "'1a' is not a name"),
    ("dep.old.m3 -> dep.x:a", "a module maps to a module"),
    ("other.m3:a -> dep.x", "'other.m3:a' is not under a removed prefix"),
    ("dep.old.m3:a -> dep.old.x", "is itself under the removed prefix 'dep.old'"),
])
def test_is_invalid_when_a_per_name_line_is_wrong(tmp_path, line, message):
    (tmp_path / ".importlinter").write_text(CONFIG + f"    {line}\n")
    with pytest.raises(ConfigError) as e:
        config_mod.load(str(tmp_path / ".importlinter"))
    assert message in str(e.value) and "option 'replacements'" in str(e.value)


def test_is_invalid_when_one_name_has_two_lines(tmp_path):
    (tmp_path / ".importlinter").write_text(CONFIG + "    dep.old.m3:gemma_rmsnorm -> dep.x\n")
    with pytest.raises(ConfigError, match="'dep.old.m3:gemma_rmsnorm' has two replacements"):
        config_mod.load(str(tmp_path / ".importlinter"))


def test_a_statement_whose_names_land_in_different_modules_is_split(app, after):
    root = app("def f():\n    from dep.old.m3 import gemma_rmsnorm, swiglu_split as s, old_name  # lazy\n"
               "    return gemma_rmsnorm, s, old_name\n")
    code, out = run(root, "--fix", "--verify-against", str(after))
    assert (root / CASE).read_text() == (
        "def f():\n    from dep.ops.layernorm.m3_rmsnorm import gemma_rmsnorm  # lazy\n"
        "    from dep.ops.moe.m3_swiglu import swiglu_split as s, new_name as old_name  # lazy\n"
        "    return gemma_rmsnorm, s, old_name\n")
    assert code == 0, out


def test_the_finding_says_where_each_name_went(app):
    root = app("from dep.old.m3 import gemma_rmsnorm, swiglu_split\n")
    code, out = run(root, "--format", "json")
    import json

    [finding] = json.loads(out)["findings"]
    assert finding["replacement"] == ("dep.ops.layernorm.m3_rmsnorm:gemma_rmsnorm, "
                                      "dep.ops.moe.m3_swiglu:swiglu_split")


def test_a_name_without_a_line_leaves_its_statement_alone_and_says_which(app):
    source = "from dep.old.m3 import gemma_rmsnorm, unknown\n"
    root = app(source)
    code, out = run(root)
    assert "`replacements` names no new place for `unknown`" in out
    code, out = run(root, "--fix")
    assert (root / CASE).read_text() == source
    assert code == 1


def test_string_targets_go_through_per_name_lines(app, after):
    root = app("import sys\nfrom unittest import mock\nT = 'dep.old.m3:gemma_rmsnorm'\n"
               "P = mock.patch('dep.old.m3.swiglu_split')\nLOADED = 'dep.old.hicache' in sys.modules\n")
    code, out = run(root, "--fix", "--verify-against", str(after))
    assert (root / CASE).read_text() == (
        "import sys\nfrom unittest import mock\nT = 'dep.ops.layernorm.m3_rmsnorm:gemma_rmsnorm'\n"
        "P = mock.patch('dep.ops.moe.m3_swiglu.swiglu_split')\nLOADED = 'dep.ops.kvcache.hicache' in sys.modules\n")
    assert code == 0, out


@pytest.mark.parametrize("before, after_text", [
    ("from dep.old import six\n", "import six\n"),
    ("from dep.old import six as s  # keep\n", "import six as s  # keep\n"),
    ("from dep.old import six, hicache\n", "import six\nfrom dep.ops.kvcache import hicache\n"),
    ("def f():\n    from dep.old import hicache, six\n    return six\n",
     "def f():\n    from dep.ops.kvcache import hicache\n    import six\n    return six\n"),
])
def test_a_top_level_target_becomes_a_plain_import(app, after, before, after_text):
    root = app(before)
    code, out = run(root, "--fix", "--verify-against", str(after))
    assert (root / CASE).read_text() == after_text
    assert code == 0, out


def test_verify_against_refuses_a_rewrite_whose_name_does_not_exist(app, after):
    (after / "dep/ops/kvcache/hicache.py").write_text("def other(): pass\n")
    source = "from dep.old.hicache import transfer\nfrom dep.old.m3 import gemma_rmsnorm\n"
    root = app(source)
    code, out = run(root, "--fix", "--verify-against", str(after))
    assert (root / CASE).read_text() == ("from dep.old.hicache import transfer\n"
                                         "from dep.ops.layernorm.m3_rmsnorm import gemma_rmsnorm\n")
    assert (f"{CASE}:1:1: not auto-fixable: `dep.old.hicache`: not rewritten: "
            f"`dep.ops.kvcache.hicache` in {after} has no `transfer`\n") in out
    assert code == 1


def test_verify_against_refuses_a_module_that_does_not_exist_and_bare_import_chains(app, after):
    (after / "dep/ops/kvcache/hicache.py").unlink()
    source = ("import dep.old.hicache\nimport dep.old.hicache as h\n\n"
              "def f():\n    return dep.old.hicache.transfer(), h, 'dep.old.hicache:transfer'\n")
    root = app(source)
    code, out = run(root, "--fix", "--verify-against", str(after))
    assert (root / CASE).read_text() == source
    assert out.count("`dep.ops.kvcache.hicache` does not exist in") == 3
    assert code == 1


def test_verify_against_without_fix_reports_and_writes_nothing(app, after):
    (after / "dep/ops/moe/m3_swiglu.py").write_text("def swiglu_split(x): pass\n")
    source = "from dep.old.m3 import old_name\nfrom dep.old.hicache import transfer\n"
    root = app(source)
    code, out = run(root, "--verify-against", str(after))
    assert (root / CASE).read_text() == source
    assert "would fix 1 import" in out
    assert "`dep.ops.moe.m3_swiglu` in" in out and "has no `new_name`" in out
    assert out.strip().endswith("Would fix 1 import in 1 file, every rewritten import checked against "
                                f"{after}; 1 finding not auto-fixable.")
    assert code == 1


def test_verify_against_a_tree_that_cannot_be_had_is_a_usage_error(app, capsys, tmp_path):
    root = app("from dep.old.hicache import transfer\n")
    code = main(["--config", str(root / ".importlinter"), "--no-cache", "--fix", "--verify-against",
                 str(tmp_path / "missing")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--verify-against" in err and "no such directory or file" in err
    assert (root / CASE).read_text() == "from dep.old.hicache import transfer\n"


def test_verify_against_an_empty_directory_is_a_usage_error(app, capsys, tmp_path):
    root = app("from dep.old.hicache import transfer\n")
    (tmp_path / "empty").mkdir()
    code = main(["--config", str(root / ".importlinter"), "--no-cache", "--fix", "--verify-against",
                 str(tmp_path / "empty")])
    assert code == 2 and "holds no Python package or module" in capsys.readouterr().err


def _wheel_of(tree, path):
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        for rel, text in AFTER.items():
            z.writestr(rel, text)
        z.writestr("dep-2.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: dep\nVersion: 2.0\n")
        z.writestr("dep-2.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("dep-2.0.dist-info/RECORD", "")
    return path


def test_verify_against_takes_a_wheel(app, tmp_path):
    wheel = _wheel_of(AFTER, tmp_path / "dep-2.0-py3-none-any.whl")
    root = app("from dep.old.m3 import gemma_rmsnorm, missing_one\nfrom dep.old.hicache import transfer\n",
               config=CONFIG + "    dep.old.m3:missing_one -> dep.ops.moe.m3_swiglu\n")
    code, out = run(root, "--fix", "--verify-against", str(wheel))
    assert (root / CASE).read_text() == ("from dep.old.m3 import gemma_rmsnorm, missing_one\n"
                                         "from dep.ops.kvcache.hicache import transfer\n")
    assert "`dep.ops.moe.m3_swiglu` in" in out and "has no `missing_one`" in out
    assert code == 1


def test_verify_against_a_wheel_knows_its_extension_modules(app, tmp_path):
    import zipfile

    wheel = tmp_path / "dep-2.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for rel, text in AFTER.items():
            z.writestr(rel, text)
        z.writestr("dep/ops/fast.cpython-311-x86_64-linux-gnu.so", b"\x7fELF" + b"\0" * 64)
    root = app("from dep.old.fast import kernel\n", config=CONFIG + "    dep.old.fast -> dep.ops.fast\n")
    code, out = run(root, "--fix", "--verify-against", str(wheel))
    # A compiled module exists; what it binds cannot be read, so nothing says `kernel` is missing.
    assert (root / CASE).read_text() == "from dep.ops.fast import kernel\n"
    assert code == 0, out


def test_verify_against_takes_name_version_from_a_local_index(app, tmp_path):
    import os
    import subprocess
    import sys

    from tests.contracts.conftest import REPO

    links = tmp_path / "links"
    links.mkdir()
    _wheel_of(AFTER, links / "dep-2.0-py3-none-any.whl")
    root = app("from dep.old.hicache import transfer\n")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links),
               PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "contracts", "--no-cache", "--fix", "--verify-against", "dep==2.0"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert "every rewritten import checked against dep==2.0; 0 findings not auto-fixable" in proc.stdout, \
        proc.stdout + proc.stderr
    assert (root / CASE).read_text() == "from dep.ops.kvcache.hicache import transfer\n"


def test_a_module_derive_map_could_not_place_is_not_rewritten_through_its_package(tmp_path, capsys):
    # `dep.old.pkg.sub` moved to two places (ambiguous): the package's line must not send
    # `from dep.old.pkg import sub` to `dep.ops.pkg.sub`, which does not exist.
    body = "def s(a):\n    x = a + 1\n    return x * 2\n"
    write_tree(tmp_path / "before", {"dep/__init__.py": "", "dep/old/__init__.py": "",
                                     "dep/old/pkg/__init__.py": "", "dep/old/pkg/sub.py": body,
                                     "dep/old/pkg/kept.py": "def k(a):\n    return a\n"}, config=None)
    write_tree(tmp_path / "after", {"dep/__init__.py": "", "dep/ops/__init__.py": "", "dep/ops/pkg/__init__.py": "",
                                    "dep/ops/pkg/kept.py": "def k(a):\n    return a\n",
                                    "dep/x/sub_a.py": body, "dep/y/sub_b.py": body}, config=None)
    assert main(["derive-map", "--before", str(tmp_path / "before"), "--after", str(tmp_path / "after"),
                 "--removed", "dep.old"]) == 1
    block = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("# derive-map")]
    assert "    dep.old.pkg -> dep.ops.pkg" not in block
    config = CONFIG.split("replacements =")[0] + "\n".join(block) + "\n"
    source = "from dep.old.pkg import sub, kept\n"
    write_tree(tmp_path / "app", {"myapp/__init__.py": "", CASE: source}, config=config)
    code, out = run(tmp_path / "app", "--fix")
    # `kept` has a line of its own and moves; `sub` stays, reported, never sent nowhere.
    assert (tmp_path / "app" / CASE).read_text() == "from dep.old.pkg import sub\nfrom dep.ops.pkg import kept\n"
    assert "`replacements` names no new place for `dep.old.pkg`" in out and code == 1
