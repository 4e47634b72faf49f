"""LlamaIndex integration: `ChunkwiseNodeParser`, `ChunkwiseReader`, `ChunkwiseEmbedding` and
`ChunkwiseRetriever` (hybrid search over a chunkwise collection).

    >>> from llama_index.core.ingestion import IngestionPipeline
    >>> from llama_index.core.storage.docstore import SimpleDocumentStore
    >>> from chunkwise.llama_index import (ChunkwiseEmbedding, ChunkwiseNodeParser,
    ...                                    ChunkwiseReader, vector_store)
    >>> documents = ChunkwiseReader().load_data("docs/")       # a mixed folder
    >>> store = vector_store("chroma-db", "docs")   # a ChromaVectorStore made as ingest makes one
    >>> pipeline = IngestionPipeline(
    ...     transformations=[ChunkwiseNodeParser(max_tokens=256), ChunkwiseEmbedding()],
    ...     docstore=SimpleDocumentStore(), vector_store=store)
    >>> nodes = pipeline.run(documents=documents)   # run it again: nothing is written twice

Documents from `SimpleDirectoryReader(..., filename_as_id=True)` work too (`filename_as_id`
makes their ids stable, so the docstore can tell a rerun from new documents). Needs the
`llama-index-vector-stores-chroma` package for `ChromaVectorStore`.
The adapter, one module a part: `nodes` (`ChunkwiseNodeParser`: exact offsets, the token
budget with the metadata LlamaIndex embeds), `routing` (which format and which text a
document is parsed from), `reader` (`ChunkwiseReader`) and `embedding`
(`ChunkwiseEmbedding`, `vector_store`).
"""

from .embedding import ChunkwiseEmbedding, vector_store
from .nodes import CONTEXT_KEY, NODE_KEYS, VIEW_KEY, ChunkwiseNodeParser, ViewNode
from .reader import ChunkwiseReader
from .retriever import ChunkwiseRetriever

# The classes keep the module path they had when the adapter was one module: embedder
# identities (`chunkwise.embeddings.resolve_embedder`), the semantic strategy's chunk ids
# (`embedder=ChunkwiseEmbedding()`) and pickles name a class by it.
for _cls in (ChunkwiseEmbedding, ChunkwiseNodeParser, ChunkwiseReader, ViewNode,
             ChunkwiseRetriever):
    _cls.__module__ = __name__
del _cls

__all__ = ["CONTEXT_KEY", "NODE_KEYS", "VIEW_KEY", "ChunkwiseEmbedding", "ChunkwiseNodeParser",
           "ChunkwiseReader", "ChunkwiseRetriever", "ViewNode", "vector_store"]
