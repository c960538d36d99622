"""HiCache K/V row transfers: upstream's destination-first API, per-layer pointer tables, bad inputs."""

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.ops import kvcache
from sglang.kernels.ops.kvcache import hicache
from sglang.kernels.ops.kvcache.hicache import (
    can_use_hicache_jit_kernel,
    can_use_write_back_jit_kernel,
    layer_pointer_table,
    transfer_hicache_all_layer,
    transfer_hicache_all_layer_ref,
    transfer_hicache_one_layer,
    transfer_hicache_one_layer_ref,
)
from tests.kernels.spy import LaunchSpy as _LaunchSpy
from tests.kernels.strided import stride2

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


@pytest.fixture
def spy(monkeypatch):
    s = _LaunchSpy(hicache._transfer_hicache_kernel)
    monkeypatch.setattr(hicache, "_transfer_hicache_kernel", s)
    return s


def _rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def _indices(n, n_src, n_dst, seed=0, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n_src, (n,), generator=g)  # sources may repeat
    dst = torch.randperm(n_dst, generator=g)[:n]  # destinations may not
    return dst.to(dtype), src.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("item", [(1,), (3, 5), (1, 1030)])
@pytest.mark.parametrize("idx_dtype", [torch.int64, torch.int32])
def test_one_layer_copies_exactly_the_listed_rows(spy, item, dtype, idx_dtype):
    k_src, v_src = _rand((17, *item), dtype, 1), _rand((17, *item), dtype, 2)
    # Random (not zero) destinations, so rows the copy must not touch are visible.
    k_dst, v_dst = _rand((19, *item), dtype, 3), _rand((19, *item), dtype, 4)
    dst, src = _indices(13, 17, 19, dtype=idx_dtype)
    want_k, want_v = k_dst.clone(), v_dst.clone()
    for s, d in zip(src.tolist(), dst.tolist()):
        want_k[d], want_v[d] = k_src[s], v_src[s]
    # A slot is a [*item] row: element_dim spans it (the default is the last dim only).
    element_dim = torch.Size(item).numel()
    assert transfer_hicache_one_layer(k_dst, v_dst, dst, k_src, v_src, src, element_dim=element_dim) is None
    assert torch.equal(k_dst, want_k) and torch.equal(v_dst, want_v)
    assert spy.launches == 1


def test_one_layer_strides_differ_between_every_pair(spy):
    # Per-layer views of page_first host buffers [slots, layers, 2, 8] (K: 5 layers, slot
    # stride 80; V: 3 layers, 48) into device pools of padded rows (K: 24, V: 20): four slot
    # strides, none shared, so a kernel using the wrong tensor's stride writes wrong bytes.
    host_k = _rand((20, 5, 2, 8), torch.bfloat16, 5).transpose(0, 1)[2]
    host_v = _rand((20, 3, 2, 8), torch.bfloat16, 6).transpose(0, 1)[1]
    dev_k = _rand((6, 24), torch.bfloat16, 7)[:, :16]
    dev_v = _rand((6, 20), torch.bfloat16, 8)[:, 4:]
    assert len({t.stride(0) for t in (host_k, host_v, dev_k, dev_v)}) == 4
    dst, src = torch.tensor([5, 0, 3]), torch.tensor([19, 2, 7])
    before_k, before_v = dev_k.clone(), dev_v.clone()
    # element_dim=16 spans the heads: [2, 8] slots are rows of 16 contiguous elements.
    transfer_hicache_one_layer(dev_k, dev_v, dst, host_k, host_v, src, element_dim=16)
    assert torch.equal(dev_k[dst], host_k[src].reshape(3, 16))
    assert torch.equal(dev_v[dst], host_v[src].reshape(3, 16))
    untouched = [1, 2, 4]
    assert torch.equal(dev_k[untouched], before_k[untouched])
    assert torch.equal(dev_v[untouched], before_v[untouched])
    # The other direction (backup): the host views are now the destinations.
    host_k.zero_()
    host_v.zero_()
    transfer_hicache_one_layer(host_k, host_v, src, dev_k, dev_v, dst, element_dim=16)
    assert torch.equal(host_k[src].reshape(3, 16), dev_k[dst])
    assert torch.equal(host_v[src].reshape(3, 16), dev_v[dst])
    assert spy.launches == 2


def test_element_dim_views_the_pools_as_rows(spy):
    k_src, v_src = _rand((4, 2, 6), torch.float32, 1), _rand((4, 2, 6), torch.float32, 2)
    k_dst, v_dst = torch.zeros(8, 6), torch.zeros(8, 6)  # 8 rows of 6: the sources' half-slots
    transfer_hicache_one_layer(
        k_dst, v_dst, torch.tensor([7]), k_src, v_src, torch.tensor([5]), element_dim=6
    )
    assert torch.equal(k_dst[7], k_src.view(-1, 6)[5]) and torch.equal(v_dst[7], v_src.view(-1, 6)[5])


def test_odd_byte_rows_copy_as_bytes(spy):
    # fp8 stored as uint8, 3-byte rows: no 4-byte words, still the kernel, still exact.
    k_src = torch.arange(30, dtype=torch.uint8).view(10, 3)
    k_dst, v_dst = torch.zeros(4, 3, dtype=torch.uint8), torch.zeros(4, 3, dtype=torch.uint8)
    transfer_hicache_one_layer(k_dst, v_dst, torch.tensor([0, 3]), k_src, k_src + 100, torch.tensor([9, 1]))
    assert spy.launches == 1
    assert k_dst[3].tolist() == [3, 4, 5] and v_dst[0].tolist() == [127, 128, 129]


def test_copy_is_bit_exact_for_nan_payloads(spy):
    bits = torch.tensor([0x7FC1, -1, 1, 0x7F81, 0x1234, -32768], dtype=torch.int16)
    k_src = bits.view(torch.bfloat16).reshape(1, 6).repeat(3, 1)
    k_dst, v_dst = torch.zeros(4, 6, dtype=torch.bfloat16), torch.zeros(4, 6, dtype=torch.bfloat16)
    transfer_hicache_one_layer(k_dst, v_dst, torch.tensor([1]), k_src, k_src, torch.tensor([2]))
    assert torch.equal(k_dst[1].view(torch.int16), bits) and torch.equal(v_dst[1].view(torch.int16), bits)


def test_torch_path_is_explicit_and_agrees(monkeypatch, spy):
    # Without a device a kernel can address both pools from (a pageable host pool with a CUDA
    # pool, or a CPU without the interpreter), the reference runs; it launches nothing.
    k_src, v_src = _rand((8, 4, 4), torch.float16, 1), _rand((8, 4, 4), torch.float16, 2)
    k_dst, v_dst = _rand((8, 4, 4), torch.float16, 3), _rand((8, 4, 4), torch.float16, 4)
    dst, src = _indices(5, 8, 8)
    want_k, want_v = k_dst.clone(), v_dst.clone()
    transfer_hicache_one_layer(want_k, want_v, dst, k_src, v_src, src)
    assert spy.launches == 1
    monkeypatch.setattr(hicache, "copy_kernel_device", lambda *tensors: None)
    transfer_hicache_one_layer(k_dst, v_dst, dst, k_src, v_src, src)
    assert spy.launches == 1 and torch.equal(k_dst, want_k) and torch.equal(v_dst, want_v)


def _layered(n_layers, n_slots, row, dtype, seed, page_first=False):
    if page_first:  # [slots, layers, row] seen as [layers, slots, row]: slot stride L * row
        return _rand((n_slots, n_layers, row), dtype, seed).transpose(0, 1)
    return _rand((n_layers, n_slots, row), dtype, seed)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("layers", [1, 3])
def test_all_layer_follows_the_pointer_tables(spy, layers, dtype):
    # Device layer_first pools (slot stride = row) to a page_first host pool (slot stride =
    # layers x row): the two strides differ, and K's and V's layers are separate allocations.
    row = 12
    dev_k, dev_v = _layered(layers, 9, row, dtype, 1), _layered(layers, 9, row, dtype, 2)
    host_k = _layered(layers, 11, row, dtype, 3, page_first=True)
    host_v = _layered(layers, 11, row, dtype, 4, page_first=True)
    host_idx, dev_idx = _indices(6, 9, 11, seed=layers)
    want_k, want_v = host_k.clone(), host_v.clone()
    transfer_hicache_all_layer_ref(want_k, want_v, host_idx, dev_k, dev_v, dev_idx)
    esize = dev_k.element_size()
    transfer_hicache_all_layer(
        layer_pointer_table(host_k),
        layer_pointer_table(host_v),
        host_idx,
        layer_pointer_table(dev_k),
        layer_pointer_table(dev_v),
        dev_idx,
        kv_cache_src_stride_bytes=dev_k.stride(1) * esize,
        kv_cache_dst_stride_bytes=host_k.stride(1) * esize,
        element_size=row * esize,
    )
    assert torch.equal(host_k, want_k) and torch.equal(host_v, want_v)
    assert spy.launches == 1  # every layer in one launch
    assert spy.grids[0][2] == layers


def test_all_layer_element_size_defaults_to_the_equal_strides(spy):
    k, v = _layered(2, 6, 4, torch.float32, 1), _layered(2, 6, 4, torch.float32, 2)
    tk, tv = torch.zeros_like(k), torch.zeros_like(v)
    src, dst = torch.tensor([5, 1]), torch.tensor([0, 4])
    transfer_hicache_all_layer(
        layer_pointer_table(tk),
        layer_pointer_table(tv),
        dst,
        layer_pointer_table(k),
        layer_pointer_table(v),
        src,
        kv_cache_src_stride_bytes=16,
        kv_cache_dst_stride_bytes=16,
    )
    assert torch.equal(tk[:, dst], k[:, src]) and torch.equal(tv[:, dst], v[:, src])
    with pytest.raises(ValueError, match="element_size is needed"):
        transfer_hicache_all_layer(
            layer_pointer_table(tk),
            layer_pointer_table(tv),
            dst,
            layer_pointer_table(k),
            layer_pointer_table(v),
            src,
            kv_cache_src_stride_bytes=16,
            kv_cache_dst_stride_bytes=32,
        )


def test_all_layer_has_no_torch_path(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    table = torch.zeros(2, dtype=torch.uint64)
    idx = torch.tensor([0])
    with pytest.raises(ValueError, match="can_use_hicache_jit_kernel"):
        transfer_hicache_all_layer(
            table, table, idx, table, table, idx, kv_cache_src_stride_bytes=8, kv_cache_dst_stride_bytes=8
        )


def test_predicates():
    assert can_use_hicache_jit_kernel(element_size=2048)
    assert can_use_hicache_jit_kernel(element_size=6)  # bytes: fewer limits than upstream's 128
    for bad in (0, -8, 8.0, True):
        assert not can_use_hicache_jit_kernel(element_size=bad)
    assert not can_use_hicache_jit_kernel(element_size=16, unroll=0)
    # 0.5.23's page_size: None or a page length; it picks upstream's TMA kernel, not the rows.
    assert can_use_hicache_jit_kernel(element_size=2048, page_size=64)
    assert can_use_hicache_jit_kernel(element_size=2048, page_size=None)
    assert not can_use_hicache_jit_kernel(element_size=2048, page_size=0)
    with pytest.raises(TypeError):
        can_use_hicache_jit_kernel(2048)  # keyword-only, as upstream
    # No staged write-back kernel here: callers take the plain backup, as upstream's do.
    assert can_use_write_back_jit_kernel(element_size=2048) is False


def test_predicate_needs_the_interpreter_on_a_cpu_only_machine(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert not can_use_hicache_jit_kernel(element_size=16)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert can_use_hicache_jit_kernel(element_size=16)


def _one_layer_args():
    return {
        "k_cache_dst": _rand((5, 2, 4), torch.float32, 3),
        "v_cache_dst": _rand((5, 2, 4), torch.float32, 4),
        "indices_dst": torch.tensor([4, 1]),
        "k_cache_src": _rand((6, 2, 4), torch.float32, 1),
        "v_cache_src": _rand((6, 2, 4), torch.float32, 2),
        "indices_src": torch.tensor([0, 5]),
        "element_dim": 8,
    }


BAD_ONE_LAYER = [
    ("indices_src", lambda a: a.update(indices_src=a["indices_src"].to(torch.int16))),
    ("indices_dst", lambda a: a.update(indices_dst=a["indices_dst"][None])),
    ("indices_src", lambda a: a.update(indices_dst=torch.tensor([4]))),
    ("indices_dst", lambda a: a.update(indices_dst=[4, 1])),
    ("v_cache_dst", lambda a: a.update(v_cache_dst=a["v_cache_dst"].half())),
    ("k_cache_src", lambda a: a.update(k_cache_src=torch.zeros(6, 4, 2).transpose(1, 2))),
    ("v_cache_src", lambda a: a.update(v_cache_src=torch.zeros(6, 2, 4, device="meta"))),
    ("indices_src", lambda a: a.update(indices_src=torch.tensor([0, 5], device="meta"))),
    ("unroll", lambda a: a.update(unroll=-1)),
]


@pytest.mark.parametrize("arg, mutate", BAD_ONE_LAYER)
def test_one_layer_rejects_bad_input_without_writing(arg, mutate):
    args = _one_layer_args()
    mutate(args)
    before = (args["k_cache_dst"].clone(), args["v_cache_dst"].clone())
    with pytest.raises(ValueError, match=arg):
        transfer_hicache_one_layer(**args)
    assert torch.equal(args["k_cache_dst"], before[0]) and torch.equal(args["v_cache_dst"], before[1])


@pytest.mark.parametrize(
    "which, bad", [("indices_src", [0, 6]), ("indices_dst", [-1, 1]), ("indices_dst", [5, 1])]
)
def test_out_of_range_slots_fail_on_the_device_before_any_write(which, bad):
    args = _one_layer_args()
    args[which] = torch.tensor(bad)
    before = (args["k_cache_dst"].clone(), args["v_cache_dst"].clone())
    with pytest.raises(RuntimeError, match=rf"{which} must lie in"):
        transfer_hicache_one_layer(**args)
    assert torch.equal(args["k_cache_dst"], before[0]) and torch.equal(args["v_cache_dst"], before[1])


def test_ops_compile_without_a_graph_break():
    args = _one_layer_args()
    k, v = _layered(2, 6, 4, torch.float32, 1), _layered(2, 6, 4, torch.float32, 2)
    tk, tv = torch.zeros_like(k), torch.zeros_like(v)
    tables = [layer_pointer_table(t) for t in (tk, tv, k, v)]

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step(a, tables, src, dst):
        transfer_hicache_one_layer(**a)
        transfer_hicache_all_layer(
            tables[0],
            tables[1],
            dst,
            tables[2],
            tables[3],
            src,
            kv_cache_src_stride_bytes=16,
            kv_cache_dst_stride_bytes=16,
        )
        return a["k_cache_dst"] + 0

    want = _one_layer_args()
    transfer_hicache_one_layer_ref(**{k_: v_ for k_, v_ in want.items()})
    out = step(args, tables, torch.tensor([1, 2]), torch.tensor([3, 0]))
    assert torch.equal(out, want["k_cache_dst"])
    assert torch.equal(tk[:, [3, 0]], k[:, [1, 2]])


@pytest.mark.parametrize("name", ["transfer_hicache_one_layer", "transfer_hicache_all_layer"])
def test_registry_and_group_surface(name):
    assert registry.load(f"kvcache.{name}") is getattr(hicache, name)
    assert registry.load(f"kvcache.{name}", "torch") is getattr(hicache, f"{name}_ref")
    assert getattr(kvcache, name) is getattr(hicache, name)
    assert kvcache.can_use_hicache_jit_kernel is can_use_hicache_jit_kernel


@pytest.mark.parametrize("idx_dtype", [torch.int64, torch.int32])
def test_one_layer_reads_strided_indices_at_their_stride(spy, idx_dtype):
    # Stride-2 views of the same slots, other valid slots in their gaps: an index read without
    # its stride would copy other rows to other places, and the range check would pass.
    k_src, v_src = _rand((9, 6), torch.bfloat16, 1), _rand((9, 6), torch.bfloat16, 2)
    k_dst, v_dst = _rand((10, 6), torch.bfloat16, 3), _rand((10, 6), torch.bfloat16, 4)
    dst, src = torch.tensor([7, 2, 9], dtype=idx_dtype), torch.tensor([0, 8, 3], dtype=idx_dtype)
    want = (k_dst.clone(), v_dst.clone())
    transfer_hicache_one_layer(*want, dst, k_src, v_src, src)
    dst_view = stride2(dst, torch.tensor([1, 4, 5], dtype=idx_dtype))
    src_view = stride2(src, torch.tensor([6, 1, 5], dtype=idx_dtype))
    transfer_hicache_one_layer(k_dst, v_dst, dst_view, k_src, v_src, src_view, page_size=16)
    assert torch.equal(k_dst, want[0]) and torch.equal(v_dst, want[1]) and spy.launches == 2
    assert torch.equal(k_dst[dst.long()], k_src[src.long()])


def test_all_layer_reads_strided_indices_and_refuses_a_strided_table(spy):
    k, v = _layered(2, 6, 4, torch.float32, 1), _layered(2, 6, 4, torch.float32, 2)
    tk, tv = torch.zeros_like(k), torch.zeros_like(v)
    src, dst = torch.tensor([5, 1, 2]), torch.tensor([0, 4, 3])
    tables = [layer_pointer_table(t) for t in (tk, tv, k, v)]
    kw = dict(kv_cache_src_stride_bytes=16, kv_cache_dst_stride_bytes=16, page_size=2)
    src_view, dst_view = stride2(src, torch.tensor([0, 3, 4])), stride2(dst, torch.tensor([5, 1, 2]))
    transfer_hicache_all_layer(tables[0], tables[1], dst_view, tables[2], tables[3], src_view, **kw)
    assert torch.equal(tk[:, dst], k[:, src]) and torch.equal(tv[:, dst], v[:, src])
    assert tk[:, [1, 2, 5]].eq(0).all()  # the decoys' slots stay untouched
    # A stride-2 view of a layer table would hand the kernel another layer's address: refused
    # on the host, before any launch.
    wide = layer_pointer_table([k[0], v[0], k[1], v[1]])
    with pytest.raises(ValueError, match="k_ptr_src must be a contiguous table"):
        transfer_hicache_all_layer(tables[0], tables[1], dst, wide[0::2], tables[3], src, **kw)
    assert spy.launches == 1


@pytest.mark.parametrize("page_size", [0, -64, 1.5, True])
def test_page_size_must_be_none_or_a_positive_int(page_size):
    k = torch.zeros(4, 2)
    idx = torch.tensor([0])
    with pytest.raises(ValueError, match="page_size must be None or a positive int"):
        transfer_hicache_one_layer(k, k.clone(), idx, k.clone(), k.clone(), idx, page_size=page_size)
    table = layer_pointer_table([k])
    with pytest.raises(ValueError, match="page_size must be None or a positive int"):
        transfer_hicache_all_layer(table, table, idx, table, table, idx, kv_cache_src_stride_bytes=8,
                                   kv_cache_dst_stride_bytes=8, page_size=page_size)


def test_the_range_check_checks_the_strided_values_the_kernel_reads(spy):
    k_src, v_src = torch.ones(4, 2), torch.ones(4, 2) * 2
    k_dst, v_dst = torch.zeros(5, 2), torch.zeros(5, 2)
    # Out of range only in the gaps, which the kernel never reads: accepted.
    dst, src = stride2(torch.tensor([1, 4]), torch.tensor([99, -7])), stride2(torch.tensor([0, 3]), torch.tensor([50, 60]))
    transfer_hicache_one_layer(k_dst, v_dst, dst, k_src, v_src, src)
    assert k_dst[[1, 4]].eq(1).all() and v_dst[[1, 4]].eq(2).all() and spy.launches == 1
    # Out of range at a position the kernel reads: refused on the device, before the launch.
    with pytest.raises(RuntimeError, match="indices_src must lie in"):
        transfer_hicache_one_layer(k_dst, v_dst, dst, k_src, v_src, stride2(torch.tensor([0, 4]), torch.tensor([1, 2])))
    assert spy.launches == 1
