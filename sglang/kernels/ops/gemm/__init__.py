"""GEMM group: Triton matrix multiplies for shapes the general-purpose GEMMs serve poorly.

- `fused_a_gemm(x, weight)`: x @ weight.T, a tiled GEMM with an fp32 accumulator (the fused
  q_a / kv_a down-projection of DeepSeek-V3 style attention).
- `tiny_gemm(x, weight, bias=None)`: x @ weight.T + bias for N <= `TINY_GEMM_MAX_N` (MoE routers).
"""

from sglang.kernels.ops.gemm.fused_a_gemm import fused_a_gemm, fused_a_gemm_ref
from sglang.kernels.ops.gemm.tiny_gemm import TINY_GEMM_MAX_N, tiny_gemm, tiny_gemm_ref

__all__ = ["TINY_GEMM_MAX_N", "fused_a_gemm", "fused_a_gemm_ref", "tiny_gemm", "tiny_gemm_ref"]
