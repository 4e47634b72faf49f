"""The Chroma store, one module a concern: `store` (connect, open the collection, write in
batches), `records` (the metadata stored with each chunk, LlamaIndex's node JSON included),
`queries` (nearest chunks, exact search, section expansion, reading every record),
`search` (hybrid search: the vectors and the word index of `lexical`, fused),
`expand` (small-to-big expansion), `health` (are all vectors findable, and the repair) and
`locking` (one writer per database). The names users call are here."""

from .queries import Hit, expand_hits, iter_collection, query, search_exact
from .records import chunk_metadata, embed_hash, llama_index_keys
from .search import MODES, fuse, search
from .store import (SourceState, Store, as_rows, check_server, connect, hnsw_configuration,
                    open_embedder, persist_directory, with_retries)

__all__ = ["Hit", "SourceState", "Store", "as_rows", "check_server", "chunk_metadata",
           "connect", "embed_hash", "expand_hits", "hnsw_configuration", "iter_collection",
           "llama_index_keys", "MODES", "fuse", "open_embedder", "persist_directory", "query",
           "search", "search_exact", "with_retries"]
