"""The embedding model in a process of its own, for the ingest pipeline.

Chroma's embedded client holds the GIL for the whole of a write (about 1 to 2 s for 512
chunks: a thread that only counts runs 150 times slower meanwhile), so an embedder on a
thread of the writing process stalls at every write. On a GPU that cost most of its speed
(about 500 of the 12,000 texts/s the model runs at on an H200). In a process of its own the
model embeds the next window while the store writes the last one.

An embedder moves only when it can be rebuilt there: from its `spec` (`minilm`, a model
folder, `module:attr`) and the device. Vectors are the same as in the parent: the same
model gets the same texts in the same batches.

The process is started by `spawn_context`, as are the pipeline's parse workers: children
that never import the caller's main module, so a script without an `if __name__ ==
"__main__":` guard, a notebook or `python -c` can start them.

    >>> proc = EmbeddingProcess("minilm", device="auto")   # started at the first request
    >>> embedder = proc.embedder(resolve_embedder("minilm"))   # the same model, proxied
    >>> vectors = embedder.embed(["some text"])
    >>> proc.close()
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import types
from contextlib import contextmanager
from dataclasses import replace
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any, Iterator, Sequence

from ..errors import ChunkwiseError

log = logging.getLogger(__name__)

#: seconds to wait for the process to leave after being asked to, before it is killed
CLOSE_WAIT = 10.0


class EmbeddingProcessError(ChunkwiseError):
    """The embedding process died or could not be started."""


class EmbeddingProcess:
    """A spawned process holding the embedder that `spec` and `device` build; requests go
    one at a time over a pipe (the caller is the pipeline's embed thread)."""

    def __init__(self, spec: str, *, device: str = "auto") -> None:
        self.spec, self.device = spec, device
        self.process: Any = None
        # the texts of the last `embed` and how many of them overflowed, counted by the child
        # in the same round trip (the pipeline asks for that count right after embedding)
        self._last: tuple[list[str], int] = ([], 0)

    def _start(self) -> None:
        """Started at the first request: a run with nothing to embed starts nothing."""
        ctx = spawn_context()
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=serve, args=(child, self.spec, self.device),
                                   daemon=True, name="chunkwise-embed")
        self.process.start()
        child.close()

    def _ask(self, request: tuple[str, Any]) -> Any:
        if self.process is None:
            self._start()
        try:
            self.conn.send(request)
            kind, value = self.conn.recv()
        except (EOFError, OSError) as e:
            self.process.join(timeout=1)
            raise EmbeddingProcessError(
                f"the embedding process ({self.spec}) died (exit code "
                f"{self.process.exitcode}); out of memory, or a crash in the model's runtime"
            ) from e
        if kind == "error":
            raise value
        return value

    def embed(self, texts: Sequence[str]) -> Any:
        texts = list(texts)
        vectors, over = self._ask(("embed", texts))
        self._last = (texts, over)
        return vectors

    def overflowing(self, texts: Sequence[str]) -> int:
        """How many of `texts` exceed the model's window: counted with the last `embed` when
        these are its texts (no second round trip), else asked of the process."""
        last, over = self._last
        if list(texts) == last:
            return over
        return self._ask(("overflowing", list(texts)))

    def load(self) -> Any:
        return self._ask(("load", None))

    def embedder(self, local: Any) -> Any:
        """`local` (the parent's `Embedder` for the same spec) with its work sent here."""
        return replace(local, embed=self.embed, load=self.load,
                       overflowing=self.overflowing if local.overflowing is not None else None)

    def close(self, *, now: bool = False) -> None:
        """Ask the process to leave (killed after `CLOSE_WAIT` s); `now`: kill it at once
        (after a Ctrl-C: the slice it embeds is not waited for)."""
        if self.process is None:
            return
        if now and self.process.is_alive():
            self.process.kill()
            self.process.join()
        if self.process.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.process.join(timeout=CLOSE_WAIT)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        self.conn.close()

    def __enter__(self) -> EmbeddingProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(conn: Any, spec: str, device: str) -> None:
    """The child's loop: build the embedder, then answer requests until None or EOF (the
    parent gone, e.g. killed: the child leaves with it)."""
    ignore_interrupts()
    try:
        from .functions import resolve_embedder

        embedder: Any = resolve_embedder(spec, device=device)
    except BaseException as e:  # noqa: BLE001 - reported on the first request
        embedder = e
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        kind, texts = request
        try:
            if isinstance(embedder, BaseException):
                raise embedder
            if kind == "load":
                value: Any = embedder.load() if embedder.load is not None else None
            elif kind == "overflowing":
                value = embedder.overflowing(texts) if embedder.overflowing is not None else 0
            else:
                vectors = embedder.embed(texts)
                over = embedder.overflowing(texts) if embedder.overflowing is not None else 0
                value = (vectors, over)
            reply: tuple[str, Any] = ("ok", value)
        except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
            reply = ("error", _sendable(e))
        try:
            conn.send(reply)
        except Exception as e:  # noqa: BLE001 - e.g. a result that does not pickle
            conn.send(("error", EmbeddingProcessError(f"cannot send the result back: {e}")))


def _sendable(e: BaseException) -> BaseException:
    """`e` if it survives pickling, else an `EmbeddingProcessError` that says what it was."""
    import pickle

    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - any exception may refuse in its own way
        return EmbeddingProcessError(f"{type(e).__name__}: {e}")


# -- processes that never import the parent's main module ----------------------------------
_hiding = threading.Lock()


@contextmanager
def main_hidden() -> Iterator[None]:
    """`sys.modules["__main__"]` replaced, for the block, by an empty module of that name.

    A spawned child first imports what `multiprocessing.spawn.get_preparation_data` names
    from the parent's main module (its `__spec__`, else its `__file__`): the user's script
    runs again there, an unguarded `ingest(...)` call included (a second run that waits for
    the database lock, then fails: "an attempt has been made to start a new process before
    the current process has finished its bootstrapping phase"). The children chunkwise
    starts run only chunkwise's functions, so they are started with nothing to import.
    The swap lasts while a child is started (a few milliseconds), one at a time."""
    with _hiding:
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            if main is None:
                del sys.modules["__main__"]
            else:
                sys.modules["__main__"] = main


class _Process(SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        with main_hidden(), _interrupts_blocked():
            return SpawnProcess._Popen(process_obj)


@contextmanager
def _interrupts_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread while a child starts, so the child starts with it
    blocked (a signal mask survives exec): a Ctrl-C, which the terminal sends to every
    process of the group, cannot print a `KeyboardInterrupt` traceback from a child still
    importing. The child then ignores it for good (`ignore_interrupts`): the parent decides
    what an interrupt means, and ends its children."""
    block = getattr(signal, "pthread_sigmask", None)
    if block is None:  # pragma: no cover - Windows
        yield
        return
    old = block(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        block(signal.SIG_SETMASK, old)


def ignore_interrupts() -> None:
    """In a child chunkwise started: SIGINT ignored, then unblocked (see
    `_interrupts_blocked`); a Ctrl-C pending since its start is dropped with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class _Context(SpawnContext):
    Process = _Process


def spawn_context() -> SpawnContext:
    """The `spawn` multiprocessing context, with children that do not import the parent's
    main module (`main_hidden`): `ingest` works from a script without a
    `if __name__ == "__main__":` guard, a notebook, `python -c` and standard input."""
    return _Context()


def sendable(obj: object) -> bool:
    """Whether `obj` can be sent to such a child: it pickles without the main module (an
    object defined in the user's script does not, since the child cannot import it)."""
    import pickle

    with main_hidden():
        try:
            pickle.dumps(obj)
            return True
        except Exception:  # noqa: BLE001 - any object may refuse in its own way
            return False
