"""What the kernel benchmarks share: one timing function (run them as `python benchmarks/bench_<group>.py`)."""


def median_ms(fn, *args) -> float:
    """Median milliseconds of `fn(*args)` by `triton.testing.do_bench` (warm-up and repeats included)."""
    import triton.testing

    return triton.testing.do_bench(lambda: fn(*args), return_mode="median")
