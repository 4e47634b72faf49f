"""Plain text parser: paragraphs, unambiguous headings only."""

from __future__ import annotations

from chunkwise import chunk_file, chunk_text
from chunkwise.chunking.api import parse_bytes

from conftest import FIXTURES


def test_chapters_become_headings_with_subtitle():
    chunks = chunk_file(FIXTURES / "alice-in-wonderland.txt")
    paths = {c.section_path for c in chunks}
    assert ("alice-in-wonderland", "CHAPTER I: Down the Rabbit-Hole") in paths
    assert ("alice-in-wonderland", "CHAPTER XII: Alice's Evidence") in paths
    assert len([p for p in paths if len(p) == 2]) == 12


def test_the_file_name_is_the_title_and_heads_every_context():
    text = "Usage\n=====\n\n" + "Run the tool on a folder of notes. " * 3
    doc = parse_bytes(text.encode(), source="docs/field-notes.txt")
    assert doc.title == "field-notes"
    (chunk,) = chunk_text(text, source="docs/field-notes.txt")
    assert chunk.section_path == ("field-notes", "Usage")
    assert chunk.context == "field-notes > Usage"
    assert chunk_text(text)[0].section_path == ("Usage",)  # no file, no title


def test_no_guessed_headings_in_ordinary_prose():
    text = "Short line\n\nAnother paragraph here.\n\nChapter and verse are fine words.\n"
    doc = parse_bytes(text.encode(), source="a.txt")
    assert all(s.kind == "paragraph" for s in doc.sections)


def test_underlined_heading():
    body = "body text " * 12
    text = f"Introduction\n============\n\n{body}\n\nUsage\n-----\n\nMore {body}\n"
    chunks = chunk_text(text, max_tokens=48)
    assert [c.section_path for c in chunks] == [("Introduction",), ("Usage",)]


def test_crlf_and_bom_are_normalised():
    doc = parse_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n\r\nthree\r", source="a.txt")
    assert doc.text == "one\ntwo\n\nthree\n"
