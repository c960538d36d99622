"""`derive-map --before B --after A` in one call, timed: wall, CPU and peak memory.

    python benchmarks/bench_derive_map.py [--before sglang==0.5.16] [--after sglang==0.5.23]
                                          [--removed PREFIX ...] [--wheels DIR] [--runs N]

B and A are unpacked once into a temporary directory (a wheel from `--wheels DIR` when there is
one, else `pip download --no-deps --only-binary :all:`), so the timing is derive-map's own, not
the download's. Each run is a fresh `python -m contracts derive-map` process; its CPU time and
peak resident memory are the child's (`resource.getrusage(RUSAGE_CHILDREN)`, as `/usr/bin/time
-v` reports them). Without `--removed`, every module of B that A does not have is mapped. Prints
one line per run, then the lines the map printed; writes nothing in the repository.
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _wheel(spec: str, wheels: str | None, scratch: str) -> str:
    if os.path.exists(spec):
        return spec
    name, _, version = spec.partition("==")
    found = sorted(glob.glob(os.path.join(wheels, f"{name}-{version}-*.whl"))) if wheels else []
    if found:
        return found[0]
    out = tempfile.mkdtemp(dir=scratch)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                    "-d", out, spec], check=True)
    return glob.glob(os.path.join(out, "*.whl"))[0]


def _tree(spec: str, wheels: str | None, scratch: str) -> str:
    path = _wheel(spec, wheels, scratch)
    if os.path.isdir(path):
        return path
    out = tempfile.mkdtemp(dir=scratch)
    with zipfile.ZipFile(path) as z:
        z.extractall(out, [n for n in z.namelist() if n.endswith((".py", ".pyi", ".so", ".pyd"))])
    return out


def _run(before: str, after: str, removed: list[str]) -> tuple[float, float, int, str, str]:
    """(wall s, CPU s, peak RSS MiB, stdout, the summary line) of one derive-map process."""
    args = [sys.executable, "-m", "contracts", "derive-map", "--before", before, "--after", after]
    args += [a for p in removed for a in ("--removed", p)]
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = resource.getrusage(resource.RUSAGE_CHILDREN)
    clock = time.perf_counter()
    # From REPO: `-m` looks in the working directory first, so a run from another checkout
    # would time that checkout's code.
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - clock
    end = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (end.ru_utime - start.ru_utime) + (end.ru_stime - start.ru_stime)
    # ru_maxrss of the children is the largest of any child so far (kB on Linux).
    return wall, cpu, end.ru_maxrss // 1024, done.stdout, done.stderr.strip().splitlines()[-1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", default="sglang==0.5.16")
    p.add_argument("--after", default="sglang==0.5.23")
    p.add_argument("--removed", action="append", default=[])
    p.add_argument("--wheels", metavar="DIR", help="a directory of wheels to take B and A from")
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-derive-map-") as scratch:
        before, after = _tree(args.before, args.wheels, scratch), _tree(args.after, args.wheels, scratch)
        out = ""
        for i in range(args.runs):
            wall, cpu, rss, out, summary = _run(before, after, args.removed)
            print(f"run {i + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss} MiB peak RSS; {summary}")
        lines = [line for line in out.splitlines() if "->" in line and not line.startswith("#")]
        print(f"{len(lines)} replacement lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
