"""GEMM group: Triton matrix multiplies for the skinny shapes of decode, with upstream's APIs.

- `dsv3_fused_a_gemm(mat_a, mat_b, output=None)`: mat_a [M, K] @ mat_b [K, N] (weight.T), the
  fused q_a / kv_a down-projection of DeepSeek-V3 attention (`fused_a_gemm.py` adds upstream's
  `backend=` dispatcher and `fused_a_gemm_weight_eligible`).
- `tiny_n_gemm_bf16` / `tiny_k_gemm_bf16(x, w, out=None, *, out_dtype, split_n, max_m)`:
  x [M, K] @ w [N, K].T for a decode batch (MoE routers, small projections); 0.5.23's
  `tiny_gemm_bf16(x, w, out=None, *, out_dtype, n_split, max_m)` and `can_use_tiny_gemm(n, k,
  max_m=16)` beside them.
"""

from sglang.kernels.ops.gemm.dsv3_fused_a_gemm import dsv3_fused_a_gemm, dsv3_fused_a_gemm_ref
from sglang.kernels.ops.gemm.tiny_gemm import (
    can_use_tiny_gemm,
    is_supported_tiny_gemm,
    tiny_gemm_bf16,
    tiny_gemm_bf16_ref,
    tiny_k_gemm_bf16,
    tiny_k_gemm_bf16_ref,
    tiny_n_gemm_bf16,
    tiny_n_gemm_bf16_ref,
)

__all__ = [
    "can_use_tiny_gemm",
    "dsv3_fused_a_gemm",
    "dsv3_fused_a_gemm_ref",
    "is_supported_tiny_gemm",
    "tiny_gemm_bf16",
    "tiny_gemm_bf16_ref",
    "tiny_k_gemm_bf16",
    "tiny_k_gemm_bf16_ref",
    "tiny_n_gemm_bf16",
    "tiny_n_gemm_bf16_ref",
]
