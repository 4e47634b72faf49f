"""The default embedder runs the real all-MiniLM-L6-v2 model: vectors, batching, checksums, and
its registration as a Chroma embedding function."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from chunkwise.embeddings import functions as E
from chunkwise.embeddings import minilm
from chunkwise.errors import ConfigError

PARAPHRASES = ("The cat is sleeping on the sofa.", "A cat naps on the couch.")
UNRELATED = "Quarterly revenue grew by four percent in the northern region."


@pytest.fixture(scope="module")
def embedder() -> E.MiniLMEmbedder:
    return E.MiniLMEmbedder(device="cpu")  # the onnxruntime session, even on a GPU machine


class RecordingSession:
    """Wraps the onnxruntime session to record the shape of every batch it is fed."""

    def __init__(self, session):
        self.session = session
        self.shapes: list[tuple[int, int]] = []

    def get_inputs(self):
        return self.session.get_inputs()

    def run(self, outputs, feeds, run_options=None):
        self.shapes.append(feeds["input_ids"].shape)
        return self.session.run(outputs, feeds, run_options)


def test_vectors_have_model_shape_and_unit_norm(embedder):
    v = embedder.embed([*PARAPHRASES, UNRELATED])
    assert v.shape == (3, E.DIMENSIONS) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, E.DIMENSIONS)


def test_paraphrases_are_closer_than_unrelated_text(embedder):
    a, b, c = embedder.embed([*PARAPHRASES, UNRELATED])
    assert a @ b > 0.6
    assert a @ b > a @ c + 0.4 and a @ b > b @ c + 0.4


def test_embed_rejects_a_bare_string(embedder):
    with pytest.raises(TypeError):
        embedder.embed("not a list")


def test_batches_are_sorted_by_length_padded_to_their_longest_and_order_is_restored():
    emb = E.MiniLMEmbedder(batch_size=4, device="cpu")
    texts = [("word " * n).strip() for n in (40, 3, 25, 1, 60, 8, 2, 33, 5, 17)]
    singles = np.stack([emb.embed([t])[0] for t in texts])
    rec = RecordingSession(emb._runner.session)
    emb._runner.session = rec
    batched = emb.embed(texts)
    lengths = sorted(n + 2 for n in (40, 3, 25, 1, 60, 8, 2, 33, 5, 17))  # + [CLS] [SEP]
    expected = [(len(lengths[i:i + 4]), max(lengths[i:i + 4])) for i in range(0, 10, 4)]
    assert rec.shapes == expected  # per-batch padding, never to 256
    # every row is still the vector of its own text, whatever batch it was computed in
    np.testing.assert_allclose(batched, singles, atol=2e-4)


def test_long_text_is_truncated_to_the_model_window(embedder):
    runner = embedder._load()  # (the session to wrap exists only once loaded)
    rec = runner.session = RecordingSession(runner.session)
    try:
        embedder.embed(["lorem ipsum " * 600])
    finally:
        runner.session = rec.session
    assert rec.shapes == [(1, E.MAX_TOKENS)]


def test_overflowing_counts_texts_past_the_window(embedder):
    # "word" is one token; [CLS] and [SEP] take two of the 256
    fits, over = "word " * (E.MAX_TOKENS - 2), "word " * (E.MAX_TOKENS - 1)
    assert embedder.overflowing(["short", fits, over, "lorem ipsum " * 600]) == 2
    assert embedder.overflowing([]) == 0


def test_pinned_model_checksum_is_verified_once(monkeypatch):
    E.verify_sha256(E.default_model_path(), E.INT8_MODEL_SHA256)
    opened = []
    real_open = type(E.default_model_path()).open
    monkeypatch.setattr(type(E.default_model_path()), "open",
                        lambda self, *a, **k: opened.append(self) or real_open(self, *a, **k))
    E.verify_sha256(E.default_model_path(), E.INT8_MODEL_SHA256)
    assert opened == []  # cached: not read again


def test_tampered_model_is_refused(tmp_path, monkeypatch):
    bad = tmp_path / "model.onnx"
    data = bytearray(E.default_model_path().read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad.write_bytes(bytes(data))
    monkeypatch.setattr(minilm, "default_model_path", lambda: bad)
    with pytest.raises(ConfigError, match="sha256"):
        E.MiniLMEmbedder(device="cpu").embed(["hello"])


def test_user_model_directory(tmp_path, embedder):
    folder = tmp_path / "onnx"
    folder.mkdir()
    os.symlink(E.default_model_path(), folder / "model.onnx")
    shutil.copy(E.default_tokenizer_path(), folder / "tokenizer.json")
    own = E.MiniLMEmbedder(folder, device="cpu")
    np.testing.assert_allclose(own.embed([UNRELATED]), embedder.embed([UNRELATED]), atol=1e-6)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(ConfigError, match="has no tokenizer.json"):
        E.MiniLMEmbedder(folder)
    shutil.copy(E.default_tokenizer_path(), folder / "tokenizer.json")
    assert E.resolve_embedder(str(folder)).identity == E.resolve_embedder("minilm").identity


def test_chroma_embedding_function_protocol():
    from chromadb.utils.embedding_functions import known_embedding_functions

    ef = E.ChunkwiseEmbeddingFunction()
    assert known_embedding_functions["chunkwise-minilm"] is E.ChunkwiseEmbeddingFunction
    assert not ef.is_legacy()
    again = E.ChunkwiseEmbeddingFunction.build_from_config(ef.get_config())
    assert again.get_config() == ef.get_config() and again.embedder is ef.embedder
    out = ef(["one", "two"])
    assert len(out) == 2 and len(out[0]) == E.DIMENSIONS
    assert ef.default_space() == "cosine"


def test_reopened_collection_keeps_the_embedding_function(tmp_path):
    import chromadb

    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    col = client.create_collection("notes", embedding_function=E.ChunkwiseEmbeddingFunction())
    col.add(ids=["cat", "money"], documents=[PARAPHRASES[0], UNRELATED])
    # A fresh process that imports chunkwise.embeddings reopens it without arguments.
    code = ("import chromadb, chunkwise.embeddings as E\n"
            f"c = chromadb.PersistentClient(path={str(tmp_path / 'db')!r})\n"
            "col = c.get_collection('notes')\n"
            "assert isinstance(col.configuration['embedding_function'], E.ChunkwiseEmbeddingFunction)\n"
            f"print(col.query(query_texts=[{PARAPHRASES[1]!r}], n_results=1)['ids'][0][0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "cat"


def test_resolve_embedder_specs(monkeypatch, tmp_path):
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2
    from llama_index.core.embeddings import MockEmbedding

    default = E.resolve_embedder(None)
    assert default.identity == E.resolve_embedder("minilm").identity
    assert isinstance(default.chroma_function, E.ChunkwiseEmbeddingFunction)
    by_path = E.resolve_embedder("chunkwise.embeddings:ChunkwiseEmbeddingFunction")
    assert by_path.identity == default.identity
    # the LlamaIndex wrapper of the same model fills the same collections
    wrapped = E.resolve_embedder("chunkwise.llama_index:ChunkwiseEmbedding")
    assert wrapped.identity == default.identity
    assert isinstance(wrapped.chroma_function, E.ChunkwiseEmbeddingFunction)

    mock = E.resolve_embedder(MockEmbedding(embed_dim=8))
    assert mock.identity.startswith("llama_index:") and mock.chroma_function is None
    assert np.asarray(mock.embed(["a", "b"])).shape == (2, 8)

    monkeypatch.setattr(ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", tmp_path / "nothing")
    with pytest.raises(ConfigError, match="never downloads|not cached"):
        E.resolve_embedder("chroma-default")
    for bad in ("no-such-embedder", "nosuchmodule_xyz:Thing", "chunkwise.embeddings:Nope"):
        with pytest.raises(ConfigError):
            E.resolve_embedder(bad)
