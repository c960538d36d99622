"""Small launch helpers shared by every group: block sizes and grids."""

from __future__ import annotations

__all__ = [
    "COPY_WORD_BYTES",
    "MAX_FUSED_SIZE",
    "cdiv",
    "copy_word",
    "next_power_of_2",
    "row_block_size",
    "row_num_warps",
]

# 64 KiB of fp32 per row block: the largest row a single program reduces on one SM without
# spilling (Liger-Kernel uses the same bound for its fused row kernels).
MAX_FUSED_SIZE = 65536 // 4


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1); tl.arange needs power-of-two extents."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def row_block_size(n_cols: int) -> int:
    """BLOCK_SIZE for a kernel that reduces one row per program."""
    block = next_power_of_2(n_cols)
    if block > MAX_FUSED_SIZE:
        raise ValueError(f"row of {n_cols} elements exceeds the fused-row limit of {MAX_FUSED_SIZE}")
    return block


# Warps per program by row block: 4 warps (128 threads) keep up to 2048 fp32 values in 16
# registers per thread; wider rows get more warps so the per-thread share stays <= 64 values
# (the thresholds Liger-Kernel's `calculate_settings` uses for its row kernels).
_WARPS_BY_BLOCK = ((8192, 16), (2048, 8))
_DEFAULT_WARPS = 4


def row_num_warps(block_size: int) -> int:
    """num_warps for a kernel that reduces one row of `block_size` elements per program."""
    for threshold, warps in _WARPS_BY_BLOCK:
        if block_size >= threshold:
            return warps
    return _DEFAULT_WARPS


# The byte-copy kernels (kvcache, mamba transfers) move 4-byte words when every byte offset is a
# multiple of 4: word copies are bit-exact for any element type, and Triton emits 16-byte vector
# accesses for 16-byte-aligned rows. Anything else moves byte by byte.
COPY_WORD_BYTES = 4


def copy_word(*byte_offsets: int):
    """(Triton element type, its size): `tl.int32` words when all offsets allow them, `tl.uint8` otherwise."""
    import triton.language as tl

    if all(b % COPY_WORD_BYTES == 0 for b in byte_offsets):
        return tl.int32, COPY_WORD_BYTES
    return tl.uint8, 1
