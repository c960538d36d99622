"""Serving glue: the runtime modules it reaches into."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sglang.srt.server_args_config_parser import ConfigArgumentMerger
from sglang.srt.mem_cache.mmap_allocator import alloc_mmap
from sglang.srt.managers.mm_utils import PerImageRequestInfo, get_embedding_chunk
from sglang.srt.server_args import ServerArgs

if TYPE_CHECKING:
    from sglang.srt.mem_cache.memory_pool_host import MambaPoolHost


def benchmark():
    from sglang.auto_benchmark import main  # deleted in 0.5.23, with nothing in its place

    return main


def merger(args: ServerArgs) -> ConfigArgumentMerger:
    return ConfigArgumentMerger(args), alloc_mmap, PerImageRequestInfo, get_embedding_chunk
