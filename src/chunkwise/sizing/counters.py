"""Span counters: exact token counts of many spans of one text, memoised by span.
`SpanCounter` encodes each span it is asked about; `AnchoredCounter` counts from one pass
over the text, given where each of its tokens ends and the text's *anchors* (positions that
are a pre-token boundary whatever text surrounds them; see `chunkwise.sizing.tokenindex`).
The indexes that build them for tiktoken and WordPiece are `tiktoken_index` and
`wordpiece_index`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Sequence

from ..model import embed_text
from .sizers import Sizer

if TYPE_CHECKING:
    import numpy as np

#: first window searched backwards for an anchor; it grows 8x until one is found
WINDOW = 16


class SpanCounter:
    """Token counts of spans of one text, as `sizer.count` gives them (overhead included),
    memoised by span. This base class encodes every span it is asked about."""

    #: True when `span` costs no pass over the span (an index built from one document pass)
    indexed = False

    def __init__(self, sizer: Sizer, text: str) -> None:
        self.sizer, self.text = sizer, text
        self._memo: dict[tuple[int, int], int] = {}
        self._contexts: dict[str, int] = {}

    def span(self, a: int, b: int) -> int:
        """Exact count of `text[a:b]`."""
        n = self._memo.get((a, b))
        if n is None:
            n = self._memo[(a, b)] = self._count(a, b)
        return n

    def spans(self, pairs: Sequence[tuple[int, int]]) -> list[int]:
        """Exact counts of several spans (one batch call to the tokenizer)."""
        counts = self.sizer.count_many([self.text[a:b] for a, b in pairs])
        self._memo.update(zip(pairs, counts))
        return counts

    def estimates(self, bounds: Sequence[int], *, enough: int | None = None) -> list[int]:
        """Counts, used only to choose what to try, of the tiles between consecutive
        `bounds`; here the exact counts of the tiles without surrounding whitespace. An
        index may estimate a tile at any lower bound of its estimate that is over `enough`
        (the caller treats all such tiles alike: too big)."""
        text = self.text
        return self.sizer.count_many([text[a:b].strip() for a, b in zip(bounds, bounds[1:])])

    def context_cost(self, context: str) -> int:
        """Tokens that `context + "\\n\\n"` adds before a text."""
        cost = self._contexts.get(context)
        if cost is None:
            cost = self.sizer.count(embed_text(context, "")) - self.sizer.overhead if context else 0
            self._contexts[context] = cost
        return cost

    def embed(self, context: str, a: int, b: int) -> int:
        """Exact count of the embed text `context + "\\n\\n" + text[a:b]` (just the text
        when the context is empty)."""
        if not context:
            return self.span(a, b)
        return self.sizer.count(embed_text(context, self.text[a:b]))

    def _count(self, a: int, b: int) -> int:
        return self.sizer.count(self.text[a:b])


class AnchoredCounter(SpanCounter):
    """Counts from one document pass: `ends[k]` is the `str` index where the document's token
    k ends (rounded up to a whole character; ascending), so the tokens between anchors
    p <= q are those ending in (p, q]."""

    indexed = True

    def __init__(self, sizer: Sizer, text: str, ends: np.ndarray, anchor: re.Pattern,
                 inner: Callable[[str], int]) -> None:
        super().__init__(sizer, text)
        self._anchor, self._inner = anchor, inner
        self._last = last_match(anchor)
        self._ending_by = ends.searchsorted  # (p, "right") -> tokens ending at or before p

    def _between(self, a: int, b: int) -> int:
        """The document's tokens ending in (a, b]."""
        ending_by = self._ending_by
        return int(ending_by(b, "right") - ending_by(a, "right"))

    def spans(self, pairs: Sequence[tuple[int, int]]) -> list[int]:
        return [self.span(a, b) for a, b in pairs]

    def estimates(self, bounds: Sequence[int], *, enough: int | None = None) -> list[int]:
        """The document's tokens ending in each tile, in one vectorised search. The
        estimates of consecutive tiles add up to the estimate of the run, which is its
        count give or take the tokens cut at its ends and the whitespace after it."""
        ending = self._ending_by(bounds, "right")
        return (ending[1:] - ending[:-1] + self.sizer.overhead).tolist()

    def embed(self, context: str, a: int, b: int) -> int:
        if not context:
            return self.span(a, b)
        if self._joins(a):
            return self.context_cost(context) + self.span(a, b)
        # The text's first characters may share a piece with the "\n\n" before them (a
        # chunk that starts with `///`): encode them with the context, up to the text's
        # first anchor after `a`, which the context cannot move; the rest counts as a span.
        n = len(self.text)
        m = self._anchor.search(self.text, a, min(b + 1, n))
        if m is None or m.end() > b:
            return super().embed(context, a, b)
        p = m.end()
        return self._inner(embed_text(context, self.text[a:p])) + self.span(p, b)

    def _joins(self, a: int) -> bool:
        """Whether the start of `text[a:]` is an anchor right after `"\\n\\n"`."""
        return True

    def _count(self, a: int, b: int) -> int:
        text = self.text
        p = self._first_anchor(a, b) if a < b else None
        if p is None:
            return self.sizer.count(text[a:b])
        q = self._last_anchor(p, b)
        return (self._inner(text[a:p]) + self._between(p, q) + self._inner(text[q:b])
                + self.sizer.overhead)

    def _first_anchor(self, a: int, b: int) -> int | None:
        """The first anchor in [a, b] (the text's ends are anchors too)."""
        if a == 0:
            return 0
        n = len(self.text)
        # the match is the character before the anchor; its lookahead needs the one after
        m = self._anchor.search(self.text, a - 1, min(b + 1, n))
        if m is not None and m.end() <= b:
            return m.end()
        return b if b == n else None

    def _last_anchor(self, lo: int, b: int) -> int:
        """The last anchor in [lo, b], where `lo` is one: searched backwards from b in
        windows that grow until one holds an anchor."""
        text = self.text
        if b == len(text) or self._anchor.match(text, b - 1, b + 1):
            return b
        window = WINDOW
        while True:
            start = max(lo, b - window)
            m = self._last.match(text, start, b)
            if m is not None:
                return m.end()
            if start == lo:
                return lo
            window *= 8


@lru_cache(maxsize=None)
def last_match(anchor: re.Pattern) -> re.Pattern:
    """A pattern whose match from `start` ends at the last anchor in [start, endpos): a
    greedy `.*` runs to the end and backs off to the last place `anchor` matches (each of
    its matches is one character, so that is the last match `finditer` would give)."""
    return re.compile(f"(?s:.*)(?:{anchor.pattern})", anchor.flags)

