"""Choosing where all-MiniLM-L6-v2 runs: `auto` stays on the CPU without a GPU (and imports no
torch), `cuda` insists and says what to install, onnxruntime-gpu's provider is asked for and
checked, and the GPU batch size rule. CUDA itself is faked: these run anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from chunkwise.embeddings import functions as E
from chunkwise.embeddings import minilm
from chunkwise.errors import ConfigError, MissingDependencyError

TEXTS = ["The cat is sleeping on the sofa.", "word " * 300, "short"]


@pytest.fixture
def no_cuda_backend(monkeypatch):
    """Neither backend installed: onnxruntime without the CUDA provider, no torch."""
    import onnxruntime

    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError


class FakeCudaSession:
    """An onnxruntime session that reports the providers it was asked for, recording them; the
    work is done by a real CPU session."""

    real = None
    asked: list = []

    def __init__(self, path, sess_options=None, providers=()):
        FakeCudaSession.asked = list(providers)
        self._real = FakeCudaSession.real(path, sess_options=sess_options,
                                          providers=["CPUExecutionProvider"])

    def get_providers(self):
        return [p if isinstance(p, str) else p[0] for p in FakeCudaSession.asked]

    def __getattr__(self, name):
        return getattr(self._real, name)


@pytest.fixture
def fake_ort_cuda(monkeypatch):
    import onnxruntime

    monkeypatch.setattr(FakeCudaSession, "real", onnxruntime.InferenceSession)
    monkeypatch.setattr(onnxruntime, "get_available_providers",
                        lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(onnxruntime, "InferenceSession", FakeCudaSession)
    return FakeCudaSession


def test_bad_device_and_backend_are_refused_when_built():
    for bad in ("gpu", "cuda:", "CPU", "cuda:x", ""):
        with pytest.raises(ConfigError, match="device must be"):
            minilm.MiniLMEmbedder(device=bad)
    with pytest.raises(ConfigError, match="backend must be"):
        minilm.MiniLMEmbedder(backend="tensorrt")
    with pytest.raises(ConfigError, match="device must be"):
        E.resolve_embedder("minilm", device="tpu")


def test_auto_without_a_gpu_is_the_cpu_and_imports_no_torch():
    code = ("import sys, json\n"
            "from chunkwise.embeddings.minilm import MiniLMEmbedder\n"
            "e = MiniLMEmbedder()\n"
            "v = e.embed(['hello'])\n"
            "print(json.dumps({**e.info(), 'torch': 'torch' in sys.modules,"
            " 'onnx': 'onnx' in sys.modules, 'chromadb': 'chromadb' in sys.modules}))\n")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU, even on a machine with one
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info == {"backend": "onnxruntime", "device": "cpu", "dtype": "float32",
                    "batch_size": minilm.DEFAULT_BATCH_SIZE, "gpu": None,
                    "torch": False, "onnx": False, "chromadb": False}


def test_cuda_without_a_backend_names_what_to_install(no_cuda_backend):
    with pytest.raises(MissingDependencyError, match=r"onnxruntime-gpu \(or torch and onnx\)"
                                                     r".*chunkwise\[gpu\]"):
        minilm.MiniLMEmbedder(device="cuda").embed(TEXTS)
    with pytest.raises(MissingDependencyError, match="pip install torch"):
        minilm.MiniLMEmbedder(device="cuda", backend="torch").embed(TEXTS)


def test_onnxruntime_gpu_shadowed_by_onnxruntime_is_explained(no_cuda_backend, monkeypatch):
    from importlib import metadata

    monkeypatch.setattr(metadata, "version", lambda name: "1.22.0")  # onnxruntime-gpu is there
    with pytest.raises(ConfigError, match="onnxruntime shadows it: pip uninstall"):
        minilm.MiniLMEmbedder(device="cuda", backend="onnxruntime").embed(TEXTS)


def test_cuda_with_torch_that_sees_no_gpu(no_cuda_backend, monkeypatch):
    fake = types.SimpleNamespace(__version__="2.0-fake", version=types.SimpleNamespace(cuda=None),
                                 cuda=types.SimpleNamespace(is_available=lambda: False))
    monkeypatch.setitem(sys.modules, "torch", fake)
    with pytest.raises(ConfigError, match=r"torch 2.0-fake \(a CPU-only build\) sees no CUDA GPU"):
        minilm.MiniLMEmbedder(device="cuda", backend="torch").embed(TEXTS)


def test_torch_backend_without_onnx_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace())
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(MissingDependencyError, match="pip install onnx"):
        minilm.MiniLMEmbedder(device="cpu", backend="torch").embed(TEXTS)


def test_auto_with_a_gpu_but_no_backend_falls_back_silently(no_cuda_backend, monkeypatch,
                                                             caplog):
    monkeypatch.setattr(minilm, "cuda_visible", lambda: True)
    emb = minilm.MiniLMEmbedder()
    with caplog.at_level("WARNING"):
        v = emb.embed(TEXTS)
    assert emb.info()["device"] == "cpu" and v.shape == (3, minilm.DIMENSIONS)
    assert not caplog.records


def test_onnxruntime_cuda_provider_is_asked_for_and_checked(fake_ort_cuda, monkeypatch):
    emb = minilm.MiniLMEmbedder(device="cuda:1", backend="onnxruntime")
    v = emb.embed(TEXTS)
    assert fake_ort_cuda.asked == [("CUDAExecutionProvider", {"device_id": 1}),
                                   "CPUExecutionProvider"]
    assert emb.info() == {"backend": "onnxruntime", "device": "cuda:1", "dtype": "float32",
                          "batch_size": minilm.cuda_batch_size(None), "gpu": None}
    cpu = minilm.MiniLMEmbedder(device="cpu").embed(TEXTS)
    np.testing.assert_allclose(v, cpu, atol=1e-6)
    # the provider could not start (no driver, no cuDNN): onnxruntime fell back to the CPU
    monkeypatch.setattr(FakeCudaSession, "get_providers", lambda self: ["CPUExecutionProvider"])
    with pytest.raises(ConfigError, match="could not start CUDA"):
        minilm.MiniLMEmbedder(device="cuda", backend="onnxruntime").embed(TEXTS)


def test_cuda_batch_size_rule():
    gib = 2**30
    assert minilm.cuda_batch_size(80 * gib) == 1024   # H100
    assert minilm.cuda_batch_size(40 * gib) == 512
    assert minilm.cuda_batch_size(24 * gib) == 256
    assert minilm.cuda_batch_size(16 * gib) == 256
    assert minilm.cuda_batch_size(8 * gib) == 128
    assert minilm.cuda_batch_size(2 * gib) == 64
    assert minilm.cuda_batch_size(None) == 256        # memory unknown (onnxruntime-gpu)


def test_resolve_embedder_passes_the_device_to_minilm_only():
    from llama_index.core.embeddings import MockEmbedding

    emb = E.resolve_embedder("minilm", device="cpu")
    assert emb.chroma_function.embedder.device == "cpu"
    assert emb.identity == E.resolve_embedder(None).identity  # one model, whatever runs it
    assert "device" not in emb.chroma_function.get_config()
    with pytest.raises(ConfigError, match="minilm embedder only"):
        E.resolve_embedder(MockEmbedding(embed_dim=8), device="cuda")
    assert E.resolve_embedder(MockEmbedding(embed_dim=8)).identity.startswith("llama_index:")
    ef = E.ChunkwiseEmbeddingFunction(device="cpu")
    assert E.resolve_embedder(ef).chroma_function.embedder.device == "cpu"


_ARENA_SCRIPT = r"""
import json, sys
from pathlib import Path
from chunkwise.embeddings.minilm import MiniLMEmbedder

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024

words = Path(sys.argv[1]).read_text(encoding="utf-8").split()
texts = [" ".join(words[i * 200:(i + 1) * 200]) for i in range(64)]  # ~256 tokens each
model = MiniLMEmbedder(device="cpu", batch_size=32)
model.embed(["warm up"])
loaded = rss_mb()
model.embed(texts)
print(json.dumps({"loaded": loaded, "after": rss_mb()}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_memory_of_a_long_batch_is_given_back(tmp_path):
    # onnxruntime's CPU arena used to keep the buffers of the longest batch for the life of
    # the session (64 texts of 256 tokens in batches of 32: ~730 MB held after the call); each
    # run now shrinks the arena back
    from conftest import FIXTURES

    out = subprocess.run([sys.executable, "-c", _ARENA_SCRIPT,
                          str(FIXTURES / "alice-in-wonderland.txt")],
                         capture_output=True, text=True, timeout=600, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["after"] - got["loaded"] < 250, got
