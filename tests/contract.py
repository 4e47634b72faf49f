"""The five invariants of the chunk contract, checked in-process (tests import this)."""

from __future__ import annotations

from chunkwise.chunking.api import Chunker, parse_bytes
from chunkwise.chunking.structure import build_tree, walk

from lines import trimmed


def check_contract(data: bytes, source: str, chunker: Chunker, fmt: str | None = None) -> list:
    """Chunk `data` twice and assert every invariant; returns the chunks."""
    doc = parse_bytes(data, source=source, format=fmt)
    text = doc.text
    chunks = chunker.chunk_document(doc)
    again = chunker.chunk_document(parse_bytes(data, source=source, format=fmt))
    assert [c.to_dict() for c in chunks] == [c.to_dict() for c in again], "5: not deterministic"
    assert len({c.id for c in chunks}) == len(chunks), "5: duplicate ids"
    covered = bytearray(len(text))
    prev_end = 0
    for c in chunks:
        assert c.text == text[c.start:c.end], "1: text != canonical[start:end]"
        assert c.text.strip(), "1: empty chunk"
        if chunker.overlap == 0:
            assert c.start >= prev_end, "1: chunks overlap or out of order"
        prev_end = c.end
        assert c.tokens == chunker.sizer.count(c.embed_text), "2: reported tokens != recount"
        assert c.tokens <= chunker.max_tokens, f"2: {c.tokens} > {chunker.max_tokens}"
        # `kinds` says what a chunk holds, for `--where` filters: a chunk always holds some
        assert c.kinds, f"kinds empty for chunk [{c.start}:{c.end}] {c.section_path}"
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    lost = [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]
    assert not lost, f"3: {len(lost)} characters lost, first at {lost[0]}"
    if chunker.overlap == 0:
        spans = [trimmed(text, n.start, n.end) for n, _ in walk(build_tree(doc))]
        spans = [(a, b) for a, b in spans if b > a]
        for c in chunks:
            cs, ce = trimmed(text, c.start, c.end)
            for a, b in spans:
                straddles = a < ce and b > cs and not (a <= cs and ce <= b) and not (
                    cs <= a and b <= ce)
                assert not straddles, f"4: chunk [{cs}:{ce}] straddles section [{a}:{b}]"
    return chunks
