"""The CLI: the contract's JSON fields, failures, exit codes, folder walks."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import FIXTURES

CLI = [sys.executable, "-m", "chunkwise.cli"]
FIELDS = {"id", "source", "format", "text", "start", "end", "context", "section_path",
          "page_start", "page_end", "kinds", "tokens"}


def run(*args, cwd=None):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_chunk_jsonl_has_the_contract_fields(tmp_path):
    p = run("chunk", FIXTURES / "fastapi__features.md", "--jsonl", "--max-tokens", "128")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert rows and all(FIELDS <= set(r) for r in rows)
    assert all(r["tokens"] <= 128 for r in rows)


def test_failures_print_one_line_and_the_rest_continue(tmp_path):
    (tmp_path / "good.md").write_text("# Hi\n\nText.\n")
    (tmp_path / "bad.md").write_bytes(bytes(range(256)) * 10)
    (tmp_path / "empty.txt").write_text("")
    p = run("chunk", tmp_path, "--jsonl")
    assert p.returncode == 1
    assert p.stderr.strip().count("\n") == 0 and "bad.md" in p.stderr and "binary" in p.stderr
    assert "Traceback" not in p.stderr
    assert [json.loads(x)["source"].endswith("good.md") for x in p.stdout.splitlines()] == [True]


def test_empty_file_exits_zero(tmp_path):
    (tmp_path / "e.md").write_text("")
    p = run("chunk", tmp_path / "e.md", "--jsonl")
    assert p.returncode == 0 and p.stdout == ""


def test_bad_options_exit_2():
    p = run("chunk", FIXTURES, "--overlap", "500")
    assert p.returncode == 2 and "overlap" in p.stderr
    p = run("chunk", FIXTURES, "--tokenizer", "nope")
    assert p.returncode == 2 and "unknown tokenizer" in p.stderr


def test_text_and_sections_agree_with_chunks():
    path = FIXTURES / "fastapi__features.md"
    text = run("text", path).stdout
    sections = [json.loads(x) for x in run("sections", path, "--jsonl").stdout.splitlines()]
    assert sections and all(0 <= s["start"] < s["end"] <= len(text) for s in sections)
    rows = [json.loads(x) for x in run("chunk", path, "--jsonl").stdout.splitlines()]
    assert all(text[r["start"]:r["end"]] == r["text"] for r in rows)


def test_help_has_examples():
    p = run("chunk", "--help")
    assert p.returncode == 0 and "Example" in p.stdout
