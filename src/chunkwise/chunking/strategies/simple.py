"""The baselines that ignore document structure: `fixed`, `sentence` and `recursive`.

All three cut the whole canonical text; a chunk's context is the heading path of the section
it starts in (empty for code), counted in the budget like every context. `sentence` and
`recursive` are the fitter's packing over their own hierarchy of splitters.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from types import MappingProxyType
from typing import Sequence

from ...sizing.boundaries import token_starts
from ..fitter import Budget, Candidate, Fitter, Piece, Policy
from ...model import ParsedDocument
from ..structure import Node
from ...sizing.sizers import Sizer
from ...text.splitting import LINES, PARAGRAPHS, SENTENCES, WORDS, Splitter, trim
from .spec import NoOptions, Setup
from .base import SectionIndex, pack_span


class Packed:
    """`sentence` and `recursive`: the whole text packed greedily over a hierarchy of
    splitters."""

    identity, overlaps, stats = "", False, MappingProxyType({})

    def __init__(self, sizer: Sizer, levels: Sequence[Splitter]) -> None:
        self.sizer, self.levels = sizer, tuple(levels)

    def plan(self, doc: ParsedDocument, budget: Budget, root: Node) -> list[Piece]:
        return pack_span(SectionIndex(doc, self.sizer, budget, root=root), self.levels, 0,
                         len(doc.text))


def sentence(setup: Setup, options: NoOptions) -> Packed:
    """Whole sentences packed to the budget; a sentence that does not fit alone is cut at
    words (characters for a single overlong word)."""
    return Packed(setup.sizer, [SENTENCES, WORDS])


def recursive(setup: Setup, options: NoOptions) -> Packed:
    """The classic recursive splitter: blank lines, lines, sentence ends, spaces, characters."""
    return Packed(setup.sizer, [PARAGRAPHS, LINES, SENTENCES, WORDS])


class Fixed:
    """`fixed`: windows of tokens (see `plan_fixed`); they overlap by themselves."""

    identity, overlaps, stats = "", True, MappingProxyType({})

    def __init__(self, sizer: Sizer, tokenizer: str, overlap: int) -> None:
        self.sizer, self.tokenizer, self.overlap = sizer, tokenizer, overlap

    def plan(self, doc: ParsedDocument, budget: Budget, root: Node) -> list[Piece]:
        return plan_fixed(doc, self.sizer, self.tokenizer, budget, self.overlap, root=root)


def fixed(setup: Setup, options: NoOptions) -> Fixed:
    return Fixed(setup.sizer, setup.tokenizer, setup.overlap)


def plan_fixed(doc: ParsedDocument, sizer: Sizer, tokenizer: str, budget: Budget,
               overlap: int = 0, *, root: Node) -> list[Piece]:
    """Windows of as many tokens as fit the budget (context included), cut at token
    boundaries; each window starts `overlap` tokens before the previous one ends. A token
    longer than the window's room in characters (see `MAX_CHARS_PER_TOKEN`) is cut at
    characters.

    Token boundaries come from tokenizing the whole text once (in blocks cut where that
    gives the same tokens, see `token_starts`); a window is then counted
    exactly on its own embed text (a substring may tokenize differently at its edges) and
    shortened by the excess, token boundary by token boundary, until it fits.
    """
    text, limit = doc.text, budget.tokens
    index = SectionIndex(doc, sizer, budget, root=root)
    chars = Fitter(sizer, budget, policy=Policy(levels=(), marks=False, balance=False))
    starts = token_starts(tokenizer)(text)
    cuts = array("q", [0])  # (an array: a 50 MB text has some 10 million tokens)
    cuts.extend(starts[1:] if len(starts) and starts[0] == 0 else starts)
    cuts.append(len(text))
    out: list[Piece] = []
    t, last = 0, len(cuts) - 1
    while t < last:
        a = trim(text, cuts[t], len(text))[0]
        if a >= len(text):
            break
        ctx, ccost = index.context_at(a)
        room = max(1, limit - sizer.overhead - ccost)
        u = min(t + room, last, bisect_right(cuts, a + budget.max_chars, t + 1) - 1)
        while u > t:
            s, e = trim(text, a, cuts[u])
            if s >= e:
                break
            tokens = index.count(ctx, s, e)
            if tokens <= limit:
                out.append(index.piece(Candidate(s, e, ctx, tokens, ()), []))
                break
            u = max(t, u - max(1, (tokens - limit) // 2))
        if u <= t:  # not even one token fits (beside the context, in max_chars): characters
            out.extend(chars.fit_chars(index, a, cuts[t + 1]))
            u = t + 1
        if u >= last:
            break
        t = max(t + 1, u - overlap)
    return out
