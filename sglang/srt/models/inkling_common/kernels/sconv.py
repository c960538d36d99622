"""Inkling's short causal conv ("sconv"): the runtime dispatch between the kernel and the reference.

CUDA bf16 prefill goes to the Triton kernel of `sglang.kernels.ops.mamba.inkling_sconv`, imported
lazily so that importing the model on a machine without a GPU (or without Triton's compiler
toolchain) never builds it. Everything else (decode, other dtypes, the CPU) runs the pure-torch
reference, which has the same signature and semantics.
"""

from __future__ import annotations

import torch

from sglang.kernels.ops.mamba import causal_conv1d_ref

__all__ = ["causal_conv1d"]


def _use_cuda_kernel(x: torch.Tensor, decode: bool) -> bool:
    """The one device check: the kernel path serves CUDA bf16 prefill."""
    return x.is_cuda and x.dtype == torch.bfloat16 and not decode


def causal_conv1d(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    conv_state: torch.Tensor | None = None,
    query_start_loc: torch.Tensor | None = None,
    cache_indices: torch.Tensor | None = None,
    has_initial_state: torch.Tensor | None = None,
    activation: str | None = None,
    residual: bool = False,
    decode: bool = False,
) -> torch.Tensor:
    """Causal depthwise conv over packed sequences (see `sglang.kernels.ops.mamba.inkling_sconv`)."""
    kwargs = {
        "conv_state": conv_state,
        "query_start_loc": query_start_loc,
        "cache_indices": cache_indices,
        "has_initial_state": has_initial_state,
        "activation": activation,
        "residual": residual,
        "decode": decode,
    }
    if _use_cuda_kernel(x, decode):
        from sglang.kernels.ops.mamba.inkling_sconv import (
            causal_conv1d as _causal_conv1d_cuda,
        )

        return _causal_conv1d_cuda(x, weight, bias, **kwargs)
    return causal_conv1d_ref(x, weight, bias, **kwargs)
