"""Shared machinery of the strategies that do not follow the section tree.

`SectionIndex` says where an offset sits in the tiled section tree, so that a chunk cut without
regard to structure still gets the heading path of the section it starts in as its context
(counted in the budget), its section path, kinds and metadata. `SpanPacker` is the classic
greedy packer over a hierarchy of splitters (the units of one level are merged while they
fit; a unit that does not fit alone is split at the next level; characters last), with the
same exact-count discipline as the fitter: estimates first, every emitted chunk counted
exactly on its embed text, shrunk when over.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import chain as concat, pairwise
from typing import Sequence

from ..fitter import NEAR_MISS, Fitter, Piece, lead_context, trim
from ..model import ParsedDocument
from ..sizing import MAX_CHARS_PER_TOKEN, Sizer, limit_tokens
from ..splitting import Splitter, iter_cuts, longest_fit
from ..structure import Node, build_tree

_STRUCTURAL = frozenset({"document", "section"})
#: a span longer than this (in characters) is split a window of at least as many characters
#: at a time (`SpanPacker._plan_long`)
_WINDOW = 1 << 18


class SectionIndex:
    """The leaves of a document's tiled section tree, by offset (the leaves tile the text)."""

    def __init__(self, doc: ParsedDocument, sizer: Sizer, budget: int, *,
                 root: Node | None = None, context_share: float = 0.5) -> None:
        self.doc, self.text, self.sizer, self.budget = doc, doc.text, sizer, budget
        self.max_chars = budget * MAX_CHARS_PER_TOKEN
        self.context_limit = max(1, int(budget * context_share))
        self.chains: list[tuple[Node, ...]] = []
        root = root or build_tree(doc)
        todo = [(root, (root,))]
        while todo:  # depth first, in document order
            node, chain = todo.pop()
            if node.children:
                todo.extend((c, (*chain, c)) for c in reversed(node.children))
            else:
                self.chains.append(chain)
        self.starts = [chain[-1].start for chain in self.chains]
        self._ctx: dict[tuple[str, ...], tuple[str, int]] = {}

    def chain_at(self, pos: int) -> tuple[Node, ...]:
        """Root-to-leaf chain of the leaf holding offset `pos`."""
        return self.chains[max(0, bisect_right(self.starts, pos) - 1)]

    def context_at(self, pos: int) -> tuple[str, int]:
        """Context of a chunk starting at `pos` (the document's own context line, then the
        heading path of its section; at most half the budget) and its token cost inside an
        embed text."""
        path = self.chain_at(pos)[-1].path if self.doc.path_in_context else ()
        hit = self._ctx.get(path)
        if hit is None:
            ctx = limit_tokens("\n".join(lead_context(self.doc, path)), self.sizer.count,
                               self.context_limit)
            cost = self.sizer.count(ctx + "\n\n") - self.sizer.overhead if ctx else 0
            hit = self._ctx[path] = (ctx, cost)
        return hit

    def count(self, context: str, a: int, b: int) -> int:
        """Exact tokens of the embed text of `text[a:b]` under `context`."""
        text = self.text[a:b]
        return self.sizer.count(f"{context}\n\n{text}" if context else text)

    def piece(self, a: int, b: int, context: str, tokens: int) -> Piece:
        """A planned chunk for the span; kinds and metadata from the leaves it touches."""
        lo = max(0, bisect_right(self.starts, a) - 1)
        hi = max(lo + 1, bisect_left(self.starts, b))
        chains = self.chains[lo:hi]
        kinds: dict[str, None] = {}
        for chain in chains:
            for node in chain:
                if node.kind not in _STRUCTURAL:
                    kinds[node.kind] = None
        meta = Fitter._meta(chains[0], [chain[-1] for chain in chains[1:]])
        return Piece(a, b, context, tokens, chains[0][-1], tuple(kinds), meta)


class SpanPacker:
    """Greedy packing of a span to the budget over a hierarchy of splitters."""

    def __init__(self, index: SectionIndex, levels: Sequence[Splitter]) -> None:
        self.index, self.text, self.levels = index, index.text, tuple(levels)
        self.sizer, self.budget = index.sizer, index.budget

    def pack(self, a: int, b: int, level: int = 0) -> list[Piece]:
        out: list[Piece] = []
        stack: list[tuple] = [("split", a, b, level)]
        while stack:  # explicit stack: no recursion limit on pathological text
            item = stack.pop()
            if item[0] == "emit":
                out.append(item[1])
            else:
                stack.extend(reversed(self._plan(*item[1:])))
        return out

    def _plan(self, a: int, b: int, level: int) -> list[tuple]:
        a, b = trim(self.text, a, b)
        if a >= b:
            return []
        while level < len(self.levels):
            if b - a > _WINDOW:
                plan = self._plan_long(a, b, level)
                if plan is not None:
                    return plan
                level += 1
                continue
            cuts = self.levels[level](self.text, a, b)
            if cuts:
                bounds = [a, *cuts, b]
                spans = [trim(self.text, s, e) for s, e in zip(bounds, bounds[1:])]
                spans = [(s, e) for s, e in spans if s < e]
                ests = self.sizer.count_many([self.text[s:e] for s, e in spans])
                return self._greedy(spans, ests, level, len(spans))[0]
            level += 1
        return [("emit", p) for p in split_chars(self.index, a, b)]

    def _plan_long(self, a: int, b: int, level: int) -> list[tuple] | None:
        """`_plan` at `level` for a span longer than `_WINDOW` (None when the level has no
        cut there), in bounded memory: a 50 MB line of words has 8 million units, and their
        texts counted in one batch took gigabytes. The units are made, counted and packed a
        window at a time. A chunk that starts at unit i looks at the units up to `max_chars`
        after it, so a window packs only the chunks that start more than that before its
        end, and the next window starts where they stopped: the chunks of all at once."""
        text, max_chars = self.text, self.index.max_chars
        cuts = iter_cuts(self.levels[level], text, a, b)
        first = next(cuts, None)
        if first is None:
            return None
        tiles = (trim(text, s, e) for s, e in pairwise(concat((a, first), cuts, (b,))))
        todo = ((s, e) for s, e in tiles if s < e)
        plan: list[tuple] = []
        spans: list[tuple[int, int]] = []
        ests: list[int] = []
        span, pending = max(_WINDOW, 2 * max_chars), True
        while pending or spans:  # pending: tiles may follow
            new: list[tuple[int, int]] = []
            for s, e in todo:
                new.append((s, e))
                if e - (spans or new)[0][0] >= span:
                    break
            else:
                pending = False
            if not spans and not new:  # (tiles of whitespace only)
                break
            spans += new
            ests += self.sizer.count_many([text[s:e] for s, e in new])
            last = spans[-1][1]
            upto = len(spans) if not pending else \
                bisect_left(spans, (last - max_chars,))  # starts before last - max_chars
            part, i = self._greedy(spans, ests, level, upto)
            plan += part
            del spans[:i], ests[:i]
        return plan

    def _greedy(self, spans: list[tuple[int, int]], ests: list[int], level: int,
                upto: int) -> tuple[list[tuple], int]:
        """The chunks that start before unit `upto`, and the unit after the last."""
        plan: list[tuple] = []
        over, budget, index = self.sizer.overhead, self.budget, self.index
        i, n = 0, len(spans)
        while i < upto:
            ctx, ccost = index.context_at(spans[i][0])
            total, j, reach = over + ccost, i, spans[i][0] + index.max_chars
            while j < n and total + ests[j] - over <= budget and spans[j][1] <= reach:
                total += ests[j] - over
                j += 1
            if j == i and ests[i] - over + ccost <= budget * NEAR_MISS:
                j = i + 1  # estimates run high: count before splitting a near miss
            tokens = 0
            while j > i:
                tokens = index.count(ctx, spans[i][0], spans[j - 1][1])
                if tokens <= budget and spans[j - 1][1] <= reach:
                    break
                # too big: drop at least one unit, and as many as the excess needs
                excess, j = tokens - budget - (ests[j - 1] - over), j - 1
                while j > i + 1 and excess > 0:
                    j -= 1
                    excess -= ests[j] - over
            if j == i:  # the unit alone does not fit: split it at the next level
                plan.append(("split", spans[i][0], spans[i][1], level + 1))
                i += 1
                continue
            while (j < n and tokens + ests[j] - over <= budget  # estimates run high
                   and spans[j][1] <= reach):
                more = index.count(ctx, spans[i][0], spans[j][1])
                if more > budget:
                    break
                tokens, j = more, j + 1
            plan.append(("emit", index.piece(spans[i][0], spans[j - 1][1], ctx, tokens)))
            i = j
        return plan, i


def split_chars(index: SectionIndex, a: int, b: int) -> list[Piece]:
    """Last resort: successive longest prefixes that fit, searched on exact counts
    (`longest_fit`). A prefix of one character always fits (the context takes at most half
    the budget)."""
    out: list[Piece] = []
    text, budget = index.text, index.budget
    guess = budget * 4
    while a < b:
        ctx, _ = index.context_at(a)
        lo = longest_fit(lambda end: index.count(ctx, a, end) <= budget,
                         a + 1, min(b, a + index.max_chars), a + guess)
        guess = lo - a
        s, e = trim(text, a, lo)
        if s < e:
            tokens = index.count(ctx, s, e)
            if tokens > budget:  # a single odd character next to a long context
                ctx, tokens = "", index.count("", s, e)
            out.append(index.piece(s, e, ctx, tokens))
        a = trim(text, lo, b)[0] if lo < b else b
    return out
