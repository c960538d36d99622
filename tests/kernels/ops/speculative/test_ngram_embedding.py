"""compute_n_gram_ids[_decode] / update_token_table[_decode] (upstream 0.5.17's ngram_embedding).

The oracle is a plain-Python transcription of upstream's CUDA loops
(`jit/csrc/ngram_embedding.cuh`), element by element, independent of both the kernel and the
torch reference.
"""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.ops.speculative import (
    compute_n_gram_ids,
    compute_n_gram_ids_decode,
    compute_n_gram_ids_decode_ref,
    compute_n_gram_ids_ref,
    update_token_table,
    update_token_table_decode,
    update_token_table_decode_ref,
    update_token_table_ref,
)
from tests.kernels.spy import spy_launches

ng_module = importlib.import_module("sglang.kernels.ops.speculative.ngram_embedding")

EOS = 2


def _oracle_id(table, row, col, n_idx, k_idx, ne_weights, ne_mods, sums, ne_k, eos):
    mod = ne_mods[n_idx][k_idx]
    n_gram_id = 0
    for j in range(n_idx + 2):
        if col - j < 0:
            break
        tok = table[row][col - j]
        if tok < 0 or (tok == eos and j > 0):
            break
        n_gram_id += (tok * ne_weights[n_idx][k_idx][j]) % mod
    return n_gram_id % mod + sums[n_idx * ne_k + k_idx]


def _config(ne_n=4, ne_k=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    weights = torch.randint(1, 2**31 - 1, (ne_n - 1, ne_k, ne_n), generator=g, dtype=torch.int64)
    mods = torch.randint(1000, 2**31 - 1, (ne_n - 1, ne_k), generator=g, dtype=torch.int64)
    sizes = torch.randint(1, 5000, ((ne_n - 1) * ne_k,), generator=g)
    sums = torch.cumsum(sizes, 0) - sizes
    return ne_n, ne_k, weights.int(), mods.int(), sums.int()


def _table(rows=6, cols=20, seed=1):
    g = torch.Generator().manual_seed(seed)
    table = torch.randint(3, 150_000, (rows, cols), generator=g, dtype=torch.int32)
    table[4, 5] = -table[4, 5]  # an ignored token
    table[0, 2] = EOS
    return table


# Requests: (row, column start, length). Request 0 starts mid-row, crossing an ignored token;
# request 1 starts at column 0 and crosses an eos; request 2 is empty.
REQUESTS = [(4, 3, 5), (0, 0, 6), (2, 7, 0), (5, 17, 3)]


def _batch():
    rows = torch.tensor([r for r, _, _ in REQUESTS], dtype=torch.int64)
    cols = torch.tensor([c for _, c, _ in REQUESTS], dtype=torch.int32)
    lens = torch.tensor([n for _, _, n in REQUESTS], dtype=torch.int32)
    starts = torch.cat([torch.zeros(1, dtype=torch.int32), lens.cumsum(0).int()])
    return rows, cols, lens, starts


def _expected(table, ne_n, ne_k, weights, mods, sums, positions):
    return torch.tensor(
        [[_oracle_id(table.tolist(), r, c, n, k, weights.tolist(), mods.tolist(), sums.tolist(),
                     ne_k, EOS) for n in range(ne_n - 1) for k in range(ne_k)]
         for r, c in positions], dtype=torch.int32)


@pytest.mark.parametrize("fn", [compute_n_gram_ids, compute_n_gram_ids_ref])
@pytest.mark.parametrize("ne_n, ne_k", [(4, 3), (2, 1), (6, 2)])
def test_compute_n_gram_ids_matches_upstreams_loops(fn, ne_n, ne_k):
    ne_n, ne_k, weights, mods, sums = _config(ne_n, ne_k)
    table = _table()
    rows, cols, lens, starts = _batch()
    n_tokens = int(lens.sum())
    tokens = torch.zeros(n_tokens + 2, dtype=torch.int32)  # two padded slots past the batch
    out = torch.full((n_tokens + 2, (ne_n - 1) * ne_k), -7, dtype=torch.int32)
    fn(ne_n, ne_k, weights, mods, sums, tokens, starts, table, rows, cols, out, EOS)
    positions = [(r, c + i) for r, c, n in REQUESTS for i in range(n)]
    assert torch.equal(out[:n_tokens], _expected(table, ne_n, ne_k, weights, mods, sums, positions))
    assert (out[n_tokens:] == -7).all()  # tokens past the last request are not written


@pytest.mark.parametrize("fn", [compute_n_gram_ids_decode, compute_n_gram_ids_decode_ref])
def test_compute_n_gram_ids_decode_matches_upstreams_loops(fn):
    ne_n, ne_k, weights, mods, sums = _config(5, 2)
    table = _table()
    rows, cols, _, _ = _batch()
    out = torch.empty(len(REQUESTS), (ne_n - 1) * ne_k, dtype=torch.int32)
    fn(ne_n, ne_k, weights, mods, sums, table, rows, cols, out, EOS)
    positions = [(r, c) for r, c, _ in REQUESTS]
    assert torch.equal(out, _expected(table, ne_n, ne_k, weights, mods, sums, positions))


def test_every_tensor_strided_differently():
    ne_n, ne_k, weights, mods, sums = _config(4, 3)
    table = _table()
    rows, cols, lens, starts = _batch()
    n_tokens = int(lens.sum())
    # Each input a strided view of a wider buffer (its own strides), the output transposed.
    w_s = torch.zeros(ne_n, ne_k, ne_n - 1, dtype=torch.int32).permute(2, 1, 0)
    w_s.copy_(weights)
    m_s = torch.zeros(ne_k, ne_n - 1, dtype=torch.int32).T
    m_s.copy_(mods)
    sums_s = torch.zeros(2 * sums.numel(), dtype=torch.int32)[::2]
    sums_s.copy_(sums)
    t_s = torch.zeros(6, 60, dtype=torch.int32)[:, 5:45:2]
    t_s.copy_(table)
    r_s = torch.zeros(12, dtype=torch.int64)[::3]
    r_s.copy_(rows)
    c_s = torch.zeros(8, dtype=torch.int32)[::2]
    c_s.copy_(cols)
    st_s = torch.zeros(10, dtype=torch.int32)[::2]
    st_s.copy_(starts)
    out = torch.zeros((ne_n - 1) * ne_k, n_tokens, dtype=torch.int32).T
    compute_n_gram_ids(ne_n, ne_k, w_s, m_s, sums_s, torch.zeros(n_tokens, dtype=torch.int32),
                       st_s, t_s, r_s, c_s, out, EOS)
    positions = [(r, c + i) for r, c, n in REQUESTS for i in range(n)]
    assert torch.equal(out, _expected(table, ne_n, ne_k, weights, mods, sums, positions))


@pytest.mark.parametrize("fn", [update_token_table, update_token_table_ref])
@pytest.mark.parametrize("with_ignore", [False, True])
def test_update_token_table_writes_each_request_at_its_column(fn, with_ignore):
    table = torch.full((6, 20), 9, dtype=torch.int32)
    rows, cols, lens, _ = _batch()
    n_tokens = int(lens.sum())
    tokens = torch.arange(100, 100 + n_tokens + 3, dtype=torch.int32)  # 3 extra: never written
    ignore = torch.tensor([103, 111], dtype=torch.int32) if with_ignore else None
    fn(tokens, table, rows, cols, lens, ignore)
    expected = torch.full((6, 20), 9, dtype=torch.int32)
    i = 0
    for r, c, n in REQUESTS:
        for k in range(n):
            tok = 100 + i
            expected[r, c + k] = -tok if with_ignore and tok in (103, 111) else tok
            i += 1
    assert torch.equal(table, expected)


def test_update_token_table_prefix_sum_spans_several_blocks():
    # 300 requests of one token: the first-token sum runs over three 128-length blocks.
    n = 300
    table = torch.zeros(n, 4, dtype=torch.int32)
    rows = torch.arange(n - 1, -1, -1, dtype=torch.int64)
    cols = (torch.arange(n) % 4).int()
    lens = torch.ones(n, dtype=torch.int32)
    tokens = torch.arange(n, dtype=torch.int32) + 5
    update_token_table(tokens, table, rows, cols, lens)
    assert [int(table[n - 1 - b, b % 4]) for b in range(n)] == list(range(5, n + 5))


@pytest.mark.parametrize("fn", [update_token_table_decode, update_token_table_decode_ref])
def test_update_token_table_decode(fn):
    table = torch.zeros(6, 20, dtype=torch.int32)
    rows, cols, _, _ = _batch()
    tokens = torch.tensor([11, 12, 13, 14], dtype=torch.int32)
    fn(tokens, table, rows, cols)
    expected = torch.zeros(6, 20, dtype=torch.int32)
    for tok, (r, c, _) in zip([11, 12, 13, 14], REQUESTS):
        expected[r, c] = tok
    assert torch.equal(table, expected)


def test_triton_paths_run(monkeypatch):
    ids_grids = spy_launches(monkeypatch, ng_module, "_compute_n_gram_ids_kernel")
    table_grids = spy_launches(monkeypatch, ng_module, "_update_token_table_kernel")
    ne_n, ne_k, weights, mods, sums = _config(3, 2)
    table = _table()
    rows, cols, lens, starts = _batch()
    out = torch.empty(int(lens.sum()), 4, dtype=torch.int32)
    compute_n_gram_ids(ne_n, ne_k, weights, mods, sums, torch.zeros(out.shape[0], dtype=torch.int32),
                       starts, table, rows, cols, out, EOS)
    update_token_table_decode(torch.ones(4, dtype=torch.int32), table, rows, cols)
    assert ids_grids == [(4,)] and table_grids == [(4,)]  # a program per request


def test_compiles_fullgraph_without_a_graph_break():
    ne_n, ne_k, weights, mods, sums = _config(3, 2)
    rows, cols, lens, starts = _batch()

    def step(table, tokens, out):
        update_token_table(tokens, table, rows, cols, lens)
        compute_n_gram_ids(ne_n, ne_k, weights, mods, sums, tokens, starts, table, rows, cols,
                           out, EOS)
        return out

    n_tokens = int(lens.sum())
    tokens = torch.arange(10, 10 + n_tokens, dtype=torch.int32)
    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    got = compiled(_table(), tokens, torch.empty(n_tokens, 4, dtype=torch.int32))
    assert torch.equal(got, step(_table(), tokens, torch.empty(n_tokens, 4, dtype=torch.int32)))


@pytest.mark.parametrize(
    "change, match",
    [
        (dict(ne_n=1), "need 2 <= ne_n"),
        (dict(ne_weights=torch.ones(3, 3, 4, dtype=torch.int64)), "ne_weights must be a 3-D torch.int32"),
        (dict(ne_mods=torch.ones(3, 2, dtype=torch.int32)), r"ne_mods must have shape \(3, 3\)"),
        (dict(row_indices=torch.zeros(4, dtype=torch.int32)), "row_indices must be a 1-D torch.int64"),
        (dict(exclusive_req_len_sums=torch.zeros(4, dtype=torch.int32)),
         r"exclusive_req_len_sums must have shape \(5,\)"),
        (dict(n_gram_ids=torch.zeros(14, 8, dtype=torch.int32)), r"n_gram_ids must have shape \(14, 9\)"),
        (dict(ne_token_table=torch.zeros(6, 20, dtype=torch.int32, device="meta")), "must be on meta"),
    ],
)
def test_compute_rejects_bad_inputs(change, match):
    ne_n, ne_k, weights, mods, sums = _config(4, 3)
    rows, cols, lens, starts = _batch()
    args = dict(ne_n=ne_n, ne_k=ne_k, ne_weights=weights, ne_mods=mods,
                exclusive_ne_embedder_size_sums=sums, tokens=torch.zeros(14, dtype=torch.int32),
                exclusive_req_len_sums=starts, ne_token_table=_table(), row_indices=rows,
                column_starts=cols, n_gram_ids=torch.zeros(14, 9, dtype=torch.int32),
                eos_token_id=EOS) | change
    with pytest.raises(ValueError, match=match):
        compute_n_gram_ids(**args)


def test_registry_entries():
    for name in ("compute_n_gram_ids", "compute_n_gram_ids_decode", "update_token_table",
                 "update_token_table_decode"):
        assert registry.load(f"speculative.{name}") is getattr(ng_module, name)
        assert registry.load(f"speculative.{name}", "torch") is getattr(ng_module, f"{name}_ref")
