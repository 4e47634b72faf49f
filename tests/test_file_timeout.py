"""`--file-timeout` bounds one file's parsing and chunking in `chunk`, `text`, `sections` and
`inspect` too, not only in `ingest` (issue 44): a file past it fails with one line naming it
and the bound, exit 1, and the other files are still done. Real files, the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import CHUNKWISE_CLI, FIXTURES


@pytest.fixture
def two(tmp_path):
    """A novel 40 times over (6 MB: seconds of CPU to parse and chunk, far past a 2 s bound)
    before a tiny note (milliseconds, once the first file has loaded the parser and
    tokenizer); and the novel once, which the default bound lets through."""
    novel = (FIXTURES / "alice-in-wonderland.txt").read_text(encoding="utf-8")
    (tmp_path / "alice.txt").write_text(novel * 40, encoding="utf-8")
    (tmp_path / "note.txt").write_text("Note\n\nOne short line.\n", encoding="utf-8")
    shutil.copy(FIXTURES / "alice-in-wonderland.txt", tmp_path / "once.txt")
    return tmp_path


def _run(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([*CHUNKWISE_CLI, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_a_file_past_the_bound_fails_alone(two):
    command, extra = "chunk", ["--jsonl"]
    out = _run(command, "alice.txt", "note.txt", *extra, "--file-timeout", "2", cwd=two)
    assert out.returncode == 1, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "alice.txt" in lines[0] and "took longer than" in lines[0], lines
    assert "Traceback" not in out.stderr
    assert "One short line" in out.stdout or "note.txt" in out.stdout  # the other file is done
    full = _run(command, "once.txt", *extra, cwd=two)  # the default bound: done
    assert full.returncode == 0 and full.stdout, full.stderr


def test_chunk_output_is_whole_for_the_files_in_bounds(two):
    out = _run("chunk", "alice.txt", "note.txt", "--jsonl", "--file-timeout", "2", cwd=two)
    sources = {json.loads(line)["source"] for line in out.stdout.splitlines()}
    assert sources == {"note.txt"}


def test_inspect_names_the_file_on_the_page_and_goes_on(two):
    out = _run("inspect", "alice.txt", "note.txt", "-o", "page.html", "--file-timeout", "2",
               cwd=two)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    page = (two / "page.html").read_text(encoding="utf-8")
    assert "took longer than" in page and "One short line" in page


@pytest.mark.parametrize("command", ["chunk", "text", "sections", "inspect"])
def test_a_bound_that_is_not_positive_is_bad_usage(two, command):
    out = _run(command, "note.txt", "--file-timeout", "0", cwd=two)
    assert out.returncode == 2 and "--file-timeout" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    ok = _run(command, "note.txt", "--file-timeout", "60", cwd=two)  # text and sections only
    assert ok.returncode == 0, ok.stderr                               # parse: in bounds
