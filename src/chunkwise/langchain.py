"""LangChain integration: `ChunkwiseTextSplitter` and `ChunkwiseLoader`
(`pip install 'chunkwise[langchain]'`: langchain-core and langchain-text-splitters).

    >>> from chunkwise.langchain import ChunkwiseLoader, ChunkwiseTextSplitter
    >>> docs = ChunkwiseLoader("docs/").load()           # one Document per chunk
    >>> splitter = ChunkwiseTextSplitter(max_tokens=256, format="markdown")
    >>> parts = splitter.split_documents(markdown_documents)

Both put chunkwise's chunk fields into each `Document`'s metadata, flat as vector stores want
them: `source`, `format`, `section_path` (`A > B`), `kinds` (`code, table`), `tokens`,
`context`, `page_start`/`page_end` (paged formats), `start_index`/`end_index` (offsets into the
canonical text; LangChain's own key for the start), `id`, and the format's extras
(`line_start`, `row_start`, `symbol`, …). `page_content` is the chunk's text; to embed what
chunkwise embeds (the context, a blank line, then the text), use `embed_text(document)`.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, Sequence

try:
    from langchain_core.document_loaders import BaseLoader
    from langchain_core.documents import Document
    from langchain_text_splitters import TextSplitter
except ImportError as e:  # an optional extra
    from .errors import MissingDependencyError

    raise MissingDependencyError("langchain-core and langchain-text-splitters",
                                 extra="langchain") from e

from .chunking.api import Chunker
from .errors import ChunkwiseError
from .metadata import flatten_metadata
from .model import Chunk, embed_text as chunk_embed_text

__all__ = ["ChunkwiseLoader", "ChunkwiseTextSplitter", "chunk_document", "embed_text"]

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


class ChunkwiseTextSplitter(TextSplitter):
    """chunkwise's structure-aware chunking as a LangChain `TextSplitter`.

    `split_text` returns the chunks' texts; `create_documents` / `split_documents` return one
    `Document` per chunk with chunkwise's metadata (see the module docstring) after the input
    document's own. Every chunk's embed text (context included) fits `max_tokens` under
    `tokenizer`. Texts are parsed as `format` (`markdown`, `html`, `python`, `csv`, `text`,
    …), else by the `source` metadata's extension, else detected from the text.
    """

    def __init__(self, max_tokens: int = 256, tokenizer: str = "minilm", overlap: int = 0,
                 strategy: str = "structure", format: str | None = None, **kwargs: Any) -> None:
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
        fmt = self._format
        if fmt is None and source:
            from chunkwise.parsers import detect_format

            fmt = detect_format(source)
        return self._chunker.chunk_text(text, format=fmt, source=source or "<text>")

    def split_text(self, text: str) -> list[str]:
        return [c.text for c in self.chunks(text)]

    def create_documents(self, texts: list[str],
                         metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        out: list[Document] = []
        for i, text in enumerate(texts):
            meta = dict(metadatas[i]) if metadatas else {}
            source = meta.get("source")
            chunks = self.chunks(text, source if isinstance(source, str) else None)
            out.extend(chunk_document(c, meta) for c in chunks)
        return out

    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        docs = list(documents)
        return self.create_documents([d.page_content for d in docs], [d.metadata for d in docs])


class ChunkwiseLoader(BaseLoader):
    """Files and folders to one LangChain `Document` per chunk, each file parsed from its
    bytes (so HTML, PDF and CSV keep their structure and PDF its pages).

        >>> docs = ChunkwiseLoader(["docs/", "papers/a.pdf"], max_tokens=512).load()

    Folders are walked as `chunkwise chunk` walks them; `source` is the path relative to the
    folder given (or `root`). A file that cannot be read or parsed is skipped and listed in
    `failures` as (source, reason); `raise_on_error=True` raises instead.
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
        found = discover(self.paths, root=resolve_root(self.root) if self.root else None)
        for name in found.missing:
            self.failures.append((name, "no such file or directory"))
        for task in found.files:
            try:
                chunks = self.chunker.chunk_bytes(read_bounded(task.path), source=task.source,
                                                  format=self.format)
            except (ChunkwiseError, ReadError) as e:
                if self.raise_on_error:
                    raise
                self.failures.append((task.source, str(e)))
                continue
            for c in chunks:
                yield chunk_document(c)
