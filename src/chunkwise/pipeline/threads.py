"""Stages 3 and 4 of the local runner on threads of their own: `EmbedThread` (the embedder,
fed windows of texts through a bounded queue), `WriteThread` (windows of file plans written
by one writer or several, also used by the Ray runner), and `LocalRunner`, which gathers
the planned files into windows of about `EMBED_WINDOW` chunks, reuses known vectors, embeds
the rest while the next window is gathered, and writes each window once its vectors are
back.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from ..chroma.store import Store
from .options import IngestReport
from .stages import FilePlan, Planner, Prepared, Vector, write_window

if TYPE_CHECKING:
    from ..embeddings.functions import Embedder

log = logging.getLogger(__name__)

#: chunks gathered (in whole files) before they are sorted by length and embedded together
EMBED_WINDOW = 512
#: texts per call of the embedder at first (a window is embedded in slices, so that progress
#: is told while a large file's texts are embedded); doubled while a call takes under
#: `SLICE_SECONDS`, halved when one takes over four times that, within these bounds
SLICE, SLICE_MIN, SLICE_MAX, SLICE_SECONDS = 128, 32, 8192, 1.0
#: records a writer gathers from the windows waiting for it into one write: Chroma's upserts
#: of 2,048 records cost a fifth less per record than upserts of 512 (a window's size), on 2
#: cores and on 16 (docs/ingest.md)
WRITE_BATCH = 2048


_LOAD = object()  # the embed thread's job that loads the model


class EmbedThread:
    """The embedder on a thread of its own: windows of texts in, vectors out, through
    bounded queues. Embeds a window in slices (see `SLICE`), counting the texts `done` and
    calling `tell` after each. Times how long it worked and how long it waited for work."""

    def __init__(self, embedder: Embedder, tell: Callable[[], None] = lambda: None) -> None:
        self.embedder, self.tell = embedder, tell
        self.slice = SLICE
        self.done = 0
        self.inbox: queue.Queue[tuple[object, list[str]] | None] = queue.Queue(maxsize=1)
        self.outbox: queue.Queue[tuple[object, Sequence[Vector] | BaseException]] = queue.Queue()
        self.busy = 0.0
        self.idle = 0.0
        self.truncated = 0
        self.started = False
        self.thread = threading.Thread(target=self._run, name="chunkwise-embed", daemon=True)

    def start(self) -> None:
        self.thread.start()
        self.started = True
        self._since = time.perf_counter()

    def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            job = self.inbox.get()
            t1 = time.perf_counter()
            self.idle += t1 - t0
            if job is None:
                return
            tag, texts = job
            if tag is _LOAD:
                try:
                    self.embedder.load()
                except Exception:  # noqa: BLE001 - the first real window meets it again
                    log.debug("loading the embedder ahead failed", exc_info=True)
                self.busy += time.perf_counter() - t1
                continue
            try:
                vectors = self._embed(texts)
            except BaseException as e:  # handed to the main thread, which raises it
                self.outbox.put((tag, e))
                return
            self.outbox.put((tag, vectors))

    def _embed(self, texts: list[str]) -> list[Vector]:
        """The vectors of `texts` (sorted by length: each slice pads little), a slice at a
        time."""
        vectors: list[Vector] = []
        at = 0
        while at < len(texts):
            part = texts[at:at + self.slice]
            t0 = time.perf_counter()
            try:
                vectors.extend(self.embedder.embed(part))
                if self.embedder.overflowing is not None:
                    self.truncated += self.embedder.overflowing(part)
            finally:
                took = time.perf_counter() - t0
                self.busy += took
            at += len(part)
            self.done += len(part)
            if took < SLICE_SECONDS and len(part) == self.slice:
                self.slice = min(self.slice * 2, SLICE_MAX)
            elif took > 4 * SLICE_SECONDS:
                self.slice = max(self.slice // 2, SLICE_MIN)
            self.tell()
        return vectors

    def submit(self, tag: object, texts: list[str]) -> None:
        self.inbox.put((tag, texts))

    def load_ahead(self) -> None:
        """Start the thread and load the model while the first files are parsed."""
        if getattr(self.embedder, "load", None) is not None:
            self.start()
            self.inbox.put((_LOAD, []))

    def stop(self) -> None:
        if self.started and self.thread.is_alive():
            self.inbox.put(None)
            self.thread.join()


# -- the local runner -----------------------------------------------------------------------
@dataclass
class _Window:
    """Files waiting for their vectors, written in order once the window is embedded."""

    plans: list[FilePlan] = field(default_factory=list)
    missing: list[tuple[int, int, str, str]] = field(default_factory=list)
    """(plan index, chunk index, embed hash, embed text) of the chunks to embed."""
    order: list[str] = field(default_factory=list)
    """The embed hashes of the texts sent to the embedder, in the order sent."""
    borrowed: list[tuple[int, int, str, _Window]] = field(default_factory=list)
    """(plan index, chunk index, embed hash, window) of chunks whose text an earlier window
    still in flight embeds: their vector is that window's, once it is back."""
    vectors: dict[str, Vector] = field(default_factory=dict)
    """The vectors this window embedded, by embed hash, once they are back."""
    chunks: int = 0


class LocalRunner:
    """Consumes stage-2 results in order, embeds windows on the embed thread while the next
    window is gathered, and writes each window on the write thread once its vectors are
    known."""

    def __init__(self, planner: Planner, embedder: Embedder, writers: int = 1) -> None:
        self.planner, self.report = planner, planner.report
        self.thread = EmbedThread(embedder, self.tell)
        self.writer = WriteThread(planner.store, planner.report, self.tell, writers)
        self.window = _Window()
        self.inflight: deque[_Window] = deque()
        #: embed hash -> the window in flight that embeds it, so that a text repeated in the
        #: next window is not embedded twice (the memo only has vectors that are back)
        self.pending: dict[str, _Window] = {}
        if planner.fresh:  # everything will be embedded: load the model while the first files parse
            self.thread.load_ahead()

    def tell(self, source: str = "") -> None:
        self.planner.tell(source, self.thread.busy, self.thread.done)

    def take(self, p: Prepared) -> None:
        """One stage-2 result, in discovery order."""
        plan = self.planner.take(p)
        if plan is not None:
            w = self.window
            index = len(w.plans)
            w.plans.append(plan)
            for j, (chunk, meta) in enumerate(plan.embed):
                w.missing.append((index, j, meta["embed_hash"], chunk.embed_text))
            w.chunks += len(plan.embed)
            if w.chunks >= EMBED_WINDOW:
                self.flush()
        self.tell(p.source)

    def flush(self) -> None:
        """Send the gathered window to the embedder (after reusing what is known) and write
        every window whose vectors have come back."""
        w, self.window = self.window, _Window()
        if w.plans:
            texts = self._reuse(w)
            if not self.thread.started:
                self.thread.start()
            self.inflight.append(w)
            self.tell()  # the texts to embed have grown
            self.thread.submit(w, texts)
        while self.inflight and (len(self.inflight) > 1 or not self.thread.outbox.empty()):
            self._write_next()

    def _reuse(self, w: _Window) -> list[str]:
        """Fill in the vectors known by embed hash; the texts left to embed, sorted by
        length so that batches pad little (the window keeps the permutation)."""
        known = self.planner.known([h for _, _, h, _ in w.missing])
        todo = []
        for i, j, h, text in w.missing:
            v = known.get(h)
            if v is not None:
                w.plans[i].vectors[j] = v
                self.report.reused += 1
            elif h in self.pending:
                w.borrowed.append((i, j, h, self.pending[h]))
                self.report.reused += 1
            else:
                todo.append((i, j, h, text))
        todo.sort(key=lambda t: len(t[3]))
        unique: dict[str, int] = {}
        for i, j, h, text in todo:
            if h not in unique:
                unique[h] = len(unique)
                self.report.bill(w.plans[i].embed[j][0].format).texts += 1
        w.missing = todo
        w.order = list(unique)
        for h in w.order:
            self.pending[h] = w
        texts_by_hash = {h: text for _, _, h, text in todo}
        self.report.embedded += len(unique)
        return [texts_by_hash[h] for h in unique]

    def _write_next(self) -> None:
        w = self.inflight.popleft()
        tag, vectors = self.thread.outbox.get()
        assert tag is w
        if isinstance(vectors, BaseException):
            raise vectors
        by_hash = w.vectors = dict(zip(w.order, vectors))
        for h, v in by_hash.items():
            self.planner.memo.put(h, v)
            if self.pending.get(h) is w:
                del self.pending[h]
        for i, j, h, _ in w.missing:
            w.plans[i].vectors[j] = by_hash[h]
        for i, j, h, earlier in w.borrowed:  # written before this one: its vectors are back
            w.plans[i].vectors[j] = earlier.vectors[h]
        w.borrowed = []
        self.writer.submit(w.plans)

    def finish(self) -> None:
        """Embed and write what is left; raises what the threads met."""
        self.flush()
        while self.inflight:
            self._write_next()
        self.thread.stop()
        self.writer.stop()
        self.report.truncated += self.thread.truncated
        self.planner.timers["write"] += self.writer.busy

    def close(self) -> None:
        """Stop both threads (after an error: whatever they hold is not written)."""
        self.thread.stop()
        self.writer.close()


class WriteThread:
    """Stage 4 on threads of their own, so that parsing and planning go on while Chroma
    writes. One writer (the default) writes windows in the order given; `writers` > 1 write
    several windows at once (a window holds whole files and each file is in one window, so
    windows are independent: a file's deletes still follow its upserts, and a run killed
    at any moment leaves files the next run sees as out of date). Several writers are meant
    for a Chroma server that writes requests concurrently; an embedded client holds the GIL
    while it writes, so there they take turns, and the `chroma run` measured in
    docs/ingest.md took them in turn as well. An error stops the writers and is raised by
    the next `submit` or by `stop`."""

    def __init__(self, store: Store, report: IngestReport, tell: Callable[[], None],
                 writers: int = 1) -> None:
        self.store, self.report, self.tell = store, report, tell
        self.inbox: queue.Queue[list[FilePlan] | None] = queue.Queue(
            maxsize=writers * (WRITE_BATCH // EMBED_WINDOW))
        self.busy = 0.0
        """Seconds spent writing, summed over the writers."""
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, name=f"chunkwise-write-{i}",
                                         daemon=True) for i in range(writers)]
        for thread in self.threads:
            thread.start()

    def _gather(self, plans: list[FilePlan]) -> tuple[list[FilePlan], bool]:
        """`plans` and the windows waiting after them, up to `WRITE_BATCH` records, as one
        window; and whether the end (None) was met on the way."""
        records = sum(len(p.embed) for p in plans)
        while records < WRITE_BATCH:
            try:
                more = self.inbox.get_nowait()
            except queue.Empty:
                break
            if more is None:
                return plans, True
            plans = plans + more
            records += sum(len(p.embed) for p in more)
        return plans, False

    def _run(self) -> None:
        end = False
        while not end:
            got = self.inbox.get()
            if got is None:
                return
            if self.error is not None:
                continue  # drain: the main thread raises it
            plans, end = self._gather(got)
            t0 = time.perf_counter()
            try:
                write_window(self.store, plans)
            except BaseException as e:
                with self._lock:
                    self.error = self.error or e
                continue
            finally:
                with self._lock:
                    self.busy += time.perf_counter() - t0
            with self._lock:
                for plan in plans:
                    self.report.written += len(plan.embed)
                    self.report.updated += len(plan.refresh)
                    self.report.deleted += len(plan.stale)
            self.tell()

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error

    def submit(self, plans: list[FilePlan]) -> None:
        self._raise()
        self.inbox.put(plans)

    def stop(self) -> None:
        alive = [t for t in self.threads if t.is_alive()]
        for _ in alive:
            self.inbox.put(None)
        for thread in alive:
            thread.join()
        self._raise()

    def close(self) -> None:
        """`stop`, after an error: whatever it holds is not written, and its own error (if
        any) gives way to the one being raised."""
        try:
            self.stop()
        except BaseException:  # noqa: BLE001 - the error being raised is the one to report
            pass


