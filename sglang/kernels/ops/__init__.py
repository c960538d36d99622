"""Operator groups. Each subpackage is one group; its `__init__` is that group's public surface.

Nothing is imported here, so the namespace can be inventoried (and linted) without torch.
"""
