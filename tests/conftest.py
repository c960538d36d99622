"""Test-wide setup. Triton's CPU interpreter must be switched on before Triton is first imported."""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
