"""`ignore_imports` on every contract type of this tool, in import-linter's syntax (`*` one name
part, `**` one or more), with unmatched lines reported as import-linter's
`unmatched_ignore_imports_alerting` does (error by default, warn, none)."""

from __future__ import annotations

import pytest

from contracts import ignores
from tests.contracts.conftest import BASE_CONFIG, run_json


def _config(section: str, lines: list[str], alerting: str | None = None) -> str:
    """BASE_CONFIG with `ignore_imports` (and the alerting option) added to contract `section`."""
    head = f"[importlinter:contract:{section}]\n"
    before, after = BASE_CONFIG.split(head)
    body, _, rest = after.partition("\n\n")
    extra = "\nignore_imports =\n" + "".join(f"    {line}\n" for line in lines)
    if alerting:
        extra += f"unmatched_ignore_imports_alerting = {alerting}\n"
    return before + head + body + extra.rstrip("\n") + ("\n\n" + rest if rest else "\n")


REMOVED = {"pkg/srt/models/m.py": "from pkg.jit_kernel import hicache\n",
           "pkg/srt/other.py": "import pkg.jit_kernel.norm\n"}
BOUNDARY = {"pkg/kernels/ops/gemm/x.py": "from pkg.kernels.ops.kvcache.hicache import transfer\n"}
LAYER_CHAIN = {"pkg/kernels/ops/kvcache/a.py": "import pkg.kernels.ops.kvcache.b\n",
               "pkg/kernels/ops/kvcache/b.py": "import pkg.srt.runtime\n",
               "pkg/srt/runtime.py": "X = 1\n"}


def _rules(data):
    return sorted((f["rule"], f["importer"]) for f in data["findings"])


@pytest.mark.parametrize("section, files, lines, left", [
    ("removed", REMOVED, ["pkg.srt.*.m -> pkg.jit_kernel.hicache"], [("removed-module", "pkg.srt.other")]),
    ("removed", REMOVED, ["pkg.srt.** -> pkg.jit_kernel.**"], []),
    ("groups", BOUNDARY, ["pkg.kernels.ops.gemm.x -> pkg.kernels.ops.kvcache.hicache"], []),
    ("groups", BOUNDARY, ["pkg.kernels.ops.gemm.** -> pkg.kernels.ops.kvcache.*"], []),
    # The chain a -> b -> srt goes with the edge it runs through, as in import-linter.
    ("layer", LAYER_CHAIN, ["pkg.kernels.ops.kvcache.b -> pkg.srt.runtime"], []),
])
def test_every_contract_type_ignores_matching_imports(tree, section, files, lines, left):
    root = tree(files)
    code, before = run_json(root)
    assert before["findings"], "the fixture must have findings to ignore"
    root = tree(files, config=_config(section, lines))
    code, data = run_json(root)
    assert _rules(data) == left
    assert code == (1 if left else 0)


def test_a_line_that_matches_nothing_is_reported_with_its_line(tree):
    root = tree(REMOVED, config=_config("removed", ["pkg.srt.** -> pkg.jit_kernel.**", "pkg.nope -> pkg.jit_kernel.x"]))
    code, data = run_json(root)
    assert code == 1
    [finding] = data["findings"]
    assert finding["rule"] == "unused-allowed-import" and finding["path"] == ".importlinter"
    assert "`ignore_imports` line `pkg.nope -> pkg.jit_kernel.x` of contract `removed` matches no import" in finding["message"]
    text = (root / ".importlinter").read_text().splitlines()
    assert text[finding["line"] - 1].strip() == "pkg.nope -> pkg.jit_kernel.x"


@pytest.mark.parametrize("alerting, code, warned", [("error", 1, False), ("warn", 0, True), ("none", 0, False)])
def test_unmatched_ignore_imports_alerting(tree, capsys, alerting, code, warned):
    root = tree(config=_config("layer", ["pkg.kernels.x -> pkg.srt.y"], alerting))
    got, data = run_json(root)
    err = capsys.readouterr().err
    assert got == code
    assert ("warning:" in err and "pkg.kernels.x -> pkg.srt.y" in err) is warned


@pytest.mark.parametrize("line, message", [
    ("pkg.a pkg.b", "must be 'importer.module -> imported.module'"),
    ("pkg.a -> pkg.b*", "is not a module expression"),
    ("pkg.** -> pkg.*.**", "has a wildcard after a wildcard"),
])
def test_bad_lines_are_config_errors_naming_the_option(tree, capsys, line, message):
    from contracts.cli import main

    root = tree(config=_config("groups", [line]))
    assert main(["--config", str(root / ".importlinter"), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "section [importlinter:contract:groups], option 'ignore_imports'" in err and message in err


def test_bad_alerting_value_is_a_config_error(tree, capsys):
    from contracts.cli import main

    root = tree(config=_config("layer", ["pkg.a -> pkg.b"], "loud"))
    assert main(["--config", str(root / ".importlinter"), "--no-cache"]) == 2
    assert "option 'unmatched_ignore_imports_alerting': expected one of error, warn, none" in capsys.readouterr().err


@pytest.mark.parametrize("pattern, module, matches", [
    ("pkg.*", "pkg.a", True), ("pkg.*", "pkg.a.b", False), ("pkg.**", "pkg.a.b", True),
    ("pkg.**", "pkg", False), ("pkg.*.c", "pkg.b.c", True), ("pkg.**.c", "pkg.a.b.c", True),
    ("pkg.a", "pkg.a.b", False), ("pkg.a", "pkg.ab", False),
])
def test_wildcards_as_grimp_matches_them(pattern, module, matches):
    [p] = ignores.parse_ignore_imports("ignore_imports", [f"{pattern} -> x"])
    assert p.matches(module, "x") is matches


def test_lint_imports_reads_the_same_options(tree):
    from tests.contracts.test_cli import _lint_imports

    root = tree(REMOVED, config=_config("removed", ["pkg.srt.** -> pkg.jit_kernel.**"]))
    assert _lint_imports(root).returncode == 0
    root = tree(REMOVED, config=_config("removed", ["pkg.srt.models.m -> pkg.jit_kernel.hicache"]))
    out = _lint_imports(root)
    assert out.returncode == 1 and "pkg/srt/other.py" in out.stdout and "pkg/srt/models/m.py" not in out.stdout
