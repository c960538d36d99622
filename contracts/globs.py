"""Glob patterns of `exclude` and `importer_paths`, matched in time bounded by the pattern's size
times the path's, whatever the pattern.

A pattern comes from the configuration, which a pull request can change. Translated to a
regular expression, `a*a*a*a*a*a*a*a*b` backtracks exponentially against a long name (8 stars
took 42 s against a 60-character directory name). Here a segment (`*`, `?`, `[...]`, literal
characters) is matched by the classic two-pointer wildcard algorithm, which remembers only the
last star: a mismatch resumes one character after that star's last start, so each (pattern
position, name position) pair is visited a bounded number of times. `**` is matched the same way
one level up, with segments as the characters. Pattern length and count are bounded
(`MAX_PATTERN_CHARS`, `MAX_PATTERNS`); a longer pattern is a configuration error naming it.

Semantics (those of the regular expressions this replaces): a pattern is relative, with `/`;
`*`, `?` and `[...]` (`[!...]` negated, `a-z` ranges, a `]` first is literal, an unclosed `[`
is literal) match within one segment; `**` matches any number of segments (at the end: at least
one); a pattern matches a path when it matches the path or one of its parent directories.
"""

from __future__ import annotations

import os

# No real `exclude` or `importer_paths` entry comes near these; they bound a hostile one.
MAX_PATTERN_CHARS = 1024
MAX_PATTERNS = 1000

_ANY_SEGMENTS = "**"


class GlobError(ValueError):
    """A pattern that is not a valid glob, or over the bounds."""


class _Class:
    """`[...]`: a set of characters and ranges, possibly negated."""

    __slots__ = ("negated", "singles", "ranges")

    def __init__(self, body: str) -> None:
        self.negated = body.startswith("!")
        body = body[1:] if self.negated else body
        self.singles: set[str] = set()
        self.ranges: list[tuple[str, str]] = []
        i = 0
        while i < len(body):
            if i + 2 < len(body) and body[i + 1] == "-":
                lo, hi = body[i], body[i + 2]
                if lo > hi:
                    raise GlobError(f"bad character range {lo}-{hi}")
                self.ranges.append((lo, hi))
                i += 3
            else:
                self.singles.add(body[i])
                i += 1

    def matches(self, c: str) -> bool:
        hit = c in self.singles or any(lo <= c <= hi for lo, hi in self.ranges)
        return hit != self.negated


def _tokens(segment: str) -> list:
    """A segment as tokens: "*" (any run), "?" (any one character), a `_Class`, or a literal
    character wrapped in a tuple (so a literal `*` stays distinct from the wildcard)."""
    out: list = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "*":
            if not out or out[-1] != "*":  # `**` inside a segment is one star
                out.append("*")
        elif c == "?":
            out.append("?")
        elif c == "[":
            end = segment.find("]", i + 2 if segment[i + 1:i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append((c,))
            else:
                out.append(_Class(segment[i + 1:end]))
                i = end
        else:
            out.append((c,))
        i += 1
    return out


def _one(token, c: str) -> bool:
    if token == "?":
        return True
    if isinstance(token, tuple):
        return token[0] == c
    return token.matches(c)


def _wildcard(tokens: list, items, one) -> bool:
    """Whether `tokens` ("*" any run, else one item each, tested by `one(token, item)`) match the
    whole sequence `items`; greedy, resuming after the last star only (no backtracking)."""
    t = i = 0
    star, resume = -1, 0
    while i < len(items):
        if t < len(tokens) and tokens[t] != "*" and one(tokens[t], items[i]):
            t += 1
            i += 1
        elif t < len(tokens) and tokens[t] == "*":
            star, resume = t, i
            t += 1
        elif star != -1:
            t = star + 1
            resume += 1
            i = resume
        else:
            return False
    while t < len(tokens) and tokens[t] == "*":
        t += 1
    return t == len(tokens)


class Pattern:
    """One compiled pattern; `match(path)` as a regular expression's (truthy when it matches)."""

    __slots__ = ("pattern", "_segments", "_empty")

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise GlobError(f"longer than {MAX_PATTERN_CHARS} characters")
        self.pattern = pattern
        parts = [p for p in pattern.replace(os.sep, "/").strip("/").split("/") if p not in ("", ".")]
        if parts and parts[-1] == _ANY_SEGMENTS:
            parts[-1] = "*"  # `docs/**`: one segment or more under docs/ (the implicit tail adds the rest)
        self._empty = not parts  # `.`: names the base itself, which is never matched
        # Segments as `_wildcard` tokens: "*" for `**`, a segment's token list otherwise; the
        # implicit tail "*": a pattern also matches everything under what it matches.
        self._segments = ["*" if p == _ANY_SEGMENTS else _tokens(p) for p in parts] + ["*"]

    def __eq__(self, other) -> bool:  # as compiled regular expressions compare: by pattern
        return isinstance(other, Pattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"Pattern({self.pattern!r})"

    def match(self, path: str) -> bool:
        if self._empty:
            return path == ""
        return _wildcard(self._segments, path.split("/"), _segment_matches)

    @property
    def literal_prefix(self) -> list[str]:
        """The leading segments without a wildcard: where a walk for this pattern starts."""
        out = []
        for tokens in self._segments:
            if tokens == "*" or not all(isinstance(t, tuple) for t in tokens):
                break
            out.append("".join(t[0] for t in tokens))
        return out


def _segment_matches(tokens: list, name: str) -> bool:
    return _wildcard(tokens, name, _one)


def compile_pattern(pattern: str) -> Pattern:
    """The matcher of `pattern`; GlobError when it is invalid or too long."""
    return Pattern(pattern)


def check_patterns(patterns) -> None:
    """GlobError when there are more than `MAX_PATTERNS`."""
    if len(patterns) > MAX_PATTERNS:
        raise GlobError(f"{len(patterns)} patterns, over the limit of {MAX_PATTERNS}")
