"""The zero-config check on other people's trees: every finding, so each can be read and judged.

    python benchmarks/bench_foreign_trees.py [--wheels DIR] [--update-docs]

A new user's first command is `namespace-lint --src DIR --root-package PKG` with no config. This
runs it (`--no-cache --output-format json`) over the pinned releases of `CORPUS` below -- large
trees, trees with compiled extension modules, trees that vendor other packages, trees with big
test suites -- downloaded with `pip download --no-deps NAME==VERSION` into `--wheels` (default: a
temporary directory) and unpacked into a temporary directory at run time (never committed).

It prints, per package, the files scanned, the findings and how many are fixable, then every
finding. `docs/foreign-trees.md` holds the corpus table and a reading of each finding (true or
false, and why: each one read in the code at its line); `VERDICTS` below carries those readings,
keyed by (package, rule, path, imported), so a finding nobody has read shows up as "unread".
With `--update-docs` the generated part of that file (between the marker comments) is rewritten
from this run; nothing tracked is written otherwise.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile

# (distribution, version, root packages checked): chosen for what breaks a name-based checker.
CORPUS = [
    ("numpy", "2.1.3", ("numpy",)),  # compiled extensions (`_core/_multiarray_umath`), big tests
    ("pandas", "2.2.3", ("pandas",)),  # `_libs` extensions with `.pyi` stubs, the biggest test suite
    ("sympy", "1.13.3", ("sympy",)),  # large pure-Python tree, tests asserting imports fail
    ("pip", "24.3.1", ("pip",)),  # vendors a dozen packages (`six.moves` made at run time)
    ("setuptools", "75.6.0", ("setuptools", "pkg_resources")),  # vendors, `_distutils` shims
    ("pydantic", "2.10.3", ("pydantic",)),  # module `__getattr__` for moved names, v1 shim tree
    ("pydantic_core", "2.27.1", ("pydantic_core",)),  # one Rust extension and its stub
    ("cryptography", "44.0.0", ("cryptography",)),  # `hazmat/bindings/_rust` extension, stubs
    ("matplotlib", "3.9.3", ("matplotlib", "mpl_toolkits")),  # extensions, big tests
    ("pytest", "8.3.4", ("_pytest", "pytest")),  # `pytest.raises`, `importorskip` users
    ("urllib3", "2.2.3", ("urllib3",)),  # optional imports, emscripten backends
    ("aiohttp", "3.11.10", ("aiohttp",)),  # Cython extensions beside pure-Python fallbacks
    ("orjson", "3.10.12", ("orjson",)),  # an extension module and its stub only
    ("networkx", "3.4.2", ("networkx",)),  # big tests, `pytest.importorskip` everywhere
    ("SQLAlchemy", "2.0.36", ("sqlalchemy",)),  # Cython extensions beside their `.py` twins
    ("scipy", "1.14.1", ("scipy",)),  # extensions with partial stubs, a vendored array-api-compat
]

# (package, rule, path, imported) -> (true?, why), from reading each finding at its line.
VERDICTS: dict[tuple[str, str, str, str], tuple[bool, str]] = {
    ("sympy", "missing-name", "sympy/utilities/tests/test_pickling.py", "sympy.plotting.plot.ScreenShot"): (
        True, "`sympy/plotting/plot.py` has no `ScreenShot` (no binding, no `__getattr__`, no star import, no "
              "module assigns it); the one `class ScreenShot` of the tree is in `sympy/plotting/pygletplot/plot.py`, "
              "where the pyglet plotting this `@XFAIL` test exercises moved (its other imports already come from "
              "`pygletplot`), so the fix names the class it means; the test stays XFAIL (`pygletplot` needs "
              "pyglet, and its pickling checks are marked incomplete)."),
    ("pip", "missing-name", "pip/_internal/resolution/resolvelib/provider.py", "pip._vendor.resolvelib.providers.Preference"): (
        True, "under `TYPE_CHECKING`: upstream resolvelib declares `Preference` only in `providers.pyi`, which pip's "
              "vendoring does not ship; `pip/_vendor/resolvelib/providers.py` binds no `Preference`, so a type "
              "checker run on this tree cannot resolve it. No module defines it: nothing to suggest."),
    ("scipy", "missing-name", "scipy/_lib/array_api_compat/common/_aliases.py",
     "scipy._lib.array_api_compat.common._typing.Dtype"): (
        True, "under `TYPE_CHECKING`: the vendored array-api-compat's `common/_typing.py` binds `NestedSequence`, "
              "`SupportsBufferProtocol`, `Array`, `Device` and no `Dtype` (no `__getattr__`, no star import), so a "
              "type checker cannot resolve it. `Dtype` is defined in several `_typing` modules: listed, not guessed."),
    ("scipy", "missing-name", "scipy/_lib/array_api_compat/common/_aliases.py",
     "scipy._lib.array_api_compat.common._typing.ndarray"): (
        True, "the same statement: `common/_typing.py` binds no `ndarray` either, and no module of the tree "
              "defines one."),
    ("scipy", "missing-name", "scipy/_lib/array_api_compat/common/_fft.py",
     "scipy._lib.array_api_compat.common._typing.ndarray"): (
        True, "the same missing `ndarray`, imported under `TYPE_CHECKING`."),
    ("scipy", "missing-name", "scipy/_lib/array_api_compat/common/_linalg.py",
     "scipy._lib.array_api_compat.common._typing.ndarray"): (
        True, "the same missing `ndarray`, imported under `TYPE_CHECKING`."),
    ("scipy", "missing-name", "scipy/_lib/array_api_compat/dask/array/_aliases.py",
     "scipy._lib.array_api_compat.common._typing.Dtype"): (
        True, "the same missing `Dtype`, imported under `TYPE_CHECKING` from `...common._typing`."),
    ("scipy", "missing-name", "scipy/linalg/_basic.py", "scipy.linalg._cythonized_array_utils.find_det_from_lu"): (
        True, "against the stub, which is the truth for an extension module that has one: "
              "`_cythonized_array_utils.pyi` declares `bandwidth`, `issymmetric`, `ishermitian` only, so a type "
              "checker reports this import too. At run time the Cython extension has the function: it is the "
              "stub that is stale."),
    ("scipy", "missing-name", "scipy/special/tests/test_iv_ratio.py", "scipy.special._ufuncs._iv_ratio"): (
        True, "against the stub, as above: `_ufuncs.pyi` (525 lines, no `__getattr__`) does not declare "
              "`_iv_ratio`; the line carries `# type: ignore[attr-defined]`, scipy's own acknowledgement that "
              "the stub lacks it. At run time the extension has it."),
    ("pip", "missing-module", "pip/_vendor/pygments/cmdline.py", "pip._vendor.pygments.lexers.special"): (
        True, "pip's vendoring keeps only `lexers/__init__.py`, `_mapping.py` and `python.py`; `lexers/__init__.py` "
              "replaces itself in `sys.modules` (lazy lexer attributes), which makes its names unknown but no "
              "submodule: `pygments.cmdline` fails at this module-level import."),
    ("pip", "missing-module", "pip/_vendor/rich/__main__.py", "pip._vendor.rich.markdown"): (
        True, "pip's vendoring drops rich's `markdown.py` (there is no `pip/_vendor/rich/markdown*` file and no "
              "`sys.modules` write under `rich`): `python -m pip._vendor.rich` fails at this module-level import."),
    ("pip", "missing-module", "pip/_vendor/rich/tree.py", "pip._vendor.rich.markdown"): (
        True, "the same dropped module, imported in the `if __name__ == \"__main__\":` demo at the end of "
              "`tree.py`: running that file fails."),
}

BEGIN = "<!-- foreign-trees: begin (generated by benchmarks/bench_foreign_trees.py --update-docs) -->"
END = "<!-- foreign-trees: end -->"
DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "foreign-trees.md")


def wheel(dist: str, version: str, wheels: str) -> str:
    """The wheel of `dist==version` in `wheels`, downloaded there when absent."""
    pattern = os.path.join(wheels, f"{dist.replace('-', '_')}-{version}-*.whl")
    found = glob.glob(pattern)
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", f"{dist}=={version}",
                        "-d", wheels], check=True)
        found = glob.glob(pattern)
    if not found:
        raise SystemExit(f"bench_foreign_trees: no wheel for {dist}=={version} in {wheels}")
    return sorted(found)[0]


def unpack(path: str, roots: tuple[str, ...], into: str) -> None:
    """The root packages' files of the wheel at `path`, under `into`."""
    with zipfile.ZipFile(path) as zf:
        names = [n for n in zf.namelist() if n.split("/", 1)[0] in roots]
        zf.extractall(into, names)


def lint(src: str, roots: tuple[str, ...]) -> tuple[dict, float]:
    cmd = [sys.executable, "-m", "contracts", "--src", src, "--no-cache", "--output-format", "json"]
    for root in roots:
        cmd += ["--root-package", root]
    start = time.perf_counter()
    # Run in the tree, so paths are shown relative to it (the keys of `VERDICTS`).
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=src)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench_foreign_trees: {' '.join(cmd)} exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout), wall


def verdict(dist: str, f: dict) -> tuple[bool | None, str]:
    return VERDICTS.get((dist, f["rule"], f["path"], f["imported"]), (None, "unread"))


def run(wheels: str) -> list[dict]:
    rows = []
    for dist, version, roots in CORPUS:
        path = wheel(dist, version, wheels)
        with tempfile.TemporaryDirectory(prefix="foreign-") as tree:
            unpack(path, roots, tree)
            data, wall = lint(tree, roots)
        findings = data["findings"]
        scanned = data.get("summary", {}).get("files_scanned", data.get("files_scanned"))
        rows.append({"dist": dist, "version": version, "roots": roots, "scanned": scanned, "wall": wall,
                     "findings": findings})
        print(f"{dist}=={version}: {scanned} files, {len(findings)} findings "
              f"({sum(f['replacement'] is not None for f in findings)} fixable), {wall:.2f} s", flush=True)
        for f in findings:
            true, why = verdict(dist, f)
            mark = {True: "true", False: "FALSE", None: "unread"}[true]
            print(f"  [{mark}] {f['path']}:{f['line']}:{f['col']} {f['rule']} {f['message']}"
                  + (f" -> {f['replacement']}" if f["replacement"] else ""))
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [BEGIN, "", "| package | version | roots | files scanned | findings | fixable | true | false | unread |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    totals = [0] * 6
    for r in rows:
        marks = [verdict(r["dist"], f)[0] for f in r["findings"]]
        counts = [r["scanned"] or 0, len(r["findings"]), sum(f["replacement"] is not None for f in r["findings"]),
                  marks.count(True), marks.count(False), marks.count(None)]
        totals = [a + b for a, b in zip(totals, counts)]
        lines.append(f"| {r['dist']} | {r['version']} | {', '.join(r['roots'])} | " + " | ".join(map(str, counts)) + " |")
    lines.append("| **total** | | | " + " | ".join(f"**{n}**" for n in totals) + " |")
    lines += ["", "Each finding, with its reading:", ""]
    for r in rows:
        for f in r["findings"]:
            true, why = verdict(r["dist"], f)
            mark = {True: "true", False: "**false**", None: "**unread**"}[true]
            fix = f" [*] -> `{f['replacement']}`" if f["replacement"] else ""
            lines.append(f"- {r['dist']} `{f['path']}:{f['line']}` {f['rule']} `{f['imported']}`{fix}: {mark}. {why}")
    if not any(r["findings"] for r in rows):
        lines.append("- none")
    lines += ["", END]
    return "\n".join(lines)


def update_docs(text: str) -> None:
    with open(DOC, encoding="utf-8") as fh:
        doc = fh.read()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"bench_foreign_trees: {DOC} lacks the marker comments")
    head, rest = doc.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(DOC, "w", encoding="utf-8") as fh:
        fh.write(head + text + tail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--wheels", help="where the wheels are kept (default: a temporary directory)")
    parser.add_argument("--update-docs", action="store_true", help=f"rewrite the generated part of {DOC}")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    if args.wheels:
        os.makedirs(args.wheels, exist_ok=True)
        rows = run(args.wheels)
    else:
        with tempfile.TemporaryDirectory(prefix="foreign-wheels-") as wheels:
            rows = run(wheels)
    text = markdown(rows)
    print(f"{sum(len(r['findings']) for r in rows)} findings in {time.perf_counter() - start:.1f} s")
    if args.update_docs:
        update_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
