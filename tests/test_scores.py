"""The scales of the numbers a hit carries, as docs/reference.md#scores-and-distances states
them, on a real embedded Chroma with the real model: `query()` and `--mode dense` give the
cosine distance (smaller is closer); LlamaIndex's own retriever over the same collection
(`ChromaVectorStore`) and `ChunkwiseRetriever(mode="dense")` give exp(-distance) (larger is
closer; 0.456 -> 0.634); a hybrid hit's score is the reciprocal rank fusion of its ranks."""

from __future__ import annotations

import math
import shutil

import pytest

pytest.importorskip("llama_index.vector_stores.chroma")

from chunkwise.chroma import query, search  # noqa: E402
from chunkwise.chroma.search import RRF_K  # noqa: E402
from chunkwise.pipeline import ingest  # noqa: E402
from conftest import FIXTURES  # noqa: E402

QUESTION = "How do I stop the trailing slash redirect for directories?"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    docs = tmp_path_factory.mktemp("docs")
    for name in ("httpd__mod__mod_dir.html", "fastapi__features.md"):
        shutil.copy(FIXTURES / name, docs / name)
    db = docs.parent / "db"
    ingest([docs], db_path=db, workers=1)
    return db


def test_llama_index_scores_are_exp_minus_the_distance(db):
    from llama_index.core import VectorStoreIndex

    from chunkwise.llama_index import ChunkwiseEmbedding, ChunkwiseRetriever, vector_store

    distance = {h.id: h.distance for h in query(QUESTION, db_path=db, k=5)}
    assert all(0 < d < 1 for d in distance.values())
    index = VectorStoreIndex.from_vector_store(vector_store(db, "chunkwise"),
                                               embed_model=ChunkwiseEmbedding())
    theirs = index.as_retriever(similarity_top_k=5).retrieve(QUESTION)
    ours = ChunkwiseRetriever(db_path=db, similarity_top_k=5, mode="dense").retrieve(QUESTION)
    for got in (theirs, ours):
        assert [n.node.node_id for n in got] == list(distance)
        for n in got:
            assert n.score == pytest.approx(math.exp(-distance[n.node.node_id]), abs=1e-4)


def test_a_hybrid_score_is_the_fusion_of_its_ranks(db):
    hits = search(QUESTION, db_path=db, k=5)
    assert hits[0].source == "httpd__mod__mod_dir.html"
    for h in hits:
        assert h.score == pytest.approx(sum(1 / (RRF_K + r) for r in h.ranks.values()))
        if "dense" in h.ranks:
            assert h.scores["dense"] == h.distance
    assert hits[0].score <= 2 / (RRF_K + 1)  # first in both legs: the most there is
