"""Plain text parser: paragraphs, unambiguous headings only."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- the parser against the plain one it replaced ------------------------------------------
def _plain_sections(text: str, top: tuple[str, ...]) -> list:
    """The sections as the parser found them before its fast paths (every block trimmed by
    a search, every block of one or two lines sliced to be asked whether it is a heading, a
    heading's path looked up for each paragraph): the reference."""
    import re

    from chunkwise.model import Section
    from chunkwise.parsers import text as parser

    blocks: list[tuple[int, int]] = []

    def heading(start: int, end: int) -> str | None:
        newlines = text.count("\n", start, end)
        if newlines == 0 and end - start <= 80 and parser._CHAPTER.fullmatch(text, start, end):
            return " ".join(text[start:end].split())
        if newlines == 1:
            title, rule = (line.strip() for line in text[start:end].split("\n"))
            if title and parser._UNDERLINE.fullmatch(rule) and abs(len(rule) - len(title)) <= 2:
                return title
        return None

    def append_trimmed(start: int, end: int) -> None:
        m = re.compile(r"\S").search(text, start, end)
        if m is not None:
            while text[end - 1].isspace():
                end -= 1
            blocks.append((m.start(), end))

    pos = 0
    for m in re.compile(r"\n[ \t]*\n\s*").finditer(text):
        append_trimmed(pos, m.start())
        pos = m.end()
    append_trimmed(pos, len(text))
    heads, paragraphs, i = [], [], 0
    while i < len(blocks):
        start, end = blocks[i]
        title = heading(start, end)
        if title and i + 1 < len(blocks) and parser._is_chapter(text, start, end):
            s2, e2 = blocks[i + 1]
            sub = text[s2:e2]
            if "\n" not in sub and len(sub) <= 60 and not sub.endswith((".", ",", ";")):
                title = f"{title}: {sub}"
                i += 1
        if title:
            heads.append((start, title))
        else:
            paragraphs.append((start, end))
        i += 1
    sections = []
    bounds = [h[0] for h in heads] + [len(text)]
    for (start, heading), end in zip(heads, bounds[1:]):
        sections.append(Section(start, end, 100, "section", (*top, heading)))
    k = -1
    for start, end in paragraphs:
        while k + 1 < len(heads) and heads[k + 1][0] <= start:
            k += 1
        path = (*top, heads[k][1]) if k >= 0 else top
        sections.append(Section(start, end, 10, "paragraph", path))
    return sections


_PIECES = ["CHAPTER", "Chapter", "BOOK", "Part", "SECTION", " I", " XII", " 3", ".", ":",
           " Down the Hole", "word", " ", "  ", "\t", "\n", "\n\n", "\n \n", "\u00a0", "\u2003",
           "\x1c", "\f", "=====", "-----", "~~~", "===", "Usage", ";", ",",
           # whole headings, so that the rules' successes are drawn often too
           "\n\nUsage\n=====\n\n", "Notes\n---", " Intro \n~~~~~~\n", "\n\nCHAPTER IV\n\n",
           "Book 2.\n\nThe Pool of Tears\n\n"]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join), st.booleans())
def test_sections_match_the_plain_parser(text, titled):
    """Blocks, headings (chapter lines, their subtitles, underlined lines) and paths as the
    plain parser gives them, on text made of the pieces every rule looks at."""
    source = "book.txt" if titled else "<text>"
    doc = parse_bytes(text.encode(), source=source, format="text")
    assert list(doc.sections) == _plain_sections(doc.text, ("book",) if titled else ())


def _assert_books_match_the_plain_parser(paths) -> None:
    for path in paths:
        doc = parse_bytes(path.read_bytes(), source=str(path), format="text")
        assert list(doc.sections) == _plain_sections(doc.text, (path.stem,)), path.name
        assert len(doc.sections) > 30


def test_sections_match_the_plain_parser_on_a_real_book():
    _assert_books_match_the_plain_parser([FIXTURES / "alice-in-wonderland.txt"])


def test_sections_match_the_plain_parser_on_the_corpus_books():
    from conftest import corpus_files

    _assert_books_match_the_plain_parser(
        [p for p in corpus_files("text") if p.suffix == ".txt"])
