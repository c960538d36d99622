"""benchmarks/gpu_report.py without a GPU: it says so and exits 0; every case builds and checks on
the CPU (through the interpreter) at its smoke shape; its operators are registered ones; peaks
are found by device name."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglang.kernels import registry

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "benchmarks" / "gpu_report.py"


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("gpu_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_report"] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


def test_without_a_device_it_says_so_and_exits_zero():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, str(SCRIPT)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gpu_report: no CUDA device, nothing to measure" in proc.stdout


def test_every_case_is_a_registered_operator(report):
    ops = {case.op_id for case in report.cases()}
    assert ops <= set(registry.op_ids()), sorted(ops - set(registry.op_ids()))
    assert len(ops) >= 10  # the operators not covered are named in the table ("no case")


def test_every_case_builds_and_passes_its_check_on_the_cpu(report, capsys):
    assert report.cpu_smoke(report.cases()) == 0, capsys.readouterr().out


def test_a_wrong_result_fails_the_check(report, monkeypatch):
    import torch

    case = next(c for c in report.cases() if c.op_id == "gemm.tiny_n_gemm_bf16")
    real_load = registry.load

    def off_by_one_percent(op_id, backend="triton"):
        fn = real_load(op_id, backend)
        return (lambda *a, **k: fn(*a, **k) * 1.01) if backend == "triton" else fn

    monkeypatch.setattr(registry, "load", off_by_one_percent)
    run = case.smoke("cpu")
    with pytest.raises(AssertionError):
        run.check()
    assert torch.is_tensor(run.reference())


@pytest.mark.parametrize(
    "name, peaks",
    [
        ("NVIDIA H200", (4800.0, 989.0)),
        ("NVIDIA H100 80GB HBM3", (3350.0, 989.0)),
        ("NVIDIA H100 PCIe", (2000.0, 756.0)),
        ("NVIDIA A100-SXM4-80GB", (2039.0, 312.0)),
        ("NVIDIA L40S", (864.0, 362.0)),
        ("Some Future GPU", None),
    ],
)
def test_peaks_by_device_name(report, name, peaks):
    assert report.peaks_for(name) == peaks


def test_markdown_table_has_a_row_per_result(report):
    rows = [{"op": "gemm.x", "case": "c", "check": "ok", "triton_ms": 0.01, "torch_ms": 0.02,
             "gbps": 100.0, "pct_peak": 2.0}]
    table = report.markdown(rows, "NVIDIA H200", (4800.0, 989.0))
    assert "Device: NVIDIA H200 (4800 GB/s, 989 bf16 TFLOP/s)" in table
    assert "| `gemm.x` | c | ok | 0.0100 | 0.0200 | - | - | 100 | - | 2 |" in table
