"""The one exception family the tool raises for user errors; the CLI prints `str(error)` alone."""

from __future__ import annotations


class NamespaceLintError(Exception):
    """Base class: a user error the tool reports in one line, without a traceback."""


class ConfigError(NamespaceLintError):
    """The configuration is invalid. The message names the file, the section and the option."""

    def __init__(self, message: str, *, file: str | None = None, section: str | None = None,
                 option: str | None = None) -> None:
        self.file, self.section, self.option, self.reason = file, section, option, message
        where = ", ".join(
            part for part in (
                file,
                f"section [{section}]" if section else None,
                f"option '{option}'" if option else None,
            ) if part
        )
        super().__init__(f"{where}: {message}" if where else message)


class UsageError(NamespaceLintError):
    """The command line is invalid (bad flag value, missing directory)."""
