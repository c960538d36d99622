"""Speculative-decoding group: the n-gram embedding ids of upstream's `ngram_embedding.py`.

- `update_token_table[_decode](tokens, ne_token_table, row_indices, column_starts, ...)`: the
  per-request token rows the n-grams are read from.
- `compute_n_gram_ids[_decode](ne_n, ne_k, ne_weights, ne_mods, ...)`: hashed n-gram ids per
  token and (n, k) configuration, written in place.

(`resolve_future_token_ids` is gone: upstream removed it after 0.5.16, its overlap scheduler
no longer writes placeholder ids.)
"""

from sglang.kernels.ops.speculative.ngram_embedding import (
    compute_n_gram_ids,
    compute_n_gram_ids_decode,
    compute_n_gram_ids_decode_ref,
    compute_n_gram_ids_ref,
    update_token_table,
    update_token_table_decode,
    update_token_table_decode_ref,
    update_token_table_ref,
)

__all__ = [
    "compute_n_gram_ids",
    "compute_n_gram_ids_decode",
    "compute_n_gram_ids_decode_ref",
    "compute_n_gram_ids_ref",
    "update_token_table",
    "update_token_table_decode",
    "update_token_table_decode_ref",
    "update_token_table_ref",
]
