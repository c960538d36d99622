"""`transfer_kv_mamba_pf_lf` / `_lf_pf`: upstream's byte-address contract, strides, bad inputs."""

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.ops import mamba
from sglang.kernels.ops.kvcache import layer_pointer_table
from sglang.kernels.ops.mamba import transfer_mamba
from sglang.kernels.ops.mamba.transfer_mamba import (
    can_use_transfer_kv_mamba_kernel,
    transfer_kv_mamba_lf_pf,
    transfer_kv_mamba_lf_pf_ref,
    transfer_kv_mamba_pf_lf,
    transfer_kv_mamba_pf_lf_ref,
)
from tests.kernels.spy import LaunchSpy as _LaunchSpy
from tests.kernels.strided import stride2

LAYERS = 3


@pytest.fixture
def spy(monkeypatch):
    s = _LaunchSpy(transfer_mamba._transfer_kv_mamba_kernel)
    monkeypatch.setattr(transfer_mamba, "_transfer_kv_mamba_kernel", s)
    return s


def _rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


def _item_bytes(t):
    return t[0].numel() * t.element_size()


# (state shape, dtype): a conv state, an SSM state, and a 6-byte item that is no whole word.
STATES = [((6, 3), torch.bfloat16), ((2, 4, 5), torch.float32), ((3,), torch.float16)]


@pytest.mark.parametrize("shape, dtype", STATES)
def test_backup_then_load_round_trips_every_layer(spy, shape, dtype):
    # Device: one [slots, *shape] tensor per layer (separate allocations, found through the
    # table). Host: page-first [pages, layers, *shape]. Slot strides differ on every pair:
    # item on the device, layers x item on the host.
    device_layers = [_rand((7, *shape), dtype, layer) for layer in range(LAYERS)]
    host = _rand((5, LAYERS, *shape), dtype, 9)
    item = _item_bytes(device_layers[0])
    dev_idx, host_idx = torch.tensor([6, 0, 3]), torch.tensor([4, 1, 2])
    want = host.clone()
    transfer_kv_mamba_lf_pf_ref(device_layers, want, dev_idx, host_idx, item, item * LAYERS, LAYERS)
    transfer_kv_mamba_lf_pf(
        layer_pointer_table(device_layers), host, dev_idx, host_idx, item, item * LAYERS, LAYERS
    )
    assert torch.equal(host, want)
    assert torch.equal(host[4, 2], device_layers[2][6]) and torch.equal(host[1, 0], device_layers[0][0])
    assert torch.equal(host[0], _rand((5, LAYERS, *shape), dtype, 9)[0])  # page 0 untouched
    assert spy.launches == 1 and spy.grids[0][2] == LAYERS  # every layer in one launch

    fresh = [torch.zeros_like(t) for t in device_layers]
    for layer in range(LAYERS):
        transfer_kv_mamba_pf_lf(host, fresh[layer], host_idx, dev_idx, layer, item, item * LAYERS)
    for layer in range(LAYERS):
        assert torch.equal(fresh[layer][dev_idx], device_layers[layer][dev_idx])
        assert not fresh[layer][[1, 2, 4, 5]].any()
    assert spy.launches == 1 + LAYERS


def test_load_reads_the_layer_it_is_asked_for(spy):
    host = torch.arange(2 * LAYERS * 4, dtype=torch.float32).view(2, LAYERS, 4)
    dst = torch.zeros(3, 4)
    transfer_kv_mamba_pf_lf(host, dst, torch.tensor([1]), torch.tensor([2]), 1, 16, 16 * LAYERS)
    assert dst[2].tolist() == host[1, 1].tolist()
    ref = torch.zeros(3, 4)
    transfer_kv_mamba_pf_lf_ref(host, ref, torch.tensor([1]), torch.tensor([2]), 1, 16, 16 * LAYERS)
    assert torch.equal(dst, ref)


def test_bits_survive_nan_payloads(spy):
    bits = torch.tensor([0x7FC1, -1, 1, 0x7F81], dtype=torch.int16)
    layers = [bits.view(torch.bfloat16).repeat(2, 1) for _ in range(2)]
    host = torch.zeros(3, 2, 4, dtype=torch.bfloat16)
    transfer_kv_mamba_lf_pf(layer_pointer_table(layers), host, torch.tensor([1]), torch.tensor([2]), 8, 16, 2)
    assert torch.equal(host[2, 1].view(torch.int16), bits)


def test_pf_lf_torch_path_is_explicit_and_agrees(monkeypatch, spy):
    host = _rand((4, LAYERS, 6), torch.float32, 1)
    a, b = torch.zeros(5, 6), torch.zeros(5, 6)
    args = (torch.tensor([3, 0]), torch.tensor([1, 4]), 2, 24, 24 * LAYERS)
    transfer_kv_mamba_pf_lf(host, a, *args)
    monkeypatch.setattr(transfer_mamba, "copy_kernel_device", lambda *tensors: None)
    transfer_kv_mamba_pf_lf(host, b, *args)
    assert spy.launches == 1 and torch.equal(a, b)


def test_lf_pf_has_no_torch_path(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not can_use_transfer_kv_mamba_kernel("cpu")
    table = layer_pointer_table([torch.zeros(2, 4)])
    with pytest.raises(ValueError, match="can_use_transfer_kv_mamba_kernel"):
        transfer_kv_mamba_lf_pf(table, torch.zeros(2, 4), torch.tensor([0]), torch.tensor([1]), 16, 16, 1)


def test_out_of_range_pages_fail_on_the_device_before_any_write(spy):
    host, dst = torch.ones(4, LAYERS, 2), torch.zeros(3, 2)
    with pytest.raises(RuntimeError, match="src_indices must lie in"):
        transfer_kv_mamba_pf_lf(host, dst, torch.tensor([4]), torch.tensor([0]), 0, 8, 8 * LAYERS)
    with pytest.raises(RuntimeError, match="dst_indices must lie in"):
        transfer_kv_mamba_pf_lf(host, dst, torch.tensor([1]), torch.tensor([-1]), 0, 8, 8 * LAYERS)
    table = layer_pointer_table([torch.ones(3, 2)] * LAYERS)
    with pytest.raises(RuntimeError, match="dst_indices must lie in"):
        transfer_kv_mamba_lf_pf(table, host, torch.tensor([0]), torch.tensor([4]), 8, 8 * LAYERS, LAYERS)
    assert not dst.any() and spy.launches == 0 and torch.equal(host, torch.ones(4, LAYERS, 2))


BAD = [
    ("layer_id", lambda a: a.update(layer_id=LAYERS)),
    ("layer_id", lambda a: a.update(layer_id=-1)),
    ("item_size", lambda a: a.update(item_size=0)),
    ("src", lambda a: a.update(src=torch.zeros(LAYERS, 4, 2).transpose(0, 1))),
    ("dst", lambda a: a.update(dst=torch.zeros(3, 3))),
    ("src_indices", lambda a: a.update(src_indices=torch.tensor([0], dtype=torch.int32))),
    ("dst_indices", lambda a: a.update(dst_indices=torch.tensor([0, 1]))),
    ("num_warps_per_item", lambda a: a.update(num_warps_per_item=0)),
]


@pytest.mark.parametrize("arg, mutate", BAD)
def test_pf_lf_rejects_bad_input(arg, mutate):
    args = {
        "src": torch.zeros(4, LAYERS, 2),
        "dst": torch.zeros(3, 2),
        "src_indices": torch.tensor([0]),
        "dst_indices": torch.tensor([1]),
        "layer_id": 1,
        "item_size": 8,
        "src_layout_dim": 8 * LAYERS,
    }
    mutate(args)
    with pytest.raises(ValueError, match=rf"transfer_kv_mamba_pf_lf: {arg}"):
        transfer_kv_mamba_pf_lf(**args)


def test_lf_pf_rejects_a_short_table_and_a_small_page():
    table = layer_pointer_table([torch.zeros(2, 2)] * 2)
    idx = torch.tensor([0])
    with pytest.raises(ValueError, match="src_ptrs"):
        transfer_kv_mamba_lf_pf(table, torch.zeros(2, 3, 2), idx, idx, 8, 24, 3)
    with pytest.raises(ValueError, match="do not fit"):
        transfer_kv_mamba_lf_pf(table, torch.zeros(2, 2, 2), idx, idx, 8, 8, 2)


def test_ops_compile_without_a_graph_break():
    layers = [_rand((4, 2), torch.float32, i) for i in range(2)]
    table = layer_pointer_table(layers)

    @torch.compile(fullgraph=True, backend="aot_eager")
    def step(table, host, dst, i, j):
        transfer_kv_mamba_lf_pf(table, host, i, j, 8, 16, 2)
        transfer_kv_mamba_pf_lf(host, dst, j, i, 1, 8, 16)
        return dst * 1

    out = step(table, torch.zeros(3, 2, 2), torch.zeros(4, 2), torch.tensor([3]), torch.tensor([2]))
    assert torch.equal(out[3], layers[1][3])


@pytest.mark.parametrize("name", ["transfer_kv_mamba_pf_lf", "transfer_kv_mamba_lf_pf"])
def test_registry_and_group_surface(name):
    assert registry.load(f"mamba.{name}") is getattr(transfer_mamba, name)
    assert registry.load(f"mamba.{name}", "torch") is getattr(transfer_mamba, f"{name}_ref")
    assert getattr(mamba, name) is getattr(transfer_mamba, name)


def test_both_transfers_read_strided_indices_at_their_stride(spy):
    # Stride-2 views of the same pages and slots, other valid ones in their gaps: a kernel that
    # read `idx_ptr + pid` would move other items to other places and pass the range checks.
    device_layers = [_rand((7, 6), torch.float32, layer) for layer in range(LAYERS)]
    host = _rand((5, LAYERS, 6), torch.float32, 9)
    item = _item_bytes(device_layers[0])
    dev_idx, host_idx = torch.tensor([6, 0, 3]), torch.tensor([4, 1, 2])
    dev_view, host_view = stride2(dev_idx, torch.tensor([1, 2, 5])), stride2(host_idx, torch.tensor([0, 3, 0]))
    table = layer_pointer_table(device_layers)
    want = host.clone()
    transfer_kv_mamba_lf_pf(table, want, dev_idx, host_idx, item, item * LAYERS, LAYERS)
    transfer_kv_mamba_lf_pf(table, host, dev_view, host_view, item, item * LAYERS, LAYERS)
    assert torch.equal(host, want)
    for layer in range(LAYERS):
        loaded, strided = torch.zeros(7, 6), torch.zeros(7, 6)
        transfer_kv_mamba_pf_lf(host, loaded, host_idx, dev_idx, layer, item, item * LAYERS)
        transfer_kv_mamba_pf_lf(host, strided, host_view, dev_view, layer, item, item * LAYERS)
        assert torch.equal(strided, loaded)
        assert torch.equal(strided[dev_idx], device_layers[layer][dev_idx])
    assert spy.launches == 2 + 2 * LAYERS


def test_lf_pf_refuses_a_strided_table_before_any_launch(spy):
    layers = [torch.ones(2, 4) * i for i in range(4)]
    wide = layer_pointer_table(layers)
    host = torch.zeros(2, 2, 4)
    with pytest.raises(ValueError, match="src_ptrs must be a contiguous table"):
        transfer_kv_mamba_lf_pf(wide[0::2], host, torch.tensor([0]), torch.tensor([1]), 16, 32, 2)
    assert spy.launches == 0 and not host.any()


def test_the_range_check_checks_the_strided_values_the_kernel_reads(spy):
    host, dst = torch.ones(4, LAYERS, 2), torch.zeros(3, 2)
    # Out of range only in the gaps, which the kernel never reads: accepted.
    pages, slots = stride2(torch.tensor([3]), torch.tensor([9])), stride2(torch.tensor([2]), torch.tensor([-4]))
    transfer_kv_mamba_pf_lf(host, dst, pages, slots, 0, 8, 8 * LAYERS)
    assert dst[2].eq(1).all() and not dst[:2].any() and spy.launches == 1
    # Out of range at a position the kernel reads: refused on the device, before the launch.
    with pytest.raises(RuntimeError, match="src_indices must lie in"):
        transfer_kv_mamba_pf_lf(host, dst, stride2(torch.tensor([4]), torch.tensor([0])), slots, 0, 8, 8 * LAYERS)
    assert spy.launches == 1
