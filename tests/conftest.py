"""Shared test helpers: where the fixtures and the (optional) shared corpus live, and a real
`chroma run` server on 127.0.0.1 (`ChromaServer`, the `server` fixture).

The shared folder is `../shared` next to the repository, or `$CHUNKWISE_SHARED` (point it at
an empty folder to run as a clean clone does). Every test that reads it is marked `corpus`
here, at collection, so `-m corpus` selects them and `-m "not corpus"` leaves them out."""

from __future__ import annotations

import inspect
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SHARED = Path(os.environ.get("CHUNKWISE_SHARED") or ROOT.parent / "shared").resolve()
CORPUS = SHARED / "corpus"


def corpus_files(fmt_dir: str) -> list[Path]:
    """Files of one folder of ../shared/corpus; skips the test when the corpus is absent."""
    folder = CORPUS / fmt_dir
    if not folder.is_dir():
        pytest.skip(f"shared corpus not present ({folder})")
    return sorted(p for p in folder.iterdir() if p.is_file())


# -- the `corpus` marker, found rather than remembered --------------------------------------
def _reads_shared(code: types.CodeType, names: dict, seen: set) -> bool:
    """Whether `code` (a test, a fixture, a helper) names `CORPUS`, `SHARED` or conftest's
    `corpus_files`, itself or through the module's own functions it calls."""
    if code in seen:
        return False
    seen.add(code)
    for name in code.co_names:
        if name in ("CORPUS", "SHARED"):
            return True
        if name == "corpus_files" and names.get(name, corpus_files) is corpus_files:
            return True  # not chunkwise.evaluation.peers' function of that name
        called = names.get(name)
        if _in_tests(called) and _reads_shared(called.__code__, called.__globals__, seen):
            return True
    return any(isinstance(c, types.CodeType) and _reads_shared(c, names, seen)
               for c in code.co_consts)


def _in_tests(func) -> bool:
    return isinstance(func, types.FunctionType) and func.__code__.co_filename.startswith(
        str(ROOT / "tests"))


def _under_shared(value) -> bool:
    return isinstance(value, Path) and value.resolve().is_relative_to(SHARED)


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.get_closest_marker("corpus") or not isinstance(item, pytest.Function):
            continue
        test = item.function
        test = getattr(getattr(test, "hypothesis", None), "inner_test", test)  # @given
        funcs = [inspect.unwrap(f) for f in [test] + [
            d.func for defs in item._fixtureinfo.name2fixturedefs.values() for d in defs]]
        seen: set = set()
        params = getattr(getattr(item, "callspec", None), "params", {}).values()
        if any(_under_shared(v) for v in params) or any(
                _reads_shared(f.__code__, f.__globals__, seen) for f in funcs if _in_tests(f)):
            item.add_marker(pytest.mark.corpus)


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def tiktoken_encoded(monkeypatch) -> list[int]:
    """The length of every text tiktoken encodes while the test runs (an index built before
    keeps the methods it bound: clear `tiktoken_builder`'s cache to count its builds)."""
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
    seconds: float  # wall clock: grows with the machine's load
    peak_rss: int  # bytes
    stderr: str
    cpu_seconds: float = 0.0  # user + system time of the command: what a time bound asserts


#: runs argv[2:] as its only child and writes that child's peak RSS (KiB on Linux) and its
#: CPU time (user + system seconds) to argv[1].
#: A child forked from the test process itself would report the test process's own peak
#: (Linux keeps the high-water mark across fork and exec), over a GB late in a full run.
_MEASURE = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[2:]); "
            "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "open(sys.argv[1], 'w').write(f'{u.ru_maxrss} {u.ru_utime + u.ru_stime}'); "
            "sys.exit(rc)")


def run_measured(args: list[str], stdout: Path, *, timeout: float,
                 cwd: Path | None = None) -> Measured:
    """Run `args` with stdout to a file; its wall time, CPU time and peak RSS (measured by a
    small parent process of its own, so only this command is counted). Killed past `timeout`
    (returncode -9), a wall-clock bound: assert time on `cpu_seconds`, which a busy machine
    does not inflate."""
    if not hasattr(os, "wait4"):
        pytest.skip("peak RSS of one child is measured on Unix only")
    rss_file = stdout.with_name(stdout.name + ".rss")
    with open(stdout, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _MEASURE, str(rss_file), *args],
                                stdout=out, stderr=subprocess.PIPE, start_new_session=True,
                                cwd=cwd)
        timer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            err = proc.stderr.read().decode("utf-8", "replace")
            proc.wait()
        finally:
            timer.cancel()
            proc.stderr.close()
    seconds = time.perf_counter() - start
    killed = proc.returncode == -signal.SIGKILL
    kib, cpu = rss_file.read_text().split() if rss_file.exists() and not killed else (0, 0)
    # ru_maxrss is in KiB on Linux, in bytes on macOS
    rss = int(kib) * (1 if sys.platform == "darwin" else 1024)
    return Measured(-9 if killed else proc.returncode, seconds, rss, err, float(cpu))


#: the CLI as a command line, run by the interpreter that runs the tests
CHUNKWISE_CLI = [sys.executable, "-m", "chunkwise.cli"]


# -- a `chroma run` server ------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ChromaServer:
    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port, self.proc = path, port, None

    def start(self) -> None:
        exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
        if exe is None:
            pytest.skip("the `chroma` CLI is not installed")
        self.log = open(self.path.parent / f"chroma-{self.port}.log", "ab")
        self.proc = subprocess.Popen([exe, "run", "--path", str(self.path), "--host", "127.0.0.1",
                                      "--port", str(self.port)], stdout=self.log, stderr=self.log)
        import httpx

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.skip(f"`chroma run` exited with {self.proc.returncode}; see {self.log.name}")
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/api/v2/heartbeat", timeout=1).is_success:
                    return
            except httpx.TransportError:
                time.sleep(0.2)
        self.stop()
        pytest.skip("`chroma run` did not answer its heartbeat within 60 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@pytest.fixture
def server(tmp_path):
    srv = ChromaServer(tmp_path / "server-db", free_port())
    srv.start()
    yield srv
    srv.stop()
