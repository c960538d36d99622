"""HiCache K/V row transfers: kernel vs reference, layouts, eligibility predicates, bad inputs."""

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import use_triton
from sglang.kernels.ops import kvcache
from sglang.kernels.ops.kvcache import hicache
from sglang.kernels.ops.kvcache.hicache import (
    can_use_hicache_jit_kernel,
    can_use_write_back_jit_kernel,
    transfer_hicache_all_layer,
    transfer_hicache_all_layer_ref,
    transfer_hicache_one_layer,
    transfer_hicache_one_layer_ref,
)
from tests.kernels.spy import LaunchSpy as _LaunchSpy

DTYPES = [torch.float32, torch.bfloat16, torch.float16]




@pytest.fixture
def spy(monkeypatch):
    s = _LaunchSpy(hicache._transfer_hicache_kernel)
    monkeypatch.setattr(hicache, "_transfer_hicache_kernel", s)
    return s


def _rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def _pools(lead, n_src, n_dst, item, dtype):
    src_shape, dst_shape = (*lead, n_src, *item), (*lead, n_dst, *item)
    # Random (not zero) destinations, so rows the copy must not touch are visible.
    return (
        _rand(src_shape, dtype, 1),
        _rand(src_shape, dtype, 2),
        _rand(dst_shape, dtype, 3),
        _rand(dst_shape, dtype, 4),
    )


def _indices(n, n_src, n_dst, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n_src, (n,), generator=g)  # sources may repeat
    dst = torch.randperm(n_dst, generator=g)[:n]  # destinations may not
    return src, dst


def _row_bytes(item, dtype):
    return torch.Size(item).numel() * torch.empty((), dtype=dtype).element_size()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("item", [(1,), (3, 5), (4, 32), (1, 1030)])
@pytest.mark.parametrize("n", [0, 1, 13])
def test_one_layer_matches_reference(spy, n, item, dtype):
    k_src, v_src, k_dst, v_dst = _pools((), 17, 19, item, dtype)
    src, dst = _indices(n, 17, 19)
    want_k, want_v = k_dst.clone(), v_dst.clone()
    transfer_hicache_one_layer_ref(k_src, v_src, want_k, want_v, src, dst)
    assert transfer_hicache_one_layer(k_src, v_src, k_dst, v_dst, src, dst) is None
    assert torch.equal(k_dst, want_k) and torch.equal(v_dst, want_v)
    kernel_expected = n > 0 and can_use_hicache_jit_kernel(
        _row_bytes(item, dtype), device="cpu"
    )
    assert spy.launches == int(kernel_expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_one_layer_copies_exactly_the_listed_rows(spy, dtype):
    k_src, v_src, k_dst, v_dst = _pools((), 9, 11, (2, 8), dtype)
    src, dst = torch.tensor([8, 0, 8, 3]), torch.tensor([10, 4, 0, 7])
    before_k, before_v = k_dst.clone(), v_dst.clone()
    transfer_hicache_one_layer(k_src, v_src, k_dst, v_dst, src, dst)
    assert spy.launches == 1
    for s, d in zip(src.tolist(), dst.tolist()):
        assert torch.equal(k_dst[d], k_src[s]) and torch.equal(v_dst[d], v_src[s])
    untouched = [i for i in range(11) if i not in dst.tolist()]
    assert torch.equal(k_dst[untouched], before_k[untouched])
    assert torch.equal(v_dst[untouched], before_v[untouched])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layers", [1, 3])
@pytest.mark.parametrize("item", [(4, 8), (3, 5)])
@pytest.mark.parametrize("n", [0, 6])
def test_all_layer_matches_reference(spy, n, item, layers, dtype):
    k_src, v_src, k_dst, v_dst = _pools((layers,), 10, 12, item, dtype)
    src, dst = _indices(n, 10, 12, seed=n)
    want_k, want_v = k_dst.clone(), v_dst.clone()
    transfer_hicache_all_layer_ref(k_src, v_src, want_k, want_v, src, dst)
    assert transfer_hicache_all_layer(k_src, v_src, k_dst, v_dst, src, dst) is None
    assert torch.equal(k_dst, want_k) and torch.equal(v_dst, want_v)
    # One launch for all layers (when the row is whole words), never one per layer.
    kernel_expected = n > 0 and can_use_hicache_jit_kernel(
        _row_bytes(item, dtype), device="cpu"
    )
    assert spy.launches == int(kernel_expected)


def test_page_first_views_round_trip(spy):
    """A page_first host buffer [slots, layers, heads, dim] seen per layer through a transpose."""
    layers, item = 3, (2, 8)
    host = _rand((20, layers, *item), torch.bfloat16, 5)
    host_k, host_v = (
        host.transpose(0, 1),
        (host + 1).transpose(0, 1),
    )  # strided [L, S, ...]
    dev_k = torch.zeros((layers, 6, *item), dtype=torch.bfloat16)
    dev_v = torch.zeros_like(dev_k)
    src, dst = torch.tensor([19, 2, 7]), torch.tensor([5, 0, 3])
    transfer_hicache_all_layer(host_k, host_v, dev_k, dev_v, src, dst)
    assert torch.equal(dev_k[:, dst], host_k[:, src]) and torch.equal(
        dev_v[:, dst], host_v[:, src]
    )
    one_k, one_v = torch.zeros_like(dev_k[1]), torch.zeros_like(dev_v[1])
    transfer_hicache_one_layer(host_k[1], host_v[1], one_k, one_v, src, dst)
    assert torch.equal(one_k, dev_k[1]) and torch.equal(one_v, dev_v[1])
    assert spy.launches == 2


def test_torch_path_matches_kernel_path(monkeypatch, spy):
    k_src, v_src, k_dst, v_dst = _pools((2,), 8, 8, (4, 4), torch.float16)
    src, dst = _indices(5, 8, 8)
    kernel_k, kernel_v = k_dst.clone(), v_dst.clone()
    transfer_hicache_all_layer(k_src, v_src, kernel_k, kernel_v, src, dst)
    assert spy.launches == 1 and use_triton(k_src)  # the interpreter ran the kernel
    monkeypatch.setattr(hicache, "copy_kernel_device", lambda *tensors: None)
    transfer_hicache_all_layer(k_src, v_src, k_dst, v_dst, src, dst)
    assert spy.launches == 1  # the torch path launched nothing
    assert torch.equal(k_dst, kernel_k) and torch.equal(v_dst, kernel_v)


def test_copy_is_bit_exact_for_nan_payloads(spy):
    bits = torch.tensor([0x7FC1, -1, 1, 0x7F81, 0x1234, -32768], dtype=torch.int16)
    k_src = bits.view(torch.bfloat16).reshape(1, 6).repeat(3, 1)
    k_dst, v_dst = (
        torch.zeros(4, 6, dtype=torch.bfloat16),
        torch.zeros(4, 6, dtype=torch.bfloat16),
    )
    transfer_hicache_one_layer(
        k_src, k_src, k_dst, v_dst, torch.tensor([2]), torch.tensor([1])
    )
    assert spy.launches == 1
    assert torch.equal(k_dst[1].view(torch.int16), bits)
    assert torch.equal(v_dst[1].view(torch.int16), bits)


@pytest.mark.parametrize(
    "row_bytes, expected",
    [
        (4, True),
        (2048, True),
        (12, True),
        (2, False),
        (6, False),
        (0, False),
        (-8, False),
        (8.0, False),
        (True, False),
    ],
)
def test_hicache_predicate_on_cpu(row_bytes, expected):
    assert can_use_hicache_jit_kernel(row_bytes, device="cpu") is expected
    assert (
        can_use_write_back_jit_kernel(row_bytes, device="cpu", host_pinned=False)
        is expected
    )


def test_predicates_need_the_interpreter_on_cpu(monkeypatch):
    assert can_use_hicache_jit_kernel(16, device=torch.device("cpu"))
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not can_use_hicache_jit_kernel(16, device="cpu")
    assert not can_use_write_back_jit_kernel(16, device="cpu")


def test_predicates_on_cuda(monkeypatch):
    assert can_use_hicache_jit_kernel(16, device="cuda") is torch.cuda.is_available()
    assert not can_use_hicache_jit_kernel(16, device="meta")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert can_use_hicache_jit_kernel(16, device="cuda:0")
    assert not can_use_hicache_jit_kernel(10, device="cuda:0")
    # A backup stores into host memory: only a pinned host pool qualifies on CUDA.
    assert can_use_write_back_jit_kernel(16, device="cuda", host_pinned=True)
    assert not can_use_write_back_jit_kernel(16, device="cuda", host_pinned=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert not can_use_write_back_jit_kernel(16, device="cuda", host_pinned=True)


def _one_layer_args():
    k_src, v_src, k_dst, v_dst = _pools((), 6, 5, (2, 4), torch.float32)
    return {
        "k_src": k_src,
        "v_src": v_src,
        "k_dst": k_dst,
        "v_dst": v_dst,
        "src_indices": torch.tensor([0, 5]),
        "dst_indices": torch.tensor([4, 1]),
    }


BAD_ONE_LAYER = [
    ("src_indices", lambda a: a.update(src_indices=a["src_indices"].int())),
    ("dst_indices", lambda a: a.update(dst_indices=a["dst_indices"][None])),
    ("dst_indices", lambda a: a.update(dst_indices=torch.tensor([4]))),
    ("src_indices", lambda a: a.update(src_indices=torch.tensor([0, 6]))),
    ("dst_indices", lambda a: a.update(dst_indices=torch.tensor([-1, 1]))),
    ("dst_indices", lambda a: a.update(dst_indices=torch.tensor([5, 1]))),
    ("dst_indices", lambda a: a.update(dst_indices=torch.tensor([1, 1]))),
    ("dst_indices", lambda a: a.update(dst_indices=[4, 1])),
    ("v_dst", lambda a: a.update(v_dst=a["v_dst"].half())),
    ("k_dst", lambda a: a.update(k_dst=torch.zeros(5, 4, 2))),
    ("v_src", lambda a: a.update(v_src=torch.zeros(7, 2, 4))),
    ("k_src", lambda a: a.update(k_src=torch.zeros(6))),
    ("k_src", lambda a: a.update(k_src=torch.zeros(6, 4, 2).transpose(1, 2))),
    ("v_src", lambda a: a.update(v_src=torch.zeros(6, 2, 4, device="meta"))),
    (
        "src_indices",
        lambda a: a.update(src_indices=torch.tensor([0, 5], device="meta")),
    ),
]


@pytest.mark.parametrize("arg, mutate", BAD_ONE_LAYER)
def test_one_layer_rejects_bad_input_without_writing(arg, mutate):
    args = _one_layer_args()
    mutate(args)
    before = (args["k_dst"].clone(), args["v_dst"].clone())
    with pytest.raises(ValueError, match=arg):
        transfer_hicache_one_layer(**args)
    assert torch.equal(args["k_dst"], before[0]) and torch.equal(
        args["v_dst"], before[1]
    )


def test_all_layer_rejects_bad_input_without_writing():
    k_src, v_src, k_dst, v_dst = _pools((2,), 6, 5, (2, 4), torch.float32)
    before = (k_dst.clone(), v_dst.clone())
    idx = (torch.tensor([0, 1]), torch.tensor([2, 3]))
    with pytest.raises(ValueError, match="k_dst_layers"):
        transfer_hicache_all_layer(k_src, v_src, k_dst[:1], v_dst[:1], *idx)
    with pytest.raises(ValueError, match="k_src_layers"):
        transfer_hicache_all_layer(k_src[0, 0], v_src, k_dst, v_dst, *idx)
    with pytest.raises(ValueError, match="dst_indices"):
        transfer_hicache_all_layer(
            k_src, v_src, k_dst, v_dst, idx[0], torch.tensor([2, 9])
        )
    assert torch.equal(k_dst, before[0]) and torch.equal(v_dst, before[1])


def test_same_pool_copy_must_not_overlap(spy):
    k, v = _rand((2, 8, 4), torch.float32, 7), _rand((2, 8, 4), torch.float32, 8)
    before = (k.clone(), v.clone())
    with pytest.raises(ValueError, match="overlap"):
        transfer_hicache_all_layer(
            k, v, k, v, torch.tensor([1, 2]), torch.tensor([2, 5])
        )
    assert torch.equal(k, before[0]) and torch.equal(v, before[1])
    transfer_hicache_all_layer(k, v, k, v, torch.tensor([1, 2]), torch.tensor([6, 7]))
    assert torch.equal(k[:, [6, 7]], before[0][:, [1, 2]]) and spy.launches == 1


@pytest.mark.parametrize(
    "name", ["transfer_hicache_one_layer", "transfer_hicache_all_layer"]
)
def test_registry_and_group_surface(name):
    assert registry.load(f"kvcache.{name}") is getattr(hicache, name)
    assert registry.load(f"kvcache.{name}", "torch") is getattr(hicache, f"{name}_ref")
    assert getattr(kvcache, name) is getattr(hicache, name)
    assert kvcache.can_use_hicache_jit_kernel is can_use_hicache_jit_kernel
    assert kvcache.can_use_write_back_jit_kernel is can_use_write_back_jit_kernel
