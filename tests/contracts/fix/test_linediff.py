"""`contracts/fix/linediff.py`: the anchored diff of large rewrites is a valid edit script (it
turns the old lines into the new ones), and small texts get difflib's own script."""

from __future__ import annotations

import difflib
import random

import pytest

from contracts.fix import linediff


def _apply(a: list[str], b: list[str], ops) -> list[str]:
    out: list[str] = []
    at = 0
    for tag, i1, i2, j1, j2 in ops:
        assert i1 == at, ops  # the script covers `a` in order, with no gap
        out += a[i1:i2] if tag == "equal" else b[j1:j2]
        if tag == "equal":
            assert a[i1:i2] == b[j1:j2]
        at = i2
    assert at == len(a)
    return out


def _rewrite(rng: random.Random, n: int) -> tuple[list[str], list[str]]:
    """`n` functions (unique `def` lines, repeated bodies), some imports rewritten, some lines
    added or removed: the shape of a `--fix` rewrite."""
    a, b = [], []
    for i in range(n):
        body = ["    '''Doc.'''\n", "    from pkg.jit_kernel.norm import f\n", "    return f\n"]
        a += [f"def f{i}():\n", *body]
        new = list(body)
        if rng.random() < 0.3:
            new[1] = "    from pkg.kernels.ops.layernorm.norm import f\n"
        if rng.random() < 0.05:
            new.insert(2, "    x = 1\n")
        if rng.random() < 0.05:
            del new[0]
        b += [f"def f{i}():\n", *new]
    return a, b


@pytest.mark.parametrize("seed", range(5))
def test_a_large_rewrite_gets_a_valid_edit_script(seed):
    a, b = _rewrite(random.Random(seed), 1500)
    assert len(a) >= linediff.SMALL
    ops = linediff.opcodes(a, b)
    assert _apply(a, b, ops) == b
    patch = "".join(linediff.unified_diff(a, b, "a/x.py", "b/x.py"))
    assert patch.startswith("--- a/x.py\n+++ b/x.py\n@@ -")
    assert patch.count("\n+    from pkg.kernels.ops.layernorm.norm import f") == b.count(
        "    from pkg.kernels.ops.layernorm.norm import f\n")


def test_a_small_text_gets_difflibs_own_script():
    a, b = _rewrite(random.Random(7), 50)
    assert linediff.opcodes(a, b) == difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    assert list(linediff.unified_diff(a, b, "x", "y")) == list(difflib.unified_diff(a, b, "x", "y"))
