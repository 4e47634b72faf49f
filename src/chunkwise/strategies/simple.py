"""The baselines that ignore document structure: `fixed`, `sentence` and `recursive`.

All three cut the whole canonical text; a chunk's context is the heading path of the section
it starts in (empty for code), counted in the budget like every context.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

from ..fitter import Piece
from ..model import ParsedDocument
from ..boundaries import token_starts
from ..sizing import Sizer
from ..splitting import LINES, PARAGRAPHS, SENTENCES, WORDS
from .base import SectionIndex, SpanPacker, split_chars, trim


def plan_sentence(doc: ParsedDocument, sizer: Sizer, budget: int) -> list[Piece]:
    """Whole sentences packed to the budget; a sentence that does not fit alone is cut at
    words (characters for a single overlong word)."""
    index = SectionIndex(doc, sizer, budget)
    return SpanPacker(index, [SENTENCES, WORDS]).pack(0, len(doc.text))


def plan_recursive(doc: ParsedDocument, sizer: Sizer, budget: int) -> list[Piece]:
    """The classic recursive splitter: blank lines, lines, sentence ends, spaces, characters."""
    index = SectionIndex(doc, sizer, budget)
    return SpanPacker(index, [PARAGRAPHS, LINES, SENTENCES, WORDS]).pack(0, len(doc.text))


def plan_fixed(doc: ParsedDocument, sizer: Sizer, tokenizer: str, budget: int,
               overlap: int = 0) -> list[Piece]:
    """Windows of as many tokens as fit the budget (context included), cut at token
    boundaries; each window starts `overlap` tokens before the previous one ends. A token
    longer than the window's room in characters (see `MAX_CHARS_PER_TOKEN`) is cut at
    characters.

    Token boundaries come from tokenizing the whole text once (in blocks cut where that
    gives the same tokens, see `token_starts`); a window is then counted
    exactly on its own embed text (a substring may tokenize differently at its edges) and
    shortened by the excess, token boundary by token boundary, until it fits.
    """
    text = doc.text
    index = SectionIndex(doc, sizer, budget)
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
        room = max(1, budget - sizer.overhead - ccost)
        u = min(t + room, last, bisect_right(cuts, a + index.max_chars, t + 1) - 1)
        while u > t:
            s, e = trim(text, a, cuts[u])
            if s >= e:
                break
            tokens = index.count(ctx, s, e)
            if tokens <= budget:
                out.append(index.piece(s, e, ctx, tokens))
                break
            u = max(t, u - max(1, (tokens - budget) // 2))
        if u <= t:  # not even one token fits (beside the context, in max_chars): characters
            out.extend(split_chars(index, a, cuts[t + 1]))
            u = t + 1
        if u >= last:
            break
        t = max(t + 1, u - overlap)
    return out
