"""One writer at a time per embedded Chroma database.

Two processes writing one `PersistentClient` directory corrupt it without a word (vectors
lost, or an HNSW segment that no longer loads). A writer therefore holds an OS lock on
`DIR/chunkwise.lock` for its whole run: `flock` on POSIX, `msvcrt.locking` on Windows. The
OS releases it when the process ends, however it ends, so a killed run never leaves a stale
lock behind. Readers (`query`, `eval`) take no lock.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from pathlib import Path
from typing import Callable

from ..errors import ChunkwiseError, ConfigError, StoreError, no_space_message

log = logging.getLogger(__name__)

LOCK_NAME = "chunkwise.lock"
#: seconds a second writer waits for the first before giving up (`--wait`)
DEFAULT_WAIT = 10.0
_POLL = 0.1


class LockedError(ChunkwiseError):
    """Another process is writing the database; retry when it has finished."""


class WriteLock:
    """Context manager holding the write lock of the database in `folder`.

        >>> with WriteLock("chunkwise-db", wait=10):
        ...     ...  # the only writer

    Waits up to `wait` seconds for another writer (calling `on_wait` once with the holder's
    description), then raises `LockedError`.
    """

    def __init__(self, folder: str | os.PathLike, *, wait: float = DEFAULT_WAIT,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.folder = Path(folder)
        self.wait = wait
        self.on_wait = on_wait
        self._fd: int | None = None

    def __enter__(self) -> WriteLock:
        if self.folder.exists() and not self.folder.is_dir():
            raise ConfigError(f"the database location {self.folder} is a file, not a folder; "
                              f"name a folder (--db)")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.folder / LOCK_NAME,
                         os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise StoreError(no_space_message(self.folder)) from e
            raise StoreError(f"cannot write the database at {self.folder}: "
                             f"{e.strerror or e}") from e
        deadline = time.monotonic() + max(0.0, self.wait)
        told = False
        while not _try_lock(fd):
            holder = _holder(fd)
            if time.monotonic() >= deadline:
                os.close(fd)
                raise LockedError(
                    f"the database {self.folder} is being written by another process "
                    f"({holder}); try again when it has finished, or wait longer with --wait")
            if not told and self.on_wait is not None:
                self.on_wait(holder)
                told = True
            time.sleep(_POLL)
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}\n".encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
                _unlock(self._fd)
            finally:
                os.close(self._fd)
                self._fd = None


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except (OSError, AttributeError):
        text = ""
    return text or "another chunkwise ingest"


try:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
