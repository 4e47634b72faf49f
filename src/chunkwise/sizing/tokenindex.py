"""Exact token counts for many spans of one text, from one tokenizer pass over it.

The fitter asks for the size of many spans of the same document: units to merge, candidate
chunks with their context. Encoding each span again costs several passes over the document.
For the tokenizers below, one pass is enough, because they first cut the text into
*pre-tokens* and never merge tokens across a pre-token boundary:

- tiktoken (`cl100k_base`, `o200k_base`) cuts with a regex, then runs BPE inside each piece;
- WordPiece with the BERT pre-tokenizer (`minilm`) cuts at whitespace and punctuation, after
  a character-by-character normalizer.

An *anchor* is a position that is a pre-token boundary whatever text surrounds it, decided
from the characters on either side alone (see the anchor patterns of `tiktoken_index` and
`wordpiece_index`: each match is the character before an anchor, so the anchor is
`match.end()`).
Between two anchors, a span's tokens are exactly the document's tokens there, so a span costs
two binary searches plus encoding its short ends (start to first anchor, last anchor to end).
Counts are exact, never estimates; any tokenizer not proven here is counted directly.

This module picks the index for a sizer; the counters are `counters`, the tiktoken index
(its anchors, and the long stretches without one it leaves out) `tiktoken_index`, the
WordPiece index (its anchors, and the blocks it encodes a long text in) `wordpiece_index`.
"""

from __future__ import annotations

import re
from typing import Callable

from ..errors import ChunkwiseError
from ..model import embed_text
from .counters import SpanCounter
from .sizers import TIKTOKEN_ENCODINGS, Sizer, get_sizer, minilm_tokenizer_path
from .tiktoken_index import tiktoken_builder
from .wordpiece_index import wordpiece_builder

__all__ = ["SpanCounter", "embed_counter", "one_pass_anchor", "span_counter"]


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


def embed_counter(sizer: Sizer) -> Callable[[str, str], int]:
    """`(context, body) -> sizer.count(embed_text(context, body))`, exact, for many bodies
    under few contexts (the rows of a table): where the body's start is an anchor after the
    blank line (`one_pass_anchor`), the context's share is counted once and the body alone.
    Memoises by context: make one per document."""
    anchor = one_pass_anchor(sizer)
    count, overhead = sizer.count, sizer.overhead
    shares: dict[str, int] = {}

    def embed(context: str, body: str) -> int:
        if not context or anchor is None or not body:
            return count(embed_text(context, body))
        m = anchor.match("\n" + body[0])
        if m is None or m.end() != 1:  # the body's start may join the blank line's piece
            return count(embed_text(context, body))
        share = shares.get(context)
        if share is None:
            share = shares[context] = count(embed_text(context, "")) - overhead
        return share + count(body)

    return embed


def _index_builder(sizer: Sizer) -> Callable[[Sizer, str], SpanCounter] | None:
    try:
        if get_sizer(sizer.name) is not sizer:  # a custom sizer that reuses a name
            return None
    except ChunkwiseError:
        return None
    if sizer.name in TIKTOKEN_ENCODINGS:
        return tiktoken_builder(sizer.name)
    if sizer.name == "minilm":
        return wordpiece_builder(str(minilm_tokenizer_path()))
    if sizer.name.endswith(".json"):
        return wordpiece_builder(sizer.name)
    return None

