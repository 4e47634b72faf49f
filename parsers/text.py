"""Plain text: paragraphs, and headings only where they are unambiguous.

A heading is guessed only for a one-line paragraph that is either underlined (a line of
`=`, `-` or `~` as long as it) or starts with CHAPTER/BOOK/PART/SECTION and a number; a
one-line paragraph right after a chapter line is its subtitle ("CHAPTER I: Down the
Rabbit-Hole"). Everything else is paragraphs.

Plain text has no title of its own: the title is the file name without its extension (as
for a PDF without one), so every chunk's context and section path say which document it is
from ("paradise-lost > Book I"). A source without an extension (`<text>`, a LlamaIndex
document id) is not a file name: no title.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from chunkwise.model import ParsedDocument, Section
from chunkwise.text.textio import decode

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_NONSPACE = re.compile(r"\S")
_CHAPTER = re.compile(
    r"(?:CHAPTER|Chapter|BOOK|Book|PART|Part|SECTION|Section)\s+"
    r"(?:[IVXLCDM]+|\d+|[A-Z][a-z]+|[A-Z]+)\.?(?:[:.\s-].*)?"
)
_UNDERLINE = re.compile(r"([=\-~])\1{2,}")
_LEVEL_HEADING, _LEVEL_PARAGRAPH = 100, 10


def parse(data: bytes, *, source: str) -> ParsedDocument:
    text, warnings = decode(data, source)
    heads, paragraphs = _classify(text, _blocks(text))
    title = _title(source)
    top = (title,) if title else ()
    # A heading section runs to the next heading; the paragraphs under it carry its path.
    sections: list[Section] = []
    bounds = [h[0] for h in heads] + [len(text)]
    for (start, heading), end in zip(heads, bounds[1:]):
        sections.append(Section(start, end, _LEVEL_HEADING, "section", (*top, heading)))
    k = -1  # the last heading before the paragraph (both lists are in document order)
    for start, end in paragraphs:
        while k + 1 < len(heads) and heads[k + 1][0] <= start:
            k += 1
        path = (*top, heads[k][1]) if k >= 0 else top
        sections.append(Section(start, end, _LEVEL_PARAGRAPH, "paragraph", path))
    return ParsedDocument(source=source, format="text", text=text, sections=tuple(sections),
                          title=title, warnings=tuple(warnings), prose=True)


def _title(source: str) -> str:
    """The file name without its extension; none when the source has no extension."""
    path = PurePath(source)
    return path.stem if path.suffix else ""


def _classify(text: str, blocks: list[tuple[int, int]]
              ) -> tuple[list[tuple[int, str]], list[tuple[int, int]]]:
    """Split blocks into headings (start, title) and paragraphs (start, end)."""
    heads: list[tuple[int, str]] = []
    paragraphs: list[tuple[int, int]] = []
    i = 0
    while i < len(blocks):
        start, end = blocks[i]
        title = _heading(text, start, end)
        if title and i + 1 < len(blocks) and _is_chapter(text, start, end):
            s2, e2 = blocks[i + 1]  # a one-line subtitle right after a chapter line
            sub = text[s2:e2]
            if "\n" not in sub and len(sub) <= 60 and not sub.endswith((".", ",", ";")):
                title = f"{title}: {sub}"
                i += 1
        if title:
            heads.append((start, title))
        else:
            paragraphs.append((start, end))
        i += 1
    return heads, paragraphs


def _blocks(text: str) -> list[tuple[int, int]]:
    """Spans of the non-blank paragraphs, whitespace-trimmed at both ends."""
    out: list[tuple[int, int]] = []
    pos = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        _append_trimmed(out, text, pos, m.start())
        pos = m.end()
    _append_trimmed(out, text, pos, len(text))
    return out


def _append_trimmed(out: list, text: str, start: int, end: int) -> None:
    m = _NONSPACE.search(text, start, end)
    if m is not None:
        while text[end - 1].isspace():
            end -= 1
        out.append((m.start(), end))


def _is_chapter(text: str, start: int, end: int) -> bool:
    return text.find("\n", start, end) == -1 and bool(_CHAPTER.fullmatch(text, start, end))


def _heading(text: str, start: int, end: int) -> str | None:
    """The title if the (trimmed) block is a heading: a chapter line, or an underlined
    line. Only one- and two-line blocks qualify, so others are not even sliced."""
    newlines = text.count("\n", start, end)
    if newlines == 0 and end - start <= 80 and _CHAPTER.fullmatch(text, start, end):
        return " ".join(text[start:end].split())
    if newlines == 1:
        title, rule = (line.strip() for line in text[start:end].split("\n"))
        if title and _UNDERLINE.fullmatch(rule) and abs(len(rule) - len(title)) <= 2:
            return title
    return None
