"""The LlamaIndex integration on the real fixtures: every node's offsets index its own
document's text (or are None), every node's embed text fits the budget with the metadata
LlamaIndex puts in it, neighbours never cross documents, and an IngestionPipeline with a docstore
and a real embedded Chroma writes nothing twice."""

from __future__ import annotations

import logging
import pickle
import shutil
import subprocess
import sys
from itertools import groupby
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.api.types import validate_metadata
from chromadb.config import Settings
from llama_index.core import SimpleDirectoryReader
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.readers.base import BaseReader
from llama_index.core.schema import Document, MetadataMode, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.utils import node_to_metadata_dict
from llama_index.vector_stores.chroma import ChromaVectorStore
from pydantic import ValidationError

from chunkwise.chunking.api import Chunker, parse_file
from chunkwise.errors import ConfigError, ParseError
from chunkwise.llama_index import VIEW_KEY, ChunkwiseEmbedding, ChunkwiseNodeParser, ChunkwiseReader
from chunkwise.sizing.sizers import get_sizer, minilm_tokenizer_path

from conftest import CORPUS, FIXTURES, corpus_files

HTML = FIXTURES / "httpd__mod__mod_dir.html"
PDF = FIXTURES / "latex-two-column-sample.pdf"
MARKDOWN = FIXTURES / "fastapi__features.md"
CSV = FIXTURES / "538__trump-poll-tweets.csv"
TEXT = FIXTURES / "alice-in-wonderland.txt"
#: fixtures quick to embed with the real model (~20 chunks)
SMALL = ("fastapi__fastapi__background.py", "fastapi__fastapi__concurrency.py",
         "httpd__mod__mod_dir.html")


# -- helpers --------------------------------------------------------------------------------
def independent_minilm_count(texts: list[str]) -> list[int]:
    """Token counts straight from the model's tokenizer, [CLS] and [SEP] included."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    return [len(e.ids) for e in tok.encode_batch(texts)]


def check_nodes(nodes, docs, parser: ChunkwiseNodeParser) -> None:
    """The contract of every node: offsets, budget, metadata, relationships, ids."""
    by_id = {d.id_: d for d in docs}
    assert nodes, "no nodes"
    assert len({n.node_id for n in nodes}) == len(nodes), "node ids collide"
    embeds = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
    counts = get_sizer(parser.tokenizer).count_many(embeds)
    if parser.tokenizer == "minilm":
        assert counts == independent_minilm_count(embeds)
    for node, embed, count in zip(nodes, embeds, counts):
        doc = by_id[node.ref_doc_id]
        if node.start_char_idx is None:
            assert node.end_char_idx is None
        else:
            assert doc.text[node.start_char_idx:node.end_char_idx] == node.text
        assert count <= parser.max_tokens, (node.node_id, count, embed[:200])
        assert node.metadata["tokens"] == count
        context = node.metadata.get("context")
        # a table row's node embeds its view (`column: value` lines), as `chunkwise ingest`
        body = node.metadata.get(VIEW_KEY, node.text)
        if context:
            assert "context" not in node.excluded_embed_metadata_keys
            if node.metadata_template == "{value}":  # only the context shown: chunkwise's
                assert embed == f"{context}\n\n{body}"  # own embed text
            else:
                assert f"context: {context}" in embed and embed.endswith(body)
        for key in ("format", "kinds", "section_path", "tokens", "line_start", "page_start"):
            if key in node.metadata:
                assert key in node.excluded_embed_metadata_keys
        flat = node_to_metadata_dict(node, remove_text=True, flat_metadata=True)
        validate_metadata(flat)
    # one run of nodes per document, in text order, linked to each other and nothing else
    runs = [(doc_id, list(group)) for doc_id, group in groupby(nodes, key=lambda n: n.ref_doc_id)]
    assert len(runs) == len({doc_id for doc_id, _ in runs})
    for doc_id, run in runs:
        starts = [n.start_char_idx for n in run]
        if None not in starts:
            assert starts == sorted(starts)
        assert run[0].prev_node is None and run[-1].next_node is None
        for a, b in zip(run, run[1:]):
            assert a.next_node.node_id == b.node_id and b.prev_node.node_id == a.node_id
            assert a.next_node.hash == b.hash


def by_doc(nodes) -> dict[str, list]:
    out: dict[str, list] = {}
    for n in nodes:
        out.setdefault(n.ref_doc_id, []).append(n)
    return out


def label_cost(tokenizer: str) -> int:
    sizer = get_sizer(tokenizer)
    return sizer.count("context: x") - sizer.count("x")


class PyPdfPageReader(BaseReader):
    """What llama-index-readers-file's `PDFReader` (SimpleDirectoryReader's default for .pdf)
    does: one Document per page holding pypdf's text, with `page_label` and `file_name`."""

    def load_data(self, file, extra_info=None, fs=None):
        import pypdf

        pdf = pypdf.PdfReader(str(file))
        docs = []
        for i, page in enumerate(pdf.pages):
            meta = {"page_label": pdf.page_labels[i], "file_name": Path(file).name}
            meta.update(extra_info or {})
            docs.append(Document(text=page.extract_text(), metadata=meta))
        return docs


def chroma_store(tmp_path: Path, name: str = "nodes"):
    client = chromadb.PersistentClient(path=str(tmp_path / "db"),
                                       settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection(name)
    return collection, ChromaVectorStore(chroma_collection=collection)


@pytest.fixture(scope="module")
def reader_docs() -> list[Document]:
    return ChunkwiseReader().load_data(FIXTURES)


@pytest.fixture(scope="module")
def reader_nodes(reader_docs):
    return ChunkwiseNodeParser().get_nodes_from_documents(reader_docs)


# -- configuration --------------------------------------------------------------------------
def test_import_chunkwise_does_not_import_llama_index():
    code = ("import sys, chunkwise, chunkwise.chunking.api, chunkwise.parsers; "
            "print(sorted(m for m in sys.modules if m.startswith('llama_index')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("options", [
    {"max_tokens": 8}, {"max_tokens": 17}, {"overlap": -1}, {"overlap": 127},
    {"tokenizer": "no-such-tokenizer"}, {"strategy": "no-such-strategy"}, {"format": "odt"},
])
def test_bad_options_are_refused_when_built(options):
    with pytest.raises(ValidationError):
        ChunkwiseNodeParser(**options)
    with pytest.raises(ValidationError):
        ChunkwiseNodeParser.from_defaults(**options)


def test_parser_is_a_native_component(reader_docs):
    parser = ChunkwiseNodeParser.from_defaults(max_tokens=128, tokenizer="cl100k_base",
                                               overlap=16)
    assert ChunkwiseNodeParser.class_name() == "ChunkwiseNodeParser"
    assert parser.to_dict()["class_name"] == "ChunkwiseNodeParser"
    again = ChunkwiseNodeParser.from_dict(parser.to_dict())
    unpickled = pickle.loads(pickle.dumps(parser))
    docs = [d for d in reader_docs if d.metadata["format"] in ("markdown", "pdf")]
    ids = [n.node_id for n in parser.get_nodes_from_documents(docs)]
    assert ids == [n.node_id for n in again.get_nodes_from_documents(docs)]
    assert ids == [n.node_id for n in unpickled(docs)]  # TransformComponent.__call__
    assert ChunkwiseReader.class_name() == "ChunkwiseReader"
    assert ChunkwiseEmbedding.class_name() == "ChunkwiseEmbedding"


# -- ChunkwiseReader + ChunkwiseNodeParser --------------------------------------------------
def test_reader_documents_hold_the_canonical_text(reader_docs):
    by_name = {d.metadata["file_name"]: d for d in reader_docs}
    assert set(by_name) == {p.name for p in FIXTURES.iterdir()}
    for doc in reader_docs:
        path = Path(doc.metadata["file_path"])
        assert doc.id_ == doc.metadata["source"] == path.name  # relative to the folder given
        assert doc.text == parse_file(path).text
        assert set(doc.excluded_embed_metadata_keys) == set(doc.metadata)
        assert doc.get_content(metadata_mode=MetadataMode.EMBED) == doc.text
    assert by_name[PDF.name].metadata["format"] == "pdf"
    assert by_name[PDF.name].metadata["page_count"] >= 2
    assert by_name[HTML.name].metadata["title"]
    assert "<" not in by_name[HTML.name].text[:200]


def test_reader_nodes_keep_structure_exact_offsets_and_the_budget(reader_docs, reader_nodes):
    parser = ChunkwiseNodeParser()
    check_nodes(reader_nodes, reader_docs, parser)
    assert all(n.start_char_idx is not None for n in reader_nodes)
    # the nodes are the chunks `chunkwise chunk` gives, embedded as `chunkwise ingest` does
    chunker = Chunker(max_tokens=parser.max_tokens)
    nodes_of = by_doc(reader_nodes)
    for doc in reader_docs:
        chunks = chunker.chunk_file(doc.metadata["file_path"], source=doc.id_)
        nodes = nodes_of[doc.id_]
        assert [(n.start_char_idx, n.end_char_idx) for n in nodes] == [
            (c.start, c.end) for c in chunks]
        assert [n.node_id for n in nodes] == [c.id for c in chunks]
        assert [n.metadata.get("context", "") for n in nodes] == [c.context for c in chunks]
        assert [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes] == [
            c.embed_text for c in chunks]
    pdf_nodes = nodes_of[PDF.name]
    assert pdf_nodes[-1].metadata["page_end"] >= 2
    assert all(n.metadata["page_start"] <= n.metadata["page_end"] for n in pdf_nodes)
    html_nodes = nodes_of[HTML.name]
    assert sum(" > " in n.metadata["section_path"] for n in html_nodes) >= len(html_nodes) // 2
    llm = html_nodes[1].get_content(metadata_mode=MetadataMode.LLM)
    node = html_nodes[1]
    assert llm.startswith(f"{HTML.name}\n") and f"\n{node.metadata['context']}\n\n" in llm
    assert f"\n{node.metadata['tokens']}\n" not in llm and llm.endswith(node.text)


@pytest.mark.parametrize("tokenizer,max_tokens,overlap", [
    ("cl100k_base", 96, 0), ("chars", 400, 0), ("minilm", 128, 24),
])
def test_other_budgets_and_tokenizers(reader_docs, tokenizer, max_tokens, overlap):
    docs = [d for d in reader_docs if d.metadata["file_name"] != TEXT.name]  # keep it quick
    parser = ChunkwiseNodeParser(max_tokens=max_tokens, tokenizer=tokenizer, overlap=overlap)
    nodes = parser.get_nodes_from_documents(docs)
    check_nodes(nodes, docs, parser)
    assert all(n.start_char_idx is not None for n in nodes)
    if overlap:  # chunks overlap, offsets stay exact
        assert any(a.end_char_idx > b.start_char_idx
                   for run in by_doc(nodes).values() for a, b in zip(run, run[1:]))


def test_node_ids_are_deterministic_and_distinct_per_document(reader_docs):
    doc = next(d for d in reader_docs if d.metadata["file_name"] == MARKDOWN.name)
    copy = Document(id_="another-id", text=doc.text, metadata=dict(doc.metadata),
                    excluded_embed_metadata_keys=list(doc.metadata))
    parser = ChunkwiseNodeParser()
    first = parser.get_nodes_from_documents([doc, copy])
    second = ChunkwiseNodeParser().get_nodes_from_documents([doc, copy])
    assert [n.node_id for n in first] == [n.node_id for n in second]
    a, b = by_doc(first)[doc.id_], by_doc(first)["another-id"]
    assert [n.text for n in a] == [n.text for n in b]
    assert not {n.node_id for n in a} & {n.node_id for n in b}
    check_nodes(first, [doc, copy], parser)


# -- SimpleDirectoryReader documents --------------------------------------------------------
def test_simple_directory_reader_documents(caplog):
    docs = SimpleDirectoryReader(str(FIXTURES), filename_as_id=True).load_data()
    parser = ChunkwiseNodeParser()
    nodes = parser.get_nodes_from_documents(docs)
    check_nodes(nodes, docs, parser)
    nodes_of = by_doc(nodes)
    # text formats read as text: the document text is the canonical text
    for path in (MARKDOWN, CSV, FIXTURES / "fastapi__fastapi__background.py"):
        assert all(n.start_char_idx is not None for n in nodes_of[str(path)])
    # CRLF text: the canonical text differs from the document's, so no offsets at all
    assert "\r\n" in next(d.text for d in docs if d.id_ == str(TEXT))
    assert all(n.start_char_idx is None for n in nodes_of[str(TEXT)])
    # raw HTML markup and raw PDF bytes: parsed with their structure, offsets None
    for path in (HTML, PDF):
        got = nodes_of[str(path)]
        chunks = Chunker(max_tokens=parser.max_tokens).chunk_file(path)
        assert all(n.start_char_idx is None for n in got)
        assert {n.metadata["format"] for n in got} == {path.suffix[1:]}
        assert len(got) >= len(chunks) and "<div" not in "".join(n.text for n in got)
        canonical, pos = parse_file(path).text, 0
        for n in got:  # spans of the file's canonical text, in order
            pos = canonical.index(n.text, pos) + len(n.text)
    assert any(n.metadata.get("page_start") == 2 for n in nodes_of[str(PDF)])
    # SimpleDirectoryReader leaves file_path in the embed text: it is paid for, not cut
    node = nodes_of[str(MARKDOWN)][0]
    embed = node.get_content(metadata_mode=MetadataMode.EMBED)
    assert embed.startswith(f"file_path: {MARKDOWN}") and "file_size" not in embed
    # (Markdown: CSV chunks are one row each, far from the budget)
    assert max(n.metadata["tokens"] for n in nodes_of[str(MARKDOWN)]) > parser.max_tokens - 40


def test_simple_directory_reader_pdf_pages_chunk_their_own_text(tmp_path):
    """With PDFReader each page is a Document holding pypdf's text: nodes index that text."""
    docs = SimpleDirectoryReader(input_files=[str(PDF)], filename_as_id=True,
                                 file_extractor={".pdf": PyPdfPageReader()}).load_data()
    assert len(docs) >= 2 and docs[0].id_ == f"{PDF}_part_0"
    parser = ChunkwiseNodeParser(max_tokens=128)
    nodes = parser.get_nodes_from_documents(docs)
    check_nodes(nodes, docs, parser)
    assert all(n.start_char_idx is not None for n in nodes)
    for doc in docs:
        got = by_doc(nodes)[doc.id_]
        assert {n.metadata["page_start"] for n in got} == {int(doc.metadata["page_label"])}
        assert {n.metadata["format"] for n in got} == {"pdf"}
        assert {n.metadata["parsed_as"] for n in got} == {"text"}


def test_reader_as_a_simple_directory_reader_file_extractor():
    reader = ChunkwiseReader()
    docs = SimpleDirectoryReader(input_files=[str(HTML), str(PDF)], filename_as_id=True,
                                 file_extractor={".html": reader, ".pdf": reader}).load_data()
    assert [d.text for d in docs] == [parse_file(HTML).text, parse_file(PDF).text]
    parser = ChunkwiseNodeParser()
    nodes = parser.get_nodes_from_documents(docs)
    check_nodes(nodes, docs, parser)
    assert all(n.start_char_idx is not None for n in nodes)
    assert {n.metadata.get("page_start") for n in nodes} >= {1, 2}


# -- offsets are exact or None, never found by searching ------------------------------------
def test_repeated_text_keeps_each_chunks_own_offset():
    rows = "".join(f"{i % 3},same words again\n" for i in range(300))
    doc = Document(id_="rows", text="a,b\n" + rows, metadata={"file_name": "rows.csv"},
                   excluded_embed_metadata_keys=["file_name"])
    parser = ChunkwiseNodeParser(max_tokens=48)
    nodes = parser.get_nodes_from_documents([doc])
    check_nodes(nodes, [doc], parser)
    assert len({n.text for n in nodes}) < len(nodes)  # texts repeat ...
    expected = Chunker(max_tokens=48 - label_cost("minilm")).chunk_text(
        doc.text, format="csv", source="rows")
    assert [n.start_char_idx for n in nodes] == [c.start for c in expected]  # ... offsets don't


def test_documents_without_metadata_are_sniffed_and_crlf_loses_offsets():
    text = MARKDOWN.read_text(encoding="utf-8")
    plain = Document(id_="plain", text=text)
    crlf = Document(id_="crlf", text=text.replace("\n", "\r\n"))
    parser = ChunkwiseNodeParser()
    nodes = parser.get_nodes_from_documents([plain, crlf])
    check_nodes(nodes, [plain, crlf], parser)
    got = by_doc(nodes)
    assert {n.metadata["format"] for n in nodes} == {"markdown"}
    assert all(n.start_char_idx is not None for n in got["plain"])
    assert all(n.start_char_idx is None for n in got["crlf"])
    assert [n.text for n in got["plain"]] == [n.text for n in got["crlf"]]
    assert any(n.metadata["section_path"].startswith("Features") for n in got["plain"])


def test_changed_or_deleted_file_falls_back_to_the_document_text(tmp_path):
    html = tmp_path / HTML.name
    shutil.copy(HTML, html)
    docs = ChunkwiseReader().load_data(tmp_path)
    html.write_text(html.read_text(encoding="utf-8").replace("DirectoryIndex", "Zqxj"),
                    encoding="utf-8")
    parser = ChunkwiseNodeParser()
    for _ in ("changed", "deleted"):
        nodes = parser.get_nodes_from_documents(docs)
        check_nodes(nodes, docs, parser)
        assert all(n.start_char_idx is not None for n in nodes)
        assert {n.metadata["parsed_as"] for n in nodes} == {"text"}
        assert all("Zqxj" not in n.text for n in nodes)
        assert any("DirectoryIndex" in n.text for n in nodes)
        html.unlink(missing_ok=True)


def test_embedded_document_metadata_is_paid_for_and_huge_metadata_is_excluded(caplog):
    text = MARKDOWN.read_text(encoding="utf-8")
    small = Document(id_="small", text=text, metadata={"summary": "web framework " * 10})
    huge = Document(id_="huge", text=text, metadata={"summary": "web framework " * 200})
    for tokenizer, max_tokens in (("minilm", 256), ("cl100k_base", 200)):
        parser = ChunkwiseNodeParser(max_tokens=max_tokens, tokenizer=tokenizer)
        with caplog.at_level(logging.WARNING, logger="chunkwise.llama_index"):
            nodes = parser.get_nodes_from_documents([small, huge])
        check_nodes(nodes, [small, huge], parser)
        got = by_doc(nodes)
        assert all("summary: web" in n.get_content(metadata_mode=MetadataMode.EMBED)
                   for n in got["small"])
        assert all("summary" not in n.get_content(metadata_mode=MetadataMode.EMBED)
                   for n in got["huge"])
        assert all(n.metadata["summary"] == huge.metadata["summary"] for n in got["huge"])
        assert len(got["small"]) > len(got["huge"])  # its budget shrank
        assert "summary" in caplog.text and "huge" in caplog.text


@pytest.mark.parametrize("tokenizer", ["minilm", "cl100k_base"])
def test_each_document_is_chunked_once(monkeypatch, tokenizer):
    """The embedded metadata's tokens are reserved up front (`Chunker(reserve=...)`): one
    chunking pass per document, and every node still fits with its metadata."""
    calls = []
    chunk_document = Chunker.chunk_document

    def counted(self, doc):
        calls.append((doc.source, self.reserve))
        return chunk_document(self, doc)

    monkeypatch.setattr(Chunker, "chunk_document", counted)
    text = MARKDOWN.read_text(encoding="utf-8")
    docs = [Document(id_=f"d{i}", text=text, metadata={"summary": "web framework " * i,
                                                       "file_name": MARKDOWN.name})
            for i in (1, 5, 20)]
    parser = ChunkwiseNodeParser(max_tokens=128, tokenizer=tokenizer)
    nodes = parser.get_nodes_from_documents(docs)
    check_nodes(nodes, docs, parser)
    assert [source for source, _ in calls] == [d.id_ for d in docs]
    reserves = [reserve for _, reserve in calls]
    assert reserves == sorted(reserves) and len(set(reserves)) == 3
    assert all("summary: web" in n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes)


def test_budget_too_small_for_a_custom_metadata_template():
    doc = Document(id_="d", text="Some words.\n\n" * 50, metadata={"k": "v"},
                   metadata_template="{key} is given as the following value: {value}")
    # 20 tokens: the document's metadata would take most of them, so it is left out of the
    # embed text; with nothing of the document shown, the node embeds the chunk's own text
    small = ChunkwiseNodeParser(max_tokens=20).get_nodes_from_documents([doc])
    check_nodes(small, [doc], ChunkwiseNodeParser(max_tokens=20))
    assert "k" in small[0].excluded_embed_metadata_keys
    assert "given as" not in small[0].get_content(metadata_mode=MetadataMode.EMBED)
    nodes = ChunkwiseNodeParser(max_tokens=64).get_nodes_from_documents([doc])
    check_nodes(nodes, [doc], ChunkwiseNodeParser(max_tokens=64))
    assert "k is given as the following value: v" in nodes[0].get_content(
        metadata_mode=MetadataMode.EMBED)


# -- failures -------------------------------------------------------------------------------
@pytest.fixture
def mixed_dir(tmp_path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(MARKDOWN, docs / MARKDOWN.name)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7\nthis is not a pdf at all\n")
    (docs / "binary.txt").write_bytes(bytes(range(256)) * 4)
    (docs / "empty.md").write_text("\n\n", encoding="utf-8")
    return docs


def test_reader_skips_bad_files_with_their_reason(mixed_dir, caplog):
    reader = ChunkwiseReader()
    with caplog.at_level(logging.WARNING, logger="chunkwise.llama_index"):
        docs = reader.load_data(mixed_dir)
    assert [d.metadata["file_name"] for d in docs] == [MARKDOWN.name]
    failed = dict(reader.failures)
    assert set(failed) == {"broken.pdf", "binary.txt"}  # named relative to the folder
    assert "binary" in failed["binary.txt"]
    assert all(reason for reason in failed.values())
    assert "broken.pdf" in caplog.text and "binary.txt" in caplog.text
    with pytest.raises(ParseError):
        ChunkwiseReader(raise_on_error=True).load_data(mixed_dir)


def test_parser_skips_a_document_it_cannot_parse(caplog):
    good = Document(id_="good", text="# Title\n\nBody text.", metadata={"file_name": "a.md"})
    raw_pdf = Document(id_="raw", text="%PDF-1.7\n\x00\x01 binary junk",
                       metadata={"file_path": "/nonexistent/x.pdf"})
    with caplog.at_level(logging.WARNING, logger="chunkwise.llama_index"):
        nodes = ChunkwiseNodeParser().get_nodes_from_documents([raw_pdf, good])
    assert [n.ref_doc_id for n in nodes] == ["good"] and "raw" in caplog.text
    with pytest.raises(ParseError):
        ChunkwiseNodeParser(raise_on_error=True).get_nodes_from_documents([raw_pdf, good])


# -- IngestionPipeline + docstore + Chroma --------------------------------------------------
def test_pipeline_reruns_write_nothing_twice_and_replace_changed_files(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in (*SMALL, MARKDOWN.name, PDF.name, "mkdocs-material__reference__data-tables.md"):
        shutil.copy(FIXTURES / name, folder / name)
    collection, store = chroma_store(tmp_path)
    docstore = SimpleDocumentStore()

    def run():
        docs = SimpleDirectoryReader(str(folder), filename_as_id=True).load_data()
        pipeline = IngestionPipeline(
            transformations=[ChunkwiseNodeParser(), MockEmbedding(embed_dim=8)],
            docstore=docstore, vector_store=store)
        return docs, pipeline.run(documents=docs)

    docs, nodes = run()
    assert collection.count() == len(nodes) > 50
    check_nodes(nodes, docs, ChunkwiseNodeParser())
    _, again = run()
    assert again == [] and collection.count() == len(nodes)
    md = folder / MARKDOWN.name
    md.write_text(md.read_text(encoding="utf-8") + "\n## Added\n\nA new closing section.\n",
                  encoding="utf-8")
    docs, changed = run()
    assert {n.ref_doc_id for n in changed} == {str(md)}
    expected = ChunkwiseNodeParser().get_nodes_from_documents(docs)
    assert set(collection.get()["ids"]) == {n.node_id for n in expected}
    stored = collection.get(where={"document_id": str(md)}, include=["metadatas"])
    assert any(m["section_path"].endswith("Added") for m in stored["metadatas"])


def test_end_to_end_with_the_real_model_and_chroma(tmp_path):
    docs = ChunkwiseReader().load_data([FIXTURES / name for name in SMALL])
    collection, store = chroma_store(tmp_path, "minilm")
    embed_model = ChunkwiseEmbedding()
    pipeline = IngestionPipeline(transformations=[ChunkwiseNodeParser(), embed_model],
                                 docstore=SimpleDocumentStore(), vector_store=store)
    nodes = pipeline.run(documents=docs)
    check_nodes(nodes, docs, ChunkwiseNodeParser())
    assert collection.count() == len(nodes)
    assert pipeline.run(documents=ChunkwiseReader().load_data(
        [FIXTURES / name for name in SMALL])) == []
    assert collection.count() == len(nodes)
    # what is stored is the model's vector of the embed text, context included
    from chunkwise.embeddings.functions import shared_embedder

    sample = [n for n in nodes if n.metadata.get("context")][:3]
    got = collection.get(ids=[n.node_id for n in sample], include=["embeddings"])
    vectors = dict(zip(got["ids"], got["embeddings"]))
    expected = shared_embedder().embed([n.get_content(metadata_mode=MetadataMode.EMBED)
                                        for n in sample])
    for node, vector in zip(sample, expected):
        assert float(np.dot(vectors[node.node_id], vector)) > 0.9999
    # and the query side uses the same model
    from llama_index.core import VectorStoreIndex

    index = VectorStoreIndex.from_vector_store(store, embed_model=embed_model)
    hits = index.as_retriever(similarity_top_k=3).retrieve(
        "Which file does Apache serve when a client requests a directory?")
    assert hits[0].node.metadata["format"] == "html"
    assert "DirectoryIndex" in hits[0].node.get_content()


def test_embedding_wrapper_matches_the_embedder():
    from chunkwise.embeddings.functions import MiniLMEmbedder

    model = ChunkwiseEmbedding(embed_batch_size=2)
    texts = ["The cat sleeps on the sofa.", "A cat naps on the couch.", "Revenue grew."]
    got = np.array(model.get_text_embedding_batch(texts))
    np.testing.assert_allclose(got, MiniLMEmbedder().embed(texts), atol=1e-5)
    assert got.shape == (3, 384)
    query = np.array(model.get_query_embedding("sleeping cat"))
    assert query @ got[0] > query @ got[2]
    assert pickle.loads(pickle.dumps(model)).get_text_embedding(texts[0]) == pytest.approx(
        got[0].tolist(), abs=1e-5)


def test_embedding_wrapper_warns_once_about_texts_past_the_window(caplog):
    model = ChunkwiseEmbedding(embed_batch_size=2)
    with caplog.at_level("WARNING", logger="chunkwise"):
        model.get_text_embedding_batch(["short", "A cat naps."])
        assert not caplog.records
        model.get_text_embedding_batch(["word " * 300, "short", "lorem " * 400])
        model.get_text_embedding_batch(["word " * 300])
    (record,) = caplog.records
    assert "1 of 2 texts are longer than the model's 256-token window" in record.getMessage()


# -- the shared corpus ----------------------------------------------------------------------
#: the corpus folders of formats chunkwise reads (named, so a new folder is added on purpose)
CORPUS_FOLDERS = ("code", "code-multi", "csv", "data", "html", "markdown", "notebooks",
                  "office", "pdf", "pdf-tables", "text")


@pytest.mark.corpus
def test_one_file_of_each_corpus_folder():
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present ({CORPUS})")
    folders = CORPUS_FOLDERS
    files = [min(corpus_files(name), key=lambda p: p.stat().st_size) for name in folders]
    reader = ChunkwiseReader()
    docs = reader.load_data(files)
    assert reader.failures == [] and len(docs) == len(files)
    for tokenizer, max_tokens in (("minilm", 256), ("cl100k_base", 128)):
        parser = ChunkwiseNodeParser(max_tokens=max_tokens, tokenizer=tokenizer)
        nodes = parser.get_nodes_from_documents(docs)
        check_nodes(nodes, docs, parser)
        assert all(n.start_char_idx is not None for n in nodes)
        assert set(by_doc(nodes)) == {d.id_ for d in docs}


# -- records written by `chunkwise ingest`, read by ChromaVectorStore ------------------------
def _full_node_content(meta: dict) -> str:
    """A record's `_node_content` as chunkwise wrote it before 2026-11-27: with the fields
    whose values are LlamaIndex's defaults spelled out."""
    import json

    node = {**json.loads(meta["_node_content"]), "embedding": None, "text": "",
            "mimetype": "text/plain", "class_name": "TextNode"}
    for rel in node["relationships"].values():
        rel.update(metadata={}, hash=None, class_name="RelatedNodeInfo")
    return json.dumps(node, ensure_ascii=False)


def test_ingested_records_read_back_as_nodes_in_the_slim_and_the_old_layout(tmp_path):
    from chunkwise.chroma.health import check
    from chunkwise.chroma.store import Store, connect
    from chunkwise.pipeline import ingest
    from hashembed import HASH

    folder = tmp_path / "docs"
    folder.mkdir()
    for name in (*SMALL, MARKDOWN.name, "538__trump-poll-tweets.csv"):
        shutil.copy(FIXTURES / name, folder / name)
    db = tmp_path / "db"
    first = ingest([folder], db_path=db, embedder=HASH, workers=1)
    client = connect(db_path=db)  # the settings chunkwise opens it with (one per process)
    col = client.get_collection("chunkwise")
    got = col.get(include=["metadatas", "documents"])
    assert len(got["ids"]) == first.written > 400
    chunks = {c.id: c for name in (*SMALL, MARKDOWN.name, "538__trump-poll-tweets.csv")
              for c in Chunker().chunk_file(folder / name, source=name)}
    slim = ChromaVectorStore(chroma_collection=col).get_nodes(node_ids=got["ids"])
    for node, meta, text in zip(slim, got["metadatas"], got["documents"]):
        # the JSON is leaner than LlamaIndex's own, and LlamaIndex reads it as the full one
        assert '"class_name"' not in meta["_node_content"]
        full = TextNode.from_json(_full_node_content(meta))
        full.set_content(text)
        assert node.model_dump() == full.model_dump()
        chunk = chunks[node.node_id]
        assert node.text == chunk.text and node.ref_doc_id == chunk.source
        assert (node.start_char_idx, node.end_char_idx) == (chunk.start, chunk.end)
        embed = node.get_content(metadata_mode=MetadataMode.EMBED)
        assert embed == (f"{chunk.context}\n\n{node.metadata.get(VIEW_KEY, chunk.text)}"
                         if chunk.context else node.metadata.get(VIEW_KEY, chunk.text))
    # a collection written the old way reads the same, is healthy, and is not rewritten
    col.update(ids=got["ids"], metadatas=[{**m, "_node_content": _full_node_content(m)}
                                          for m in got["metadatas"]])
    old = ChromaVectorStore(chroma_collection=col).get_nodes(node_ids=got["ids"])
    assert [n.model_dump() for n in old] == [n.model_dump() for n in slim]
    assert check(Store(client, "chunkwise", HASH, create=False)).ok
    again = ingest([folder], db_path=db, embedder=HASH, workers=1)
    assert again.skipped == again.files == 5 and again.written == again.updated == 0
