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
    "ParseError", "ParsedDocument", "Section", "chunk_file", "chunk_text", "explain",
    "parse_file", "__version__",
]

if TYPE_CHECKING:
    from .chunking.api import Chunker, chunk_file, chunk_text, parse_file


def _register_with_chroma() -> None:
    """Register the `chunkwise-minilm` embedding function with Chroma as soon as chromadb is
    imported (now, if it is already), without importing it here: a collection chunkwise made
    then answers plain chromadb `col.query(query_texts=...)` with its own model, offline."""
    import sys

    if "chromadb" in sys.modules:
        _load_embeddings()
        return
    from importlib.abc import MetaPathFinder
    from importlib.machinery import PathFinder

    class _AfterChromadb(MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
            if fullname != "chromadb":
                return None
            sys.meta_path.remove(self)
            spec = PathFinder.find_spec(fullname, path)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                run(module)
                _load_embeddings()

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
            return spec

    sys.meta_path.insert(0, _AfterChromadb())


def _load_embeddings() -> None:
    try:
        from .embeddings import functions  # noqa: F401  (registers the function)
    except ImportError:  # a chromadb too old or broken: chunkwise's own commands say so
        pass


_register_with_chroma()


def __getattr__(name: str) -> Any:
    if name in ("Chunker", "chunk_file", "chunk_text", "parse_file"):
        from .chunking import api

        return getattr(api, name)
    if name == "explain":  # the retrieval debugger (chromadb, the model: loaded when called)
        from .evaluation.explain import explain

        return explain
    raise AttributeError(f"module 'chunkwise' has no attribute {name!r}")
