"""A deterministic hash embedder for tests and benchmarks of code that does not care what the
vectors are (incremental ingest, runners, stores): 16-d unit vectors from a hash of each text.

Importable by spec (`hashembed:HASH`) wherever tests/ is on the path: the CLI in a subprocess,
the pipeline's embedding process, Ray workers, tests/bench/bench_ingest.py's child runs.
"""

from __future__ import annotations

import hashlib

import numpy as np

from chunkwise.embeddings.functions import Embedder


def hash_vectors(texts) -> np.ndarray:
    """Deterministic 16-d unit vectors from a hash of each text."""
    raw = [np.frombuffer(hashlib.blake2b(t.encode("utf-8", "surrogatepass"),
                                         digest_size=64).digest(), dtype=np.uint32)[:16]
           for t in texts]
    out = np.asarray(raw, dtype=np.float32).reshape(len(texts), 16) + 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


HASH = Embedder(identity="test:blake2b-16", embed=hash_vectors)

#: a window of WINDOW characters: texts longer than that count as overflowing
WINDOW = 40


def count_long(texts) -> int:
    return sum(len(t) > WINDOW for t in texts)


HASH_WINDOWED = Embedder(identity="test:blake2b-16-windowed", embed=hash_vectors,
                         window=WINDOW, overflowing=count_long)
