"""`chunkwise.langchain` with the real langchain-core and langchain-text-splitters: the
splitter is a `TextSplitter` whose chunks are chunkwise's, the loader turns files into one
`Document` per chunk, and both carry chunkwise's metadata."""

from __future__ import annotations

import shutil

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
    assert [d.metadata["source"] for d in loader.load()] == [str(tmp_path / "ok.md")]
    assert [s for s, _ in loader.failures] == [str(tmp_path / "bad.md")]
    with pytest.raises(chunkwise.ParseError):
        ChunkwiseLoader(tmp_path, raise_on_error=True).load()


def test_loader_names_sources_as_langchains_loaders_do(tmp_path, monkeypatch):
    """One naming rule in one store: `source` is the path as given, as PyPDFLoader's and
    DirectoryLoader's are (the README's recipe mixed `fixtures/x.pdf` and `x.md`); `root`
    names them relative to it, as `chunkwise ingest --root` does."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    shutil.copy(MD, tmp_path / "docs" / "guide.md")
    shutil.copy(MD, tmp_path / "docs" / "sub" / "again.md")
    sources = lambda loader: sorted({d.metadata["source"] for d in loader.load()})  # noqa: E731
    assert sources(ChunkwiseLoader("docs/guide.md")) == ["docs/guide.md"]
    assert sources(ChunkwiseLoader("docs")) == ["docs/guide.md", "docs/sub/again.md"]
    assert sources(ChunkwiseLoader(["docs/sub", "docs/sub/again.md"])) == ["docs/sub/again.md"]
    assert sources(ChunkwiseLoader("docs", root="docs")) == ["guide.md", "sub/again.md"]
    community = pytest.importorskip("langchain_community.document_loaders")
    shutil.copy(PDF, tmp_path / "docs" / PDF.name)
    page = community.PyPDFLoader(f"docs/{PDF.name}").load()[0]
    mine = ChunkwiseLoader(f"docs/{PDF.name}").load()[0]
    assert page.metadata["source"] == mine.metadata["source"] == f"docs/{PDF.name}"
    missing = ChunkwiseLoader(["docs/nope.md"])
    assert missing.load() == [] and missing.failures == [("docs/nope.md",
                                                          "no such file or directory")]


# -- any loader's documents (issue 32) ---------------------------------------------------------
PDF = FIXTURES / "latex-two-column-sample.pdf"
HTML = FIXTURES / "httpd__mod__mod_dir.html"


def test_pypdf_loader_pages_are_split_as_text_keeping_their_pages():
    community = pytest.importorskip("langchain_community.document_loaders")
    pages = community.PyPDFLoader(str(PDF)).load()
    assert len(pages) == 3 and [p.metadata["page"] for p in pages] == [0, 1, 2]
    docs = ChunkwiseTextSplitter(max_tokens=128).split_documents(pages)
    sizer = get_sizer("minilm")
    by_page = {p.metadata["page"] + 1: p for p in pages}
    assert {d.metadata["page_start"] for d in docs} == {1, 2, 3}
    for d in docs:
        m = d.metadata
        page = by_page[m["page_start"]]
        assert m["page_end"] == m["page_start"] == m["page"] + 1
        assert m["format"] == "text" and m["source"] == str(PDF)
        assert m["total_pages"] == 3 and m["page_label"] == page.metadata["page_label"]
        assert page.page_content[m["start_index"]:m["end_index"]] == d.page_content
        assert sizer.count(embed_text(d)) == m["tokens"] <= 128
    assert len({d.id for d in docs}) == len(docs)  # the page is part of the chunk's identity
    # nothing of a page is lost
    for n, page in by_page.items():
        got = "".join(d.page_content for d in docs if d.metadata["page_start"] == n)
        assert "".join(got.split()) == "".join(page.page_content.split())


def test_format_from_option_text_extension_or_markup_never_binary():
    community = pytest.importorskip("langchain_community.document_loaders")
    splitter = ChunkwiseTextSplitter(max_tokens=128)
    # TextLoader: the file's own text, so the extension's format holds
    raw = splitter.split_documents(community.TextLoader(str(HTML)).load())
    assert {d.metadata["format"] for d in raw} == {"html"}
    assert any(d.metadata["section_path"].startswith("Apache Module mod_dir") for d in raw)
    md = splitter.split_documents(community.TextLoader(str(MD), encoding="utf-8").load())
    assert {d.metadata["format"] for d in md} == {"markdown"}
    # BSHTMLLoader: text extracted from the page, no markup left: text, not HTML
    extracted = community.BSHTMLLoader(str(HTML)).load()
    assert "<" not in extracted[0].page_content[:2000]
    assert {d.metadata["format"] for d in splitter.split_documents(extracted)} == {"text"}
    # a converter's Markdown of an Office file is Markdown; its plain text is text
    body = "The figures of the quarter are in the table below. " * 4
    note = Document(page_content=f"# Report\n\n{body}\n\n## Costs\n\n{body}\n",
                    metadata={"source": "report.docx"})
    plain = Document(page_content="Report\nFirst part.", metadata={"source": "report.pptx"})
    got = ChunkwiseTextSplitter(max_tokens=64).split_documents([note, plain])
    formats = {(d.metadata["source"], d.metadata["format"]) for d in got}
    assert formats == {("report.docx", "markdown"), ("report.pptx", "text")}
    assert "Report > Costs" in {d.metadata["section_path"] for d in got}  # its headings
    # format= wins; a format read from bytes is refused when the splitter is built
    forced = ChunkwiseTextSplitter(max_tokens=128, format="text").split_documents([note])
    assert {d.metadata["format"] for d in forced} == {"text"}
    for fmt in ("pdf", "docx", "xlsx", "nonsense"):
        with pytest.raises(chunkwise.ConfigError):
            ChunkwiseTextSplitter(format=fmt)


def test_embeddings_are_the_ingest_embedders_vectors():
    import numpy as np
    from langchain_core.embeddings import Embeddings

    from chunkwise.embeddings.functions import resolve_embedder
    from chunkwise.langchain import ChunkwiseEmbeddings

    emb = ChunkwiseEmbeddings()
    assert isinstance(emb, Embeddings)
    docs = ChunkwiseLoader(MD, max_tokens=128).load()
    texts = [embed_text(d) for d in docs]
    ingest = resolve_embedder(None)  # what `chunkwise ingest` embeds with by default
    got = np.array(emb.embed_documents(texts))
    assert got.shape == (len(texts), 384)
    assert np.array_equal(got, np.asarray(ingest.embed(texts), dtype=got.dtype))
    query = "How do I declare request bodies?"
    assert np.array_equal(np.array(emb.embed_query(query)),
                          np.asarray(ingest.embed_queries([query]))[0])
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    assert emb.embed_documents([]) == []
    with pytest.raises(chunkwise.ConfigError):
        ChunkwiseEmbeddings(device="tpu")


def test_embeddings_warn_once_about_texts_over_the_window(caplog):
    from chunkwise.langchain import ChunkwiseEmbeddings

    emb = ChunkwiseEmbeddings()
    long = MD.read_text(encoding="utf-8")  # thousands of tokens
    with caplog.at_level("WARNING", logger="chunkwise.langchain"):
        emb.embed_documents([long, "short"])
        emb.embed_documents([long])
    warned = [r.getMessage() for r in caplog.records if r.name == "chunkwise.langchain"]
    assert len(warned) == 1 and warned[0].startswith("1 of 2 texts are longer than")


def test_loader_splitter_chroma_retriever_offline(tmp_path):
    community = pytest.importorskip("langchain_community.document_loaders")
    lc_chroma = pytest.importorskip("langchain_chroma")
    from chunkwise.langchain import ChunkwiseEmbeddings

    docs = ChunkwiseTextSplitter(max_tokens=128).split_documents(
        community.PyPDFLoader(str(PDF)).load())
    store = lc_chroma.Chroma.from_documents(
        docs, embedding=ChunkwiseEmbeddings(), persist_directory=str(tmp_path / "db"),
        collection_metadata={"hnsw:space": "cosine", "hnsw:search_ef": 1600})
    assert store._collection.count() == len(docs)
    assert store._collection.configuration["hnsw"]["ef_search"] == 1600  # as documented
    hits = store.similarity_search_with_score(
        "Country Population (millions) Area Capital Official Language", k=1)
    doc, distance = hits[0]
    assert doc.metadata["page_start"] == 3 and "Capital" in doc.page_content
    assert 0 <= distance < 0.5
    top = store.as_retriever(search_kwargs={"k": 1}).invoke("the table of capitals")
    assert top and top[0].metadata["source"] == str(PDF)
