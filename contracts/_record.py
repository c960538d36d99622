"""Records: classes that behave as `@dataclass` makes them, without making them at import.

Every run, the warm one included, defines these classes (the configuration, the findings, the
report), and `dataclasses` compiles each class's methods from source when it is defined: `Record`
gives a class the same methods without that, which is a sixth of a warm run (figures:
docs/benchmarks.md, "Kept tricks"). A class lists its fields as annotations, in order, and
writes its `__init__`; `Record` gives it the rest, as `@dataclass` would with the same options:

- `repr` over the fields (`hidden`: the ones `field(repr=False)` would leave out), equality
  over all of them (`NotImplemented` for another class), and `__match_args__`;
- `frozen=True`: assigning or deleting an attribute raises `dataclasses.FrozenInstanceError`
  (the `__init__` fills `self.__dict__`), and the record hashes by its fields; otherwise it
  is unhashable, as a dataclass with `eq` is;
- `order=True`: `<`, `<=`, `>`, `>=` compare the fields in order, within the class.

`dataclasses.fields`, `asdict`, `astuple`, `replace` and `is_dataclass` work on a record:
`__dataclass_fields__` is made the first time something asks for it, from a real dataclass of
the same fields and `__init__` defaults. `tests/contracts/engine/test_records.py` compares every record
class with that dataclass. (The classes of the other paths -- `--fix`, `derive-map`, the
`missing_imports` index -- are plain dataclasses: they are defined only when used.)
"""

from __future__ import annotations

import operator
from operator import attrgetter


class Record:
    __slots__ = ()

    _fields: tuple[str, ...] = ()
    _shown: tuple[str, ...] = ()
    _frozen = False
    _order = False

    def __init_subclass__(cls, frozen: bool = False, order: bool = False, hidden: tuple[str, ...] = (),
                          **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        fields = tuple(cls.__dict__.get("__annotations__", {}))
        cls._fields = fields
        cls._shown = tuple(f for f in fields if f not in hidden)
        cls._frozen, cls._order = frozen, order
        # The fields' values as one tuple, at C speed; the methods below are closures over it
        # (made here, not compiled: sorting and hashing findings go through them).
        values = attrgetter(*fields) if len(fields) > 1 else \
            (lambda obj, _get=attrgetter(*fields): (_get(obj),)) if fields else (lambda obj: ())
        cls._values = staticmethod(values)
        cls.__match_args__ = fields
        # (A method the class writes itself is kept: `Finding` writes its hot ones out, as
        # `dataclass` would generate them, twice as fast as these closures.)
        own = cls.__dict__
        if "__eq__" not in own:
            cls.__eq__ = _comparison(values, operator.eq)
        if frozen:
            cls.__setattr__ = _frozen_setattr
            cls.__delattr__ = _frozen_delattr
            if own.get("__hash__") is None:  # (defining `__eq__` set it to None)
                cls.__hash__ = lambda self: hash(values(self))
        elif "__hash__" not in own:
            cls.__hash__ = None  # mutable and compared by value: unhashable, as a dataclass
        if order:
            for name, op in (("__lt__", operator.lt), ("__le__", operator.le), ("__gt__", operator.gt),
                             ("__ge__", operator.ge)):
                if name not in own:
                    setattr(cls, name, _comparison(values, op))
        cls.__dataclass_fields__ = _DataclassFields()

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(
            f"{name}={getattr(self, name)!r}" for name in self._shown) + ")"


def _comparison(values, op):
    def compare(self, other):
        if other.__class__ is self.__class__:
            return op(values(self), values(other))
        return NotImplemented

    return compare


def _frozen_setattr(self, name, value):
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self, name):
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot delete field {name!r}")


class _DataclassFields:
    """`__dataclass_fields__` of a record class, made on first use from `dataclass_twin`."""

    def __get__(self, obj, cls):
        fields = dataclass_twin(cls).__dataclass_fields__
        type.__setattr__(cls, "__dataclass_fields__", fields)  # (once: the class keeps them)
        return fields


def dataclass_twin(cls: type) -> type:
    """The dataclass `cls` stands for: the same name, fields (types as written), `__init__`
    defaults and options."""
    import dataclasses
    import inspect

    params = inspect.signature(cls.__init__).parameters
    annotations = cls.__dict__.get("__annotations__", {})
    spec = []
    for name in cls._fields:
        param = params.get(name)
        default = param.default if param is not None else inspect.Parameter.empty
        options = {"repr": name in cls._shown}
        if default is not inspect.Parameter.empty:
            options["default"] = default
        spec.append((name, annotations[name], dataclasses.field(**options)))
    return dataclasses.make_dataclass(cls.__name__, spec, frozen=cls._frozen, order=cls._order,
                                      namespace={"__qualname__": cls.__qualname__})
