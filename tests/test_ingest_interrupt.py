"""Work kept across an interrupt (issue 44, item 9): vectors written at least every
`FLUSH_SECONDS` of embedding, a Ctrl-C at a random point writes what is embedded and says so in
one line (exit 130, no traceback from any process), and the rerun reuses every vector written,
leaving the store a clean ingest gives.

The real pipeline and CLI, with worker processes and the embedder in its own process; the
embedder is a hash with a per-text delay (the test is about the pipeline, not the model)."""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunkwise.pipeline.runner import ingest
from chunkwise.pipeline.threads import FLUSH_SECONDS

from test_ingest_swaps import _as_set
from test_ingest_trust import records

ROOT = Path(__file__).resolve().parents[1]
DELAY = 0.02  # seconds per text: about 10 s of embedding for 500 texts

SLOW = f'''\
import time
from hashembed import hash_vectors
from chunkwise.embeddings.functions import Embedder


def slow(texts):
    time.sleep({DELAY} * len(texts))
    return hash_vectors(texts)


SLOW = Embedder(identity="test:slow-hash", embed=slow)
'''


def _corpus(folder: Path, files: int = 20, sections: int = 25) -> None:
    folder.mkdir()
    for f in range(files):
        parts = [f"# Log {f}\n"]
        for s in range(sections):
            parts.append(f"## Entry {f}.{s}\n\nOn day {s} the keeper of station {f} counted "
                         f"{f * 37 + s} gulls, mended net {s % 7} and logged wind {s * 3 % 11}.\n")
        (folder / f"log{f:02}.md").write_text("\n".join(parts))


def _slow(tmp: Path):
    (tmp / "slowembed.py").write_text(SLOW)
    sys.path.insert(0, str(tmp))
    try:
        return importlib.import_module("slowembed").SLOW
    finally:
        sys.path.remove(str(tmp))


def _cli(tmp: Path, db: str, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"),
                                                        str(tmp)])}
    return subprocess.Popen([sys.executable, "-m", "chunkwise.cli", "ingest", "docs", "--db",
                             db, "--embedder", "slowembed:SLOW", "--max-tokens", "48", *args],
                            cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, **kw)


def test_vectors_are_written_every_few_seconds_of_embedding(tmp_path):
    slow = _slow(tmp_path)
    _corpus(tmp_path / "docs")
    seen = []
    report = ingest([tmp_path / "docs"], db_path=tmp_path / "db", embedder=slow, workers=1,
                    max_tokens=48, progress=seen.append)
    assert report.embedded >= 400
    # the first record is written long before the first window (512 texts) is embedded
    first = next(p for p in seen if p.chunks_written > 0)
    assert first.texts_embedded < 300, first
    # between two writes, at most FLUSH_SECONDS and a slice of embedding pass
    times = [p.embed_seconds for i, p in enumerate(seen)
             if i and p.chunks_written > seen[i - 1].chunks_written]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps and max(gaps) <= FLUSH_SECONDS + 128 * DELAY + 3, gaps


def test_a_ctrl_c_at_a_random_point_keeps_what_was_embedded(tmp_path):
    slow = _slow(tmp_path)
    _corpus(tmp_path / "docs")
    clean = ingest([tmp_path / "docs"], db_path=tmp_path / "clean", embedder=slow, workers=1,
                   max_tokens=48)
    total = clean.embedded
    assert total >= 400
    rng = random.Random(44)
    kept_share = []
    for trial in range(3):
        # a database of its own per trial: this process's Chroma client caches by path
        db = tmp_path / f"db{trial}"
        proc = _cli(tmp_path, db.name, "--workers", "2")
        # a random moment of the run: start-up and parsing take a few seconds, embedding
        # about 10 more
        time.sleep(rng.uniform(5.0, 11.0))
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
        out, err = proc.communicate(timeout=120)
        if proc.returncode in (0, -signal.SIGINT):  # it ended first (or was ending)
            continue
        lines = err.strip().splitlines()
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        got = re.fullmatch(r"interrupted after (\d+) of (\d+) texts; (\d+) kept, rerun to finish",
                           lines[-1])
        assert got, lines
        embedded, known, kept = map(int, got.groups())
        stored = {m["embed_hash"] for _, m in records(db).values()}
        assert len(stored) >= kept >= 0.8 * embedded, (embedded, kept, len(stored))
        kept_share.append((embedded, kept))
        # the rerun embeds only what was not kept, and the store is a clean ingest's
        again = _cli(tmp_path, db.name, "--workers", "2", "--json", "--no-progress")
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert json.loads(out)["embedded"] == total - len(stored)
        assert _as_set(records(db)) == _as_set(records(tmp_path / "clean"))
    print("texts embedded, kept at each Ctrl-C:", kept_share)
    assert kept_share, "every run ended before its Ctrl-C"
