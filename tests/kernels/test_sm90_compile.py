"""Part A's Triton kernels compile for sm_90 with Triton's own compiler, on a machine without a GPU.

The interpreter runs every kernel on the CPU, but not the GPU compiler: this compiles each
specialization the operators launch (table pointers, byte and word copies, both rounding
orders, decode with and without tracking) to a cubin with the ptxas Triton ships. Slow (a few
seconds per kernel), so deselected by default: `python -m pytest -m slow tests/kernels/test_sm90_compile.py`.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

# Compiling needs Triton's compiler, not the interpreter, so it runs in a child process whose
# environment has TRITON_INTERPRET unset (tests/conftest.py sets it for this one).
_SCRIPT = r"""
import triton, triton.language as tl
from triton.compiler import ASTSource
from triton.backends.compiler import GPUTarget
from sglang.kernels.ops.kvcache import hicache, kvcache
from sglang.kernels.ops.layernorm import norm
from sglang.kernels.ops.mamba import inkling_sconv, transfer_mamba
import importlib
per_token_group_quant = importlib.import_module("sglang.kernels.ops.quantization.per_token_group_quant")

target = GPUTarget("cuda", 90, 32)

def build(kernel, types, constexprs):
    sig = {n: types.get(n, "constexpr" if n in constexprs else "i64") for n in kernel.arg_names}
    compiled = triton.compile(ASTSource(fn=kernel, signature=sig, constexprs=constexprs), target=target)
    assert compiled.asm["cubin"]

ptrs = {n: "*bf16" for n in ("k_dst", "v_dst", "k_src", "v_src")}
idx = {"idx_dst_ptr": "*i64", "idx_src_ptr": "*i32"}
for table in (True, False):
    types = {**({n: "*u64" for n in ptrs} if table else ptrs), **idx}
    build(hicache._transfer_hicache_kernel, types, {"WORD": tl.int32, "FROM_TABLE": table, "BLOCK_SIZE": 512})
    types = {"src": "*u64" if table else "*fp32", "dst": "*fp32", "src_idx_ptr": "*i64", "dst_idx_ptr": "*i64"}
    build(transfer_mamba._transfer_kv_mamba_kernel, types, {"WORD": tl.uint8, "FROM_TABLE": table, "BLOCK_SIZE": 4096})
types = {n: "*fp8e4nv" for n in ("k_ptr", "v_ptr", "k_cache_ptr", "v_cache_ptr")} | {"idx_ptr": "*i64"}
for word in (tl.int32, tl.uint8):
    build(kvcache._store_cache_kernel, types, {"WORD": word, "BLOCK_SIZE": 1024})
types = {"x_ptr": "*bf16", "r_ptr": "*bf16", "w_ptr": "*bf16", "x_row_stride": "i32", "r_row_stride": "i32", "n_cols": "i32", "eps": "fp32"}
for cast, fp32_sum in ((False, False), (True, False), (False, True)):
    build(norm._fused_add_rmsnorm_kernel, types,
          {"CAST_X_BEFORE_OUT_MUL": cast, "NORMALIZE_FP32_SUM": fp32_sum, "BLOCK_SIZE": 8192})
act = {n: "*bf16" for n in ("x_ptr", "w_ptr", "cache_ptr", "y_ptr")}
types = act | {"ci_ptr": "*i64", "cm_ptr": "*i1", "track_mask_ptr": "*i1", "track_idx_ptr": "*i64"}
for track in (False, True):
    build(inkling_sconv._fused_causal_conv1d_update_decode_kernel, types,
          {"W": 4, "SILU": True, "RESIDUAL": True, "DO_TRACK": track, "BLOCK_T": 2, "BLOCK_D": 128})
types = act | {"safe_idx_ptr": "*i64", "cache_mask_ptr": "*i1", "cu_ptr": "*i64", "si_ptr": "*i32"}
build(inkling_sconv._causal_conv1d_kernel, types,
      {"W": 4, "SILU": True, "RESIDUAL": True, "IS_DECODE": False, "BLOCK_T": 16, "BLOCK_D": 128})
types = {"x_ptr": "*bf16", "cache_ptr": "*bf16", "ci_ptr": "*i64", "init_ptr": "*i1", "qsl_ptr": "*i32"}
build(inkling_sconv._update_sconv_cache_kernel, types, {"W1": 3, "BLOCK_W": 4, "BLOCK_D": 128})
types = {"x_ptr": "*bf16", "q_ptr": "*i8", "s_ptr": "*fp32", "masked_m_ptr": "*i64", "sorted_ptr": "*i32",
         "n_post_ptr": "*i32", "qmax": "fp32", "qmin": "fp32", "inv_qmax": "fp32", "eps": "fp32"}
quant = {"IS_FP8": False, "UE8M0": False, "X_IS_BF16": True, "GROUP_SIZE": 128, "BLOCK_G": 16}
for masked, sorted_rows, dense in ((True, False, False), (False, True, False), (False, False, True)):
    build(per_token_group_quant._per_token_group_quant_kernel, types, quant | {
        "FUSE_SILU_AND_MUL": dense, "MASKED": masked, "SORTED": sorted_rows, "DENSE": dense})
print("compiled")
"""


@pytest.mark.slow
def test_part_a_kernels_compile_for_sm90():
    if importlib.util.find_spec("triton.backends.nvidia") is None:
        pytest.skip("this Triton has no NVIDIA backend to compile with")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0 and "compiled" in done.stdout, done.stderr[-3000:]
