"""`--fix` / `--diff`: every rewrite form, and every safety property (idempotent, atomic, compiled
before it is written, files without a fixable finding untouched, line endings and encodings
kept, unfixable findings reported with their reason)."""

from __future__ import annotations

import os
import stat
from textwrap import dedent

import pytest

from contracts import fix
from contracts.cli import main
from contracts.findings import Finding
from tests.contracts.conftest import cwd

CASE = "pkg/srt/case.py"

# name: (source of pkg/srt/case.py, the same file after --fix). BASE_CONFIG maps
# hicache -> pkg.kernels.ops.kvcache.hicache, norm -> pkg.kernels.ops.layernorm.norm,
# utils -> pkg.kernels.jit; pkg.jit_kernel.mxfp8 has no replacement.
REWRITES = {
    "from_import_keeps_parentheses_aliases_comments": (
        "x = 1\nfrom pkg.jit_kernel.hicache import (  # head\n    a,\n    b as c,  # why\n)\n",
        "x = 1\nfrom pkg.kernels.ops.kvcache.hicache import (  # head\n    a,\n    b as c,  # why\n)\n",
    ),
    "import_as": (
        "import os, pkg.jit_kernel.hicache as h  # keep\n",
        "import os, pkg.kernels.ops.kvcache.hicache as h  # keep\n",
    ),
    "from_package_import_module_keeps_bound_name": (
        "from pkg.jit_kernel import hicache\n",
        "from pkg.kernels.ops.kvcache import hicache\n",
    ),
    "from_package_import_renamed_module_adds_as": (
        "from pkg.jit_kernel import utils\nfrom pkg.jit_kernel import utils as u\n",
        "from pkg.kernels import jit as utils\nfrom pkg.kernels import jit as u\n",
    ),
    "names_moving_to_different_groups_are_split_in_place": (
        "import os\nfrom pkg.jit_kernel import hicache, norm as n  # noqa: F401\nx = 1\n",
        "import os\nfrom pkg.kernels.ops.kvcache import hicache  # noqa: F401\n"
        "from pkg.kernels.ops.layernorm import norm as n  # noqa: F401\nx = 1\n",
    ),
    "split_keeps_indentation_and_name_comments": (
        "def f():\n    if True:\n        from pkg.jit_kernel import (\n            hicache,  # one\n"
        "            norm,  # two\n        )\n        return hicache, norm\n",
        "def f():\n    if True:\n        from pkg.kernels.ops.kvcache import (\n            hicache,  # one\n"
        "        )\n        from pkg.kernels.ops.layernorm import (\n            norm,  # two\n"
        "        )\n        return hicache, norm\n",
    ),
    "relative_import_into_removed_path_becomes_absolute": (
        "from ..jit_kernel.hicache import a\nfrom ..jit_kernel import norm\nfrom .. import kernels\n",
        "from pkg.kernels.ops.kvcache.hicache import a\nfrom pkg.kernels.ops.layernorm import norm\n"
        "from .. import kernels\n",
    ),
    "lazy_import_in_method": (
        "class A:\n    def m(self):\n        from pkg.jit_kernel.norm import rms as r\n        return r\n",
        "class A:\n    def m(self):\n        from pkg.kernels.ops.layernorm.norm import rms as r\n        return r\n",
    ),
    "type_checking_block": (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.jit_kernel.hicache import T\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.kernels.ops.kvcache.hicache import T\n",
    ),
    "star_import": (
        "from pkg.jit_kernel.norm import *\n",
        "from pkg.kernels.ops.layernorm.norm import *\n",
    ),
    "string_targets_keep_their_quotes": (
        "import importlib\nm = importlib.import_module('pkg.jit_kernel.hicache')\n"
        "OPS = {\"a\": \"pkg.jit_kernel.hicache:transfer\", 'b': r'pkg.jit_kernel.norm'}\n"
        "msg = 'see pkg.jit_kernel.hicache for details'\n",
        "import importlib\nm = importlib.import_module('pkg.kernels.ops.kvcache.hicache')\n"
        "OPS = {\"a\": \"pkg.kernels.ops.kvcache.hicache:transfer\", 'b': r'pkg.kernels.ops.layernorm.norm'}\n"
        "msg = 'see pkg.jit_kernel.hicache for details'\n",
    ),
    "mock_patch_target_in_decorator_of_method": (
        "from unittest import mock\n\nclass T:\n    @mock.patch(\"pkg.jit_kernel.norm.rms\")\n"
        "    def test(self, m):\n        pass\n",
        "from unittest import mock\n\nclass T:\n    @mock.patch(\"pkg.kernels.ops.layernorm.norm.rms\")\n"
        "    def test(self, m):\n        pass\n",
    ),
    "bare_import_and_its_attribute_chains": (
        "import os\nimport pkg.jit_kernel.hicache\nimport pkg.kernels.jit\n\n\ndef g():\n"
        "    return pkg.jit_kernel.hicache.transfer(pkg.kernels.jit.use_triton, os.sep, pkg)\n",
        "import os\nimport pkg.kernels.ops.kvcache.hicache\nimport pkg.kernels.jit\n\n\ndef g():\n"
        "    return pkg.kernels.ops.kvcache.hicache.transfer(pkg.kernels.jit.use_triton, os.sep, pkg)\n",
    ),
    "lazy_bare_import_in_function": (
        "def g():\n    import pkg.jit_kernel.norm\n    return pkg.jit_kernel.norm.rms()\n",
        "def g():\n    import pkg.kernels.ops.layernorm.norm\n    return pkg.kernels.ops.layernorm.norm.rms()\n",
    ),
    "non_ascii_before_the_target_on_the_line": (
        "x = 'é'; from pkg.jit_kernel.hicache import a\ny = ('ü', 'pkg.jit_kernel.norm')\n",
        "x = 'é'; from pkg.kernels.ops.kvcache.hicache import a\ny = ('ü', 'pkg.kernels.ops.layernorm.norm')\n",
    ),
    "top_level_statements_sharing_a_line": (
        "x = (1,\n     2); from pkg.jit_kernel.hicache import a\n",
        "x = (1,\n     2); from pkg.kernels.ops.kvcache.hicache import a\n",
    ),
    "one_line_compound_statement": (
        "try: from pkg.jit_kernel import hicache, norm\nexcept ImportError: pass\n",
        "try: from pkg.kernels.ops.kvcache import hicache; from pkg.kernels.ops.layernorm import norm\n"
        "except ImportError: pass\n",
    ),
}

# name: (source, the reason printed for the finding left alone). The file must stay unchanged.
BARE_IMPORT_UNSAFE = {
    "root_name_rebound": (
        "import pkg.jit_kernel.hicache\npkg = 3\n", "`pkg` is also bound at line 2"),
    "root_name_is_a_parameter": (
        "import pkg.jit_kernel.hicache\ndef f(pkg):\n    return pkg.jit_kernel.hicache\n",
        "`pkg` is also bound at line 2"),
    "module_attribute_reassigned": (
        "import pkg.jit_kernel.hicache\npkg.jit_kernel.hicache = None\n",
        "line 2 assigns to or deletes `pkg.jit_kernel.hicache`"),
    "chain_into_removed_path_not_imported": (
        "import pkg.jit_kernel.hicache\nx = pkg.jit_kernel.norm.rms\n",
        "`pkg.jit_kernel.norm.rms` (line 2) reaches the removed path, but not through a module this "
        "file imports"),
    "removed_package_used_on_its_own": (
        "import pkg.jit_kernel.hicache\nx = pkg.jit_kernel\n",
        "`pkg.jit_kernel` (line 2) reaches the removed path"),
    "other_module_through_the_same_name": (
        "import pkg.jit_kernel.hicache\nx = pkg.srt.other.f\n",
        "`pkg.srt.other.f` (line 2) uses the name `pkg` this import binds, through a module this "
        "file does not import"),
}


def _fix(root, *args, diff=False):
    with cwd(root):
        return main(["--config", str(root / ".importlinter"), "--no-cache", "--diff" if diff else "--fix", *args])


def _read(root, rel=CASE) -> bytes:
    return (root / rel).read_bytes()


# Cases whose file also imports the shared JIT infra from the runtime (before or after the
# rewrite): a `private-import` finding remains, so --fix exits 1 as ruff's does.
OTHER_RULES_REMAIN = {"bare_import_and_its_attribute_chains", "from_package_import_renamed_module_adds_as"}


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_rewrites_when_finding_is_fixable(tree, capsys, name):
    before, after = REWRITES[name]
    root = tree({CASE: before})
    remains = name in OTHER_RULES_REMAIN
    assert _fix(root) == (1 if remains else 0)
    out = capsys.readouterr().out
    assert _read(root).decode() == after
    assert f"{CASE}: fixed" in out
    if remains:
        assert "0 findings not auto-fixable.\n" in out
        assert f"{CASE}:" in out.split("not auto-fixable.\n", 1)[1] and " private-import " in out
        assert out.rstrip().endswith("of other rules remain; --fix does not repair them.")
    else:
        assert out.rstrip().endswith("0 findings not auto-fixable.")
    # Idempotent: the second run fixes nothing and writes nothing.
    mtime = os.stat(root / CASE).st_mtime_ns
    assert _fix(root) == (1 if remains else 0)
    out = capsys.readouterr().out
    assert out.startswith("Fixed 0 imports in 0 files; 0 findings not auto-fixable.\n")
    assert remains or out == "Fixed 0 imports in 0 files; 0 findings not auto-fixable.\n"
    assert os.stat(root / CASE).st_mtime_ns == mtime


@pytest.mark.parametrize("name", sorted(BARE_IMPORT_UNSAFE))
def test_bare_import_is_left_alone_when_rewrite_is_unsafe(tree, capsys, name):
    source, reason = BARE_IMPORT_UNSAFE[name]
    root = tree({CASE: source})
    assert _fix(root) == 1
    out = capsys.readouterr().out
    assert _read(root).decode() == source
    assert f"{CASE}:1:1: not auto-fixable: `pkg.jit_kernel.hicache`: bare `import pkg.jit_kernel.hicache`: " in out
    assert reason in out
    assert out.rstrip().endswith("Fixed 0 imports in 0 files; 1 finding not auto-fixable.")


def test_fixes_what_it_can_when_file_has_fixable_and_unfixable_findings(tree, capsys):
    source = dedent("""\
        import pkg.jit_kernel.hicache
        from pkg.jit_kernel.norm import rms
        from pkg.jit_kernel import (
            hicache as h,  # one
            mxfp8,  # two
        )
        from pkg.jit_kernel.mxfp8 import quant
        pkg = None
    """)
    root = tree({CASE: source})
    assert _fix(root) == 1
    assert _read(root).decode() == dedent("""\
        import pkg.jit_kernel.hicache
        from pkg.kernels.ops.layernorm.norm import rms
        from pkg.kernels.ops.kvcache import (
            hicache as h,  # one
        )
        from pkg.jit_kernel import (
            mxfp8,  # two
        )
        from pkg.jit_kernel.mxfp8 import quant
        pkg = None
    """)
    assert capsys.readouterr().out == dedent("""\
        pkg/srt/case.py: fixed 2 imports
        pkg/srt/case.py:1:1: not auto-fixable: `pkg.jit_kernel.hicache`: bare `import pkg.jit_kernel.hicache`: `pkg` is also bound at line 8, so a `pkg.jit_kernel.hicache.…` chain may not mean the module; rewrite it by hand
        pkg/srt/case.py:3:1: not auto-fixable: `pkg.jit_kernel`: `replacements` names no new place for `pkg.jit_kernel`; add a line for it to the contract
        pkg/srt/case.py:7:1: not auto-fixable: `pkg.jit_kernel.mxfp8`: `replacements` names no new place for `pkg.jit_kernel.mxfp8`; add a line for it to the contract
        Fixed 2 imports in 1 file; 3 findings not auto-fixable.
    """)
    # Idempotent with findings left: the same report, nothing written.
    mtime = os.stat(root / CASE).st_mtime_ns
    assert _fix(root) == 1
    assert capsys.readouterr().out.endswith("Fixed 0 imports in 0 files; 3 findings not auto-fixable.\n")
    assert os.stat(root / CASE).st_mtime_ns == mtime


def test_each_bare_import_is_judged_on_its_own_when_one_has_no_replacement(tree, capsys):
    source = dedent("""\
        import pkg.jit_kernel.hicache
        import pkg.jit_kernel.mxfp8


        def f():
            return pkg.jit_kernel.hicache.transfer(pkg.jit_kernel.mxfp8.quant)
    """)
    root = tree({CASE: source})
    assert _fix(root) == 1
    assert _read(root).decode() == source.replace("pkg.jit_kernel.hicache", "pkg.kernels.ops.kvcache.hicache")
    assert "`pkg.jit_kernel.mxfp8`: `replacements` names no new place" in capsys.readouterr().out


def test_is_reported_when_no_rewritable_form_is_found(tree, capsys):
    # A relative `import_module` target resolves into the removed path, but its literal is not
    # the module name: rewriting it needs judgement, so it is left and reported.
    source = "import importlib\nm = importlib.import_module('.hicache', 'pkg.jit_kernel')\n"
    root = tree({CASE: source})
    assert _fix(root) == 1
    assert _read(root).decode() == source
    assert ("pkg/srt/case.py:2:29: not auto-fixable: `pkg.jit_kernel.hicache`: no import statement or string "
            "literal this tool can rewrite was found here") in capsys.readouterr().out


def test_finding_without_replacement_is_reported_not_guessed(tree, capsys):
    root = tree({CASE: "from pkg.jit_kernel.mxfp8 import quant\n"})
    assert _fix(root) == 1
    assert _read(root) == b"from pkg.jit_kernel.mxfp8 import quant\n"
    assert "`replacements` names no new place for `pkg.jit_kernel.mxfp8`" in capsys.readouterr().out


def test_file_without_fixable_finding_is_not_rewritten(tree, capsys):
    root = tree({CASE: "from pkg.jit_kernel.mxfp8 import quant\n", "pkg/srt/fixme.py": "import pkg.jit_kernel.norm as n\n"})
    stamps = {p: os.stat(p).st_mtime_ns for p in root.rglob("*.py") if p.name != "fixme.py"}
    os.utime(root / CASE, ns=(1, 1))  # any rewrite would move this
    stamps[root / CASE] = 1
    assert _fix(root) == 1
    capsys.readouterr()
    assert {p: os.stat(p).st_mtime_ns for p in stamps} == stamps
    assert _read(root, "pkg/srt/fixme.py") == b"import pkg.kernels.ops.layernorm.norm as n\n"


def test_diff_prints_patch_and_writes_nothing(tree, capsys):
    root = tree({CASE: "x = 1\nfrom pkg.jit_kernel.hicache import a\n"})
    mtime = os.stat(root / CASE).st_mtime_ns
    assert _fix(root, diff=True) == 1  # as ruff's: 1 when it would change something
    captured = capsys.readouterr()
    assert captured.out == dedent("""\
        --- a/pkg/srt/case.py
        +++ b/pkg/srt/case.py
        @@ -1,2 +1,2 @@
         x = 1
        -from pkg.jit_kernel.hicache import a
        +from pkg.kernels.ops.kvcache.hicache import a
    """)
    assert captured.err == "pkg/srt/case.py: would fix 1 import\nWould fix 1 import in 1 file; 0 findings not auto-fixable.\n"
    assert os.stat(root / CASE).st_mtime_ns == mtime


def test_fix_and_diff_together_is_a_usage_error(tree, capsys):
    root = tree()
    with pytest.raises(SystemExit) as e:
        main(["--config", str(root / ".importlinter"), "--fix", "--diff"])
    assert e.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_line_endings_are_kept_when_file_uses_crlf(tree, capsys):
    root = tree({CASE: ""})
    (root / CASE).write_bytes(b"import os\r\nfrom pkg.jit_kernel import hicache, norm  # x\r\n\r\ndef f():\r\n"
                              b"    return os\r\n")
    assert _fix(root) == 0
    assert _read(root) == (b"import os\r\nfrom pkg.kernels.ops.kvcache import hicache  # x\r\n"
                           b"from pkg.kernels.ops.layernorm import norm  # x\r\n\r\ndef f():\r\n    return os\r\n")


def test_encoding_declaration_and_bytes_are_kept_when_file_is_latin1(tree, capsys):
    root = tree({CASE: ""})
    source = "# -*- coding: latin-1 -*-\n# café\nfrom pkg.jit_kernel.hicache import a  # naïve\nS = 'é'\n"
    (root / CASE).write_bytes(source.encode("latin-1"))
    assert _fix(root) == 0
    assert _read(root) == source.replace("pkg.jit_kernel.hicache", "pkg.kernels.ops.kvcache.hicache").encode("latin-1")


def test_byte_order_mark_is_kept(tree, capsys):
    root = tree({CASE: ""})
    (root / CASE).write_bytes(b"\xef\xbb\xbffrom pkg.jit_kernel.hicache import a\n")
    assert _fix(root) == 0
    assert _read(root) == b"\xef\xbb\xbffrom pkg.kernels.ops.kvcache.hicache import a\n"


def test_file_with_parse_error_is_left_alone(tree, capsys):
    source = b"from pkg.jit_kernel.hicache import a\ndef broken(:\n"
    root = tree({CASE: ""})
    (root / CASE).write_bytes(source)
    _fix(root)
    assert _read(root) == source
    # The checker reports such a file as a parse error; given a finding anyway, the fixer refuses.
    finding = Finding(CASE, 1, 1, "removed-module", "pkg.srt.case", "pkg.jit_kernel.hicache", "m",
                      "pkg.kernels.ops.kvcache.hicache")
    outcome = fix.fix_source(source, "pkg.srt.case", False, [finding], ("pkg.jit_kernel",))
    assert outcome.new is None and outcome.fixed == []
    assert "cannot be parsed" in outcome.unfixable[0][1]


def test_rewrite_is_not_written_when_it_would_not_compile(tree, capsys):
    # `ast` parses it (so the checker reports the import); `compile` refuses the module-level return.
    source = "from pkg.jit_kernel.hicache import a\nreturn a\n"
    root = tree({CASE: source})
    assert _fix(root) == 1
    assert _read(root).decode() == source
    assert "the rewritten file would not compile (SyntaxError: 'return' outside function" in capsys.readouterr().out


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "rename"])
def test_write_is_atomic_and_keeps_permission_bits(tree, capsys, monkeypatch, exchange):
    from contracts.fix import write

    root = tree({CASE: "from pkg.jit_kernel.hicache import a\n"})
    os.chmod(root / CASE, 0o640)
    calls = []
    if not exchange:
        monkeypatch.setattr(write, "_EXCHANGE", None)
    real_exchange, real_rename = write._exchange, os.rename

    def spy_exchange(dir_fd, a, b):
        calls.append((os.readlink(f"/proc/self/fd/{dir_fd}"), True, a, os.stat(a, dir_fd=dir_fd).st_mode, b))
        return real_exchange(dir_fd, a, b)

    def spy_rename(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        # relative to the directory's descriptor, both sides: a swapped directory cannot redirect it
        calls.append((os.readlink(f"/proc/self/fd/{src_dir_fd}"), src_dir_fd == dst_dir_fd, src,
                      os.stat(src, dir_fd=src_dir_fd).st_mode, dst))
        real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    if exchange:
        monkeypatch.setattr(write, "_exchange", spy_exchange)
    monkeypatch.setattr(os, "rename", spy_rename)
    assert _fix(root) == 0
    [(directory, same_fd, temp_name, mode, target)] = calls
    assert directory == str((root / CASE).parent) and same_fd
    assert temp_name.startswith(".case.py.") and target == "case.py"
    assert stat.S_IMODE(mode) == 0o640
    assert stat.S_IMODE(os.stat(root / CASE).st_mode) == 0o640
    assert [p.name for p in (root / CASE).parent.iterdir() if "case" in p.name] == ["case.py"]


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2-exchange", "rename"])
def test_failed_write_leaves_original_and_is_reported(tree, capsys, monkeypatch, exchange):
    from contracts.fix import write

    source = "from pkg.jit_kernel.hicache import a\n"
    root = tree({CASE: source})
    if not exchange:
        monkeypatch.setattr(write, "_EXCHANGE", None)

    def fail(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write, "_exchange", fail)
    monkeypatch.setattr(os, "rename", fail)
    assert _fix(root) == 1
    out = capsys.readouterr().out
    assert _read(root).decode() == source
    assert [p.name for p in (root / CASE).parent.iterdir() if "case" in p.name] == ["case.py"]  # no temp left
    assert "not auto-fixable: `pkg.jit_kernel.hicache`: cannot write the file (No space left on device)" in out
    assert out.endswith("Fixed 0 imports in 0 files; 1 finding not auto-fixable.\n")


def test_read_only_file_is_not_written(tree, capsys):
    source = "from pkg.jit_kernel.hicache import a\n"
    root = tree({CASE: source})
    os.chmod(root / CASE, 0o444)
    try:
        assert _fix(root) == 1
        assert _read(root).decode() == source
        assert "is read-only" in capsys.readouterr().out
    finally:
        os.chmod(root / CASE, 0o644)


def test_symlinked_file_is_rewritten_through_the_link(tree, capsys):
    root = tree({"pkg/srt/real_case.py": "from pkg.jit_kernel.hicache import a\n"})
    os.symlink("real_case.py", root / CASE)
    assert _fix(root, str(root / CASE)) == 0
    assert os.path.islink(root / CASE)
    assert _read(root, "pkg/srt/real_case.py") == b"from pkg.kernels.ops.kvcache.hicache import a\n"


def test_only_the_files_named_are_fixed_when_paths_are_given(tree, capsys):
    root = tree({CASE: "from pkg.jit_kernel.hicache import a\n", "pkg/srt/other.py": "from pkg.jit_kernel.norm import rms\n"})
    assert _fix(root, str(root / "pkg/srt/other.py")) == 0
    assert _read(root) == b"from pkg.jit_kernel.hicache import a\n"
    assert _read(root, "pkg/srt/other.py") == b"from pkg.kernels.ops.layernorm.norm import rms\n"


def test_only_the_statement_is_touched_when_file_is_large(tree, capsys):
    # Everything outside the rewritten statement comes back byte for byte, odd formatting included.
    body = "".join(f"def f{i}( a ,b ):  # c{i}\n    return  a+b\n\n\n" for i in range(300))
    source = body + "class K:\n    def m(self):\n        from pkg.jit_kernel.norm import (rms)  # x\n" + body
    root = tree({CASE: source})
    assert _fix(root) == 0
    assert _read(root).decode() == source.replace("pkg.jit_kernel.norm", "pkg.kernels.ops.layernorm.norm")
