"""`kvcache.store_cache`: upstream's signature, the reserved padding slot, byte caches through Triton."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.ops import kvcache
from sglang.kernels.ops.kvcache.kvcache import can_use_store_cache, store_cache, store_cache_ref
from tests.kernels.spy import LaunchSpy as _LaunchSpy
from tests.kernels.strided import stride2

kvcache_module = importlib.import_module("sglang.kernels.ops.kvcache.kvcache")


@pytest.fixture
def spy(monkeypatch):
    s = _LaunchSpy(kvcache_module._store_cache_kernel)
    monkeypatch.setattr(kvcache_module, "_store_cache_kernel", s)
    return s


def _rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype in (torch.uint8, torch.float8_e4m3fn):
        return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8).view(dtype)
    return torch.randn(shape, generator=g).to(dtype)


def _expected(k, v, k_cache, v_cache, indices, skip=0):
    k_want, v_want = k_cache.clone(), v_cache.clone()
    for t, slot in enumerate(indices.tolist()):
        if slot != skip:
            k_want[slot], v_want[slot] = k[t], v[t]
    return k_want, v_want


def _bits(t):
    return t.view(torch.uint8)


DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.uint8, torch.float8_e4m3fn]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k_item, v_item", [((2, 8), (2, 8)), ((3, 12), (3, 4)), ((1, 3), (1, 5))])
def test_stores_rows_and_skips_the_padding_slot(spy, k_item, v_item, dtype):
    # A CUDA-graph padded batch: three real tokens, three padding tokens on reserved slot 0.
    k, v = _rand((6, *k_item), dtype, 1), _rand((6, *v_item), dtype, 2)
    k_cache, v_cache = _rand((20, *k_item), dtype, 3), _rand((20, *v_item), dtype, 4)
    loc = torch.tensor([5, 9, 17, 0, 0, 0])
    k_want, v_want = _expected(k, v, k_cache, v_cache, loc)
    assert store_cache(k, v, k_cache, v_cache, loc) is None
    assert torch.equal(_bits(k_cache), _bits(k_want)) and torch.equal(_bits(v_cache), _bits(v_want))
    assert spy.launches == 1  # fp8 / uint8 too: the kernel moves bytes, not values


def test_reserved_skip_index_minus_one_writes_slot_zero_and_another_slot_can_be_reserved(spy):
    k, v = _rand((2, 4), torch.float32, 1), _rand((2, 4), torch.float32, 2)
    k_cache, v_cache = torch.zeros(8, 4), torch.zeros(8, 4)
    store_cache(k, v, k_cache, v_cache, torch.tensor([0, 3]), reserved_skip_index=-1)
    assert torch.equal(k_cache[0], k[0]) and torch.equal(v_cache[3], v[1])
    k_cache.zero_()
    store_cache(k, v, k_cache, v_cache, torch.tensor([0, 7]), reserved_skip_index=7)
    assert torch.equal(k_cache[0], k[0]) and torch.equal(k_cache[7], torch.zeros(4))


def test_strides_differ_for_every_pair(spy):
    # k is a column slice of a fused QKV output (row stride 40), v of another buffer (24); the
    # caches are padded rows of two other widths, so no two of the four share a row stride.
    k = _rand((5, 40), torch.bfloat16, 1)[:, 16:28]
    v = _rand((5, 24), torch.bfloat16, 5)[:, 8:12]
    k_cache = _rand((12, 16), torch.bfloat16, 2)[:, :12]
    v_cache = _rand((12, 7), torch.bfloat16, 3)[:, :4]
    assert len({k.stride(0), v.stride(0), k_cache.stride(0), v_cache.stride(0)}) == 4
    loc = torch.tensor([11, 2, 0, 7, 4], dtype=torch.int32)
    k_want, v_want = _expected(k, v, k_cache, v_cache, loc)
    store_cache(k, v, k_cache, v_cache, loc)
    assert torch.equal(k_cache, k_want) and torch.equal(v_cache, v_want)


def test_out_of_range_fails_on_the_device_before_any_write(spy):
    k, v = _rand((2, 4), torch.float32, 1), _rand((2, 4), torch.float32, 2)
    k_cache, v_cache = torch.zeros(8, 4), torch.zeros(8, 4)
    for bad, kwargs in (([1, 8], {}), ([1, -2], {}), ([1, 6], {"size_limit": 6})):
        with pytest.raises(RuntimeError, match="indices must lie in"):
            store_cache(k, v, k_cache, v_cache, torch.tensor(bad), **kwargs)
    assert not k_cache.any() and not v_cache.any() and spy.launches == 0


def test_the_explicit_torch_path_agrees(monkeypatch, spy):
    k, v = _rand((4, 8), torch.float8_e4m3fn, 1), _rand((4, 8), torch.float8_e4m3fn, 2)
    k_cache, v_cache = _rand((9, 8), torch.float8_e4m3fn, 3), _rand((9, 8), torch.float8_e4m3fn, 4)
    loc = torch.tensor([0, 8, 3, 0])
    a = (k_cache.clone(), v_cache.clone())
    store_cache(k, v, *a, loc)
    assert spy.launches == 1
    # No Triton on the device (a CPU without the interpreter): the reference, also skipping.
    monkeypatch.setattr(kvcache_module, "use_triton", lambda *tensors: False)
    store_cache(k, v, k_cache, v_cache, loc)
    assert spy.launches == 1
    assert torch.equal(_bits(k_cache), _bits(a[0])) and torch.equal(_bits(v_cache), _bits(a[1]))
    k_want, _ = _expected(k, v, k_cache, v_cache, loc)
    assert torch.equal(_bits(k_cache), _bits(k_want))


def test_predicate():
    assert can_use_store_cache(2048) and can_use_store_cache(512, 256) and can_use_store_cache(6)
    assert not can_use_store_cache(0) and not can_use_store_cache(-4, 8)
    # 0.5.23's tuning knob: 0 (upstream's heuristic) or a thread count; nonsense answers False.
    assert can_use_store_cache(2048, 0, 0) and can_use_store_cache(512, 256, num_threads=64)
    assert not can_use_store_cache(512, num_threads=-1) and not can_use_store_cache(512, num_threads=True)


def _args():
    return [
        _rand((3, 8), torch.float32, 1),
        _rand((3, 8), torch.float32, 2),
        torch.zeros(6, 8),
        torch.zeros(6, 8),
        torch.tensor([1, 2, 3]),
    ]


BAD = [
    ("v", lambda a: a.__setitem__(1, a[1][:2])),
    ("k_cache", lambda a: a.__setitem__(2, torch.zeros(6, 7))),
    ("v_cache", lambda a: a.__setitem__(3, torch.zeros(6, 8, dtype=torch.float16))),
    ("v_cache", lambda a: a.__setitem__(3, torch.zeros(5, 8))),
    ("indices", lambda a: a.__setitem__(4, torch.tensor([1, 2]))),
    ("indices", lambda a: a.__setitem__(4, torch.tensor([1.0, 2.0, 3.0]))),
    ("k", lambda a: a.__setitem__(0, torch.zeros(3, 8, 2).transpose(1, 2))),
    ("k_cache", lambda a: a.__setitem__(2, torch.zeros(6, 8, device="meta"))),
]


@pytest.mark.parametrize("arg, mutate", BAD)
def test_rejects_bad_input_without_writing(arg, mutate):
    args = _args()
    mutate(args)
    with pytest.raises(ValueError, match=rf"store_cache: {arg}"):
        store_cache(*args)
    if not args[2].is_meta:  # a meta cache holds no data to compare
        assert not args[2].any() and not args[3].any()


def test_rejects_bad_keywords():
    args = _args()
    with pytest.raises(ValueError, match="row_bytes"):
        store_cache(*args, row_bytes=16)
    with pytest.raises(ValueError, match="size_limit"):
        store_cache(*args, size_limit=7)
    with pytest.raises(TypeError):
        store_cache(*args, 32)  # the tuning arguments are keyword-only, as upstream's


def test_is_a_custom_op_that_compiles_without_a_graph_break():
    k, v, k_cache, v_cache, loc = _args()
    loc = torch.tensor([0, 4, 5])

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step(k, v, kc, vc, loc):
        store_cache(k, v, kc, vc, loc)
        return kc.sum() + vc.sum()

    total = step(k, v, k_cache, v_cache, loc)
    k_want, v_want = _expected(k, v, torch.zeros(6, 8), torch.zeros(6, 8), loc)
    assert torch.equal(k_cache, k_want) and torch.equal(v_cache, v_want)
    torch.testing.assert_close(total, k_want.sum() + v_want.sum())


def test_registry_and_group_surface():
    assert registry.load("kvcache.store_cache") is store_cache
    assert registry.load("kvcache.store_cache", "torch") is store_cache_ref
    assert kvcache.store_cache is store_cache and kvcache.can_use_store_cache is can_use_store_cache
    # upstream uses triton_store_cache.py for an unrelated FP8 kernel: the name holds nothing here.
    assert importlib.util.find_spec("sglang.kernels.ops.kvcache.triton_store_cache") is None


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_a_strided_index_is_read_at_its_stride(spy, dtype):
    # The same slots as a stride-2 view, whose gaps hold other valid slots: a kernel that ignored
    # the stride would write k/v rows into the decoys' slots (and pass the range check).
    k, v = _rand((4, 2, 8), torch.bfloat16, 1), _rand((4, 2, 4), torch.bfloat16, 2)
    k_cache, v_cache = _rand((16, 2, 8), torch.bfloat16, 3), _rand((16, 2, 4), torch.bfloat16, 4)
    loc = torch.tensor([5, 0, 11, 2], dtype=dtype)
    view = stride2(loc, torch.tensor([7, 9, 13, 15], dtype=dtype))
    want = (k_cache.clone(), v_cache.clone())
    store_cache(k, v, *want, loc)
    store_cache(k, v, k_cache, v_cache, view)
    assert spy.launches == 2
    assert torch.equal(k_cache, want[0]) and torch.equal(v_cache, want[1])
    k_ref, v_ref = _expected(k, v, k_cache, v_cache, loc)
    assert torch.equal(k_cache, k_ref) and torch.equal(v_cache, v_ref)


def test_the_range_check_checks_the_strided_values_the_kernel_reads(spy):
    k, v = _rand((2, 4), torch.float32, 1), _rand((2, 4), torch.float32, 2)
    k_cache, v_cache = torch.zeros(8, 4), torch.zeros(8, 4)
    # In range at the view's positions, out of range only in the gaps: accepted.
    store_cache(k, v, k_cache, v_cache, stride2(torch.tensor([1, 3]), torch.tensor([99, -5])))
    assert torch.equal(k_cache[[1, 3]], k) and spy.launches == 1
    # Out of range at a position the kernel reads: refused on the device, nothing written.
    with pytest.raises(RuntimeError, match="indices must lie in"):
        store_cache(k, v, k_cache, v_cache, stride2(torch.tensor([1, 8]), torch.tensor([2, 3])))
    assert spy.launches == 1


def test_a_strided_index_compiles_without_a_graph_break():
    # The stride is read from the tensor at launch time, inside the custom op: compiled code
    # passes the view through and stores what eager does.
    k, v, k_cache, v_cache, _ = _args()
    loc = stride2(torch.tensor([0, 4, 5]), torch.tensor([1, 2, 3]))

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step(k, v, kc, vc, loc):
        store_cache(k, v, kc, vc, loc)
        return kc.sum()

    step(k, v, k_cache, v_cache, loc)
    k_want, v_want = _expected(k, v, torch.zeros(6, 8), torch.zeros(6, 8), loc)
    assert torch.equal(k_cache, k_want) and torch.equal(v_cache, v_want)
