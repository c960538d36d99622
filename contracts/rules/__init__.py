"""One module per rule. Each module's docstring is that rule's documentation (README's rule
reference is generated from them: `python -m contracts rules`), `RULE_ID` its stable id, and
`FIX` whether `--fix` can repair it (always / sometimes / never)."""

from contracts.rules import (
    group_boundary,
    layer,
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
)
BY_ID = {rule.RULE_ID: rule for rule in ALL}
