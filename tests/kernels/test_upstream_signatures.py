"""Our operators against upstream sglang 0.5.17's, read with `ast` from its wheel.

For every operator module under `sglang/kernels/ops/<group>/` whose path upstream's wheel also
has (`sglang/kernels/ops/<group>/<file>.py`), every public top-level function of ours that
upstream's module also defines must have upstream's signature: parameter names, order, kinds
(positional-only, positional-or-keyword, `*args`, keyword-only, `**kwargs`) and defaults. Any
other public function of such a module must be a torch reference (`<name>_ref`), a support
predicate (`can_use_*`, `is_supported_*`), or be named in the module's "Differs from upstream:"
paragraph. Every registered operator must carry an upstream name. The same walk collects each
module's "Differs from upstream:" paragraphs: that list is printed, and each entry must give a
reason. The walk is generic: a module added, moved or renamed is covered without editing this test.

The wheel comes from `SGLANG_WHEELS` (a directory holding `sglang-0.5.17-*.whl`, the convention
of tests/contracts/test_packaging.py) or `pip download --no-deps sglang==0.5.17`; without
either the tests are skipped and say why. Nothing is imported from either tree.
"""

from __future__ import annotations

import ast
import glob
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sglang.kernels import registry

UPSTREAM = "0.5.17"
REPO_ROOT = Path(__file__).resolve().parents[2]
OPS_DIR = REPO_ROOT / "sglang" / "kernels" / "ops"
# Public additions that need no justification: references and support predicates.
ALLOWED_EXTRA = re.compile(r"^(.+_ref|can_use_\w+|is_supported_\w+)$")
DIFFERS = re.compile(r"Differs from upstream:(.*?)(?:\n\s*\n|\Z)", re.S)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> dict[str, str]:
    """`sglang/kernels/ops/...py` path in the wheel -> source text."""
    pattern = f"sglang-{UPSTREAM}-*.whl"
    wheel = None
    wheels = os.environ.get("SGLANG_WHEELS")
    if wheels:
        found = sorted(glob.glob(os.path.join(wheels, pattern)))
        wheel = Path(found[0]) if found else None
    if wheel is None:
        dest = tmp_path_factory.mktemp("upstream-wheel")
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest),
                 f"sglang=={UPSTREAM}"], capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"sglang=={UPSTREAM} wheel not available (set SGLANG_WHEELS=DIR, or allow "
                        f"`pip download`): {exc}")
        found = sorted(dest.glob(pattern))
        if proc.returncode != 0 or not found:
            reason = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
            pytest.skip(f"sglang=={UPSTREAM} wheel not available (set SGLANG_WHEELS=DIR, or allow "
                        f"`pip download`): {reason}")
        wheel = found[0]
    with zipfile.ZipFile(wheel) as zf:
        return {n: zf.read(n).decode("utf-8") for n in zf.namelist()
                if n.startswith("sglang/kernels/ops/") and n.endswith(".py")}


def _our_modules() -> list[Path]:
    """Our operator files: `ops/<group>/<file>.py`, not packages' `__init__` or private `_*.py`."""
    return sorted(p for p in OPS_DIR.glob("*/**/*.py") if not p.name.startswith("_"))


def _rel(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def _functions(source: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(source)
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _default(node: ast.expr | None):
    """A comparable default: the literal's value where it is one (1e-6 == 1e-06), else its text."""
    if node is None:
        return None
    try:
        return ("value", ast.literal_eval(node))
    except ValueError:
        return ("expr", ast.unparse(node))


def signature(fn: ast.FunctionDef) -> list[tuple[str, str, object]]:
    """[(kind, name, default)] in order, as `inspect.Parameter` would describe them."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = []
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        params.append((kind, arg.arg, _default(default)))
    if a.vararg:
        params.append(("VAR_POSITIONAL", a.vararg.arg, None))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        params.append(("KEYWORD_ONLY", arg.arg, _default(default)))
    if a.kwarg:
        params.append(("VAR_KEYWORD", a.kwarg.arg, None))
    return params


def _upstream_key(ours: Path, upstream: dict[str, str]) -> str | None:
    """The upstream file `ours` answers to: the same path, or else its group's `__init__.py` when
    upstream defines every public function of `ours` (other than `_ref`s) at package level (0.5.17
    defines `layernorm.rmsnorm` and `layernorm.fused_add_rmsnorm` in the group's `__init__`)."""
    key = "sglang/" + ours.relative_to(REPO_ROOT / "sglang").as_posix()
    if key in upstream:
        return key
    package = key.rsplit("/", 1)[0] + "/__init__.py"
    public = {n for n in _functions(ours.read_text(encoding="utf-8"))
              if not n.startswith("_") and not n.endswith("_ref")}
    if package in upstream and public and public <= set(_functions(upstream[package])):
        return package
    return None


def _compare(ours: Path, upstream: dict[str, str]):
    """(checked names, mismatches, unexplained extras) for one of our modules."""
    key = _upstream_key(ours, upstream)
    if key is None:
        return None
    our_source = ours.read_text(encoding="utf-8")
    mine, theirs = _functions(our_source), _functions(upstream[key])
    doc = ast.get_docstring(ast.parse(our_source)) or ""
    differs = " ".join(DIFFERS.findall(doc))
    checked, mismatches, extras = [], [], []
    for name, fn in mine.items():
        if name.startswith("_"):
            continue
        if name in theirs:
            checked.append(name)
            got, want = signature(fn), signature(theirs[name])
            if got != want:
                mismatches.append(f"{_rel(ours)}: `{name}` has {got}, upstream {UPSTREAM} has {want}")
        elif not ALLOWED_EXTRA.match(name) and not re.search(rf"`{name}[`(]", differs):
            extras.append(f"{_rel(ours)}: `{name}` is not in upstream's {key}; rename it to "
                          "upstream's API, or name it in the module's \"Differs from upstream:\" "
                          "paragraph with the reason")
    return checked, mismatches, extras


def test_every_public_function_with_an_upstream_name_has_upstreams_signature(upstream):
    checked, mismatches, extras = [], [], []
    for module in _our_modules():
        result = _compare(module, upstream)
        if result is None:
            continue
        names, bad, extra = result
        checked += [f"{_rel(module)}:{n}" for n in names]
        mismatches += bad
        extras += extra
    assert not mismatches, "\n".join(mismatches)
    assert not extras, "\n".join(extras)
    # The walk found the operators (a broken walk would pass vacuously).
    assert len(checked) >= len(registry.op_ids()), checked


def test_every_registered_operator_carries_an_upstream_name(upstream):
    missing = []
    for op_id in registry.op_ids():
        module, _, attr = registry.get(op_id).targets["triton"].partition(":")
        path = REPO_ROOT / (module.replace(".", "/") + ".py")
        key = _upstream_key(path, upstream) if path.is_file() else None
        if key is None:
            missing.append(f"{op_id}: upstream {UPSTREAM} has no {module.replace('.', '/')}.py")
        elif attr not in _functions(upstream[key]):
            missing.append(f"{op_id}: upstream's {key} has no `{attr}`")
    assert not missing, "\n".join(missing)


def contract_differences() -> list[tuple[str, str]]:
    """[(module, paragraph)] of every "Differs from upstream:" paragraph in our operator modules."""
    out = []
    for module in _our_modules():
        doc = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8"))) or ""
        for paragraph in DIFFERS.findall(doc):
            out.append((_rel(module), " ".join(paragraph.split())))
    return out


def test_contract_differences_are_listed_and_each_gives_a_reason(upstream, capsys):
    differences = contract_differences()
    with capsys.disabled():
        print(f"\nOperators whose contract differs from upstream {UPSTREAM} ({len(differences)}):")
        for module, text in differences:
            print(f"- {module}: {text}")
    for module, text in differences:
        # A justification names what differs and why: a few sentences, not a bare "yes".
        assert len(text.split()) >= 12, f"{module}: 'Differs from upstream:' says too little: {text!r}"
    # Every difference belongs to a module that has an upstream counterpart to differ from.
    orphans = sorted(m for m, _ in differences if _upstream_key(REPO_ROOT / m, upstream) is None)
    assert not orphans, orphans


def test_signature_reads_every_kind_and_default():
    fn = _functions("def f(a, /, b, c=1e-6, *args, d, e=None, f=X.Y, **kw): pass")["f"]
    assert signature(fn) == [
        ("POSITIONAL_ONLY", "a", None),
        ("POSITIONAL_OR_KEYWORD", "b", None),
        ("POSITIONAL_OR_KEYWORD", "c", ("value", 1e-06)),
        ("VAR_POSITIONAL", "args", None),
        ("KEYWORD_ONLY", "d", None),
        ("KEYWORD_ONLY", "e", ("value", None)),
        ("KEYWORD_ONLY", "f", ("expr", "X.Y")),
        ("VAR_KEYWORD", "kw", None),
    ]
    other = _functions("def f(a, b, c=1e-6, *args, e=None, d, f=X.Y, **kw): pass")["f"]
    assert signature(other) != signature(fn)  # order and kinds both count
