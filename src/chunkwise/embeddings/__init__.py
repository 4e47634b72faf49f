"""Embeddings: the default model (`minilm`, its torch backend `torch_bert`), the Chroma and
LlamaIndex adapters (`functions`) and the model in its own process (`process`).

`functions` imports chromadb, so it is loaded on first use of one of its names here: the
spec `chunkwise.embeddings:ChunkwiseEmbeddingFunction` keeps naming the same class.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name.startswith("_") or name in ("functions", "minilm", "process", "torch_bert"):
        # a submodule not loaded yet: `from . import functions` asks for it here first
        raise AttributeError(name)
    from . import functions

    try:
        return getattr(functions, name)
    except AttributeError:
        raise AttributeError(f"module 'chunkwise.embeddings' has no attribute {name!r}") from None
