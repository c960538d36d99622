"""MiniMax-M2 attention, reduced to what calls the sharded Q/K norm: projections, norm, attention.

MiniMax-M2 applies one RMSNorm to all query heads flattened (`[T, n_heads * head_dim]`) and one
to all key heads, not a per-head norm. Under tensor parallelism each rank holds a slice of the
heads, so the norm's sum of squares crosses the attention TP group. As upstream's
`MiniMaxM2QKRMSNorm` (sglang 0.5.17 `srt/models/minimax_m2.py`), two paths:

- unfused (upstream's `MiniMaxM2RMSNormTP`, the default): per tensor, the fp32 mean of squares
  is all-reduced and divided by W, then `x * rsqrt(mean + eps) * weight`;
- fused (`SGLANG_USE_FUSED_PARALLEL_QKNORM=1`, or `use_fused=True`): the kernel layer's
  `fused_parallel_qknorm(comm, q, k, q_weight, k_weight, eps)`, one exchange for q and k,
  normalizing q and k in place, with eps on the SUM of squares (upstream's kernel).

Upstream takes the fused path only when W > 1 on CUDA; here the operator also runs at W = 1 and
through Triton's interpreter, so the flag alone decides (the tests run both paths). Rotary
embedding, the KV cache and the MoE block are left out: this is the call site of the norm, kept
small and runnable.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from sglang.kernels.ops.communication.all_reduce import (
    TorchCommunicator,
    fused_parallel_qknorm,
    get_fused_parallel_qknorm_max_occupancy,
)

# Upstream's switch for the fused norm (`get_bool_env_var("SGLANG_USE_FUSED_PARALLEL_QKNORM")`).
_FUSED_ENV = "SGLANG_USE_FUSED_PARALLEL_QKNORM"


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "false").strip().lower() in ("1", "true", "yes", "on")


def _tp_rank_and_size(group) -> tuple[int, int]:
    """(rank, world size) in `group`; (0, 1) when torch.distributed is not initialized."""
    if not dist.is_available() or not dist.is_initialized():
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


class MiniMaxM2QKNorm(nn.Module):
    """RMSNorm over the full flattened q (`q_size`) and k (`k_size`), each rank holding a shard.

    `q_weight` / `k_weight` are this rank's contiguous shards, `[q_size / W]` and `[k_size / W]`.
    """

    def __init__(
        self,
        q_size: int,
        k_size: int,
        eps: float = 1e-6,
        group=None,
        params_dtype: torch.dtype | None = None,
        use_fused: bool | None = None,
    ) -> None:
        super().__init__()
        self.comm = TorchCommunicator.from_group(group)
        self.tp_rank, self.tp_size = self.comm.rank, self.comm.world_size
        self.use_fused = _env_flag(_FUSED_ENV) if use_fused is None else bool(use_fused)
        if q_size % self.tp_size or k_size % self.tp_size:
            raise ValueError(
                f"MiniMaxM2QKNorm: q_size {q_size} and k_size {k_size} must divide by the "
                f"tensor-parallel size {self.tp_size}"
            )
        self.q_size, self.k_size = q_size, k_size
        self.q_local, self.k_local = q_size // self.tp_size, k_size // self.tp_size
        self.eps = eps
        self.group = group
        self.q_weight = nn.Parameter(torch.ones(self.q_local, dtype=params_dtype))
        self.k_weight = nn.Parameter(torch.ones(self.k_local, dtype=params_dtype))

    @torch.no_grad()
    def load_full_weights(self, q_weight: torch.Tensor, k_weight: torch.Tensor) -> None:
        """Copy this rank's shard of the checkpoint's full `[q_size]` / `[k_size]` weights."""
        for name, full, size, local, param in (
            ("q_weight", q_weight, self.q_size, self.q_local, self.q_weight),
            ("k_weight", k_weight, self.k_size, self.k_local, self.k_weight),
        ):
            if full.shape != (size,):
                raise ValueError(
                    f"MiniMaxM2QKNorm: {name} must have shape ({size},), got {tuple(full.shape)}"
                )
            param.copy_(full[self.tp_rank * local : (self.tp_rank + 1) * local])

    def max_occupancy(self, dtype: torch.dtype) -> int:
        """Token rows per SM the fused norm keeps resident for this rank's shard widths.

        A launcher that sizes per-SM work (upstream: the custom all-reduce's push buffer) reads it.
        """
        return get_fused_parallel_qknorm_max_occupancy(dtype, self.tp_size, self.q_size, self.k_size)

    def _rmsnorm_tp(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """Upstream's `MiniMaxM2RMSNormTP.forward`: the mean of squares averaged over the ranks."""
        x32 = x.to(torch.float32)
        variance = x32.pow(2).mean(dim=-1, keepdim=True, dtype=torch.float32)
        if self.tp_size > 1:
            dist.all_reduce(variance, group=self.group)
            variance = variance / self.tp_size
        return (x32 * torch.rsqrt(variance + self.eps) * weight).to(x.dtype)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Normed (q, k); the fused path normalizes the given tensors in place and returns them."""
        if self.use_fused:
            fused_parallel_qknorm(self.comm, q, k, self.q_weight, self.k_weight, self.eps)
            return q, k
        return self._rmsnorm_tp(q, self.q_weight), self._rmsnorm_tp(k, self.k_weight)


class MiniMaxM2Attention(nn.Module):
    """Causal GQA self-attention over one sequence `[T, hidden]` with the sharded Q/K norm.

    q/k/v projections are column-parallel (this rank's heads), `o_proj` row-parallel: its partial
    outputs are summed over `group` when the tensor-parallel size is above 1.
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        num_kv_heads: int,
        head_dim: int,
        rms_norm_eps: float = 1e-6,
        group=None,
        params_dtype: torch.dtype | None = None,
        use_fused_qknorm: bool | None = None,
    ) -> None:
        super().__init__()
        self.tp_rank, self.tp_size = _tp_rank_and_size(group)
        if num_heads % self.tp_size or num_kv_heads % self.tp_size:
            raise ValueError(
                f"MiniMaxM2Attention: num_heads {num_heads} and num_kv_heads {num_kv_heads} "
                f"must divide by the tensor-parallel size {self.tp_size}"
            )
        if num_heads % num_kv_heads:
            raise ValueError(
                f"MiniMaxM2Attention: num_heads {num_heads} must be a multiple of "
                f"num_kv_heads {num_kv_heads}"
            )
        self.group = group
        self.head_dim = head_dim
        self.num_local_heads = num_heads // self.tp_size
        self.num_local_kv_heads = num_kv_heads // self.tp_size
        self.scaling = head_dim**-0.5
        q_local = self.num_local_heads * head_dim
        kv_local = self.num_local_kv_heads * head_dim
        self.q_proj = nn.Linear(hidden_size, q_local, bias=False, dtype=params_dtype)
        self.k_proj = nn.Linear(hidden_size, kv_local, bias=False, dtype=params_dtype)
        self.v_proj = nn.Linear(hidden_size, kv_local, bias=False, dtype=params_dtype)
        self.o_proj = nn.Linear(q_local, hidden_size, bias=False, dtype=params_dtype)
        self.qk_norm = MiniMaxM2QKNorm(
            num_heads * head_dim,
            num_kv_heads * head_dim,
            rms_norm_eps,
            group,
            params_dtype,
            use_fused=use_fused_qknorm,
        )

    def project_qk(self, hidden_states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's normed q `[T, local_heads * head_dim]` and k `[T, local_kv_dim]`."""
        return self.qk_norm(self.q_proj(hidden_states), self.k_proj(hidden_states))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        n_tokens = hidden_states.shape[0]
        q, k = self.project_qk(hidden_states)
        v = self.v_proj(hidden_states)
        # [T, heads * d] -> [heads, T, d]; each kv head serves num_heads / num_kv_heads q heads.
        q = q.view(n_tokens, self.num_local_heads, self.head_dim).transpose(0, 1)
        k = k.view(n_tokens, self.num_local_kv_heads, self.head_dim).transpose(0, 1)
        v = v.view(n_tokens, self.num_local_kv_heads, self.head_dim).transpose(0, 1)
        group_size = self.num_local_heads // self.num_local_kv_heads
        k = k.repeat_interleave(group_size, dim=0)
        v = v.repeat_interleave(group_size, dim=0)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=self.scaling)
        out = self.o_proj(attn.transpose(0, 1).reshape(n_tokens, -1))
        if self.tp_size > 1:
            dist.all_reduce(out, group=self.group)
        return out


__all__ = ["MiniMaxM2Attention", "MiniMaxM2QKNorm"]
