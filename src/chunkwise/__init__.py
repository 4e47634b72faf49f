"""chunkwise: structure-aware document chunking for vector stores.

    >>> import chunkwise
    >>> chunks = chunkwise.chunk_text("# Title\\n\\nSome text.", format="markdown")
    >>> chunks[0].section_path
    ('Title',)

Heavy dependencies are imported lazily: `import chunkwise` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ChunkwiseError, ConfigError, MissingDependencyError, ParseError
from .model import Chunk, ParsedDocument, Section

__version__ = "0.1.0"

__all__ = [
    "Chunk", "Chunker", "ChunkwiseError", "ConfigError", "MissingDependencyError",
    "ParseError", "ParsedDocument", "Section", "chunk_file", "chunk_text", "parse_file",
    "__version__",
]

if TYPE_CHECKING:
    from .api import Chunker, chunk_file, chunk_text, parse_file


def __getattr__(name: str) -> Any:
    if name in ("Chunker", "chunk_file", "chunk_text", "parse_file"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'chunkwise' has no attribute {name!r}")
