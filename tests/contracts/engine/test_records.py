"""The record classes (`contracts/_record.py`) behave as the dataclasses they stand for, and a
warm run defines no dataclass at all (the 16 ms they cost it is the reason for them)."""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys

import pytest

import contracts.check
import contracts.cli
import contracts.engine.importers
import contracts.renderers  # noqa: F401 - defines records
from contracts._record import Record, dataclass_twin
from tests.contracts.conftest import CLEAN_TREE, REPO, write_tree


def _records() -> list[type]:
    found, todo = [], list(Record.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: (c.__module__, c.__qualname__))


RECORDS = _records()


def test_the_classes_every_run_defines_are_records():
    names = {f"{c.__module__}.{c.__qualname__}" for c in RECORDS}
    assert {"contracts.findings.Finding", "contracts.config.Config", "contracts.config.RemovedSpec",
            "contracts.engine.records.ScanPlan", "contracts.check.Result", "contracts.renderers.Report"} <= names


def _values(cls: type, salt: str) -> dict:
    """A value for every `__init__` argument (hashable, distinct per field and salt), hidden
    fields left to their default (the record derives them)."""
    out = {}
    for name in cls._fields:
        if name in cls._shown:
            out[name] = (name, salt)
    return out


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_init_takes_every_field_in_order_and_keeps_it(cls):
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    assert params == list(cls._fields)
    values = _values(cls, "a")
    record = cls(**values)
    assert {name: getattr(record, name) for name in values} == values


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__qualname__)
def test_a_record_behaves_as_its_dataclass(cls):
    twin = dataclass_twin(cls)
    a, a2, b = (_values(cls, s) for s in ("a", "a", "b"))
    mine = [cls(**a), cls(**a2), cls(**b)]
    theirs = [twin(**a), twin(**a2), twin(**b)]
    assert [repr(x) for x in mine] == [repr(x) for x in theirs]
    assert [[x == y for y in mine] for x in mine] == [[x == y for y in theirs] for x in theirs]
    assert (mine[0] == theirs[0]) is False  # another class: never equal
    assert mine[0].__eq__(object()) is NotImplemented
    assert cls.__match_args__ == twin.__match_args__
    if cls._frozen:
        assert hash(mine[0]) == hash(mine[1])
        for record, other in ((mine[0], theirs[0]), ):
            for action in (lambda r: setattr(r, cls._fields[0], 1), lambda r: delattr(r, cls._fields[0])):
                with pytest.raises(dataclasses.FrozenInstanceError):
                    action(record)
                with pytest.raises(dataclasses.FrozenInstanceError):
                    action(other)
    else:
        with pytest.raises(TypeError):
            hash(mine[0])
        with pytest.raises(TypeError):
            hash(theirs[0])
    if cls._order:
        assert [[x < y, x <= y, x > y, x >= y] for x in mine for y in mine] == \
               [[x < y, x <= y, x > y, x >= y] for x in theirs for y in theirs]
    else:
        with pytest.raises(TypeError):
            mine[0] < mine[2]  # noqa: B015
    # What the dataclasses functions see of it.
    assert [f.name for f in dataclasses.fields(mine[0])] == [f.name for f in dataclasses.fields(theirs[0])]
    assert dataclasses.is_dataclass(mine[0]) and dataclasses.is_dataclass(cls)
    shown = [i for i, name in enumerate(cls._fields) if name in cls._shown]  # (hidden ones: derived)
    assert [dataclasses.astuple(mine[0])[i] for i in shown] == [dataclasses.astuple(theirs[0])[i] for i in shown]
    assert {k: v for k, v in dataclasses.asdict(mine[0]).items() if k in cls._shown} == \
           {k: v for k, v in dataclasses.asdict(theirs[0]).items() if k in cls._shown}
    field = cls._shown[0]
    changed = dataclasses.replace(mine[0], **{field: ("z",)})
    assert type(changed) is cls and getattr(changed, field) == ("z",)


def test_findings_sort_as_their_dataclass_sorts_them():
    from contracts.findings import Finding

    twin = dataclass_twin(Finding)
    rows = [("b.py", 2, 1, "r", "i", "m", "x", "y"), ("a.py", 9, 1, "r", "i", "m", "x", "y"),
            ("b.py", 1, 5, "r", "i", "m", "x", "z"), ("b.py", 1, 5, "r", "i", "m", "x", "y"),
            ("b.py", 1, 5, "q", "i", "m", "x", "y")]
    assert [f.as_tuple() for f in sorted(Finding(*r) for r in rows)] == \
           [dataclasses.astuple(t) for t in sorted(twin(*r) for r in rows)]


def test_a_warm_run_defines_no_dataclass(tmp_path):
    """Answered from the cache, a run imports neither `dataclasses` nor `inspect`."""
    root = write_tree(tmp_path / "t", CLEAN_TREE)
    code = ("import sys; from contracts.cli import main; main(sys.argv[1:]); "
            "print('LOADED', sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))")
    args = ["--config", str(root / ".importlinter"), "--format", "json", "--cache-dir", str(tmp_path / "c")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.run([sys.executable, "-c", code, *args], cwd=root, capture_output=True, text=True, env=env)
    warm = subprocess.run([sys.executable, "-c", code, *args, "-v"], cwd=root, capture_output=True, text=True, env=env)
    assert "cache warm" in warm.stderr, warm.stderr
    assert first.stdout.splitlines()[-1] != "LOADED []"  # a full build does define some (grimp's)
    assert warm.stdout.splitlines()[-1] == "LOADED []"


def test_a_run_without_a_cache_loads_no_hashing(tmp_path):
    """`hashlib` and `hmac` (OpenSSL: 3 ms of a cold run's start) are loaded by a run that keeps
    a cache, and by no other; but for `hashlib` where grimp is imported (its package's
    `__init__` imports it, and this tool imports grimp as any user does: `grimp_adapter.py`)."""
    root = write_tree(tmp_path / "t", CLEAN_TREE)
    code = ("import sys; from contracts.cli import main; main(sys.argv[1:]); "
            "print('LOADED', sorted(m for m in ('hashlib', 'hmac', '_hashlib') if m in sys.modules), "
            "'grimp' in sys.modules)")
    args = ["--config", str(root / ".importlinter"), "--format", "json"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cold = subprocess.run([sys.executable, "-c", code, *args, "--no-cache"], cwd=root, capture_output=True,
                          text=True, env=env)
    cached = subprocess.run([sys.executable, "-c", code, *args, "--cache-dir", str(tmp_path / "c")], cwd=root,
                            capture_output=True, text=True, env=env)
    assert cold.stdout.splitlines()[-1] in ("LOADED [] False", "LOADED ['_hashlib', 'hashlib'] True"), \
        cold.stdout + cold.stderr
    assert cached.stdout.splitlines()[-1].startswith("LOADED ['_hashlib', 'hashlib', 'hmac']"), \
        cached.stdout + cached.stderr


def test_a_file_record_travels_as_plain_values():
    """The cache (`marshal`) and a worker's pipe hold a `FileRecord` as a plain list; it comes
    back equal, and a part sent by a worker gives back the records it made."""
    import marshal
    import pickle

    from contracts.engine.file_record import FileRecord
    from contracts.engine.reading import Part
    from contracts.engine.records import AST, GRAPH

    rec = FileRecord(1, 2, 3, b"digest", AST | GRAPH, [(1, 0, 1, "import", "pkg.a", None, None, 0, False, False,
                                                        None, False, False)], None, [("pkg.a", 1, "import pkg.a")],
                     {1: ["a"]}, 4.5)
    assert FileRecord.of(marshal.loads(marshal.dumps(rec.stored()))) == rec
    assert rec.semantic() == FileRecord.of(rec.stored()).restamped(9, 9, 9, 9.0).semantic()
    part = Part(records={"pkg/a.py": rec}, statements={"pkg/a.py": ()}, texts={"pkg/a.py": b"import pkg.a\n"})
    part.before_transfer()
    sent = pickle.loads(pickle.dumps(part))
    assert sent.received().records == {"pkg/a.py": rec} and sent.texts == {}
