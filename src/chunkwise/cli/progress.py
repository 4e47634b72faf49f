"""Progress of a long command on stderr: a tqdm bar on a terminal, else one plain line every
few seconds (CI logs, `2> file`), from the first update on; nothing with `--quiet`.

What is shown is the phase that takes the time: files read while files are being read, then
texts embedded (done of those known, rate, time left) while the embedder works.

    >>> bar = Progress("ingest", total=120, stream=sys.stderr)
    >>> bar.update(files=3, chunks=96, rate=31.5)
    >>> bar.update(files=120, chunks=96, texts=800, texts_total=3000, texts_rate=42.0)
    >>> bar.close()
"""

from __future__ import annotations

import threading
import time
from typing import Any, TextIO

#: seconds between two plain lines when stderr is not a terminal
EVERY = 5.0
#: a rate is shown once this many seconds measure it, and a time left for the files once
#: this many files have been read as well (a line at once read `0:00 left`, 100,000 chunks/s)
MEASURED_FILES, MEASURED_SECONDS = 2, 1.0


class Progress:
    """Files done out of `total`, chunks so far, and texts embedded, drawn as the stream
    allows. Safe to update from several threads."""

    def __init__(self, what: str, total: int, stream: TextIO, *, tty: bool | None = None,
                 every: float = EVERY) -> None:
        self.what, self.total, self.stream, self.every = what, total, stream, every
        self.tty = stream.isatty() if tty is None else tty
        self.start = time.monotonic()
        self.last: float | None = None  # when the last plain line was written
        self.state: dict[str, Any] | None = None
        self.texts_total = 0
        self.lock = threading.Lock()
        self.bar: Any = None
        self.stopped = threading.Event()
        if self.tty:
            import shutil

            from tqdm import tqdm

            # the terminal's size, 80x24 where it reports none (a fresh pseudo-terminal: tqdm
            # would hide a bar below a screen of 0 rows)
            size = shutil.get_terminal_size()
            self.bar = tqdm(total=total, desc=what, unit="files", file=stream,
                            ncols=size.columns, nrows=size.lines, leave=False,
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n}/{total} {unit}"
                                       "{postfix}")
        elif every > 0:  # a line every `every` seconds even while nothing reports
            self.ticker = threading.Thread(target=self._tick, daemon=True,
                                           name="chunkwise-progress")
            self.ticker.start()

    def update(self, *, files: int, chunks: int, rate: float | None = None, texts: int = 0,
               texts_total: int = 0, texts_rate: float | None = None,
               written: int | None = None) -> None:
        """`files` done so far (of `total`), `chunks` made so far, `rate` in chunks per
        second (default: chunks over the time since the start, once `MEASURED_SECONDS` have
        passed; none before); `texts` embedded of
        `texts_total` known to need it so far, at `texts_rate` a second; `written`: records
        written so far (default `chunks`)."""
        if self.stopped.is_set():  # a thread telling after the end (an interrupt) draws nothing
            return
        now = time.monotonic()
        if rate is None and now - self.start >= MEASURED_SECONDS:  # else none shown yet
            rate = chunks / (now - self.start)
        with self.lock:
            # the total shown only grows: texts known so far, never an estimate that a
            # later file proves too high (issue 45: 0/948 texts became 0/880)
            self.texts_total = max(self.texts_total, texts_total)
            self.state = {"files": files, "chunks": chunks, "rate": rate, "texts": texts,
                          "texts_total": self.texts_total, "texts_rate": texts_rate,
                          "written": chunks if written is None else written}
            if self.bar is not None:
                done, total, unit, rest = self._describe(now)
                self.bar.total = max(total, 1)
                self.bar.n = min(done, self.bar.total)
                self.bar.unit = unit
                self.bar.set_postfix_str(rest, refresh=False)
                self.bar.refresh()
            elif self.last is None or now - self.last >= self.every:
                self._line(now)

    def _describe(self, now: float) -> tuple[int, int, str, str]:
        """(done, total, unit, the rest) of the phase that takes the time now: a line reads
        `done/total unit, the rest`."""
        s = self.state or {"files": 0, "chunks": 0, "rate": 0.0, "texts": 0,
                           "texts_total": 0, "texts_rate": None, "written": 0}
        files, chunks, texts, known = s["files"], s["chunks"], s["texts"], s["texts_total"]
        read = f"{files}/{self.total} files"
        elapsed = now - self.start
        if known and (texts < known or files < self.total):
            # embedding: of the texts known so far (more may come while files are read);
            # a time left only from a rate measured on texts embedded
            speed = s["texts_rate"] if s["texts_rate"] is not None else \
                texts / elapsed if texts and elapsed > 0 else 0.0
            eta = f", about {_clock((known - texts) / speed)} left" if speed > 0 else ""
            return texts, known, "texts embedded", (f"{speed:.1f}/s{eta}, {read}, "
                                                    f"{s['written']} chunks written")
        eta = ""
        if 0 < files < self.total and (files >= MEASURED_FILES and elapsed >= MEASURED_SECONDS):
            eta = f", about {_clock(elapsed / files * (self.total - files))} left"
        speed = "" if s["rate"] is None else f", {s['rate']:.1f} chunks/s"
        return files, self.total, "files", f"{chunks} chunks{speed}{eta}"

    def _line(self, now: float) -> None:
        self.last = now
        done, total, unit, rest = self._describe(now)
        self.stream.write(f"{self.what}: {done}/{total} {unit}, {rest}\n")
        self.stream.flush()

    def _tick(self) -> None:
        while not self.stopped.wait(min(self.every / 5, 1.0)):
            with self.lock:
                now = time.monotonic()
                if self.state is not None and self.last is not None \
                        and now - self.last >= self.every:
                    self._line(now)

    def close(self) -> None:
        self.stopped.set()
        with self.lock:
            if self.bar is not None:
                self.bar.close()
                self.bar = None


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"
