"""Progress of a long command on stderr: a tqdm bar on a terminal (files, chunks, rate, ETA),
else one plain line every few seconds (CI logs, `2> file`), nothing with `--quiet`.

    >>> bar = Progress("ingest", total=120, stream=sys.stderr)
    >>> bar.update(files=3, chunks=96, rate=31.5)
    >>> bar.close()
"""

from __future__ import annotations

import time
from typing import Any, TextIO

#: seconds between two plain lines when stderr is not a terminal
EVERY = 5.0


class Progress:
    """Files done out of `total`, chunks so far and a rate, drawn as the stream allows."""

    def __init__(self, what: str, total: int, stream: TextIO, *, tty: bool | None = None,
                 every: float = EVERY) -> None:
        self.what, self.total, self.stream, self.every = what, total, stream, every
        self.tty = stream.isatty() if tty is None else tty
        self.start = self.last = time.monotonic()
        self.files = 0
        self.bar: Any = None
        if self.tty:
            import shutil

            from tqdm import tqdm

            # the terminal's size, 80x24 where it reports none (a fresh pseudo-terminal: tqdm
            # would hide a bar below a screen of 0 rows)
            size = shutil.get_terminal_size()
            self.bar = tqdm(total=total, desc=what, unit="file", file=stream,
                            ncols=size.columns, nrows=size.lines, leave=False)

    def update(self, *, files: int, chunks: int, rate: float | None = None) -> None:
        """`files` done so far (of `total`), `chunks` made or written so far, `rate` in chunks
        per second (default: chunks over the time since the start)."""
        now = time.monotonic()
        if rate is None:
            rate = chunks / (now - self.start) if now > self.start else 0.0
        if self.bar is not None:
            self.bar.update(max(0, files - self.files))
            self.bar.set_postfix_str(f"{chunks} chunks, {rate:.1f} chunks/s", refresh=False)
            self.bar.refresh()
        elif now - self.last >= self.every:
            self.last = now
            eta = ""
            if 0 < files < self.total:
                left = (now - self.start) / files * (self.total - files)
                eta = f", about {_clock(left)} left"
            self.stream.write(f"{self.what}: {files}/{self.total} files, {chunks} chunks, "
                              f"{rate:.1f} chunks/s{eta}\n")
            self.stream.flush()
        self.files = max(self.files, files)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 \
        else f"{seconds // 60}:{seconds % 60:02d}"
