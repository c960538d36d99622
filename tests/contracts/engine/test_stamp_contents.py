"""The stamp after a fresh copy: every stat new, every content the same. It answers from the
files' contents (read and hashed, on both cores when there are many), never from a stat that
could not tell, and it sees a file that changed at the same size, mtime put back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contracts import check
from contracts import config as config_mod
from contracts.engine import model as model_mod
from contracts.engine import stamp as stamp_mod

VIOLATION = "import os\nfrom pkg.jit_kernel import hicache\n"
CLEAN_SAME_SIZE = "import os\nfrom pkg.kernels import ops  # padding\n"
CLEAN_SAME_SIZE = CLEAN_SAME_SIZE[: len(VIOLATION) - 1] + "\n"  # exactly as long as VIOLATION


def _run(root: Path, cache: Path):
    cfg = config_mod.load(str(root / ".importlinter"))
    return check.run(cfg, str(root), cache_dir=str(cache))


def _summary(result) -> list[tuple]:
    return [(f.path, f.line, f.rule, f.imported) for f in result.findings]


def _fresh_copy(root: Path) -> None:
    """What `cp -a` back to the same place does: same contents and mtimes, every ctime new."""
    saved = root.parent / (root.name + "-saved")
    shutil.copytree(root, saved)
    shutil.rmtree(root)
    shutil.copytree(saved, root)  # (`copy2`: the mtimes are kept)
    shutil.rmtree(saved)


def _forbid(monkeypatch, obj, name):
    def fail(*args, **kwargs):
        raise AssertionError(f"{name} was called")

    monkeypatch.setattr(obj, name, fail)


def test_a_fresh_copy_is_answered_by_the_stamp_from_the_contents(tree, tmp_path_factory, monkeypatch):
    # No waiting past the racy window: the first run, right after the files were written, still
    # leaves a stamp, whose every file is compared by content.
    root = tree({"pkg/srt/m.py": VIOLATION, "pkg/srt/.tools/x.py": "import pkg.jit_kernel\n"})
    cache = tmp_path_factory.mktemp("cache")
    cold = _run(root, cache)
    assert ("pkg/srt/m.py", 2, "removed-module", "pkg.jit_kernel.hicache") in _summary(cold)
    _fresh_copy(root)
    hashed = []
    real = stamp_mod.compared_contents
    monkeypatch.setattr(stamp_mod, "compared_contents", lambda changed: hashed.append(len(changed)) or real(changed))
    _forbid(monkeypatch, model_mod, "build_model")
    warm = _run(root, cache)
    assert warm.cache_status == "warm" and _summary(warm) == _summary(cold)
    assert hashed == [len(list(root.rglob("*.py")))]  # the file in a dotted directory too


@pytest.mark.parametrize("where", ["module", "dotted directory"])
def test_a_file_changed_at_the_same_size_and_mtime_after_a_copy_is_seen(tree, tmp_path_factory, where,
                                                                         monkeypatch):
    rel = "pkg/srt/m.py" if where == "module" else "pkg/srt/.tools/m.py"
    root = tree({rel: CLEAN_SAME_SIZE})
    cache = tmp_path_factory.mktemp("cache")
    before = _summary(_run(root, cache))
    assert [f for f in before if f[2] == "removed-module"] == []
    _fresh_copy(root)
    answers = []
    real = stamp_mod.compared_contents

    def spy(changed):
        got = real(changed)
        answers.append(got is not None)
        return got

    monkeypatch.setattr(stamp_mod, "compared_contents", spy)
    m = root / rel
    st = m.stat()
    m.write_text(VIOLATION)
    os.utime(m, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (m.stat().st_size, m.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    found = _summary(_run(root, cache))
    # (a file in a dotted directory is no module, but a script read as an importer: its change is seen too)
    assert found == before + [(rel, 2, "removed-module", "pkg.jit_kernel.hicache")]
    assert answers == [False]


def test_a_file_of_another_size_is_told_by_its_stat_alone(tree, tmp_path_factory, monkeypatch):
    root = tree({"pkg/srt/m.py": CLEAN_SAME_SIZE})
    cache = tmp_path_factory.mktemp("cache")
    _run(root, cache)
    _fresh_copy(root)
    (root / "pkg/srt/m.py").write_text(VIOLATION + "x = 1\n")
    _forbid(monkeypatch, stamp_mod, "compared_contents")  # nothing is read to know it changed
    assert _summary(_run(root, cache)) == [("pkg/srt/m.py", 2, "removed-module", "pkg.jit_kernel.hicache")]


def test_the_stamp_takes_the_new_stats_once_they_are_settled(tree, tmp_path_factory, monkeypatch):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cache = tmp_path_factory.mktemp("cache")
    cold = _run(root, cache)
    _fresh_copy(root)
    monkeypatch.setattr(stamp_mod, "RACY_SECONDS", -1.0)  # the copy counts as settled
    assert _summary(_run(root, cache)) == _summary(cold)  # told by content, the stats recorded
    _forbid(monkeypatch, stamp_mod, "compared_contents")
    _forbid(monkeypatch, model_mod, "build_model")
    assert _summary(_run(root, cache)) == _summary(cold)  # by the stats alone


def test_a_recent_stat_is_recorded_as_one_that_vouches_for_nothing(tree, tmp_path_factory):
    root = tree({"pkg/srt/m.py": VIOLATION})
    cfg = config_mod.load(str(root / ".importlinter"))
    plan = check.plan_for(cfg)
    model = model_mod.build_model(str(root), plan, str(tmp_path_factory.mktemp("cache")))
    _, _, files = stamp_mod._tree_state(model, plan, model.started)
    assert files and all(m is None and isinstance(d, bytes) for _, m, _, _, d in files)
    changed = stamp_mod._changed_stats(stamp_mod._tree_state(model, plan, model.started), model.src, plan)
    assert sorted(p for p, _, _ in changed) == sorted(p for p, *_ in files)  # all compared by content


_HASH_IN_TWO = """
import hashlib, json, os, sys
from contracts.engine import stamp, workers
paths = sorted(os.path.join(sys.argv[1], n) for n in os.listdir(sys.argv[1]))
def moved(p):  # a recorded stat of the same size that no longer holds
    return (0, 0, os.path.getsize(p))
entries = [(p, moved(p), hashlib.sha1(open(p, 'rb').read()).digest()) for p in paths]
def answer(entries):
    got = stamp.compared_contents(entries)
    return None if got is None else len(got)
out = {"jobs": workers.jobs(None, len(entries)), "same": answer(entries)}
for at in (0, len(entries) // 2, len(entries) - 1):
    wrong = list(entries)
    wrong[at] = (wrong[at][0], wrong[at][1], b"x" * 20)
    out[f"wrong at {at}"] = answer(wrong)
st = os.stat(paths[5])
out["unmoved"] = answer([(paths[5], (st.st_mtime_ns, st.st_ctime_ns, st.st_size), b"x" * 20)])
out["other size"] = answer([(paths[5], (0, 0, st.st_size + 1), entries[5][2])])
gone = entries + [(paths[0] + ".gone", (0, 0, 1), b"x" * 20)]
out["gone"] = answer(gone)
print(json.dumps(out))
"""


def test_contents_are_compared_in_two_processes_with_the_same_answer(tmp_path):
    # (an unmoved stat is trusted without reading; a moved one is hashed, whatever its digest)
    files = tmp_path / "files"
    files.mkdir()
    for i in range(600):
        (files / f"f{i:04}.py").write_text(f"x = {i}\n" * (i % 7 + 1))
    env = dict(os.environ, PYTHONPATH=str(Path(check.__file__).parents[1]), NAMESPACE_LINT_JOBS="2")
    done = subprocess.run([sys.executable, "-c", _HASH_IN_TWO, str(files)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    expected_jobs = 2 if hasattr(os, "fork") else 1
    assert out.pop("jobs") == expected_jobs
    assert out == {"same": 600, "wrong at 0": None, "wrong at 300": None, "wrong at 599": None,
                   "unmoved": 0, "other size": None, "gone": None}


def _many(n: int = 450) -> dict[str, str]:
    """Enough files that the contents are compared while the tree is walked (`_looks_copied`)."""
    files = {f"pkg/srt/gen/m{i:03}.py": f"import os\nX{i} = {i}\n" for i in range(n)}
    files["pkg/srt/gen/__init__.py"] = ""
    files["pkg/srt/m.py"] = CLEAN_SAME_SIZE
    return files


@pytest.mark.parametrize("change", ["none", "same size and mtime", "added", "deleted", "symlink"])
def test_a_large_fresh_copy_is_compared_while_walked_and_every_change_is_seen(tree, tmp_path_factory, monkeypatch,
                                                                                change):
    root = tree(_many())
    cache = tmp_path_factory.mktemp("cache")
    before = _summary(_run(root, cache))
    _fresh_copy(root)
    m = root / "pkg/srt/m.py"
    if change == "same size and mtime":
        st = m.stat()
        m.write_text(VIOLATION)
        os.utime(m, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "added":
        (root / "pkg/srt/gen/new.py").write_text(VIOLATION)
    elif change == "deleted":
        (root / "pkg/srt/gen/m007.py").unlink()
    elif change == "symlink":
        m.unlink()
        m.symlink_to(root / "pkg/srt/gen/m001.py")
    seen = []
    real = stamp_mod._contents_compared
    monkeypatch.setattr(stamp_mod, "_contents_compared", lambda *a: seen.append(real(*a)) or seen[-1])
    if change == "none":
        _forbid(monkeypatch, model_mod, "build_model")
    after = _run(root, cache)
    assert len(seen) == 1  # (the path taken: most stats moved)
    if change == "none":
        assert after.cache_status == "warm" and _summary(after) == before
        assert len(seen[0]) == len(list(root.rglob("*.py")))
        return
    assert seen == [None]
    cfg = config_mod.load(str(root / ".importlinter"))
    assert _summary(after) == _summary(check.run(cfg, str(root)))  # what a run without the cache says
    if change in ("same size and mtime", "added"):
        assert any(f[2] == "removed-module" for f in _summary(after))


_COPIED_IN_TWO = """
import json, sys
from contracts.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
"""


def test_a_large_fresh_copy_compared_in_two_processes_answers_what_the_tree_holds(tree, tmp_path_factory):
    root = tree(_many())
    cache = tmp_path_factory.mktemp("cache")
    env = dict(os.environ, PYTHONPATH=str(Path(check.__file__).parents[1]), NAMESPACE_LINT_JOBS="2")
    args = ["--cache-dir", str(cache), "--format", "json", "-v"]

    def cli():
        done = subprocess.run([sys.executable, "-c", _COPIED_IN_TWO, *args], cwd=root, env=env,
                              capture_output=True, text=True, timeout=120)
        return json.loads(done.stdout)["findings"], done.stderr

    cold, _ = cli()
    _fresh_copy(root)
    warm, talk = cli()
    assert warm == cold and "read and hashed" in talk, talk
    _fresh_copy(root)
    m = root / "pkg/srt/m.py"
    st = m.stat()
    m.write_text(VIOLATION)
    os.utime(m, ns=(st.st_atime_ns, st.st_mtime_ns))
    changed, talk = cli()
    assert "read and hashed" not in talk
    assert [f["path"] for f in changed if f["rule"] == "removed-module"] == ["pkg/srt/m.py"]
