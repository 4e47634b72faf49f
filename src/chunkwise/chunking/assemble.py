"""Chunk assembly after planning: the one seam between the planned pieces of a strategy and
the `Chunk`s a chunker returns.

A chunk's room (`max_tokens - reserve`) is shared once per chunker (`Shares`): the planning
budget the fitter packs to, the overlap added after planning (unless the strategy's chunks
overlap by themselves), the situating sentence of contextual enrichment. Each pass here
reads its limit from those shares, so all of them hold the budget the fitter used:

1. overlap (`with_overlap`): each piece extended back over the tail of the one before it,
   up to `overlap` tokens, within the planning budget and the overlap's share;
2. the situating sentence (`chunkwise.chunking.contextual`), within the whole room;
3. views (`chunkwise.chunking.views`), within the whole room (table chunks re-cut into
   rows whose views fit), not with overlap: an overlapping chunk embeds its text;

then ids, lines, pages and parent sections. The section tree is the one the strategy
planned over (built once per document by the chunker).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Callable

from ..model import Chunk, ParsedDocument, embed_text
from ..sizing.sizers import MAX_CHARS_PER_TOKEN, Sizer
from ..sizing.tokenindex import embed_counter
from ..text.textio import LineCounter
from .structure import Node, chain_of, parent_of
from .views import apply_views
from .work import Budget, Piece


@dataclass(frozen=True, slots=True)
class Shares:
    """How the room of a chunk's embed text is shared, computed once per chunker."""

    #: tokens a chunk's embed text may take (`max_tokens - reserve`)
    room: int
    #: tokens reserved for the situating sentence (0 without contextual enrichment)
    sentence: int = 0
    #: tokens reserved for the overlap added after planning (0: none, or the strategy's
    #: chunks overlap by themselves)
    overlap: int = 0

    @property
    def planned(self) -> int:
        """The fitter's budget: the room less the sentence's and the overlap's shares."""
        return self.room - self.sentence - self.overlap

    @property
    def overlapped(self) -> int:
        """What a chunk extended by the overlap may take: the room less the sentence's share."""
        return self.room - self.sentence

    def budget(self) -> Budget:
        return Budget.of(self.planned)


class Assembly:
    """The passes after planning and the making of `Chunk`s, for one chunker's options."""

    def __init__(self, sizer: Sizer, shares: Shares, *, overlap: int, contextualizer: Any,
                 views: frozenset[str], fingerprint: str, table_rows: str = "row") -> None:
        self.sizer, self.count, self.shares, self.overlap = sizer, sizer.count, shares, overlap
        self.contextualizer, self.fingerprint = contextualizer, fingerprint
        # with overlap, chunks embed their text: a view renders whole rows, and re-cutting an
        # extended chunk into rows would put a row fragment before its predecessor's start
        self.views = frozenset() if overlap else views
        self.table_rows = table_rows

    def chunks(self, doc: ParsedDocument, root: Node, pieces: list[Piece]) -> list[Chunk]:
        """The chunks of a document's planned `pieces` (planned over the tree `root`)."""
        shares = self.shares
        if shares.overlap:
            pieces = with_overlap(pieces, doc.text, self.count, self.overlap, shares.overlapped)
        if self.contextualizer is not None:
            pieces = self.contextualizer.apply(doc, pieces, shares.room)
        viewed = apply_views(doc, pieces, self.count, shares.room, self.views, root,
                             self.table_rows, embed_counter(self.sizer) if self.views else None)
        lines = LineCounter(doc.text) if doc.line_numbers else None
        doc_meta = dict(doc.meta)
        starts: dict[int, list[int]] = {}
        return [self._chunk(doc, p, lines, doc_meta, view, root, starts) for p, view in viewed]

    def _chunk(self, doc: ParsedDocument, p: Piece, lines: LineCounter | None,
               doc_meta: dict, view: str | None, root: Node,
               starts: dict[int, list[int]]) -> Chunk:
        text = doc.text[p.start:p.end]
        digest = hashlib.blake2b(digest_size=16)
        digest.update(f"{doc.source}\0{p.start}\0{p.end}\0{self.fingerprint}\0".encode())
        digest.update(text.encode("utf-8", "surrogatepass"))
        meta = {**doc_meta, **p.meta}
        if lines is not None:
            meta["line_start"] = lines.line_of(p.start) + 1
            meta["line_end"] = lines.line_of(p.end - 1) + 1
        page_start, page_end = doc.pages_of(p.start, p.end)
        owner = parent_of(chain_of(root, p.start, p.end, starts), p.start, p.end, doc.text)
        parent = (parent_id(doc.source, owner.start, owner.end), owner.start, owner.end,
                  owner.path)
        return Chunk(id=digest.hexdigest(), source=doc.source, format=doc.format, text=text,
                     start=p.start, end=p.end, context=p.context, section_path=p.owner.path,
                     page_start=page_start, page_end=page_end, kinds=p.kinds, tokens=p.tokens,
                     meta=meta, view=view or "", parent=parent)


def parent_id(source: str, start: int, end: int) -> str:
    """The id of the section [start, end) of `source`: every chunk inside it records it."""
    return hashlib.blake2b(f"{source}\0{start}\0{end}".encode("utf-8", "surrogatepass"),
                           digest_size=8).hexdigest()


def with_overlap(pieces: list[Piece], text: str, count: Callable[[str], int], overlap: int,
                 budget: int) -> list[Piece]:
    """Extend each chunk back over the tail of the previous one, up to `overlap` tokens,
    starting at a word; the budget still holds (it was reserved while packing), and so does
    the cap on characters (`MAX_CHARS_PER_TOKEN`)."""
    out = pieces[:1]
    for prev, cur in zip(pieces, pieces[1:]):
        first = max(prev.start, cur.end - budget * MAX_CHARS_PER_TOKEN)
        starts = [i for i in range(first + 1, cur.start)
                  if not text[i].isspace() and text[i - 1].isspace()]
        if first == prev.start:
            starts.insert(0, first)
        lo, hi = 0, len(starts)  # smallest index whose tail fits the overlap and the budget
        while lo < hi:
            mid = (lo + hi) // 2
            s = starts[mid]
            if count(text[s:cur.start].rstrip()) <= overlap and \
                    count(embed_text(cur.context, text[s:cur.end])) <= budget:
                hi = mid
            else:
                lo = mid + 1
        if lo < len(starts) and starts[lo] < cur.start:
            s = starts[lo]
            cur = replace(cur, start=s, tokens=count(embed_text(cur.context, text[s:cur.end])))
        out.append(cur)
    return out
