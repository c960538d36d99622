"""One module per rule. Each module's docstring is that rule's documentation (README's rule
reference is generated from them: `python -m contracts rules`), `RULE_ID` its stable id, and
`FIX` whether `--fix` can repair it (always / sometimes / never). A warm run loads those of the
findings it prints (the renderers ask `fixable`) without building a model: they name `Model` in
annotations only (`TYPE_CHECKING`), and import the engine's heavier parts where they use them."""

import importlib

# The rule modules, in the order rules are listed; a module's name is its rule id with `_` for
# `-`. They are imported when first asked for (`rules.removed_module`, `ALL`, `BY_ID`): a warm
# run, answered from the cache, only asks the rules of the findings it prints (`fixable`).
NAMES = (
    "removed_module",
    "shim_present",
    "group_boundary",
    "layer",
    "private_import",
    "unknown_group",
    "unused_allowed_import",
    "parse_error",
    "not_scanned",
    "missing_module",
    "missing_name",
)


def __getattr__(name: str):
    if name in NAMES:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "ALL":
        value = tuple(importlib.import_module(f"{__name__}.{n}") for n in NAMES)
    elif name == "BY_ID":
        value = {rule.RULE_ID: rule for rule in __getattr__("ALL")}
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def _rule(rule_id: str):
    """The module of the rule `rule_id`, or None (the one module imported)."""
    name = rule_id.replace("-", "_")
    if name not in NAMES:
        return None
    rule = importlib.import_module(f"{__name__}.{name}")
    return rule if rule.RULE_ID == rule_id else None


def fixable(finding) -> bool:
    """Does `--fix` offer to repair `finding`? A rule whose `FIX` is "always" does; one whose
    `FIX` is "sometimes" does when the finding names what to write instead (`--fix` may still
    refuse an unsafe rewrite, and says why); "never" does not."""
    fix = getattr(_rule(finding.rule), "FIX", "never")
    return fix == "always" or (fix == "sometimes" and finding.replacement is not None)


def doc(rule) -> dict:
    """A rule's documentation from its docstring: `summary` (the first line, without the
    "`id`: " prefix), `what` (the "What it does" section), `text` (everything after line one)."""
    first, _, rest = rule.__doc__.strip().partition("\n")
    summary = first.split(":", 1)[1].strip() if first.startswith("`") and ":" in first else first.strip()
    what = ""
    if "## What it does" in rest:
        what = rest.split("## What it does", 1)[1].split("\n## ", 1)[0].strip()
    return {"id": rule.RULE_ID, "summary": summary, "what": " ".join(what.split()), "text": rest.strip(),
            "fix": getattr(rule, "FIX", "never")}
