"""benchmarks/gpu_report.py without a GPU: it says so and exits 0; every case runs on the CPU
(through the interpreter) at its smoke shape, through the same `measure` as on a GPU; and each
fix of issue 34 is pinned: no copies inside timed regions, % of the right peak, exact device
matching, a K-aware GEMM tolerance, every case isolated, upstream's own kernels as a baseline."""

import importlib.util
import os
import subprocess
import sys
import zipfile
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
    "name, entry",
    [
        ("NVIDIA H200", "NVIDIA H200"),
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
        ("NVIDIA L40S", "NVIDIA L40S"),
        ("nvidia  gh200 480gb", "NVIDIA GH200 480GB"),  # case and runs of spaces aside
        ("NVIDIA GH200 480GB", "NVIDIA GH200 480GB"),
    ],
)
def test_peaks_by_the_exact_device_name(report, name, entry):
    assert report.peaks_for(name) is report.DEVICES[entry]


@pytest.mark.parametrize(
    "name",
    [
        "Some Future GPU",
        "NVIDIA GH200 96GB",  # a GH200 not listed: no peaks, not the H200's (a substring rule's)
        "NVIDIA H200 SXM5 141GB",  # contains "H200" but is not a listed name
        "H200",
        "NVIDIA L40S-X",  # contains "L40S" and "L40" and "L4"
    ],
)
def test_an_unlisted_device_gets_no_peaks(report, name):
    assert report.peaks_for(name) is None


def test_gh200_gets_the_c2c_link_and_its_own_hbm(report):
    gh200, h200 = report.peaks_for("NVIDIA GH200 480GB"), report.peaks_for("NVIDIA H200")
    assert gh200.link == "NVLink-C2C" and gh200.link_gbps > 4 * h200.link_gbps
    assert gh200.hbm_gbps != h200.hbm_gbps


def test_markdown_table_has_a_row_per_result(report):
    rows = [{"op": "gemm.x", "case": "c", "check": "ok", "triton_ms": 0.01, "torch_ms": 0.02,
             "gbps": 100.0, "tflops": 3.0, "pct_hbm": 2.0, "pct_compute": 1.0, "pct_peak": 2.0,
             "upstream": "ok", "upstream_ms": 0.03},
            {"op": "mamba.y", "case": "d", "check": "ERROR: RuntimeError: boom",
             "upstream": "not available: sgl_kernel is not installed"}]
    table = report.markdown(rows, "NVIDIA H200", report.peaks_for("NVIDIA H200"))
    assert ("Device: NVIDIA H200 (HBM 4800 GB/s, 989 bf16 TFLOP/s, host link 64 GB/s per "
            "direction (PCIe Gen5 x16))") in table
    assert "| `gemm.x` | c | ok | 0.0100 | 0.0200 | - | 0.0300 | - | 100 | 3.0 | 2 | 1 | - | 2 |" in table
    assert ("| `mamba.y` | d | ERROR: RuntimeError: boom | - | - | - | not available: sgl_kernel "
            "is not installed | - | - | - | - | - | - | - |") in table


def test_an_unknown_device_has_no_percentages(report):
    table = report.markdown([{"op": "a.b", "case": "c", "check": "ok"}], "Some GPU", None)
    assert "Device: Some GPU (not in DEVICES: no % columns (give --peaks))" in table
    run = report.Run(lambda: None, lambda: None, lambda: None, bytes_moved=10**9, flops=10**12)
    assert set(report.throughput(run, 1.0, None)) == {"gbps", "tflops"}


# ------------------------------------------------------------- % of the right peak


def _smoke_runs(report, prefix):
    return [(c, c.smoke("cpu")) for c in report.cases() if c.op_id.startswith(prefix)]


@pytest.mark.parametrize(
    "prefix",
    ["kvcache.transfer_hicache", "mamba.transfer_kv_mamba"],
)
def test_host_transfers_are_measured_against_the_host_link(report, prefix):
    peaks = report.peaks_for("NVIDIA H100 80GB HBM3")
    runs = _smoke_runs(report, prefix)
    assert runs
    for case, run in runs:
        assert 0 < run.link_bytes <= run.bytes_moved, case.label
        row = report.throughput(run, 1.0, peaks)  # 1 ms
        assert "pct_hbm" not in row
        assert row["pct_link"] == pytest.approx(100 * run.link_bytes / 1e-3 / 1e9 / peaks.link_gbps)
        assert row["pct_peak"] == pytest.approx(row["pct_link"])


def test_other_memory_bound_cases_stay_on_hbm(report):
    peaks = report.peaks_for("NVIDIA H200")
    for _case, run in _smoke_runs(report, "layernorm."):
        assert run.link_bytes == 0
        row = report.throughput(run, 1.0, peaks)
        assert row["pct_hbm"] == pytest.approx(100 * run.bytes_moved / 1e6 / peaks.hbm_gbps)
        assert "pct_link" not in row and "pct_compute" not in row


def test_gemms_get_hbm_and_compute_and_the_roofline_takes_the_binding_one(report):
    peaks = report.peaks_for("NVIDIA H200")
    decode = report.Run(lambda: None, lambda: None, lambda: None,
                        bytes_moved=2 * 2112 * 7168, flops=2 * 1 * 2112 * 7168)  # M = 1
    row = report.throughput(decode, 0.01, peaks)
    assert {"pct_hbm", "pct_compute", "pct_peak"} <= set(row)
    assert row["pct_peak"] == pytest.approx(row["pct_hbm"])  # M = 1 is memory-bound
    assert row["pct_compute"] < row["pct_hbm"] / 100
    square = report.Run(lambda: None, lambda: None, lambda: None,
                        bytes_moved=3 * 2 * 8192 * 8192, flops=2 * 8192**3)
    row = report.throughput(square, 2.0, peaks)
    assert row["pct_peak"] == pytest.approx(row["pct_compute"])  # large M is compute-bound
    for case in report.cases():
        if case.op_id.startswith("gemm."):
            run = case.smoke("cpu")
            assert run.flops and run.bytes_moved and not run.link_bytes


# ------------------------------------------------------------- no copies inside timed regions


def test_timed_calls_make_no_copies(report, monkeypatch):
    """Every case's timed Triton and eager calls, after its setup: no `copy_`, no `clone`."""
    import torch

    calls = []
    real_copy, real_clone = torch.Tensor.copy_, torch.Tensor.clone

    def counting(real):
        def spy(self, *args, **kwargs):
            calls.append(real.__name__)
            return real(self, *args, **kwargs)
        return spy

    for case in report.cases():
        run = case.smoke("cpu")
        for fn in (run.triton, run.eager):
            if fn is None:
                continue
            if run.setup is not None:
                run.setup()
            calls.clear()
            monkeypatch.setattr(torch.Tensor, "copy_", counting(real_copy))
            monkeypatch.setattr(torch.Tensor, "clone", counting(real_clone))
            fn()
            monkeypatch.setattr(torch.Tensor, "copy_", real_copy)
            monkeypatch.setattr(torch.Tensor, "clone", real_clone)
            assert calls == [], f"{case.op_id} ({case.label}) copies inside its timed call"


def test_in_place_cases_restore_their_inputs_in_setup(report):
    case = next(c for c in report.cases() if c.op_id == "layernorm.fused_add_rmsnorm")
    run = case.smoke("cpu")
    assert run.setup is not None
    run.setup()
    run.triton()
    run.check()  # the check sets up again: the op's second run starts from fresh inputs


class _Clock:
    """A clock that logs its calls beside the callables'."""

    def __init__(self, log):
        self.log, self.t = log, 0.0

    def before(self):
        self.log.append("before")

    def mark(self):
        self.log.append("mark")
        self.t += 1.0
        return self.t

    def sync(self):
        pass

    @staticmethod
    def elapsed_ms(start, end):
        return end - start


def test_bench_keeps_setup_and_the_cache_flush_outside_the_timed_region(report):
    log = []
    timing = report.Timing(_Clock(log), warmup_ms=2.0, measure_ms=3.0, min_reps=1)
    ms = report.bench(lambda: log.append("fn"), lambda: log.append("setup"), timing)
    assert ms == 1.0
    # One estimate, two warm-ups (2 ms / 1 ms), three timed calls: each exactly this sequence.
    assert log == ["setup", "before", "mark", "fn", "mark"] * 6


def test_every_variant_of_a_case_is_timed_with_the_same_setup(report, monkeypatch):
    seen = []
    monkeypatch.setattr(report, "bench", lambda fn, setup, timing: seen.append(setup) or 1.0)
    case = next(c for c in report.cases() if c.op_id == "layernorm.fused_add_rmsnorm")
    run = case.smoke("cpu")
    row = report._timed(case, run, report.SMOKE_TIMING, "cpu")
    assert {"triton_ms", "torch_ms", "eager_ms"} <= set(row)
    assert len(seen) == 3 and all(s is run.setup for s in seen)


# ------------------------------------------------------------- the K-aware GEMM tolerance


def _fp32_accumulated(x, w, mode="fp32"):
    """x @ w.T accumulated one K term at a time (the order with the most roundings), in fp32
    (a correct kernel) or bf16 (a wrong one), rounded to bf16 at the end."""
    import torch

    acc_dtype = torch.float32 if mode == "fp32" else torch.bfloat16
    xf, wf = x.float(), w.float()
    acc = torch.zeros(*x.shape[:-1], w.shape[-2], dtype=acc_dtype)
    for k in range(x.shape[-1]):
        acc = (acc.float() + xf[..., k : k + 1] * wf[..., k].unsqueeze(-2)).to(acc_dtype)
    return acc.to(torch.bfloat16)


def _gemm_seeds(k=7168, m=8, n=256, seeds=10):
    import torch

    x = torch.stack([torch.randn(m, k, generator=torch.Generator().manual_seed(s)) for s in range(seeds)])
    w = torch.stack([torch.randn(n, k, generator=torch.Generator().manual_seed(100 + s)) / k**0.5
                     for s in range(seeds)])
    return x.bfloat16(), w.bfloat16()


def _accepted(report, got, x, w):
    out = []
    for i in range(x.shape[0]):
        try:
            report.gemm_check(got[i], x[i], w[i])
            out.append(True)
        except AssertionError:
            out.append(False)
    return out


def test_gemm_tolerance_accepts_fp32_accumulation_at_k_7168_and_rejects_wrong_kernels(
    report, monkeypatch
):
    x, w = _gemm_seeds()
    correct = _fp32_accumulated(x, w)
    assert _accepted(report, correct, x, w) == [True] * 10
    with monkeypatch.context() as m:  # one ulp alone (no K-aware term) rejects a correct kernel
        m.setattr(report, "GEMM_ACCUMULATION_ROUNDING", 0.0)
        assert not all(_accepted(report, correct, x, w))
    assert _accepted(report, (correct.float() * 1.01).bfloat16(), x, w) == [False] * 10
    assert _accepted(report, _fp32_accumulated(x, w, "bf16"), x, w) == [False] * 10
    dropped = _fp32_accumulated(x[..., :-64], w[..., :-64])  # a kernel that skips the last K tile
    assert _accepted(report, dropped, x, w) == [False] * 10


def test_gemm_tolerance_grows_with_k(report):
    import torch

    # A result that cancels to 0 exactly, computed as 0.01: one ulp of 0 is tiny, so only the
    # K-aware term can allow it: sqrt(K) * 2^-24 * K is 0.036 at K = 7168 and 3e-5 at K = 64.
    for k, ok in ((7168, True), (64, False)):
        x = torch.ones(1, k, dtype=torch.bfloat16)
        w = torch.cat([torch.ones(1, k // 2), -torch.ones(1, k // 2)], dim=1).bfloat16()
        got = torch.full((1, 1), 0.01, dtype=torch.bfloat16)
        assert _accepted(report, got[None], x[None], w[None]) == [ok], k


# ------------------------------------------------------------- every case isolated


def test_any_exception_in_a_case_is_its_row_not_the_end_of_the_run(report, capsys):
    good = next(c for c in report.cases() if c.op_id == "layernorm.rmsnorm_hf")

    def broken_build(device):
        raise RuntimeError("no such kernel")

    def broken_timing(device):
        run = good.smoke(device)
        run.triton = lambda: {}["missing"]
        return run

    bad_build = report.Case("a.broken", "build raises", broken_build)
    bad_call = report.Case("a.timed", "timed call raises", broken_timing)
    rows = [report.measure(c, None, "cpu", report.SMOKE_TIMING, smoke=True)
            for c in (bad_build, bad_call, good)]
    assert rows[0]["check"] == "ERROR: RuntimeError: no such kernel"
    assert rows[1]["check"] == "ERROR: KeyError: 'missing'"
    assert rows[2]["check"] == "ok" and rows[2]["triton_ms"] > 0
    assert report.cpu_smoke([bad_build, good]) == 1
    out = capsys.readouterr().out
    assert "FAILED  a.broken: build raises: ERROR: RuntimeError" in out
    assert "ok      layernorm.rmsnorm_hf" in out


def test_a_failed_check_is_a_row_and_nothing_is_timed(report, monkeypatch):
    case = next(c for c in report.cases() if c.op_id == "gemm.tiny_n_gemm_bf16")
    real_load = registry.load
    monkeypatch.setattr(registry, "load", lambda op_id, backend="triton": (
        (lambda *a, **k: real_load(op_id, backend)(*a, **k) * 1.01) if backend == "triton"
        else real_load(op_id, backend)))
    row = report.measure(case, None, "cpu", report.SMOKE_TIMING, smoke=True)
    assert row["check"].startswith("FAILED: AssertionError: gemm:") and "triton_ms" not in row


# ------------------------------------------------------------- upstream's own kernels


def test_without_an_upstream_directory_the_column_says_not_available(report):
    for op_id in ("mamba.causal_conv1d", "layernorm.fused_add_rmsnorm", "gemm.tiny_k_gemm_bf16"):
        case = next(c for c in report.cases() if c.op_id == op_id)
        row = report.measure(case, None, "cpu", report.SMOKE_TIMING, smoke=True)
        assert row["upstream"].startswith("not available: "), row
        assert "upstream_ms" not in row


def test_a_bad_upstream_directory_is_exit_2_with_one_line(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--cpu-smoke", "--upstream", str(tmp_path)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert f"--upstream {tmp_path}: no sglang/ folder there" in proc.stderr
    assert "Traceback" not in proc.stderr


_FAKE_KERNEL = """\
import triton
import triton.language as tl

from sglang.srt.utils import is_cuda


@triton.autotune(configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 4})], key=["n"])
@triton.jit
def _double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def double(x):
    y = x.new_empty(x.shape)
    _double_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
    return y


def cuda_path():
    return is_cuda()


def imports_sglang_later():
    import sglang.kernels.ops  # noqa: F401
"""


def test_an_upstream_file_loads_by_path_with_stand_ins_and_never_imports_sglang(report, tmp_path):
    import torch

    kernels = report.upstream_kernels
    (tmp_path / "sglang" / "k").mkdir(parents=True)
    (tmp_path / "sglang" / "k" / "ops.py").write_text(_FAKE_KERNEL)
    (tmp_path / "sglang" / "k" / "needs.py").write_text("from sglang.srt.layers import deep_gemm_wrapper\n")
    before = {name for name in sys.modules if name.split(".")[0] == "sglang"}
    mod = kernels.load_file(tmp_path, "sglang/k/ops.py")
    x = torch.arange(11, dtype=torch.float32)
    assert torch.equal(mod.double(x), 2 * x)  # a Triton kernel with autotune, interpreted
    assert mod.cuda_path() is False  # the stand-in takes the Triton branch
    with pytest.raises(ImportError, match="imports sglang.kernels.ops, which the report does not load"):
        mod.imports_sglang_later()
    with pytest.raises(kernels.UpstreamUnavailable,
                       match=r"sglang/k/needs.py:1 imports sglang.srt.layers.deep_gemm_wrapper"):
        kernels.load_file(tmp_path, "sglang/k/needs.py")
    with pytest.raises(kernels.UpstreamUnavailable, match="is not in"):
        kernels.load_file(tmp_path, "sglang/k/absent.py")
    assert {name for name in sys.modules if name.split(".")[0] == "sglang"} == before


def _unpacked_wheel(version, dest):
    """The files the report loads, from `SGLANG_WHEELS`'s sglang-<version> wheel, or None."""
    wheels = os.environ.get("SGLANG_WHEELS")
    found = sorted(Path(wheels).glob(f"sglang-{version}-*.whl")) if wheels else []
    if not found:
        return None
    with zipfile.ZipFile(found[0]) as zf:
        for rel in (SCONV_FILE, INT8_FILE):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(rel))
    return dest


SCONV_FILE = "sglang/srt/models/inkling_common/kernels/sconv.py"
INT8_FILE = "sglang/kernels/ops/quantization/int8_kernel.py"


@pytest.mark.parametrize("version", ["0.5.17", "0.5.23"])
def test_upstream_triton_kernels_run_and_agree_on_the_cpu(report, tmp_path, version):
    root = _unpacked_wheel(version, tmp_path)
    if root is None:
        pytest.skip(f"no sglang-{version} wheel in SGLANG_WHEELS (a folder of wheels)")
    rows = {c.op_id: report.measure(c, None, "cpu", report.SMOKE_TIMING, root, smoke=True)
            for c in report.cases() if "sconv" in c.label or c.label.endswith("int8")}
    assert all(row["check"] == "ok" for row in rows.values()), rows
    int8 = rows.pop("quantization.per_token_group_quant")
    assert sorted(rows) == ["mamba.causal_conv1d", "mamba.fused_causal_conv1d_update_decode",
                            "mamba.update_sconv_cache"]
    # upstream's sconv Triton: the same results, and timed
    assert all(row["upstream"] == "ok" and row["upstream_ms"] > 0 for row in rows.values()), rows
    # upstream's Triton int8 divides by the scale where its CUDA kernel (and this library)
    # multiplies by qmax / amax: a group's largest value may differ by one code
    assert int8["upstream"] == "ok" or int8["upstream"].startswith("differs: "), int8
