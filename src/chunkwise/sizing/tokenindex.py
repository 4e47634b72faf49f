"""Exact token counts for many spans of one text, from one tokenizer pass over it.

The fitter asks for the size of many spans of the same document: units to merge, candidate
chunks with their context. Encoding each span again costs several passes over the document.
For the tokenizers below, one pass is enough, because they first cut the text into
*pre-tokens* and never merge tokens across a pre-token boundary:

- tiktoken (`cl100k_base`, `o200k_base`) cuts with a regex, then runs BPE inside each piece;
- WordPiece with the BERT pre-tokenizer (`minilm`) cuts at whitespace and punctuation, after
  a character-by-character normalizer.

An *anchor* is a position that is a pre-token boundary whatever text surrounds it, decided
from the characters on either side alone (see `_TIKTOKEN_ANCHOR`, `_WORDPIECE_ANCHOR`: each
match is the character before an anchor, so the anchor is `match.end()`).
Between two anchors, a span's tokens are exactly the document's tokens there, so a span costs
two binary searches plus encoding its short ends (start to first anchor, last anchor to end).
Counts are exact, never estimates; any tokenizer not proven here is counted directly.

Memory: a tokenizer given a 50 MB text at once takes gigabytes. The WordPiece index encodes
its text in blocks of about `_WORDPIECE_BLOCK` characters (`_blocks`), cut inside words where
a stretch has no whitespace (`_WordCuts`); only a long stretch with neither whitespace, ASCII
punctuation, an ideograph nor a long run of letters and digits (unspaced Thai, whose vowel
marks break runs) is still encoded whole. The tiktoken
index leaves out the long stretches without an anchor, which may be one huge piece
(`_TiktokenCounter`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from bisect import bisect_left, bisect_right
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..errors import ChunkwiseError
from ..model import embed_text
from .sizers import (TIKTOKEN_ENCODINGS, Sizer, get_sizer, hf_tokenizer, minilm_tokenizer_path,
                     tiktoken_encoding)

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

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
# WordPiece after the BERT pre-tokenizer: every word ends at whitespace, and the normalizer
# works character by character, so any position next to ASCII whitespace is an anchor.
# (Punctuation and ideographs split too: see `_wordpiece_anchor`.)
_WORDPIECE_ANCHOR = re.compile(r"[^ \t\n](?=[ \t\n])|[ \t\n]")
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
_ASCII_SPACE = re.compile(r"[ \t\n]")
_ASCII_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")
#: the ideographs the BERT normalizer isolates (`handle_chinese_chars`; checked against the
#: tokenizer in use, see `_WordCuts.checked`)
_CJK = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2A6DF),
        (0x2A700, 0x2B81F), (0x2B920, 0x2CEAF), (0x2F800, 0x2FA1F)]
_CJK_CLASS = "".join(f"{chr(a)}-{chr(b)}" for a, b in _CJK)
_PUNCT_OR_CJK = re.compile(r"[!-/:-@\[-`{-~%s]" % _CJK_CLASS)
#: a word character for WordPiece: a letter or digit in any script (`str.isalnum`), but not
#: `_` (ASCII punctuation) nor an ideograph (isolated, or in the gap of `_CJK` that a
#: tokenizer version may isolate too)
_WORD_CHAR = r"[^\W_%s\U0002B820-\U0002B91F]" % _CJK_CLASS
_WORD_RUN = re.compile(_WORD_CHAR + "*")
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
#: letters and digits whose normalizing may change them (accents, case, ligatures, Hangul
#: syllables into jamo), checked to stay inside a word (`_WordCuts.checked`)
_LETTER_PROBES = "xZ9éİßǅﬁжΩ가٣ก"
#: characters encoded at once when indexing a text with a WordPiece tokenizer
_WORDPIECE_BLOCK = 1 << 18
#: a tiktoken index leaves out the stretches between consecutive anchors that hold this many
#: characters in a row without an anchor (so every one twice as long, and some shorter)
_GAP = 1 << 19
#: tokens whose character counts are looked up at once when building a tiktoken index
_LOOKUP = 1 << 20
#: first window searched backwards for an anchor; it grows 8x until one is found
_WINDOW = 16


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


class _AnchoredCounter(SpanCounter):
    """Counts from one document pass: `ends[k]` is the `str` index where the document's token
    k ends (rounded up to a whole character; ascending), so the tokens between anchors
    p <= q are those ending in (p, q]."""

    indexed = True

    def __init__(self, sizer: Sizer, text: str, ends: np.ndarray, anchor: re.Pattern,
                 inner: Callable[[str], int]) -> None:
        super().__init__(sizer, text)
        self._anchor, self._inner = anchor, inner
        self._last = _last_match(anchor)
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
        window = _WINDOW
        while True:
            start = max(lo, b - window)
            m = self._last.match(text, start, b)
            if m is not None:
                return m.end()
            if start == lo:
                return lo
            window *= 8


@lru_cache(maxsize=None)
def _last_match(anchor: re.Pattern) -> re.Pattern:
    """A pattern whose match from `start` ends at the last anchor in [start, endpos): a
    greedy `.*` runs to the end and backs off to the last place `anchor` matches (each of
    its matches is one character, so that is the last match `finditer` would give)."""
    return re.compile(f"(?s:.*)(?:{anchor.pattern})", anchor.flags)


class _TiktokenCounter(_AnchoredCounter):
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


def span_counter(sizer: Sizer, text: str) -> SpanCounter:
    """The best exact counter for `sizer` over `text`: an index built from one pass when the
    tokenizer is one of those proven above, else direct counting."""
    build = _index_builder(sizer)
    return build(sizer, text) if build is not None else SpanCounter(sizer, text)


def one_pass_anchor(sizer: Sizer) -> re.Pattern | None:
    """The anchors of the index `span_counter` builds for `sizer`: a regex whose every match
    ends where a text can be cut and encoded in pieces with the tokens of one pass. None
    when no anchors are proven for it."""
    build = _index_builder(sizer)
    return None if build is None else build.anchor  # type: ignore[attr-defined]


def _index_builder(sizer: Sizer) -> Callable[[Sizer, str], SpanCounter] | None:
    try:
        if get_sizer(sizer.name) is not sizer:  # a custom sizer that reuses a name
            return None
    except ChunkwiseError:
        return None
    if sizer.name in TIKTOKEN_ENCODINGS:
        return _tiktoken_builder(sizer.name)
    if sizer.name == "minilm":
        return _wordpiece_builder(str(minilm_tokenizer_path()))
    if sizer.name.endswith(".json"):
        return _wordpiece_builder(sizer.name)
    return None


@lru_cache(maxsize=4)
def _tiktoken_builder(name: str) -> Callable[[Sizer, str], SpanCounter] | None:
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
    last, window = _last_match(anchor), _WINDOW
    while True:
        start = max(floor, x - window)
        m = last.match(text, max(start - 1, 0), x + 1)  # the match ends at the anchor
        if m is not None:
            return m.end()
        if start == floor:
            return floor
        window *= 8


@lru_cache(maxsize=4)
def _wordpiece_builder(path: str) -> Callable[[Sizer, str], SpanCounter] | None:
    spec = _bert_wordpiece_spec(Path(path))
    if spec is None:
        return None
    import numpy as np

    tok = hf_tokenizer(path)
    cuts = _WordCuts.for_spec(spec)
    if cuts is not None:
        cuts = cuts.checked(tok)
    unk = tok.token_to_id(spec["model"].get("unk_token", "[UNK]"))

    def inner(s: str) -> int:
        return len(tok.encode(s, add_special_tokens=False).ids) if s else 0

    def token_ends(text: str, block: int = _WORDPIECE_BLOCK) -> np.ndarray:
        """End (`str` index) of every token of `text`, encoding it in blocks of about `block`
        characters so that memory stays bounded (the tokenizer's per-token objects for a
        50 MB text take gigabytes): cut at ASCII whitespace (an anchor: the same tokens as
        one pass), or where there is none, at the cuts of `_WordCuts`."""
        try:
            return _ends(text, block, cuts)
        except _NotOnePass:  # never seen: the tokenizer breaks a rule `_WordCuts` relies on
            log.warning("%s: a cut inside a word did not give the tokens of one pass; "
                        "indexing with cuts at whitespace only", path)
            return _ends(text, block, None)

    def _ends(text: str, block: int, cuts: _WordCuts | None) -> np.ndarray:
        parts = [np.zeros(0, dtype=np.int64)]
        for a, b, inside in _blocks(text, block, cuts):
            encoding = tok.encode(text[a:b], add_special_tokens=False)
            offsets = encoding.offsets
            if inside:  # the block's last token is the long word's [UNK] cut short: the
                # next block starts with the real one, which ends where the word ends
                if not offsets or offsets[-1][1] != b - a or encoding.ids[-1] != unk:
                    raise _NotOnePass
                offsets = offsets[:-1]
            if offsets:
                parts.append(np.array(offsets, dtype=np.int64)[:, 1] + a)
        return np.concatenate(parts)

    anchor = _wordpiece_anchor(spec.get("added_tokens") or [], cuts)

    def build(sizer: Sizer, text: str) -> SpanCounter:
        return _AnchoredCounter(sizer, text, token_ends(text), anchor, inner)

    build.token_ends = token_ends  # type: ignore[attr-defined]  (tests compare it to one pass)
    build.anchor = anchor  # type: ignore[attr-defined]
    return build


def _wordpiece_anchor(added: list[dict], cuts: _WordCuts | None) -> re.Pattern:
    """The anchors of a WordPiece index: each side of ASCII whitespace and, when no added
    token is matched on normalized text (`cuts` is not None), each side of a character the
    pre-tokenizer makes a word of its own and no added token can span: ASCII punctuation
    that none holds (not the brackets of `[SEP]`), and an isolated ideograph unless one
    holds an ideograph or is matched only as a whole word (`single_word`: an ideograph is
    a word character, punctuation is not). So spans of base64, minified code or unspaced
    Chinese count from the index instead of being encoded."""
    if cuts is None:
        return _WORDPIECE_ANCHOR
    held = set().union(*(t.get("content", "") for t in added))
    breaks = re.escape(" \t\n" + "".join(
        c for c in map(chr, range(0x21, 0x7F)) if _ASCII_PUNCT.match(c) and c not in held))
    if cuts.isolates_cjk and not any(
            t.get("single_word") or _CJK_CHAR.search(t.get("content", "")) for t in added):
        breaks += _CJK_CLASS
    return re.compile(f"[{breaks}]|[\\s\\S](?=[{breaks}])")


class _NotOnePass(Exception):
    """A block's tokens are not those `_WordCuts` promised."""


class _WordCuts:
    """Where a WordPiece text may be cut inside a stretch without ASCII whitespace (a 50 MB
    run of letters, minified code, base64, a line of unspaced CJK), so that blocks stay
    bounded there too:

    - after ASCII punctuation, or an ideograph when the normalizer isolates them
      (`handle_chinese_chars`): the BERT pre-tokenizer makes each such character a word of
      its own, so a word ends there, unless an added token such as `[SEP]` spans the cut
      (or, for a `single_word` one, ends or starts there);
    - inside a run of letters and digits of any script (`_WORD_CHAR`), `margin` of them on
      each side: whatever the cut, the word around it is longer than
      `max_input_chars_per_word`, so WordPiece makes it one `[UNK]` that ends where the word
      ends. The block before the cut ends with an `[UNK]` of its own, cut short (dropped:
      the cut is *inside* a word); the block after it starts with the real one.

    Both hold for the BERT normalizer too: it maps punctuation to itself, and a letter or
    digit to one or more letters or digits (accents stripped, lowercased), never to
    whitespace, punctuation or nothing, so a run's word only grows. Added tokens are matched
    on the raw text before that, so the rules are kept only when none is matched on
    normalized text, and the second only when each one holds a character that is not a
    letter or digit (none fits inside a run). Each cut inside a word is checked as it is
    used (`token_ends`).
    """

    def __init__(self, added: list[str], max_word: int, runs: bool, touch: bool,
                 cjk: bool = False) -> None:
        #: (content, characters before and after a cut where it may not occur)
        self.added = [(t, len(t) - 1 + touch) for t in added if t]
        self.margin = max_word + max((len(t) for t in added), default=0) + 1
        self._after = _PUNCT_OR_CJK if cjk else _ASCII_PUNCT
        self._run: re.Pattern | None = None
        if runs:
            self._runs_of(_WORD_CHAR)

    def _runs_of(self, char: str) -> None:
        """Cut inside runs of `char` (a character class)."""
        self._run = re.compile(r"(?<!%s)%s{%d}" % (char, char, 2 * self.margin))
        self._in_word = re.compile(char + "*")

    @classmethod
    def for_spec(cls, spec: dict) -> _WordCuts | None:
        added = spec.get("added_tokens") or []
        if any(t.get("normalized") for t in added):
            return None
        contents = [t.get("content", "") for t in added]
        runs = all(not _WORD_RUN.fullmatch(c) for c in contents)
        norm = spec.get("normalizer") or {}
        return cls(contents, int(spec["model"].get("max_input_chars_per_word", 100)), runs,
                   any(t.get("single_word") for t in added),
                   norm.get("type") == "BertNormalizer" and norm.get("handle_chinese_chars", True))

    def checked(self, tok) -> _WordCuts:
        """These cuts, without the rules that the tokenizer in use breaks on probes: the
        first and last ideograph of each range in `_CJK` (isolated by the Rust code of the
        `tokenizers` version installed, not by `tokenizer.json`), and letters of several
        scripts (each stays in the word around it)."""
        def words(s: str) -> list[str]:
            if tok.normalizer is not None:
                s = tok.normalizer.normalize_str(s)
            return [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(s)]

        if self._after is _PUNCT_OR_CJK and not all(
                len(words(f"a{chr(c)}b")) == 3 for r in _CJK for c in r):
            self._after = _ASCII_PUNCT
        if self._run is not None and not all(
                len(words(f"a{c}b")) == 1 for c in _LETTER_PROBES):
            self._runs_of("[0-9A-Za-z]")
        return self

    @property
    def isolates_cjk(self) -> bool:
        """Whether the tokenizer makes each ideograph of `_CJK` a word of its own."""
        return self._after is _PUNCT_OR_CJK

    def first(self, text: str, start: int, lo: int, hi: int) -> tuple[int, bool] | None:
        """The first cut in `[lo, hi]` of a block that starts at `start` (< `lo`), and
        whether it is inside a word (then at least `margin` after `start`, so that the
        block's part of the word is a long word too)."""
        after = self._after_punctuation(text, lo, hi)
        if self._run is not None:
            run = self._in_run(text, max(lo, start + self.margin),
                               hi if after is None else after - 1)
            if run is not None:
                return run, True
        return None if after is None else (after, False)

    def _after_punctuation(self, text: str, lo: int, hi: int) -> int | None:
        for m in self._after.finditer(text, lo - 1, hi):
            p = m.end()
            if not any(t in text[max(0, p - k):p + k] for t, k in self.added):
                return p
        return None

    def _in_run(self, text: str, lo: int, hi: int) -> int | None:
        """The first position in `[lo, hi]` with `margin` letters or digits on either
        side."""
        k = self.margin
        if lo > hi:
            return None
        if k <= lo <= len(text) - k and self._in_word.fullmatch(text, lo - k, lo + k):
            return lo  # inside a run that starts before the runs searched for below
        m = self._run.search(text, max(lo - k, 0), hi + k)  # type: ignore[union-attr]
        return m.start() + k if m is not None else None


def _blocks(text: str, size: int, cuts: _WordCuts | None = None
            ) -> Iterator[tuple[int, int, bool]]:
    """Consecutive spans `(a, b, inside)` of about `size` characters tiling `text`, each cut
    just before an ASCII whitespace character (searched back to half the size, then
    forwards), or where there is none, at the first of `cuts` (`inside`: inside a word)."""
    a, n = 0, len(text)
    while a < n:
        b = a + size
        if b >= n:
            yield a, n, False
            return
        lo = a + max(1, size // 2)
        cut = max(text.rfind(" ", lo, b), text.rfind("\n", lo, b), text.rfind("\t", lo, b))
        inside = False
        if cut <= a:
            cut, inside = _next_cut(text, a, lo, size, cuts)
        yield a, cut, inside
        a = cut


def _next_cut(text: str, start: int, lo: int, size: int, cuts: _WordCuts | None
              ) -> tuple[int, bool]:
    """The first cut at or after `lo` of the block that starts at `start`: before ASCII
    whitespace or one of `cuts`, searched in windows of `size` (a search to the end of a
    long text at every block would be quadratic)."""
    n = len(text)
    while lo < n:
        hi = min(lo + size, n)
        m = _ASCII_SPACE.search(text, lo, hi)
        found = (m.start(), False) if m is not None else None
        if cuts is not None:
            other = cuts.first(text, start, lo, m.start() - 1 if m is not None else hi)
            found = other or found
        if found is not None:
            return found
        lo = hi
    return n, False


def _bert_wordpiece_spec(path: Path) -> dict | None:
    """The parsed `tokenizer.json` if it is a BERT normalizer (or none), BERT pre-tokenizer,
    WordPiece, and added tokens that neither hold nor strip whitespace: the setup the
    WordPiece anchors are proven for; else None."""
    try:
        spec = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    norm, pre, model = spec.get("normalizer"), spec.get("pre_tokenizer"), spec.get("model")
    added = spec.get("added_tokens") or []
    ok = ((norm is None or norm.get("type") == "BertNormalizer")
          and (pre or {}).get("type") == "BertPreTokenizer"
          and (model or {}).get("type") == "WordPiece"
          and all(not any(c.isspace() for c in t.get("content", " "))
                  and not t.get("lstrip") and not t.get("rstrip") for t in added))
    return spec if ok else None
