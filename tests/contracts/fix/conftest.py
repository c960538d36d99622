"""The fix tests' trees: the shared `tree` fixture over NAMED_TREE."""

from __future__ import annotations

import pytest

from tests.contracts.conftest import BASE_CONFIG, NAMED_TREE


@pytest.fixture
def tree(tree):
    """The shared `tree` fixture over NAMED_TREE: each new home binds what the fixtures import."""

    def make(extra=None, config=BASE_CONFIG, base=None):
        return tree(extra, config, NAMED_TREE if base is None else base)

    return make
