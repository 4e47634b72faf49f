"""Decoding (UTF-8 with stray bytes, 8-bit text, declared encodings, binary data) and the
coordinate helpers: line numbers from offsets; the names of files in chunks."""

from __future__ import annotations

import gzip
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.errors import ParseError
from chunkwise.parsers import html
from chunkwise.text.textio import LineCounter, declared_encoding, decode, looks_binary, source_name
from lines import LineIndex


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


# -- decoding --------------------------------------------------------------------------------
_UTF8_TEXT = "Ünïcödé naïve café — “quoted” 日本語 ok.\n" * 40


def test_a_stray_byte_in_utf8_is_replaced_alone():
    """One bad byte in a UTF-8 file (with real multi-byte characters) costs that byte, not
    the whole file as cp1252 mojibake; the warning counts them and gives the first."""
    good = _UTF8_TEXT.encode()
    at = good.index(b"ok.", 500)
    data = good[:at] + b"\x92" + good[at:]
    text, warnings = decode(data, "x.txt")
    assert text == good[:at].decode() + "\ufffd" + good[at:].decode()
    assert warnings == [f"invalid UTF-8: 1 byte(s) replaced, the first at byte {at}"]
    # a character cut at the end (two of its three bytes), and a U+FFFD the file holds
    text, warnings = decode(good + "\ufffd".encode() + "語".encode()[:2], "x.txt")
    assert text == _UTF8_TEXT + "\ufffd\ufffd"
    assert warnings == [f"invalid UTF-8: 2 byte(s) replaced, the first at byte {len(good) + 3}"]


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=60), st.lists(st.integers(0, 60), max_size=6),
       st.sampled_from([b"\xff", b"\xc0", b"\x80", b"\xe2\x82"]))
def test_utf8_with_fewer_bad_bytes_than_sequences_keeps_every_good_character(text, spots, bad):
    """Bad bytes put between the characters of any text: read back as the text with one
    U+FFFD at each, when the valid multi-byte sequences outnumber the bad bytes; else as
    8-bit text (cp1252 or latin-1), every byte kept."""
    spots = sorted({min(s, len(text)) for s in spots})
    parts, last = [], 0
    for s in spots:
        parts += [text[last:s].encode(), bad]
        last = s
    data = b"".join(parts) + text[last:].encode()
    sequences = sum(1 for c in text if c >= "\x80")
    invalid = len(spots) * len(bad)
    if not spots or looks_binary(data) or "\r" in text:
        return
    out, warnings = decode(data, "x.txt")
    if sequences > invalid:
        expected = "\ufffd".join(text[a:b] for a, b in zip([0, *spots], [*spots, len(text)]))
        assert out == expected
        assert warnings[0].startswith(f"invalid UTF-8: {invalid} byte(s) replaced")
    else:
        assert out in (data.decode("cp1252", "replace"), data.decode("latin-1"))
        assert "decoded as" in warnings[0]


def test_8bit_text_stays_cp1252():
    """No valid multi-byte sequence (or no more of them than bad bytes): cp1252, every
    byte kept."""
    assert decode(b"It\x92s plain ASCII with one smart quote.\n", "a.txt") == (
        "It’s plain ASCII with one smart quote.\n",
        ["invalid UTF-8 at byte 2; decoded as cp1252"])
    assert decode("café naïve".encode("latin-1"), "a.txt")[0] == "café naïve"
    mixed = "naïve,1\n".encode() + "café,2\n".encode("latin-1")  # one of each: a tie
    assert decode(mixed, "a.csv")[0] == "naÃ¯ve,1\ncafé,2\n"
    assert decode(b"\x81\x8d", "a.txt") == ("\x81\x8d", [
        "invalid UTF-8 at byte 0; decoded as latin-1"])


@pytest.mark.parametrize("declared", ["utf-16", "utf-16le", "UTF-16BE", "utf-32", "utf-32le"])
def test_a_declared_utf16_or_utf32_is_read_as_utf8(declared):
    """A declaration found by reading the bytes as ASCII cannot be UTF-16/32 (the HTML
    standard reads such a `<meta charset>` as UTF-8): 8-bit bytes once became CJK garbage
    without a warning."""
    page = f'<html><head><meta charset="{declared}"></head><body><p>Café au lait</p>'
    doc = html.parse(page.encode("latin-1") + b"</body></html>", source="a.html")
    assert doc.text == "Café au lait"
    assert any("invalid UTF-8" in w and "cp1252" in w for w in doc.warnings)
    stray = page.replace("Café", "Café “crème” naïve").encode() + b"\x92 ok</p>"
    doc = html.parse(stray, source="a.html")
    assert doc.text == "Café “crème” naïve au lait\n\n\ufffd ok"
    assert any("1 byte(s) replaced" in w for w in doc.warnings)
    text, _ = decode(f"# coding: {declared}\nx = 'é'\n".encode("latin-1"), "x.py",
                     declared=declared_encoding(f"# coding: {declared}\n".encode(), "python"))
    assert text == f"# coding: {declared}\nx = 'é'\n"


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


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="\r\n a\u00e9\u2028\ud800\U0001f600", max_size=40))
def test_normalize_newlines_is_the_two_replaces(text):
    """`normalize_newlines` runs the universal-newline decoder: on any text (a CR at its end,
    CR CR LF, characters of one, two and four bytes, a lone surrogate), what the two plain
    replaces ("\\r\\n" first, then lone "\\r") give."""
    from chunkwise.text.textio import normalize_newlines

    assert normalize_newlines(text) == text.replace("\r\n", "\n").replace("\r", "\n")
