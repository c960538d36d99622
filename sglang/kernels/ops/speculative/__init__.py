"""Speculative-decoding group: token-id plumbing of the overlap scheduler and draft models.

- `resolve_future_token_ids(input_ids, future_token_ids_map)`: placeholders -> sampled ids,
  in place.
- `ngram_embedding(input_ids, embedding_weight, n, ...)`: hashed n-gram ids -> embedding rows.
"""

from sglang.kernels.ops.speculative.ngram_embedding import (
    NGRAM_HASH_BASE,
    ngram_embedding,
    ngram_embedding_ref,
)
from sglang.kernels.ops.speculative.resolve_future_token_ids import (
    resolve_future_token_ids,
    resolve_future_token_ids_ref,
)

__all__ = [
    "NGRAM_HASH_BASE",
    "ngram_embedding",
    "ngram_embedding_ref",
    "resolve_future_token_ids",
    "resolve_future_token_ids_ref",
]
