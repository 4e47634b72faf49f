"""`chunkwise check` compares the stored sources with the folder (issue 44): a file edited
on disk, one deleted, one replaced by a folder or by a link to a sibling are named stale until
the next ingest; after `ingest --prune` the folder agrees again. Real Chroma, the real
pipeline and CLI; vectors from a hash of the text (the bookkeeping is tested)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chunkwise.chroma.store import Store, connect
from chunkwise.pipeline.freshness import check_folder
from chunkwise.pipeline.runner import ingest

from hashembed import HASH

TESTS = Path(__file__).resolve().parent


def _folder(where: Path, n: int = 5) -> Path:
    folder = where / "docs"
    folder.mkdir()
    for i in range(n):
        (folder / f"doc{i:02}.md").write_text(
            f"# Document {i}\n\nThe keeper of lighthouse {i} logs the storm at dawn.\n")
    return folder


def _health(db: Path):
    store = Store(connect(db_path=db, create=False), "chunkwise", HASH, create=False)
    try:
        return check_folder(store)
    finally:
        store.close()


def _check_cli(db: Path, cwd: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    out = subprocess.run([sys.executable, "-m", "chunkwise.cli", "check", "--db", str(db),
                          "--json"], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["folder"]


def test_a_store_as_the_folder_is_not_stale(tmp_path):
    folder = _folder(tmp_path)
    ingest([folder], db_path=tmp_path / "db", embedder=HASH, workers=1)
    health = _health(tmp_path / "db")
    assert health.reachable and health.ok and health.sources == 5
    assert "each as it is on disk" in health.summary()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="POSIX file system features")
def test_edits_deletions_and_swaps_are_named_until_the_next_ingest(tmp_path):
    folder = _folder(tmp_path)
    db = tmp_path / "db"
    ingest([folder], db_path=db, embedder=HASH, workers=1)
    (folder / "doc00.md").write_text("# Document 0\n\nRewritten: the lamp is electric now.\n")
    (folder / "doc01.md").unlink()
    (folder / "doc02.md").unlink()
    (folder / "doc02.md").mkdir()  # a folder of the same name
    (folder / "doc02.md" / "inner.md").write_text("# Inner\n\nA file in the new folder.\n")
    (folder / "doc03.md").unlink()
    os.symlink("doc04.md", folder / "doc03.md")  # an alias of a sibling
    health = _health(db)
    assert not health.ok
    assert health.changed == ["doc00.md"]
    assert health.gone == ["doc01.md", "doc02.md", "doc03.md"]
    assert "stale" in health.summary() and "doc00.md" in health.summary()
    assert _check_cli(db, tmp_path)["gone"] == ["doc01.md", "doc02.md", "doc03.md"]
    ingest([folder], db_path=db, embedder=HASH, workers=1, prune=True)
    after = _health(db)
    assert after.ok, after.summary()
    assert _check_cli(db, tmp_path)["ok"] is True


def test_a_root_that_is_not_here_compares_nothing(tmp_path):
    folder = _folder(tmp_path)
    db = tmp_path / "db"
    ingest([folder], db_path=db, embedder=HASH, workers=1)
    folder.rename(tmp_path / "elsewhere")
    health = _health(db)
    assert not health.reachable and health.ok and "not a folder here" in health.summary()
