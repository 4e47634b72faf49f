"""Small-to-big retrieval: return the section a retrieved chunk belongs to, cut to a token
budget, instead of the bare chunk (`chunkwise query --expand section`).

Every chunk records its parent section (`Chunk.parent`; in Chroma metadata `parent_id`,
`parent_start`, `parent_end`, `parent_path`): the smallest section that holds more than the
chunk. The section's text is rebuilt from the stored chunks that lie inside its span (with
overlap 0 they tile it, invariant 3; some may record a smaller parent of their own), in
order, starting from the retrieved chunk and adding the next chunk, then the previous one,
and so on, while the sum of their tokens stays within the budget. The stored texts are exact slices of the canonical text, so the expanded span is
exact too; the whitespace between two chunks is written as one newline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["Member", "Expanded", "ParentSection", "expand", "parent_sections", "section_of"]

#: tokens an expanded section may take by default (twice minilm's window)
DEFAULT_EXPAND_TOKENS = 512


@dataclass(frozen=True, slots=True)
class Member:
    """A stored chunk of a section: its span, token count and text."""

    start: int
    end: int
    tokens: int
    text: str = ""


@dataclass(frozen=True, slots=True)
class Expanded:
    """The part of a section returned for a retrieved chunk."""

    start: int
    end: int
    tokens: int
    text: str
    chunks: int


def expand(members: Sequence[Member], hit: int, budget: int) -> Expanded:
    """The run of `members` (one section's chunks, sorted by start) around `members[hit]`
    whose tokens fit `budget`: the hit itself always, then its neighbours, next first."""
    lo = hi = hit
    total = members[hit].tokens
    grew = True
    while grew:
        grew = False
        if hi + 1 < len(members) and total + members[hi + 1].tokens <= budget:
            hi += 1
            total += members[hi].tokens
            grew = True
        if lo > 0 and total + members[lo - 1].tokens <= budget:
            lo -= 1
            total += members[lo].tokens
            grew = True
    run = members[lo:hi + 1]
    return Expanded(run[0].start, run[-1].end, total, "\n".join(m.text for m in run), len(run))


def section_of(meta: Mapping[str, Any]) -> tuple[str, int, int] | None:
    """(parent id, start, end) from a stored chunk's metadata, or None (chunks stored before
    chunker version 18 have no parent)."""
    pid = meta.get("parent_id")
    if pid is None:
        return None
    return str(pid), int(meta.get("parent_start", 0)), int(meta.get("parent_end", 0))


@dataclass(frozen=True, slots=True)
class ParentSection:
    """A section that chunks point to as their parent, with its children in order: what an
    integration needs to build PARENT/CHILD links (LlamaIndex's `NodeRelationship.PARENT`
    and `CHILD`, for `AutoMergingRetriever` and `RecursiveRetriever`)."""

    id: str
    start: int
    end: int
    section_path: tuple[str, ...]
    children: tuple[str, ...]
    """ids of the chunks inside it, by start"""


def parent_sections(chunks: Sequence[Any]) -> list[ParentSection]:
    """The parent sections of `chunks` (one document's, `Chunk.parent` set), each once, in
    the order of their first chunk. The section's text is `canonical[start:end]`."""
    order: dict[str, list[Any]] = {}
    for c in chunks:
        if c.parent is not None:
            order.setdefault(c.parent[0], []).append(c)
    return [ParentSection(pid, kids[0].parent[1], kids[0].parent[2], tuple(kids[0].parent[3]),
                          tuple(k.id for k in sorted(kids, key=lambda k: k.start)))
            for pid, kids in order.items()]
