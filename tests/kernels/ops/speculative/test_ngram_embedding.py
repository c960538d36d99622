"""ngram_embedding: hashed n-gram rows against the torch reference and a pure-Python hash."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.ops.speculative import NGRAM_HASH_BASE
from sglang.kernels.ops.speculative.ngram_embedding import (
    ngram_embedding,
    ngram_embedding_ref,
)
from tests.kernels.spy import LaunchSpy as _LaunchSpy

# The module itself (the package re-exports a function of the same name, which shadows it).
ngram_module = importlib.import_module("sglang.kernels.ops.speculative.ngram_embedding")




def _python_rows(ids, num_rows, n, starts=None, pad_id=0, base=NGRAM_HASH_BASE):
    """The documented hash in plain Python ints (unbounded, so no overflow can hide here)."""
    ids = list(ids)
    starts = list(starts) if starts is not None else [0, len(ids)]
    rows = []
    for t in range(len(ids)):
        seq_start = max(s for s in starts if s <= t)
        h = 0
        for pos in range(t - n + 1, t + 1):
            tok = ids[pos] if pos >= seq_start else pad_id
            h = (h * base + tok % num_rows) % num_rows
        rows.append(h)
    return rows


def _table(num_rows, dim, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(num_rows, dim, generator=g).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("varlen", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("t, dim", [(1, 1), (37, 40), (20, 130)])  # 130: two 128-column steps
def test_matches_reference_and_python_hash(t, dim, n, varlen, dtype):
    g = torch.Generator().manual_seed(t * 10 + n)
    ids = torch.randint(0, 150_000, (t,), generator=g)
    weight = _table(101, dim, dtype)
    qsl = None
    if varlen:
        cut = sorted(torch.randint(0, t + 1, (3,), generator=g).tolist())
        qsl = torch.tensor([0, *cut, t], dtype=torch.int32)  # may hold empty sequences
    out = ngram_embedding(ids, weight, n, query_start_loc=qsl, pad_id=5)
    assert out.shape == (t, dim) and out.dtype == dtype
    assert torch.equal(out, ngram_embedding_ref(ids, weight, n, query_start_loc=qsl, pad_id=5))
    rows = _python_rows(ids.tolist(), 101, n, None if qsl is None else qsl.tolist(), pad_id=5)
    assert torch.equal(out, weight[torch.tensor(rows)])


def test_ngrams_do_not_cross_sequence_boundaries():
    # The same three tokens as the first and as the second sequence give the same rows.
    weight = _table(997, 8, torch.float32)
    ids = torch.tensor([11, 12, 13, 11, 12, 13])
    out = ngram_embedding(ids, weight, 3, query_start_loc=torch.tensor([0, 3, 6]))
    assert torch.equal(out[:3], out[3:])
    whole = ngram_embedding(ids, weight, 3)
    assert not torch.equal(whole[3:], out[3:])  # one sequence: the 2nd trigram sees 12, 13


def test_hash_stays_exact_for_the_largest_operands():
    # Ids near 2**62 and a base just below 2**31: int64 must not overflow anywhere.
    ids = torch.tensor([2**62 + 12345, 2**31 - 1, 2**40 + 7, 3], dtype=torch.int64)
    weight = _table(1009, 4, torch.float32)
    base = 2**31 - 1
    out = ngram_embedding(ids, weight, 4, base=base, pad_id=2**31 - 5)
    rows = _python_rows(ids.tolist(), 1009, 4, pad_id=2**31 - 5, base=base)
    assert torch.equal(out, weight[torch.tensor(rows)])


def test_strided_weight_and_ids():
    weight = _table(50, 16, torch.float32)[:, ::2]  # [50, 8], column stride 2
    ids = torch.arange(40)[::2]  # [20], stride 2
    out = ngram_embedding(ids, weight, 2)
    assert torch.equal(out, weight[torch.tensor(_python_rows(ids.tolist(), 50, 2))])


def test_empty(monkeypatch):
    spy = _LaunchSpy(ngram_module._ngram_embedding_kernel)
    monkeypatch.setattr(ngram_module, "_ngram_embedding_kernel", spy)
    out = ngram_embedding(torch.empty(0, dtype=torch.int64), _table(10, 4, torch.float32), 2)
    assert out.shape == (0, 4)
    assert spy.grids == []


def test_triton_path_runs_and_agrees_with_torch_path(monkeypatch):
    ids = torch.randint(0, 1000, (40,), generator=torch.Generator().manual_seed(3))
    weight = _table(64, 24, torch.float32)
    qsl = torch.tensor([0, 10, 40])
    assert ngram_module.use_triton(ids, weight, qsl)
    spy = _LaunchSpy(ngram_module._ngram_embedding_kernel)
    monkeypatch.setattr(ngram_module, "_ngram_embedding_kernel", spy)
    via_triton = ngram_embedding(ids, weight, 3, query_start_loc=qsl)
    assert spy.grids == [(3,)]  # 16 positions per program
    monkeypatch.setattr(ngram_module, "use_triton", lambda *t: False)
    via_torch = ngram_embedding(ids, weight, 3, query_start_loc=qsl)
    assert len(spy.grids) == 1
    assert torch.equal(via_triton, via_torch)


@pytest.mark.parametrize(
    "ids, weight_shape, kwargs, match",
    [
        (torch.tensor([1, -2, 3]), (10, 4), {}, "input_ids must be non-negative"),
        (torch.tensor([[1, 2]]), (10, 4), {}, "input_ids must be 1-D"),
        (torch.tensor([1.0, 2.0]), (10, 4), {}, "input_ids must be int32 or int64"),
        (torch.tensor([1, 2]), (10,), {}, "embedding_weight must be 2-D"),
        (torch.tensor([1, 2]), (0, 4), {}, "embedding_weight must have 1 to 2\\*\\*31 rows"),
        (torch.tensor([1, 2]), (10, 4), {"n": 0}, "n must be an int"),
        (torch.tensor([1, 2]), (10, 4), {"pad_id": -1}, "pad_id must be"),
        (torch.tensor([1, 2]), (10, 4), {"base": 2**31}, "base must be"),
        (
            torch.tensor([1, 2, 3]),
            (10, 4),
            {"query_start_loc": torch.tensor([0, 2])},
            "query_start_loc must be non-decreasing from 0 to T=3",
        ),
        (
            torch.tensor([1, 2, 3]),
            (10, 4),
            {"query_start_loc": torch.tensor([0, 2, 1, 3])},
            "query_start_loc must be non-decreasing",
        ),
    ],
)
def test_rejects_bad_inputs(ids, weight_shape, kwargs, match):
    weight = torch.ones(weight_shape)
    kwargs = {"n": 2, **kwargs}
    ids_before, weight_before = ids.clone(), weight.clone()
    with pytest.raises(ValueError, match=match):
        ngram_embedding(ids, weight, **kwargs)
    assert torch.equal(ids, ids_before) and torch.equal(weight, weight_before)


def test_rejects_mixed_devices():
    with pytest.raises(ValueError, match="embedding_weight must be on input_ids' device"):
        ngram_embedding(torch.tensor([1, 2]), torch.ones(10, 4, device="meta"), 2)


def test_registry_entry():
    assert registry.load("speculative.ngram_embedding") is ngram_embedding
    assert registry.load("speculative.ngram_embedding", "torch") is ngram_embedding_ref
