"""Run a function on each rank of a CPU (gloo) tensor-parallel group of spawned processes.

`run_tp(world_size, "package.module:function", payload)` starts `world_size` fresh interpreters
(the "spawn" start method), each sets `TRITON_INTERPRET=1` BEFORE Triton can be imported, joins a
gloo group on 127.0.0.1 (a port taken from a bound socket), imports and calls
`function(rank, world_size, payload)` and sends back its result. Everything is bounded by
`timeout_s`; a failing rank's traceback is raised in the caller. Results and payloads should be
plain data or numpy arrays (they cross a pipe by value).
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import queue
import socket
import sys
import traceback
from datetime import timedelta

# gloo's rendezvous and every collective give up after this; well under the caller's timeout.
_COLLECTIVE_TIMEOUT_S = 30


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank_main(rank: int, world_size: int, port: int, target: str, payload, results) -> None:
    triton_was_imported = "triton" in sys.modules
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch.distributed as dist

    try:
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=_COLLECTIVE_TIMEOUT_S),
        )
        module_name, _, attr = target.partition(":")
        fn = getattr(importlib.import_module(module_name), attr)
        result = fn(rank, world_size, payload)
        results.put((rank, "ok", {"triton_was_imported": triton_was_imported, "result": result}))
    except BaseException:  # noqa: BLE001 - every failure must reach the parent
        results.put((rank, "error", traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_tp(world_size: int, target: str, payload, timeout_s: float = 60.0) -> list:
    """Per-rank `{"triton_was_imported": bool, "result": ...}`, in rank order."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [
        ctx.Process(target=_rank_main, args=(rank, world_size, port, target, payload, results))
        for rank in range(world_size)
    ]
    for proc in procs:
        proc.start()
    try:
        by_rank = {}
        for _ in range(world_size):
            try:
                rank, status, value = results.get(timeout=timeout_s)
            except queue.Empty:
                raise TimeoutError(f"{target}: no result from a rank within {timeout_s}s") from None
            if status != "ok":
                raise RuntimeError(f"{target} failed on rank {rank}:\n{value}")
            by_rank[rank] = value
        for proc in procs:
            proc.join(timeout=timeout_s)
        return [by_rank[rank] for rank in range(world_size)]
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
