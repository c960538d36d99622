"""`sglang.srt.models.minimax_m2`: the Q/K norm call site against a plain torch computation.

World size 1 runs here; world size 2 runs the attention block on a gloo group of two spawned
processes, each holding half of the heads, against the unsharded computation done here.
"""

import pytest
import torch

from sglang.kernels.jit import tolerance
from sglang.kernels.ops.communication import get_fused_parallel_qknorm_max_occupancy
from sglang.srt.models.minimax_m2 import MiniMaxM2Attention, MiniMaxM2QKNorm
from tests.kernels.ops.communication.tp_spawn import run_tp

HIDDEN, NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, EPS = 64, 4, 2, 16, 1e-6


def _weights(dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape, scale=1.0):
        return (scale * torch.randn(*shape, generator=gen)).to(dtype)

    q_dim, kv_dim = NUM_HEADS * HEAD_DIM, NUM_KV_HEADS * HEAD_DIM
    return {
        "q_proj": rand(q_dim, HIDDEN, scale=HIDDEN**-0.5),
        "k_proj": rand(kv_dim, HIDDEN, scale=HIDDEN**-0.5),
        "v_proj": rand(kv_dim, HIDDEN, scale=HIDDEN**-0.5),
        "o_proj": rand(HIDDEN, q_dim, scale=q_dim**-0.5),
        "q_norm": (1 + rand(q_dim, scale=0.3).float()).to(dtype),
        "k_norm": (1 + rand(kv_dim, scale=0.3).float()).to(dtype),
    }


def _hidden_states(n_tokens, dtype, seed=1):
    return torch.randn(n_tokens, HIDDEN, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _rmsnorm(x, weight, eps, fused):
    """Full-width RMSNorm: eps on the mean (upstream's unfused path) or on the sum (its kernel)."""
    x32 = x.float()
    if fused:
        scale = torch.rsqrt((x32.pow(2).sum(-1, keepdim=True) + eps) / x.shape[-1])
    else:
        scale = torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return (x32 * scale * weight.float()).to(x.dtype)


def _torch_attention(h, w, fused=False):
    """The whole block unsharded, in plain torch: projections, full-width RMSNorms, causal GQA."""

    def rmsnorm(x, weight):
        return _rmsnorm(x, weight, EPS, fused)

    n_tokens = h.shape[0]
    q = rmsnorm(h @ w["q_proj"].T, w["q_norm"])
    k = rmsnorm(h @ w["k_proj"].T, w["k_norm"])
    v = h @ w["v_proj"].T
    qh = q.float().view(n_tokens, NUM_HEADS, HEAD_DIM).transpose(0, 1)
    kh = k.float().view(n_tokens, NUM_KV_HEADS, HEAD_DIM).transpose(0, 1)
    vh = v.float().view(n_tokens, NUM_KV_HEADS, HEAD_DIM).transpose(0, 1)
    group = NUM_HEADS // NUM_KV_HEADS
    kh, vh = kh.repeat_interleave(group, 0), vh.repeat_interleave(group, 0)
    scores = qh @ kh.transpose(1, 2) * HEAD_DIM**-0.5
    causal = torch.ones(n_tokens, n_tokens, dtype=torch.bool).tril()
    probs = scores.masked_fill(~causal, float("-inf")).softmax(-1)
    attn = (probs @ vh).transpose(0, 1).reshape(n_tokens, -1).to(h.dtype)
    return q, k, attn @ w["o_proj"].T


def _build(weights, dtype, rank=0, world_size=1, fused=False):
    """The module for `rank`, loaded with that rank's shards of the full `weights`."""
    attn = MiniMaxM2Attention(HIDDEN, NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, EPS, params_dtype=dtype,
                              use_fused_qknorm=fused)
    q_local = NUM_HEADS * HEAD_DIM // world_size
    kv_local = NUM_KV_HEADS * HEAD_DIM // world_size
    rows = {"q_proj": q_local, "k_proj": kv_local, "v_proj": kv_local}
    with torch.no_grad():
        for name, local in rows.items():
            getattr(attn, name).weight.copy_(weights[name][rank * local : (rank + 1) * local])
        attn.o_proj.weight.copy_(weights["o_proj"][:, rank * q_local : (rank + 1) * q_local])
        attn.qk_norm.load_full_weights(weights["q_norm"], weights["k_norm"])
    return attn


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n_tokens", [1, 7])
def test_attention_matches_plain_torch(n_tokens, dtype, fused):
    weights = _weights(dtype)
    attn = _build(weights, dtype, fused=fused)
    assert attn.qk_norm.use_fused is fused
    h = _hidden_states(n_tokens, dtype)
    with torch.no_grad():
        q, k = attn.project_qk(h)
        out = attn(h)
    q_ref, k_ref, out_ref = _torch_attention(h, weights, fused)
    atol, rtol = tolerance(dtype)
    torch.testing.assert_close(q, q_ref, atol=atol, rtol=rtol)
    torch.testing.assert_close(k, k_ref, atol=atol, rtol=rtol)
    torch.testing.assert_close(out, out_ref, atol=atol, rtol=rtol)


@pytest.mark.parametrize("fused", [False, True])
def test_eps_is_forwarded_on_both_paths(fused):
    # eps 0.5 against rows of mean square ~1: a dropped or defaulted eps moves every output.
    norm = MiniMaxM2QKNorm(48, 16, eps=0.5, use_fused=fused)
    q = _hidden_states(3, torch.float32)[:, :48].contiguous()
    k = _hidden_states(3, torch.float32, seed=2)[:, :16].contiguous()
    want_q, want_k = _rmsnorm(q, torch.ones(48), 0.5, fused), _rmsnorm(k, torch.ones(16), 0.5, fused)
    with torch.no_grad():
        q_out, k_out = norm(q.clone(), k.clone())
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(q_out, want_q, atol=atol, rtol=rtol)
    torch.testing.assert_close(k_out, want_k, atol=atol, rtol=rtol)


def test_fused_path_follows_upstreams_environment_switch(monkeypatch):
    monkeypatch.setenv("SGLANG_USE_FUSED_PARALLEL_QKNORM", "1")
    assert MiniMaxM2QKNorm(32, 16).use_fused is True
    monkeypatch.delenv("SGLANG_USE_FUSED_PARALLEL_QKNORM")
    assert MiniMaxM2QKNorm(32, 16).use_fused is False


@pytest.mark.parametrize("fused", [False, True])
def test_qk_norm_normalizes_the_full_width(fused):
    norm = MiniMaxM2QKNorm(48, 16, eps=EPS, use_fused=fused)
    q, k = (
        _hidden_states(3, torch.float32)[:, :48],
        _hidden_states(3, torch.float32, seed=2)[:, :16],
    )
    with torch.no_grad():
        q_out, k_out = norm(q, k)
    # Unit weights: every output row has unit root-mean-square.
    ones = torch.ones(3)
    atol, rtol = tolerance(torch.float32)
    torch.testing.assert_close(q_out.pow(2).mean(-1).sqrt(), ones, atol=atol, rtol=rtol)
    torch.testing.assert_close(k_out.pow(2).mean(-1).sqrt(), ones, atol=atol, rtol=rtol)


def test_max_occupancy_is_the_kernel_layers_answer():
    norm = MiniMaxM2QKNorm(NUM_HEADS * HEAD_DIM, NUM_KV_HEADS * HEAD_DIM)
    expected = get_fused_parallel_qknorm_max_occupancy(torch.bfloat16, 1, 64, 32)
    assert norm.max_occupancy(torch.bfloat16) == expected >= 1


def test_rejects_bad_shapes():
    norm = MiniMaxM2QKNorm(32, 16)
    with pytest.raises(ValueError, match="q_weight"):
        norm.load_full_weights(torch.ones(31), torch.ones(16))
    with pytest.raises(ValueError, match="num_kv_heads"):
        MiniMaxM2Attention(HIDDEN, 4, 3, HEAD_DIM)


def _tp_attention_rank(rank, world_size, payload):
    """Runs on each rank (see `tp_spawn`): this rank's heads, summed by o_proj's all-reduce."""
    weights = {name: torch.from_numpy(array) for name, array in payload["weights"].items()}
    h = torch.from_numpy(payload["hidden_states"])
    attn = _build(weights, torch.float32, rank, world_size, fused=payload["fused"])
    with torch.no_grad():
        q, k = attn.project_qk(h)
        out = attn(h)
    return {"q": q.numpy(), "k": k.numpy(), "out": out.numpy()}


@pytest.mark.parametrize("fused", [False, True])
def test_two_ranks_over_gloo_match_the_unsharded_block(fused):
    world_size = 2
    weights, h = _weights(torch.float32), _hidden_states(5, torch.float32)
    payload = {"weights": {n: t.numpy() for n, t in weights.items()}, "hidden_states": h.numpy(),
               "fused": fused}
    ranks = run_tp(world_size, f"{__name__}:_tp_attention_rank", payload, timeout_s=60)

    q_ref, k_ref, out_ref = _torch_attention(h, weights, fused)
    atol, rtol = tolerance(torch.float32)
    q_local, k_local = q_ref.shape[1] // world_size, k_ref.shape[1] // world_size
    for rank, rank_result in enumerate(ranks):
        assert rank_result["triton_was_imported"] is False
        got = {name: torch.from_numpy(array) for name, array in rank_result["result"].items()}
        q_shard = q_ref[:, rank * q_local : (rank + 1) * q_local]
        k_shard = k_ref[:, rank * k_local : (rank + 1) * k_local]
        torch.testing.assert_close(got["q"], q_shard, atol=atol, rtol=rtol)
        torch.testing.assert_close(got["k"], k_shard, atol=atol, rtol=rtol)
        torch.testing.assert_close(got["out"], out_ref, atol=atol, rtol=rtol)
