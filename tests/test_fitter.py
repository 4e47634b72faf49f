"""The fitter on real documents: exact counts within the budget, and about one tokenizer pass."""

from __future__ import annotations

import pytest
import tiktoken

from chunkwise.api import parse_bytes
from chunkwise.fitter import Fitter
from chunkwise.sizing import get_sizer
from chunkwise.tokenindex import _tiktoken_builder

from conftest import FIXTURES

FILES = ["fastapi__features.md", "mkdocs-material__reference__data-tables.md",
         "alice-in-wonderland.txt"]


@pytest.mark.parametrize("name,budget", [("cl100k_base", 512), ("o200k_base", 96),
                                         ("minilm", 64), ("chars", 200)])
@pytest.mark.parametrize("fixture", FILES)
def test_pieces_count_exactly_within_the_budget(fixture, name, budget):
    doc = parse_bytes((FIXTURES / fixture).read_bytes(), source=fixture)
    sizer = get_sizer(name)
    pieces = Fitter(sizer, budget).fit(doc)
    assert pieces
    for p in pieces:
        text = doc.text[p.start:p.end]
        embed = f"{p.context}\n\n{text}" if p.context else text
        assert p.tokens == sizer.count(embed) <= budget
    assert [p.start for p in pieces] == sorted(p.start for p in pieces)


def test_fitting_encodes_the_document_about_once(monkeypatch):
    """The index encodes the whole text once; exact counts re-encode only a chunk's ends."""
    encoded = []
    for method in ("encode_ordinary", "encode_to_numpy"):
        real = getattr(tiktoken.Encoding, method)

        def counting(self, text, *args, _real=real, **kwargs):
            encoded.append(len(text))
            return _real(self, text, *args, **kwargs)

        monkeypatch.setattr(tiktoken.Encoding, method, counting)
    _tiktoken_builder.cache_clear()  # rebuild with the counting methods
    try:
        doc = parse_bytes((FIXTURES / "alice-in-wonderland.txt").read_bytes(), source="a.txt")
        pieces = Fitter(get_sizer("cl100k_base"), 256).fit(doc)
    finally:
        monkeypatch.undo()
        _tiktoken_builder.cache_clear()
    assert len(pieces) > 100
    assert sum(encoded) < 1.2 * len(doc.text)


def test_a_split_paragraph_is_cut_into_even_pieces_not_a_small_tail():
    """Ten equal sentences, three to a chunk at most: 3+3+2+2, not 3+3+3+1 (a one-sentence
    tail embeds as a near-empty chunk that matches every query)."""
    sentence = "The quick brown fox jumps over the lazy dog near the river bank today. "
    doc = parse_bytes((sentence * 10).encode(), source="p.txt")
    sizer = get_sizer("cl100k_base")
    one = sizer.count(sentence.strip())
    pieces = Fitter(sizer, 3 * one + 2).fit(doc)
    counts = [doc.text[p.start:p.end].count("fox") for p in pieces]
    assert sum(counts) == 10 and max(counts) <= 3
    assert len(pieces) == 4 and max(counts) - min(counts) <= 1, counts
