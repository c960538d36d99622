"""What pre-commit passes: the hook's `args:` (the user's), then the staged file names, with no
`--` between them. A committed file named `--verify-against=x==1.py` would otherwise be read as
that option. `namespace-lint --pre-commit ...` (the hook's `entry`) splits the arguments itself.

The file names are the longest run of arguments at the end that each name an existing path
(pre-commit passes only files that exist). A name can therefore only ever be a path: an
argument that is not an existing path cannot be one of the file names, so it is the user's. The
one exception is the value of the user's last option (`--config setup.cfg`), which exists too:
when the argument just before the run is an option that takes a value, the run starts one later.
The result puts `--` before the file names, so whatever they are called, argparse reads them as
paths. A `--` in the user's own `args:` is kept where it is (it is not an existing path).

This survives a user's `args:` override (`args: [--fix]`), which a `--` in the hook's default
`args` would not: pre-commit replaces the default `args`, but never the `entry`.
"""

from __future__ import annotations

import os


def split(argv: list[str], valued: set[str]) -> list[str]:
    """`argv` (user arguments, then file names) as `[*user arguments, "--", *file names]`.
    `valued`: the options that take a separate value (`--config`, `-o`, ...)."""
    start = len(argv)
    while start > 0 and os.path.lexists(argv[start - 1]):
        start -= 1
    if 0 < start < len(argv) and argv[start - 1] in valued:
        start += 1  # the user's `--config FILE`: FILE is the option's, not a file name
    if start >= len(argv) or "--" in argv[:start]:  # no file names, or the user's `--` says it
        return list(argv)
    return [*argv[:start], "--", *argv[start:]]
