"""`chunkwise ingest --dry-run` (`IngestOptions.dry_run`): the embedding bill before it is
paid. On the fixtures, through the real CLI and a real Chroma database: a dry run creates and
writes nothing and never embeds, and what it says would be embedded (in all, and per format)
is what the real ingest that follows embeds, on a new collection and on one that holds most
of the files already."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from chunkwise.embeddings.functions import Embedder
from chunkwise.pipeline import ingest
from hashembed import HASH
from test_cli_usage import HASH as HASH_ARGS, cli
from conftest import FIXTURES


def _corpus(tmp_path: Path) -> Path:
    """The fixtures, with two files repeated in a subfolder: same names, so the same embed
    texts (the run embeds them once; the CSV's 448 chunks fill most of a window, so its copy
    is embedded in another window while the first may still be in flight)."""
    docs = tmp_path / "docs"
    shutil.copytree(FIXTURES, docs, ignore=shutil.ignore_patterns("SOURCES.md"))
    (docs / "copies").mkdir()
    for name in ("538__trump-poll-tweets.csv", "alice-in-wonderland.txt"):
        shutil.copy(docs / name, docs / "copies" / name)
    return docs


def _run(*args: object) -> dict:
    p = cli("ingest", *args, *HASH_ARGS, "--json", "--no-progress")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _snapshot(folder: Path) -> dict[str, object]:
    """The database's content: its index files' bytes and its sqlite rows, but for the row
    Chroma itself adds to `acquire_write` whenever a client opens the database (any reader,
    `chunkwise query` too)."""
    files: dict[str, object] = {
        str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(folder.rglob("*"))
        if f.is_file() and f.name not in ("chunkwise.lock", "chroma.sqlite3")}
    with closing(sqlite3.connect(f"file:{folder / 'chroma.sqlite3'}?mode=ro", uri=True)) as c:
        files["rows"] = [line for line in c.iterdump()
                         if not line.startswith('INSERT INTO "acquire_write"')]
    return files


BILL = ("files", "chunks", "skipped", "changed", "written", "embedded", "updated", "deleted",
        "formats")


def test_a_dry_run_creates_nothing_and_counts_what_the_ingest_then_embeds(tmp_path):
    docs, db = _corpus(tmp_path), tmp_path / "db"
    dry = _run(docs, "--db", db, "--dry-run")
    assert not db.exists()
    assert dry["dry_run"] and dry["files"] == 36 and dry["embedded"] > 0
    # the repeated file's texts are counted once: fewer texts than chunks
    assert dry["embedded"] < dry["chunks"]
    real = _run(docs, "--db", db)
    assert not real["dry_run"]
    assert {k: dry[k] for k in BILL} == {k: real[k] for k in BILL}
    per = real["formats"]
    assert sum(b["texts"] for b in per.values()) == real["embedded"]
    assert sum(b["chunks"] for b in per.values()) == real["chunks"]
    assert per["csv"]["files"] == 2 and per["csv"]["texts"] * 2 == per["csv"]["chunks"]
    size = 2 * (docs / "538__trump-poll-tweets.csv").stat().st_size
    assert per["csv"]["mb"] == pytest.approx(size / 1e6, abs=1e-6)
    assert per["csv"]["texts_per_mb"] == pytest.approx(per["csv"]["texts"] / (size / 1e6), abs=0.1)
    assert per["text"]["files"] == 2 and per["text"]["texts"] < per["text"]["chunks"]


def test_a_dry_run_on_a_collection_counts_only_what_changed_and_writes_nothing(tmp_path):
    docs, db = _corpus(tmp_path), tmp_path / "db"
    _run(docs, "--db", db)
    md = docs / "fastapi__features.md"
    md.write_text(md.read_text(encoding="utf-8") + "\n\n## A new section\n\nWith a new "
                  "paragraph that no earlier run embedded.\n", encoding="utf-8")
    (docs / "more").mkdir()  # same name elsewhere: the same texts, stored: reused
    shutil.copy(docs / "rxi__json.lua", docs / "more" / "rxi__json.lua")
    (docs / "pallets__flask__workflows-tests.yaml").unlink()  # gone: --prune deletes it
    before = _snapshot(db)
    dry = _run(docs, "--db", db, "--dry-run", "--prune")
    assert _snapshot(db) == before
    assert dry["skipped"] == 34 and dry["changed"] == 2
    assert dry["pruned_files"] == 1 and dry["pruned_chunks"] > 0
    assert dry["formats"].keys() == {"markdown", "lua"}
    assert 0 < dry["formats"]["markdown"]["texts"] < dry["formats"]["markdown"]["chunks"]
    assert dry["reused"] > 0
    real = _run(docs, "--db", db, "--prune")
    assert {k: dry[k] for k in (*BILL, "pruned_files", "pruned_chunks", "reused")} == \
        {k: real[k] for k in (*BILL, "pruned_files", "pruned_chunks", "reused")}


def test_a_dry_run_never_embeds_and_says_so_in_its_summary(tmp_path):
    def boom(texts):
        raise AssertionError("a dry run embedded")

    docs = _corpus(tmp_path)
    never = Embedder(identity=HASH.identity, embed=boom, load=lambda: boom([]))
    report = ingest([docs / "rxi__json.lua"], db_path=tmp_path / "db", embedder=never,
                    workers=1, dry_run=True)
    assert report.dry_run and report.embedded == report.chunks > 0
    assert not (tmp_path / "db").exists()
    p = cli("ingest", docs / "rxi__json.lua", "--db", tmp_path / "db", *HASH_ARGS,
            "--dry-run", "--no-progress")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("dry run, nothing written: 1 files")
    assert "lua" in p.stdout and "texts to embed" in p.stdout
    assert not (tmp_path / "db").exists()
    # the default model (all-MiniLM-L6-v2 on onnxruntime) is not even imported
    code = ("import sys; from chunkwise.pipeline import ingest; "
            f"r = ingest([{str(docs / 'rxi__json.lua')!r}], db_path={str(tmp_path / 'db')!r}, "
            "workers=1, dry_run=True); "
            "print(r.embedded, r.window, 'onnxruntime' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(report.embedded), "256", "False"]
    assert not (tmp_path / "db").exists()
