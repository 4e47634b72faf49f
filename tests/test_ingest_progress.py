"""Progress that tells the truth (issue 45, item 3), captured from a real ingest of a folder
with one slow file: files and chunks counted as they are made, no time left before a rate is
measured, a texts total that only grows, records counted as they are written, and the same
record count, named the same, in the first run's summary and a rerun's."""

from __future__ import annotations

import io
import re
import time

from chunkwise import Chunker
from chunkwise.cli.progress import Progress
from chunkwise.cli.store import _summary, show_ingest
from chunkwise.pipeline.runner import ingest

from test_ingest_interrupt import _corpus, _slow


class SlowFileChunker:
    """The real chunker; a file holding `SLOW-FILE` takes 3 s to parse."""

    def __init__(self) -> None:
        self.chunker = Chunker(max_tokens=48, tokenizer="minilm")
        self.fingerprint = self.chunker.fingerprint

    def parse_bytes(self, data: bytes, **kwargs):
        if b"SLOW-FILE" in data:
            time.sleep(3.0)
        return self.chunker.parse_bytes(data, **kwargs)

    def chunk_document(self, doc):
        return self.chunker.chunk_document(doc)


def test_progress_lines_of_a_folder_with_one_slow_file(tmp_path):
    slow = _slow(tmp_path)
    docs = tmp_path / "docs"
    _corpus(docs, files=8, sections=20)
    (docs / "log03.md").write_text((docs / "log03.md").read_text() + "\nSLOW-FILE\n")
    out = io.StringIO()
    bars: list[Progress] = []

    def bar(p):  # as `chunkwise ingest` draws it, a line at every update
        if not bars:
            bars.append(Progress("ingest", p.files_total, out, tty=False, every=0.0))
        show_ingest(bars[0], p)

    first = ingest([docs], db_path=tmp_path / "db", embedder=slow, workers=1,
                   chunker=SlowFileChunker(), progress=bar)
    bars[0].close()
    lines = out.getvalue().splitlines()
    files = [ln for ln in lines if "texts embedded" not in ln]
    texts = [ln for ln in lines if "texts embedded" in ln]
    assert files and texts, lines
    # files and chunks counted as they are made
    made = [int(re.search(r"files, (\d+) chunks", ln).group(1)) for ln in files]
    assert made == sorted(made) and made[-1] > 0 and made[0] > 0, files
    # no rate and no time left before they are measured: the first line says neither
    assert " left" not in lines[0] and "/s" not in lines[0], lines[0]
    # the texts total only grows; the records written only grow, and some are written
    # before the last text is embedded
    totals = [int(re.search(r"/(\d+) texts", ln).group(1)) for ln in texts]
    assert totals == sorted(totals) and totals[-1] == first.embedded, texts
    written = [int(re.search(r"(\d+) chunks written", ln).group(1)) for ln in texts]
    assert written == sorted(written)
    assert any(0 < w for w, ln in zip(written, texts)
               if int(re.search(r"(\d+)/", ln.split("ingest: ")[1]).group(1)) < first.embedded)
    # the same count, named the same, on the first run and a rerun
    again = ingest([docs], db_path=tmp_path / "db", embedder=slow, workers=1,
                   chunker=SlowFileChunker())
    assert first.records == again.records > 0 and again.written == 0
    assert f"{first.records} records: " in _summary(first)
    assert f"{again.records} records: " in _summary(again)
