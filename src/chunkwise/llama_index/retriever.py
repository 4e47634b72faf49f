"""`ChunkwiseRetriever`: a LlamaIndex retriever over a chunkwise collection, hybrid by
default (`chunkwise.chroma.search`: the vectors and the word index, fused).

    >>> from chunkwise.llama_index import ChunkwiseRetriever
    >>> retriever = ChunkwiseRetriever(db_path="chunkwise-db", similarity_top_k=5)
    >>> nodes = retriever.retrieve("what is CHUNKWISE_MAX_BYTES?")
    >>> engine = RetrieverQueryEngine.from_args(retriever)   # any LlamaIndex query engine

Each result is the node `ChromaVectorStore` reads back from the same record (a chunkwise
record carries LlamaIndex's node JSON), with the search's score: the fused score in
`hybrid`, BM25 in `lexical`, and in `dense` the similarity `ChromaVectorStore` gives,
`exp(-distance)`. The leg ranks are in the node's metadata under `chunkwise_ranks`.
"""

from __future__ import annotations

import math
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from ..chroma.search import DEFAULT_MODE, check_mode, search


class ChunkwiseRetriever(BaseRetriever):
    """Retrieve nodes from a chunkwise collection (embedded `db_path`, or a server at
    `host`/`port` with `lexical` naming its word index file); `where` filters on metadata
    as in Chroma, `mode` is `hybrid`, `dense` or `lexical`."""

    def __init__(self, *, db_path: Any = None, host: str | None = None,
                 port: int | None = None, collection: str = "chunkwise",
                 similarity_top_k: int = 5, mode: str = DEFAULT_MODE,
                 where: dict[str, Any] | None = None, lexical: Any = True,
                 embedder: Any = None, **kwargs: Any) -> None:
        check_mode(mode)
        self._location = {"db_path": db_path, "host": host, "port": port,
                          "collection": collection}
        self._k = similarity_top_k
        self._mode = mode
        self._where = where
        self._lexical = lexical
        self._embedder = embedder
        super().__init__(**kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = search(query_bundle.query_str, k=self._k, mode=self._mode, where=self._where,
                      lexical=self._lexical, embedder=self._embedder, **self._location)
        return [NodeWithScore(node=_node(h), score=_score(h)) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        import asyncio

        return await asyncio.to_thread(self._retrieve, query_bundle)


def _node(hit: Any) -> TextNode:
    meta = dict(hit.metadata)
    try:
        node = metadata_dict_to_node(meta, text=hit.text)
    except Exception:  # noqa: BLE001 - a record without LlamaIndex's node JSON
        node = TextNode(id_=hit.id, text=hit.text,
                        metadata={k: v for k, v in meta.items() if not k.startswith("_")})
    node.metadata["chunkwise_ranks"] = ", ".join(f"{k} #{v}" for k, v in hit.ranks.items())
    node.excluded_embed_metadata_keys = [*node.excluded_embed_metadata_keys, "chunkwise_ranks"]
    node.excluded_llm_metadata_keys = [*node.excluded_llm_metadata_keys, "chunkwise_ranks"]
    return node


def _score(hit: Any) -> float | None:
    if hit.score is not None:
        return float(hit.score)
    return math.exp(-hit.distance) if hit.distance is not None else None
