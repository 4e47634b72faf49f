"""Stage 2 over many files, results in discovery order: inline, or in a pool of spawned
worker processes (`prepared_in_order`). A file that kills its worker fails alone; the pool
is started afresh for the rest.

The workers are started by `embeddings.process.spawn_context`: they never import the
caller's main module, so `ingest` with workers runs from a script without a `__main__`
guard, a notebook, `python -c` or standard input, and the caller's program runs once. They
log at the level the caller's `chunkwise` logger has (`--quiet`: errors only).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from contextlib import contextmanager
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Iterator

from ..chroma.store import SourceState
from ..embeddings.process import ignore_interrupts, sendable, spawn_context
from .discover import FileTask
from .stages import Prepared, PrepareOptions, prepare

log = logging.getLogger(__name__)


def prepared_in_order(tasks: list[FileTask], states: dict[str, SourceState],
                       opts: PrepareOptions, workers: int) -> Iterator[Prepared]:
    """Stage 2 over `tasks`, results in task order: inline, or in a pool of `workers`
    processes with at most a few files per worker in flight (backpressure). A file that kills
    its worker (a crash in a parser's C code, the kernel's out-of-memory killer) fails alone:
    the files in flight when the pool broke are run again one at a time, each in a process
    of its own, and the pool is started afresh for the rest."""
    if workers > 1 and len(tasks) > 1 and not sendable(opts):
        log.warning("these chunking options cannot be sent to worker processes (an object "
                    "that does not pickle, or a class of the main script); parsing in this "
                    "process")
        workers = 1
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield prepare(task, states.get(task.source), opts)
        return
    todo = deque(tasks)
    while todo:
        yield from _pooled(todo, states, opts, workers)


def _pool(workers: int, opts: PrepareOptions) -> ProcessPoolExecutor:
    # spawn: no fork of a process holding Chroma's threads
    level = logging.getLogger("chunkwise").getEffectiveLevel()
    return ProcessPoolExecutor(max_workers=workers, mp_context=spawn_context(),
                               initializer=_worker_init, initargs=(opts, os.getpid(), level))


def _pooled(todo: deque[FileTask], states: dict[str, SourceState], opts: PrepareOptions,
            workers: int) -> Iterator[Prepared]:
    """Take tasks from `todo` through one pool until it is empty or the pool breaks; then
    run the files that were in flight alone."""
    from concurrent.futures.process import BrokenProcessPool

    suspects: list[FileTask] = []
    with _pool(workers, opts) as pool, _ended_on_interrupt(pool):
        pending: deque[tuple[FileTask, Future[Prepared]]] = deque()

        def fill() -> None:
            while todo and len(pending) < workers * 4:
                task = todo.popleft()
                pending.append((task, pool.submit(_worker_prepare, task,
                                                  states.get(task.source))))

        fill()
        while pending:
            try:
                result = pending[0][1].result()
            except BrokenProcessPool:
                suspects = [task for task, _ in pending]
                break
            pending.popleft()
            yield result
            fill()
    for task in suspects:
        yield _alone(task, states.get(task.source), opts)


@contextmanager
def _ended_on_interrupt(pool: ProcessPoolExecutor) -> Iterator[None]:
    """The pool's workers killed when the block is left by a Ctrl-C (or the consumer
    stops): leaving the pool would otherwise wait for the files they parse, up to
    `--file-timeout` each."""
    try:
        yield
    except (KeyboardInterrupt, GeneratorExit):
        kill = getattr(pool, "kill_workers", None)  # Python >= 3.14
        if kill is not None:
            kill()
        else:  # the executor's own table of its processes (no public way before 3.14)
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        raise


def _alone(task: FileTask, stored: SourceState | None, opts: PrepareOptions) -> Prepared:
    """Stage 2 for one file in a process of its own; a failure if that process dies."""
    from concurrent.futures.process import BrokenProcessPool

    with _pool(1, opts) as pool:
        try:
            return pool.submit(_worker_prepare, task, stored).result()
        except BrokenProcessPool:
            return Prepared(task.source, "failed", reason="the worker process parsing it died "
                            "(a crash in a parser, or out of memory)")


def picklable(obj: object) -> bool:
    """Whether `obj` pickles (what the Ray runner sends its tasks)."""
    import pickle

    try:
        pickle.dumps(obj)
        return True
    except Exception:  # noqa: BLE001 - any object may refuse in its own way
        return False


_worker_opts: PrepareOptions | None = None


def _worker_init(opts: PrepareOptions, parent: int, level: int) -> None:
    global _worker_opts
    ignore_interrupts()  # a Ctrl-C is the parent's to handle: it ends the pool
    _worker_opts = opts
    logging.getLogger("chunkwise").setLevel(level)  # its records reach stderr unconfigured
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True,
                     name="chunkwise-parent-watch").start()


def _exit_with_parent(parent: int) -> None:
    """A worker whose parent was killed (kill -9: no chance to stop its pool) would wait for
    work for ever: every worker holds the task queue's write end too, so its read never ends.
    It leaves within a second of being orphaned instead."""
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:
            os._exit(1)


def _worker_prepare(task: FileTask, stored: SourceState | None) -> Prepared:
    assert _worker_opts is not None
    return prepare(task, stored, _worker_opts)
