"""Plain text: paragraphs, and headings only where they are unambiguous.

A heading is guessed only for a one-line paragraph that is either underlined (a line of
`=`, `-` or `~` as long as it) or starts with CHAPTER/BOOK/PART/SECTION and a number; a
one-line paragraph right after a chapter line is its subtitle ("CHAPTER I: Down the
Rabbit-Hole"). Everything else is paragraphs.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from chunkwise.model import ParsedDocument, Section
from chunkwise.textio import decode

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_CHAPTER = re.compile(
    r"(?:CHAPTER|Chapter|BOOK|Book|PART|Part|SECTION|Section)\s+"
    r"(?:[IVXLCDM]+|\d+|[A-Z][a-z]+|[A-Z]+)\.?(?:[:.\s-].*)?"
)
_UNDERLINE = re.compile(r"([=\-~])\1{2,}")
_LEVEL_HEADING, _LEVEL_PARAGRAPH = 100, 10


def parse(data: bytes, *, source: str) -> ParsedDocument:
    text, warnings = decode(data, source)
    blocks = _blocks(text)
    sections: list[Section] = []
    heads: list[tuple[int, str]] = []  # (start, title) of each heading section
    i = 0
    while i < len(blocks):
        start, end = blocks[i]
        title = _heading(text[start:end])
        if title and _is_chapter(text[start:end]) and i + 1 < len(blocks):
            s2, e2 = blocks[i + 1]
            sub = text[s2:e2].strip()
            if "\n" not in sub and len(sub) <= 60 and not sub.endswith((".", ",", ";")):
                title = f"{title}: {sub}"
                i += 1
        if title:
            heads.append((start, title))
        else:
            sections.append(Section(start, end, _LEVEL_PARAGRAPH, "paragraph"))
        i += 1
    # A heading section runs to the next heading; its paragraphs carry its path.
    bounds = [h[0] for h in heads] + [len(text)]
    paths = []
    for (start, title), end in zip(heads, bounds[1:]):
        sections.append(Section(start, end, _LEVEL_HEADING, "section", (title,)))
        paths.append((start, end, (title,)))
    if paths:
        starts = [p[0] for p in paths]
        sections = [_with_path(s, paths, starts) for s in sections]
    return ParsedDocument(source=source, format="text", text=text, sections=tuple(sections),
                          warnings=tuple(warnings))


def _blocks(text: str) -> list[tuple[int, int]]:
    """Spans of the non-blank paragraphs, whitespace-trimmed at both ends."""
    out = []
    pos = 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        _append_trimmed(out, text, pos, m.start())
        pos = m.end()
    _append_trimmed(out, text, pos, len(text))
    return out


def _append_trimmed(out: list, text: str, start: int, end: int) -> None:
    chunk = text[start:end]
    stripped = chunk.strip()
    if stripped:
        lead = len(chunk) - len(chunk.lstrip())
        out.append((start + lead, start + lead + len(stripped)))


def _is_chapter(block: str) -> bool:
    return "\n" not in block.strip() and bool(_CHAPTER.fullmatch(block.strip()))


def _heading(block: str) -> str | None:
    lines = block.strip().split("\n")
    if len(lines) == 1 and len(lines[0]) <= 80 and _CHAPTER.fullmatch(lines[0].strip()):
        return " ".join(lines[0].split())
    if len(lines) == 2:
        title, rule = lines[0].strip(), lines[1].strip()
        if title and _UNDERLINE.fullmatch(rule) and abs(len(rule) - len(title)) <= 2:
            return title
    return None


def _with_path(s: Section, paths: list[tuple[int, int, tuple[str, ...]]],
               starts: list[int]) -> Section:
    i = bisect_right(starts, s.start) - 1
    if i >= 0 and s.kind != "section":
        return Section(s.start, s.end, s.level, s.kind, paths[i][2])
    return s
