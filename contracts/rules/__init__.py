"""One module per rule. Each module's docstring is that rule's documentation (README's rule
reference is generated from them: `python -m contracts rules`), `RULE_ID` its stable id, and
`FIX` whether `--fix` can repair it (always / sometimes / never). Every run loads them (the
renderers ask `fixable`), a warm one without building a model: they name `Model` in
annotations only (`TYPE_CHECKING`), and import the engine's heavier parts where they use them."""

from contracts.rules import (
    group_boundary,
    layer,
    missing_module,
    missing_name,
    not_scanned,
    parse_error,
    private_import,
    removed_module,
    shim_present,
    unknown_group,
    unused_allowed_import,
)

ALL = (
    removed_module,
    shim_present,
    group_boundary,
    layer,
    private_import,
    unknown_group,
    unused_allowed_import,
    parse_error,
    not_scanned,
    missing_module,
    missing_name,
)
BY_ID = {rule.RULE_ID: rule for rule in ALL}


def fixable(finding) -> bool:
    """Does `--fix` offer to repair `finding`? A rule whose `FIX` is "always" does; one whose
    `FIX` is "sometimes" does when the finding names what to write instead (`--fix` may still
    refuse an unsafe rewrite, and says why); "never" does not."""
    rule = BY_ID.get(finding.rule)
    fix = getattr(rule, "FIX", "never")
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
