"""Layers that call sglang's kernels when sglang is installed, the way LightLLM does: imports
inside the methods (sglang is optional), a check of `sys.modules` for an already loaded kernel."""

import sys


class RMSNorm:
    def __init__(self, weight, eps: float = 1e-6) -> None:
        self.weight, self.eps = weight, eps

    def forward(self, x, residual=None):
        if residual is not None:
            from sglang.jit_kernel.norm import fused_add_rmsnorm

            fused_add_rmsnorm(x, residual, self.weight, self.eps)
            return x, residual
        from sglang.jit_kernel.norm import rmsnorm

        return rmsnorm(x, self.weight, self.eps)


class MiniMaxM3MLP:
    def forward(self, x):
        # A package that re-exported names from its submodules, which moved to two groups.
        from sglang.jit_kernel.minimax_m3 import gemma_rmsnorm, swiglu_oai_split

        return swiglu_oai_split(gemma_rmsnorm(x))


def silu_and_mul(x, out):
    from sglang.jit_kernel.activation import silu_and_mul as _kernel

    return _kernel(x, out)


def hicache_loaded() -> bool:
    return "sglang.jit_kernel.hicache" in sys.modules
