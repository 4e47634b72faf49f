"""Time limits on work that runs in-process (the parse of one file, the text of one PDF page).

    >>> with deadline(300, "parse"):
    ...     doc = parse(data)          # raises DeadlineExceeded after 300 s

A deadline is a `SIGALRM` timer, so it works only in the main thread of a POSIX process (the
serial runner and each worker of the process pool run parsing there); elsewhere it is a
no-op and the caller's other bounds (file size, page size) remain. Deadlines nest: the timer
is always set to the earliest one still open, and an inner deadline that ends re-arms the
outer one. The exception is raised between Python bytecodes, so a long call into C code is
interrupted when it returns.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from ..errors import ChunkwiseError


class DeadlineExceeded(ChunkwiseError):
    """The work ran past its time limit and was abandoned."""

    def __init__(self, what: str, seconds: float) -> None:
        self.what, self.seconds = what, seconds
        super().__init__(f"{what} took longer than {seconds:g} s")


_open: list[tuple[float, int, str, float]] = []  # (monotonic end, token, what, seconds)


def available() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


def _expired(signum, frame) -> None:  # noqa: ANN001 - signal handler signature
    now = time.monotonic()
    due = [d for d in _open if d[0] <= now + 1e-3]
    if not due:  # fired early or for a deadline that just closed: set it again
        _arm()
        return
    _, _, what, seconds = min(due)
    raise DeadlineExceeded(what, seconds)


@contextmanager
def deadline(seconds: float | None, what: str = "work") -> Iterator[None]:
    """Raise `DeadlineExceeded(what, seconds)` inside the block once `seconds` have passed.
    `None` or a non-positive value, or a thread other than the main one: no limit."""
    if not seconds or seconds <= 0 or not available():
        yield
        return
    token = id(object()) ^ len(_open)
    previous = signal.signal(signal.SIGALRM, _expired)
    _open.append((time.monotonic() + seconds, token, what, seconds))
    _arm()
    try:
        yield
    finally:
        _open[:] = [d for d in _open if d[1] != token]
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _arm()


def _arm() -> None:
    """Set the timer to the earliest open deadline (or leave it off)."""
    if _open:
        left = min(d[0] for d in _open) - time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))
