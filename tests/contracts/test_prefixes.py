"""`PrefixIndex` answers as a scan of every prefix answers, for any names and prefixes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from contracts.prefixes import PrefixIndex

# Few distinct parts, so that names and prefixes nest, share heads and part often.
_PART = st.sampled_from(["a", "b", "c", "ab", "a_b", "x1"])
_NAME = st.lists(_PART, min_size=1, max_size=5).map(".".join)


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@settings(max_examples=1500, deadline=None)
@given(prefixes=st.lists(_NAME, min_size=1, max_size=8), modules=st.lists(_NAME, min_size=1, max_size=10))
def test_lookups_by_name_parts_answer_as_a_scan_of_every_prefix(prefixes, modules):
    index = PrefixIndex(prefixes)
    for module in modules + modules:  # (twice: the memoized answer too)
        holding = [p for p in prefixes if _under(module, p)]
        assert index.first_of(module) == (holding[0] if holding else None)
        assert index.longest_of(module) == (max(holding, key=len) if holding else None)
        assert index.is_ancestor(module) == any(p.startswith(module + ".") for p in prefixes)
