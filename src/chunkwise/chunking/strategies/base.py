"""The frame of the strategies that do not follow the section tree (see `chunkwise.chunking.fitter`).

`SectionIndex` says where an offset sits in the tiled section tree, so that a chunk cut without
regard to structure still gets the heading path of the section it starts in as its context
(counted in the budget), its section path, kinds and metadata. The packing itself is the
fitter's (`Fitter.fit_span`, `Fitter.fit_chars`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Sequence

from ..fitter import (Budget, Candidate, Contexts, Fitter, Piece, Policy, Unit, held_kinds,
                      lead_context, merge_meta)
from ...model import ParsedDocument, embed_text
from ...sizing.sizers import Sizer
from ...text.splitting import Splitter, trim
from ..structure import Node


class SectionIndex:
    """The leaves of a document's tiled section tree, by offset (the leaves tile the text): a
    `Frame` for `Fitter.fit_span`. Units are the trimmed pieces between cuts, each counted on
    its own; they need not tile the text (whitespace between them is in none)."""

    def __init__(self, doc: ParsedDocument, sizer: Sizer, budget: Budget, *,
                 root: Node) -> None:
        self.doc, self.text, self.sizer, self.budget = doc, doc.text, sizer, budget
        self.contexts = Contexts(sizer, budget, at_line=False)
        self.chains: list[tuple[Node, ...]] = []
        todo = [(root, (root,))]
        while todo:  # depth first, in document order
            node, chain = todo.pop()
            if node.children:
                todo.extend((c, (*chain, c)) for c in reversed(node.children))
            else:
                self.chains.append(chain)
        self.starts = [chain[-1].start for chain in self.chains]

    def chain_at(self, pos: int) -> tuple[Node, ...]:
        """Root-to-leaf chain of the leaf holding offset `pos`."""
        return self.chains[max(0, bisect_right(self.starts, pos) - 1)]

    def context_at(self, pos: int) -> tuple[str, int]:
        """Context of a chunk starting at `pos` (the document's own context line, then the
        heading path of its section) and its token cost inside an embed text."""
        return self.contexts.of(lead_context(self.doc, self.chain_at(pos)[-1].path))

    def children(self, node: Node) -> list[Unit]:
        """The units of a node's children, each counted on its own (the baselines pack
        spans, not sections: `Fitter.fit` uses the tree's own frame)."""
        kids = node.children
        ests = self.estimates([*(c.start for c in kids), node.end])
        return [Unit(c.start, c.end, est, c, 0) for c, est in zip(kids, ests)]

    def units(self, bounds: Sequence[int], level: int) -> list[Unit]:
        text = self.text
        spans = [trim(text, s, e) for s, e in zip(bounds, bounds[1:])]
        spans = [(s, e) for s, e in spans if s < e]
        ests = self.sizer.count_many([text[s:e] for s, e in spans])
        return [Unit(s, e, c, None, level) for (s, e), c in zip(spans, ests)]

    def estimates(self, bounds: Sequence[int]) -> list[int]:
        """The counts of the tiles between consecutive `bounds`, each trimmed (one per tile,
        a blank one included, which `units` leaves out)."""
        text = self.text
        return self.sizer.count_many([text[s:e] for s, e in
                                      (trim(text, a, b) for a, b in zip(bounds, bounds[1:]))])

    def context(self, chain: tuple[Node, ...], start: int) -> tuple[str, int]:
        return self.context_at(start)

    def count(self, context: str, a: int, b: int) -> int:
        return self.sizer.count(embed_text(context, self.text[a:b]))

    def piece(self, cand: Candidate, run: list[Node]) -> Piece:
        """A planned chunk for the span; kinds and metadata from the leaves it touches."""
        lo = max(0, bisect_right(self.starts, cand.start) - 1)
        hi = max(lo + 1, bisect_left(self.starts, cand.end))
        chains = self.chains[lo:hi]
        kinds = held_kinds(node.kind for chain in chains for node in chain)
        meta = merge_meta(chains[0], [chain[-1] for chain in chains[1:]])
        return Piece(cand.start, cand.end, cand.context, cand.tokens, chains[0][-1],
                     kinds, meta)


def pack_span(index: SectionIndex, levels: Sequence[Splitter], a: int, b: int) -> list[Piece]:
    """`text[a:b]` packed greedily over a hierarchy of splitters: the units of one level are
    merged while they fit, a unit that does not fit alone is split at the next level,
    characters last."""
    policy = Policy(levels=levels, marks=False, balance=False)
    return Fitter(index.sizer, index.budget, policy=policy).fit_span(index, a, b)
