"""Embeddings: the default model wired into Chroma, and adapters that let any Chroma embedding
function or LlamaIndex embed model stand in for it.

The default is all-MiniLM-L6-v2 run locally (`chunkwise.embeddings.minilm`, re-exported here): the pinned
int8 ONNX model with onnxruntime on the CPU, or on a CUDA GPU when there is one.

    >>> from chunkwise.embeddings import MiniLMEmbedder
    >>> vectors = MiniLMEmbedder().embed(["a sentence", "another one"])  # (2, 384), unit norm
    >>> embedder = resolve_embedder("minilm", device="cuda")  # what the Chroma writer takes

`ChunkwiseEmbeddingFunction` is registered with Chroma (`@register_embedding_function`), so a
collection created with it is reopened with it, provided this module has been imported. The
device is not part of its config: vectors from the CPU and a GPU agree within cosine 0.999, so a
collection filled on one machine is reopened on another with that machine's own choice.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import threading
from dataclasses import replace, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from ..errors import ConfigError
# The model itself lives in chunkwise.embeddings.minilm (no chromadb there); these names are re-exported.
from .minilm import (CHROMA_CACHE_DIR, DEFAULT_BATCH_SIZE, DIMENSIONS,  # noqa: F401
                     INT8_MODEL_SHA256, MAX_TOKENS, MODEL_NAME, TOKENIZER_SHA256, MiniLMEmbedder,
                     check_device, default_model_path, default_tokenizer_path,
                     mean_pool_normalise, verify_sha256)

log = logging.getLogger(__name__)


# -- Chroma ---------------------------------------------------------------------------------
_shared: dict[tuple[str | None, int | None, str], MiniLMEmbedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model_dir: str | None = None, batch_size: int | None = None,
                    device: str = "auto") -> MiniLMEmbedder:
    """One loaded model per (directory, batch size, device) and process: Chroma rebuilds
    embedding functions from config each time a collection is opened. `batch_size` None picks
    one for the device; `device` is `auto`, `cpu`, `cuda` or `cuda:N`."""
    key = (str(Path(model_dir).expanduser()) if model_dir else None, batch_size,
           check_device(device))
    with _shared_lock:
        if key not in _shared:
            _shared[key] = MiniLMEmbedder(model_dir, batch_size=batch_size, device=device)
        return _shared[key]


@register_embedding_function
class ChunkwiseEmbeddingFunction(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 as a Chroma embedding function (`name()` = `chunkwise-minilm`).

        >>> collection = client.get_or_create_collection(
        ...     "docs", embedding_function=ChunkwiseEmbeddingFunction())
    """

    def __init__(self, model_dir: str | None = None, batch_size: int | None = None,
                 device: str = "auto") -> None:
        self.model_dir = str(model_dir) if model_dir else None
        self.batch_size = batch_size
        self.device = device
        self.embedder = shared_embedder(self.model_dir, batch_size, device)

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "chunkwise-minilm"

    def get_config(self) -> dict[str, Any]:
        # No device: where the model runs is the reopening machine's choice (module docstring).
        config: dict[str, Any] = {"model_dir": self.model_dir}
        if self.batch_size is not None:
            config["batch_size"] = self.batch_size
        return config

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChunkwiseEmbeddingFunction:
        return ChunkwiseEmbeddingFunction(model_dir=config.get("model_dir"),
                                          batch_size=config.get("batch_size"))

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        unknown = set(config) - {"model_dir", "batch_size"}
        if unknown:
            raise ValueError(f"unknown chunkwise-minilm options: {sorted(unknown)}")

    def validate_config_update(self, old_config: dict[str, Any],
                               new_config: dict[str, Any]) -> None:
        # int8 and fp32 files of the same model give interchangeable vectors; nothing to refuse
        return

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "l2", "ip"]

    def max_tokens(self) -> int:
        return MAX_TOKENS


# -- any embedder ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Embedder:
    """What the Chroma writer needs from an embedding model.

    `embed` maps texts to vectors; `identity` names the model (a collection is never filled by
    two models); `spec` is the string that rebuilds it (None for objects passed in);
    `chroma_function` is attached to the collection so Chroma can embed queries itself.
    """

    identity: str
    embed: Callable[[Sequence[str]], Any]
    spec: str | None = None
    chroma_function: Any = None
    query_embed: Callable[[Sequence[str]], Any] | None = None
    #: the model's window in its own tokens, and how many of some texts exceed it (so are
    #: embedded only in part); None when the model does not say
    window: int | None = None
    overflowing: Callable[[Sequence[str]], int] | None = None
    #: loads the model ahead of the first texts (the ingest pipeline calls it on the embed
    #: thread while the first files are parsed); None when there is nothing to load
    load: Callable[[], Any] | None = None
    #: True when `embed` does more than the model `spec` names (a cache around it, say): the
    #: ingest pipeline then keeps it in its own process instead of rebuilding it from `spec`
    local_only: bool = False

    def embed_queries(self, texts: Sequence[str]) -> Any:
        return (self.query_embed or self.embed)(texts)


def cached_embedder(embedder: Embedder, path: str | os.PathLike) -> Embedder:
    """`embedder` with its document vectors kept in an SQLite file at `path`, keyed by the
    model's identity and the text's sha256: a text embedded once is never embedded again,
    in this process or a later one (e.g. when `eval --compare` is re-run after a change
    that leaves most chunks as they were). Queries are not cached."""
    import sqlite3

    path = Path(path)
    if path.parent and not path.parent.is_dir():
        raise ConfigError(f"embedding cache {path}: folder {path.parent} does not exist")
    try:
        db = sqlite3.connect(str(path), check_same_thread=False)
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB)")
    except sqlite3.Error as e:
        raise ConfigError(f"embedding cache {path}: {e}") from e
    lock = threading.Lock()
    salt = embedder.identity.encode() + b"\0"

    def embed(texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        keys = [hashlib.sha256(salt + t.encode("utf-8", "surrogatepass")).digest()
                for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with lock:
            for i in range(0, len(keys), 500):
                part = keys[i:i + 500]
                rows = db.execute("SELECT key, vec FROM vectors WHERE key IN "
                                  f"({','.join('?' * len(part))})", part).fetchall()
                found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in rows)
        todo = list(dict.fromkeys(k for k in keys if k not in found))
        if todo:
            first = {k: t for k, t in zip(keys, texts)}
            fresh = np.asarray(embedder.embed([first[k] for k in todo]), dtype=np.float32)
            with lock, db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                               [(k, v.tobytes()) for k, v in zip(todo, fresh)])
            found.update(zip(todo, fresh))
        return np.stack([found[k] for k in keys])

    return Embedder(identity=embedder.identity, embed=embed, spec=embedder.spec,
                    chroma_function=embedder.chroma_function,
                    query_embed=embedder.query_embed or embedder.embed,
                    window=embedder.window, overflowing=embedder.overflowing,
                    load=embedder.load, local_only=True)


def resolve_embedder(spec: object = None, *, device: str = "auto") -> Embedder:
    """Build an `Embedder` from a spec:

    - None or `minilm`: all-MiniLM-L6-v2, pinned int8 model (the default);
    - a directory with `model.onnx` + `tokenizer.json`: the same model from those files;
    - `chroma-default`: Chroma's own default function (needs its model already cached);
    - `module:attr`: a Chroma embedding function or LlamaIndex embed model, a class (built
      without arguments), a factory, or an instance;
    - a Chroma embedding function or LlamaIndex `BaseEmbedding` object.

    `device` (`auto`, `cpu`, `cuda`, `cuda:N`) is where all-MiniLM-L6-v2 runs (see
    `chunkwise.embeddings.minilm`: `auto` takes a GPU when there is one). Other embedders choose their own
    device, so with them anything but `auto` is a `ConfigError`.
    """
    check_device(device)
    if isinstance(spec, Embedder):
        _own_device(device, spec.identity)
        return spec
    if spec is None or spec == "minilm":
        return _minilm_embedder(None, "minilm", device)
    if isinstance(spec, (str, os.PathLike)):
        return _embedder_from_string(os.fspath(spec), device)
    return _embedder_from_object(spec, None, device)


def _own_device(device: str, name: str) -> None:
    if device != "auto":
        raise ConfigError(f"device={device!r} applies to the minilm embedder only; {name} "
                          "chooses its own device")


def _minilm_embedder(model_dir: str | None, spec: str, device: str) -> Embedder:
    ef = ChunkwiseEmbeddingFunction(model_dir=model_dir, device=device)
    return Embedder(identity=f"chunkwise-minilm/{MODEL_NAME}", embed=ef.embedder.embed,
                    spec=spec, chroma_function=ef, window=MAX_TOKENS,
                    overflowing=ef.embedder.overflowing,
                    load=ef.embedder.load)


def _embedder_from_string(spec: str, device: str) -> Embedder:
    path = Path(spec).expanduser()
    if path.is_dir():
        return _minilm_embedder(str(path.resolve()), str(path.resolve()), device)
    if spec == "chroma-default":
        _own_device(device, spec)
        return _chroma_default()
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"unknown embedder {spec!r}: use minilm, chroma-default, a model "
                          "directory, or module:attribute")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"cannot load embedder {spec!r}: {e}") from e
    if callable(target) and (isinstance(target, type) or not _looks_like_embedder(target)):
        try:
            target = target()
        except Exception as e:
            raise ConfigError(f"cannot build embedder {spec!r}: {type(e).__name__}: {e}") from e
    return _embedder_from_object(target, spec, device)


def _chroma_default() -> Embedder:
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    folder = Path(ONNXMiniLM_L6_V2.DOWNLOAD_PATH) / ONNXMiniLM_L6_V2.EXTRACTED_FOLDER_NAME
    if not (folder / "model.onnx").is_file():
        # Chroma would download it on first use; chunkwise never downloads.
        raise ConfigError(f"Chroma's default model is not cached in {folder}; "
                          "use --embedder minilm (the same model, shipped with chunkwise)")
    return _embedder_from_object(ONNXMiniLM_L6_V2(), "chroma-default", "auto")


def _looks_like_embedder(obj: object) -> bool:
    return hasattr(obj, "get_text_embedding_batch") or hasattr(obj, "get_config")


def _embedder_from_object(obj: Any, spec: str | None, device: str) -> Embedder:
    if isinstance(obj, Embedder):  # `module:attr` naming one of ours
        _own_device(device, spec or obj.identity)
        return obj if obj.spec or spec is None else replace(obj, spec=spec)
    if isinstance(obj, MiniLMEmbedder):
        return _minilm_embedder(str(obj.model_dir) if obj.model_dir else None, spec or "minilm",
                                obj.device if device == "auto" else device)
    if type(obj).__module__ == "chunkwise.llama_index" and type(obj).__name__ == "ChunkwiseEmbedding":
        # the same model behind LlamaIndex's interface: same identity, same collections
        return _minilm_embedder(obj.model_dir, spec or "minilm", device)
    if callable(obj) and _chroma_name(obj) == ChunkwiseEmbeddingFunction.name():
        return _minilm_embedder(obj.model_dir, spec or "minilm",
                                getattr(obj, "device", "auto") if device == "auto" else device)
    _own_device(device, spec or type(obj).__name__)
    if hasattr(obj, "get_text_embedding_batch"):  # a LlamaIndex BaseEmbedding
        model = getattr(obj, "model_name", None) or ""
        identity = f"llama_index:{type(obj).__module__}.{type(obj).__qualname__}:{model}"
        return Embedder(identity=identity,
                        embed=lambda texts: obj.get_text_embedding_batch(list(texts)),
                        spec=spec,
                        query_embed=lambda texts: [obj.get_query_embedding(t) for t in texts])
    if callable(obj):  # a Chroma embedding function
        name = _chroma_name(obj)
        query = getattr(obj, "embed_query", None)
        return Embedder(identity=f"chroma:{name}", embed=lambda texts: obj(list(texts)),
                        spec=spec, chroma_function=obj if not _is_legacy(obj) else None,
                        query_embed=(lambda texts: query(list(texts))) if query else None)
    raise ConfigError(f"not an embedding function or embed model: {obj!r}")


def _chroma_name(ef: Any) -> str:
    try:
        name = ef.name()
    except Exception:
        name = NotImplemented
    if not isinstance(name, str):
        return f"{type(ef).__module__}.{type(ef).__qualname__}"
    return name


def _is_legacy(ef: Any) -> bool:
    try:
        return bool(ef.is_legacy())
    except Exception:
        return True
