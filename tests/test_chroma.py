"""Chroma ingestion with the real model and a real Chroma: embedded, and a `chroma run` server.

Incremental runs write nothing for unchanged files, replace only what changed, prune what is
gone; a killed run is completed by the next one; an unreachable server gives a clear error."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunkwise.chunking.api import Chunker
from chunkwise.chroma.queries import iter_collection, query
from chunkwise.chroma.records import RESERVED_KEYS, chunk_metadata
from chunkwise.chroma.store import SourceState
from chunkwise.errors import StoreError
from chunkwise.metadata import flatten_metadata
from chunkwise.pipeline.discover import discover
from chunkwise.model import Chunk
from chunkwise.pipeline.runner import ingest
from chunkwise.pipeline.stages import plan_file

from conftest import FIXTURES, free_port

ROOT = Path(__file__).resolve().parents[1]
CHUNKWISE = [sys.executable, "-m", "chunkwise.cli"]
SMALL_FIXTURES = ("fastapi__features.md", "mkdocs-material__reference__data-tables.md",
                  "fastapi__fastapi__background.py", "fastapi__fastapi__concurrency.py")

TOPICS = {
    "volcanoes.md": ("Volcanoes", ["Magma chambers", "Eruption styles", "Monitoring"],
                     "Basaltic lava flows from shield volcanoes while explosive eruptions eject "
                     "ash columns; seismometers and tiltmeters watch the magma rise."),
    "bread.md": ("Baking bread", ["Flour and water", "Proofing", "The oven"],
                 "Yeast ferments the dough, gluten traps the gas, and a hot oven with steam "
                 "gives the loaf its crust."),
    "chess.md": ("Chess openings", ["The Sicilian", "The French", "Gambits"],
                 "White opens with the king's pawn; Black answers with the c-pawn and fights "
                 "for the centre; a gambit sacrifices a pawn for development."),
    "notes.txt": ("Tide tables", ["Spring tides", "Neap tides"],
                  "The moon and the sun pull the oceans; spring tides come at new and full moon, "
                  "neap tides at the quarters."),
}


def write_topic(folder: Path, name: str, extra: str = "") -> Path:
    title, heads, body = TOPICS[name]
    if name.endswith(".md"):
        parts = [f"# {title}\n"] + [f"## {h}\n\n{body} {h} matters here. {extra}\n" for h in heads]
    else:
        parts = [f"{title}\n"] + [f"{h}. {body} {extra}\n" for h in heads]
    path = folder / name
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path, monkeypatch) -> Path:
    """A small mixed folder; the working directory is tmp_path so sources are `docs/…`."""
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    for name in TOPICS:
        write_topic(docs if name != "notes.txt" else docs / "sub", name)
    for name in SMALL_FIXTURES:
        shutil.copy(FIXTURES / name, docs / name)
    monkeypatch.chdir(tmp_path)
    return docs


def snapshot(db: Path | str, collection: str = "chunkwise") -> dict[str, tuple[str, dict]]:
    return {i: (d, m) for i, d, m in iter_collection(db_path=db, collection=collection)}


def expected_chunks(paths, **options) -> dict[str, Chunk]:
    """The chunks ingest stores for the files under `paths`, named as ingest names them
    (relative to the folder given): one per distinct embed text of a file (its first)."""
    chunker = Chunker(**options)
    out = {}
    for f in discover(paths).files:
        seen = set()
        for c in chunker.chunk_file(f.path, source=f.source):
            if c.embed_text not in seen:
                seen.add(c.embed_text)
                out[c.id] = c
    return out


# -- metadata and planning, on hand-made chunks ---------------------------------------------
def make_chunk(i: int, text: str, *, source="a.md", context="A", path=("A", "B"), pages=None,
               meta=None) -> Chunk:
    return Chunk(id=f"id{i}", source=source, format="markdown", text=text, start=i * 10,
                 end=i * 10 + len(text), context=context, section_path=path,
                 page_start=pages, page_end=pages, kinds=("paragraph",), tokens=5,
                 meta=meta or {})


def test_flatten_metadata_follows_chroma_rules():
    from chromadb.api.types import validate_metadata

    flat = flatten_metadata({"a": None, "b": [], "c": {"d": 1, "e": {"f": "x"}}, "g": (1, 2),
                             "h": [1, "x"], "i": float("nan"), "j": 2 ** 70, "k": True,
                             "l": {"s", "t"} and ["s", None, "t"], "m": object})
    assert "a" not in flat and "b" not in flat
    assert flat["c.d"] == 1 and flat["c.e.f"] == "x" and flat["g"] == [1, 2]
    assert flat["h"] == '[1, "x"]' and flat["i"] == "nan" and flat["j"] == str(2 ** 70)
    assert flat["k"] is True and flat["l"] == ["s", "t"] and isinstance(flat["m"], str)
    validate_metadata(flat)


def test_chunk_metadata_is_flat_and_complete():
    from chromadb.api.types import validate_metadata

    c = make_chunk(0, "hello", pages=3, meta={"line_start": 4, "source": "shadow", "x": None})
    m = chunk_metadata(c, index=0, count=2, content_hash="h", options="o")
    validate_metadata(m)
    assert m["section_path"] == "A > B" and m["section_path_list"] == ["A", "B"]
    assert m["page_start"] == m["page_end"] == 3 and m["kinds"] == ["paragraph"]
    assert m["source"] == "a.md" and m["meta.source"] == "shadow" and m["line_start"] == 4
    assert "x" not in m and {"chunk_index", "chunk_count", "content_hash", "options"} <= set(m)
    bare = chunk_metadata(make_chunk(1, "x", path=(), context=""), index=0, count=1,
                          content_hash="h", options="o")
    validate_metadata(bare)
    assert bare["section_path"] == "" and "section_path_list" not in bare
    assert "page_start" not in bare
    assert RESERVED_KEYS >= {k for k in m if not k.startswith("meta.") and k != "line_start"}


def stored_as_written(chunks, content_hash):
    """The metadata `ingest` writes for a file's chunks (neighbours linked)."""
    return {c.id: chunk_metadata(c, index=i, count=len(chunks), content_hash=content_hash,
                                 options="o", prev_id=chunks[i - 1].id if i else None,
                                 next_id=chunks[i + 1].id if i + 1 < len(chunks) else None)
            for i, c in enumerate(chunks)}


def test_plan_and_currency():
    old = [make_chunk(0, "one"), make_chunk(1, "two"), make_chunk(2, "three")]
    stored = stored_as_written(old, "h1")
    state = SourceState("h1", "o", chunk_count=3, stored=len(stored))
    assert state.current("h1", "o")
    assert not state.current("h2", "o") and not state.current("h1", "p")
    assert not SourceState("h1", "o", chunk_count=3, stored=2).current("h1", "o")  # one missing
    assert not SourceState(None, None, None).current("h1", "o")  # nothing stored
    assert not SourceState("h1", "o", 3, stored=3, mixed=True).current("h1", "o")

    new = [make_chunk(0, "one"), make_chunk(1, "two", context="A2"), make_chunk(3, "four")]
    stored["id0"]["gone"] = "key"
    plan = plan_file("a.md", new, stored, "h2", "o")
    assert [c.id for c, _ in plan.embed] == ["id1", "id3"]  # new context, new chunk
    assert [i for i, _ in plan.refresh] == ["id0"]  # same text and context: metadata only
    assert plan.refresh[0][1]["gone"] is None and plan.refresh[0][1]["content_hash"] == "h2"
    assert plan.stale == ["id2"]
    same = plan_file("a.md", old, stored_as_written(old, "h1"), "h1", "o")
    assert not (same.embed or same.refresh or same.stale)


# -- embedded store -------------------------------------------------------------------------
def test_incremental_ingest(corpus):
    db = "db"
    first = ingest(["docs"], db_path=db)
    want = expected_chunks(["docs"])
    assert not first.failed and first.files == 8
    assert first.written == first.chunks == len(want)
    snap = snapshot(db)
    assert set(snap) == set(want)  # ids are the chunker's ids: nothing missing, nothing extra
    for cid, (doc, meta) in snap.items():
        c = want[cid]
        assert doc == c.text and meta["source"] == c.source and meta["start"] == c.start
        assert meta["chunk_count"] == sum(1 for x in want.values() if x.source == c.source)

    second = ingest(["docs"], db_path=db)
    assert (second.written, second.updated, second.deleted, second.changed) == (0, 0, 0, 0)
    assert second.skipped == 8 and second.chunks == len(want)
    assert snapshot(db) == snap

    # edit one file: only its chunks are touched
    write_topic(corpus, "bread.md", extra="Sourdough uses a starter instead of baker's yeast.")
    third = ingest(["docs"], db_path=db)
    bread = {i for i, c in expected_chunks(["docs"]).items() if c.source == "bread.md"}
    assert third.changed == 1 and third.skipped == 7
    assert 0 < third.written <= len(bread)
    after = snapshot(db)
    assert {i for i, (_, m) in after.items() if m["source"] == "bread.md"} == bread
    assert {i: v for i, v in after.items() if v[1]["source"] != "bread.md"} == \
        {i: v for i, v in snap.items() if v[1]["source"] != "bread.md"}

    # delete one file and prune: exactly its chunks go
    gone = {i for i, (_, m) in after.items() if m["source"] == "sub/notes.txt"}
    (corpus / "sub" / "notes.txt").unlink()
    fourth = ingest(["docs"], db_path=db, prune=True)
    assert (fourth.pruned_files, fourth.pruned_chunks) == (1, len(gone))
    assert set(snapshot(db)) == set(after) - gone
    assert set(snapshot(db)) == set(expected_chunks(["docs"]))


def test_changed_options_rechunk_without_leftovers(corpus):
    ingest(["docs"], db_path="db")
    report = ingest(["docs"], db_path="db", max_tokens=64)
    assert report.changed == 8 and report.deleted > 0
    assert set(snapshot("db")) == set(expected_chunks(["docs"], max_tokens=64))


def test_prune_only_under_given_roots(corpus, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    write_topic(other, "chess.md")
    ingest(["docs", "other"], db_path="db")
    (other / "chess.md").unlink()
    report = ingest(["docs"], db_path="db", prune=True)  # other/ is not a root: kept
    assert report.pruned_files == 0
    report = ingest(["other"], db_path="db", prune=True)  # a vanished root is fine with prune
    assert report.pruned_files == 1 and not report.failed
    assert {m["source"] for _, (_, m) in snapshot("db").items()} == \
        {"docs/" + f.source for f in discover(["docs"]).files}


def test_bad_file_is_reported_and_the_rest_ingested(corpus):
    (corpus / "broken.txt").write_bytes(b"\x00\x01\x02\xff" * 200)
    report = ingest(["docs", "missing.md"], db_path="db")
    reasons = dict(report.failed)
    assert set(reasons) == {"docs/broken.txt", "missing.md"}
    assert "binary" in reasons["docs/broken.txt"] and "no such file" in reasons["missing.md"]
    assert report.written == len(expected_chunks([f.path for f in discover(["docs"]).files
                                                  if not f.path.endswith("broken.txt")]))


def test_file_name_that_is_not_utf8(corpus):
    # Linux file names are bytes: Python keeps a non-UTF-8 one with lone surrogates, which no
    # tokenizer, JSON encoder or database accepts. Such a file is named with `\\xNN` escapes.
    try:
        weird = Path(os.fsdecode(b"docs/sub/caf\xe9.txt"))  # relative: sources are docs/…
        weird.write_text("Espresso and milk foam make a cappuccino.", encoding="utf-8")
    except (OSError, UnicodeError):
        pytest.skip("this file system does not take non-UTF-8 file names")
    name = "sub/caf\\xe9.txt"
    (chunk,) = Chunker().chunk_file(weird)
    assert chunk.source == "docs/" + name and chunk.text.startswith("Espresso")
    first = ingest(["docs"], db_path="db")
    assert not first.failed and first.files == 9
    assert [m["source"] for _, (_, m) in snapshot("db").items()].count(name) == 1
    assert query("cappuccino milk foam", db_path="db", k=1)[0].source == name
    assert ingest(["docs"], db_path="db").skipped == 9  # the same name on every run
    weird.unlink()
    assert ingest(["docs"], db_path="db", prune=True).pruned_files == 1


def test_chunks_longer_than_the_model_window_are_reported(corpus, tmp_path):
    assert ingest(["docs"], db_path="db").truncated == 0  # the default budget is the window
    report = ingest(["docs"], db_path="db2", max_tokens=512)
    over = [c for c in expected_chunks(["docs"], max_tokens=512).values() if c.tokens > 256]
    assert over and report.truncated == len(over) and report.window == 256
    out = run_cli("ingest", "docs", "--db", "db3", "--max-tokens", "512", cwd=tmp_path)
    assert out.returncode == 0 and f"warning: {len(over)} of the " in out.stderr


def test_query_returns_sources_paths_and_filters(corpus):
    ingest(["docs"], db_path="db")
    hits = query("when does a volcano erupt explosively with ash?", db_path="db", k=3)
    assert len(hits) == 3 and hits[0].source == "volcanoes.md"
    assert hits[0].section_path[0] == "Volcanoes" and 0 <= hits[0].distance < hits[-1].distance
    assert hits[0].text in (corpus / "volcanoes.md").read_text()
    only_py = query("run work in the background", db_path="db", k=5,
                    where={"format": "python"})
    assert only_py and all(h.source.endswith(".py") for h in only_py)
    with pytest.raises(StoreError, match="no collection"):
        query("x", db_path="db", collection="nope")
    with pytest.raises(StoreError, match="no Chroma database"):
        query("x", db_path="nowhere")


def test_collection_keeps_one_embedder(corpus):
    from llama_index.core.embeddings import MockEmbedding

    ingest(["docs/volcanoes.md"], db_path="db")
    with pytest.raises(StoreError, match="holds vectors of"):
        ingest(["docs/bread.md"], db_path="db", embedder=MockEmbedding(embed_dim=384))
    # another embedder works in its own collection, and query finds its spec-less identity
    ingest(["docs/bread.md"], db_path="db", collection="mock",
           embedder=MockEmbedding(embed_dim=8))
    with pytest.raises(StoreError, match="holds vectors of"):
        query("bread", db_path="db", collection="mock")
    assert query("bread", db_path="db", collection="mock", k=1,
                 embedder=MockEmbedding(embed_dim=8))


def run_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([*CHUNKWISE, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_cli_ingest_and_query(corpus, tmp_path):
    out = run_cli("ingest", "docs", "--db", "db", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["files"] == 8 and summary["written"] == summary["chunks"] > 0
    out = run_cli("query", "explosive eruptions and ash", "--db", "db", "-k", "2", "--json",
                  cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0]["source"] == "volcanoes.md"
    out = run_cli("query", "  ", "--db", "db", cwd=tmp_path)
    assert out.returncode == 2 and "non-empty" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("query", "ash", "--db", "db", "--where", "{oops", cwd=tmp_path)
    assert out.returncode == 2 and "--where" in out.stderr and "Traceback" not in out.stderr
    (corpus / "broken.txt").write_bytes(b"\x00\xff" * 300)
    out = run_cli("ingest", "docs", "--db", "db", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("broken.txt: ")
    assert "8 unchanged" in out.stdout


# -- crash safety ---------------------------------------------------------------------------
def snapshot_in_subprocess(db: Path) -> dict:
    """Read a database from a fresh process (no client cached in this one): its records and
    what its lexical index holds for each id."""
    code = ("import json, sys; from chunkwise.chroma import iter_collection\n"
            f"print(json.dumps({{i: [d, m] for i, d, m in iter_collection(db_path={str(db)!r})}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert out.returncode == 0, out.stderr
    return {"records": json.loads(out.stdout), "lexical": lexical_snapshot(db)}


def lexical_snapshot(db: Path, collection: str = "chunkwise") -> dict[str, str]:
    """id -> indexed terms of a database's lexical index, read with plain sqlite3."""
    import sqlite3

    con = sqlite3.connect(db / "chunkwise-lexical.sqlite3")
    try:
        (key,) = con.execute("SELECT key FROM collections WHERE name = ?",
                             (collection,)).fetchone()
        return dict(con.execute(f"SELECT i.id, f.terms FROM ids_{key} i "
                                f"JOIN fts_{key} f ON f.rowid = i.rowid"))
    finally:
        con.close()


def make_bulk(folder: Path, version: int) -> None:
    """60 files of synthetic prose; each later version edits some, deletes one, adds one."""
    rng = random.Random(7)
    words = ("river stone harbour lantern orchard copper meadow signal engine ledger "
             "thunder violet garden compass winter marble beacon saddle canyon quartz").split()
    folder.mkdir(exist_ok=True)
    for n in range(60):
        paras = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 70))) + "."
                 for _ in range(rng.randint(3, 8))]
        if version > 1 and n % 7 == version:
            paras[1] = f"Edited paragraph of version {version}. " + paras[1]
        if n == 10 + version:
            (folder / f"doc{n:02}.md").unlink(missing_ok=True)
            continue
        body = "\n\n".join(f"## Part {i}\n\n{p}" for i, p in enumerate(paras))
        (folder / f"doc{n:02}.md").write_text(f"# Document {n}\n\n{body}\n", encoding="utf-8")
    (folder / f"added{version}.md").write_text(f"# Added\n\nA new file in version {version}.\n")


@pytest.mark.slow
def test_killed_runs_converge_to_a_clean_run(tmp_path):
    """Five phases (first ingest, edits with prune, a change of options): in each, SIGKILL
    `chunkwise ingest --workers 2` at a random moment, then rerun it; the result has exactly the ids,
    documents and metadata of an uninterrupted run, and its lexical index exactly the same
    entries (both legs equal to a clean ingest)."""
    seed = int(os.environ.get("CHUNKWISE_KILL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    ready = None
    kills = []
    for phase, (version, tokens) in enumerate([(1, 64), (2, 64), (2, 48), (3, 48), (4, 64)]):
        make_bulk(tmp_path / "docs", version)
        args = [*CHUNKWISE, "ingest", "docs", "--prune", "--max-tokens", str(tokens),
                "--workers", "2"]  # a parsing pool and the model's own process killed too
        # The clean run, timed; `ready` is when it has opened the database (imports done).
        t0 = time.monotonic()
        proc = subprocess.Popen([*args, "--db", "clean"], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while ready is None and proc.poll() is None and not (tmp_path / "clean").exists():
            time.sleep(0.02)
        ready = ready or time.monotonic() - t0
        assert proc.wait(timeout=300) == 0, proc.stderr.read()
        duration = time.monotonic() - t0

        delay = rng.uniform(ready, max(ready, 0.95 * duration))
        proc = subprocess.Popen([*args, "--db", "killed"], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills.append(round(delay, 2))
        rerun = subprocess.run([*args, "--db", "killed"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=300)
        assert rerun.returncode == 0, rerun.stderr
        assert snapshot_in_subprocess(tmp_path / "killed") == \
            snapshot_in_subprocess(tmp_path / "clean"), f"phase {phase}, seed {seed}"
    assert len(kills) >= 3, f"only {len(kills)} runs were killed: the corpus ingests too fast"


# -- a `chroma run` server (the `server` fixture is in conftest.py) ------------------------
def test_server_ingest_outage_and_rerun(corpus, server, monkeypatch):
    import chunkwise.pipeline.threads

    monkeypatch.setattr(chunkwise.pipeline.threads, "EMBED_WINDOW", 8)  # write in many small slices
    remote = {"host": "127.0.0.1", "port": server.port}
    ingest(["docs"], db_path="reference")
    reference = snapshot("reference")

    def pull_the_plug(progress) -> None:  # the server dies once the first chunks are written
        if progress.chunks_written:
            server.stop()

    with pytest.raises(StoreError, match="unreachable"):
        ingest(["docs"], progress=pull_the_plug, retry_delays=(0.1, 0.2), **remote)
    server.start()
    report = ingest(["docs"], **remote)
    assert report.skipped < report.files  # the interrupted run left work to do
    got = {i: (d, m) for i, d, m in iter_collection(**remote)}
    assert got == reference
    assert ingest(["docs"], **remote).written == 0
    hits = query("proofing dough with yeast", k=2, **remote)
    assert hits[0].source == "bread.md"


def test_unreachable_server_is_one_clear_error(corpus, tmp_path):
    out = run_cli("query", "x", "--host", "127.0.0.1", "--port", str(free_port()),
                  "--retries", "2", cwd=tmp_path, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert "unreachable" in lines[-1] and "3 attempts" in lines[-1]
    assert all("retrying" in line for line in lines[:-1]) and len(lines) == 3
