"""The red-team cases of issue 30, each as a user meets it through the CLI on a real Chroma:
a file name that could take another file's identity, thousands of repeated chunks, one
enormous heading, escape sequences in names and text, a database that cannot be written, a
full disk, and read commands pointed at a folder that holds no database."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import chunkwise
from chunkwise.pipeline.discover import discover
from chunkwise.text.textio import file_source, terminal_safe

from conftest import FIXTURES
from test_ingest_trust import HASH_SPEC, cli, records

POSIX_BYTES = sys.platform != "win32"


# -- names ----------------------------------------------------------------------------------
def test_file_source_is_injective_on_path_bytes():
    names = [b"bad\xffname.md", b"bad\\xffname.md", b"bad\\\\xffname.md", b"a\\b.md",
             b"a\\\\b.md", b"plain.md", "caf\u00e9.md".encode(), b"caf\xe9.md",
             b"\xed\xa0\x80.md"]  # the last: a UTF-8-encoded surrogate, not valid UTF-8
    sources = [file_source(os.fsdecode(n)) for n in names]
    assert len(set(sources)) == len(names), sources
    assert file_source("plain.md") == "plain.md" and file_source("café.md") == "café.md"
    for s in sources:
        s.encode("utf-8")  # storable


@pytest.mark.skipif(not POSIX_BYTES, reason="file names as bytes")
def test_a_name_that_looks_escaped_never_takes_another_files_chunks(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / os.fsdecode(b"bad\xffname.md")).write_text("# One\n\nalpha apples\n")
    (docs / "bad\\xffname.md").write_text("# Two\n\nbeta bananas\n")
    for run in range(3):
        p = cli("ingest", "docs", "--db", "db", *HASH_SPEC, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        got = records(tmp_path / "db")
        assert sorted(d for d, _ in got.values()) == ["# One\n\nalpha apples",
                                                       "# Two\n\nbeta bananas"], run
        assert len({m["source"] for _, m in got.values()}) == 2
        assert (run == 0) == p.stdout.startswith("2 files (0 unchanged, 2 written")
    p = cli("check", "--db", "db", cwd=tmp_path)
    assert p.returncode == 0 and "2 records, healthy" in p.stdout


# -- repeated text --------------------------------------------------------------------------
def test_three_thousand_copies_keep_search_right_and_check_truthful(tmp_path):
    """With the real model: the copies are one record (standing for every copy), so the
    HNSW graph holds no identical vectors and the right chunk is found."""
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(FIXTURES / "httpd__mod__mod_dir.html", docs)
    para = ("Please read the terms of this notice carefully before using the service. "
            "All rights are reserved by the publisher and its licensors. ") * 3
    (docs / "boiler.txt").write_text("\n\n".join([para.strip()] * 3000))
    p = cli("ingest", "docs", "--db", "db", "--no-progress", "--json", cwd=tmp_path,
            timeout=900)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    got = records(tmp_path / "db")
    boiler = [m for _, m in got.values() if m["source"] == "boiler.txt"]
    chunks = chunkwise.chunk_file(docs / "boiler.txt")
    assert len(chunks) >= 1000 and len({c.embed_text for c in chunks}) == 1
    assert len(boiler) == 1 and boiler[0]["repeats"] == len(chunks)
    assert boiler[0]["repeat_starts"] == [c.start for c in chunks[1:1000]]
    assert boiler[0]["record_count"] == 1 and report["failed"] == []
    q = cli("query", "How do I stop the trailing slash redirect for directories?", "--db",
            "db", "-k", "3", "--json", cwd=tmp_path, timeout=300)
    assert q.returncode == 0, q.stderr
    hits = json.loads(q.stdout)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert hits[0]["source"] == "httpd__mod__mod_dir.html"
    c = cli("check", "--db", "db", cwd=tmp_path, timeout=300)
    assert c.returncode == 0 and "no readable vector" not in c.stdout, c.stdout
    again = cli("ingest", "docs", "--db", "db", "--no-progress", cwd=tmp_path, timeout=300)
    assert again.returncode == 0 and "2 unchanged" in again.stdout, again.stdout
    assert "repaired" not in again.stderr


# -- one long heading -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["md", "html"])
def test_a_five_megabyte_heading_gives_output_linear_in_the_input(tmp_path, kind):
    words = ("lorem ipsum dolor sit amet consectetur " * 140_000)[:5_000_000]
    body = "\n\n".join(f"paragraph {i} " + "text " * 60 for i in range(300))
    doc = tmp_path / f"long.{kind}"
    if kind == "md":
        doc.write_text(f"# {words}\n\n{body}\n")
    else:
        paras = "".join(f"<p>{p}</p>" for p in body.split("\n\n"))
        doc.write_text(f"<html><body><h1>{words}</h1>{paras}</body></html>")
    out = tmp_path / "out.jsonl"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with out.open("w") as f:
        p = subprocess.run([sys.executable, "-m", "chunkwise.cli", "chunk", str(doc), "--jsonl"],
                           stdout=f, stderr=subprocess.PIPE, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # CPU time: load does not inflate it
    seconds = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert p.returncode == 0, p.stderr
    assert out.stat().st_size < 100 * 1024 ** 2 and seconds < 60
    chunks = [json.loads(line) for line in out.open()]
    assert len(chunks) > 300
    for c in chunks:
        assert all(len(h) <= 200 for h in c["section_path"])
        assert len(c["context"]) < 1000
    # the heading itself is whole in the text
    assert sum(len(c["text"]) for c in chunks) >= 5_000_000


def test_a_long_heading_in_the_database_is_bounded(tmp_path):
    heading = " ".join(f"word{i}" for i in range(30_000))  # ~250 KB
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "h.md").write_text(f"# {heading}\n\n" + "\n\n".join(
        f"paragraph {i} " + "text " * 50 for i in range(400)))
    p = cli("ingest", "docs", "--db", "db", *HASH_SPEC, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    size = sum(f.stat().st_size for f in (tmp_path / "db").rglob("*") if f.is_file())
    assert size < 60 * 1024 ** 2, size
    for _, m in records(tmp_path / "db").values():
        assert len(m["section_path"]) <= 200


# -- the terminal ---------------------------------------------------------------------------
def test_names_and_text_cannot_drive_the_terminal(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.x\x1b]0;PWNED\x07\nFORGED LINE: 0 failed").write_text("x")
    (docs / "doc.txt").write_text("hello \x1b]0;PWNED\x07 world\x1b[2J\n")
    for args in (("chunk", "docs"), ("ingest", "docs", "--db", "db", *HASH_SPEC)):
        p = cli(*args, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        both = p.stdout + p.stderr
        assert "\x1b" not in both and "\x07" not in both
        assert not any(line.startswith("FORGED") for line in both.splitlines())
    assert "\\x1b]0;PWNED\\x07" in cli("chunk", "docs", cwd=tmp_path).stdout
    # --jsonl stays exact JSON: the text is there, escaped by JSON alone
    p = cli("chunk", "docs/doc.txt", "--jsonl", cwd=tmp_path)
    assert json.loads(p.stdout)["text"].startswith("hello \x1b]0;PWNED\x07")
    assert terminal_safe("a\nb\tc", lines=True) == "a\nb\tc"
    assert terminal_safe("a\nb") == "a\\x0ab"


# -- where the database cannot be written ---------------------------------------------------
def _one_line_no_traceback(p: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in p.stderr, p.stderr
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


def test_a_db_that_is_a_file_is_bad_usage_in_one_line(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "dbfile").write_text("not a folder")
    p = cli("ingest", "docs", "--db", "dbfile", *HASH_SPEC, cwd=tmp_path)
    assert p.returncode == 2
    assert "is a file, not a folder" in _one_line_no_traceback(p)


def _mount_tmpfs(where: Path, options: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None or os.geteuid() != 0:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True)
    return done.returncode == 0


def _umount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_read_only_database_folder_is_one_line(tmp_path):
    ro = tmp_path / "ro"
    if not _mount_tmpfs(ro, "ro,size=1m"):
        pytest.skip("needs root and tmpfs mounts to make a read-only file system")
    try:
        (tmp_path / "docs").mkdir()
        (tmp_path / "docs" / "a.md").write_text("# A\n\ntext\n")
        p = cli("ingest", "docs", "--db", str(ro / "db"), *HASH_SPEC, cwd=tmp_path)
        assert p.returncode == 1
        line = _one_line_no_traceback(p)
        assert "cannot write the database" in line and "Read-only file system" in line
    finally:
        _umount(ro)


def test_a_full_disk_is_named_and_a_rerun_converges(tmp_path):
    small = tmp_path / "small"
    if not _mount_tmpfs(small, "size=20m"):
        pytest.skip("needs root and tmpfs mounts to make a small file system")
    try:
        docs = tmp_path / "docs"
        docs.mkdir()
        # ~40 MB of records: the 20 MB disk fills during the writes
        for i in range(40):
            (docs / f"f{i}.md").write_text("\n\n".join(
                f"# Part {i}.{j}\n\n" + " ".join(f"w{i}x{j}y{k}" for k in range(120))
                for j in range(60)))
        db = small / "db"
        p = cli("ingest", "docs", "--db", str(db), *HASH_SPEC, "--no-progress", cwd=tmp_path,
                timeout=600)
        assert p.returncode == 1
        assert "Traceback" not in p.stderr
        assert f"no space left on device at {db}" in p.stderr, p.stderr
        subprocess.run(["mount", "-o", "remount,size=400m", str(small)], check=True)
        p = cli("ingest", "docs", "--db", str(db), *HASH_SPEC, "--no-progress", cwd=tmp_path,
                timeout=600)
        assert p.returncode == 0, p.stderr
        c = cli("check", "--db", str(db), cwd=tmp_path)
        assert c.returncode == 0 and "no readable vector" not in c.stdout, c.stdout
    finally:
        _umount(small)


def test_a_folder_that_cannot_be_searched_is_skipped_with_its_reason(tmp_path, monkeypatch):
    """(As root every folder can be searched, so the refusal is simulated at `os.lstat`.)"""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.md").write_text("# A\n")
    real = os.lstat

    def lstat(path, *args, **kwargs):
        if str(path).startswith(str(locked)):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    found = discover([locked / "a.md"], root=tmp_path)
    assert found.files == []
    assert found.skipped == [(str(locked / "a.md"), "cannot stat: Permission denied")]


# -- reads never create -----------------------------------------------------------------------
def test_read_commands_never_create_a_database(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("mine")
    for args in (("query", "anything", "--db", "plain"), ("check", "--db", "plain"),
                 ("map", "--db", "plain", "-o", str(tmp_path / "m.html"))):
        p = cli(*args, cwd=tmp_path)
        assert p.returncode == 1, (args, p.stderr)
        assert "no Chroma database at plain (the folder holds none)" in p.stderr
    assert sorted(q.name for q in plain.iterdir()) == ["notes.txt"]


def test_an_empty_folder_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    p = cli("chunk", "empty", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == ""
    assert "no documents of a supported format in empty" in p.stderr


# -- documents without text -------------------------------------------------------------------
@pytest.mark.corpus
def test_a_scanned_pdf_without_the_ocr_extra_is_counted_as_no_text(tmp_path):
    from conftest import corpus_files

    scanned = [p for p in corpus_files("pdf-tables") if "scanned" in p.name][:1]
    if not scanned:
        pytest.skip("no scanned PDF in the corpus")
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(scanned[0], docs)
    shutil.copy(FIXTURES / "fastapi__features.md", docs)
    # the engine's import fails, as where the extra is not installed
    fake = tmp_path / "rapidocr_onnxruntime"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('not installed')\n")
    p = cli("ingest", "docs", "--db", "db", *HASH_SPEC, "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    (entry,) = report["no_text"]
    assert entry["source"] == scanned[0].name
    assert "scanned page" in entry["reason"] and "chunkwise[ocr]" in entry["reason"]
    p = cli("ingest", "docs", "--db", "db", *HASH_SPEC, cwd=tmp_path)
    assert "1 no text" in p.stdout and "chunkwise[ocr]" in p.stderr
