"""The PyTorch backend (the CUDA path without onnxruntime-gpu), run here on the CPU: its vectors
match onnxruntime's on the int8 model, on real chunks, in padded batches of mixed lengths and at
the model's 256-token window. Skipped where torch or onnx is not installed (CI has neither)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("onnx")

from chunkwise import Chunker  # noqa: E402
from chunkwise.embeddings.minilm import MAX_TOKENS, MiniLMEmbedder, default_model_path, pad_batch  # noqa: E402
from chunkwise.embeddings.torch_bert import TorchBert, read_onnx_weights  # noqa: E402

from conftest import FIXTURES  # noqa: E402

#: the agreement a GPU must reach too (tests/bench/gpu_check.py)
MIN_COSINE = 0.999


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """About 60 real chunk texts of every fixture format, some cut short, one exactly at the
    window and one far past it."""
    chunker = Chunker()
    out: list[str] = []
    for path in sorted(p for p in FIXTURES.iterdir() if p.name != "SOURCES.md"):
        chunks = [c.embed_text for c in chunker.chunk_file(path)]
        out += chunks[::max(1, len(chunks) // 6)][:6]
    out += [t[:60] for t in out[::7]]  # short texts to share batches with long ones
    out += ["word " * (MAX_TOKENS - 2), "lorem ipsum " * 600]
    return out


@pytest.fixture(scope="module")
def reference(texts) -> np.ndarray:
    return MiniLMEmbedder(device="cpu").embed(texts)


@pytest.fixture(scope="module")
def weights():
    return read_onnx_weights(default_model_path())


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_weights_are_read_and_dequantized_from_the_graph(weights):
    assert len(weights.layers) == 6 and weights.word.shape == (30522, 384)
    assert weights.eps == pytest.approx(1e-12)
    layer = weights.layers[0]
    assert layer["attention.self.query.weight"].shape == (384, 384)
    assert layer["intermediate.dense.weight"].shape == (384, 1536)
    assert layer["output.dense.weight"].shape == (1536, 384)
    assert all(a.dtype == np.float32 for a in layer.values())


def test_embedder_on_torch_cpu_matches_onnxruntime(texts, reference):
    emb = MiniLMEmbedder(device="cpu", backend="torch", batch_size=16)
    got = emb.embed(texts)
    assert emb.info()["backend"] == "torch" and emb.info()["dtype"] == "float32"
    cos = cosines(got, reference)
    assert got.dtype == np.float32 and cos.min() >= MIN_COSINE, cos.min()
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert emb.overflowing(texts) >= 1  # the window text fits, the lorem ipsum does not


def test_padded_batch_of_mixed_lengths(weights, texts, reference):
    """Shortest and longest texts in one batch, unsorted: the short ones carry most padding."""
    tok = MiniLMEmbedder(device="cpu")
    tok._load()
    ids = [e.ids for e in tok._tokenizer.encode_batch(texts)]
    by_length = sorted(range(len(texts)), key=lambda i: len(ids[i]))
    mixed = by_length[:6] + by_length[-6:]
    assert max(len(ids[i]) for i in mixed) == MAX_TOKENS
    runner = TorchBert(weights, device="cpu")
    (got,) = runner.run([pad_batch([ids[i] for i in mixed])])
    assert cosines(got, reference[mixed]).min() >= MIN_COSINE


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_keeps_the_cosine(weights, texts, reference, dtype):
    """CUDA runs in float16: check that precision (and bfloat16) here, on a few texts (half
    precision is slow on a CPU), the two at the window among them."""
    pick = [*range(0, len(texts) - 2, len(texts) // 5), len(texts) - 2, len(texts) - 1]
    emb = MiniLMEmbedder(device="cpu", backend="torch")
    emb._load()
    emb._runner = TorchBert(weights, device="cpu", dtype=dtype)
    got = emb.embed([texts[i] for i in pick])
    assert cosines(got, reference[pick]).min() >= MIN_COSINE
