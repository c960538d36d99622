"""SGLang kernels in the `sglang.kernels.ops.<group>.<op>` layout, and the runtime code that calls them.

Importing this package imports nothing heavy: torch and Triton are imported by the operator modules.
"""
