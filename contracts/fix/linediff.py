"""Line diffs of a rewrite in time near-linear in the file, however many statements changed.

`difflib.SequenceMatcher` looks for the longest match in every gap between the matches it
has: a file with many rewritten statements costs it the file's length times their number (a
10,000-line file with 1,400 rewritten imports: 6 s of `--diff`, 20,000 lines: 36 s). A rewrite
changes a few lines per statement and keeps the rest, so the lines that occur once in the old
text and once in the new (most `def` lines, most code) pin the two texts together (the anchors
of a patience diff, the longest run of them in the same order), and `difflib` aligns only the
short stretches between anchors. Small texts take `difflib` alone, so their diffs are exactly
what they always were.
"""

from __future__ import annotations

import bisect
import difflib

SMALL = 2000  # lines: below this (most files), difflib alone; its worst case there is ~0.1 s


def _unique(lines: list[str]) -> dict[str, int]:
    """line -> its index where it occurs once, -1 where it occurs more often."""
    where: dict[str, int] = {}
    for i, line in enumerate(lines):
        where[line] = -1 if line in where else i
    return where


def _anchors(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Pairs (i, j), ascending in both, of lines that occur once in `a` and once in `b` and are
    equal: the longest increasing run of them (patience sorting)."""
    in_a, in_b = _unique(a), _unique(b)
    pairs = sorted((i, in_b[line]) for line, i in in_a.items() if i >= 0 and in_b.get(line, -1) >= 0)
    tails: list[int] = []  # tails[k]: the smallest j ending a run of length k + 1
    tail_at: list[int] = []  # the pair index of that tail
    back: list[int] = [-1] * len(pairs)
    for n, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(n)
        else:
            tails[k], tail_at[k] = j, n
        back[n] = tail_at[k - 1] if k else -1
    run, n = [], tail_at[-1] if tail_at else -1
    while n >= 0:
        run.append(pairs[n])
        n = back[n]
    return run[::-1]


def opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """What `difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()` gives: a valid
    edit script from `a` to `b` (the same one where both are under `SMALL` lines)."""
    if len(a) < SMALL and len(b) < SMALL:
        return difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    out: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for ai, bj in [*_anchors(a, b), (len(a), len(b))]:
        if (ai - i) or (bj - j):
            gap = difflib.SequenceMatcher(a=a[i:ai], b=b[j:bj], autojunk=False).get_opcodes()
            out.extend((tag, i + i1, i + i2, j + j1, j + j2) for tag, i1, i2, j1, j2 in gap)
        if ai < len(a):
            out.append(("equal", ai, ai + 1, bj, bj + 1))
        i, j = ai + 1, bj + 1
    return _merged(out)


def _merged(ops: list[tuple[str, int, int, int, int]]) -> list[tuple[str, int, int, int, int]]:
    """`ops` with runs of "equal" joined, as difflib gives them."""
    merged: list[tuple[str, int, int, int, int]] = []
    for op in ops:
        if merged and op[0] == "equal" and merged[-1][0] == "equal":
            merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
        else:
            merged.append(op)
    return merged


class _Matcher(difflib.SequenceMatcher):
    """A SequenceMatcher whose opcodes are `opcodes`' (for `get_grouped_opcodes`)."""

    def get_opcodes(self):
        return opcodes(self.a, self.b)


def _range(start: int, stop: int) -> str:
    """A unified diff's range, as difflib writes it."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def unified_diff(a: list[str], b: list[str], fromfile: str, tofile: str, n: int = 3):
    """`difflib.unified_diff(a, b, fromfile, tofile, n=n)`, with `opcodes`' script."""
    if len(a) < SMALL and len(b) < SMALL:
        yield from difflib.unified_diff(a, b, fromfile, tofile, n=n)
        return
    started = False
    for group in _Matcher(None, a, b).get_grouped_opcodes(n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        yield from _hunk(group, a, b)


def _hunk(group, a: list[str], b: list[str]):
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            yield from (" " + line for line in a[i1:i2])
            continue
        if tag in ("replace", "delete"):
            yield from ("-" + line for line in a[i1:i2])
        if tag in ("replace", "insert"):
            yield from ("+" + line for line in b[j1:j2])
