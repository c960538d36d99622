"""The cache: warm runs answer what a cold run answers, edits are seen (even one that keeps the
mtime), a corrupt cache is rebuilt, and runs sharing a cache directory agree."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from contracts import check
from contracts import config as config_mod
from contracts.engine import cache as cache_mod
from contracts.engine import model as model_mod
from contracts.engine import reading as reading_mod
from contracts.engine import stamp as stamp_mod
from tests.contracts.conftest import run_cli

VIOLATION = "import os\nfrom pkg.jit_kernel import hicache\n"
CLEAN_SAME_SIZE = "import os\nfrom pkg.kernels import ops  # padding\n"
CLEAN_SAME_SIZE = CLEAN_SAME_SIZE[: len(VIOLATION) - 1] + "\n"  # exactly as long as VIOLATION


def _run(root: Path, cache_dir: Path | None, paths=None):
    cfg = config_mod.load(str(root / ".importlinter"))
    return check.run(cfg, str(root), paths=paths, cache_dir=str(cache_dir) if cache_dir else None)


def _summary(result) -> list[tuple]:
    return [(f.path, f.line, f.col, f.rule, f.imported) for f in result.findings]




def _forbid(monkeypatch, obj, name):
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} was called")

    monkeypatch.setattr(obj, name, fail)


def test_warm_run_answers_without_building_when_nothing_changed(tree, tmp_path_factory, not_racy, monkeypatch):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    uncached = _run_uncached(root)
    cold = _run(root, cache)
    assert cold.cache_status == "cold"
    _forbid(monkeypatch, model_mod, "build_model")
    warm = _run(root, cache)
    assert warm.cache_status == "warm"
    assert _summary(warm) == _summary(cold) == _summary(uncached) != []
    assert (warm.files_scanned, warm.files_total) == (cold.files_scanned, cold.files_total)


def test_a_warm_run_answered_by_the_stamp_loads_no_engine_beyond_the_cache(tree, tmp_path_factory):
    """Start-up is most of a warm run: the model, the scanners and grimp are not even imported."""
    import subprocess
    import sys

    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    time.sleep(2.1)  # past the racy window: the first run leaves a stamp
    args = ["--cache-dir", str(cache), "--format", "json", "-v"]
    code = ("import sys; from contracts.cli import main\n"
            f"try: main({args!r})\nexcept SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('contracts.engine.', 'grimp'))), file=sys.stderr)")
    env = dict(os.environ, PYTHONPATH=str(Path(check.__file__).parents[1]))
    for _ in range(2):  # cold, then warm
        done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                              timeout=120)
    assert "cache warm: the tree is unchanged" in done.stderr, done.stderr
    loaded = done.stderr.strip().splitlines()[-1]
    for heavy in ("contracts.engine.model", "contracts.engine.scan", "contracts.engine.window", "grimp"):
        assert f"'{heavy}'" not in loaded, loaded


def _run_uncached(root):
    return _run(root, None)


def test_findings_are_reused_without_rules_when_scan_results_are_unchanged(tree, tmp_path_factory, not_racy,
                                                                          monkeypatch):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    cold = _run(root, cache)
    m = root / "pkg/srt/m.py"
    m.write_text(VIOLATION + "# a comment changes nothing a rule sees\n")
    _forbid(monkeypatch, check, "_evaluate")
    again = _run(root, cache)
    assert [(f.path, f.rule, f.imported) for f in again.findings] == [(f.path, f.rule, f.imported) for f in cold.findings]


def test_is_seen_when_an_edit_keeps_size_and_mtime_within_the_racy_window(tree, tmp_path_factory):
    root = tree({"pkg/srt/m.py": CLEAN_SAME_SIZE})
    cache = tmp_path_factory.mktemp("cache")
    assert _summary(_run(root, cache)) == []
    m = root / "pkg/srt/m.py"
    st = m.stat()
    m.write_text(VIOLATION)  # same size, same second
    os.utime(m, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the very same mtime
    assert m.stat().st_mtime_ns == st.st_mtime_ns and m.stat().st_size == st.st_size
    assert _summary(_run(root, cache)) == [("pkg/srt/m.py", 2, 1, "removed-module", "pkg.jit_kernel.hicache")]


def test_is_seen_when_an_edit_keeps_size_mtime_and_ctime_within_the_racy_window(tree, tmp_path_factory,
                                                                                monkeypatch):
    # A filesystem with coarse timestamps: the ctime does not move either. Only the hash of a
    # file read within `RACY_SECONDS` of its last change can tell.
    monkeypatch.setattr(reading_mod, "_ctime_ns", lambda st: 0)
    root = tree({"pkg/srt/m.py": CLEAN_SAME_SIZE})
    cache = tmp_path_factory.mktemp("cache")
    assert _summary(_run(root, cache)) == []
    m = root / "pkg/srt/m.py"
    st = m.stat()
    m.write_text(VIOLATION)
    os.utime(m, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _summary(_run(root, cache)) == [("pkg/srt/m.py", 2, 1, "removed-module", "pkg.jit_kernel.hicache")]


def test_is_seen_when_an_old_file_is_replaced_keeping_size_and_mtime(tree, tmp_path_factory, not_racy):
    # Outside the racy window the (mtime, size) pair alone would be trusted; the ctime, which
    # every write moves (and `utime` cannot set), is what tells.
    root = tree({"pkg/srt/m.py": CLEAN_SAME_SIZE})
    m = root / "pkg/srt/m.py"
    os.utime(m, ns=(10**18, 10**18))
    cache = tmp_path_factory.mktemp("cache")
    assert _summary(_run(root, cache)) == []
    m.write_text(VIOLATION)
    os.utime(m, ns=(10**18, 10**18))
    assert _summary(_run(root, cache)) == [("pkg/srt/m.py", 2, 1, "removed-module", "pkg.jit_kernel.hicache")]


def test_is_seen_when_a_file_is_added_or_deleted(tree, tmp_path_factory, not_racy):
    root = tree()
    cache = tmp_path_factory.mktemp("cache")
    assert _summary(_run(root, cache)) == []
    new = root / "pkg/srt/deep/new.py"
    new.parent.mkdir()
    new.write_text(VIOLATION)
    assert _summary(_run(root, cache)) == [("pkg/srt/deep/new.py", 2, 1, "removed-module", "pkg.jit_kernel.hicache")]
    new.unlink()
    assert _summary(_run(root, cache)) == []


def test_is_seen_when_the_configuration_changes(tree, tmp_path_factory, not_racy):
    root = tree({"pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels.ops.kvcache import hicache\n"})
    cache = tmp_path_factory.mktemp("cache")
    assert [f.rule for f in _run(root, cache).findings] == ["group-boundary"]
    config = root / ".importlinter"
    config.write_text(config.read_text().replace(
        "shared_modules =\n    pkg.kernels.jit\n",
        "shared_modules =\n    pkg.kernels.jit\nallowed_imports =\n    pkg.kernels.ops.gemm -> pkg.kernels.ops.kvcache\n"))
    assert _summary(_run(root, cache)) == []


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "flipped_byte"])
def test_is_rebuilt_when_corrupt(tree, tmp_path_factory, damage, not_racy):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    expected = _summary(_run(root, cache))
    files = sorted(p for p in cache.iterdir() if p.name not in (".gitignore", "CACHEDIR.TAG"))
    assert {p.suffix for p in files} == {".records", ".stamp"}
    for p in files:
        blob = p.read_bytes()
        if damage == "flipped_byte":  # inside a stored path: still loads, to something wrong
            at = blob.rindex(b"pkg/srt/m.py") if b"pkg/srt/m.py" in blob else len(blob) - 1
            blob = blob[:at] + bytes([blob[at] ^ 1]) + blob[at + 1:]
        p.write_bytes({"truncated": blob[: len(blob) // 2], "garbage": b"\x80not a cache" * 10, "empty": b"",
                       "flipped_byte": blob}[damage])
    again = _run(root, cache)
    assert again.cache_status == "corrupt"
    assert _summary(again) == expected
    assert _run(root, cache).cache_status == "warm"  # rewritten whole


def test_is_ignored_when_written_by_another_version_of_the_tool(tree, tmp_path_factory, not_racy, monkeypatch):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    expected = _summary(_run(root, cache))
    monkeypatch.setattr(cache_mod, "_FINGERPRINT", "another version")
    again = _run(root, cache)
    assert again.cache_status == "cold" and _summary(again) == expected


def test_leaves_no_temporary_files(tree, tmp_path_factory, not_racy):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    for _ in range(3):
        _run(root, cache)
        (root / "pkg/srt/m.py").write_text(VIOLATION + "x = 1\n" * len(list(cache.iterdir())))
    assert sorted(p.suffix for p in cache.iterdir() if not p.name.startswith((".gitignore", "CACHEDIR"))) == [
        ".records", ".stamp"]  # no `.tmp` left


def test_an_unwritable_cache_directory_only_costs_speed(tree, tmp_path_factory):
    root = tree({"pkg/srt/m.py": VIOLATION})
    blocker = tmp_path_factory.mktemp("cache") / "file"
    blocker.write_text("a file where the cache directory should be")
    result = _run(root, blocker)
    assert _summary(result) == _summary(_run_uncached(root))
    assert len(result.warnings) == 1 and str(blocker) in result.warnings[0]


def test_the_cache_directory_ignores_itself_like_ruffs(tree, tmp_path_factory):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("parent") / "new" / ".namespace_lint_cache"
    result = _run(root, cache)
    assert result.warnings == []
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache / "CACHEDIR.TAG").read_bytes().startswith(b"Signature: 8a477f597d28d172789f06886806bc55")
    assert any(p.suffix == ".records" for p in cache.iterdir())


@pytest.mark.parametrize("where", ["a file in the way", "below a file", "read-only directory"])
def test_an_unusable_cache_location_is_one_warning_and_the_run_goes_on(tree, tmp_path_factory, where):
    root = tree({"pkg/srt/m.py": VIOLATION})
    base = tmp_path_factory.mktemp("cache")
    (base / "file").write_text("x")
    cache = {"a file in the way": base / "file", "below a file": base / "file" / "sub",
             "read-only directory": base / "ro"}[where]
    if where == "read-only directory":
        cache.mkdir()
        cache.chmod(0o500)
        if os.access(cache, os.W_OK):
            pytest.skip("running as root: a read-only mode does not stop writes")
    proc = run_cli(["--cache-dir", str(cache)], cwd=root)
    assert proc.returncode == 1, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "cannot be used" in warnings[0] and str(cache) in warnings[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert "pkg/srt/m.py:2:1: removed-module" in proc.stdout


def _worker(args):
    root, cache, rounds = args
    out = []
    for _ in range(rounds):
        out.append(_summary(_run(Path(root), Path(cache))))
    return out


def test_concurrent_runs_sharing_a_cache_agree(tree, tmp_path_factory):
    root = tree({
        "pkg/srt/m.py": VIOLATION,
        "pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels.ops.kvcache.hicache import _private_helper\n",
    })
    cache = tmp_path_factory.mktemp("cache")
    expected = _summary(_run_uncached(root))
    assert {f[3] for f in expected} == {"removed-module", "group-boundary", "private-import"}
    # Spawned workers cannot share a monkeypatched racy window: let the files settle instead, so
    # that the last run's "warm" does not depend on how fast the workers happened to start.
    time.sleep(max(0.0, model_mod.RACY_SECONDS - (time.time() - (root / "pkg/srt/m.py").stat().st_ctime)) + 0.2)
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter each: no state shared but the cache
    with ctx.Pool(4) as pool:
        results = pool.map(_worker, [(str(root), str(cache), 3)] * 4)
    assert all(r == expected for rounds in results for r in rounds)
    assert _run(root, cache).cache_status == "warm"


def _forge(cache_dir: Path, payload: bytes, key: bytes) -> None:
    import hashlib
    import hmac

    for p in cache_dir.iterdir():
        p.write_bytes(cache_mod.MAGIC + hmac.new(key, payload, hashlib.sha256).digest() + payload)


def test_is_not_trusted_when_another_key_wrote_it(tree, tmp_path_factory, not_racy):
    # A cache directory committed to a repository: well formed, but not written by this user.
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    expected = _summary(_run(root, cache))
    import marshal

    forged = marshal.dumps({"files": {}, "results": {}, "started_at": 0.0, "tool": cache_mod.tool_fingerprint()})
    _forge(cache, forged, b"\0" * 32)
    again = _run(root, cache)
    assert again.cache_status == "corrupt" and _summary(again) == expected


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_never_runs_code_from_a_cache_even_one_with_a_valid_key(tree, tmp_path_factory, not_racy):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    expected = _summary(_run(root, cache))
    import pickle

    _forge(cache, pickle.dumps({"files": _Payload(), "started_at": 0.0}), cache_mod._key())
    assert _summary(_run(root, cache)) == expected
    assert not (root / "pwned").exists() and not Path("pwned").exists()


def test_runs_of_different_contracts_do_not_mix(tree, tmp_path_factory, not_racy, monkeypatch):
    from contracts.engine import graph as graph_mod

    root = tree({"pkg/srt/m.py": VIOLATION,
                 "pkg/kernels/ops/gemm/fused_a_gemm.py": "from pkg.kernels.ops.kvcache import hicache\n"})
    cache = tmp_path_factory.mktemp("cache")
    cfg = config_mod.load(str(root / ".importlinter"))
    scanned = []
    real_scan = graph_mod.EdgeScanner.scan

    def spy(self, files, *args):
        scanned.extend(f.rel for f in files)
        return real_scan(self, files, *args)

    monkeypatch.setattr(graph_mod.EdgeScanner, "scan", spy)
    only = check.run(cfg, str(root), cache_dir=str(cache), contract_ids=["removed"])
    assert [f.rule for f in only.findings] == ["removed-module"]
    # No graph for a removed_modules contract: only the syntax check of the file naming it
    # (host.py holds the word in `can_use_hicache_jit_kernel`, a name the prefilter passes over).
    assert sorted(scanned) == ["pkg/srt/m.py"]
    full = check.run(cfg, str(root), cache_dir=str(cache))
    assert sorted(f.rule for f in full.findings) == ["group-boundary", "removed-module"]
    again = check.run(cfg, str(root), cache_dir=str(cache), contract_ids=["removed"])
    assert _summary(again) == _summary(only)


def _both_states(root):
    """The stamp's tree state made from the walk's stats, and made by walking again (with a cache,
    as a stamp is only ever made: the files' digests come from the build)."""
    cfg = config_mod.load(str(root / ".importlinter"))
    plan = check.plan_for(cfg)
    model = model_mod.build_model(str(root), plan, str(root / ".cache"))
    whole = model.discovery.whole
    from_walk = stamp_mod._tree_state(model, plan, model.started)
    model.discovery.whole = False  # as for a tree the walk did not see whole
    walked_again = stamp_mod._tree_state(model, plan, model.started)
    return whole, from_walk, walked_again


def test_the_stamp_from_the_walk_is_the_stamp_a_second_walk_makes(tree, not_racy):
    # (a dotted directory is walked too: its scripts are read as importers)
    root = tree({"pkg/srt/m.py": VIOLATION, "pkg/srt/ns_dir/deep/x.py": "x = 1\n", "pkg/srt/data.txt": "x\n",
                 "pkg/srt/stub.pyi": "x: int\n", "pkg/multimodal/.agents/tool/run.py": "import pkg.jit_kernel\n"})
    whole, from_walk, walked_again = _both_states(root)
    assert whole and from_walk is not None and from_walk == walked_again
    assert len(from_walk[2]) == len(list(root.rglob("*.py")))


@pytest.mark.parametrize("shape", ["symlink", "dotted directory", "shadowed module"])
def test_a_tree_the_walk_did_not_see_whole_gets_a_stamp_that_sees_every_file(tree, not_racy, shape):
    root = tree({"pkg/srt/m.py": VIOLATION})
    if shape == "symlink":
        os.symlink(root / "pkg" / "srt" / "m.py", root / "pkg" / "srt" / "alias.py")
    elif shape == "dotted directory":
        (root / "pkg" / "srt" / "v1.2").mkdir()
        (root / "pkg" / "srt" / "v1.2" / "old.py").write_text("x = 1\n")
    else:
        (root / "pkg" / "srt" / "m").mkdir()
        (root / "pkg" / "srt" / "m" / "__init__.py").write_text("")
    cfg = config_mod.load(str(root / ".importlinter"))
    model = model_mod.build_model(str(root), check.plan_for(cfg))
    assert model.discovery.whole is (shape == "dotted directory")
    # and a warm run after it is still answered right: the stamp (if any) holds every .py file
    cache = root / ".cache-test"
    cold = _run(root, cache)
    (root / "pkg" / "srt" / "late.py").write_text("import pkg.jit_kernel.norm\n")
    again = _run(root, cache)
    assert ("pkg/srt/late.py", 1) in {(f.path, f.line) for f in again.findings}
    assert len(again.findings) > len(cold.findings)


def test_the_key_holds_the_versions_of_the_tool_its_dependencies_and_python(tree, tmp_path_factory, not_racy,
                                                                            monkeypatch):
    """No hand-bumped constant: the key is the tree, the scan plan and `cache.versions()`, which
    are those `importlib.metadata` reports; another grimp (or import-linter, libcst, Python, this
    tool) starts a new cache, findings unchanged."""
    from importlib import metadata

    from contracts._version import __version__

    tool, *deps, python = cache_mod.versions()
    assert tool == __version__ and python == os.sys.version
    assert deps == [metadata.version(name) for name in cache_mod.KEYED_DISTRIBUTIONS]
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache_dir = tmp_path_factory.mktemp("cache")
    first = _summary(_run(root, cache_dir))
    assert _run(root, cache_dir).cache_status == "warm"
    for i in range(1, 5):
        changed = list(cache_mod.versions())
        changed[i] = changed[i] + "-other"
        monkeypatch.setattr(cache_mod, "_VERSIONS", tuple(changed))
        result = _run(root, cache_dir)
        assert result.cache_status == "cold" and _summary(result) == first
