"""Device and capability detection, and the one answer to "can Triton run here?".

Triton runs on a CUDA device, or on the CPU through its interpreter when the environment sets
`TRITON_INTERPRET=1` (the tests do, in `tests/conftest.py`, before Triton is imported).
"""

from __future__ import annotations

import functools
import importlib.util
import os

__all__ = [
    "copy_kernel_device",
    "cuda_capability",
    "has_cuda",
    "interpreter_enabled",
    "triton_available",
    "use_triton",
]


def interpreter_enabled() -> bool:
    """True when Triton's CPU interpreter is switched on (`TRITON_INTERPRET=1`)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.lru_cache(maxsize=None)
def triton_available() -> bool:
    """True when the `triton` package is installed (it is not imported here)."""
    return importlib.util.find_spec("triton") is not None


def has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def cuda_capability() -> tuple[int, int] | None:
    """(major, minor) of the current CUDA device, or None without one."""
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability()


def use_triton(*tensors) -> bool:
    """Whether a Triton kernel can run on these tensors.

    On CUDA tensors: Triton must be installed. On CPU tensors: the interpreter must be on.
    Mixed devices never run Triton (the public functions reject them before this is asked).
    """
    if not triton_available():
        return False
    devices = {t.device.type for t in tensors}
    if devices == {"cuda"}:
        return True
    if devices == {"cpu"}:
        return interpreter_enabled()
    return False


def copy_kernel_device(*tensors):
    """The device to launch a copy kernel on that may cross devices, or None for the torch path.

    All on one CUDA device, or CUDA plus pinned host tensors (the GPU addresses pinned memory
    directly): that CUDA device. All on the CPU: the CPU when the interpreter is on.
    """
    import torch

    devices = {t.device for t in tensors}
    cuda = {d for d in devices if d.type == "cuda"}
    if not cuda:
        return torch.device("cpu") if use_triton(*tensors) else None
    if len(cuda) > 1 or any(d.type not in ("cpu", "cuda") for d in devices):
        return None
    if any(t.device.type == "cpu" and not t.is_pinned() for t in tensors):
        return None
    return cuda.pop()
