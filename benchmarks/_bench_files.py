"""What the benchmarks write, and where: nothing tracked unless asked, downloads in one place.

- The measured section goes to stdout. Only `--update-docs` writes it into the tracked
  `docs/benchmarks.md` and `README.md` (between their marker comments); `--out FILE` /
  `--readme FILE` write it into other files.
- Downloads and trees (sglang wheels from `pip download`, their unpacked `sglang/`, the
  synthetic trees) live in `--cache DIR`, by default `$XDG_CACHE_HOME/namespace-lint-bench`, else
  `~/.cache/namespace-lint-bench`: hundreds of MB once `bench_real_trees.py` has run (three
  wheels and four trees; 0.5.23 alone is a 38 MB wheel that unzips to 131 MB, `du -sh`); each run
  ends with one line giving its size. `--clear-cache` deletes it and
  exits (or `rm -rf` the directory); `--wheels DIR` reads wheels already downloaded from DIR.
"""

from __future__ import annotations

import os
import shutil

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "namespace-lint-bench")


def add_arguments(p) -> None:
    """`--cache`, `--clear-cache`, `--update-docs`, `--out`, `--readme` on the parser `p`."""
    p.add_argument("--cache", default=default_cache(),
                   help="downloads and trees (default: $XDG_CACHE_HOME or ~/.cache, /namespace-lint-bench)")
    p.add_argument("--clear-cache", action="store_true", help="delete the --cache directory and exit")
    p.add_argument("--update-docs", action="store_true",
                   help="write the section into docs/benchmarks.md and README.md (tracked files)")
    p.add_argument("--out", help="write the section into this file (between its marker comments)")
    p.add_argument("--readme", help="also write the section into this file")


def targets(args) -> list[str]:
    """The files the section is written into: none unless asked."""
    paths = [args.out, args.readme]
    if args.update_docs:
        paths += [os.path.join(REPO, "docs", "benchmarks.md"), os.path.join(REPO, "README.md")]
    return list(dict.fromkeys(p for p in paths if p))


def size_of(directory: str) -> int:
    total = 0
    for top, _, files in os.walk(directory):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                pass
    return total


def cache_line(directory: str) -> str:
    return (f"download cache: {directory} ({size_of(directory) / 2**20:.0f} MiB); "
            f"`--clear-cache` (or rm -rf it) frees it")


def clear(directory: str) -> str:
    freed = size_of(directory)
    shutil.rmtree(directory, ignore_errors=True)
    return f"removed {directory} ({freed / 2**20:.0f} MiB)"
