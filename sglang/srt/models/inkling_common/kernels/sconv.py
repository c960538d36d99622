"""Inkling's short causal conv ("sconv") in the runtime: per-forward metadata and the layer call.

The arithmetic is the kernel layer's (`sglang.kernels.ops.mamba.inkling_sconv`, upstream's
three entry points): extend runs `causal_conv1d` (prefix taps from the cache) then
`update_sconv_cache`; decode runs `fused_causal_conv1d_update_decode`, one Triton launch for the
conv and the cache shift. Each runs its Triton kernel wherever Triton can (CUDA, or the CPU
under the interpreter) and its torch reference elsewhere, decode included. The metadata is
built on the device with torch ops that read no values on the host (no `.item()`, no
`.tolist()`), once per forward, and reused by every layer, as upstream's metadata kernels are.
"""

from __future__ import annotations

import torch

from sglang.kernels.ops.mamba import (
    PAD_SLOT_ID,
    causal_conv1d,
    fused_causal_conv1d_update_decode,
    update_sconv_cache,
)

__all__ = [
    "PAD_SLOT_ID",
    "causal_conv1d",
    "decode_sconv_metadata",
    "extend_sconv_metadata",
    "fused_causal_conv1d_update_decode",
    "sconv_forward",
    "update_sconv_cache",
]


def extend_sconv_metadata(
    query_start_loc: torch.Tensor,
    cache_indices: torch.Tensor,
    has_initial_state: torch.Tensor,
    num_tokens: int,
) -> dict[str, torch.Tensor]:
    """upstream's extend metadata: `cache_mask` `[B, 1, 1]`, `safe_idx`, `cu`, `si` (plus the inputs)."""
    qsl = query_start_loc.to(torch.int32)
    lengths = (qsl[1:] - qsl[:-1]).long()
    n_seqs = cache_indices.shape[0]
    seqs = torch.arange(n_seqs, dtype=torch.int32, device=qsl.device)
    return {
        "cache_mask": (has_initial_state.bool() & (cache_indices != PAD_SLOT_ID)).view(-1, 1, 1),
        "safe_idx": cache_indices.clamp(min=0).long(),
        "cu": qsl.long(),
        # output_size: the length is the caller's token count, so no device read sizes it.
        "si": torch.repeat_interleave(seqs, lengths, output_size=num_tokens),
        "query_start_loc": qsl,
        "cache_indices": cache_indices,
        "has_initial_state": has_initial_state,
    }


def decode_sconv_metadata(cache_indices: torch.Tensor) -> dict[str, torch.Tensor]:
    """upstream's decode metadata: one token per sequence; PAD lanes (-1) use no cached state."""
    return {"cache_indices": cache_indices, "cache_mask": cache_indices != PAD_SLOT_ID}


def sconv_forward(
    x: torch.Tensor,
    weight: torch.Tensor,
    sconv_cache: torch.Tensor,
    metadata: dict[str, torch.Tensor],
    *,
    activation: str | None = None,
    use_residual: bool = True,
    is_decode: bool = False,
) -> torch.Tensor:
    """One sconv layer: the conv of `x` `[T, D]` with `weight` `[D, W]`, updating `sconv_cache` in place."""
    if is_decode:
        return fused_causal_conv1d_update_decode(
            x,
            weight,
            sconv_cache,
            metadata["cache_indices"],
            metadata["cache_mask"],
            activation=activation,
            use_residual=use_residual,
        )
    y = causal_conv1d(
        x,
        weight,
        sconv_cache,
        metadata["cache_mask"],
        metadata["safe_idx"],
        metadata["cu"],
        metadata["si"],
        activation=activation,
        use_residual=use_residual,
    )
    # After the conv has read the old states.
    update_sconv_cache(
        x,
        sconv_cache,
        metadata["cache_indices"],
        metadata["has_initial_state"],
        metadata["query_start_loc"],
    )
    return y
