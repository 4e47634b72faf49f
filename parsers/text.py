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
    title = _title(source)
    top = (title,) if title else ()
    heads, paragraphs = _classify(text, _blocks(text), top)
    # A heading section runs to the next heading; the paragraphs under it carry its path
    # (the same tuple: the heading bounds check looks at each path object once).
    bounds = [h[0] for h in heads] + [len(text)]
    sections = [Section(start, end, _LEVEL_HEADING, "section", path)
                for (start, path), end in zip(heads, bounds[1:])]
    sections += [Section(start, end, _LEVEL_PARAGRAPH, "paragraph", path)
                 for start, end, path in paragraphs]
    return ParsedDocument(source=source, format="text", text=text, sections=tuple(sections),
                          title=title, warnings=tuple(warnings), prose=True)


def _title(source: str) -> str:
    """The file name without its extension; none when the source has no extension."""
    path = PurePath(source)
    return path.stem if path.suffix else ""


def _classify(text: str, blocks: list[tuple[int, int]], top: tuple[str, ...]
              ) -> tuple[list[tuple[int, tuple[str, ...]]], list[tuple[int, int, tuple[str, ...]]]]:
    """Split blocks into headings (start, path) and paragraphs (start, end, path), where a
    path is `top` and the title of the last heading before (one tuple per heading)."""
    heads: list[tuple[int, tuple[str, ...]]] = []
    paragraphs: list[tuple[int, int, tuple[str, ...]]] = []
    path = top
    i = 0
    while i < len(blocks):
        start, end = blocks[i]
        i += 1
        # a heading starts as a chapter line does or ends as an underline does (`_heading`)
        title = _heading(text, start, end) \
            if text[start] in "CBPS" or text[end - 1] in "=-~" else None
        if not title:
            paragraphs.append((start, end, path))
            continue
        if i < len(blocks) and _is_chapter(text, start, end):
            s2, e2 = blocks[i]  # a one-line subtitle right after a chapter line
            sub = text[s2:e2]
            if "\n" not in sub and len(sub) <= 60 and not sub.endswith((".", ",", ";")):
                title = f"{title}: {sub}"
                i += 1
        path = (*top, title)
        heads.append((start, path))
    return heads, paragraphs


def _blocks(text: str) -> list[tuple[int, int]]:
    """Spans of the non-blank paragraphs, whitespace-trimmed at both ends."""
    bounds = [0]
    for m in _PARAGRAPH_BREAK.finditer(text):
        bounds += m.span()
    bounds.append(len(text))
    out: list[tuple[int, int]] = []
    for start, end in zip(bounds[::2], bounds[1::2]):
        # A break takes all the whitespace after it, so a block mostly starts and ends
        # with a character that is not: it is its own trimmed span.
        if start < end and not text[start].isspace() and not text[end - 1].isspace():
            out.append((start, end))
        else:
            _append_trimmed(out, text, start, end)
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
    line. Only a line that starts as a chapter word does (C, B, P, S), or a two-line block
    whose last character can end an underline (the block is trimmed: it is the rule's
    last), is sliced and matched; a paragraph costs one `find`."""
    newline = text.find("\n", start, end)
    if newline < 0:
        if end - start <= 80 and text[start] in "CBPS" and _CHAPTER.fullmatch(text, start, end):
            return " ".join(text[start:end].split())
        return None
    if text[end - 1] in "=-~" and text.find("\n", newline + 1, end) < 0:
        title, rule = text[start:newline].strip(), text[newline + 1:end].strip()
        if title and _UNDERLINE.fullmatch(rule) and abs(len(rule) - len(title)) <= 2:
            return title
    return None
