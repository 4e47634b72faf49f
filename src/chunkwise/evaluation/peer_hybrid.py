"""The peers' own hybrid search, for `chunkwise eval --compare … --mode hybrid`: each peer's
default chunks, searched the way its documentation builds a hybrid retriever.

| name | chunks | retriever |
|---|---|---|
| `langchain:hybrid` | `langchain:recursive`'s | `EnsembleRetriever([BM25Retriever, Chroma(...).as_retriever()], weights=[0.5, 0.5])` |
| `llamaindex:hybrid` | `llamaindex:sentence`'s | `QueryFusionRetriever([vector retriever, BM25Retriever], num_queries=1, mode="reciprocal_rerank")` |

LangChain's `BM25Retriever` is `rank_bm25`'s Okapi BM25 over `str.split()` tokens (its
default preprocessing); its `EnsembleRetriever` fuses by weighted reciprocal rank (c = 60).
LlamaIndex's `BM25Retriever` (`llama-index-retrievers-bm25`) is `bm25s` with English stemming
and stop words, and `QueryFusionRetriever` with `num_queries=1` asks no LLM (the docs' setting
"to disable query generation"). Both vector legs read the collection `store_peer` wrote, with
the same model and the same HNSW settings as chunkwise's own dense leg, through each
framework's own Chroma store (`langchain_chroma.Chroma`, `ChromaVectorStore`). Each leg is
asked for the k the evaluation needs, as a user sets `k` / `similarity_top_k`.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Callable

from ..errors import MissingDependencyError

Searcher = Callable[[str, int], list[Any]]
"""(question, k) -> the hits, best first (`chunkwise.chroma.queries.Hit`)."""

#: peer -> (the chunks' peer, the modules its retriever needs: any one of each group)
HYBRIDS: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = {
    "langchain:hybrid": ("langchain:recursive", (
        ("langchain_classic", "langchain"), ("langchain_community",), ("rank_bm25",),
        ("langchain_chroma",))),
    "llamaindex:hybrid": ("llamaindex:sentence", (
        ("llama_index.retrievers.bm25",), ("llama_index.vector_stores.chroma",))),
}


def installed(module: str) -> bool:
    """Whether `module` can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def check_hybrid(name: str) -> None:
    """`MissingDependencyError` naming the first package `name`'s retriever lacks."""
    for group in HYBRIDS[name][1]:
        if not any(installed(m) for m in group):
            raise MissingDependencyError(f"{group[0]} (peer {name})", "compare")


def _hit(text: str, meta: dict[str, Any], id_: str | None, score: float | None) -> Any:
    from ..chroma.queries import Hit

    return Hit(id=id_ or "", source=str(meta.get("source", "")), text=text, distance=None,
               section_path=(), page_start=None, page_end=None, context="",
               metadata=dict(meta), score=score)


def _rows(vectors: Any) -> list[list[float]]:
    return [[float(x) for x in v] for v in vectors]


def _langchain(records: tuple[list[str], list[str], list[dict]], client: Any, collection: str,
               embedder: Any) -> Searcher:
    try:
        from langchain_classic.retrievers import EnsembleRetriever
    except ImportError:  # langchain < 1.0
        from langchain.retrievers import EnsembleRetriever  # type: ignore[no-redef]
    from langchain_chroma import Chroma
    from langchain_community.retrievers import BM25Retriever
    from langchain_core.embeddings import Embeddings

    class Model(Embeddings):  # the evaluation's embedder, as LangChain calls one
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return _rows(embedder.embed(list(texts)))

        def embed_query(self, text: str) -> list[float]:
            return _rows(embedder.embed_queries([text]))[0]

    ids, texts, metas = records
    bm25 = BM25Retriever.from_texts(texts, metadatas=metas, ids=ids)
    store = Chroma(client=client, collection_name=collection, embedding_function=Model())

    def search(question: str, k: int) -> list[Any]:
        bm25.k = k
        vector = store.as_retriever(search_kwargs={"k": k})
        docs = EnsembleRetriever(retrievers=[bm25, vector], weights=[0.5, 0.5]).invoke(question)
        return [_hit(d.page_content, d.metadata, d.id, None) for d in docs[:k]]

    return search


def _llamaindex(records: tuple[list[str], list[str], list[dict]], client: Any, collection: str,
                embedder: Any) -> Searcher:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever
    from llama_index.vector_stores.chroma import ChromaVectorStore

    class Model(BaseEmbedding):  # the evaluation's embedder, as LlamaIndex calls one
        def _get_query_embedding(self, query: str) -> list[float]:
            return _rows(embedder.embed_queries([query]))[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return _rows(embedder.embed([text]))[0]

    ids, texts, metas = records
    nodes = [TextNode(id_=i, text=t, metadata=m) for i, t, m in zip(ids, texts, metas)]
    index = VectorStoreIndex.from_vector_store(
        ChromaVectorStore(chroma_collection=client.get_collection(collection)),
        embed_model=Model(model_name="chunkwise-eval"))

    bm25s: dict[int, Any] = {}  # one index per k (an evaluation asks one k)

    def search(question: str, k: int) -> list[Any]:
        if k not in bm25s:
            bm25s[k] = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=k)
        bm25 = bm25s[k]
        fusion = QueryFusionRetriever([index.as_retriever(similarity_top_k=k), bm25],
                                      similarity_top_k=k, num_queries=1,
                                      mode="reciprocal_rerank", use_async=False,
                                      llm=MockLLM())
        found = fusion.retrieve(question)
        return [_hit(n.node.get_content(), n.node.metadata, n.node.node_id, n.score)
                for n in found[:k]]

    return search


def hybrid_searcher(name: str, records: tuple[list[str], list[str], list[dict]], *,
                    db_path: str | os.PathLike, collection: str, embedder: Any) -> Searcher:
    """The peer `name`'s hybrid search over the chunks `records` (ids, texts, metadata) that
    `store_peer` wrote to `collection`."""
    from ..chroma.store import connect

    check_hybrid(name)
    build = _langchain if name.startswith("langchain:") else _llamaindex
    return build(records, connect(db_path=db_path), collection, embedder)


__all__ = ["HYBRIDS", "Searcher", "check_hybrid", "hybrid_searcher", "installed"]
