"""`communication.fused_parallel_qknorm`: sharded Q/K RMSNorm with an all-reduced sum of squares.

World size 1 runs in this process; world size 2 runs on a gloo group of two spawned processes,
each rank's output checked against its shard of the unsharded norm computed here.
"""

import importlib

import numpy as np
import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import tolerance, use_triton
from sglang.kernels.ops.communication.all_reduce import (
    fused_parallel_qknorm,
    fused_parallel_qknorm_ref,
    get_fused_parallel_qknorm_max_occupancy,
)
from tests.kernels.ops.communication.tp_spawn import run_tp

all_reduce_module = importlib.import_module("sglang.kernels.ops.communication.all_reduce")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _inputs(n_rows, q_cols, k_cols, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = (3 * torch.randn(n_rows, q_cols, generator=gen)).to(dtype)
    k = torch.randn(n_rows, k_cols, generator=gen).to(dtype)
    q_weight = (1 + 0.5 * torch.randn(q_cols, generator=gen)).to(dtype)
    k_weight = (1 + 0.5 * torch.randn(k_cols, generator=gen)).to(dtype)
    return q, k, q_weight, k_weight


def _full_rmsnorm(x, weight, eps):
    """The unsharded norm, written out: fp32 math, weight in fp32, one rounding."""
    x32 = x.float()
    rms = torch.sqrt((x32 * x32).sum(-1, keepdim=True) / x.shape[-1] + eps)
    return (x32 / rms * weight.float()).to(x.dtype)


def _spy_launches(monkeypatch, module, *kernel_names):
    """Replace each `module.<kernel_name>` by a proxy that records (name, grid) and launches."""
    launches = []
    for name in kernel_names:
        kernel = getattr(module, name)

        class _Spy:
            def __getitem__(self, grid, _kernel=kernel, _name=name):
                launches.append((_name, grid))
                return _kernel[grid]

        monkeypatch.setattr(module, name, _Spy())
    return launches


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "n_rows, q_cols, k_cols", [(1, 1, 1), (1, 64, 8), (5, 96, 40), (33, 256, 64)]
)
def test_world_size_one_matches_reference_and_full_norm(n_rows, q_cols, k_cols, dtype):
    q, k, q_weight, k_weight = _inputs(n_rows, q_cols, k_cols, dtype)
    atol, rtol = tolerance(dtype)
    q_out, k_out = fused_parallel_qknorm(q, k, q_weight, k_weight, eps=1e-5)
    q_ref, k_ref = fused_parallel_qknorm_ref(q, k, q_weight, k_weight, eps=1e-5)
    assert q_out.shape == q.shape and k_out.shape == k.shape and q_out.dtype == dtype
    torch.testing.assert_close(q_out, q_ref, atol=atol, rtol=rtol)
    torch.testing.assert_close(k_out, k_ref, atol=atol, rtol=rtol)
    torch.testing.assert_close(q_ref, _full_rmsnorm(q, q_weight, 1e-5), atol=atol, rtol=rtol)
    torch.testing.assert_close(k_ref, _full_rmsnorm(k, k_weight, 1e-5), atol=atol, rtol=rtol)


def test_strided_views_of_a_packed_qkv():
    q, k, q_weight, k_weight = _inputs(6, 64, 32, torch.bfloat16)
    qkv = torch.cat([q, k, torch.randn(6, 32).to(torch.bfloat16)], dim=1)
    q_view, k_view = qkv[:, :64], qkv[:, 64:96]  # row stride 128
    q_out, k_out = fused_parallel_qknorm(q_view, k_view, q_weight, k_weight)
    atol, rtol = tolerance(torch.bfloat16)
    torch.testing.assert_close(q_out, _full_rmsnorm(q, q_weight, 1e-6), atol=atol, rtol=rtol)
    torch.testing.assert_close(k_out, _full_rmsnorm(k, k_weight, 1e-6), atol=atol, rtol=rtol)


def test_both_kernels_launch_and_torch_path_agrees(monkeypatch):
    args = _inputs(7, 48, 16, torch.float16)
    assert use_triton(*args)  # the interpreter is on (tests/conftest.py)
    launches = _spy_launches(
        monkeypatch,
        all_reduce_module,
        "_fused_parallel_qknorm_sumsq_kernel",
        "_fused_parallel_qknorm_apply_kernel",
    )
    triton_out = fused_parallel_qknorm(*args)
    assert launches == [
        ("_fused_parallel_qknorm_sumsq_kernel", (7,)),
        ("_fused_parallel_qknorm_apply_kernel", (7,)),
    ]
    monkeypatch.setattr(all_reduce_module, "use_triton", lambda *tensors: False)
    torch_out = fused_parallel_qknorm(*args)
    assert len(launches) == 2
    atol, rtol = tolerance(torch.float16)
    torch.testing.assert_close(triton_out, torch_out, atol=atol, rtol=rtol)


def test_empty_input_returns_empty(monkeypatch):
    launches = _spy_launches(
        monkeypatch,
        all_reduce_module,
        "_fused_parallel_qknorm_sumsq_kernel",
        "_fused_parallel_qknorm_apply_kernel",
    )
    q_out, k_out = fused_parallel_qknorm(*_inputs(0, 32, 8, torch.bfloat16))
    assert q_out.shape == (0, 32) and k_out.shape == (0, 8) and launches == []


@pytest.mark.parametrize(
    "make_args, arg",
    [
        (lambda q, k, qw, kw: (q[None], k, qw, kw), "q"),
        (lambda q, k, qw, kw: (q, k[:-1], qw, kw), "k"),
        (lambda q, k, qw, kw: (q, k.to(torch.float16), qw, kw), "k"),
        (lambda q, k, qw, kw: (q.to(torch.int32), k.to(torch.int32), qw, kw), "q"),
        (lambda q, k, qw, kw: (q, k, qw[:-1], kw), "q_weight"),
        (lambda q, k, qw, kw: (q, k, qw, kw.to(torch.int64)), "k_weight"),
        (lambda q, k, qw, kw: (q[:, :0], k, qw[:0], kw), "q"),
    ],
    ids=["q-3d", "k-rows", "k-dtype", "q-int", "q_weight-shape", "k_weight-int", "q-no-cols"],
)
def test_rejects_bad_inputs(make_args, arg):
    args = _inputs(4, 16, 8, torch.float32)
    before = [t.clone() for t in args]
    with pytest.raises(ValueError, match=rf"fused_parallel_qknorm: {arg}"):
        fused_parallel_qknorm(*make_args(*args))
    assert all(torch.equal(t, b) for t, b in zip(args, before, strict=True))


def test_rejects_a_group_without_torch_distributed():
    with pytest.raises(ValueError, match="fused_parallel_qknorm: group"):
        fused_parallel_qknorm(*_inputs(2, 8, 8, torch.float32), group=object())


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_occupancy_contract(dtype):
    widths = [1, 7, 64, 100, 128, 1000, 1024, 2048, 3072, 6144, 8192, 16384]
    by_q = [get_fused_parallel_qknorm_max_occupancy(w, 128, dtype) for w in widths]
    by_k = [get_fused_parallel_qknorm_max_occupancy(128, w, dtype) for w in widths]
    for series in (by_q, by_k):
        assert all(isinstance(v, int) and v >= 1 for v in series)
        assert all(a >= b for a, b in zip(series[:-1], series[1:], strict=True)), series
    assert by_q[0] > by_q[-1]  # the register budget does bind for wide rows
    assert by_q == [get_fused_parallel_qknorm_max_occupancy(w, 128, dtype) for w in widths]


def test_max_occupancy_wider_dtype_never_fits_more():
    for width in (64, 1024, 4096):
        fp32 = get_fused_parallel_qknorm_max_occupancy(width, width, torch.float32)
        bf16 = get_fused_parallel_qknorm_max_occupancy(width, width, torch.bfloat16)
        assert fp32 <= bf16


@pytest.mark.parametrize(
    "args, arg",
    [
        ((0, 8, torch.float32), "hidden_q"),
        ((8, -1, torch.float32), "hidden_k"),
        ((8.0, 8, torch.float32), "hidden_q"),
        ((8, 8, torch.int8), "dtype"),
    ],
)
def test_max_occupancy_rejects_bad_args(args, arg):
    with pytest.raises(ValueError, match=rf"get_fused_parallel_qknorm_max_occupancy: {arg}"):
        get_fused_parallel_qknorm_max_occupancy(*args)


# Cases for the two-rank run: (dtype, rows, full q dim, full k dim, packed q/k views).
_TP_CASES = [
    ("float32", 5, 96, 40, False),
    ("bfloat16", 3, 256, 64, True),
    ("float16", 0, 32, 16, False),
]


def _tp_qknorm_rank(rank, world_size, cases):
    """Runs on each rank (see `tp_spawn`): this rank's shard through the op and the reference."""
    outputs = []
    for case in cases:
        dtype = getattr(torch, case["dtype"])
        q_full, k_full = (
            torch.from_numpy(case["q"]).to(dtype),
            torch.from_numpy(case["k"]).to(dtype),
        )
        qw_full, kw_full = (
            torch.from_numpy(case["qw"]).to(dtype),
            torch.from_numpy(case["kw"]).to(dtype),
        )
        q_local, k_local = q_full.shape[1] // world_size, k_full.shape[1] // world_size
        q = q_full[:, rank * q_local : (rank + 1) * q_local].contiguous()
        k = k_full[:, rank * k_local : (rank + 1) * k_local].contiguous()
        if case["packed"]:
            packed = torch.cat([q, k], dim=1)
            q, k = packed[:, :q_local], packed[:, q_local:]
        qw = qw_full[rank * q_local : (rank + 1) * q_local]
        kw = kw_full[rank * k_local : (rank + 1) * k_local]
        q_out, k_out = fused_parallel_qknorm(q, k, qw, kw, eps=1e-5)
        q_ref, k_ref = fused_parallel_qknorm_ref(q, k, qw, kw, eps=1e-5)
        outputs.append(
            {
                "used_triton": use_triton(q, k, qw, kw),
                "out": [t.float().numpy() for t in (q_out, k_out, q_ref, k_ref)],
            }
        )
    return outputs


def test_two_ranks_over_gloo_match_the_unsharded_norm():
    world_size = 2
    cases, full = [], []
    for i, (dtype_name, n_rows, q_dim, k_dim, packed) in enumerate(_TP_CASES):
        dtype = getattr(torch, dtype_name)
        q, k, qw, kw = _inputs(n_rows, q_dim, k_dim, dtype, seed=i)
        cases.append(
            {
                "dtype": dtype_name,
                "packed": packed,
                **{
                    name: t.float().numpy()
                    for name, t in zip(("q", "k", "qw", "kw"), (q, k, qw, kw), strict=True)
                },
            }
        )
        full.append((dtype, _full_rmsnorm(q, qw, 1e-5), _full_rmsnorm(k, kw, 1e-5)))

    ranks = run_tp(world_size, f"{__name__}:_tp_qknorm_rank", cases, timeout_s=60)

    for rank, rank_result in enumerate(ranks):
        assert rank_result["triton_was_imported"] is False  # TRITON_INTERPRET was set first
        for (dtype, q_full_out, k_full_out), case_out in zip(
            full, rank_result["result"], strict=True
        ):
            assert case_out["used_triton"]
            atol, rtol = tolerance(dtype)
            q_local, k_local = q_full_out.shape[1] // world_size, k_full_out.shape[1] // world_size
            q_expected = q_full_out[:, rank * q_local : (rank + 1) * q_local].float()
            k_expected = k_full_out[:, rank * k_local : (rank + 1) * k_local].float()
            q_out, k_out, q_ref, k_ref = (torch.from_numpy(np.asarray(a)) for a in case_out["out"])
            for got in (q_out, q_ref):
                torch.testing.assert_close(got, q_expected, atol=atol, rtol=rtol)
            for got in (k_out, k_ref):
                torch.testing.assert_close(got, k_expected, atol=atol, rtol=rtol)


def test_registry_targets():
    assert registry.load("communication.fused_parallel_qknorm") is fused_parallel_qknorm
    assert (
        registry.load("communication.fused_parallel_qknorm", "torch") is fused_parallel_qknorm_ref
    )
