"""`resolve_future_token_ids`: replace placeholder ids by the tokens they stand for, in place.

The overlap scheduler launches step i+1 before step i's sampled tokens reach the CPU: it puts
placeholders in step i+1's input_ids, the negatives of slots in a future-token map that step i
fills on the device. Before step i+1's forward, every placeholder is resolved on the device:

    input_ids[t] = future_token_ids_map[-input_ids[t]]   where input_ids[t] < 0
    input_ids[t] unchanged                               where input_ids[t] >= 0

Slot 0 is never a placeholder (-0 is the real token 0). A placeholder -j with j outside
[1, len(future_token_ids_map)) is an error, raised before anything is written.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sglang.kernels.jit import cdiv, use_triton

# Token ids: int32 or int64, as the schedulers keep them.
_ID_DTYPES = (torch.int32, torch.int64)
# 1024 ids per program: an element-wise gather, 8 ids per thread at 4 warps; a decode batch is
# one program.
_BLOCK_SIZE = 1024
# 4 warps: 1024 ids are 8 per thread.
_NUM_WARPS = 4


@triton.jit
def _resolve_future_token_ids_kernel(
    ids_ptr,  # int32/int64 [n], updated in place
    map_ptr,  # int32/int64 [map_size]
    n_ids,
    ids_stride,
    map_stride,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(0)
    offs = (pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)).to(tl.int64)
    mask = offs < n_ids
    ids = tl.load(ids_ptr + offs * ids_stride, mask=mask, other=0)
    is_placeholder = mask & (ids < 0)
    slot = tl.where(is_placeholder, -ids, 0).to(tl.int64)
    future = tl.load(map_ptr + slot * map_stride, mask=is_placeholder, other=0)
    tl.store(ids_ptr + offs * ids_stride, future.to(ids_ptr.dtype.element_ty), mask=is_placeholder)


def resolve_future_token_ids_ref(
    input_ids: torch.Tensor, future_token_ids_map: torch.Tensor
) -> torch.Tensor:
    """Pure-torch reference: a new tensor with the placeholders resolved."""
    slot = torch.clamp(-input_ids, min=0).long()
    future = future_token_ids_map[slot].to(input_ids.dtype)
    return torch.where(input_ids < 0, future, input_ids)


def resolve_future_token_ids(
    input_ids: torch.Tensor, future_token_ids_map: torch.Tensor
) -> torch.Tensor:
    """Resolve the negative placeholders of input_ids [n] in place; returns input_ids."""
    op = "resolve_future_token_ids"
    if input_ids.dim() != 1:
        raise ValueError(f"{op}: input_ids must be 1-D, got {tuple(input_ids.shape)}")
    if future_token_ids_map.dim() != 1:
        raise ValueError(
            f"{op}: future_token_ids_map must be 1-D, got {tuple(future_token_ids_map.shape)}"
        )
    if input_ids.dtype not in _ID_DTYPES:
        raise ValueError(f"{op}: input_ids must be int32 or int64, got {input_ids.dtype}")
    if future_token_ids_map.dtype not in _ID_DTYPES:
        raise ValueError(
            f"{op}: future_token_ids_map must be int32 or int64, got {future_token_ids_map.dtype}"
        )
    if future_token_ids_map.device != input_ids.device:
        raise ValueError(
            f"{op}: future_token_ids_map must be on input_ids' device {input_ids.device}, "
            f"got {future_token_ids_map.device}"
        )
    n = input_ids.numel()
    if n == 0:
        return input_ids
    # The deepest placeholder must name a slot of the map (a device sync, before any write).
    lowest = int(input_ids.min())
    map_size = future_token_ids_map.numel()
    if lowest < 0 and -lowest >= map_size:
        raise ValueError(
            f"{op}: input_ids placeholders must be in [-{map_size - 1}, -1] for a "
            f"future_token_ids_map of shape {tuple(future_token_ids_map.shape)}, got {lowest}"
        )
    if not use_triton(input_ids, future_token_ids_map):
        input_ids.copy_(resolve_future_token_ids_ref(input_ids, future_token_ids_map))
        return input_ids
    _resolve_future_token_ids_kernel[(cdiv(n, _BLOCK_SIZE),)](
        input_ids,
        future_token_ids_map,
        n,
        input_ids.stride(0),
        future_token_ids_map.stride(0),
        BLOCK_SIZE=_BLOCK_SIZE,
        num_warps=_NUM_WARPS,
    )
    return input_ids


__all__ = ["resolve_future_token_ids", "resolve_future_token_ids_ref"]
