"""The README's downstream walk-through on the real releases: `examples/downstream` (imports of
`sglang.jit_kernel.<op>` as LightLLM wrote them) fixed with the map `derive-map` reads off sglang
0.5.16 -> 0.5.23, verified against 0.5.23.

Slow (two large wheels): run with `-m slow`. Wheels come from `$SGLANG_WHEELS` (a directory with
`sglang-<version>-*.whl`) or `pip download`; without either the test is skipped, saying why.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contracts.conftest import REPO, run_cli

pytestmark = pytest.mark.slow


def _wheel(version: str, tmp: Path) -> str:
    wheels = os.environ.get("SGLANG_WHEELS")
    if wheels:
        found = sorted(glob.glob(os.path.join(wheels, f"sglang-{version}-*.whl")))
        if found:
            return found[0]
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(tmp),
                           f"sglang=={version}"], capture_output=True, text=True, timeout=900)
    found = sorted(glob.glob(str(tmp / f"sglang-{version}-*.whl")))
    if proc.returncode != 0 or not found:
        pytest.skip(f"no sglang {version} wheel: set SGLANG_WHEELS, or allow `pip download` "
                    f"({(proc.stderr.strip().splitlines() or ['no output'])[-1]})")
    return found[0]


def test_downstream_example_is_fixed_with_the_derived_map_and_verified(tmp_path):
    before, after = _wheel("0.5.16", tmp_path), _wheel("0.5.23", tmp_path)
    app = tmp_path / "app"
    shutil.copytree(REPO / "examples" / "downstream", app)
    derived = run_cli(["derive-map", "--before", before, "--after", after, "--removed", "sglang.jit_kernel"], app)
    assert derived.returncode in (0, 1), derived.stderr
    block = "\n".join(line for line in derived.stdout.splitlines() if not line.startswith("# derive-map"))
    with open(app / ".importlinter", "a") as f:
        f.write(block + "\n")
    fixed = run_cli(["--fix", "--verify-against", after], app)
    assert "Fixed 5 imports in 1 file, every rewritten import checked against" in fixed.stdout, fixed.stdout
    text = (app / "myapp" / "layers.py").read_text()
    assert "sglang.jit_kernel" not in text
    assert "from sglang.kernels.ops.layernorm.minimax_m3_rmsnorm import gemma_rmsnorm\n" in text
    assert "from sglang.kernels.ops.activation.minimax_m3_swiglu import swiglu_oai_split\n" in text
    assert '"sglang.kernels.ops.kvcache.hicache" in sys.modules' in text
    compile(text, "layers.py", "exec")
    assert run_cli(["--no-cache"], app).returncode == 0
