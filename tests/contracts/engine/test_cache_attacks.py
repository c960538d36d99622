"""Attacks on the cache by whoever can write the checked tree (issue 13, finding 2): a cache they
commit or forge can at worst make a run slower, never hide a finding, hang it, crash it, or make
it write outside the checkout. Each test fails on the tool before the hardening."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from contracts import check
from contracts import config as config_mod
from contracts.engine import cache as cache_mod
from contracts.engine import model as model_mod
from contracts.engine import stamp as stamp_mod
from tests.contracts.conftest import REPO

VIOLATION = "import os\nfrom pkg.jit_kernel import hicache\n"
CACHE = ".namespace_lint_cache"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture(autouse=True)
def fresh_key(monkeypatch, tmp_path_factory):
    """Each test loads its key from its own key directory (outside every tree)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
    monkeypatch.setattr(cache_mod, "_KEY", None)
    monkeypatch.setattr(cache_mod, "_KEY_DIR", None)
    monkeypatch.setattr(model_mod, "RACY_SECONDS", -1.0)
    monkeypatch.setattr(stamp_mod, "RACY_SECONDS", -1.0)


def _cli(root: Path, env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME",)}
    full["PYTHONPATH"] = str(REPO)
    full.update(env)
    full = {k: v for k, v in full.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "contracts", *args], cwd=root, env=full,
                          capture_output=True, text=True, timeout=timeout)


def _run(root: Path, cache: Path | None = None):
    cfg = config_mod.load(str(root / ".importlinter"))
    return check.run(cfg, str(root), cache_dir=str(cache or root / CACHE))


def _forge_stamp(root: Path, key: bytes, state) -> None:
    """A stamp that says "no findings" for `state`, authenticated with `key`: what someone who
    knows the key (one committed into the tree) can write."""
    cfg = config_mod.load(str(root / ".importlinter"))
    src = str(root)
    plan = check.plan_for(cfg)
    stamp = stamp_mod._stamp(str(root / CACHE), src, plan)
    clean = check.Result(files_scanned=1, files_total=1, findings=[])
    old_key = cache_mod._KEY
    cache_mod._KEY = key
    try:
        stamp.save({"generation": "g", "state": state,
                    "results": {check._result_key(cfg, src, None): check._to_data(clean)}}, 0.0)
    finally:
        cache_mod._KEY = old_key


@pytest.mark.parametrize("where", ["XDG_CACHE_HOME=<checkout>/.cache", "HOME=<checkout>"])
def test_a_key_committed_into_the_checkout_is_refused_and_a_forged_stamp_hides_nothing(tree, where):
    # GitLab's `$CI_PROJECT_DIR/.cache`, or HOME set to the workspace: the key would be the
    # tree's, and so would be a stamp forged with it.
    root = tree({"pkg/srt/m.py": VIOLATION})
    key_dir = root / ".cache" / "namespace-lint"
    key_dir.mkdir(parents=True)
    (key_dir / "key").write_bytes(b"k" * 32)
    os.chmod(key_dir / "key", 0o600)
    os.chmod(key_dir, 0o700)
    (root / CACHE).mkdir(mode=0o700)
    _forge_stamp(root, b"k" * 32, ([], [], []))
    env = {"XDG_CACHE_HOME": str(root / ".cache")} if where.startswith("XDG") else {"HOME": str(root)}
    done = _cli(root, env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "removed-module" in done.stdout
    [warning] = [line for line in done.stderr.splitlines() if "warning" in line]
    assert "running without a cache" in warning and "inside" in warning and str(key_dir) in warning


@pytest.mark.parametrize("value", ["relative/cache", "unset-home"])
def test_a_relative_key_location_is_refused_with_one_warning(tree, monkeypatch, capsys, value):
    root = tree({"pkg/srt/m.py": VIOLATION})
    monkeypatch.chdir(root)  # a relative key directory would land in the checkout
    if value == "unset-home":  # HOME unset and a uid without a passwd entry: `~` stays literal
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.delenv("HOME", raising=False)
        monkeypatch.setattr(os.path, "expanduser", lambda p: p)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", value)
    for _ in range(2):
        result = _run(root)
        assert [f.rule for f in result.findings] == ["removed-module"]
        assert len(result.warnings) == 1 and "relative path" in result.warnings[0]
    assert not list(root.rglob("key")) and not (root / CACHE).exists()


def test_an_empty_tree_state_vouches_for_nothing_even_with_this_users_key(tree):
    root = tree({"pkg/srt/m.py": VIOLATION})
    assert _run(root).cache_status == "cold"
    _forge_stamp(root, cache_mod._key(), ([], [], []))
    assert [f.rule for f in _run(root).findings] == ["removed-module"]


def test_a_stamp_that_leaves_out_a_directory_vouches_for_nothing(tree):
    root = tree({"pkg/srt/m.py": "import os\n"})
    assert _run(root).findings == []
    cfg = config_mod.load(str(root / ".importlinter"))
    plan = check.plan_for(cfg)
    model = model_mod.build_model(str(root), plan)
    roots, dirs, files = stamp_mod._tree_state(model, plan, model.started + 10)
    (root / "pkg/srt/m.py").write_text(VIOLATION)
    srt = str(root / "pkg" / "srt")
    # the state as it was, less the directory the violation is in (and its files)
    state = (roots, [d for d in dirs if not d[0].startswith(srt)], [f for f in files if not f[0].startswith(srt)])
    _forge_stamp(root, cache_mod._key(), state)
    assert [f.rule for f in _run(root).findings] == ["removed-module"]


def _run_limited(root: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI with 2 GiB of address space, so a run that reads without bound fails fast."""
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
            "from contracts.cli import main; sys.exit(main())")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("kind", ["stamp", "records"])
def test_a_cache_file_linked_to_dev_zero_is_not_read(tree, kind):
    root = tree({"pkg/srt/m.py": VIOLATION})
    assert _run_limited(root).returncode == 1
    [path] = (root / CACHE).glob(f"*.{kind}")
    path.unlink()
    path.symlink_to("/dev/zero")
    done = _run_limited(root)
    assert done.returncode == 1 and "removed-module" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr


def test_a_fifo_in_place_of_a_cache_file_does_not_hang_the_run(tree):
    root = tree({"pkg/srt/m.py": VIOLATION})
    assert _run_limited(root).returncode == 1
    for path in (root / CACHE).glob("*.stamp"):
        path.unlink()
        os.mkfifo(path)
    done = _run_limited(root, timeout=30)
    assert done.returncode == 1 and "removed-module" in done.stdout and "Traceback" not in done.stderr


def test_an_oversized_cache_file_is_not_read(tree, monkeypatch):
    root = tree({"pkg/srt/m.py": VIOLATION})
    _run(root)
    read = []
    real = cache_mod.read_regular

    def spy(path, limit=None, dir_fd=None):
        data, st = real(path, limit, dir_fd)
        read.append(len(data))
        return data, st

    monkeypatch.setattr(cache_mod, "read_regular", spy)
    monkeypatch.setattr(cache_mod, "MAX_CACHE_BYTES", 64)
    result = _run(root)
    assert result.cache_status == "corrupt" and [f.rule for f in result.findings] == ["removed-module"]
    assert all(n <= 4 * cache_mod.KEY_BYTES for n in read)  # only the key was read


def test_a_committed_symlinked_cache_directory_is_not_written_through(tree, tmp_path_factory, capsys):
    root = tree({"pkg/srt/m.py": VIOLATION})
    outside = tmp_path_factory.mktemp("outside")
    (root / CACHE).symlink_to(outside, target_is_directory=True)
    result = _run(root)
    assert [f.rule for f in result.findings] == ["removed-module"]
    assert list(outside.iterdir()) == []
    assert "is a symlink" in result.warnings[0]


def test_cache_files_key_and_directories_are_private(tree):
    root = tree({"pkg/srt/m.py": VIOLATION})
    old = os.umask(0o022)  # the usual umask: what is private is so by the tool's choice
    try:
        _run(root)
    finally:
        os.umask(old)
    key_dir = Path(cache_mod.key_directory())
    assert stat.S_IMODE((key_dir / "key").stat().st_mode) == 0o600
    assert stat.S_IMODE(key_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((root / CACHE).stat().st_mode) == 0o700
    files = list((root / CACHE).iterdir())
    assert len(files) == 4 and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)


def test_a_cache_holds_plain_data_only(tree):
    # No pickle: nothing in a cache file names a class or a function to call.
    import marshal

    root = tree({"pkg/srt/m.py": VIOLATION})
    _run(root)
    stored = [p for p in (root / CACHE).iterdir() if p.suffix in (".records", ".stamp")]
    assert len(stored) == 2
    for p in stored:
        blob = p.read_bytes()
        assert blob.startswith(cache_mod.MAGIC)
        data = marshal.loads(blob[len(cache_mod.MAGIC) + 32:])

        def plain(v):
            if isinstance(v, dict):
                return all(plain(k) and plain(x) for k, x in v.items())
            if isinstance(v, (list, tuple)):
                return all(plain(x) for x in v)
            return v is None or isinstance(v, (str, bytes, int, float, bool))

        assert plain(data)


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
def test_a_key_directory_of_another_user_is_refused(tree, capsys):
    root = tree({"pkg/srt/m.py": VIOLATION})
    key_dir = Path(cache_mod.key_directory())
    key_dir.mkdir(mode=0o700)
    os.chown(key_dir, 65534, 65534)
    result = _run(root)
    assert [f.rule for f in result.findings] == ["removed-module"]
    assert "belongs to uid 65534" in result.warnings[0]
    assert not (key_dir / "key").exists()


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
def test_a_cache_file_of_another_user_is_not_trusted(tree):
    root = tree({"pkg/srt/m.py": VIOLATION})
    _run(root)
    for p in (root / CACHE).iterdir():
        os.chown(p, 65534, 65534)
    assert _run(root).cache_status == "corrupt"


def test_a_key_readable_by_others_is_refused(tree, capsys):
    root = tree({"pkg/srt/m.py": VIOLATION})
    _run(root)
    key = Path(cache_mod.key_directory()) / "key"
    os.chmod(key, 0o644)
    cache_mod._KEY = None
    result = _run(root)
    assert [f.rule for f in result.findings] == ["removed-module"]
    assert "readable by other users" in result.warnings[0]
