"""Dotted-prefix lookups whose cost does not grow with the number of prefixes.

A module `a.b.c.d` is under a prefix only if one of its own ancestors-or-self (`a.b.c.d`,
`a.b.c`, `a.b`, `a`) is that prefix, so every question is a handful of dictionary lookups on
the module's name parts, however many prefixes there are: a real removal set names hundreds of
prefixes, and a scan of each per reference grows with them (docs/benchmarks.md, "Kept tricks").
"""

from __future__ import annotations

import bisect


def ancestors_or_self(module: str):
    """`a.b.c` -> `a.b.c`, `a.b`, `a` (longest first)."""
    while module:
        yield module
        module = module.rpartition(".")[0]


_UNSEEN = object()


class PrefixIndex:
    """A set of dotted prefixes, in the order given (the order decides `first_of`)."""

    __slots__ = ("_rank", "_ancestors", "_sorted", "_memo", "_longest", "prefixes")

    def __init__(self, prefixes) -> None:
        self.prefixes = tuple(prefixes)
        self._rank: dict[str, int] = {}
        for i, p in enumerate(self.prefixes):
            self._rank.setdefault(p, i)
        # Proper ancestors of the prefixes (`a.b` of `a.b.c`): names under which one may lie.
        self._ancestors = {a for p in self._rank for a in ancestors_or_self(p.rpartition(".")[0])}
        self._sorted = sorted(self._rank)
        self._memo: dict[str, str | None] = {}
        self._longest: dict[str, str | None] = {}  # the engine and rules ask about the same names often

    def __bool__(self) -> bool:
        return bool(self._rank)

    def first_of(self, module: str) -> str | None:
        """The first prefix (in the given order) that `module` is, or lies under; None if none."""
        memo = self._memo
        if module in memo:
            return memo[module]
        rank, ancestors = self._rank, self._ancestors
        best = None
        name = None
        for part in module.split("."):  # from the root down (see `longest_of`)
            name = part if name is None else f"{name}.{part}"
            r = rank.get(name)
            if r is not None and (best is None or r < rank[best]):
                best = name
            if name not in ancestors:
                break
        memo[module] = best
        return best

    def longest_of(self, module: str) -> str | None:
        """The longest prefix `module` is, or lies under."""
        memo = self._longest
        found = memo.get(module, _UNSEEN)
        if found is _UNSEEN:
            # From the root down, as far as a prefix can still lie below: most names the engine
            # asks about part from every prefix after one or two name parts.
            rank, ancestors = self._rank, self._ancestors
            found = name = None
            for part in module.split("."):
                name = part if name is None else f"{name}.{part}"
                if name in rank:
                    found = name
                if name not in ancestors:
                    break
            memo[module] = found
        return found

    def __contains__(self, prefix: str) -> bool:
        return prefix in self._rank

    def is_ancestor(self, module: str) -> bool:
        """Is `module` a proper ancestor of a prefix (`a.b` of the prefix `a.b.c`)?"""
        return module in self._ancestors

    def starts_text(self, text: str) -> bool:
        """Does some prefix begin with `text`, as a string (`a.b` and `a.b.` begin `a.b.cd`)?"""
        s = self._sorted
        i = bisect.bisect_left(s, text)
        return i < len(s) and s[i].startswith(text)

    def roots(self) -> tuple[str, ...]:
        """The first name parts of the prefixes."""
        return tuple(sorted({p.split(".", 1)[0] for p in self._rank}))
