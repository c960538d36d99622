"""`upgrade sglang --from sglang==0.5.16 --to sglang==0.5.23` on `examples/downstream_upgrade`, as
a new user runs it (marked slow: it downloads both wheels with pip; skipped without network).

Every reference of the example that does not resolve in 0.5.23, by the test's own `ast` reading
of the release (`test_upgrade.unresolved`, not the tool's index), is reported; after `--fix` every
reference with a unique home resolves, and a re-run reports exactly what is left.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.contracts.conftest import REPO, run_cli
from tests.contracts.test_upgrade import unresolved

pytestmark = pytest.mark.slow
EXAMPLE = REPO / "examples" / "downstream_upgrade"
TO, FROM = "sglang==0.5.23", "sglang==0.5.16"


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """0.5.23 unpacked, for the test's own resolver."""
    where = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                           "-q", "-d", str(where), TO], capture_output=True, text=True, timeout=600)
    wheels = list(where.glob("*.whl"))
    if proc.returncode != 0 or not wheels:
        pytest.skip(f"cannot download {TO}: {proc.stderr.strip()[-200:]}")
    out = where / "tree"
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(out)
    return out


def report(project: Path, *args: str) -> tuple[int, list[dict]]:
    done = run_cli(["upgrade", "sglang", "--from", FROM, "--to", TO, "--output-format", "json", *args],
                   cwd=project)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)["findings"] if done.stdout.strip() else []


def test_upgrade_reports_every_broken_reference_and_fixes_each_with_a_home(release, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    broken = unresolved(project, release, "sglang")
    code, found = report(project)
    assert code == 1
    assert sorted({(f["path"], f["line"]) for f in found}) == broken
    with_home = {(f["path"], f["line"]) for f in found if f["replacement"]}
    without = sorted({(f["path"], f["line"]) for f in found} - with_home)

    done = run_cli(["upgrade", "sglang", "--from", FROM, "--to", TO, "--fix"], cwd=project)
    assert done.returncode == 1, done.stderr
    assert unresolved(project, release, "sglang") == without
    code, left = report(project)
    assert sorted({(f["path"], f["line"]) for f in left}) == without and all(f["replacement"] is None for f in left)
