"""Incremental ingestion of the whole shared corpus (all formats) into a real embedded Chroma.

The incremental logic does not depend on what the vectors are, so this test embeds with a
deterministic hash embedder: embedding the ~30,000 chunks of the corpus with the real model
takes longer than CI allows (tests/bench/bench_embed.py measures that path; test_chroma.py
and test_query_sanity.py run the real model). Skipped without ../shared/corpus.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from chunkwise.chunking.api import Chunker
from chunkwise.chroma.queries import iter_collection
from chunkwise.pipeline.discover import discover
from chunkwise.pipeline.runner import ingest

from conftest import CORPUS
from hashembed import HASH

pytestmark = [pytest.mark.corpus, pytest.mark.slow]


def sources_in(db: Path) -> Counter:
    return Counter(m["source"] for _, _, m in iter_collection(db_path=db))


def test_whole_corpus_twice_edit_and_prune(tmp_path, monkeypatch):
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present ({CORPUS})")
    shutil.copytree(CORPUS, tmp_path / "corpus")
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "db"

    first = ingest(["corpus"], db_path=db, embedder=HASH)
    assert not first.failed, first.failed
    chunker = Chunker()
    chunks = {f.source: chunker.chunk_file(f.path, source=f.source)
              for f in discover(["corpus"]).files}
    # per file: one record per distinct embed text of the chunks `chunkwise chunk` gives
    # (repeated chunks share a record: the handbook holds its text four times)
    expected = Counter({s: len({c.embed_text for c in cs}) for s, cs in chunks.items()})
    folders = {Path(s).parent.name for s in expected}
    assert folders >= {"markdown", "html", "pdf", "code", "csv", "text", "office"}
    stored = sources_in(db)
    assert stored == +expected
    assert first.chunks == sum(len(cs) for cs in chunks.values())
    assert first.written == sum(expected.values())

    second = ingest(["corpus"], db_path=db, embedder=HASH)
    assert (second.written, second.updated, second.deleted, second.changed) == (0, 0, 0, 0)
    assert second.skipped == second.files == first.files

    edited = Path("corpus/markdown/uv__concepts__cache.md")
    name = "markdown/uv__concepts__cache.md"
    edited.write_text(edited.read_text(encoding="utf-8")
                      + "\n\n## Appendix\n\nA new closing section about cache pruning.\n",
                      encoding="utf-8")
    before = {i: (d, m) for i, d, m in iter_collection(db_path=db)}
    third = ingest(["corpus"], db_path=db, embedder=HASH)
    assert third.changed == 1 and third.skipped == third.files - 1
    after = {i: (d, m) for i, d, m in iter_collection(db_path=db)}
    untouched = {i: v for i, v in before.items() if v[1]["source"] != name}
    assert {i: v for i, v in after.items() if v[1]["source"] != name} == untouched
    assert sources_in(db)[name] == len({c.embed_text
                                        for c in chunker.chunk_file(edited, source=name)})
    assert 0 < third.written < len(chunker.chunk_file(edited))  # unchanged chunks kept

    gone = Path("corpus/html/httpd__glossary.html")
    gone_ids = {i for i, v in after.items() if v[1]["source"] == "html/httpd__glossary.html"}
    gone.unlink()
    fourth = ingest(["corpus"], db_path=db, embedder=HASH, prune=True)
    assert (fourth.pruned_files, fourth.pruned_chunks) == (1, len(gone_ids))
    final = {i for i, _, _ in iter_collection(db_path=db)}
    assert final == set(after) - gone_ids
