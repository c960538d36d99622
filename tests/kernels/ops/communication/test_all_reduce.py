"""`communication.fused_parallel_qknorm`: sharded Q/K RMSNorm with an all-reduced sum of squares.

World size 1 runs in this process; world size 2 runs on a gloo group of two spawned processes,
each rank's output checked against its shard of the unsharded norm computed here.
"""

import importlib

import numpy as np
import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import assert_close_rounded, use_triton
from sglang.kernels.ops.communication.all_reduce import (
    AllReduceAlgo,
    TorchCommunicator,
    custom_all_reduce,
    fused_parallel_qknorm,
    fused_parallel_qknorm_ref,
    get_fused_parallel_qknorm_max_occupancy,
)
from tests.kernels.ops.communication.tp_spawn import run_tp
from tests.kernels.spy import spy_launches

all_reduce_module = importlib.import_module("sglang.kernels.ops.communication.all_reduce")

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _inputs(n_rows, q_cols, k_cols, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = (3 * torch.randn(n_rows, q_cols, generator=gen)).to(dtype)
    k = torch.randn(n_rows, k_cols, generator=gen).to(dtype)
    q_weight = (1 + 0.5 * torch.randn(q_cols, generator=gen)).to(dtype)
    k_weight = (1 + 0.5 * torch.randn(k_cols, generator=gen)).to(dtype)
    return q, k, q_weight, k_weight


def _full_norm32(x, weight, eps):
    """The unsharded norm as upstream's fused kernel defines it, in fp32 before the final cast:
    x * rsqrt((sum x^2 + eps) / D) * w (eps on the sum, not on the mean)."""
    x32 = x.double()
    scale = torch.rsqrt(((x32 * x32).sum(-1, keepdim=True) + eps) / x.shape[-1])
    return (x32 * scale * weight.double()).float()


def _run(q, k, qw, kw, eps=1e-6, fn=fused_parallel_qknorm):
    q, k = q.clone(), k.clone()
    assert fn(TorchCommunicator(), q, k, qw, kw, eps) is None  # in place, as upstream
    return q, k


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "n_rows, q_cols, k_cols", [(1, 1, 1), (1, 64, 8), (5, 96, 40), (33, 256, 64)]
)
def test_world_size_one_normalizes_in_place(n_rows, q_cols, k_cols, dtype):
    q, k, q_weight, k_weight = _inputs(n_rows, q_cols, k_cols, dtype)
    q_out, k_out = _run(q, k, q_weight, k_weight, eps=1e-5)
    assert_close_rounded(q_out, _full_norm32(q, q_weight, 1e-5))
    assert_close_rounded(k_out, _full_norm32(k, k_weight, 1e-5))
    q_ref, k_ref = _run(q, k, q_weight, k_weight, eps=1e-5, fn=fused_parallel_qknorm_ref)
    assert_close_rounded(q_ref, _full_norm32(q, q_weight, 1e-5))


def test_eps_is_added_to_the_sum_of_squares():
    # A row of tiny values: eps on the sum (upstream's kernel) and eps on the mean differ 64x.
    q = torch.full((1, 64), 1e-4)
    k = torch.full((1, 8), 1e-4)
    q_out, _ = _run(q, k, torch.ones(64), torch.ones(8), eps=1e-6)
    on_sum = 1e-4 / ((64 * 1e-8 + 1e-6) / 64) ** 0.5
    assert q_out[0, 0].item() == pytest.approx(on_sum, rel=1e-5)


def test_all_zero_rows_stay_zero():
    q, k, qw, kw = _inputs(3, 32, 16, torch.bfloat16)
    q[1] = 0
    k[2] = 0
    q_out, k_out = _run(q, k, qw, kw)
    assert torch.equal(q_out[1], torch.zeros(32, dtype=torch.bfloat16))
    assert torch.equal(k_out[2], torch.zeros(16, dtype=torch.bfloat16))
    assert torch.isfinite(q_out.float()).all()


def test_every_tensor_strided_differently():
    # q and k views of a packed qkv (row stride 160) with a column step each, weights strided.
    q, k, q_weight, k_weight = _inputs(6, 32, 16, torch.float16)
    qkv = torch.zeros(6, 160, dtype=torch.float16)
    q_view, k_view = qkv[:, 0:64:2], qkv[:, 64:112:3]
    q_view.copy_(q)
    k_view.copy_(k)
    qw = torch.zeros(96, dtype=torch.float16)[::3]
    qw.copy_(q_weight)
    kw = torch.zeros(64, dtype=torch.float16)[::4]
    kw.copy_(k_weight)
    fused_parallel_qknorm(TorchCommunicator(), q_view, k_view, qw, kw)
    assert_close_rounded(q_view, _full_norm32(q, q_weight, 1e-6))
    assert_close_rounded(k_view, _full_norm32(k, k_weight, 1e-6))
    untouched = torch.ones(160, dtype=torch.bool)
    untouched[0:64:2] = False
    untouched[64:112:3] = False
    assert (qkv[:, untouched] == 0).all()


def test_both_kernels_launch_and_torch_path_agrees(monkeypatch):
    args = _inputs(7, 48, 16, torch.float16)
    assert use_triton(*args)  # the interpreter is on (tests/conftest.py)
    sumsq = spy_launches(monkeypatch, all_reduce_module, "_fused_parallel_qknorm_sumsq_kernel")
    apply = spy_launches(monkeypatch, all_reduce_module, "_fused_parallel_qknorm_apply_kernel")
    triton_out = _run(*args)
    assert sumsq == [(7,)] and apply == [(7,)]
    monkeypatch.setattr(all_reduce_module, "use_triton", lambda *tensors: False)
    torch_out = _run(*args)
    assert len(sumsq) == 1 and len(apply) == 1
    for a, b in zip(triton_out, torch_out):
        torch.testing.assert_close(a, b, atol=0, rtol=0)


def test_empty_input_launches_nothing(monkeypatch):
    sumsq = spy_launches(monkeypatch, all_reduce_module, "_fused_parallel_qknorm_sumsq_kernel")
    q_out, k_out = _run(*_inputs(0, 32, 8, torch.bfloat16))
    assert q_out.shape == (0, 32) and k_out.shape == (0, 8) and sumsq == []


def test_compiles_fullgraph_without_a_graph_break():
    q, k, qw, kw = _inputs(4, 32, 16, torch.bfloat16)
    comm = TorchCommunicator()

    def norm(q, k):
        fused_parallel_qknorm(comm, q, k, qw, kw, 1e-6)
        return q, k

    torch._dynamo.reset()
    got = torch.compile(norm, fullgraph=True, backend="aot_eager")(q.clone(), k.clone())
    assert_close_rounded(got[0], _full_norm32(q, qw, 1e-6))
    assert_close_rounded(got[1], _full_norm32(k, kw, 1e-6))


@pytest.mark.parametrize(
    "make_args, arg",
    [
        (lambda q, k, qw, kw: (q[None], k, qw, kw), "q"),
        (lambda q, k, qw, kw: (q, k[:-1], qw, kw), "k"),
        (lambda q, k, qw, kw: (q, k.to(torch.float16), qw, kw), "k"),
        (lambda q, k, qw, kw: (q.to(torch.int32), k.to(torch.int32), qw, kw), "q"),
        (lambda q, k, qw, kw: (q, k, qw[:-1], kw), "q_weight"),
        (lambda q, k, qw, kw: (q, k, qw, kw.to(torch.float16)), "k_weight"),
        (lambda q, k, qw, kw: (q[:, :0], k, qw[:0], kw), "q"),
        (lambda q, k, qw, kw: (q, k, None, kw), "q_weight"),
    ],
    ids=["q-3d", "k-rows", "k-dtype", "q-int", "q_weight-shape", "k_weight-dtype", "q-no-cols",
         "q_weight-none"],
)
def test_rejects_bad_inputs(make_args, arg):
    args = _inputs(4, 16, 8, torch.float32)
    before = [t.clone() for t in args]
    with pytest.raises(ValueError, match=rf"fused_parallel_qknorm: {arg}"):
        fused_parallel_qknorm(TorchCommunicator(), *make_args(*args))
    assert all(torch.equal(t, b) for t, b in zip(args, before, strict=True))


def test_rejects_a_communicator_without_torch_distributed():
    with pytest.raises(ValueError, match="comm has world_size 2 but torch.distributed"):
        fused_parallel_qknorm(TorchCommunicator(0, 2), *_inputs(2, 8, 8, torch.float32))
    with pytest.raises(ValueError, match="comm must have a positive int `world_size`"):
        fused_parallel_qknorm(object(), *_inputs(2, 8, 8, torch.float32))
    with pytest.raises(ValueError, match="group was given"):
        TorchCommunicator.from_group(object())


def test_custom_all_reduce_world_size_one_copies():
    x = torch.randn(4, 8)
    out = custom_all_reduce(TorchCommunicator(), x, AllReduceAlgo.ONE_SHOT_PUSH, False)
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()
    with pytest.raises(ValueError, match="algo must be an AllReduceAlgo"):
        custom_all_reduce(TorchCommunicator(), x, "1shot_push", False)
    assert AllReduceAlgo.TWO_SHOT_PULL.algo_name == "2shot_pull"
    assert AllReduceAlgo.ONE_SHOT_PUSH.is_push() and not AllReduceAlgo.ONE_SHOT_PULL.is_push()


def test_custom_all_reduce_takes_both_releases_calls():
    x, comm, algo = torch.randn(4, 8), TorchCommunicator(), AllReduceAlgo.TWO_SHOT_PULL
    calls = [
        lambda: custom_all_reduce(comm, x, algo, True),  # 0.5.17: pull_arg positional
        lambda: custom_all_reduce(comm, x, algo),  # 0.5.23: no pull_arg
        lambda: custom_all_reduce(comm, x, algo, graph_params=torch.zeros(2, dtype=torch.int64)),
        lambda: custom_all_reduce(comm, x, algo, graph_params=None, use_multicast=True),
    ]
    for call in calls:
        out = call()
        assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()
    with pytest.raises(ValueError, match="pull_arg .0.5.17. or graph_params .0.5.23., not both"):
        custom_all_reduce(comm, x, algo, torch.zeros(2), graph_params=torch.zeros(2))
    with pytest.raises(ValueError, match="use_multicast must be a bool"):
        custom_all_reduce(comm, x, algo, use_multicast="yes")
    with pytest.raises(ValueError, match="graph_params must be a torch.Tensor or None"):
        custom_all_reduce(comm, x, algo, graph_params=[1])
    with pytest.raises(TypeError):
        custom_all_reduce(comm, x, algo, None, None)  # graph_params is keyword-only, as upstream


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_occupancy_contract(dtype):
    widths = [1, 7, 64, 100, 128, 1000, 1024, 2048, 3072, 6144, 8192, 16384]
    by_q = [get_fused_parallel_qknorm_max_occupancy(dtype, 1, w, 128) for w in widths]
    by_k = [get_fused_parallel_qknorm_max_occupancy(dtype, 1, 128, w) for w in widths]
    for series in (by_q, by_k):
        assert all(isinstance(v, int) and v >= 1 for v in series)
        assert all(a >= b for a, b in zip(series[:-1], series[1:], strict=True)), series
    assert by_q[0] > by_q[-1]  # the register budget does bind for wide rows
    # Full dims: 4 ranks of a 16384-wide q hold what 1 rank of a 4096-wide one does.
    assert get_fused_parallel_qknorm_max_occupancy(dtype, 4, 16384, 512) == (
        get_fused_parallel_qknorm_max_occupancy(dtype, 1, 4096, 128)
    )


def test_max_occupancy_wider_dtype_never_fits_more():
    for width in (64, 1024, 4096):
        fp32 = get_fused_parallel_qknorm_max_occupancy(torch.float32, 1, width, width)
        bf16 = get_fused_parallel_qknorm_max_occupancy(torch.bfloat16, 1, width, width)
        assert fp32 <= bf16


@pytest.mark.parametrize(
    "args, arg",
    [
        ((torch.float32, 1, 0, 8), "q_dim"),
        ((torch.float32, 1, 8, -1), "k_dim"),
        ((torch.float32, 0, 8, 8), "world_size"),
        ((torch.float32, 3, 8, 9), "q_dim 8 must divide"),
        ((torch.int8, 1, 8, 8), "dtype"),
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
        comm = TorchCommunicator.from_group()
        q_out, k_out, q_ref, k_ref = q.clone(), k.clone(), q.clone(), k.clone()
        fused_parallel_qknorm(comm, q_out, k_out, qw, kw, eps=case["eps"])
        fused_parallel_qknorm_ref(comm, q_ref, k_ref, qw, kw, eps=case["eps"])
        outputs.append(
            {
                "used_triton": use_triton(q, k, qw, kw),
                "out": [t.float().numpy() for t in (q_out, k_out, q_ref, k_ref)],
            }
        )
    return outputs


def _two_rank_cases(eps):
    """The `_TP_CASES` inputs as plain data, and the unsharded norm of each computed here."""
    cases, full = [], []
    for i, (dtype_name, n_rows, q_dim, k_dim, packed) in enumerate(_TP_CASES):
        dtype = getattr(torch, dtype_name)
        q, k, qw, kw = _inputs(n_rows, q_dim, k_dim, dtype, seed=i)
        cases.append(
            {
                "dtype": dtype_name,
                "packed": packed,
                "eps": eps,
                **{
                    name: t.float().numpy()
                    for name, t in zip(("q", "k", "qw", "kw"), (q, k, qw, kw), strict=True)
                },
            }
        )
        full.append((dtype, _full_norm32(q, qw, eps), _full_norm32(k, kw, eps)))
    return cases, full


# 1e-5 is a model's eps; 10.0 is as large as a row's sum of squares here (k: 40 to 64 values of
# unit variance), so adding the whole eps on each of two ranks instead of eps / 2 moves the
# output by percents, not by less than an ulp as it does at 1e-5.
@pytest.mark.parametrize("eps", [1e-5, 10.0])
def test_two_ranks_over_gloo_match_the_unsharded_norm(eps):
    world_size = 2
    cases, full = _two_rank_cases(eps)
    ranks = run_tp(world_size, f"{__name__}:_tp_qknorm_rank", cases, timeout_s=60)

    for rank, rank_result in enumerate(ranks):
        assert rank_result["triton_was_imported"] is False  # TRITON_INTERPRET was set first
        for (dtype, q_full_out, k_full_out), case_out in zip(
            full, rank_result["result"], strict=True
        ):
            assert case_out["used_triton"]
            q_local, k_local = q_full_out.shape[1] // world_size, k_full_out.shape[1] // world_size
            q_expected = q_full_out[:, rank * q_local : (rank + 1) * q_local]
            k_expected = k_full_out[:, rank * k_local : (rank + 1) * k_local]
            q_out, k_out, q_ref, k_ref = (
                torch.from_numpy(np.asarray(a)).to(dtype) for a in case_out["out"]
            )
            for got in (q_out, q_ref):
                assert_close_rounded(got, q_expected)
            for got in (k_out, k_ref):
                assert_close_rounded(got, k_expected)


def test_registry_targets():
    assert registry.load("communication.fused_parallel_qknorm") is fused_parallel_qknorm
    assert (
        registry.load("communication.fused_parallel_qknorm", "torch") is fused_parallel_qknorm_ref
    )
