"""`ignore_imports`, as import-linter has it, for every contract type of this tool: one parser,
one matcher, one way to apply them and one way to report the lines that matched nothing.

    ignore_imports =
        sglang.srt.layers.* -> sglang.kernels.ops.gemm._tiles
        sglang.kernels.**.legacy -> sglang.srt.utils

A line is `importer -> imported`, each a dotted module expression where a part `*` stands for
exactly one name part and `**` for one or more (grimp's wildcards). A matching import is
removed before the contract is checked (so a chain through it is gone too, as in import-linter),
and a finding whose importer and imported module match is dropped. A line that matches nothing
is reported (`unused-allowed-import`, as import-linter's `unmatched_ignore_imports_alerting =
error`); `unmatched_ignore_imports_alerting = warn` makes it a warning, `none` silent.
"""

from __future__ import annotations

import re

from contracts._record import Record

_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ALERTING = ("error", "warn", "none")


class PatternError(ValueError):
    """A bad `ignore_imports` line; carries the option name (the config turns it into ConfigError)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


class ImportPattern(Record, frozen=True):
    """One `ignore_imports` line in import-linter's syntax: `importer -> imported`, where a `*`
    stands for one module name part and `**` for one or more (as grimp matches them)."""

    text: str
    importer: str
    imported: str

    def __init__(self, text: str, importer: str, imported: str) -> None:
        self.__dict__.update(text=text, importer=importer, imported=imported)

    def matches(self, importer: str, imported: str) -> bool:
        return _expression_regex(self.importer).match(importer) is not None and \
            _expression_regex(self.imported).match(imported) is not None


_EXPRESSIONS: dict[str, re.Pattern] = {}


def _expression_regex(expression: str) -> re.Pattern:
    found = _EXPRESSIONS.get(expression)
    if found is None:
        parts = [r"[^.]+" if p == "*" else r"[^.]+(?:\.[^.]+)*" if p == "**" else re.escape(p)
                 for p in expression.split(".")]
        found = _EXPRESSIONS[expression] = re.compile(r"\.".join(parts) + r"\Z")
    return found


def _module_expression(option: str, line: str, value: str) -> str:
    last = None
    for part in value.split("."):
        if part in ("*", "**"):
            if last == "**" or (last == "*" and part == "**"):
                raise PatternError(option, f"line '{line}': '{value}' has a wildcard after a wildcard "
                                           f"('*' and '**' cannot follow each other).")
            last = part
            continue
        if "*" in part or not _IDENT_RE.match(part):
            raise PatternError(option, f"line '{line}': '{value}' is not a module expression (dotted "
                                       f"names; '*' or '**' may replace a whole part).")
        last = None
    return value


def _lines(raw) -> list[str]:
    if raw is None:
        return []
    items = list(raw) if isinstance(raw, (list, tuple)) else str(raw).strip().split("\n")
    return [item.strip() for item in items if item.strip()]


def parse_ignore_imports(option: str, raw) -> tuple[ImportPattern, ...]:
    """import-linter's `ignore_imports` lines: `importer -> imported`, wildcards allowed. A line
    given twice is an error (the second one could never match anything the first does not)."""
    out: list[ImportPattern] = []
    for line in _lines(raw):
        left, arrow, right = line.partition("->")
        left, right = left.strip(), right.strip()
        if not arrow or not left or not right or "->" in right:
            raise PatternError(option, f"line '{line}' must be 'importer.module -> imported.module'.")
        pattern = ImportPattern(f"{left} -> {right}", _module_expression(option, line, left),
                                _module_expression(option, line, right))
        if any(p.text == pattern.text for p in out):
            raise PatternError(option, f"line '{line}' is given twice.")
        out.append(pattern)
    return tuple(out)


def parse_alerting(option: str, raw) -> str:
    value = "error" if raw is None else (raw.strip().lower() if isinstance(raw, str) else "")
    if value not in ALERTING:
        raise PatternError(option, f"expected one of {', '.join(ALERTING)}.")
    return value


def first_match(patterns, importer: str, imported: str) -> int | None:
    """The index of the first pattern matching this import, or None."""
    for i, pattern in enumerate(patterns):
        if pattern.matches(importer, imported):
            return i
    return None


def without_ignored(edges, patterns, used: set[int]) -> list:
    """`edges` (anything with `importer` and `imported`) less those an ignore line matches;
    the indexes of the lines that matched go into `used`."""
    if not patterns:
        return list(edges)
    kept = []
    for e in edges:
        i = first_match(patterns, e.importer, e.imported)
        if i is None:
            kept.append(e)
        else:
            used.add(i)
    return kept


def filter_findings(findings, patterns, used: set[int]) -> list:
    """`findings` less those whose importer and imported (a `module:attr` target counts as its
    module; a private name `module._name` as written) match an ignore line; the indexes of the
    lines that matched go into `used`."""
    if not patterns:
        return list(findings)
    kept = []
    for f in findings:
        hit = first_match(patterns, f.importer, f.imported.split(":", 1)[0])
        if hit is None:
            kept.append(f)
        else:
            used.add(hit)
    return kept
