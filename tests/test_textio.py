"""Coordinate helpers: line numbers from offsets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chunkwise.textio import LineCounter, LineIndex


@given(st.text(alphabet="ab\n", max_size=200), st.lists(st.integers(0, 200), max_size=30))
def test_line_counter_agrees_with_the_line_index(text, offsets):
    """Any order of offsets (chunks with overlap go back a little) gives the index's line."""
    index, counter = LineIndex(text), LineCounter(text)
    for offset in (min(o, len(text)) for o in offsets):
        assert counter.line_of(offset) == index.line_of(offset)
