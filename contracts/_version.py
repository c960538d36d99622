"""The version of this tool (one place: setup.cfg reads it, `--version` and SARIF print it)."""

__version__ = "0.1.0"
