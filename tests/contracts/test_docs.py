"""The rule reference cannot drift: every rule is documented in fixed sections and in the README."""

from __future__ import annotations

import re

import pytest

from contracts import rules
from tests.contracts.conftest import REPO

SECTIONS = ["## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety", "## Options"]


@pytest.mark.parametrize("rule", rules.ALL, ids=lambda r: r.RULE_ID)
def test_rule_docstring_has_every_section_in_order(rule):
    doc = rule.__doc__
    assert doc.startswith(f"`{rule.RULE_ID}`: ")
    positions = [doc.find(s) for s in SECTIONS]
    assert -1 not in positions and positions == sorted(positions)
    assert rule.FIX in ("always", "sometimes", "never")


@pytest.mark.parametrize("rule", rules.ALL, ids=lambda r: r.RULE_ID)
def test_readme_documents_the_rule_with_an_example_finding(rule):
    readme = (REPO / "README.md").read_text()
    row = next((line for line in readme.splitlines() if line.startswith(f"| `{rule.RULE_ID}` |")), None)
    assert row is not None
    assert re.search(rf":\d+:\d+: {re.escape(rule.RULE_ID)} ", row), "the row shows a real finding"


def test_every_rule_module_is_listed_under_its_id():
    # (the package imports a rule's module by its id: `rules.fixable` loads only that one)
    found = sorted(p.stem for p in (REPO / "contracts" / "rules").glob("*.py") if not p.stem.startswith("_"))
    assert sorted(rules.NAMES) == found
    for rule in rules.ALL:
        assert rule.__name__ == f"contracts.rules.{rule.RULE_ID.replace('-', '_')}"
        assert rules._rule(rule.RULE_ID) is rule
    assert rules._rule("no-such-rule") is None


def test_rule_ids_are_unique_and_stable():
    assert list(rules.BY_ID) == [
        "removed-module", "shim-present", "group-boundary", "layer", "private-import",
        "unknown-group", "unused-allowed-import", "parse-error", "not-scanned",
        "missing-module", "missing-name",
    ]
