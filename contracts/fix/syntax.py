"""The syntax-tree helpers every rewrite pass shares: dotted names, chains, positions."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

NEWLINE_RE = re.compile(r"\r\n|\r|\n")
LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")

Key = tuple  # (line, 1-based UTF-8 column, imported): how a finding is matched to a node


def dotted_name(node) -> str | None:
    """`a.b.c` for a chain of names, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = dotted_name(node.value)
        return None if inner is None else f"{inner}.{node.attr.value}"
    return None


def chain_nodes(node) -> list:
    """The nodes of a dotted chain, outermost first: `a.b.c`, `a.b`, `a`."""
    out = []
    while isinstance(node, cst.Attribute):
        out.append(node)
        node = node.value
    out.append(node)
    return out


def parse_dotted(dotted: str):
    return cst.parse_expression(dotted)


def root_of(dotted: str) -> str:
    return dotted.split(".", 1)[0]


class Positions:
    """Where a node of a parsed chunk is in the file. LibCST columns count characters; `ast`
    (hence the findings) counts UTF-8 bytes."""

    def __init__(self, text: str, positions, first_line: int) -> None:
        self.lines = NEWLINE_RE.split(text)
        self.positions = positions
        self.offset = first_line - 1

    def key(self, node, imported: str) -> Key | None:
        start = self.positions[node].start
        line = self.lines[start.line - 1] if start.line - 1 < len(self.lines) else ""
        return (start.line + self.offset, len(line[: start.column].encode("utf-8")) + 1, imported)

    def line(self, node) -> int:
        return self.positions[node].start.line + self.offset


@dataclass
class Chain:
    dotted: str
    line: int
    context: object  # ExpressionContext of the outermost node
    nodes: list  # outermost first
