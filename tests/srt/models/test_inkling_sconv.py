"""The runtime sconv: metadata without host reads, extend then decode through the kernels, flags forwarded."""

import pytest
import torch

from sglang.kernels.jit import assert_close_rounded
from sglang.kernels.ops.mamba import inkling_sconv as kernel_module
from sglang.srt.models.inkling_common.kernels import sconv


def _inputs(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(9, 12, generator=g).to(dtype)
    weight = (torch.randn(12, 4, generator=g) * 0.5).to(dtype)
    cache = torch.randn(4, 3, 12, generator=g).to(dtype)
    return x, weight, cache


def _oracle(x_seqs, weight, history, silu, residual):
    """Per sequence: the conv over [history ++ x], fp32."""
    out = []
    for x, hist in zip(x_seqs, history):
        stream = torch.cat([hist.float(), x.float()])
        w = weight.shape[1]
        rows = []
        for i in range(x.shape[0]):
            y = (stream[i : i + w] * weight.float().t()).sum(0)
            y = y * torch.sigmoid(y) if silu else y
            rows.append(y + x[i].float() if residual else y)
        out.append(torch.stack(rows))
    return torch.cat(out)


def test_extend_metadata_matches_upstream_and_reads_no_values(monkeypatch):
    qsl = torch.tensor([0, 4, 4, 9])
    ci = torch.tensor([2, -1, 0])
    init = torch.tensor([True, True, False])
    monkeypatch.setattr(torch.Tensor, "item", lambda self: pytest.fail("host read"))
    monkeypatch.setattr(torch.Tensor, "tolist", lambda self: pytest.fail("host read"))
    meta = sconv.extend_sconv_metadata(qsl, ci, init, 9)
    monkeypatch.undo()
    assert meta["si"].tolist() == [0, 0, 0, 0, 2, 2, 2, 2, 2] and meta["si"].dtype == torch.int32
    assert meta["cache_mask"].view(-1).tolist() == [True, False, False]
    assert meta["safe_idx"].tolist() == [2, 0, 0] and meta["cu"].dtype == torch.int64


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_extend_then_decode_equals_the_oracle(monkeypatch, dtype):
    launches = []
    for name in (
        "_causal_conv1d_kernel",
        "_update_sconv_cache_kernel",
        "_fused_causal_conv1d_update_decode_kernel",
    ):
        real = getattr(kernel_module, name)

        class _Spy:
            def __init__(self, kernel, label):
                self.kernel, self.label = kernel, label

            def __getitem__(self, grid):
                launches.append(self.label)
                return self.kernel[grid]

        monkeypatch.setattr(kernel_module, name, _Spy(real, name))
    x, weight, cache = _inputs(dtype)
    hist2 = cache[2].clone()
    meta = sconv.extend_sconv_metadata(
        torch.tensor([0, 4, 9]), torch.tensor([2, 0]), torch.tensor([True, False]), 9
    )
    y = sconv.sconv_forward(x, weight, cache, meta, activation="silu", use_residual=True)
    want = _oracle([x[:4], x[4:]], weight, [hist2, torch.zeros(3, 12)], True, True)
    assert_close_rounded(y, want)
    # Decode one token for each sequence: the cache now holds their last three inputs.
    step = torch.randn(2, 12).to(dtype)
    y = sconv.sconv_forward(
        step,
        weight,
        cache,
        sconv.decode_sconv_metadata(torch.tensor([2, 0])),
        activation="silu",
        is_decode=True,
    )
    want = _oracle([step[:1], step[1:]], weight, [x[1:4], x[6:9]], True, True)
    assert_close_rounded(y, want)
    assert launches[-1] == "_fused_causal_conv1d_update_decode_kernel"  # decode runs Triton
    assert launches.count("_causal_conv1d_kernel") == 1 and launches.count("_update_sconv_cache_kernel") == 1


def test_activation_and_residual_reach_the_kernels():
    x, weight, cache = _inputs(torch.float32)
    meta = sconv.extend_sconv_metadata(torch.tensor([0, 9]), torch.tensor([1]), torch.tensor([False]), 9)
    plain = sconv.sconv_forward(x, weight, cache.clone(), meta, activation=None, use_residual=False)
    assert_close_rounded(plain, _oracle([x], weight, [torch.zeros(3, 12)], False, False))
    silu = sconv.sconv_forward(x, weight, cache.clone(), meta, activation="silu", use_residual=False)
    assert_close_rounded(silu, _oracle([x], weight, [torch.zeros(3, 12)], True, False))
    dec_meta = sconv.decode_sconv_metadata(torch.tensor([1]))
    a = sconv.sconv_forward(x[:1], weight, cache.clone(), dec_meta, use_residual=False, is_decode=True)
    b = sconv.sconv_forward(x[:1], weight, cache.clone(), dec_meta, use_residual=True, is_decode=True)
    torch.testing.assert_close(b - a, x[:1], atol=1e-5, rtol=1e-5)


def test_a_padded_decode_lane_writes_nothing():
    x, weight, cache = _inputs(torch.float32)
    before = cache.clone()
    sconv.sconv_forward(
        x[:2], weight, cache, sconv.decode_sconv_metadata(torch.tensor([3, -1])), is_decode=True
    )
    assert torch.equal(cache[:3], before[:3]) and not torch.equal(cache[3], before[3])
