"""Binary data and the coordinate helpers: line numbers from offsets; the names of files in
chunks."""

from __future__ import annotations

import gzip
import os
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chunkwise.errors import ParseError
from chunkwise.textio import LineCounter, LineIndex, decode, looks_binary, source_name


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


# -- binary data -------------------------------------------------------------------------------
def test_binary_data_past_the_first_8_kb_is_found():
    """A log with a compressed archive appended (random-looking bytes, about 10% control
    bytes, few NULs) was chunked as text: the check now covers every 8 KB."""
    text = b"2024-01-01 12:00:00 INFO all is well\n" * 2000
    blob = gzip.compress(random.Random(0).randbytes(20_000))
    assert b"\x00" not in text[:8192] and not looks_binary(text)
    assert looks_binary(text + blob) and looks_binary(text + blob + text)
    with pytest.raises(ParseError, match="binary"):
        decode(text + blob, "app.log")


def test_stray_nuls_past_the_first_8_kb_and_utf16_are_text():
    text = b"a,b\n" + b"1,2\n" * 5000
    assert not looks_binary(text + b"x\x00y\n" + text)  # CSV drops a few stray NULs
    assert looks_binary(b"a\x00b\n" + text)  # ... but a NUL in the first 8 KB is binary
    utf16 = ("é" * 10 + "plain text\n" * 3000).encode("utf-16")
    assert not looks_binary(utf16) and decode(utf16, "u.txt")[0].endswith("plain text\n")
