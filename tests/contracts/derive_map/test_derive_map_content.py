"""`derive-map --before --after` by content: folded package paths, renames found by their
definitions, names re-exported by a package, ties and low scores listed (never guessed), one
shared common name carrying nothing, `--format json`, wheel and `name==version` inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile

import pytest

from contracts.cli import main
from tests.contracts.conftest import write_tree

BODY = "    x = 1\n    y = x * 2\n    return {name}(x, y)\n"


def fn(name: str, body: str = BODY) -> str:
    return f"def {name}(a, b):\n" + body.format(name=name)


def derive(capsys, before, after, prefix="pkg.old", *extra) -> tuple[int, str, str]:
    code = main(["derive-map", "--before", str(before), "--after", str(after), "--removed", prefix, *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def lines(out: str) -> list[str]:
    return out.splitlines()[1:]


def test_a_flattened_package_is_matched_by_its_folded_name(tmp_path, capsys):
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "",
                                "pkg/old/minimax_m3/__init__.py": "",
                                "pkg/old/minimax_m3/rmsnorm.py": fn("gemma_rmsnorm") + fn("helper")}, config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/ops/__init__.py": "",
                                "pkg/ops/layernorm/minimax_m3_rmsnorm.py": fn("gemma_rmsnorm") + fn("helper")},
               config=None)
    code, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a", "pkg.old", "--format", "json")
    data = json.loads(out)
    entry = next(m for m in data["modules"] if m["module"] == "pkg.old.minimax_m3.rmsnorm")
    assert entry["status"] == "mapped" and entry["target"] == "pkg.ops.layernorm.minimax_m3_rmsnorm"
    assert entry["how"] == "folded name" and entry["score"] == 1.0
    assert [s["name"] for s in entry["shared"]] == ["gemma_rmsnorm", "helper"]
    assert "pkg.old.minimax_m3.rmsnorm -> pkg.ops.layernorm.minimax_m3_rmsnorm" in data["replacements"]


def test_a_renamed_module_is_found_by_its_definitions_even_reformatted(tmp_path, capsys):
    # The same two functions, one re-wrapped and with its imports updated: still the same code.
    old = "from pkg.old.util import k\n\n" + fn("conv") + fn("conv_ref")
    new = "from pkg.ops.util import k\n\ndef conv(\n    a,\n    b,\n):\n" + BODY.format(name="conv") + fn("conv_ref")
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "", "pkg/old/sconv.py": old}, config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/ops/__init__.py": "", "pkg/ops/short_conv.py": new},
               config=None)
    code, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a")
    assert "    pkg.old.sconv -> pkg.ops.short_conv" in lines(out)


def test_one_shared_common_name_with_another_body_carries_no_match(tmp_path, capsys):
    # Django 1.11 -> 3.0: `db.backends.postgresql.version.get_version` and `utils.version.get_version`
    # share a name, not a function. Neither the same-named module nor the name may be mapped.
    old = "def get_version(connection):\n    return connection.pg_version\n"
    new = ("def get_version(version=None):\n    version = get_complete_version(version)\n"
           "    main = get_main_version(version)\n    return main + sub\n")
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "", "pkg/old/version.py": old},
               config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/utils/__init__.py": "", "pkg/utils/version.py": new},
               config=None)
    code, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a", "pkg.old", "--format", "json")
    data = json.loads(out)
    assert data["replacements"] == []
    entry = next(m for m in data["modules"] if m["module"] == "pkg.old.version")
    assert entry["status"] == "unmatched"
    assert entry["candidates"] == [{"module": "pkg.utils.version", "score": 0.0}]
    assert [n["status"] for n in data["names"] if n["name"] == "get_version"] == ["unmatched"]
    assert code == 1


def test_an_evolved_function_with_the_same_parameters_is_still_the_same_definition(tmp_path, capsys):
    old = "def override(major, minor, suffix=''):\n    global A\n    A = make(major, minor, suffix)\n    yield\n"
    new = ("def override(major, minor, suffix=None, *, strict=False):\n    global A\n"
           "    A = make(major, minor) if suffix is None else other(major, minor, suffix)\n    check(strict)\n"
           "    yield\n")
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "", "pkg/old/arch.py": old}, config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/jit/__init__.py": "", "pkg/jit/arch.py": new}, config=None)
    _, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a")
    assert "    pkg.old.arch -> pkg.jit.arch" in lines(out)


def test_ties_are_listed_with_their_scores_not_guessed(tmp_path, capsys):
    code = fn("d") + fn("e")
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "", "pkg/old/dup.py": code}, config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/x/__init__.py": "", "pkg/x/one.py": code,
                                "pkg/y/__init__.py": "", "pkg/y/two.py": code}, config=None)
    code_, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a")
    assert "# ambiguous: pkg.old.dup -> pkg.x.one (100%) | pkg.y.two (100%)" in lines(out)
    assert not any(line.startswith("    pkg.old.dup") for line in lines(out))
    assert code_ == 1


def test_a_score_below_the_threshold_is_listed_not_guessed(tmp_path, capsys):
    # One of four definitions moved (a quarter of the code): under MODULE_MIN.
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "",
                                "pkg/old/split.py": fn("a1") + fn("a2") + fn("a3") + fn("a4")}, config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/x/__init__.py": "", "pkg/x/split.py": fn("a1")},
               config=None)
    _, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a")
    assert ("# unmatched: pkg.old.split: no module holds at least 50% of its code; best: `pkg.x.split` "
            "(same name, 25%)") in lines(out)
    assert "    pkg.old.split:a1 -> pkg.x.split:a1" in lines(out)  # its one name that moved


def test_names_a_package_re_exported_go_to_the_module_that_defines_them(tmp_path, capsys):
    write_tree(tmp_path / "b", {
        "pkg/__init__.py": "", "pkg/old/__init__.py": "",
        "pkg/old/minimax_m3/__init__.py": "from .rmsnorm import gemma_rmsnorm\nfrom .swiglu import swiglu_oai_split\n",
        "pkg/old/minimax_m3/rmsnorm.py": fn("gemma_rmsnorm"),
        "pkg/old/minimax_m3/swiglu.py": fn("swiglu_oai_split")}, config=None)
    write_tree(tmp_path / "a", {
        "pkg/__init__.py": "", "pkg/ops/__init__.py": "",
        "pkg/ops/layernorm/minimax_m3_rmsnorm.py": fn("gemma_rmsnorm"),
        "pkg/ops/moe/minimax_m3_swiglu.py": fn("swiglu_oai_split"),
        "pkg/models/minimax_m3.py": "class Model:\n    pass\n"}, config=None)
    _, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a")
    assert lines(out)[:5] == [
        "replacements =",
        "    pkg.old.minimax_m3.rmsnorm -> pkg.ops.layernorm.minimax_m3_rmsnorm",
        "    pkg.old.minimax_m3.swiglu -> pkg.ops.moe.minimax_m3_swiglu",
        "    pkg.old.minimax_m3:gemma_rmsnorm -> pkg.ops.layernorm.minimax_m3_rmsnorm:gemma_rmsnorm",
        "    pkg.old.minimax_m3:swiglu_oai_split -> pkg.ops.moe.minimax_m3_swiglu:swiglu_oai_split",
    ]


def _wheel(path, files: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return str(path)


TINY_BEFORE = {"tinypkg/__init__.py": "", "tinypkg/old/__init__.py": "", "tinypkg/old/op.py": fn("op") + fn("op_ref"),
               "tinypkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n",
               "tinypkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
               "tinypkg-1.0.dist-info/RECORD": ""}
TINY_AFTER = {"tinypkg/__init__.py": "", "tinypkg/ops/__init__.py": "", "tinypkg/ops/op.py": fn("op") + fn("op_ref"),
              "tinypkg-2.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: tinypkg\nVersion: 2.0\n",
              "tinypkg-2.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
              "tinypkg-2.0.dist-info/RECORD": ""}


def test_accepts_wheel_files(tmp_path, capsys):
    before = _wheel(tmp_path / "tinypkg-1.0-py3-none-any.whl", TINY_BEFORE)
    after = _wheel(tmp_path / "tinypkg-2.0-py3-none-any.whl", TINY_AFTER)
    code, out, _ = derive(capsys, before, after, "tinypkg.old")
    assert "    tinypkg.old.op -> tinypkg.ops.op" in lines(out)


def test_accepts_name_version_fetched_with_pip_download_from_a_local_index(tmp_path):
    links = tmp_path / "links"
    links.mkdir()
    _wheel(links / "tinypkg-1.0-py3-none-any.whl", TINY_BEFORE)
    _wheel(links / "tinypkg-2.0-py3-none-any.whl", TINY_AFTER)
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links),
               PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("pip is not available in this interpreter")
    proc = subprocess.run([sys.executable, "-m", "contracts", "derive-map", "--before", "tinypkg==1.0",
                           "--after", "tinypkg==2.0", "--removed", "tinypkg.old"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert "    tinypkg.old.op -> tinypkg.ops.op" in proc.stdout.splitlines(), proc.stderr
    assert proc.returncode == 1  # the package `tinypkg.old` itself has no new home


def test_name_version_that_cannot_be_fetched_is_one_clear_error(tmp_path):
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(tmp_path),
               PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "contracts", "derive-map", "--before", "tinypkg==9.9",
                           "--after", "tinypkg==9.9", "--removed", "tinypkg.old"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("namespace-lint derive-map: error: --before tinypkg==9.9: `pip download "
                                  "--no-deps tinypkg==9.9` failed (")
    assert "without network, pass a directory or a wheel file instead" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_a_file_that_is_not_a_wheel_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    code, out, err = derive(capsys, tmp_path / "notes.txt", tmp_path / "notes.txt")
    assert code == 2 and out == ""
    assert "--before " in err and "not a directory or a wheel (.whl)" in err


def test_a_corrupt_wheel_is_one_clear_error(tmp_path, capsys):
    (tmp_path / "broken-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 not really a zip")
    code, out, err = derive(capsys, tmp_path / "broken-1.0-py3-none-any.whl", tmp_path / "broken-1.0-py3-none-any.whl")
    assert code == 2 and out == ""
    assert "cannot be read as a wheel" in err and err.count("\n") == 1


def test_a_wheel_member_that_climbs_out_is_not_unpacked(tmp_path, capsys):
    files = dict(TINY_BEFORE)
    files["../escaped.py"] = "def op(a, b):\n    pass\n"
    files["/abs_escaped.py"] = "x = 1\n"
    before = _wheel(tmp_path / "tinypkg-1.0-py3-none-any.whl", files)
    after = _wheel(tmp_path / "tinypkg-2.0-py3-none-any.whl", TINY_AFTER)
    code, out, _ = derive(capsys, before, after, "tinypkg.old")
    assert "    tinypkg.old.op -> tinypkg.ops.op" in lines(out)
    # The wheel is unpacked in a directory under the temporary directory: `..` would land there.
    assert not os.path.exists(os.path.join(tempfile.gettempdir(), "escaped.py"))
    assert not os.path.exists("/abs_escaped.py")


def test_json_for_one_tree_of_shims_says_how_each_module_was_mapped(tmp_path, capsys):
    from tests.contracts.derive_map.test_derive_map import SHIM_TREE

    root = write_tree(tmp_path, SHIM_TREE, config=None)
    code = main(["derive-map", "--src", str(root), "--removed", "pkg.jit_kernel", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    by = {m["module"]: m for m in data["modules"]}
    assert by["pkg.jit_kernel.hicache"]["status"] == "mapped" and by["pkg.jit_kernel.hicache"]["how"] == "shim"
    assert by["pkg.jit_kernel.gemm"]["status"] == "unmatched" and "still holds code" in by["pkg.jit_kernel.gemm"]["reason"]
    assert by["pkg.jit_kernel.mixed"]["status"] == "ambiguous"
    assert [c["module"] for c in by["pkg.jit_kernel.mixed"]["candidates"]] == [
        "pkg.kernels.ops.kvcache.hicache", "pkg.kernels.ops.layernorm.norm"]
    assert by["pkg.jit_kernel"]["status"] == "no line"
    assert set(data["thresholds"]) == {"same_definition", "same_signature", "module_min", "tie_margin",
                                       "min_shared", "common_name"}
    assert data["complete"] is False and code == 1


def test_a_plain_value_elsewhere_is_no_evidence_of_a_move(tmp_path, capsys):
    # sglang 0.5.19 -> 0.5.22: `kimi_k3.gemm_ar` went nowhere as a whole; `k3_sp_collective` has a
    # `_STATE: Optional[_State] = None` of its own, for other state. A literal shared by chance
    # maps nothing, and the module's reason says what was found.
    old = ("_STATE: Optional[_State] = None\nLIMIT = 36\n" + fn("gemm_ar_init") + fn("gemm_ar_run"))
    new = "_STATE: Optional[_State] = None\nLIMIT = 36\n" + fn("reduce_scatter")
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "", "pkg/old/gemm_ar.py": old},
               config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/comm/__init__.py": "", "pkg/comm/sp_collective.py": new},
               config=None)
    code, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a", "pkg.old", "--format", "json")
    data = json.loads(out)
    assert data["replacements"] == []
    names = {n["name"]: n for n in data["names"] if n["module"] == "pkg.old.gemm_ar"}
    assert names["_STATE"]["status"] == names["LIMIT"]["status"] == "unmatched"
    assert "the same plain value (`LIMIT = 36`), but none holds other code of `pkg.old.gemm_ar`" in \
        names["LIMIT"]["reason"]
    entry = next(m for m in data["modules"] if m["module"] == "pkg.old.gemm_ar")
    assert entry["reason"] == ("no module of the after tree defines enough of its 4 definitions with the same "
                               "body: at most 2, in `pkg.comm.sp_collective` (`LIMIT`, `_STATE`)")
    assert code == 1


def test_a_plain_value_goes_where_the_rest_of_its_module_went(tmp_path, capsys):
    # Split: the module's code is in two places, each with a `_CACHE = {}`; the one its own code
    # went to (a quarter of it, by the same name) is where its `_CACHE` is, not the other.
    old = "_CACHE = {}\n" + fn("a1") + fn("a2") + fn("a3") + fn("a4")
    write_tree(tmp_path / "b", {"pkg/__init__.py": "", "pkg/old/__init__.py": "", "pkg/old/split.py": old},
               config=None)
    write_tree(tmp_path / "a", {"pkg/__init__.py": "", "pkg/x/__init__.py": "", "pkg/x/split.py": "_CACHE = {}\n" + fn("a1"),
                                "pkg/y/__init__.py": "", "pkg/y/other.py": "_CACHE = {}\n" + fn("b1")}, config=None)
    _, out, _ = derive(capsys, tmp_path / "b", tmp_path / "a")
    assert "    pkg.old.split:_CACHE -> pkg.x.split:_CACHE" in lines(out)
    assert not any("pkg.y.other" in line for line in lines(out) if not line.startswith("#"))
