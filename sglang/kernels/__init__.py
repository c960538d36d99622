"""The kernel layer: shared JIT infra (`jit`), the op registry (`registry`), the operators (`ops.<group>.<op>`).

The kernel layer never imports the runtime (`sglang.srt`); `.importlinter` enforces it.
"""
