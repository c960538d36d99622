"""Both cores: grimp's scans on a second thread, and the files split over forked processes,
give what one thread gives; `lint-imports --no-cache` leaves this tool's cache alone too."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts import config as config_mod
from contracts.check import run
from contracts.engine import model as model_mod
from contracts.engine import reading as reading_mod
from contracts.engine import workers
from contracts.engine.import_lines import Statement, StatementReader, packed, unpacked
from tests.contracts.conftest import REPO, run_cli


class _Serial(reading_mod._Background):
    """The scans in this thread, in the order they are asked for: the serial run."""

    def submit(self, files, decoded, syntax_only=False, into=None, tag=None) -> None:
        if files:
            files = list(files)
            self.asked += 1
            self.done.append((True, files, self.scanner.scan(files, frozenset(decoded), syntax_only) if into is None
                              else self.scanner.scan_into(files, into, frozenset(decoded)), tag))


def _generated(tree) -> dict:
    """Enough files for many batches: group imports, chains, kernels importing the runtime,
    removed references, a syntax error, a file grimp's scanner cannot read (a declared encoding)."""
    files = {}
    groups = ["kvcache", "layernorm", "gemm"]
    for i in range(60):
        g, h = groups[i % 3], groups[(i + 1) % 3]
        files[f"pkg/kernels/ops/{g}/op{i}.py"] = (
            f"from pkg.kernels.ops.{h} import op{(i + 1) % 60}\n" if i % 4 == 0 else
            f"from pkg.helpers{i % 5} import x\n" if i % 4 == 1 else
            "def lazy():\n    from pkg.srt.utils import X\n" if i % 4 == 2 else "from pkg.kernels.jit import use_triton\n")
    for i in range(5):
        files[f"pkg/helpers{i}.py"] = f"from pkg.kernels.ops.{groups[i % 3]}._private import y\nx = 1\n"
    for i in range(60):
        files[f"pkg/srt/m{i}.py"] = (
            "from pkg.jit_kernel.hicache import transfer\n" if i % 3 == 0 else
            "import pkg.jit_kernel.norm as n\nTARGET = 'pkg.jit_kernel.utils:f'\n" if i % 3 == 1 else "import os\n")
    files["pkg/srt/utils.py"] = "X = 1\n"
    for g in groups:
        files[f"pkg/kernels/ops/{g}/_private.py"] = "y = 1\n"
    files["pkg/srt/broken.py"] = "from pkg.jit_kernel import hicache\ndef f(:\n"
    files["pkg/srt/latin.py"] = "# -*- coding: latin-1 -*-\nimport pkg.jit_kernel.hicache\n"
    return files


def _summary(result) -> list:
    return sorted((f.path, f.line, f.col, f.rule, f.imported, f.message) for f in result.findings)


def test_threaded_scan_equals_the_serial_one(tree, monkeypatch):
    root = tree(_generated(tree))
    cfg = config_mod.load(str(root / ".importlinter"))
    monkeypatch.setattr(reading_mod, "_BATCH", 7)  # many batches, submitted while files are read
    monkeypatch.setattr(reading_mod, "_BATCH_BYTES", 1 << 10)
    threaded = _summary(run(cfg, str(root)))
    monkeypatch.setattr(reading_mod, "_Background", _Serial)
    serial = _summary(run(cfg, str(root)))
    assert threaded == serial
    rules = {f[3] for f in threaded}
    assert {"removed-module", "group-boundary", "private-import", "layer", "parse-error"} <= rules


def test_lint_imports_no_cache_turns_off_this_tools_cache_too(tree):
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("lint-imports is not installed")
    root = tree({"pkg/srt/m.py": "import pkg.jit_kernel.hicache\n"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(root)]), COLUMNS="400")
    proc = subprocess.run([exe, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "pkg/srt/m.py:1:1: removed-module" in proc.stdout, proc.stdout + proc.stderr
    assert not (root / ".namespace_lint_cache").exists()
    proc = subprocess.run([exe], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and (root / ".namespace_lint_cache").exists()


def _cli(root, *args, env_extra=None):
    # (an empty NAMESPACE_LINT_JOBS is automatic: the caller's own setting does not leak in)
    return run_cli(["--src", str(root), "--config", str(root / ".importlinter"), "--no-cache", *args], root,
                   env={workers.ENV: "", "COLUMNS": "400", **(env_extra or {})})


def _many(tree, copies: int = 4):
    """`_generated` several times over (one package per copy): more files than one chunk."""
    files = dict(_generated(tree))
    for k in range(1, copies):
        for rel, text in _generated(tree).items():
            if rel.startswith("pkg/srt/m"):
                files[rel.replace("pkg/srt/", f"pkg/srt/c{k}/")] = text
    return files


def test_forked_processes_give_what_one_process_gives(tree):
    root = tree(_many(tree))
    one = _cli(root, "--jobs", "1", "--format", "json", "-v")
    assert "in 1 process" in one.stderr, one.stderr
    assert "one process: one process asked for (--jobs 1)" in one.stderr  # -v says why it stayed serial
    automatic = _cli(root, "--format", "json", "-v")
    assert "one process: " in automatic.stderr and "fewer than the 400" in automatic.stderr, automatic.stderr
    for args, env in ((("--jobs", "2"), None), (("--jobs", "3"), None), ((), {workers.ENV: "2"})):
        many = _cli(root, *args, "--format", "json", "-v", env_extra=env)
        assert many.returncode == one.returncode == 1, many.stderr
        assert " processes " in many.stderr, many.stderr  # it did fork
        assert "one process: " not in many.stderr
        assert many.stdout == one.stdout
    rules = {f["rule"] for f in json.loads(one.stdout)["findings"]}
    assert {"removed-module", "group-boundary", "private-import", "layer", "parse-error"} <= rules


def test_jobs_must_be_a_number(tree):
    root = tree({"pkg/srt/m.py": "x = 1\n"})
    proc = _cli(root, "--jobs", "two")
    assert proc.returncode == 2 and "--jobs" in proc.stderr and "Traceback" not in proc.stderr


def _files(n):
    return [model_mod.SourceFile(f"/t/m{i}.py", f"m{i}.py", f"m{i}", False, 0, 10 * i) for i in range(n)]


def _names(context, chunks):
    return [f.rel for chunk in chunks for f in chunk]


def test_every_chunk_is_scanned_once_by_someone():
    files = _files(500)
    parts = workers.map_parts(_names, None, files, 2)
    seen = [rel for part in parts for rel in part]
    assert sorted(seen) == sorted(f.rel for f in files)  # each file once, whoever took it


def test_more_jobs_than_chunks_forks_one_process_per_chunk_at_most(monkeypatch):
    forks = []
    real_fork = workers._fork

    def counting(*args):
        forks.append(1)
        return real_fork(*args)

    monkeypatch.setattr(workers, "_fork", counting)
    files = _files(3 * workers.CHUNK_FILES)  # three chunks
    parts = workers.map_parts(_names, None, files, 10_000)
    assert len(forks) == 2  # two children and this process, not one per file asked for
    assert sorted(rel for part in parts for rel in part) == sorted(f.rel for f in files)


def test_own_files_go_to_this_process_first_and_to_no_other():
    files = _files(500)
    own = {f.rel for f in files[100:180]}  # (not the heaviest: chunks of the rest go heaviest first)
    parent = os.getpid()

    def scan(context, chunks, lead=0):
        taken = [[f.rel for f in chunk] for chunk in chunks]
        return (os.getpid() == parent, lead, taken)

    for n in (1, 2):
        parts = workers.map_parts(scan, None, files, n, weight=lambda f: f.size, own=lambda f: f.rel in own)
        mine, lead, taken = parts[0]
        assert mine and lead == -(-len(own) // workers.CHUNK_FILES)
        assert {rel for chunk in taken[:lead] for rel in chunk} == own  # its own chunks, first
        assert not own & {rel for chunk in taken[lead:] for rel in chunk}
        assert all(not own & {rel for chunk in t for rel in chunk} for _, _, t in parts[1:])  # nobody else's
        seen = [rel for _, _, t in parts for chunk in t for rel in chunk]
        assert sorted(seen) == sorted(f.rel for f in files)
        if n == 1:
            assert len(taken) > lead + 1  # one process still reads the rest in several chunks


def test_own_files_heavier_than_a_share_are_shared_like_the_rest():
    files = _files(500)
    parent = os.getpid()

    def scan(context, chunks, lead=0):
        return (os.getpid() == parent, lead, [f.rel for chunk in chunks for f in chunk])

    heavy = {f.rel for f in files[300:]}  # (sizes grow with the index: most of the weight)
    parts = workers.map_parts(scan, None, files, 2, weight=lambda f: f.size, own=lambda f: f.rel in heavy)
    assert parts[0][0] and parts[0][1] == 0
    assert sorted(rel for _, _, t in parts for rel in t) == sorted(f.rel for f in files)
    one = workers.map_parts(scan, None, files, 1, weight=lambda f: f.size, own=lambda f: f.rel in heavy)
    assert one[0][1] > 0  # alone, it reads them first all the same


def test_a_failing_child_costs_only_time():
    parent = os.getpid()

    def scan(context, chunks):
        names = _names(context, chunks)
        if os.getpid() != parent:
            raise RuntimeError("the child fails after taking its chunks")
        return names

    files = _files(500)
    parts = workers.map_parts(scan, None, files, 2)
    assert sorted(rel for part in parts for rel in part) == sorted(f.rel for f in files)


def _gone(pid: int) -> bool:
    """Is `pid` no child of this process any more (reaped), after at most a few seconds?"""
    for _ in range(500):
        workers._reap()
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if pid not in workers._EXITING:  # (reaped, its number not yet taken by another process)
            return True
        time.sleep(0.01)
    return False


def test_a_child_that_answered_is_reaped_and_leaves_no_zombie():
    def scan(context, chunks):
        return [os.getpid(), *_names(context, chunks)]

    parts = workers.map_parts(scan, None, _files(500), 2)
    child = next(part[0] for part in parts if part[0] != os.getpid())
    assert _gone(child)
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # reaped: nothing is left to wait for


def test_no_child_outlives_the_run():
    """A child still leaving when the run ends is waited for at exit: none is left behind, and
    the time it took counts among the process's children's (what `time` and the benchmarks read)."""
    code = (
        "import os, sys, time\n"
        "from contracts.engine import workers\n"
        "answer = workers._child_main\n"
        "def slow(*args):\n"
        "    answer(*args)\n"
        "    time.sleep(0.5)  # still there after its answer\n"
        "workers._child_main = slow\n"
        "files = [type('F', (), {'rel': str(i)})() for i in range(500)]\n"
        "parts = workers.map_parts(lambda c, chunks: [os.getpid()] + [f.rel for ch in chunks for f in ch], None, files, 2)\n"
        "print(next(p[0] for p in parts if p[0] != os.getpid()))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    child = int(done.stdout.split()[-1])
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)  # gone when its parent was: reaped, not left to run on


def test_an_error_here_stops_the_children_it_forked(tmp_path):
    """The children are this run's: where this process fails (an error, ^C), none is left
    running on its own."""
    parent = os.getpid()
    pids = tmp_path / "pids"

    def scan(context, chunks):
        if os.getpid() == parent:
            while not pids.exists():  # (the child has started)
                time.sleep(0.01)
            raise KeyboardInterrupt
        (tmp_path / "pid.tmp").write_text(str(os.getpid()))
        os.replace(tmp_path / "pid.tmp", pids)  # (whole when it appears)
        time.sleep(60)  # a child that would run on
        return []

    with pytest.raises(KeyboardInterrupt):
        workers.map_parts(scan, None, _files(500), 2)
    child = int(pids.read_text())
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # killed and reaped before the error went on
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


def test_no_fork_where_it_is_unsafe(monkeypatch):
    monkeypatch.setattr(workers, "_native_threads", lambda: 2)
    assert workers.jobs(2, 10_000) == 1  # a native thread pool (grimp's) would not survive a fork
    assert "2 native threads" in workers.serial_reason()
    monkeypatch.setattr(workers, "_native_threads", lambda: None)
    assert workers.jobs(2, 10_000) == 1  # a platform that does not show them
    monkeypatch.setattr(workers, "_native_threads", lambda: 0)
    assert workers.jobs(1, 10_000) == 1 and "--jobs 1" in workers.serial_reason()
    assert workers.jobs(2, 10_000) == 2 and workers.serial_reason() is None
    monkeypatch.setattr(workers, "cores", lambda: 2)
    assert workers.jobs(0, workers.MIN_FILES - 1) == 1  # too few files to pay for a fork
    assert "fewer than the" in workers.serial_reason()
    assert workers.jobs(0, workers.MIN_FILES) == 2


def test_native_threads_are_counted_whoever_started_them():
    """Fork safety does not depend on which modules are loaded: a thread this process runs outside
    Python's `threading` (a native library's pool: here grimp's, once it has scanned) is seen."""
    code = (
        "import os, sys\n"
        "from contracts.engine import workers\n"
        "assert workers.fork_is_safe(), workers.fork_problem()\n"
        "import grimp\n"
        "assert workers.fork_is_safe(), workers.fork_problem()  # loaded, no thread started yet\n"
        "grimp.build_graph('json', cache_dir=None)  # its scanner's thread pool starts\n"
        "print(workers.fork_problem())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    if os.path.isdir("/proc/self/task") and (os.cpu_count() or 1) > 1:
        assert "native thread" in proc.stdout, proc.stdout


def test_missing_imports_read_in_workers_gives_what_one_process_gives(tmp_path):
    """The text pass of `missing_imports` runs where the files are read (in the workers): the
    statements travel back, the texts do not; a file only `ast` can read (a lone carriage
    return) comes back marked so."""
    files = {"pkg/__init__.py": "", "pkg/core.py": "def present():\n    pass\nclass Kept:\n    pass\n"}
    for i in range(150):
        files[f"pkg/m{i}.py"] = (
            "from pkg.core import present, absent\n" if i % 5 == 0 else
            "import pkg.gone.module\n" if i % 5 == 1 else
            "from pkg.core import Kept\r x = 1\n" if i % 5 == 2 else  # a lone CR: the whole file to ast
            f"from pkg.m{(i + 1) % 150} import *\n" if i % 5 == 3 else
            "def f():\n    from pkg import nothing_here\n")
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    out = {}
    for jobs in ("1", "2"):
        proc = run_cli(["--src", str(tmp_path), "--root-package", "pkg", "--no-cache", "--format", "json",
                        "--jobs", jobs, "-v"], tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert f"in {jobs} process" in proc.stderr, proc.stderr
        out[jobs] = proc.stdout
    assert out["1"] == out["2"]
    rules = [f["rule"] for f in json.loads(out["1"])["findings"]]
    assert rules.count("missing-name") >= 30 and rules.count("missing-module") >= 30


_LINES = st.sampled_from([
    "from pkg.a import b", "import pkg.x.y as z, pkg.w", "from . import (a,\n    b as c,\n)", "from ..m import *",
    "    from pkg.b import c  # indented", "x = 'pkg.mod:attr'", 'importlib.import_module("pkg.q")',
    "from pkg import (\n  a,  # one\n  b,\n)", "lazy from pkg.l import m", "import os", "from other import *",
    "if x: import pkg.after_colon", "y = 1"])


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_LINES, max_size=12))
def test_packed_statements_come_back_as_they_were_read(lines):
    """What a worker sends of a file's statements (`packed`) is made again field for field, as
    `Statement`s (`unpacked`); statements read in this process are taken as they are."""
    statements, _ = StatementReader(("pkg",)).read("\n".join(lines).encode())
    back = unpacked(packed(statements))
    assert back == statements and all(type(s) is Statement for s in back)
    assert unpacked(statements) is statements


def test_the_progress_line_does_not_keep_a_terminal_run_on_one_core(tree):
    """On a terminal the progress line runs a thread; it writes only under a lock held around a
    fork, so the run still forks (and the line is never half written when a child starts)."""
    root = tree(_many(tree))
    code = ("import sys; from contracts.terminal import Progress; from contracts.engine import workers\n"
            "p = Progress(enabled=True, stream=open('/dev/null', 'w'), delay=0.0)\n"
            "with p.phase('checking'):\n"
            "    assert workers.fork_is_safe(), 'the progress thread blocks the fork'\n"
            "    from contracts.cli import main\n"
            f"    code = main(['--src', {str(root)!r}, '--config', {str(root / '.importlinter')!r}, '--no-cache',"
            " '--jobs', '2', '-v', '--format', 'json'])\n"
            "sys.exit(code)\n")
    env = {k: v for k, v in os.environ.items() if k != workers.ENV}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "in 2 processes" in proc.stderr, proc.stderr[-3000:]
    one = _cli(root, "--jobs", "1", "--format", "json")
    assert proc.stdout == one.stdout


def test_an_unknown_thread_keeps_the_run_in_one_process(monkeypatch):
    import threading

    monkeypatch.setattr(workers, "_native_threads", lambda: 0)
    monkeypatch.setattr(workers.threading, "enumerate", lambda: [threading.current_thread()])
    assert workers.fork_is_safe()  # alone: it may fork
    monkeypatch.undo()
    monkeypatch.setattr(workers, "_native_threads", lambda: 0)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not workers.fork_is_safe()
        assert workers.jobs(2, 10_000) == 1
    finally:
        stop.set()
        thread.join()


def test_no_pipe_or_no_fork_means_one_process(monkeypatch):
    files = _files(500)

    def refuse(*args):
        raise OSError(24, "Too many open files")

    for name in ("pipe", "fork"):
        with monkeypatch.context() as m:
            m.setattr(workers.os, name, refuse)
            parts = workers.map_parts(_names, None, files, 2)
        assert sorted(rel for part in parts for rel in part) == sorted(f.rel for f in files)


def test_files_with_cached_records_do_not_count_for_a_fork(monkeypatch):
    monkeypatch.setattr(workers, "fork_problem", lambda: None)
    monkeypatch.setattr(workers, "cores", lambda: 2)
    assert workers.jobs(0, 5_000, new=5_000) == 2  # cold
    assert workers.jobs(0, 5_000, new=10) == 1  # a fresh copy: every record there, told by hashes
    assert workers.jobs(2, 5_000, new=10) == 2  # asked for


def test_a_bad_jobs_variable_is_a_usage_error(tree):
    root = tree({"pkg/srt/m.py": "x = 1\n"})
    proc = _cli(root, env_extra={workers.ENV: "two"})
    assert proc.returncode == 2 and "NAMESPACE_LINT_JOBS='two'" in proc.stderr and "Traceback" not in proc.stderr


def test_weighed_chunks_hold_every_file_once_the_heaviest_first():
    files = [model_mod.SourceFile(f"/t/m{i}.py", f"m{i}.py", f"m{i}", False, 0, (i * 7919) % 1000 * 100)
             for i in range(3000)]
    pieces = workers.chunks(files, 2, weight=lambda f: f.size + 2048)
    assert sorted(f.rel for c in pieces for f in c) == sorted(f.rel for f in files)
    sizes = [f.size for c in pieces for f in c]
    assert sizes == sorted(sizes, reverse=True)  # the heaviest files are taken first
    assert len(pieces[0]) < len(pieces[-1])  # a chunk of heavy files holds fewer of them
    assert len(pieces) <= workers.MAX_CHUNKS
    weights = [sum(f.size + 2048 for f in c) for c in pieces[:-1]]
    assert max(weights) < 2 * min(weights)
    assert workers.chunks(files, 1, weight=lambda f: f.size) == [files]  # one process: walk order
    many = [model_mod.SourceFile(f"/t/m{i}.py", f"m{i}.py", f"m{i}", False, 0, 1) for i in range(20_000)]
    assert len(workers.chunks(many, 2, weight=lambda f: 1)) <= workers.MAX_CHUNKS
    assert workers.chunks(many, 2, weight=lambda f: 0) == workers.chunks(many, 2)  # (not a chunk a file)


def test_a_run_collects_no_garbage_and_leaves_the_collector_as_it_found_it(tree, monkeypatch):
    import gc

    root = tree({"pkg/srt/m.py": "import pkg.jit_kernel.hicache\n"})
    cfg = config_mod.load(str(root / ".importlinter"))
    seen = []
    real = model_mod.build_model

    def recording(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(model_mod, "build_model", recording)
    was = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            assert _summary(run(cfg, str(root)))
            assert gc.isenabled() is state
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [False, False]


def test_what_a_run_made_is_old_after_it_and_what_the_caller_froze_stays_frozen(tree):
    """The run's objects go to the oldest generation as it ends (the first collection after it
    has nothing young to walk); objects the caller froze itself stay frozen."""
    import gc

    root = tree({"pkg/srt/m.py": "import pkg.jit_kernel.hicache\n"})
    cfg = config_mod.load(str(root / ".importlinter"))
    if not gc.isenabled():
        pytest.skip("the collector is off in this process")
    result = run(cfg, str(root))
    young = gc.get_objects(generation=0)
    assert result not in young and not any(f in young for f in result.findings)
    assert len(young) < 200, len(young)
    gc.freeze()
    frozen = gc.get_freeze_count()
    try:
        run(cfg, str(root))
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()
