"""`chunkwise.langchain` with the real langchain-core and langchain-text-splitters: the
splitter is a `TextSplitter` whose chunks are chunkwise's, the loader turns files into one
`Document` per chunk, and both carry chunkwise's metadata."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_text_splitters")

from langchain_core.documents import Document  # noqa: E402
from langchain_text_splitters import TextSplitter  # noqa: E402

import chunkwise  # noqa: E402
from chunkwise.langchain import (ChunkwiseLoader, ChunkwiseTextSplitter,  # noqa: E402
                                 embed_text)
from chunkwise.sizing.sizers import get_sizer  # noqa: E402

from conftest import FIXTURES  # noqa: E402

MD = FIXTURES / "fastapi__features.md"


def test_splitter_is_a_text_splitter_giving_chunkwise_chunks():
    splitter = ChunkwiseTextSplitter(max_tokens=128, format="markdown")
    assert isinstance(splitter, TextSplitter)
    text = MD.read_text(encoding="utf-8")
    want = chunkwise.chunk_text(text, format="markdown", max_tokens=128)
    assert splitter.split_text(text) == [c.text for c in want]


def test_split_documents_carry_metadata_and_fit_the_budget():
    text = MD.read_text(encoding="utf-8")
    splitter = ChunkwiseTextSplitter(max_tokens=128)
    docs = splitter.split_documents([Document(page_content=text,
                                              metadata={"source": "guide.md", "team": "docs"})])
    sizer = get_sizer("minilm")
    assert len(docs) > 5
    for d in docs:
        m = d.metadata
        assert m["team"] == "docs" and m["source"] == "guide.md" and m["format"] == "markdown"
        assert text[m["start_index"]:m["end_index"]] == d.page_content  # exact offsets
        assert m["kinds"] and m["section_path"].startswith("Features")
        assert sizer.count(embed_text(d)) == m["tokens"] <= 128
        assert all(isinstance(v, (str, int, float, bool)) for v in m.values())  # flat
    assert any("code" in d.metadata["kinds"] for d in docs)


def test_loader_reads_every_format_with_pages_and_failures(tmp_path):
    docs = ChunkwiseLoader(FIXTURES).load()
    cli = [c for p in sorted(FIXTURES.iterdir()) for c in chunkwise.chunk_file(p)]
    assert [d.page_content for d in docs] == [c.text for c in cli]
    assert {d.metadata["format"] for d in docs} == {c.format for c in cli}
    assert {"csv", "markdown", "text", "python", "html", "pdf"} <= {c.format for c in cli}
    pdf = [d for d in docs if d.metadata["format"] == "pdf"]
    assert {d.metadata["page_start"] for d in pdf} == {1, 2, 3}
    assert all(d.id == d.metadata["id"] for d in docs)
    (tmp_path / "bad.md").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "ok.md").write_text("# Fine\n\nText.\n")
    loader = ChunkwiseLoader(tmp_path)
    assert [d.metadata["source"] for d in loader.load()] == ["ok.md"]
    assert [s for s, _ in loader.failures] == ["bad.md"]
    with pytest.raises(chunkwise.ParseError):
        ChunkwiseLoader(tmp_path, raise_on_error=True).load()
