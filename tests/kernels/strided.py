"""Stride-2 views of index and metadata tensors, for the tests that pass ops a strided index.

Each view holds the given values at its logical positions and *decoys* in the gaps between
them. The decoys are valid values too (in range, distinct from the real ones), so a kernel that
loads `idx_ptr + pid` instead of `idx_ptr + pid * stride` reads a decoy and writes somewhere
else, without tripping a range check: the results differ, and the test fails.
"""

import torch


def stride2(values: torch.Tensor, decoys: torch.Tensor) -> torch.Tensor:
    """A view with `values` at its positions and `decoys` in the gaps (same shape, stride 2)."""
    if values.shape != decoys.shape or values.dim() != 1:
        raise ValueError(f"stride2: values and decoys must be 1-D of one shape, got "
                         f"{tuple(values.shape)} and {tuple(decoys.shape)}")
    buf = torch.empty(2 * values.numel(), dtype=values.dtype, device=values.device)
    buf[0::2], buf[1::2] = values, decoys
    view = buf[0::2]
    assert view.stride() == (2,) and torch.equal(view, values)
    return view
