"""Coordinate helpers: line numbers from offsets; the names of files in chunks."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from chunkwise.textio import LineCounter, LineIndex, source_name


@given(st.text(alphabet="ab\n", max_size=200), st.lists(st.integers(0, 200), max_size=30))
def test_line_counter_agrees_with_the_line_index(text, offsets):
    """Any order of offsets (chunks with overlap go back a little) gives the index's line."""
    index, counter = LineIndex(text), LineCounter(text)
    for offset in (min(o, len(text)) for o in offsets):
        assert counter.line_of(offset) == index.line_of(offset)


def test_source_name_escapes_what_is_not_utf8():
    assert source_name("docs/é.md") == "docs/é.md"
    assert source_name(os.fsdecode(b"docs/caf\xe9.txt")) == "docs/caf\\xe9.txt"
    assert source_name(b"caf\xe9.txt") == "caf\\xe9.txt"
    assert source_name("a\ud800b") == "a\\ud800b"  # not from a file name: escaped as is
    for name in ("docs/é.md", os.fsdecode(b"caf\xe9"), "a\ud800b"):
        source_name(name).encode("utf-8")  # always encodable
