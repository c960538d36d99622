"""A downstream package that uses sglang's JIT kernels (an example for `namespace-lint`)."""
