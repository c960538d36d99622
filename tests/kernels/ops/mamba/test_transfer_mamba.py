"""transfer_mamba_states: state-slot copies between pools; kernel vs reference, bad inputs."""

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.jit import use_triton
from sglang.kernels.ops import mamba
from sglang.kernels.ops.mamba import transfer_mamba
from sglang.kernels.ops.mamba.transfer_mamba import (
    transfer_mamba_states,
    transfer_mamba_states_ref,
)
from tests.kernels.spy import LaunchSpy as _LaunchSpy

DTYPES = [torch.float32, torch.bfloat16, torch.float16]




@pytest.fixture
def spy(monkeypatch):
    s = _LaunchSpy(transfer_mamba._transfer_mamba_states_kernel)
    monkeypatch.setattr(transfer_mamba, "_transfer_mamba_states_kernel", s)
    return s


def _rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def _indices(n, n_src, n_dst, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, n_src, (n,), generator=g), torch.randperm(
        n_dst, generator=g
    )[:n]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("slot_shape", [(1,), (6, 3), (2, 3, 5), (4500,)])
@pytest.mark.parametrize("n", [0, 1, 6])
def test_single_tensor_matches_reference(spy, n, slot_shape, dtype):
    src, dst = _rand((9, *slot_shape), dtype, 1), _rand((7, *slot_shape), dtype, 2)
    src_idx, dst_idx = _indices(n, 9, 7)
    want = dst.clone()
    transfer_mamba_states_ref(src, want, src_idx, dst_idx)
    assert transfer_mamba_states(src, dst, src_idx, dst_idx) is None
    assert torch.equal(dst, want)
    assert spy.launches == int(n > 0)


@pytest.mark.parametrize("n", [1, 4])
def test_conv_and_ssm_lists(spy, n):
    """A [conv, ssm] pair of differing shapes and dtypes: one launch per tensor."""
    src = [_rand((8, 10, 3), torch.bfloat16, 1), _rand((8, 2, 4, 16), torch.float32, 2)]
    dst = [_rand((5, 10, 3), torch.bfloat16, 3), _rand((5, 2, 4, 16), torch.float32, 4)]
    src_idx, dst_idx = _indices(n, 8, 5, seed=n)
    before = [t.clone() for t in dst]
    transfer_mamba_states(src, dst, src_idx, dst_idx)
    assert spy.launches == 2
    for s, d in zip(src_idx.tolist(), dst_idx.tolist()):  # independent of the reference
        assert torch.equal(dst[0][d], src[0][s]) and torch.equal(dst[1][d], src[1][s])
    untouched = [i for i in range(5) if i not in dst_idx.tolist()]
    assert all(torch.equal(a[untouched], b[untouched]) for a, b in zip(dst, before))


def test_same_pool_fork(spy):
    pool = [_rand((6, 4, 3), torch.float16, 5), _rand((6, 8), torch.float32, 6)]
    before = [t.clone() for t in pool]
    transfer_mamba_states(pool, pool, torch.tensor([0, 0, 2]), torch.tensor([3, 4, 5]))
    for t, b in zip(pool, before):
        assert torch.equal(t[[3, 4, 5]], b[[0, 0, 2]]) and torch.equal(t[:3], b[:3])


def test_same_pool_overlap_is_rejected(spy):
    pool = _rand((6, 4), torch.float32, 7)
    before = pool.clone()
    with pytest.raises(ValueError, match="overlap"):
        transfer_mamba_states(pool, pool, torch.tensor([1, 2]), torch.tensor([2, 3]))
    assert torch.equal(pool, before) and spy.launches == 0


def test_torch_path_matches_kernel_path(monkeypatch, spy):
    src, dst = _rand((9, 5, 7), torch.bfloat16, 1), _rand((7, 5, 7), torch.bfloat16, 2)
    src_idx, dst_idx = _indices(5, 9, 7)
    kernel_dst = dst.clone()
    transfer_mamba_states(src, kernel_dst, src_idx, dst_idx)
    assert spy.launches == 1 and use_triton(src)
    monkeypatch.setattr(transfer_mamba, "copy_kernel_device", lambda *tensors: None)
    transfer_mamba_states(src, dst, src_idx, dst_idx)
    assert spy.launches == 1 and torch.equal(dst, kernel_dst)


def test_integer_states_take_the_torch_path(spy):
    src = torch.randint(-100, 100, (4, 6), dtype=torch.int8)
    dst = torch.zeros(4, 6, dtype=torch.int8)
    transfer_mamba_states([src], [dst], torch.tensor([3, 1]), torch.tensor([0, 2]))
    assert spy.launches == 0
    assert torch.equal(dst[[0, 2]], src[[3, 1]]) and not dst[[1, 3]].any()


BAD = [
    ("src_indices", lambda a: a.update(src_indices=a["src_indices"].int())),
    ("src_indices", lambda a: a.update(src_indices=torch.tensor([0, 8]))),
    ("dst_indices", lambda a: a.update(dst_indices=torch.tensor([2, 2]))),
    ("dst_indices", lambda a: a.update(dst_indices=torch.tensor([-1, 2]))),
    ("dst_indices", lambda a: a.update(dst_indices=torch.tensor([1]))),
    ("dst_states", lambda a: a.update(dst_states=a["dst_states"][:1])),
    (r"dst_states\[1\]", lambda a: a["dst_states"].__setitem__(1, torch.zeros(5, 9))),
    (
        r"dst_states\[0\]",
        lambda a: a["dst_states"].__setitem__(0, torch.zeros(5, 4, 3).half()),
    ),
    (r"src_states\[1\]", lambda a: a["src_states"].__setitem__(1, torch.zeros(7, 8))),
    (
        r"src_states\[0\]",
        lambda a: a["src_states"].__setitem__(0, torch.zeros(8, 3, 4).transpose(1, 2)),
    ),
    (
        r"src_states\[1\]",
        lambda a: a["src_states"].__setitem__(1, torch.zeros(8, 8, device="meta")),
    ),
    (
        "src_indices",
        lambda a: a.update(src_indices=torch.tensor([0, 1], device="meta")),
    ),
]


@pytest.mark.parametrize("arg, mutate", BAD)
def test_rejects_bad_input_without_writing(arg, mutate):
    args = {
        "src_states": [
            _rand((8, 4, 3), torch.float32, 1),
            _rand((8, 8), torch.float32, 2),
        ],
        "dst_states": [
            _rand((5, 4, 3), torch.float32, 3),
            _rand((5, 8), torch.float32, 4),
        ],
        "src_indices": torch.tensor([0, 7]),
        "dst_indices": torch.tensor([4, 1]),
    }
    mutate(args)
    dsts = list(args["dst_states"])
    before = [t.clone() for t in dsts]
    with pytest.raises(ValueError, match=arg):
        transfer_mamba_states(**args)
    assert all(torch.equal(a, b) for a, b in zip(dsts, before))


def test_registry_and_group_surface():
    assert registry.load("mamba.transfer_mamba_states") is transfer_mamba_states
    assert (
        registry.load("mamba.transfer_mamba_states", "torch")
        is transfer_mamba_states_ref
    )
    assert mamba.transfer_mamba_states is transfer_mamba_states
