"""A database that survives a move: a collection names its documents relative to a root, and
records that root as an absolute path. A copy (or a move) of the database and of the folder
elsewhere is recognised by its documents (the same names, the same bytes) and rebound with one
line; a folder that only looks alike is refused, with `--root` and `--rebuild` named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from chunkwise.chroma.store import StoreError
from chunkwise.chroma.lexical import LEXICAL_FILE
from chunkwise.pipeline import ingest
from conftest import CHUNKWISE_CLI, FIXTURES
from hashembed import HASH

#: a few fixtures of different formats (the real model embeds them in seconds)
NAMES = ["fastapi__features.md", "httpd__mod__mod_dir.html", "cobra__args.go",
         "alice-in-wonderland.txt"]


def _project(folder: Path) -> Path:
    docs = folder / "docs"
    (docs / "sub").mkdir(parents=True)
    for name in NAMES[:-1]:
        shutil.copy(FIXTURES / name, docs / name)
    shutil.copy(FIXTURES / NAMES[-1], docs / "sub" / NAMES[-1])
    return docs


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*CHUNKWISE_CLI, *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_a_copied_database_and_folder_ingest_nothing_and_check_healthy(tmp_path):
    """The acceptance: `chunkwise-db` and the folder copied elsewhere; ingest there writes
    nothing, says the rebinding in one line, and the copy is healthy and answers."""
    old, new = tmp_path / "old", tmp_path / "new"
    _project(old)
    first = cli("ingest", "docs", "--json", "--workers", "1", "--no-progress", cwd=old)
    assert first.returncode == 0, first.stderr
    records = json.loads(first.stdout)["records"]
    assert records > 10
    new.mkdir()
    for name in ("docs", "chunkwise-db"):
        shutil.copytree(old / name, new / name)
    assert (new / "chunkwise-db" / LEXICAL_FILE).is_file()  # the word index moves with it

    again = cli("ingest", "docs", "--json", "--workers", "1", "--no-progress", cwd=new)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["written"], report["embedded"], report["deleted"]) == (0, 0, 0)
    assert report["records"] == records and report["root"] == str((new / "docs").resolve())
    assert again.stderr.splitlines() == [
        f"WARNING collection 'chunkwise' was written from {(old / 'docs').resolve()}; its "
        f"documents are in {(new / 'docs').resolve()} now (moved or copied): named from "
        "there on"]
    check = cli("check", "--json", cwd=new)
    assert check.returncode == 0, check.stdout + check.stderr
    health = json.loads(check.stdout)
    assert health["ok"] and health["lexical"]["ok"], health
    hit = cli("query", "How do I stop the trailing slash redirect for directories?", "-k", "1",
              cwd=new)
    assert hit.returncode == 0 and "httpd__mod__mod_dir.html" in hit.stdout, hit.stdout
    # recorded once: the next run says nothing, and edits are picked up as usual
    (new / "docs" / "cobra__args.go").write_text("package cobra\n\nfunc Edited() {}\n")
    third = cli("ingest", "docs", "--json", "--workers", "1", "--no-progress", cwd=new)
    assert third.returncode == 0 and third.stderr == "", third.stderr
    assert json.loads(third.stdout)["changed"] == 1
    # and the original, untouched, still ingests from where it is
    orig = cli("ingest", "docs", "--json", "--workers", "1", "--no-progress", cwd=old)
    assert orig.returncode == 0 and orig.stderr == "", orig.stderr
    assert json.loads(orig.stdout)["written"] == 0


def test_a_moved_folder_is_recognised_with_a_few_files_edited_or_gone(tmp_path):
    docs = _project(tmp_path / "a")
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    moved = tmp_path / "b" / "docs"
    moved.parent.mkdir()
    os.rename(docs, moved)
    (moved / "cobra__args.go").write_text("package cobra\n")  # edited after the move
    report = ingest([moved], db_path=db, embedder=HASH, workers=1, prune=True)
    assert report.root == str(moved.resolve()) and report.changed == 1
    assert report.skipped == len(NAMES) - 1 and report.pruned_files == 0


def test_a_folder_that_only_looks_alike_is_refused(tmp_path):
    docs = _project(tmp_path / "a")
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    other = tmp_path / "other"
    other.mkdir()
    for name in NAMES[:-1]:  # the same names, other bytes
        (other / name).write_text(f"# not {name}\n\nSomething else entirely.\n")
    with pytest.raises(StoreError, match=r"holds documents named relative to .*--root names "
                                         r"the folder that now holds"):
        ingest([other], db_path=db, embedder=HASH, workers=1)


def test_a_subfolder_of_a_moved_root_needs_root(tmp_path):
    """Ingesting part of the moved folder cannot be recognised from that part (its names are
    relative to the folder above): `--root` names the moved root, and it is recognised."""
    docs = _project(tmp_path / "a")
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    moved = tmp_path / "b"
    shutil.copytree(docs, moved)
    with pytest.raises(StoreError, match="--root"):
        ingest([moved / "sub"], db_path=db, embedder=HASH, workers=1)
    report = ingest([moved / "sub"], db_path=db, embedder=HASH, workers=1, root=moved)
    assert report.root == str(moved.resolve()) and report.written == 0 and report.skipped == 1
