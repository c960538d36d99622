"""The texts forked readers hand back through one shared memory map (`engine/shared_texts.py`):
what a rule finds with them is what it finds with texts read in one process, a file that changed
size since the walk is read again, and nothing is put where it does not fit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.check import run
from contracts.config import zero_config
from contracts.engine.discover import SourceFile
from contracts.engine.shared_texts import SharedTexts, span_table
from tests.contracts.conftest import REPO, run_cli


def _file(rel: str, size: int) -> SourceFile:
    return SourceFile(f"/t/{rel}", rel, rel[:-3].replace("/", "."), False, 0, size)


@pytest.fixture(params=["memory file", "anonymous map"])
def backing(request, monkeypatch):
    """Each way the map is had: a memory file written with `pwrite` (Linux), or an anonymous map
    written through (elsewhere, or where no memory file can be made)."""
    if request.param == "anonymous map":
        monkeypatch.delattr(os, "memfd_create", raising=False)
    elif not hasattr(os, "memfd_create"):
        pytest.skip("no memory files on this platform")
    return request.param


def test_a_text_goes_only_in_a_slot_of_its_size_and_reads_back_once_received(backing):
    files = [_file("a.py", 5), _file("b.py", 3), _file("empty.py", 0), _file("big.py", 50)]
    shared = SharedTexts.for_files(files, limit=10)
    assert shared is not None and set(shared.slots) == {"a.py", "b.py"}  # (nothing to share, or over the limit)
    assert shared.put("a.py", b"hello")
    assert not shared.put("b.py", b"toolong")  # changed since the walk: read again where wanted
    assert not shared.put("big.py", b"x" * 50) and not shared.put("other.py", b"x")
    assert shared.text("a.py") is None  # not received yet: the reader may still be writing
    shared.received(["a.py"])
    assert shared.text("a.py") == b"hello" and shared.text("b.py") is None
    span = shared.span("a.py")
    assert shared.holds(b"ell", span) and not shared.holds(b"lo!", span)
    assert not shared.holds(b"hello", (span[0], span[1] - 1))  # (a span's end bounds the search)


def test_sealed_closes_the_memory_file_and_keeps_what_was_put(backing):
    shared = SharedTexts.for_files([_file("a.py", 5)], limit=10)
    assert shared.put("a.py", b"hello")
    fd = shared.fd
    assert (fd is None) == (backing == "anonymous map")
    shared.sealed()
    shared.sealed()  # (once is enough; again is nothing)
    if fd is not None:
        with pytest.raises(OSError):
            os.fstat(fd)
    shared.received(["a.py"])
    assert shared.text("a.py") == b"hello"


_WORDS = st.text("ab_", min_size=1, max_size=3).map(str.encode)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text("ab_ ", max_size=12).map(str.encode), min_size=1, max_size=8),
       listed=st.lists(st.booleans(), min_size=8, max_size=8), put=st.lists(st.booleans(), min_size=8, max_size=8),
       word=_WORDS)
def test_one_pass_over_the_map_finds_the_texts_a_search_of_each_finds(texts, listed, put, word):
    """`holding` (one `find` over the whole map) names the texts of its table that hold the word,
    as a search of each text does: not a text outside the table (another file's, or a slot never
    put) that holds it, and not an occurrence that runs from one text into the next."""
    files = [_file(f"m{i}.py", len(t)) for i, t in enumerate(texts)]
    shared = SharedTexts.for_files(files, limit=100)
    if shared is None:  # (every text empty)
        return
    for f, text, keep in zip(files, texts, put):
        if keep and f.rel in shared.slots:
            shared.put(f.rel, text)
    shared.received([f.rel for f in files if f.rel in shared.slots])
    spans = [(f.rel, shared.span(f.rel)) for f, on in zip(files, listed) if on and f.rel in shared.slots]
    expected = [rel for rel, span in sorted(spans, key=lambda item: item[1]) if shared.holds(word, span)]
    assert [rel for rel, _lo, _hi in shared.holding(word, span_table(spans))] == expected


def test_no_slot_at_all_is_no_map():
    assert SharedTexts.for_files([_file("empty.py", 0)], limit=10) is None


def _tree(root) -> None:
    """Enough files to fork; names whose homes are many modules (a search of every text for
    each), a name defined once (a proven move), names defined nowhere."""
    files = {"pkg/__init__.py": "", "pkg/core.py": "def present():\n    pass\n"}
    for i in range(450):
        files[f"pkg/m{i:03}.py"] = (
            "from pkg.core import present, moved_away\n" if i % 9 == 0 else
            "from pkg.gone import spread_out\n" if i % 9 == 1 else
            "def spread_out():\n    return 1\n" if i % 9 == 2 else
            "import pkg.nowhere\n" if i % 9 == 3 else
            "x = 1\n" * (i % 40))
    files["pkg/home.py"] = "class moved_away:\n    pass\n"
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def test_texts_from_the_map_give_what_one_process_gives(tmp_path):
    _tree(tmp_path)
    out = {}
    for jobs in ("1", "2"):
        proc = run_cli(["--src", str(tmp_path), "--root-package", "pkg", "--no-cache", "--format", "json",
                        "--jobs", jobs, "-v"], tmp_path)
        assert proc.returncode == 1 and f"in {jobs} process" in proc.stderr, proc.stderr
        out[jobs] = proc.stdout
    assert out["1"] == out["2"]
    messages = [f["message"] for f in json.loads(out["1"])["findings"]]
    assert any("moved? `pkg.home` defines `moved_away`" in m for m in messages)
    assert any("several modules define `spread_out`" in m for m in messages)


_SPY = """
import sys
from contracts.check import run
from contracts.config import zero_config
from contracts.engine import model
from contracts.engine.discover import SourceFile
made = []
original = model.SharedTexts.for_files
model.SharedTexts.for_files = staticmethod(lambda files, limit: made.append(original(files, limit)) or made[-1])
if sys.argv[2] == "stale":  # every file's size as the walk saw it, one byte off
    walk = model.discover
    def stale(*args, **kwargs):
        found = walk(*args, **kwargs)
        found.files = [SourceFile(f.path, f.rel, f.module, f.is_package, f.mtime_ns, f.size + 1, f.ctime_ns)
                       for f in found.files]
        found.__dict__.pop("by_module", None)  # (made again from the new list)
        return found
    model.discover = stale
result = run(zero_config(["pkg"], sys.argv[1]), sys.argv[1], jobs=2)
print(len(made[0].filled) if made and made[0] is not None else -1)
for f in sorted(map(str, result.findings)):
    print(f)
"""


def _forked(root, mode: str) -> tuple[int, list[str]]:
    """(texts that came back in the map, the findings) of a run in 2 processes, in a process of
    its own (a thread another test left in this one would keep it from forking)."""
    proc = subprocess.run([sys.executable, "-c", _SPY, str(root), mode], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    filled, *findings = proc.stdout.splitlines()
    return int(filled), findings


def test_the_forked_readers_texts_come_through_the_map(tmp_path):
    _tree(tmp_path)
    filled, findings = _forked(tmp_path, "spy")
    assert filled > 0 and findings
    assert findings == sorted(map(str, run(zero_config(["pkg"], str(tmp_path)), str(tmp_path), jobs=1).findings))


def test_a_file_that_changed_size_since_the_walk_is_read_again(tmp_path):
    _tree(tmp_path)
    filled, findings = _forked(tmp_path, "stale")
    assert filled == 0  # no text fits its slot: each is read again where it is wanted
    assert findings == sorted(map(str, run(zero_config(["pkg"], str(tmp_path)), str(tmp_path), jobs=1).findings))
