"""chunkwise.embeddings.process: an embedder rebuilt in a spawned process from its spec gives
what it gives here, vectors and overflow counts alike, whatever it is asked and in what order.
The embedder is the hash one (tests/hashembed.py): what is checked is the hand-off, not the
model."""

from __future__ import annotations

import numpy as np

from chunkwise.embeddings.process import EmbeddingProcess
from chunkwise.embeddings.functions import resolve_embedder

from hashembed import WINDOW, count_long, hash_vectors

SPEC = "hashembed:HASH_WINDOWED"
SHORT = ["a few words", "another short text"]
LONG = ["x" * (WINDOW + 1), "a text that is " + "rather long " * 10]


def test_vectors_and_overflow_counts_are_those_of_the_local_embedder():
    local = resolve_embedder(SPEC)
    with EmbeddingProcess(SPEC, device="auto") as proc:
        away = proc.embedder(local)
        texts = SHORT + LONG
        assert np.array_equal(away.embed(texts), hash_vectors(texts))
        assert away.overflowing(texts) == local.overflowing(texts) == 2
        assert proc.process.is_alive()  # the work was done there


def test_overflow_counts_do_not_depend_on_the_last_texts_embedded():
    with EmbeddingProcess(SPEC, device="auto") as proc:
        away = proc.embedder(resolve_embedder(SPEC))
        away.embed(SHORT)
        # texts other than the last embedded: counted for themselves
        assert away.overflowing(LONG) == count_long(LONG) == 2
        assert away.overflowing(LONG[:1] + SHORT) == 1
        assert away.overflowing(SHORT) == 0
        away.embed(LONG)
        assert away.overflowing(SHORT + LONG) == 2


def test_a_model_without_overflow_counts_has_none_in_the_process_either():
    with EmbeddingProcess("hashembed:HASH", device="auto") as proc:
        away = proc.embedder(resolve_embedder("hashembed:HASH"))
        assert away.overflowing is None
        assert away.embed(SHORT).shape == (2, 16)
