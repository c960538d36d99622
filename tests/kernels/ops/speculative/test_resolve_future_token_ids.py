"""resolve_future_token_ids: in-place placeholder resolution against its reference and a loop."""

import importlib

import pytest
import torch

from sglang.kernels import registry
from sglang.kernels.ops.speculative.resolve_future_token_ids import (
    resolve_future_token_ids,
    resolve_future_token_ids_ref,
)
from tests.kernels.spy import LaunchSpy as _LaunchSpy

# The module itself (the package re-exports a function of the same name, which shadows it).
resolve_module = importlib.import_module("sglang.kernels.ops.speculative.resolve_future_token_ids")




def _batch(n, map_size, ids_dtype, map_dtype, seed=0):
    """input_ids with about half placeholders in [-(map_size - 1), -1], and a future map."""
    g = torch.Generator().manual_seed(seed)
    real = torch.randint(0, 50_000, (n,), generator=g)
    slots = torch.randint(1, map_size, (n,), generator=g)
    is_placeholder = torch.rand(n, generator=g) < 0.5
    input_ids = torch.where(is_placeholder, -slots, real).to(ids_dtype)
    future_map = torch.randint(0, 50_000, (map_size,), generator=g).to(map_dtype)
    return input_ids, future_map


def _resolve_by_loop(input_ids, future_map):
    return [future_map[-i].item() if i < 0 else i for i in input_ids.tolist()]


@pytest.mark.parametrize("map_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("ids_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("n", [1, 7, 1024, 1500])  # 1024: one full block; 1500: a partial 2nd
def test_matches_reference_and_loop(n, ids_dtype, map_dtype):
    input_ids, future_map = _batch(n, 64, ids_dtype, map_dtype, seed=n)
    expected = resolve_future_token_ids_ref(input_ids, future_map)
    by_loop = _resolve_by_loop(input_ids, future_map)
    out = resolve_future_token_ids(input_ids, future_map)
    assert out is input_ids  # in place
    assert input_ids.dtype == ids_dtype
    assert torch.equal(input_ids, expected)
    assert input_ids.tolist() == by_loop


def test_deepest_and_zero_ids():
    # -(map_size - 1) is the last slot; 0 is a real token, not a placeholder for slot 0.
    future_map = torch.tensor([-7, 10, 20, 30])
    input_ids = torch.tensor([0, -3, -1, 5, 0])
    resolve_future_token_ids(input_ids, future_map)
    assert input_ids.tolist() == [0, 30, 10, 5, 0]


def test_strided_input_resolves_only_its_elements():
    future_map = torch.tensor([0, 11, 22])
    storage = torch.tensor([-1, -2, -2, -1, 7, -1])
    view = storage[::2]  # [-1, -2, 7]
    resolve_future_token_ids(view, future_map)
    assert storage.tolist() == [11, -2, 22, -1, 7, -1]


def test_without_placeholders_nothing_changes():
    input_ids = torch.arange(10, dtype=torch.int32)
    resolve_future_token_ids(input_ids, torch.empty(0, dtype=torch.int64))
    assert input_ids.tolist() == list(range(10))


def test_empty(monkeypatch):
    spy = _LaunchSpy(resolve_module._resolve_future_token_ids_kernel)
    monkeypatch.setattr(resolve_module, "_resolve_future_token_ids_kernel", spy)
    input_ids = torch.empty(0, dtype=torch.int64)
    assert resolve_future_token_ids(input_ids, torch.arange(4)).shape == (0,)
    assert spy.grids == []


def test_triton_path_runs_and_agrees_with_torch_path(monkeypatch):
    input_ids, future_map = _batch(2000, 32, torch.int64, torch.int64, seed=9)
    assert resolve_module.use_triton(input_ids, future_map)
    spy = _LaunchSpy(resolve_module._resolve_future_token_ids_kernel)
    monkeypatch.setattr(resolve_module, "_resolve_future_token_ids_kernel", spy)
    via_triton = resolve_future_token_ids(input_ids.clone(), future_map)
    assert spy.grids == [(2,)]
    monkeypatch.setattr(resolve_module, "use_triton", lambda *t: False)
    via_torch = resolve_future_token_ids(input_ids.clone(), future_map)
    assert len(spy.grids) == 1
    assert torch.equal(via_triton, via_torch)
    assert not torch.equal(via_triton, input_ids)  # placeholders were there to resolve


@pytest.mark.parametrize(
    "input_ids, future_map, match",
    [
        (torch.tensor([3, -4]), torch.arange(4), r"input_ids placeholders must be in \[-3, -1\]"),
        (torch.tensor([-1]), torch.empty(0, dtype=torch.int64), "input_ids placeholders"),
        (torch.tensor([[1, -1]]), torch.arange(4), "input_ids must be 1-D"),
        (torch.tensor([1.0, -1.0]), torch.arange(4), "input_ids must be int32 or int64"),
        (torch.tensor([1, -1]), torch.arange(4).reshape(2, 2), "future_token_ids_map must be 1-D"),
        (torch.tensor([1, -1]), torch.arange(4.0), "future_token_ids_map must be int32"),
    ],
)
def test_rejects_bad_inputs_without_writing(input_ids, future_map, match):
    before = input_ids.clone()
    with pytest.raises(ValueError, match=match):
        resolve_future_token_ids(input_ids, future_map)
    assert torch.equal(input_ids, before)


def test_rejects_mixed_devices():
    with pytest.raises(ValueError, match="future_token_ids_map must be on input_ids' device"):
        resolve_future_token_ids(torch.tensor([1, -1]), torch.arange(4, device="meta"))


def test_registry_entry():
    assert registry.load("speculative.resolve_future_token_ids") is resolve_future_token_ids
    assert (
        registry.load("speculative.resolve_future_token_ids", "torch")
        is resolve_future_token_ids_ref
    )
