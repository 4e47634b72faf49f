"""Hybrid search end to end: the lexical leg written by ingest beside the vectors, kept in
step with them (edits, deletes, prune, rebuild, repeated text, a collection from before),
checked and repaired by `check`, fused in `search` and `chunkwise query`, on a real Chroma
(embedded and `chroma run`) with the real model where the ranking is what is tested."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chunkwise.chroma import iter_collection, search
from chunkwise.chroma.lexical import LEXICAL_FILE, LexicalIndex
from chunkwise.errors import ConfigError, StoreError
from chunkwise.pipeline.runner import ingest

from conftest import FIXTURES
from hashembed import HASH

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "chunkwise.cli"]

CONFIG = """# Configuration

## Limits

CHUNKWISE_MAX_BYTES caps the size of one file read by the pipeline; larger files are
skipped with their reason.

## Network

Requests to the server give up after the timeout and are retried with backoff, doubling
the wait each time.

## Logging

Set the verbosity with the level option; messages go to standard error.
"""

CJK = """# 笔记

## 一

长城是中国古代的军事防御工程，全长约两万一千公里，东起山海关。

## 二

大熊猫生活在四川的山区，主要吃竹子，是中国的国宝。

## 三

富士山は日本で一番高い山で、標高は三千七百七十六メートルです。

## 四

東京は日本の首都で、人口は約千四百万人です。
"""


def run_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"),
                                                        os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def lexical_of(db: Path, collection: str = "chunkwise") -> set[str]:
    index = LexicalIndex(db / LEXICAL_FILE, collection, readonly=True)
    try:
        return index.ids()
    finally:
        index.close()


def ids_of(db: Path, collection: str = "chunkwise") -> set[str]:
    return {i for i, _, _ in iter_collection(db_path=db, collection=collection)}


def in_step(db: Path, collection: str = "chunkwise") -> bool:
    return lexical_of(db, collection) == ids_of(db, collection)


# -- retrieval with the real model ----------------------------------------------------------
@pytest.fixture(scope="module")
def real_db(tmp_path_factory) -> Path:
    """A few real documents and two written here (an identifier, CJK), ingested with the
    default model."""
    base = tmp_path_factory.mktemp("hybrid")
    docs = base / "docs"
    docs.mkdir()
    for name in ("fastapi__features.md", "mkdocs-material__reference__data-tables.md",
                 "fastapi__fastapi__background.py", "alice-in-wonderland.txt"):
        shutil.copy(FIXTURES / name, docs / name)
    (docs / "config.md").write_text(CONFIG, encoding="utf-8")
    (docs / "cjk.md").write_text(CJK, encoding="utf-8")
    ingest([docs], db_path=base / "db", workers=1)
    return base / "db"


def test_an_identifier_query_finds_the_chunk_that_spells_it(real_db):
    hits = search("CHUNKWISE_MAX_BYTES", db_path=real_db, k=5)
    assert "CHUNKWISE_MAX_BYTES" in hits[0].text, [h.text[:60] for h in hits]
    assert hits[0].ranks["lexical"] == 1
    assert hits[0].distance is not None and hits[0].score > 0


@pytest.mark.parametrize("question, answer", [
    ("长城有多长", "长城"), ("大熊猫吃什么", "大熊猫"), ("富士山の標高", "富士山"),
    ("東京の人口", "東京"),
])
def test_a_chinese_or_japanese_query_finds_its_passage(real_db, question, answer):
    hits = search(question, db_path=real_db, k=3)
    assert answer in hits[0].text, [h.text[:40] for h in hits]


def test_each_mode_ranks_with_its_own_leg(real_db):
    dense = search("how long is the great wall", db_path=real_db, k=3, mode="dense")
    assert all(set(h.ranks) == {"dense"} and h.score is None for h in dense)
    words = search("CHUNKWISE_MAX_BYTES", db_path=real_db, k=3, mode="lexical")
    assert all(set(h.ranks) == {"lexical"} and h.distance is None for h in words)
    assert words[0].scores["lexical"] == words[0].score
    assert [h.ranks["lexical"] for h in words] == list(range(1, len(words) + 1))


def test_filters_apply_to_both_legs(real_db):
    for mode in ("hybrid", "lexical", "dense"):
        hits = search("background tasks", db_path=real_db, k=10, mode=mode,
                      where={"format": "python"})
        assert hits and all(h.metadata["format"] == "python" for h in hits)
        hits = search("the", db_path=real_db, k=10, mode=mode, contains="backoff")
        assert hits and all("backoff" in h.text for h in hits)


def test_query_takes_contains_as_search_does(real_db):
    from chunkwise.chroma.queries import query

    hits = query("the", db_path=real_db, k=10, contains="backoff")
    assert hits and all("backoff" in h.text for h in hits)
    assert {h.id for h in hits} == {h.id for h in search("the", db_path=real_db, k=10,
                                                         mode="dense", contains="backoff")}
    with pytest.raises(ConfigError, match="contains"):
        query("the", db_path=real_db, contains="")


def test_bad_queries_are_results_or_one_clear_line(real_db):
    with pytest.raises(ConfigError, match="non-empty"):
        search("   ", db_path=real_db)
    for q in ['"', "*", "NEAR", "-", '"*NEAR -', "\x00\x01\x02", "!!!", "🎉🎉"]:
        for mode in ("hybrid", "lexical"):
            assert isinstance(search(q, db_path=real_db, k=3, mode=mode), list)
    big = ("configuration timeout retries " * 40_000)[:1_000_000]  # 1 MB
    hits = search(big, db_path=real_db, k=3)
    assert hits and len(hits) == 3
    with pytest.raises(ConfigError):
        search("x", db_path=real_db, mode="sparse")
    with pytest.raises(ConfigError):
        search("x", db_path=real_db, k=0)


def test_cli_query_shows_each_legs_rank(real_db, tmp_path):
    out = run_cli("query", "CHUNKWISE_MAX_BYTES", "--db", str(real_db), "--json", "-k", "3",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert "CHUNKWISE_MAX_BYTES" in got[0]["text"] and got[0]["ranks"]["lexical"] == 1
    out = run_cli("query", "CHUNKWISE_MAX_BYTES", "--db", str(real_db), "-k", "1",
                  cwd=tmp_path)
    assert out.returncode == 0 and "lexical #1" in out.stdout and "score" in out.stdout
    out = run_cli("query", "CHUNKWISE_MAX_BYTES", "--db", str(real_db), "-k", "1",
                  "--mode", "lexical", cwd=tmp_path)
    assert out.returncode == 0 and "BM25" in out.stdout, out.stderr
    for q in ('"*NEAR -', "\x01\x02", "x" * 100_000):
        out = run_cli("query", q, "--db", str(real_db), "--mode", "lexical", cwd=tmp_path)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    out = run_cli("query", "x", "--db", str(real_db), "--mode", "words", cwd=tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_weights_move_the_fusion_toward_one_leg(real_db, tmp_path):
    q = "what does the background task run after the response"
    words = [h.id for h in search(q, db_path=real_db, k=5, mode="lexical")]
    dense = [h.id for h in search(q, db_path=real_db, k=5, mode="dense")]
    assert words != dense  # the legs disagree, so the weights have something to decide
    assert [h.id for h in search(q, db_path=real_db, k=5, weights={"dense": 0})] == words
    assert [h.id for h in search(q, db_path=real_db, k=5, weights={"lexical": 0})] == dense
    out = run_cli("query", q, "--db", str(real_db), "--json", "-k", "5", "--weights", "0,1",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert [h["id"] for h in json.loads(out.stdout)] == words
    for bad in ("1", "a,b", "-1,1", "0,0"):
        out = run_cli("query", q, "--db", str(real_db), f"--weights={bad}", cwd=tmp_path)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_where_nested_past_the_bound_is_one_line(real_db, tmp_path):
    from chunkwise.chroma.queries import MAX_WHERE_DEPTH, query

    for depth in (MAX_WHERE_DEPTH + 1, 1_000, 3_000):  # 3,000: about 100 KB, an argument's limit
        where = '{"format": "markdown"}'
        for _ in range(depth):
            where = '{"$and": [' + where + ', {"format": "markdown"}]}'
        out = run_cli("query", "tables", "--db", str(real_db), "--where", where, cwd=tmp_path)
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-500:]
        assert "nests more than" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    deep: dict = {"format": "markdown"}
    for _ in range(1_000):
        deep = {"$and": [deep, {"format": "markdown"}]}
    for ask in (search, query):
        with pytest.raises(ConfigError, match="nests more than"):
            ask("tables", db_path=real_db, where=deep)
    shallow = '{"$and": [{"format": "markdown"}, {"start": {"$gte": 0}}]}'
    out = run_cli("query", "tables", "--db", str(real_db), "--where", shallow, "--json",
                  cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout), out.stderr


# -- the two legs in step (a hash embedder: only the bookkeeping is tested) -------------------
@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for n in range(6):
        (folder / f"doc{n}.md").write_text(
            f"# Document {n}\n\n" + "\n\n".join(
                f"## Part {p}\n\nParagraph {p} of document {n} about topic{n}x{p}."
                for p in range(4)) + "\n", encoding="utf-8")
    return folder


def test_edit_delete_prune_and_rebuild_keep_both_legs_equal(docs, tmp_path):
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    assert in_step(db) and len(lexical_of(db)) > 0
    (docs / "doc1.md").write_text("# Document 1\n\nAll new words: zanzibar.\n")
    (docs / "doc2.md").unlink()
    ingest([docs], db_path=db, embedder=HASH, workers=1, prune=True)
    assert in_step(db)
    assert [h.source for h in search("zanzibar", db_path=db, mode="lexical", k=1)] == ["doc1.md"]
    assert all(h.source != "doc2.md" for h in search("topic2x1", db_path=db, mode="lexical",
                                                     k=50))
    report = ingest([docs], db_path=db, embedder=HASH, workers=1)
    assert report.written == 0 and in_step(db)
    ingest([docs], db_path=db, embedder=HASH, workers=1, rebuild=True)
    assert in_step(db)


def test_repeated_text_has_one_entry_per_record(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "rep.md").write_text("# R\n\n" + "\n\n".join(["The same line again."] * 40
                                                          + ["One other line."]) + "\n")
    db = tmp_path / "db"
    ingest([folder], db_path=db, embedder=HASH, workers=1, max_tokens=16)
    assert in_step(db) and len(ids_of(db)) < 41


def test_a_collection_from_before_gets_its_index_from_the_stored_text(docs, tmp_path, caplog):
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    before = lexical_of(db)
    for p in db.glob(LEXICAL_FILE + "*"):
        p.unlink()
    with caplog.at_level("WARNING"):
        report = ingest([docs], db_path=db, embedder=HASH, workers=1)
    assert report.written == 0 and report.embedded == 0
    assert lexical_of(db) == before == ids_of(db)
    assert any("lexical index built" in r.getMessage() for r in caplog.records)


def test_check_finds_a_lexical_index_out_of_step_and_repair_mends_it(docs, tmp_path):
    import sqlite3

    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    con = sqlite3.connect(db / LEXICAL_FILE)
    with con:
        (key,) = con.execute("SELECT key FROM collections").fetchone()
        con.execute(f"DELETE FROM ids_{key} WHERE rowid IN (SELECT rowid FROM ids_{key} "
                    "LIMIT 3)")
        con.execute(f"INSERT INTO ids_{key}(id) VALUES ('stale-id')")
    con.close()
    out = run_cli("check", "--db", str(db), "--json", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    lex = json.loads(out.stdout)["lexical"]
    assert (lex["missing"], lex["stale"], lex["ok"]) == (3, 1, False)
    out = run_cli("check", "--db", str(db), cwd=tmp_path)
    assert "3 records missing, 1 stale" in out.stdout and "--repair" in out.stdout
    out = run_cli("check", "--db", str(db), "--repair", "--embedder", "hashembed:HASH",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert in_step(db)
    assert run_cli("check", "--db", str(db), cwd=tmp_path).returncode == 0


def test_no_lexical_index_is_said_and_hybrid_falls_back_to_dense(docs, tmp_path, caplog):
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1, lexical=False)
    assert not (db / LEXICAL_FILE).exists()
    with caplog.at_level("WARNING"):
        hits = search("topic1x1", db_path=db, embedder=HASH, k=2)
    assert hits and all(set(h.ranks) == {"dense"} for h in hits)
    assert any("no lexical index" in r.getMessage() for r in caplog.records)
    with pytest.raises(StoreError, match="no lexical index"):
        search("topic1x1", db_path=db, mode="lexical")


# -- a `chroma run` server (the `server` fixture is in conftest.py) --------------------------
def test_a_server_collection_keeps_its_lexical_index_in_a_named_file(docs, server, tmp_path):
    remote = {"host": "127.0.0.1", "port": server.port}
    lex_file = tmp_path / "server-lexical.sqlite3"
    ingest([docs], embedder=HASH, workers=1, lexical=lex_file, **remote)
    hits = search("topic3x2", embedder=HASH, k=3, lexical=lex_file, **remote)
    best_words = [h for h in hits if h.ranks.get("lexical") == 1]  # hash vectors rank nothing
    assert best_words and best_words[0].source == "doc3.md"
    with pytest.raises(StoreError, match="server keeps no lexical index"):
        search("topic3x2", mode="lexical", **remote)
    dense = search("topic3x2", embedder=HASH, k=3, **remote)  # said once, dense only
    assert dense and all(set(h.ranks) == {"dense"} for h in dense)
    out = run_cli("query", "topic3x2", "--host", "127.0.0.1", "--port", str(server.port),
                  "--lexical-index", str(lex_file), "--mode", "lexical", "--json",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["source"] == "doc3.md"


# -- the LlamaIndex and LangChain retrievers ---------------------------------------------------
def test_llama_index_retriever_returns_the_stored_nodes_hybrid(real_db):
    import asyncio

    pytest.importorskip("llama_index.core")
    from chunkwise.llama_index import ChunkwiseRetriever

    retriever = ChunkwiseRetriever(db_path=real_db, similarity_top_k=3)
    got = retriever.retrieve("CHUNKWISE_MAX_BYTES")
    assert "CHUNKWISE_MAX_BYTES" in got[0].node.get_content()
    assert got[0].node.ref_doc_id == "config.md" and got[0].score > 0
    assert "lexical #1" in got[0].node.metadata["chunkwise_ranks"]
    start, end = got[0].node.start_char_idx, got[0].node.end_char_idx
    assert (docs_of(real_db) / "config.md").read_text()[start:end] == got[0].node.get_content()
    again = asyncio.run(retriever.aretrieve("CHUNKWISE_MAX_BYTES"))
    assert [n.node.node_id for n in again] == [n.node.node_id for n in got]
    dense = ChunkwiseRetriever(db_path=real_db, similarity_top_k=2, mode="dense")
    assert all(0 < n.score <= 1 for n in dense.retrieve("great wall of China"))


def test_langchain_retriever_invokes_and_ainvokes(real_db):
    import asyncio

    pytest.importorskip("langchain_core")
    from chunkwise.langchain import ChunkwiseRetriever

    retriever = ChunkwiseRetriever(db_path=real_db, k=3)
    docs = retriever.invoke("CHUNKWISE_MAX_BYTES")
    assert "CHUNKWISE_MAX_BYTES" in docs[0].page_content
    assert docs[0].metadata["source"] == "config.md" and "lexical #1" in docs[0].metadata["ranks"]
    assert [d.id for d in asyncio.run(retriever.ainvoke("CHUNKWISE_MAX_BYTES"))] == \
        [d.id for d in docs]
    python = ChunkwiseRetriever(db_path=real_db, k=5, where={"format": "python"})
    assert all(d.metadata["format"] == "python" for d in python.invoke("background tasks"))


def docs_of(db: Path) -> Path:
    return db.parent / "docs"
