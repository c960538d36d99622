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
    MAX_FUSED_SIZE,
    cdiv,
    next_power_of_2,
    row_block_size,
    row_num_warps,
)
from sglang.kernels.jit.tolerances import TOLERANCES, tolerance

__all__ = [
    "MAX_FUSED_SIZE",
    "TOLERANCES",
    "cdiv",
    "check_index",
    "check_index_range",
    "copy_kernel_device",
    "cuda_capability",
    "has_cuda",
    "interpreter_enabled",
    "next_power_of_2",
    "row_block_size",
    "row_num_warps",
    "tolerance",
    "triton_available",
    "use_triton",
]
