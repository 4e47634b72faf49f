"""LangChain integration: `ChunkwiseTextSplitter`, `ChunkwiseLoader` and `ChunkwiseEmbeddings`
(from a clone: `pip install -e '.[langchain]'`: langchain-core and langchain-text-splitters).

    >>> from chunkwise.langchain import ChunkwiseLoader, ChunkwiseTextSplitter
    >>> docs = ChunkwiseLoader("docs/").load()           # one Document per chunk
    >>> splitter = ChunkwiseTextSplitter(max_tokens=256)
    >>> parts = splitter.split_documents(PyPDFLoader("paper.pdf").load())  # any loader's pages
    >>> store = Chroma.from_documents(parts, embedding=ChunkwiseEmbeddings())  # offline

Both put chunkwise's chunk fields into each `Document`'s metadata, flat as vector stores want
them: `source`, `format`, `section_path` (`A > B`), `kinds` (`code, table`), `tokens`,
`context`, `page_start`/`page_end` (paged formats), `start_index`/`end_index` (offsets into the
canonical text; LangChain's own key for the start), `id`, and the format's extras
(`line_start`, `row_start`, `symbol`, …). `page_content` is the chunk's text; to embed what
chunkwise embeds (the context, a blank line, then the text), use `embed_text(document)`.

A loader's `page_content` is text, never a file's bytes: the splitter parses it as `format=`
when given, else as the format the `source` extension names when that is a text format (a
`TextLoader`'s `.md`, `.py`, `.csv`), else as HTML or Markdown when the content is markup,
else as plain text. So the pages of `PyPDFLoader` or `Docx2txtLoader` are text, split by
paragraphs, lines and sentences; the loader's page (`page`, 0-based, or `page_number`) becomes
`page_start`/`page_end`, and its metadata is kept.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Iterable, Iterator, Sequence

try:
    from langchain_core.document_loaders import BaseLoader
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_text_splitters import TextSplitter
except ImportError as e:  # an optional extra
    from .errors import MissingDependencyError

    raise MissingDependencyError("langchain-core and langchain-text-splitters",
                                 extra="langchain") from e

from .chunking.api import Chunker
from .errors import ChunkwiseError, ConfigError
from .metadata import flatten_metadata
from .model import Chunk, embed_text as chunk_embed_text
from .parsers import MODULES, detect_format, sniff

__all__ = ["ChunkwiseEmbeddings", "ChunkwiseLoader", "ChunkwiseTextSplitter", "chunk_document",
           "embed_text"]

log = logging.getLogger(__name__)

#: metadata keys chunkwise writes; a chunk meta key equal to one is stored as `meta.<key>`
_KEYS = frozenset({"source", "format", "section_path", "kinds", "tokens", "context",
                   "page_start", "page_end", "start_index", "end_index", "id"})


def chunk_document(chunk: Chunk, extra: dict[str, Any] | None = None) -> Document:
    """A LangChain `Document` of one chunk: its text, and its fields as flat metadata after
    `extra` (the metadata of the document it came from)."""
    meta: dict[str, Any] = dict(extra or {})
    meta.update({"source": chunk.source, "format": chunk.format,
                 "section_path": " > ".join(chunk.section_path), "kinds": ", ".join(chunk.kinds),
                 "tokens": chunk.tokens, "context": chunk.context, "start_index": chunk.start,
                 "end_index": chunk.end, "id": chunk.id})
    if chunk.page_start is not None:
        meta["page_start"], meta["page_end"] = chunk.page_start, chunk.page_end
    for key, value in flatten_metadata(chunk.meta).items():
        meta[f"meta.{key}" if key in _KEYS else key] = value
    return Document(page_content=chunk.text, metadata=meta, id=chunk.id)


def embed_text(document: Document) -> str:
    """What chunkwise embeds for a chunk's `Document`: its context, a blank line, its text."""
    context = document.metadata.get("context") or ""
    return chunk_embed_text(context, document.page_content)


#: formats read from a file's bytes only: a `str` page_content is never one of them
_BINARY = frozenset({"pdf", "docx", "pptx", "xlsx"})
#: formats a `source` extension names that hold only when the content is the file's own markup
#: (a loader may have extracted its text): HTML tags, a notebook's JSON
_MARKUP = frozenset({"html", "notebook", "notebook-outputs"})


def text_format(text: str, source: str | None = None) -> str:
    """The format a text from a loader is parsed as (see the module docstring): the text format
    `source`'s extension names, else `html` or `markdown` when the content says so, else
    `text`; never a format read from bytes (a PDF page's text is text)."""
    sniffed = sniff(text[:8192].encode("utf-8", "surrogatepass"))
    named = detect_format(source) if source else None
    if named in _MARKUP:
        markup = sniffed == "html" if named == "html" else text.lstrip().startswith("{")
        if markup:
            return named
    elif named is not None and named not in _BINARY:
        return named
    return sniffed if sniffed in ("html", "markdown") else "text"


def _loader_page(meta: dict[str, Any]) -> int | None:
    """The 1-based page a loader's metadata gives: `page` (0-based: PyPDFLoader, PyMuPDFLoader,
    PDFPlumberLoader) or `page_number` (1-based: the Unstructured loaders)."""
    page, number = meta.get("page"), meta.get("page_number")
    if isinstance(page, int) and not isinstance(page, bool) and page >= 0:
        return page + 1
    if isinstance(number, int) and not isinstance(number, bool) and number >= 1:
        return number
    return None


class ChunkwiseTextSplitter(TextSplitter):
    """chunkwise's structure-aware chunking as a LangChain `TextSplitter`.

    `split_text` returns the chunks' texts; `create_documents` / `split_documents` return one
    `Document` per chunk with chunkwise's metadata (see the module docstring) after the input
    document's own. Every chunk's embed text (context included) fits `max_tokens` under
    `tokenizer`. Texts are parsed as `format` (`markdown`, `html`, `python`, `csv`, `text`,
    …), else as the module docstring says (`text_format`): a PDF or Office loader's pages are
    text, and keep their page.
    """

    def __init__(self, max_tokens: int = 256, tokenizer: str = "minilm", overlap: int = 0,
                 strategy: str = "structure", format: str | None = None, **kwargs: Any) -> None:
        if format is not None and (format not in MODULES or format in _BINARY):
            raise ConfigError(f"format {format!r} cannot be parsed from a text; text formats: "
                              f"{', '.join(sorted(set(MODULES) - _BINARY))}")
        # LangChain's own sizing options mean nothing here: the Chunker sizes the chunks
        kwargs.setdefault("chunk_size", max_tokens)
        kwargs.setdefault("chunk_overlap", overlap)
        kwargs.setdefault("add_start_index", True)
        super().__init__(**kwargs)
        self._chunker = Chunker(max_tokens=max_tokens, tokenizer=tokenizer, overlap=overlap,
                                strategy=strategy)
        self._format = format

    def chunks(self, text: str, source: str | None = None) -> list[Chunk]:
        """The chunkwise chunks of `text` (named `source`, whose extension may give the
        format)."""
        fmt = self._format or text_format(text, source)
        return self._chunker.chunk_text(text, format=fmt, source=source or "<text>")

    def split_text(self, text: str) -> list[str]:
        return [c.text for c in self.chunks(text)]

    def create_documents(self, texts: list[str],
                         metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        out: list[Document] = []
        for i, text in enumerate(texts):
            meta = dict(metadatas[i]) if metadatas else {}
            source = meta.get("source")
            source = source if isinstance(source, str) and source else None
            page = _loader_page(meta)
            # a page of a file is its own document: its page in the chunks' source keeps the
            # ids of equal text on two pages apart; `source` stays the loader's
            name = f"{source or '<text>'}#page={page}" if page is not None else source
            for c in self.chunks(text, name):
                doc = chunk_document(c, meta)
                if source is not None or page is not None:
                    doc.metadata["source"] = source if source is not None else "<text>"
                if page is not None and c.page_start is None:
                    doc.metadata["page_start"] = doc.metadata["page_end"] = page
                out.append(doc)
        return out

    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        docs = list(documents)
        return self.create_documents([d.page_content for d in docs], [d.metadata for d in docs])


class ChunkwiseLoader(BaseLoader):
    """Files and folders to one LangChain `Document` per chunk, each file parsed from its
    bytes (so HTML, PDF and CSV keep their structure and PDF its pages).

        >>> docs = ChunkwiseLoader(["docs/", "papers/a.pdf"], max_tokens=512).load()

    Folders are walked as `chunkwise chunk` walks them. `source` follows LangChain's loaders
    (`PyPDFLoader`, `DirectoryLoader`), so that their documents and these in one store are
    named alike: the file's path as given (`docs/guide.md`), or under the folder given
    (`docs/` finds `docs/sub/a.md`); with `root`, the path relative to `root` instead, as
    `chunkwise ingest --root` names it. A file that cannot be read or parsed is skipped and
    listed in `failures` as (source, reason); `raise_on_error=True` raises instead.
    """

    def __init__(self, paths: str | os.PathLike | Sequence[str | os.PathLike], *,
                 max_tokens: int = 256, tokenizer: str = "minilm", overlap: int = 0,
                 strategy: str = "structure", format: str | None = None,
                 root: str | os.PathLike | None = None, raise_on_error: bool = False) -> None:
        self.paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
        self.chunker = Chunker(max_tokens=max_tokens, tokenizer=tokenizer, overlap=overlap,
                               strategy=strategy)
        self.format, self.root, self.raise_on_error = format, root, raise_on_error
        self.failures: list[tuple[str, str]] = []

    def lazy_load(self) -> Iterator[Document]:
        from .pipeline.discover import ReadError, discover, read_bounded, resolve_root

        self.failures = []
        seen: set[str] = set()
        for name, path in self._files(discover, resolve_root):
            if path in seen:  # named twice (two paths given, one inside the other)
                continue
            seen.add(path)
            try:
                chunks = self.chunker.chunk_bytes(read_bounded(path), source=name,
                                                  format=self.format)
            except (ChunkwiseError, ReadError) as e:
                if self.raise_on_error:
                    raise
                self.failures.append((name, str(e)))
                continue
            for c in chunks:
                yield chunk_document(c)

    def _files(self, discover: Any, resolve_root: Any) -> Iterator[tuple[str, str]]:
        """(source, path to open) of every file, named as the class docstring says; the
        paths that do not exist go to `failures`."""
        if self.root is not None:
            walks = [(None, discover(self.paths, root=resolve_root(self.root)))]
        else:  # each path its own walk, named from the path as given
            walks = [(os.fspath(p), discover([p])) for p in self.paths]
        for given, found in walks:
            self.failures.extend((name, "no such file or directory") for name in found.missing)
            for task in found.files:
                if given is None:
                    yield task.source, task.path
                elif os.path.isdir(given):
                    yield os.path.join(given, task.source), task.path
                else:
                    yield given, task.path


class ChunkwiseEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 as a LangChain `Embeddings`: the model and vectors of `chunkwise
    ingest` (the pinned int8 ONNX model run locally, nothing downloaded), 384 dimensions, unit
    norm, so a `langchain_chroma.Chroma` store works offline.

        >>> store = Chroma.from_documents(docs, embedding=ChunkwiseEmbeddings(),
        ...                               collection_metadata={"hnsw:space": "cosine",
        ...                                                    "hnsw:search_ef": 1600})

    `model_dir`: a directory with an fp32 `model.onnx` and `tokenizer.json` of the same model
    (`chunkwise ingest --embedder DIR`); `device`: `auto`, `cpu`, `cuda`, `cuda:N`. Texts over
    the model's 256-token window are embedded in part (one warning): split with the `minilm`
    tokenizer and `max_tokens` <= 256.
    """

    def __init__(self, model_dir: str | os.PathLike | None = None, *,
                 batch_size: int | None = None, device: str = "auto") -> None:
        from .embeddings.minilm import check_device

        self.model_dir = os.fspath(model_dir) if model_dir is not None else None
        self.batch_size, self.device = batch_size, check_device(device)
        self._model: Any = None
        self._warned = False

    def _embedder(self) -> Any:
        if self._model is None:  # chromadb and onnxruntime: loaded on first use
            from .embeddings.functions import shared_embedder

            self._model = shared_embedder(self.model_dir, self.batch_size, self.device)
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        texts = list(texts)
        if not texts:
            return []
        model = self._embedder()
        over = 0 if self._warned else model.overflowing(texts)
        if over:  # once per object: a store embeds in many batches
            from .embeddings.minilm import MAX_TOKENS

            self._warned = True
            log.warning("%d of %d texts are longer than the model's %d-token window: only their "
                        "start is embedded (split with max_tokens=%d, minilm tokenizer)",
                        over, len(texts), MAX_TOKENS, MAX_TOKENS)
        return model.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._embedder().embed([text])[0].tolist()


# -- retrieval ------------------------------------------------------------------------------
from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402


class ChunkwiseRetriever(BaseRetriever):
    """A LangChain retriever over a chunkwise collection, hybrid by default
    (`chunkwise.chroma.search`: the vectors and the word index, fused); `invoke`, `ainvoke`,
    `batch` as any retriever.

        >>> retriever = ChunkwiseRetriever(db_path="chunkwise-db", k=5)
        >>> docs = retriever.invoke("what is CHUNKWISE_MAX_BYTES?")

    Each `Document` holds the chunk's text and its stored metadata, with `id`, `score` (fused
    in `hybrid`, BM25 in `lexical`, none in `dense`), `distance` and `ranks` (`dense #2,
    lexical #1`) added."""

    db_path: Any = None
    host: str | None = None
    port: int | None = None
    collection: str = "chunkwise"
    k: int = 5
    mode: str = "hybrid"
    where: dict[str, Any] | None = None
    lexical: Any = True
    embedder: Any = None

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        from .chroma.search import search

        hits = search(query, k=self.k, mode=self.mode, where=self.where, lexical=self.lexical,
                      embedder=self.embedder, db_path=self.db_path, host=self.host,
                      port=self.port, collection=self.collection)
        out = []
        for h in hits:
            meta = {k: v for k, v in h.metadata.items() if not k.startswith("_")}
            meta.update(id=h.id, score=h.score, distance=h.distance,
                        ranks=", ".join(f"{k} #{v}" for k, v in h.ranks.items()))
            out.append(Document(page_content=h.text, metadata=meta, id=h.id))
        return out
