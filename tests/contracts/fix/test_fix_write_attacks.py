"""Attacks on `--fix`'s write (issue 13, finding 1), each made deterministic with the writer's
hook between its read and its write: a symlink swapped in, an edit saved meanwhile, ownership,
attributes, hard links, a root package that leaves `--src`. Each test fails on the tool before
the hardening."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from contracts import check
from contracts import config as config_mod
from contracts.cli import main
from contracts.fix import apply as apply_mod
from contracts.fix import write
from tests.contracts.conftest import CLEAN_TREE, cwd, write_tree

CASE = "pkg/srt/case.py"
SOURCE = b"from pkg.jit_kernel.hicache import a\n"
FIXED = b"from pkg.kernels.ops.kvcache.hicache import a\n"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture(params=["renameat2-exchange", "rename"])
def mode(request, monkeypatch):
    """Both ways the writer can put the file in place."""
    if request.param == "rename":
        monkeypatch.setattr(write, "_EXCHANGE", None)
    elif write._EXCHANGE is None:
        pytest.skip("no renameat2 here")
    return request.param


def _fix(root: Path, *args: str) -> int:
    with cwd(root):
        return main(["--config", str(root / ".importlinter"), "--no-cache", "--fix", *args])


def _hook(monkeypatch, action):
    monkeypatch.setattr(write, "HOOK", lambda path: action(Path(path)))


def test_a_symlink_swapped_in_between_read_and_write_is_never_written_through(tree, tmp_path_factory,
                                                                              monkeypatch, capsys, mode):
    root = tree({CASE: SOURCE.decode()})
    victim = tmp_path_factory.mktemp("outside") / "root_script.py"
    victim.write_bytes(b"# a root-owned script; same size as the original ....\n"[: len(SOURCE)])
    before = victim.read_bytes()

    def swap(path: Path) -> None:
        path.unlink()
        path.symlink_to(victim)

    _hook(monkeypatch, swap)
    assert _fix(root) == 1
    assert victim.read_bytes() == before  # the target outside the tree is untouched
    assert os.path.islink(root / CASE) and os.readlink(root / CASE) == str(victim)  # theirs is kept
    assert "changed while it was being fixed" in capsys.readouterr().out


def test_an_edit_saved_in_place_while_fixing_is_kept_and_reported(tree, monkeypatch, capsys, mode):
    root = tree({CASE: SOURCE.decode()})
    edit = SOURCE + b"x = 1  # saved by the user meanwhile\n"
    _hook(monkeypatch, lambda path: path.write_bytes(edit))
    assert _fix(root) == 1
    assert (root / CASE).read_bytes() == edit
    assert "changed while it was being fixed; left unchanged (the change kept)" in capsys.readouterr().out


def test_an_edit_saved_by_rename_while_fixing_is_kept_and_reported(tree, monkeypatch, capsys, mode):
    root = tree({CASE: SOURCE.decode()})
    edit = SOURCE + b"y = 2\n"

    def save_like_an_editor(path: Path) -> None:
        tmp = path.with_name(".case.py.swp")
        tmp.write_bytes(edit)
        os.replace(tmp, path)

    _hook(monkeypatch, save_like_an_editor)
    assert _fix(root) == 1
    assert (root / CASE).read_bytes() == edit


def test_an_edit_in_the_last_instant_is_put_back(tree, monkeypatch, capsys):
    # Between the final check and the exchange: the exchange takes the edit out, sees it is not
    # the file it checked, and swaps it back.
    if write._EXCHANGE is None:
        pytest.skip("no renameat2 here")
    root = tree({CASE: SOURCE.decode()})
    edit = SOURCE + b"z = 3\n"
    real = write._exchange
    done = []

    def late_edit(dir_fd, a, b):
        if not done:
            done.append(1)
            (root / ".late").write_bytes(edit)
            os.replace(root / ".late", root / CASE)
        return real(dir_fd, a, b)

    monkeypatch.setattr(write, "_exchange", late_edit)
    assert _fix(root) == 1
    assert (root / CASE).read_bytes() == edit
    assert [p.name for p in (root / CASE).parent.iterdir() if "case" in p.name] == ["case.py"]


def test_a_hard_linked_file_is_reported_not_split(tree, capsys):
    root = tree({CASE: SOURCE.decode()})
    os.link(root / CASE, root / "pkg/srt/other_name.py")
    assert _fix(root, str(root / CASE)) == 1
    assert (root / CASE).read_bytes() == SOURCE and os.stat(root / CASE).st_nlink == 2
    assert "has 2 hard links" in capsys.readouterr().out


@pytest.mark.skipif(not IS_ROOT, reason="giving a file to another user needs root")
def test_root_keeps_the_owner_group_and_mode_of_a_users_file(tree, mode):
    root = tree({CASE: SOURCE.decode()})
    os.chown(root / CASE, 65534, 65534)
    os.chmod(root / CASE, 0o4750)  # setuid: kept only because the owner is kept
    assert _fix(root) == 0
    st = os.stat(root / CASE)
    assert (root / CASE).read_bytes() == FIXED
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o4750)


def test_extended_attributes_are_kept(tree, mode):
    root = tree({CASE: SOURCE.decode()})
    try:
        os.setxattr(root / CASE, "user.origin", b"reviewed")
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EPERM):
            pytest.skip("no user xattrs on this filesystem")
        raise
    assert _fix(root) == 0
    assert (root / CASE).read_bytes() == FIXED
    assert os.getxattr(root / CASE, "user.origin") == b"reviewed"


def test_an_attribute_that_cannot_be_kept_skips_the_file(tree, monkeypatch, capsys):
    root = tree({CASE: SOURCE.decode()})
    monkeypatch.setattr(os, "listxattr", lambda fd: ["security.example"])
    monkeypatch.setattr(os, "getxattr", lambda fd, name: b"x")

    def refuse(fd, name, value):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "setxattr", refuse)
    assert _fix(root) == 1
    assert (root / CASE).read_bytes() == SOURCE
    assert "extended attribute `security.example` cannot be kept" in capsys.readouterr().out


def test_a_root_package_that_is_a_symlink_out_of_src_is_not_rewritten(tmp_path, capsys):
    elsewhere = write_tree(tmp_path / "elsewhere", {k: v for k, v in CLEAN_TREE.items()}, config=None)
    (elsewhere / CASE).write_bytes(SOURCE)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    write_tree(checkout, {})
    (checkout / "pkg").symlink_to(elsewhere / "pkg", target_is_directory=True)
    assert _fix(checkout) == 1
    assert (elsewhere / CASE).read_bytes() == SOURCE
    assert "is a symlink to" in capsys.readouterr().out


def test_a_finding_outside_the_packages_and_importer_paths_is_never_written(tree, capsys):
    # A result naming any file (a forged cache could once do this) cannot make the fixer write it.
    root = tree({CASE: SOURCE.decode()})
    (root / "setup.py").write_bytes(SOURCE)
    cfg = config_mod.load(str(root / ".importlinter"))
    result = check.run(cfg, str(root))
    [finding] = [f for f in result.findings if f.path == CASE]
    forged = check.Result(1, 1, [finding.__class__(**{**finding.__dict__, "path": "setup.py"})])
    run = apply_mod.fix_findings(cfg, str(root), forged, write=True, notes=False)
    assert run.fixed == [] and "outside the root packages" in run.left[0][1]
    assert (root / "setup.py").read_bytes() == SOURCE


def test_a_newline_in_a_file_name_cannot_forge_diff_headers(tree, capsys):
    evil = "pkg/srt/x\n+++ b/pkg/srt/forged\n@@ -1 +1 @@\n.py"
    root = tree({evil: SOURCE.decode()})
    with cwd(root):
        main(["--config", str(root / ".importlinter"), "--no-cache", "--diff"])
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith(("---", "+++", "@@"))]
    assert len(headers) == 3, out  # one file: ---, +++, one hunk
    assert "forged" in headers[0] and "\\n" in headers[0]
