"""`where` filters of several keys: all of them must match (their `$and`, as MongoDB reads
such an object; Chroma itself refuses them with "Expected where to have exactly one
operator"), in `query()`, `search()` (both legs) and `chunkwise query --where`, on a real
embedded Chroma of two fixtures (a two-page PDF and a Markdown page)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chunkwise.chroma import query, search
from chunkwise.chroma.queries import chroma_where
from chunkwise.pipeline import ingest
from conftest import CHUNKWISE_CLI, FIXTURES
from hashembed import HASH

TESTS = Path(__file__).resolve().parent
TWO_KEYS = {"format": "pdf", "page_start": {"$gte": 2}}


def test_several_keys_are_their_and():
    assert chroma_where(None) is None and chroma_where({}) is None
    assert chroma_where({"format": "pdf"}) == {"format": "pdf"}
    assert chroma_where(TWO_KEYS) == {"$and": [{"format": "pdf"},
                                               {"page_start": {"$gte": 2}}]}
    assert chroma_where({"$or": [TWO_KEYS, {"format": "markdown"}]}) == {"$or": [
        {"$and": [{"format": "pdf"}, {"page_start": {"$gte": 2}}]}, {"format": "markdown"}]}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    docs = tmp_path_factory.mktemp("docs")
    for name in ("latex-two-column-sample.pdf", "fastapi__features.md"):
        shutil.copy(FIXTURES / name, docs / name)
    db = tmp_path_factory.mktemp("where-db")  # its own: the base folder is shared by all tests
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    return db


def _two_keys_held(hits) -> None:
    assert hits
    assert all(h.metadata["format"] == "pdf" and h.page_start >= 2 for h in hits), [
        (h.metadata["format"], h.page_start) for h in hits]


def test_query_and_search_take_several_keys(db):
    _two_keys_held(query("lorem ipsum dolor", db_path=db, embedder=HASH, k=10,
                         where=TWO_KEYS))
    for mode in ("hybrid", "dense", "lexical"):  # the PDF's text is lorem ipsum
        _two_keys_held(search("lorem ipsum dolor", db_path=db, embedder=HASH, k=10,
                              mode=mode, where=TWO_KEYS))
    unfiltered = search("lorem ipsum dolor", db_path=db, embedder=HASH, k=10, mode="lexical")
    assert any(h.page_start == 1 for h in unfiltered)  # the filter, not the query, held them
    either = search("the", db_path=db, embedder=HASH, k=50, mode="dense",
                    where={"$or": [TWO_KEYS, {"format": "markdown"}]})
    assert {h.metadata["format"] for h in either} == {"pdf", "markdown"}
    assert all(h.page_start >= 2 for h in either if h.metadata["format"] == "pdf")


def test_cli_where_of_two_keys(db):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS),
                                                                       os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([*CHUNKWISE_CLI, "query", "the results", "--db", str(db), "--json",
                        "-k", "10", "--mode", "dense", "--embedder", "hashembed:HASH", "--where", json.dumps(TWO_KEYS)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    hits = json.loads(p.stdout)
    every = query("the results", db_path=db, embedder=HASH, k=50, where=TWO_KEYS)
    assert [h["id"] for h in hits] == [h.id for h in every][:10] and all(h["metadata"]["format"] == "pdf" and h["page_start"] >= 2
                                   for h in hits), hits
