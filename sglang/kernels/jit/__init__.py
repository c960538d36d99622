"""Shared kernel infra every operator group may import (the `shared_modules` of `.importlinter`).

Runtime code (`sglang.srt`) does not import this directly: it calls the groups' public surface.
"""

from sglang.kernels.jit.checks import check_index, check_index_range
from sglang.kernels.jit.device import (
    copy_kernel_device,
    cuda_capability,
    has_cuda,
    interpreter_enabled,
    triton_available,
    use_triton,
)
from sglang.kernels.jit.launch import (
    COPY_WORD_BYTES,
    MAX_FUSED_SIZE,
    cdiv,
    copy_word,
    next_power_of_2,
    row_block_size,
    row_num_warps,
)
from sglang.kernels.jit.tolerances import (
    ROUNDED_ULPS,
    TOLERANCES,
    assert_close_rounded,
    kernel_rounding,
    round_like_kernel,
    tolerance,
    ulp,
)

__all__ = [
    "COPY_WORD_BYTES",
    "MAX_FUSED_SIZE",
    "ROUNDED_ULPS",
    "TOLERANCES",
    "assert_close_rounded",
    "cdiv",
    "check_index",
    "check_index_range",
    "copy_word",
    "copy_kernel_device",
    "cuda_capability",
    "has_cuda",
    "interpreter_enabled",
    "kernel_rounding",
    "next_power_of_2",
    "round_like_kernel",
    "row_block_size",
    "row_num_warps",
    "tolerance",
    "triton_available",
    "ulp",
    "use_triton",
]
