"""Input checks shared by the operators that index slots (caches, state pools).

They raise `ValueError` naming the op, the argument and its shape, and run before any write, so
a rejected call leaves every output and cache untouched.
"""

from __future__ import annotations

__all__ = ["check_index", "check_index_range"]


def check_index(op: str, name: str, idx: object):
    """`idx` must be a 1-D int64 tensor; returns it."""
    import torch

    if not isinstance(idx, torch.Tensor):
        raise ValueError(  # noqa: TRY004 - validation raises ValueError only
            f"{op}: {name} must be a torch.Tensor, got {type(idx).__name__}"
        )
    if idx.dtype != torch.int64 or idx.dim() != 1:
        raise ValueError(
            f"{op}: {name} must be a 1-D int64 tensor, got {tuple(idx.shape)} {idx.dtype}"
        )
    return idx


def check_index_range(op: str, name: str, idx, size: int, unique: bool) -> None:
    """Every value of `idx` in [0, size); with `unique`, no value twice (a destination)."""
    import torch

    if idx.numel() == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= size:
        raise ValueError(
            f"{op}: {name} must lie in [0, {size}), got values in [{lo}, {hi}] "
            f"(shape {tuple(idx.shape)})"
        )
    if unique and torch.unique(idx).numel() != idx.numel():
        raise ValueError(
            f"{op}: {name} must not repeat a slot (two writes would race for one slot), "
            f"got {tuple(idx.shape)} with duplicates"
        )
