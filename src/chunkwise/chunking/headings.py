"""Heading paths within bounds: every heading in a section path is cut to `HEADING_MAX`
characters and a path to `PATH_MAX_DEPTH` headings, once per document after parsing.

A heading's full text stays in the canonical text (and so in the chunk that holds it); what
is bounded is the copy every chunk carries in `section_path`, its context line and its
stored metadata. Without the bound, output grows with the square of a heading's length: a
200 KB Markdown heading repeated in each of its 600 chunks wrote 126 MB of JSONL, a 5 MB
one tens of gigabytes.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import ParsedDocument

#: the most characters of one heading kept in a path (cut at a word, then "…")
HEADING_MAX = 200
#: the most headings kept in a path: the first (the title) and the innermost ones
PATH_MAX_DEPTH = 16
ELLIPSIS = "…"


def cut_heading(heading: str, limit: int = HEADING_MAX) -> str:
    """`heading` if it is at most `limit` characters, else its longest prefix of whole words
    that fits with an ellipsis after it (a single longer word is cut inside)."""
    if len(heading) <= limit:
        return heading
    head = heading[:limit - len(ELLIPSIS) + 1]
    cut = head.rstrip().rfind(" ")
    head = head[:cut] if cut > limit // 2 else head[:limit - len(ELLIPSIS)]
    return head.rstrip() + ELLIPSIS


def bound_path(path: tuple[str, ...]) -> tuple[str, ...]:
    """`path` with each heading cut (`cut_heading`) and, past `PATH_MAX_DEPTH` headings, the
    ones after the first replaced by a single "…" up to the innermost that still fit."""
    if len(path) > PATH_MAX_DEPTH:
        path = (path[0], ELLIPSIS, *path[len(path) - PATH_MAX_DEPTH + 2:])
    if all(len(h) <= HEADING_MAX for h in path):
        return path
    return tuple(cut_heading(h) for h in path)


def bound_document(doc: ParsedDocument) -> ParsedDocument:
    """`doc` itself when every path is within bounds (the usual case: checked once per
    distinct path object), else a copy whose sections and title are bounded."""
    done: dict[int, tuple[str, ...]] = {}
    changed = len(doc.title) > HEADING_MAX
    for s in doc.sections:
        key = id(s.path)
        if key not in done:
            bounded = bound_path(s.path)
            done[key] = bounded
            changed = changed or bounded != s.path
    if not changed:
        return doc
    sections = tuple(s if done[id(s.path)] == s.path else replace(s, path=done[id(s.path)])
                     for s in doc.sections)
    return replace(doc, sections=sections, title=cut_heading(doc.title))
