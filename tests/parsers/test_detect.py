"""One answer to "which format is this file?": `chunkwise.parsers.detect_format`, asked by
`parse_bytes`, the folder walk and the LlamaIndex parser alike."""

from __future__ import annotations

from pathlib import Path

from chunkwise.pipeline.discover import discover
from chunkwise.parsers import EXTENSIONS, detect_format


def test_extension_first_then_content_then_nothing():
    assert detect_format("a/b.MD", b"%PDF-1.4") == "markdown"
    assert detect_format("notes", b"%PDF-1.4") == "pdf"
    assert detect_format(None, b"<html><body>x</body></html>") == "html"
    assert detect_format("notes.xyz", b"plain words") == "text"
    assert detect_format("notes.xyz") is None
    assert all(detect_format(f"x{ext}") == fmt for ext, fmt in EXTENSIONS.items())


def test_the_folder_walk_keeps_what_detect_format_names(tmp_path: Path):
    names = ["a.md", "b.HTM", "c.tsv", "d.pyi", "e.xyz", "README", "f.json"]
    for name in names:
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    kept = sorted(f.source for f in discover([tmp_path]).files)
    assert kept == sorted(n for n in names if detect_format(n) is not None)
    assert kept == ["a.md", "b.HTM", "c.tsv", "d.pyi", "f.json"]
