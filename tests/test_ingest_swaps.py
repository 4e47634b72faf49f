"""A store that depends only on the folder, not on its history (issue 44, items 1 and 2): a
file replaced by a symlink to a sibling, by a folder of the same name, by a FIFO or by a
dangling link. After each swap an incremental `--prune` run must leave exactly what a clean
ingest of the folder as it now is gives (ids, documents and metadata, compared as sets).

Real Chroma, the real pipeline; vectors from a hash of the text (the store logic is tested).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chunkwise.pipeline.discover import discover
from chunkwise.pipeline.runner import ingest

from hashembed import HASH
from test_ingest_trust import records

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="POSIX file system features")


def _folder(where: Path, n: int = 6) -> Path:
    folder = where / "docs"
    folder.mkdir()
    for i in range(n):
        (folder / f"doc{i:02}.md").write_text(
            f"# Document {i}\n\nThe keeper of lighthouse {i} logs the storm at dawn.\n\n"
            f"## Notes {i}\n\nWave height {i * 3} metres; wind from the west.\n")
    return folder


def _as_set(recs: dict) -> set:
    return {(i, d, tuple(sorted((k, repr(v)) for k, v in m.items()))) for i, (d, m) in recs.items()}


def _clean(folder: Path, tmp: Path, name: str) -> dict:
    db = tmp / f"clean-{name}"
    ingest([folder], db_path=db, embedder=HASH, workers=1)
    return records(db)


def _incremental_equals_clean(folder: Path, tmp: Path, name: str) -> dict:
    db = tmp / "db"
    ingest([folder], db_path=db, embedder=HASH, workers=1, prune=True)
    got, want = records(db), _clean(folder, tmp, name)
    assert _as_set(got) == _as_set(want), (
        sorted({m["source"] for _, m in got.values()}),
        sorted({m["source"] for _, m in want.values()}))
    return got


def test_a_file_replaced_by_a_symlink_to_a_sibling(tmp_path):
    folder = _folder(tmp_path)
    ingest([folder], db_path=tmp_path / "db", embedder=HASH, workers=1)
    # doc00.md (first in sort order) becomes a link to doc03.md
    (folder / "doc00.md").unlink()
    os.symlink("doc03.md", folder / "doc00.md")
    got = _incremental_equals_clean(folder, tmp_path, "link")
    sources = {m["source"] for _, m in got.values()}
    assert "doc03.md" in sources and "doc00.md" not in sources
    # a later edit of the real file reaches its chunks, under its real name
    (folder / "doc03.md").write_text("# Document 3\n\nRewritten: the storm passed at noon.\n")
    got = _incremental_equals_clean(folder, tmp_path, "edit")
    texts = [d for d, m in got.values() if m["source"] == "doc03.md"]
    assert any("noon" in t for t in texts) and not any("dawn" in t for t in texts)
    # the rule is the same on a fresh run: the link is read under its target's name once
    found = discover([folder])
    assert [f.source for f in found.files].count("doc03.md") == 1
    assert "doc00.md" not in [f.source for f in found.files]


def test_a_link_named_on_the_command_line_is_its_target(tmp_path):
    folder = _folder(tmp_path, 2)
    os.symlink("doc01.md", folder / "alias.md")
    found = discover([folder / "alias.md"], root=folder)
    assert [f.source for f in found.files] == ["doc01.md"]


def test_a_file_replaced_by_a_folder_of_the_same_name_is_pruned(tmp_path):
    folder = _folder(tmp_path)
    ingest([folder], db_path=tmp_path / "db", embedder=HASH, workers=1)
    (folder / "doc03.md").unlink()
    (folder / "doc03.md").mkdir()
    (folder / "doc03.md" / "inner.md").write_text("# Inner\n\nA file inside a folder.\n")
    got = _incremental_equals_clean(folder, tmp_path, "folder")
    sources = {m["source"] for _, m in got.values()}
    assert "doc03.md" not in sources and "doc03.md/inner.md" in sources


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_file_replaced_by_a_fifo_or_a_dangling_link_is_pruned(tmp_path):
    folder = _folder(tmp_path)
    ingest([folder], db_path=tmp_path / "db", embedder=HASH, workers=1)
    (folder / "doc01.md").unlink()
    os.mkfifo(folder / "doc01.md")
    (folder / "doc02.md").unlink()
    os.symlink("nowhere.md", folder / "doc02.md")
    got = _incremental_equals_clean(folder, tmp_path, "fifo")
    sources = {m["source"] for _, m in got.values()}
    assert not sources & {"doc01.md", "doc02.md"}


def test_an_unreadable_file_keeps_its_chunks(tmp_path):
    """Prune still spares a file that is there but cannot be read now (a permission): it is
    that document, and a passing failure must not delete it."""
    if os.geteuid() == 0:
        pytest.skip("root reads anything")
    folder = _folder(tmp_path, 2)
    db = tmp_path / "db"
    ingest([folder], db_path=db, embedder=HASH, workers=1)
    (folder / "doc01.md").chmod(0)
    try:
        report = ingest([folder], db_path=db, embedder=HASH, workers=1, prune=True)
    finally:
        (folder / "doc01.md").chmod(0o644)
    assert report.pruned_files == 0 and report.failed
    assert "doc01.md" in {m["source"] for _, m in records(db).values()}
