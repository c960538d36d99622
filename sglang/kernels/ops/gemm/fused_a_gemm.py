"""Unified entry point for the DeepSeek-V3 fused QKV-A GEMM, as upstream's `fused_a_gemm.py`.

Upstream (sglang 0.5.17) dispatches `dsv3_fused_a_gemm(mat_a, mat_b, output=None, backend=...)`
to a runtime-compiled CUDA kernel (`"jit"`) or a CuTe DSL one (`"cutedsl"`), `"auto"` picking
CuTe DSL on SM120+. `fused_a_gemm_weight_eligible(layer)` says whether a linear layer's weight
can take that path.

Differs from upstream: this repository has one implementation, the Triton kernel of
`dsv3_fused_a_gemm.py`; every backend value selects it (the enum is kept so callers written for
upstream run unchanged), and `fused_a_gemm_weight_eligible` states that kernel's support (a 2-D
bf16/fp16/fp32 weight on a device Triton runs on) instead of upstream's bf16 / SM90 / tile-multiple
conditions.
"""

from __future__ import annotations

from enum import Enum

import torch

from sglang.kernels.jit import use_triton
from sglang.kernels.ops.gemm._operands import SUPPORTED_DTYPES
from sglang.kernels.ops.gemm.dsv3_fused_a_gemm import dsv3_fused_a_gemm as _triton_dsv3_fused_a_gemm


class FusedAGemmBackend(str, Enum):
    AUTO = "auto"
    JIT = "jit"
    CUTEDSL = "cutedsl"


def fused_a_gemm_weight_eligible(layer: torch.nn.Module) -> bool:
    """Whether `layer.weight` ([hd_out, hd_in]) can be multiplied by `dsv3_fused_a_gemm` here."""
    weight = getattr(layer, "weight", None)
    return (
        isinstance(weight, torch.Tensor)
        and weight.dim() == 2
        and weight.dtype in SUPPORTED_DTYPES
        and use_triton(weight)
    )


def dsv3_fused_a_gemm(
    mat_a: torch.Tensor,
    mat_b: torch.Tensor,
    output: torch.Tensor | None = None,
    backend: FusedAGemmBackend | str = FusedAGemmBackend.AUTO,
) -> torch.Tensor:
    """mat_a [M, K] @ mat_b [K, N] (weight.T) -> [M, N]; `backend` is validated, then ignored."""
    FusedAGemmBackend(backend)  # an unknown name raises ValueError, as upstream
    return _triton_dsv3_fused_a_gemm(mat_a, mat_b, output)


__all__ = ["FusedAGemmBackend", "dsv3_fused_a_gemm", "fused_a_gemm_weight_eligible"]
