"""What `derive-map` found: plain data, rendered by `output`."""

from __future__ import annotations

from dataclasses import dataclass, field

# The thresholds of matching by content (documented in `moves` and docs/autofix.md).
SAME_DEFINITION = 0.6  # body similarity at which two same-named definitions are the same one
SAME_SIGNATURE = 0.3  # ... or this, for functions whose parameters (names, in order) are the same
MODULE_MIN = 0.5  # share of a module's code (by size) a candidate must hold (git's rename default)
TIE_MARGIN = 0.1  # candidates this close to the best score are a tie
MIN_SHARED = 2  # same definitions a candidate found only by content needs
COMMON_NAME = 25  # a name defined in more modules than this does not suggest a candidate


@dataclass(frozen=True)
class Evidence:
    """Why a module or a name was matched: how, with what score, on which definitions."""

    how: str  # "shim", "same name", "folded name", "content", "submodules", "re-exported names", "definition"
    score: float | None = None  # 0..1; None where no score applies (a shim)
    shared: tuple[tuple[str, float], ...] = ()  # (definition name, body similarity)

    def to_json(self) -> dict:
        return {"how": self.how, "score": None if self.score is None else round(self.score, 3),
                "shared": [{"name": n, "similarity": round(s, 3)} for n, s in self.shared]}


@dataclass
class Derived:
    """The map for the modules under one prefix, and what could not be mapped."""

    modules: list[str]  # every module under the prefix, sorted
    mapped: dict[str, str] = field(default_factory=dict)
    unmatched: dict[str, str] = field(default_factory=dict)  # module -> why
    ambiguous: dict[str, list[str]] = field(default_factory=dict)  # module -> candidates
    warnings: list[str] = field(default_factory=list)
    evidence: dict[str, Evidence] = field(default_factory=dict)  # mapped module -> why
    scores: dict[str, list[tuple[str, float]]] = field(default_factory=dict)  # candidates' scores
    # A mapped module whose line is not printed, because as a prefix it would also send a module
    # under it that did not move with it to a place that does not exist.
    withheld: dict[str, str] = field(default_factory=dict)
    # Per name: (old module, name) -> (new module, name there)
    names: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    name_evidence: dict[tuple[str, str], Evidence] = field(default_factory=dict)
    names_unmatched: dict[tuple[str, str], str] = field(default_factory=dict)
    names_ambiguous: dict[tuple[str, str], list[tuple[str, float]]] = field(default_factory=dict)

    def printed(self) -> dict[str, str]:
        return {m: t for m, t in self.mapped.items() if m not in self.withheld}

    def lines(self) -> list[tuple[str, str]]:
        """The `old -> new` pairs to print: a module whose line its package's line implies is left out."""
        printed = self.printed()
        out = []
        for old in sorted(printed):
            new = printed[old]
            parent = mapped_ancestor(old, printed)
            if parent is not None and printed[parent] + old[len(parent):] == new:
                continue
            out.append((old, new))
        return out

    def name_lines(self) -> list[tuple[str, str]]:
        return [(f"{m}:{n}", f"{t}:{tn}") for (m, n), (t, tn) in sorted(self.names.items())]

    def effective(self, module: str) -> str | None:
        """Where the printed lines send `module` (longest prefix), or None."""
        # (asked for every name of every module: looked up, not `printed()` built each time)
        parts = module.split(".")
        for i in range(len(parts), 0, -1):
            candidate = module if i == len(parts) else ".".join(parts[:i])
            if candidate in self.mapped and candidate not in self.withheld:
                return self.mapped[candidate] + module[len(candidate):]
        return None

    def shown_names(self) -> list[tuple[str, str]]:
        """Names without a new place worth a line of text: public names of modules that have
        a line (a module that got none is listed itself; JSON lists every name)."""
        keys = set(self.names_unmatched) | set(self.names_ambiguous)
        return sorted(k for k in keys if not k[1].startswith("_") and self.effective(k[0]) is not None)

    def complete(self) -> bool:
        return not (self.unmatched or self.ambiguous or self.shown_names())


def mapped_ancestor(module: str, mapped: dict[str, str]) -> str | None:
    parts = module.split(".")
    for i in range(len(parts) - 1, 0, -1):
        candidate = ".".join(parts[:i])
        if candidate in mapped:
            return candidate
    return None
