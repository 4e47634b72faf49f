"""The tiktoken token index (`cl100k_base`, `o200k_base`): where each token of a text ends,
from one `encode` pass, and the anchors that let any span be counted from it.

tiktoken cuts a text into pieces with a regex, then runs BPE inside each piece, never
across two; an anchor is a position no piece crosses, whatever the text around it. A piece
without an anchor can be huge (a 50 MB run of letters is one), so the index leaves out the
long stretches without an anchor and encodes one only when a count needs it
(`_TiktokenCounter`).
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left, bisect_right
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Sequence

from .counters import WINDOW, AnchoredCounter, SpanCounter, last_match
from .sizers import Sizer, tiktoken_encoding

if TYPE_CHECKING:
    import numpy as np

# tiktoken anchors, for the pre-token regexes in `_TIKTOKEN_PATTERNS` (checked at load time).
# No alternative of those regexes matches a string holding, side by side:
#   - printable ASCII, then a space or tab (a leading space only ever *starts* a piece;
#     punctuation runs absorb newlines, never spaces);
#   - an ASCII letter or digit, then a newline;
#   - a newline, then a character that is neither whitespace nor `/` (only newlines follow a
#     newline inside a piece; o200k's punctuation runs may also take `/`).
# Only whitespace pieces look past themselves (`\s+(?!\S)`, `\s++$`). Whitespace before an
# anchor ends with a newline, and its last piece runs to that newline either way: through
# `\s++$` at the end of a text, `\s*[\r\n]` (or `\s*[\r\n]+`) when more text follows. So a
# text cut at an anchor gives the same pieces on both sides, hence the same tokens.
_TIKTOKEN_ANCHOR = re.compile(r"[!-~](?=[ \t])|[0-9A-Za-z](?=\n)|\n(?=[^\s/])")
#: the pre-token regexes the anchors above were checked against: cl100k_base as current
#: and older tiktoken releases write it, and o200k_base
_TIKTOKEN_PATTERNS = frozenset({
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]),
})
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
#: a tiktoken index leaves out the stretches between consecutive anchors that hold this many
#: characters in a row without an anchor (so every one twice as long, and some shorter)
_GAP = 1 << 19
#: tokens whose character counts are looked up at once when building a tiktoken index
_LOOKUP = 1 << 20


class _TiktokenCounter(AnchoredCounter):
    """The tiktoken index, less its *gaps*: stretches between consecutive anchors that hold
    `_GAP` characters in a row without one. tiktoken merges the bytes of one piece (a 50 MB
    run of letters is one) with work arrays of some 45 bytes a byte, so a gap is encoded
    (alone: it lies between anchors) only when a count needs it: an exact count over it, or
    an estimate its lower bound does not settle. A gap holds at least one token per
    `longest` characters (the bytes of the longest token), so a tile holding much of one
    has at least that many; when that is over `enough` the lower bound is given instead
    (a whole gap holds over 4,000 tokens: over `enough` for budgets up to some 3,000)."""

    def __init__(self, sizer: Sizer, text: str, ends: np.ndarray, anchor: re.Pattern,
                 inner: Callable[[str], int], gaps: list[tuple[int, int]],
                 fill: Callable[[str], np.ndarray], longest: int) -> None:
        super().__init__(sizer, text, ends, anchor, inner)
        self._ends, self._gaps, self._fill, self._longest = ends, gaps, fill, longest

    def _joins(self, a: int) -> bool:
        c = self.text[a:a + 1]
        return bool(c) and not c.isspace() and c != "/"

    def _between(self, a: int, b: int) -> int:
        if self._gaps:  # a gap overlapping (a, b] lies inside it: a and b are anchors
            for g0, g1 in [g for g in self._gaps if a <= g[0] and g[1] <= b]:
                self._encode_gap(g0, g1)
        return super()._between(a, b)

    def estimates(self, bounds: Sequence[int], *, enough: int | None = None) -> list[int]:
        """Tokens ending in each tile, as the base class gives them; for a tile that holds
        part of a gap, plus the least number of tokens that part can hold when that brings
        the tile over `enough`, else the gap is encoded and its tokens counted."""
        if not self._gaps or not bounds:
            return super().estimates(bounds)
        bounds = list(bounds)
        known = super().estimates(bounds)
        more = [0] * len(known)
        for g0, g1 in list(self._gaps):
            least = {}  # tile -> tokens at least in its part of (g0, g1]
            for t in range(max(0, bisect_right(bounds, g0) - 1),
                           min(len(known), bisect_left(bounds, g1))):
                part = min(bounds[t + 1], g1) - max(bounds[t], g0)
                if part > 0:
                    least[t] = part // self._longest
            if least and (enough is None or any(known[t] + more[t] + n <= enough
                                                for t, n in least.items())):
                self._encode_gap(g0, g1)
                return self.estimates(bounds, enough=enough)
            for t, n in least.items():
                more[t] += n
        return [k + m for k, m in zip(known, more)]

    def _encode_gap(self, g0: int, g1: int) -> None:
        import numpy as np

        ends, more = self._ends, self._fill(self.text[g0:g1])
        more += g0
        k = int(ends.searchsorted(g0, "right"))
        self._ends = np.concatenate([ends[:k], more, ends[k:]]) if len(ends) else more
        self._ending_by = self._ends.searchsorted
        self._gaps.remove((g0, g1))


@lru_cache(maxsize=4)
def tiktoken_builder(name: str) -> Callable[[Sizer, str], SpanCounter] | None:
    import numpy as np

    enc = tiktoken_encoding(name)
    if getattr(enc, "_pat_str", None) not in _TIKTOKEN_PATTERNS:
        return None  # a regex the anchors were not checked against: count directly
    # chars[t] = how many characters token t starts (its bytes that are not UTF-8
    # continuation bytes), so running sums give each token's end as a `str` index. Filled
    # in for the tokens documents use, when they first use them (-1 = not yet): the whole
    # vocabulary would cost about a second at every start.
    chars = np.full(enc.n_vocab, -1, dtype=np.int64)
    lock = threading.Lock()
    encode = enc.encode_ordinary

    def inner(s: str) -> int:
        return len(encode(s)) if s else 0

    longest = max(map(len, enc.token_byte_values()))

    def token_ends(text: str) -> np.ndarray:
        # With no special token allowed or disallowed this is `encode_ordinary`, as an
        # array (no Python list of ints to build).
        ids = enc.encode_to_numpy(text, allowed_special=set(), disallowed_special=())
        # The lookups go a slice at a time: numpy copies the ids it indexes with (as
        # 8-byte ints), which for all of them would take more than the ends themselves.
        ends = np.empty(len(ids), dtype=np.int64)
        for k in range(0, len(ids), _LOOKUP):
            part = ids[k:k + _LOOKUP]
            per_token = chars[part]
            if (per_token < 0).any():
                with lock:
                    for t in np.unique(part[per_token < 0]).tolist():
                        chars[t] = len(enc.decode_single_token_bytes(t).translate(
                            None, _CONTINUATION_BYTES))
                per_token = chars[part]
            ends[k:k + _LOOKUP] = per_token
        del ids
        return np.cumsum(ends, out=ends)

    def build(sizer: Sizer, text: str) -> SpanCounter:
        gaps = _gaps(text, _TIKTOKEN_ANCHOR, _GAP)
        if not gaps:
            ends = token_ends(text)
        else:  # the text between gaps, each part encoded alone (gaps lie between anchors)
            parts, pos = [np.zeros(0, dtype=np.int64)], 0
            for g0, g1 in [*gaps, (len(text), len(text))]:
                if g0 > pos:
                    parts.append(token_ends(text[pos:g0]))
                    parts[-1] += pos
                pos = g1
            ends = np.concatenate(parts)
        return _TiktokenCounter(sizer, text, ends, _TIKTOKEN_ANCHOR, inner, gaps,
                                token_ends, longest)

    build.anchor = _TIKTOKEN_ANCHOR  # type: ignore[attr-defined]
    return build


def _gaps(text: str, anchor: re.Pattern, window: int) -> list[tuple[int, int]]:
    """The stretches `(p, q)` between consecutive anchors of `text` that hold `window`
    characters in a row without an anchor, found by probing consecutive windows (so every
    stretch at least twice as long is among them)."""
    gaps: list[tuple[int, int]] = []
    x, n = 0, len(text)
    while x + window < n:
        # anchors strictly inside (x, x + window): the match is the character before one
        if anchor.search(text, x, x + window) is not None:
            x += window
            continue
        p = _last_anchor_upto(text, anchor, x, gaps[-1][1] if gaps else 0)
        m = anchor.search(text, x + window - 1)
        x = m.end() if m is not None else n
        gaps.append((p, x))
    return gaps


def _last_anchor_upto(text: str, anchor: re.Pattern, x: int, floor: int) -> int:
    """The last anchor in `[floor, x]`, where `floor` is one: searched backwards from `x` in
    windows that grow until one holds an anchor."""
    last, window = last_match(anchor), WINDOW
    while True:
        start = max(floor, x - window)
        m = last.match(text, max(start - 1, 0), x + 1)  # the match ends at the anchor
        if m is not None:
            return m.end()
        if start == floor:
            return floor
        window *= 8

