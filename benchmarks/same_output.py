"""Record the checker's output on real trees, or compare it with a recording: a refactor's guard.

    python benchmarks/same_output.py record DIR [--wheels DIR] [--foreign-wheels DIR] [--cache DIR]
    python benchmarks/same_output.py compare DIR [--wheels DIR] [--foreign-wheels DIR] [--cache DIR]

The cases are the trees of `bench_real_trees.py` and more, each checked cold (`--no-cache`):

- sglang 0.5.16 (with `jit_kernel`), 0.5.16 without `jit_kernel`, 0.5.17 and 0.5.23 under the
  upstream example config (`examples/upstream-sglang.importlinter`), JSON;
- 0.5.17 minus the 174 modules 0.5.23 no longer has, under a `removed_modules` contract naming them;
- 0.5.23 with no config (`--root-package sglang`: the `missing_imports` contract alone);
- `derive-map --before 0.5.16 --after 0.5.23 --format json` (the index's other user);
- with `--foreign-wheels DIR`, the zero-config check of every package of `bench_foreign_trees.py`'s
  corpus (wheels found in DIR or downloaded there).

`record` writes one file per case into DIR (stdout, then the exit code); `compare` runs the same
cases and prints every case whose bytes differ, with the first differing lines, and exits 1 if any
does. Paths in the outputs are relative to the tree (each command runs inside it), and the
checkout's own path is written `$REPO`, so two checkouts in different places compare equal. Nothing tracked is written.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _bench_files  # noqa: E402
import bench_foreign_trees  # noqa: E402
import bench_real_trees  # noqa: E402

REPO = bench_real_trees.REPO
CONFIG = bench_real_trees.CONFIG


def _lint(*args: str) -> list[str]:
    return [sys.executable, "-m", "contracts", *args]


def sglang_cases(cache: str, wheels: list[str], tmp: str) -> dict[str, tuple[list[str], str]]:
    """name -> (command, directory it runs in), for the sglang trees."""
    trees = bench_real_trees.prepare_trees(cache, wheels)
    old = bench_real_trees._unpack("0.5.16", cache, wheels)
    mid = bench_real_trees._unpack("0.5.17", cache, wheels)
    latest = trees["0.5.23"]
    removed = bench_real_trees.removed_between(mid, latest)
    many = bench_real_trees.removed_config(tmp, removed)
    config = ["--config", CONFIG, "--src", ".", "--no-cache", "--output-format", "json"]
    return {
        "upstream-0.5.16": (_lint(*config), old),
        "upstream-0.5.16-without-jit_kernel": (_lint(*config), trees["0.5.16 without jit_kernel"]),
        "upstream-0.5.17": (_lint(*config), mid),
        "upstream-0.5.23": (_lint(*config), latest),
        f"removed-{len(removed)}-0.5.17": (
            _lint("--config", many, "--src", ".", "--no-cache", "--output-format", "json"),
            trees[bench_real_trees.MANY]),
        "zero-config-0.5.23": (
            _lint("--src", ".", "--root-package", "sglang", "--no-cache", "--output-format", "json"), latest),
        "derive-map-0.5.16-0.5.23": (
            _lint("derive-map", "--before", old, "--after", latest, "--format", "json"), tmp),
    }


def foreign_cases(wheels: str, into: str) -> dict[str, tuple[list[str], str]]:
    """name -> (command, directory it runs in), for the foreign corpus, unpacked under `into`."""
    cases = {}
    for dist, version, roots in bench_foreign_trees.CORPUS:
        tree = os.path.join(into, f"{dist}-{version}")
        os.makedirs(tree, exist_ok=True)
        bench_foreign_trees.unpack(bench_foreign_trees.wheel(dist, version, wheels), roots, tree)
        args = ["--src", ".", "--no-cache", "--output-format", "json"]
        for root in roots:
            args += ["--root-package", root]
        cases[f"foreign-{dist}-{version}"] = (_lint(*args), tree)
    return cases


def run_case(cmd: list[str], cwd: str) -> str:
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    # The config's own path appears in some messages: a checkout elsewhere is the same output.
    return f"{proc.stdout.replace(REPO, '$REPO')}\n# exit {proc.returncode}\n"


def first_difference(old: str, new: str, limit: int = 12) -> str:
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), "recorded", "now", n=1, lineterm=""))
    return "\n".join(lines[:limit])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=["record", "compare"])
    p.add_argument("directory", help="where the recorded outputs are (record: written; compare: read)")
    p.add_argument("--wheels", action="append", default=[], help="a directory with sglang wheels (else pip download)")
    p.add_argument("--foreign-wheels", help="also the foreign corpus, its wheels in (or downloaded to) this directory")
    p.add_argument("--only", action="append", help="only the cases whose name contains this")
    p.add_argument("--cache", default=_bench_files.default_cache(), help="where the unpacked sglang trees are kept")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="same-output-") as tmp:
        cases = sglang_cases(args.cache, args.wheels, tmp)
        if args.foreign_wheels:
            os.makedirs(args.foreign_wheels, exist_ok=True)
            cases.update(foreign_cases(args.foreign_wheels, os.path.join(tmp, "foreign")))
        if args.only:
            cases = {k: v for k, v in cases.items() if any(o in k for o in args.only)}
        return record(cases, args.directory) if args.action == "record" else compare(cases, args.directory)


def record(cases: dict, directory: str) -> int:
    os.makedirs(directory, exist_ok=True)
    for name, (cmd, cwd) in cases.items():
        out = run_case(cmd, cwd)
        with open(os.path.join(directory, name + ".out"), "w") as f:
            f.write(out)
        print(f"recorded {name}: {len(out)} bytes, {out.rsplit('# ', 1)[1].strip()}", flush=True)
    return 0


def compare(cases: dict, directory: str) -> int:
    differ = 0
    for name, (cmd, cwd) in cases.items():
        path = os.path.join(directory, name + ".out")
        if not os.path.exists(path):
            print(f"{name}: no recording at {path}", flush=True)
            differ += 1
            continue
        with open(path) as f:
            old = f.read()
        new = run_case(cmd, cwd)
        if old == new:
            print(f"{name}: same ({len(new)} bytes)", flush=True)
        else:
            differ += 1
            print(f"{name}: DIFFERS\n{first_difference(old, new)}", flush=True)
    print(f"{len(cases) - differ} of {len(cases)} cases byte-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
