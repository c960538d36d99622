"""Index checks shared by the operators that index slots (caches, state pools).

`check_index` runs on the host over metadata only (type, dtype, shape) and raises `ValueError`
naming the op, the argument and its shape, before any write. `check_index_range` checks the
*values* on the device (`torch._assert_async`: no host read, so CUDA-graph capture and
`torch.compile(fullgraph=True)` go through); on the CPU it raises at once, on a GPU the stream
fails at that point, before the kernel that would have written out of bounds.
"""

from __future__ import annotations

__all__ = ["check_index", "check_index_range"]


def check_index(op: str, name: str, idx: object, dtypes: tuple = ()):
    """`idx` must be a 1-D integer tensor of `dtypes` (default int64); returns it."""
    import torch

    allowed = dtypes or (torch.int64,)
    if not isinstance(idx, torch.Tensor):
        raise ValueError(  # noqa: TRY004 - validation raises ValueError only
            f"{op}: {name} must be a torch.Tensor, got {type(idx).__name__}"
        )
    if idx.dtype not in allowed or idx.dim() != 1:
        names = "/".join(str(d).removeprefix("torch.") for d in allowed)
        raise ValueError(f"{op}: {name} must be a 1-D {names} tensor, got {tuple(idx.shape)} {idx.dtype}")
    return idx


def check_index_range(op: str, name: str, idx, size: int, skip: int | None = None) -> None:
    """Every value of `idx` in [0, size) (or equal to `skip`), asserted on `idx`'s device."""
    import torch

    if idx.numel() == 0:
        return
    ok = (idx >= 0) & (idx < size)
    if skip is not None:
        ok = ok | (idx == skip)
    torch._assert_async(ok.all(), f"{op}: {name} must lie in [0, {size}) (checked on the device)")
