"""Shared test helpers: where the fixtures and the (optional) shared corpus live."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus"


def corpus_files(fmt_dir: str) -> list[Path]:
    """Files of one folder of ../shared/corpus; skips the test when the corpus is absent."""
    folder = CORPUS / fmt_dir
    if not folder.is_dir():
        pytest.skip(f"shared corpus not present ({folder})")
    return sorted(p for p in folder.iterdir() if p.is_file())


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def tiktoken_encoded(monkeypatch) -> list[int]:
    """The length of every text tiktoken encodes while the test runs (an index built before
    keeps the methods it bound: clear `_tiktoken_builder`'s cache to count its builds)."""
    import tiktoken

    encoded: list[int] = []
    for method in ("encode_ordinary", "encode_to_numpy"):
        real = getattr(tiktoken.Encoding, method)

        def counting(self, text, *args, _real=real, **kwargs):
            encoded.append(len(text))
            return _real(self, text, *args, **kwargs)

        monkeypatch.setattr(tiktoken.Encoding, method, counting)
    return encoded


@dataclass(frozen=True)
class Measured:
    """What `run_measured` saw of one command."""

    returncode: int
    seconds: float
    peak_rss: int  # bytes
    stderr: str


def run_measured(args: list[str], stdout: Path, *, timeout: float) -> Measured:
    """Run `args` with stdout to a file; its wall time and peak RSS (from `os.wait4`, so only
    this child is measured). Killed past `timeout` (returncode -9)."""
    if not hasattr(os, "wait4"):
        pytest.skip("os.wait4 (peak RSS of one child) is Unix-only")
    with open(stdout, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.PIPE)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            err = proc.stderr.read().decode("utf-8", "replace")
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
            proc.stderr.close()
        proc.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is in KiB on Linux, in bytes on macOS
    rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return Measured(proc.returncode, time.perf_counter() - start, rss, err)


#: the CLI as a command line, run by the interpreter that runs the tests
CHUNKWISE_CLI = [sys.executable, "-m", "chunkwise.cli"]
