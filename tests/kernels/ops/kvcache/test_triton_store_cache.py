"""store_cache: new K/V rows into cache slots; kernel vs reference, strided inputs, bad inputs."""

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import use_triton
from sglang.kernels.ops import kvcache
from sglang.kernels.ops.kvcache import triton_store_cache
from sglang.kernels.ops.kvcache.triton_store_cache import store_cache, store_cache_ref
from tests.kernels.spy import LaunchSpy as _LaunchSpy

DTYPES = [torch.float32, torch.bfloat16, torch.float16]




@pytest.fixture
def spy(monkeypatch):
    s = _LaunchSpy(triton_store_cache._store_cache_kernel)
    monkeypatch.setattr(triton_store_cache, "_store_cache_kernel", s)
    return s


def _rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def _case(n_tokens, k_item, v_item, dtype, slots=41):
    k, v = _rand((n_tokens, *k_item), dtype, 1), _rand((n_tokens, *v_item), dtype, 2)
    # Random (not zero) caches, so slots the store must not touch are visible.
    k_cache, v_cache = (
        _rand((slots, *k_item), dtype, 3),
        _rand((slots, *v_item), dtype, 4),
    )
    loc = torch.randperm(slots, generator=torch.Generator().manual_seed(n_tokens))[
        :n_tokens
    ]
    return k, v, k_cache, v_cache, loc


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "k_item, v_item",
    [((1,), (1,)), ((2, 16), (2, 16)), ((3, 5), (7,)), ((1, 1500), (2, 3))],
)
@pytest.mark.parametrize("n_tokens", [0, 1, 5, 37])
def test_matches_reference(spy, n_tokens, k_item, v_item, dtype):
    k, v, k_cache, v_cache, loc = _case(n_tokens, k_item, v_item, dtype)
    want_k, want_v = k_cache.clone(), v_cache.clone()
    store_cache_ref(k, v, want_k, want_v, loc)
    assert store_cache(k, v, k_cache, v_cache, loc) is None
    assert torch.equal(k_cache, want_k) and torch.equal(v_cache, want_v)
    assert spy.launches == int(n_tokens > 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_rows_from_fused_qkv(spy, dtype):
    """k and v as slices of a fused [T, 3, H, D] projection: token stride 3*H*D, rows contiguous."""
    qkv = _rand((6, 3, 2, 8), dtype, 9)
    k, v = qkv[:, 1], qkv[:, 2]
    k_cache, v_cache = (
        torch.zeros(10, 2, 8, dtype=dtype),
        torch.zeros(10, 2, 8, dtype=dtype),
    )
    loc = torch.tensor([9, 0, 4, 2, 7, 1])
    store_cache(k, v, k_cache, v_cache, loc)
    assert spy.launches == 1
    for t, slot in enumerate(loc.tolist()):  # independent of the reference
        assert torch.equal(k_cache[slot], k[t]) and torch.equal(v_cache[slot], v[t])
    untouched = [s for s in range(10) if s not in loc.tolist()]
    assert not k_cache[untouched].any() and not v_cache[untouched].any()


def test_nan_payloads_survive(spy):
    bits = torch.tensor([0x7FC1, -1, 1, 0x7F81, 0x1234, -32768], dtype=torch.int16)
    k = bits.view(torch.bfloat16).reshape(1, 6)
    k_cache, v_cache = (
        torch.zeros(3, 6, dtype=torch.bfloat16),
        torch.zeros(3, 6, dtype=torch.bfloat16),
    )
    store_cache(k, k, k_cache, v_cache, torch.tensor([2]))
    assert spy.launches == 1
    assert torch.equal(k_cache[2].view(torch.int16), bits)
    assert torch.equal(v_cache[2].view(torch.int16), bits)


def test_torch_path_matches_kernel_path(monkeypatch, spy):
    k, v, k_cache, v_cache, loc = _case(9, (4, 8), (4, 8), torch.bfloat16)
    kernel_k, kernel_v = k_cache.clone(), v_cache.clone()
    store_cache(k, v, kernel_k, kernel_v, loc)
    assert spy.launches == 1 and use_triton(k)  # the interpreter ran the kernel
    monkeypatch.setattr(triton_store_cache, "use_triton", lambda *tensors: False)
    store_cache(k, v, k_cache, v_cache, loc)
    assert spy.launches == 1
    assert torch.equal(k_cache, kernel_k) and torch.equal(v_cache, kernel_v)


def test_byte_caches_take_the_torch_path(spy):
    k = torch.randint(0, 255, (4, 2, 8), dtype=torch.uint8)
    k_cache, v_cache = (
        torch.zeros(6, 2, 8, dtype=torch.uint8),
        torch.zeros(6, 2, 8, dtype=torch.uint8),
    )
    loc = torch.tensor([5, 1, 0, 3])
    store_cache(k, k, k_cache, v_cache, loc)
    assert spy.launches == 0
    assert torch.equal(k_cache[loc], k) and torch.equal(v_cache[loc], k)


BAD = [
    ("loc", lambda a: a.update(loc=a["loc"].int())),
    ("loc", lambda a: a.update(loc=a["loc"][:2])),
    ("loc", lambda a: a.update(loc=torch.tensor([0, 1, 11]))),
    ("loc", lambda a: a.update(loc=torch.tensor([0, -1, 2]))),
    ("loc", lambda a: a.update(loc=torch.tensor([4, 1, 4]))),
    ("v_cache", lambda a: a.update(v_cache=a["v_cache"].half())),
    ("k_cache", lambda a: a.update(k_cache=torch.zeros(11, 8, 2))),
    ("v_cache", lambda a: a.update(v_cache=torch.zeros(12, 2, 8))),
    ("v", lambda a: a.update(v=torch.zeros(2, 2, 8))),
    ("k", lambda a: a.update(k=torch.zeros(3))),
    ("k", lambda a: a.update(k=torch.zeros(3, 8, 2).transpose(1, 2))),
    ("v", lambda a: a.update(v=torch.zeros(3, 2, 8, device="meta"))),
    ("k_cache", lambda a: a.update(k_cache=None)),
]


@pytest.mark.parametrize("arg, mutate", BAD)
def test_rejects_bad_input_without_writing(arg, mutate):
    args = {
        "k": _rand((3, 2, 8), torch.float32, 1),
        "v": _rand((3, 2, 8), torch.float32, 2),
        "k_cache": _rand((11, 2, 8), torch.float32, 3),
        "v_cache": _rand((11, 2, 8), torch.float32, 4),
        "loc": torch.tensor([10, 0, 5]),
    }
    mutate(args)
    caches = [
        t for t in (args["k_cache"], args["v_cache"]) if isinstance(t, torch.Tensor)
    ]
    before = [t.clone() for t in caches]
    with pytest.raises(ValueError, match=arg):
        store_cache(**args)
    assert all(torch.equal(a, b) for a, b in zip(caches, before))


def test_registry_and_group_surface():
    assert registry.load("kvcache.store_cache") is store_cache
    assert registry.load("kvcache.store_cache", "torch") is store_cache_ref
    assert (
        kvcache.store_cache is store_cache
        and kvcache.store_cache_ref is store_cache_ref
    )
