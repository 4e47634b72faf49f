"""The Chroma store: connecting and writing (`store`), small-to-big expansion (`expand`),
health checks (`health`) and the one-writer lock (`locking`). The names users call are here."""

from .store import (Hit, SourceState, Store, as_rows, check_server, chunk_metadata, connect,
                    embed_hash, expand_hits, hnsw_configuration, iter_collection,
                    llama_index_keys, open_embedder, persist_directory, query, search_exact,
                    with_retries)

__all__ = ["Hit", "SourceState", "Store", "as_rows", "check_server", "chunk_metadata",
           "connect", "embed_hash", "expand_hits", "hnsw_configuration", "iter_collection",
           "llama_index_keys", "open_embedder", "persist_directory", "query", "search_exact",
           "with_retries"]
