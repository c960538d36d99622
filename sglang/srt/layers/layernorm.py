"""The runtime's RMSNorm layer: parameters here, the arithmetic in `sglang.kernels.ops.layernorm`.

`RMSNorm.forward(x)` is the Hugging Face RMSNorm (`rmsnorm_hf`); `RMSNorm.forward(x, residual)`
is the decoder's fused residual add + norm (`fused_add_rmsnorm`), which updates `x` and
`residual` in place and returns them. `forward_native` is the same computation in plain torch,
rounding exactly as each kernel does, for platforms and debugging paths without the kernels.
"""

from __future__ import annotations

import torch
from torch import nn

from sglang.kernels.ops.layernorm import fused_add_rmsnorm, rmsnorm_hf


class RMSNorm(nn.Module):
    """Root-mean-square norm over the last dim with a learned per-channel `weight`."""

    def __init__(
        self, hidden_size: int, eps: float = 1e-6, params_dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(hidden_size, dtype=params_dtype))

    def forward(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        if residual is None:
            return rmsnorm_hf(x, self.weight, self.variance_epsilon)
        return fused_add_rmsnorm(x, residual, self.weight, self.variance_epsilon)

    def forward_native(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Plain torch; with `residual` it returns new tensors instead of updating in place."""
        orig_dtype = x.dtype
        x = x.to(torch.float32)
        if residual is None:
            # Hugging Face order: round the normalized row back, then apply the weight.
            variance = x.pow(2).mean(dim=-1, keepdim=True)
            x = x * torch.rsqrt(variance + self.variance_epsilon)
            return self.weight * x.to(orig_dtype)
        x = x + residual.to(torch.float32)
        residual = x.to(residual.dtype)
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.variance_epsilon)
        return (x * self.weight.to(torch.float32)).to(orig_dtype), residual

    def extra_repr(self) -> str:
        return f"{self.hidden_size}, eps={self.variance_epsilon}"


__all__ = ["RMSNorm"]
