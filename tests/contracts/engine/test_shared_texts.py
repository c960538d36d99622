"""The texts the readers of a forked run hand over through memory files (`engine/shared_texts.py`):
what a rule finds with them is what it finds with texts read in one process, and nothing is put
where it does not fit."""

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
from contracts.engine import shared_texts
from contracts.engine.shared_texts import SharedTexts, holding
from tests.contracts.conftest import REPO, run_cli


@pytest.fixture(params=["memory file", "temporary file"])
def backing(request, monkeypatch):
    """Each kind of file a reader's texts go to: a memory file (Linux), or an unlinked temporary
    file (elsewhere, or where no memory file can be made)."""
    if request.param == "temporary file":
        monkeypatch.delattr(os, "memfd_create", raising=False)
    elif not hasattr(os, "memfd_create"):
        pytest.skip("no memory files on this platform")
    return request.param


def test_each_reader_appends_to_its_own_file_and_the_texts_read_back_once_sealed(backing):
    shared = SharedTexts.for_readers(2, limit=10)
    assert shared is not None
    a = shared.put("a.py", b"hello", 0)
    b = shared.put("b.py", b"abc", 1)
    c = shared.put("c.py", b"xy", 0)
    # (a forked reader's memory file is map 0, this process's first block of memory the next)
    assert (a, b, c) == ((1, 0, 5), (0, 0, 3), (1, 5, 7))
    assert shared.put("big.py", b"x" * 11, 0) is None and shared.put("empty.py", b"", 1) is None
    shared.received({"a.py": a, "b.py": b})
    assert shared.text("a.py") is None  # not mapped yet: a reader may still be writing
    shared.sealed()
    assert shared.text("a.py") == b"hello" and shared.text("b.py") == b"abc"
    assert shared.text("c.py") is None  # (put, but by no reader that finished: read again)
    number, start, end = shared.span("a.py")
    assert shared.maps[number][start:end] == b"hello"


def test_sealed_closes_the_files_and_keeps_what_was_put(backing):
    shared = SharedTexts.for_readers(2, limit=10)
    fds = list(shared.fds)
    shared.received({"a.py": shared.put("a.py", b"hello", 1)})
    shared.sealed()
    shared.sealed()  # (once is enough; again is nothing)
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)
    assert shared.text("a.py") == b"hello" and len(shared.maps) == 1  # (reader 0 put nothing)


def test_no_file_to_be_had_is_no_sharing_and_leaks_none(monkeypatch):
    made = []

    def second_refused():  # (the first file is made, the second is not: the first is closed)
        if made:
            raise OSError(24, "Too many open files")
        made.append(os.open(os.devnull, os.O_RDONLY))
        return made[-1]

    monkeypatch.setattr(shared_texts, "_memory_file", second_refused)
    assert SharedTexts.for_readers(3, limit=10) is None
    with pytest.raises(OSError):
        os.fstat(made[0])


_WORDS = st.text("ab_", min_size=1, max_size=3).map(str.encode)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.text("ab_ ", min_size=1, max_size=12).map(str.encode), min_size=1, max_size=8),
       readers=st.lists(st.integers(0, 1), min_size=8, max_size=8),
       listed=st.lists(st.booleans(), min_size=8, max_size=8), word=_WORDS)
def test_one_pass_over_each_map_finds_the_texts_a_search_of_each_finds(texts, readers, listed, word):
    """`holding` (one `find` over a whole map) names the texts of its table that hold the word, as
    a search of each text does: not a text outside the table (another module's) that holds it,
    and not an occurrence that runs from one text into the next."""
    shared = SharedTexts.for_readers(2, limit=100)
    placed = {f"m{i}.py": shared.put(f"m{i}.py", text, reader) for i, (text, reader) in enumerate(zip(texts, readers))}
    shared.received(placed)
    shared.sealed()
    spans = [(rel, shared.span(rel)) for rel, on in zip(placed, listed) if on]
    expected = sorted(rel for rel, _span in spans if word in shared.text(rel))
    found = [rel for text, table in shared.tables(spans) for rel, _lo, _hi in holding(text, word, table)]
    assert sorted(found) == expected and len(found) == len(set(found))
    assert list(holding(b"", word, ([], [], []))) == []  # (an empty table: nothing to search)


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
made = []
original = model.SharedTexts.for_readers
model.SharedTexts.for_readers = staticmethod(lambda readers, limit: made.append(original(readers, limit)) or made[-1])
result = run(zero_config(["pkg"], sys.argv[1]), sys.argv[1], jobs=2)
print(" ".join(sorted({"child" if number == 0 else "here" for number, _, _ in made[0].slots.values()})))
for f in sorted(map(str, result.findings)):
    print(f)
"""


def test_the_readers_texts_come_through_their_maps(tmp_path):
    """Both readers (this process and its child) put texts, and what the rules find with them is
    what one process finds (in a process of its own: a thread another test left in this one
    would keep it from forking)."""
    _tree(tmp_path)
    proc = subprocess.run([sys.executable, "-c", _SPY, str(tmp_path)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    readers, *findings = proc.stdout.splitlines()
    assert readers == "child here" and findings  # (the child's memory file is map 0)
    assert findings == sorted(map(str, run(zero_config(["pkg"], str(tmp_path)), str(tmp_path), jobs=1).findings))
