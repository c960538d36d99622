"""Our operators against upstream sglang 0.5.17's and 0.5.23's, from signatures hard-coded here.

`UPSTREAM` holds, per release, every public top-level function of each upstream module that has a
counterpart under our `sglang/kernels/ops/<group>/<file>.py`, as its parameter list without
annotations. They were read with `ast` from the wheels (`pip download --no-deps sglang==0.5.17`
and `==0.5.23`, unpacked in a temporary directory, never committed), so the tests run offline;
with `SGLANG_WHEELS=DIR` (a directory holding both wheels) `test_tables_match_the_wheels` reads
them again and checks the tables.

For every function of ours with an upstream name, and for each release, the signature must be
upstream's (names, order, kinds, defaults), or the difference must be in `EXPLAINED` (a reviewed
table: release, module, function -> why) *and* every call upstream's signature accepts must bind
here with the same meaning (`call_problems`): both releases' calls then work. Anything else is a
failure, as is an entry of `EXPLAINED` that no longer differs. What is only drift (a module
upstream moved, upstream functions this library lacks, 0.5.17 names 0.5.23 dropped) is printed
as a table (`drift_rows`); docs/kernels.md carries it (`python -m tests.kernels.test_upstream_signatures`
prints its markdown). The walk over our modules is generic: a module added, moved or renamed is
covered without editing this test.
"""

from __future__ import annotations

import ast
import glob
import os
import re
import sys
import zipfile
from pathlib import Path

import pytest

from sglang.kernels import registry

REPO_ROOT = Path(__file__).resolve().parents[2]
OPS_DIR = REPO_ROOT / "sglang" / "kernels" / "ops"
RELEASES = ("0.5.17", "0.5.23")
# Public additions that need no justification: references and support predicates.
ALLOWED_EXTRA = re.compile(r"^(.+_ref|can_use_\w+|is_supported_\w+)$")
DIFFERS = re.compile(r"Differs from upstream:(.*?)(?:\n\s*\n|\Z)", re.S)

UPSTREAM: dict[str, dict[str, dict[str, str]]] = {
    # sglang-0.5.17-cp311-cp311-manylinux_2_34_x86_64.whl: sglang/kernels/ops/<module>
    "0.5.17": {
        "communication/all_reduce.py": {
            "get_all_reduce_module": "(dtype, world_size)",
            "custom_all_reduce": "(comm, input, algo, pull_arg)",
            "get_fused_parallel_qknorm_module": "(dtype, world_size, q_dim, k_dim)",
            "get_fused_parallel_qknorm_max_occupancy": "(dtype, world_size, q_dim, k_dim)",
            "fused_parallel_qknorm": "(comm, q, k, q_weight, k_weight, eps=1e-06)",
        },
        "gemm/dsv3_fused_a_gemm.py": {
            "dsv3_fused_a_gemm_module": "(hd_in, hd_out, use_pdl)",
            "dsv3_fused_a_gemm": "(mat_a, mat_b, output=None)",
        },
        "gemm/fused_a_gemm.py": {
            "fused_a_gemm_weight_eligible": "(layer)",
            "linear_with_fused_a_gemm": "(layer, hidden_states, *, backend=FusedAGemmBackend.AUTO)",
            "dsv3_fused_a_gemm": "(mat_a, mat_b, output=None, backend=FusedAGemmBackend.AUTO)",
        },
        "gemm/tiny_gemm.py": {
            "tiny_n_gemm_bf16": "(x, w, out=None, *, out_dtype=None, split_n=None, max_m=_MAX_M_DEFAULT)",
            "tiny_k_gemm_bf16": "(x, w, out=None, *, out_dtype=None, split_n=None, max_m=_MAX_M_DEFAULT)",
        },
        "kvcache/hicache.py": {
            "can_use_hicache_jit_kernel": "(*, element_size, unroll=None, block_quota=None)",
            "can_use_write_back_jit_kernel": "(*, element_size, unroll=None, block_quota=None)",
            "transfer_hicache_one_layer": "(k_cache_dst, v_cache_dst, indices_dst, k_cache_src, v_cache_src, indices_src, *, element_dim=None, unroll=None, block_quota=None)",
            "transfer_hicache_all_layer": "(k_ptr_dst, v_ptr_dst, indices_dst, k_ptr_src, v_ptr_src, indices_src, *, kv_cache_src_stride_bytes, kv_cache_dst_stride_bytes, element_size=None, unroll=None, block_quota=None)",
            "transfer_hicache_one_layer_mla": "(cache_dst, indices_dst, cache_src, indices_src, *, element_dim=None, unroll=None, block_quota=None)",
            "transfer_hicache_all_layer_mla": "(ptr_dst, indices_dst, ptr_src, indices_src, *, cache_src_stride_bytes, cache_dst_stride_bytes, element_size=None, unroll=None, block_quota=None)",
            "transfer_hicache_all_layer_staged_lf_pf": "(k_ptr_src, v_ptr_src, src_indices, dst_indices, staging_k, staging_v, dst_k, dst_v, *, page_size, element_size=None, unroll=None, block_quota=None)",
            "transfer_hicache_all_layer_mla_staged_lf_pf": "(ptr_src, src_indices, dst_indices, staging, dst, *, page_size, element_size=None, unroll=None, block_quota=None)",
        },
        "kvcache/kvcache.py": {
            "can_use_store_cache": "(k_row_bytes, v_row_bytes=0)",
            "store_cache": "(k, v, k_cache, v_cache, indices, *, row_bytes=0, v_row_bytes=0, num_split=0, size_limit=0, reserved_skip_index=0)",
        },
        "layernorm/fused_eh_norm.py": {
            "is_supported_fused_eh_norm_hidden_size": "(hidden_size)",
            "fused_eh_norm": "(inputs_embeds, previous_hidden, enorm_weight, hnorm_weight, eps)",
        },
        # sglang/kernels/ops/layernorm/__init__.py: 0.5.17's package-level ops (our rmsnorm_op.py)
        "layernorm/__init__.py": {
            "rmsnorm": "(input, weight, eps=1e-06, out=None, enable_pdl=None)",
            "fused_add_rmsnorm": "(input, residual, weight, eps=1e-06, enable_pdl=None)",
            "gemma_rmsnorm": "(input, weight, eps=1e-06, out=None, enable_pdl=None)",
            "gemma_fused_add_rmsnorm": "(input, residual, weight, eps=1e-06, enable_pdl=None)",
        },
        "layernorm/norm.py": {
            "is_supported_jit_fused_add_rmsnorm_hidden_size": "(hidden_size)",
            "can_use_fused_inplace_qknorm": "(head_dim, dtype)",
            "fused_inplace_qknorm": "(q, k, q_weight, k_weight, eps=1e-06, *, head_dim=0)",
            "rmsnorm": "(input, weight, out=None, eps=1e-06)",
            "fused_add_rmsnorm": "(input, residual, weight, eps=1e-06, *, cast_x_before_out_mul=False)",
            "fused_inplace_qknorm_across_heads": "(q, k, q_weight, k_weight, eps=1e-06)",
        },
        "layernorm/rmsnorm_hf.py": {
            "is_supported_rmsnorm_hf_hidden_size": "(hidden_size)",
            "rmsnorm_hf": "(input, weight, eps=1e-06, out=None)",
        },
        "mamba/inkling_sconv.py": {
            "causal_conv1d": "(x, weight, sconv_cache, cache_mask, safe_idx, cu, si, activation=None, use_residual=True, is_decode=False)",
            "update_sconv_cache": "(x, sconv_cache, cache_indices, has_initial_state, query_start_loc)",
            "fused_gather_scatter_to_sconv_cache": "(hidden_states, sconv_cache, track_conv_indices, mask, dst_indices)",
            "fused_causal_conv1d_update_decode": "(x, weight, sconv_cache, cache_indices, cache_mask, activation=None, use_residual=True, track_mask=None, track_indices=None)",
            "fused_draft_extend_sconv_cache": "(hidden_states, sconv_cache, cache_indices, num_accepted_tokens, draft_token_num, do_tracking=False, crossed=None, track_step=None, mamba_track_indices=None)",
        },
        "mamba/transfer_mamba.py": {
            "transfer_kv_mamba_pf_lf": "(src, dst, src_indices, dst_indices, layer_id, item_size, src_layout_dim, num_warps_per_item=32)",
            "transfer_kv_mamba_lf_pf": "(src_ptrs, dst, src_indices, dst_indices, item_size, dst_layout_dim, num_layers, num_warps_per_item=32)",
        },
        "quantization/per_token_group_quant.py": {
            "per_token_group_quant": "(input, output_q=None, output_s=None, group_size=128, scale_ue8m0=False, fuse_silu_and_mul=False, masked_m=None, expected_m=None, *, out_dtype=None, column_major_scales=False)",
        },
        "speculative/ngram_embedding.py": {
            "compute_n_gram_ids": "(ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums, tokens, exclusive_req_len_sums, ne_token_table, row_indices, column_starts, n_gram_ids, eos_token_id)",
            "compute_n_gram_ids_decode": "(ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums, ne_token_table, row_indices, column_starts, n_gram_ids, eos_token_id)",
            "update_token_table": "(tokens, ne_token_table, row_indices, column_starts, req_lens, ignore_tokens=None)",
            "update_token_table_decode": "(tokens, ne_token_table, row_indices, column_starts)",
        },
    },
    # sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl: sglang/kernels/ops/<module>
    "0.5.23": {
        "communication/all_reduce.py": {
            "get_all_reduce_module": "(dtype, world_size)",
            "custom_all_reduce": "(comm, input, algo, *, graph_params=None, use_multicast=False)",
            "get_fused_parallel_qknorm_module": "(dtype, world_size, q_dim, k_dim)",
            "get_fused_parallel_qknorm_max_occupancy": "(dtype, world_size, q_dim, k_dim)",
            "fused_parallel_qknorm": "(comm, q, k, q_weight, k_weight, eps=1e-06)",
        },
        "gemm/dsv3_fused_a_gemm.py": {
            "dsv3_fused_a_gemm_module": "(hd_in, hd_out, use_pdl)",
            "dsv3_fused_a_gemm": "(mat_a, mat_b, output=None)",
        },
        "gemm/fused_a_gemm.py": {
            "fused_a_gemm_weight_eligible": "(layer)",
            "linear_with_fused_a_gemm": "(layer, hidden_states, *, backend=FusedAGemmBackend.AUTO)",
            "dsv3_fused_a_gemm": "(mat_a, mat_b, output=None, backend=FusedAGemmBackend.AUTO)",
        },
        "gemm/tiny_gemm.py": {
            "can_use_tiny_gemm": "(n, k, max_m=16)",
            "tiny_gemm_bf16": "(x, w, out=None, *, out_dtype=None, n_split=None, max_m=16)",
        },
        "kvcache/hicache.py": {
            "hicache_tma_rows_per_chunk": "(element_size)",
            "use_hicache_tma_kernel": "(*, element_size, block_quota, page_size=None)",
            "can_use_hicache_jit_kernel": "(*, element_size, unroll=None, block_quota=None, page_size=None)",
            "can_use_write_back_jit_kernel": "(*, element_size, unroll=None, block_quota=None)",
            "transfer_hicache_one_layer": "(k_cache_dst, v_cache_dst, indices_dst, k_cache_src, v_cache_src, indices_src, *, element_dim=None, unroll=None, block_quota=None, page_size=None)",
            "transfer_hicache_all_layer": "(k_ptr_dst, v_ptr_dst, indices_dst, k_ptr_src, v_ptr_src, indices_src, *, kv_cache_src_stride_bytes, kv_cache_dst_stride_bytes, element_size=None, unroll=None, block_quota=None, page_size=None)",
            "transfer_hicache_one_layer_mla": "(cache_dst, indices_dst, cache_src, indices_src, *, element_dim=None, unroll=None, block_quota=None, page_size=None)",
            "transfer_hicache_all_layer_mla": "(ptr_dst, indices_dst, ptr_src, indices_src, *, cache_src_stride_bytes, cache_dst_stride_bytes, element_size=None, unroll=None, block_quota=None, page_size=None)",
            "transfer_hicache_all_layer_staged_lf_pf": "(k_ptr_src, v_ptr_src, src_indices, dst_indices, staging_k, staging_v, dst_k, dst_v, *, page_size, element_size=None, unroll=None, block_quota=None)",
            "transfer_hicache_all_layer_mla_staged_lf_pf": "(ptr_src, src_indices, dst_indices, staging, dst, *, page_size, element_size=None, unroll=None, block_quota=None)",
            "can_use_page_unified_load_back_jit_kernel": "(*, group_bytes, block_quota=None)",
            "transfer_hicache_one_layer_page_unified_lf": "(k_cache_dst, v_cache_dst, src, src_indices, dst_indices, layer_id, *, block_quota=None)",
            "transfer_hicache_one_layer_mla_page_unified_lf": "(cache_dst, src, src_indices, dst_indices, layer_id, *, block_quota=None)",
            "transfer_hicache_all_layer_staged_lf_page_unified": "(k_ptr_src, v_ptr_src, src_pages, dst_pages, staging, dst)",
            "transfer_hicache_all_layer_mla_staged_lf_page_unified": "(ptr_src, src_pages, dst_pages, staging, dst)",
        },
        "kvcache/kvcache.py": {
            "can_use_store_cache": "(k_row_bytes, v_row_bytes=0, num_threads=0)",
            "store_cache": "(k, v, k_cache, v_cache, indices, *, row_bytes=0, v_row_bytes=0, num_split=0, size_limit=0, reserved_skip_index=0)",
        },
        "layernorm/fused_eh_norm.py": {
            "is_supported_fused_eh_norm_hidden_size": "(hidden_size)",
            "fused_eh_norm": "(inputs_embeds, previous_hidden, enorm_weight, hnorm_weight, eps)",
        },
        "layernorm/norm.py": {
            "is_supported_jit_fused_add_rmsnorm_hidden_size": "(hidden_size)",
            "can_use_fused_inplace_qknorm": "(head_dim, dtype)",
            "fused_inplace_qknorm": "(q, k, q_weight, k_weight, eps=1e-06, *, head_dim=0)",
            "rmsnorm": "(input, weight, out=None, eps=1e-06)",
            "fused_add_rmsnorm": "(input, residual, weight, eps=1e-06, *, cast_x_before_out_mul=False)",
        },
        "layernorm/rmsnorm_hf.py": {
            "is_supported_rmsnorm_hf_hidden_size": "(hidden_size)",
            "rmsnorm_hf": "(input, weight, eps=1e-06, out=None)",
        },
        "mamba/inkling_sconv.py": {
            "causal_conv1d": "(x, weight, sconv_cache, cache_mask, safe_idx, cu, si, activation=None, use_residual=True, is_decode=False)",
            "update_sconv_cache": "(x, sconv_cache, cache_indices, has_initial_state, query_start_loc)",
            "fused_gather_scatter_to_sconv_cache": "(hidden_states, sconv_cache, track_conv_indices, mask, dst_indices)",
            "fused_causal_conv1d_update_decode": "(x, weight, sconv_cache, cache_indices, cache_mask, activation=None, use_residual=True, track_mask=None, track_indices=None)",
            "fused_draft_extend_sconv_cache": "(hidden_states, sconv_cache, cache_indices, num_accepted_tokens, draft_token_num, do_tracking=False, crossed=None, track_step=None, mamba_track_indices=None)",
        },
        "mamba/transfer_mamba.py": {
            "transfer_kv_mamba_pf_lf": "(src, dst, src_indices, dst_indices, layer_id, item_size, src_layout_dim, num_warps_per_item=32)",
            "transfer_kv_mamba_lf_pf": "(src_ptrs, dst, src_indices, dst_indices, item_size, dst_layout_dim, num_layers, num_warps_per_item=32)",
        },
        "quantization/per_token_group_quant.py": {
            "per_token_group_quant": "(input, output_q=None, output_s=None, group_size=128, scale_ue8m0=False, fuse_silu_and_mul=False, masked_m=None, expected_m=None, *, out_dtype=None, column_major_scales=False, sorted_token_ids=None, num_tokens_post_padded=None, num_valid_tokens=0, silu_and_mul_mode='legacy')",
        },
        "embeddings/ngram_embedding.py": {
            "compute_n_gram_ids": "(ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums, tokens, exclusive_req_len_sums, ne_token_table, row_indices, column_starts, n_gram_ids, eos_token_id)",
            "compute_n_gram_ids_decode": "(ne_n, ne_k, ne_weights, ne_mods, exclusive_ne_embedder_size_sums, ne_token_table, row_indices, column_starts, n_gram_ids, eos_token_id)",
            "update_token_table": "(tokens, ne_token_table, row_indices, column_starts, req_lens, ignore_tokens=None)",
            "update_token_table_decode": "(tokens, ne_token_table, row_indices, column_starts)",
        },
    },
}

# Our module -> where a release has it, when upstream moved it (signatures compared there).
MOVED = {
    ("0.5.23", "speculative/ngram_embedding.py"): "embeddings/ngram_embedding.py",
    # 0.5.17 defines the package-level rmsnorm / fused_add_rmsnorm in the group's __init__.py;
    # 0.5.23 dropped them (a drift row).
    ("0.5.17", "layernorm/rmsnorm_op.py"): "layernorm/__init__.py",
}

# (release, our module, function) -> why our signature differs from that release's. Each entry
# must still differ, and every call that release accepts must bind here (`call_problems`).
EXPLAINED = {
    ("0.5.17", "communication/all_reduce.py", "custom_all_reduce"):
        "pull_arg gained a default (None) because 0.5.23 dropped it; 0.5.23's keyword-only "
        "graph_params and use_multicast are added with its defaults",
    ("0.5.23", "communication/all_reduce.py", "custom_all_reduce"):
        "keeps 0.5.17's pull_arg as an optional fourth positional parameter, so 0.5.17's calls "
        "still work; 0.5.23's calls never pass a fourth positional",
    ("0.5.17", "kvcache/kvcache.py", "can_use_store_cache"):
        "0.5.23's num_threads (threads per row, 0 = upstream's heuristic) added with its default",
    ("0.5.17", "kvcache/hicache.py", "can_use_hicache_jit_kernel"):
        "0.5.23's keyword-only page_size (picks upstream's TMA kernel) added with its default",
    ("0.5.17", "kvcache/hicache.py", "transfer_hicache_one_layer"):
        "0.5.23's keyword-only page_size added with its default; the rows copied do not depend on it",
    ("0.5.17", "kvcache/hicache.py", "transfer_hicache_all_layer"):
        "0.5.23's keyword-only page_size added with its default; the rows copied do not depend on it",
    ("0.5.17", "quantization/per_token_group_quant.py", "per_token_group_quant"):
        "0.5.23's keyword-only sorted_token_ids, num_tokens_post_padded, num_valid_tokens and "
        "silu_and_mul_mode added with its defaults and semantics (and its fp32 input)",
}


def _our_modules() -> dict[str, Path]:
    """Our operator files, `<group>/<file>.py` -> path (not packages' `__init__` or private `_*.py`)."""
    return {p.relative_to(OPS_DIR).as_posix(): p for p in sorted(OPS_DIR.glob("*/**/*.py"))
            if not p.name.startswith("_")}


def _functions(source: str) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(source)
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _public(path: Path) -> dict[str, ast.FunctionDef]:
    return {n: f for n, f in _functions(path.read_text(encoding="utf-8")).items() if not n.startswith("_")}


def _default(node: ast.expr | None):
    """A comparable default: the literal's value where it is one (1e-6 == 1e-06), else its text."""
    if node is None:
        return None
    try:
        return ("value", ast.literal_eval(node))
    except ValueError:
        return ("expr", ast.unparse(node))


def signature(fn: ast.FunctionDef) -> list[tuple[str, str, object]]:
    """[(kind, name, default)] in order, as `inspect.Parameter` would describe them."""
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = []
    for i, (arg, default) in enumerate(zip(positional, defaults)):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        params.append((kind, arg.arg, _default(default)))
    if a.vararg:
        params.append(("VAR_POSITIONAL", a.vararg.arg, None))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        params.append(("KEYWORD_ONLY", arg.arg, _default(default)))
    if a.kwarg:
        params.append(("VAR_KEYWORD", a.kwarg.arg, None))
    return params


def parse_signature(text: str) -> list[tuple[str, str, object]]:
    """`signature` of a table entry such as "(x, w, out=None, *, max_m=16)"."""
    return signature(ast.parse(f"def f{text}: pass").body[0])


_POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")


def call_problems(ours, theirs) -> list[str]:
    """Why some call `theirs` accepts would not bind to `ours` with the same meaning ([] if none).

    Each upstream positional parameter must be ours at the same position, by name; each
    keyword-only one must be ours and keyword-capable; an upstream default must be ours too;
    a parameter of ours upstream lacks must have a default; `*args`/`**kwargs` must be kept.
    """
    problems = []
    our_pos = [p for p in ours if p[0] in _POSITIONAL]
    by_name = {p[1]: p for p in ours}
    for i, (kind, name, default) in enumerate(p for p in theirs if p[0] in _POSITIONAL):
        mine = our_pos[i] if i < len(our_pos) else None
        if mine is None or mine[1] != name or (kind == "POSITIONAL_OR_KEYWORD" and mine[0] != kind):
            problems.append(f"positional #{i} `{name}` is {mine}")
        elif default is not None and mine[2] != default:
            problems.append(f"`{name}` defaults to {mine[2]}, upstream to {default}")
    for kind, name, default in theirs:
        mine = by_name.get(name)
        if kind == "KEYWORD_ONLY" and (mine is None or mine[0] not in ("KEYWORD_ONLY", "POSITIONAL_OR_KEYWORD")):
            problems.append(f"keyword `{name}` is {mine}")
        elif kind == "KEYWORD_ONLY" and default is not None and mine[2] != default:
            problems.append(f"`{name}` defaults to {mine[2]}, upstream to {default}")
        elif kind.startswith("VAR_") and not any(p[0] == kind for p in ours):
            problems.append(f"`{kind}` is gone")
    theirs_names = {p[1] for p in theirs}
    for kind, name, default in ours:
        if name not in theirs_names and not kind.startswith("VAR_") and default is None:
            problems.append(f"`{name}` is required here and unknown upstream")
    return problems


def _upstream_module(release: str, module: str) -> dict[str, str] | None:
    return UPSTREAM[release].get(MOVED.get((release, module), module))


def check_release(release: str) -> tuple[list[str], list[str]]:
    """(names checked, failures) of our modules against one release's table."""
    checked, failures = [], []
    for module, path in _our_modules().items():
        theirs = _upstream_module(release, module)
        if theirs is None:
            continue
        for name, fn in _public(path).items():
            if name not in theirs:
                continue
            checked.append(f"{module}:{name}")
            got, want = signature(fn), parse_signature(theirs[name])
            reason = EXPLAINED.get((release, module, name))
            if got == want:
                if reason:
                    failures.append(f"{module}: `{name}` now has {release}'s signature; remove its "
                                    "EXPLAINED entry")
            elif reason is None:
                failures.append(f"{module}: `{name}` has {got}, upstream {release} has {want}: give it "
                                "upstream's signature, or add a reviewed EXPLAINED entry")
            elif problems := call_problems(got, want):
                failures.append(f"{module}: `{name}`: some {release} calls would not bind: {problems}")
    return checked, failures


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_signature_is_ours_or_an_explained_superset(release):
    checked, failures = check_release(release)
    assert not failures, "\n".join(failures)
    # The walk found the operators (a broken walk would pass vacuously).
    assert len(checked) >= len(registry.op_ids()), checked


def test_stale_explained_entries_fail():
    for (release, module, name), _ in EXPLAINED.items():
        assert name in (_upstream_module(release, module) or {}), (release, module, name)
        assert name in _public(_our_modules()[module]), (module, name)


def test_every_public_function_is_upstreams_or_explained():
    extras = []
    for module, path in _our_modules().items():
        known = set().union(*((_upstream_module(r, module) or {}) for r in RELEASES))
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        differs = " ".join(DIFFERS.findall(doc))
        for name in _public(path):
            if name not in known and not ALLOWED_EXTRA.match(name) and not re.search(rf"`{name}[`(]", differs):
                extras.append(f"{module}: `{name}` is upstream's in neither {RELEASES}; rename it to "
                              "upstream's API, or name it in the module's \"Differs from upstream:\" "
                              "paragraph with the reason")
    assert not extras, "\n".join(extras)


def test_every_registered_operator_carries_an_upstream_name():
    missing = []
    for op_id in registry.op_ids():
        module, _, attr = registry.get(op_id).targets["triton"].partition(":")
        key = module.removeprefix("sglang.kernels.ops.").replace(".", "/") + ".py"
        if not any(attr in (_upstream_module(r, key) or {}) for r in RELEASES):
            missing.append(f"{op_id}: `{attr}` is in neither release's {key}")
    assert not missing, "\n".join(missing)


def test_call_problems_sees_what_breaks_a_call():
    ours = parse_signature("(comm, input, algo, pull_arg=None, *, graph_params=None, use_multicast=False)")
    assert call_problems(ours, parse_signature("(comm, input, algo, pull_arg)")) == []
    assert call_problems(ours, parse_signature("(comm, input, algo, *, graph_params=None, use_multicast=False)")) == []
    # A required parameter added, a positional renamed or moved, a default changed, a keyword gone.
    assert call_problems(parse_signature("(a, b, c)"), parse_signature("(a, b)"))
    assert call_problems(parse_signature("(a, c, b=1)"), parse_signature("(a, b=1)"))
    assert call_problems(parse_signature("(a, b=2)"), parse_signature("(a, b=1)"))
    assert call_problems(parse_signature("(a, *, c=1)"), parse_signature("(a, *, b=1)"))
    assert call_problems(parse_signature("(a, *, b)"), parse_signature("(a, b)"))  # b passed by position


def test_signature_reads_every_kind_and_default():
    fn = _functions("def f(a, /, b, c=1e-6, *args, d, e=None, f=X.Y, **kw): pass")["f"]
    assert signature(fn) == [
        ("POSITIONAL_ONLY", "a", None),
        ("POSITIONAL_OR_KEYWORD", "b", None),
        ("POSITIONAL_OR_KEYWORD", "c", ("value", 1e-06)),
        ("VAR_POSITIONAL", "args", None),
        ("KEYWORD_ONLY", "d", None),
        ("KEYWORD_ONLY", "e", ("value", None)),
        ("KEYWORD_ONLY", "f", ("expr", "X.Y")),
        ("VAR_KEYWORD", "kw", None),
    ]
    other = _functions("def f(a, b, c=1e-6, *args, e=None, d, f=X.Y, **kw): pass")["f"]
    assert signature(other) != signature(fn)  # order and kinds both count


def drift_rows() -> list[tuple[str, str, str, str]]:
    """(release, module, name, what) for everything that differs and is not a failure."""
    rows = []
    ours = _our_modules()
    for (release, module), moved in MOVED.items():
        rows.append((release, module, "(module)", f"upstream {release} has these functions in `{moved}`, not at our path"))
    for (release, module, name), reason in EXPLAINED.items():
        rows.append((release, module, name, f"explained: {reason}"))
    for release in RELEASES:
        for module, path in ours.items():
            theirs = _upstream_module(release, module)
            if theirs is None:
                continue
            mine = _public(path)
            rows += [(release, module, n, "upstream's, not here") for n in theirs if n not in mine]
            others = set().union(*(_upstream_module(r, module) or {} for r in RELEASES if r != release))
            rows += [(release, module, n, "here from the other release") for n in mine
                     if n not in theirs and n in others]
    return sorted(rows)


def drift_markdown() -> str:
    lines = ["| release | module (`sglang/kernels/ops/`) | function | drift |", "|---|---|---|---|"]
    lines += [f"| {r} | `{m}` | `{n}` | {w} |" for r, m, n, w in drift_rows()]
    return "\n".join(lines)


def test_drift_table_is_printed_and_in_the_docs(capsys):
    rows = drift_rows()
    with capsys.disabled():
        print(f"\nDrift from upstream {' and '.join(RELEASES)} ({len(rows)} rows, none a failure):")
        for release, module, name, what in rows:
            print(f"- {release} {module}:{name}: {what}")
    docs = (REPO_ROOT / "docs" / "kernels.md").read_text(encoding="utf-8")
    # Every explained difference and every module upstream keeps elsewhere is in the docs' drift table.
    for release, module, name, what in rows:
        if what.startswith("explained") or name == "(module)":
            assert f"| {release} | `{module}` | `{name}` |" in docs, (release, module, name)


def contract_differences() -> list[tuple[str, str]]:
    """[(module, paragraph)] of every "Differs from upstream:" paragraph in our operator modules."""
    out = []
    for module, path in _our_modules().items():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        out += [(module, " ".join(p.split())) for p in DIFFERS.findall(doc)]
    return out


def test_contract_differences_are_listed_and_each_gives_a_reason(capsys):
    differences = contract_differences()
    with capsys.disabled():
        print(f"\nOperators whose contract differs from upstream ({len(differences)}):")
        for module, text in differences:
            print(f"- {module}: {text}")
    for module, text in differences:
        # A justification names what differs and why: a few sentences, not a bare "yes".
        assert len(text.split()) >= 12, f"{module}: 'Differs from upstream:' says too little: {text!r}"
        assert any(_upstream_module(r, module) is not None for r in RELEASES), module


def _wheel_functions(wheel: str, member: str) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as zf:
        source = zf.read(member).decode("utf-8")
    out = {}
    for name, fn in _functions(source).items():
        if not name.startswith("_"):
            args = fn.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if arg is not None:
                    arg.annotation = None
            out[name] = f"({ast.unparse(args)})"
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_tables_match_the_wheels(release):
    wheels = os.environ.get("SGLANG_WHEELS")
    found = sorted(glob.glob(os.path.join(wheels, f"sglang-{release}-*.whl"))) if wheels else []
    if not found:
        pytest.skip(f"set SGLANG_WHEELS=DIR holding sglang-{release}-*.whl to check the hard-coded table")
    for module, functions in UPSTREAM[release].items():
        assert _wheel_functions(found[0], f"sglang/kernels/ops/{module}") == functions, module


if __name__ == "__main__":
    sys.stdout.write(drift_markdown() + "\n")
