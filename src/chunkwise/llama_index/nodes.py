"""`ChunkwiseNodeParser`: structure-aware chunking as a LlamaIndex node parser, one node per
chunk. Which format and text a document is parsed from is `routing`.

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
from dataclasses import dataclass
from typing import Any, Sequence

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator, model_validator
from llama_index.core.callbacks import CallbackManager
from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.node_utils import default_id_func
from llama_index.core.schema import (BaseNode, Document, MetadataMode, NodeRelationship,
                                     RelatedNodeInfo, TextNode)
from llama_index.core.utils import get_tqdm_iterable

from ..chunking.api import Chunker
from ..errors import ConfigError, ParseError
from ..metadata import flatten_metadata
from ..model import Chunk, ParsedDocument
from ..sizing.sizers import Sizer, get_sizer
from .routing import check_format, route, source_of

log = logging.getLogger(__name__)

#: the metadata key holding a node's chunk context: the one node key that is embedded
CONTEXT_KEY = "context"
#: keys the node parser writes (chunk meta keys that clash with these become `meta.<key>`)
NODE_KEYS = frozenset({"format", "parsed_as", "section_path", "kinds", "tokens", "page_start",
                       "page_end", CONTEXT_KEY})
#: node keys shown to the LLM besides the document's own
_LLM_KEYS = frozenset({CONTEXT_KEY, "page_start", "page_end"})
_MIN_BUDGET = 16
#: tokens a node's embed text can gain where the metadata meets the chunk's own embed text
#: (`context: ` + the context): a BPE or SentencePiece tokenizer may split the context's first
#: word differently after a space; WordPiece and `chars` count both sides separately
_SEAM = {"minilm": 0, "chars": 0}
_SEAM_DEFAULT = 1


# -- node parser ----------------------------------------------------------------------------
class ChunkwiseNodeParser(NodeParser):
    """Structure-aware chunking as a LlamaIndex node parser.

    Every node is one chunk: a span of its document's canonical text that, with the metadata
    LlamaIndex embeds alongside it, fits `max_tokens` under `tokenizer`. Nodes carry exact
    `start_char_idx`/`end_char_idx` into their document's text (None where that text is not
    the canonical text), a SOURCE relationship to the document, PREVIOUS/NEXT only between
    nodes of the same document, and deterministic ids. See `routing` for how a document is parsed.

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
        return check_format(value)

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
        parsed, exact, fmt = route(doc, text, files, format=self.format, root=self.root)
        plan = _Plan.of(self, doc, fmt, exact, parsed.format)
        nodes, counts = self._fit(parsed, plan)
        for node, count in zip(nodes, counts):
            node.metadata["tokens"] = count  # excluded from the embed text: nothing moves
        if self.include_prev_next_rel:
            for prev, cur in zip(nodes, nodes[1:]):
                cur.relationships[NodeRelationship.PREVIOUS] = prev.as_related_node_info()
                prev.relationships[NodeRelationship.NEXT] = cur.as_related_node_info()
        return nodes

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
        return cls(doc=doc, source=source_of(doc, parser.root), fmt=fmt, parsed_as=parsed_as, exact=exact,
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

