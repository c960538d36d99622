"""The ways an import statement may begin, for the byte-level readers that find statements
without a parser (`import_lines`, `closure`, `prefilter`, `graph`): one place to teach a new form.

A soft keyword may come before `import` / `from` (PEP 810's `lazy import a.b`, `lazy from a
import b`, Python 3.15); each reader builds its patterns from `IMPORT_PREFIXES`, so a new such
keyword is one entry here (and the parsers' own node types in `ast_refs` and `cst_scan`).
"""

from __future__ import annotations

IMPORT_PREFIXES = ("lazy",)


def prefix_pattern(blank: str) -> str:
    """A regular expression for an optional soft keyword before an import, followed by one or more
    `blank` (the caller's class of blanks): `(?:(?:lazy)[ \\t]+)?`."""
    return "(?:(?:" + "|".join(IMPORT_PREFIXES) + ")" + blank + "+)?"


def prefix_pattern_bytes(blank: bytes) -> bytes:
    """`prefix_pattern` for a bytes pattern."""
    return prefix_pattern(blank.decode("ascii")).encode("ascii")


def strip_prefix(head: str, blanks: str = " \t\f") -> str:
    """`head` (the text before a statement on its line) without a soft keyword at its end, where
    one is written there as a word of its own."""
    for word in IMPORT_PREFIXES:
        if head.endswith(word) and (len(head) == len(word) or head[-len(word) - 1] in blanks + ";:"):
            return head[: -len(word)].rstrip(blanks)
    return head
