"""Guard a namespace migration with import-linter: the contract types `.importlinter` registers.

    [importlinter]
    contract_types =
        removed_modules: contracts.RemovedModulesContract
        operator_groups: contracts.OperatorGroupsContract
        layer: contracts.LayerContract
        missing_imports: contracts.MissingImportsContract
        dependency_upgrade: contracts.DependencyUpgradeContract

The classes are loaded on first access, so `python -m contracts` starts without importing
import-linter. Nothing here imports torch or the code being checked.
"""

from contracts import _hygiene

_hygiene.install()  # first: nothing below may come from the working directory (see _hygiene.py)

from contracts._version import __version__  # noqa: E402

__all__ = ["__version__", "DependencyUpgradeContract", "LayerContract", "MissingImportsContract",
           "OperatorGroupsContract", "RemovedModulesContract"]


def __getattr__(name: str):
    if name in __all__:
        from contracts import importlinter_types  # import-linter, only when lint-imports asks for a class

        return getattr(importlinter_types, name)
    raise AttributeError(f"module 'contracts' has no attribute {name!r}")
