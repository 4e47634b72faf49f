"""Stages 3 and 4 of the local runner on threads of their own: `EmbedThread` (the embedder,
fed windows of texts through a bounded queue), `WriteThread` (windows of file plans written
by one writer or several, also used by the Ray runner), and `LocalRunner`, which gathers
the planned files into windows of about `EMBED_WINDOW` chunks, reuses known vectors, embeds
the rest while the next window is gathered, and hands what is embedded to the writer as it
comes back: a whole window once its vectors are back, and whatever is ready at least every
`FLUSH_SECONDS` of embedding, so that a run stopped anywhere keeps what it embedded (a file
written in parts is out of date until its last part, and the next run reuses every vector
written). `LocalRunner.interrupt` writes what is embedded and stops, for a Ctrl-C.
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
#: the most seconds of embedding whose vectors wait to be written: what a run killed at any
#: moment can lose (issue 44: batches of 2,048 left nothing written for minutes on a CPU)
FLUSH_SECONDS = 2.0


_LOAD = object()  # the embed thread's job that loads the model


class EmbedThread:
    """The embedder on a thread of its own: windows of texts in, vectors out, through
    bounded queues. Embeds a window in slices (see `SLICE`), counting the texts `done` and
    calling `tell` after each. Times how long it worked and how long it waited for work."""

    def __init__(self, embedder: Embedder, tell: Callable[[], None] = lambda: None,
                 on_slice: Callable[[object, int, Sequence[Vector]], None] | None = None
                 ) -> None:
        self.embedder, self.tell, self.on_slice = embedder, tell, on_slice
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
                vectors = self._embed(texts, tag)
            except BaseException as e:  # handed to the main thread, which raises it
                self.outbox.put((tag, e))
                return
            self.outbox.put((tag, vectors))

    def _embed(self, texts: list[str], tag: object = None) -> list[Vector]:
        """The vectors of `texts` (sorted by length: each slice pads little), a slice at a
        time, each slice handed to `on_slice(tag, offset, vectors)` as it is back."""
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
            if self.on_slice is not None:
                self.on_slice(tag, at, vectors[at:])
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

    def abandon(self) -> None:
        """Stop without waiting: the window queued is dropped, the slice being embedded
        ends with the process (a daemon thread)."""
        try:
            self.inbox.get_nowait()
        except queue.Empty:
            pass
        try:
            self.inbox.put_nowait(None)
        except queue.Full:  # pragma: no cover - emptied just above
            pass


# -- the local runner -----------------------------------------------------------------------
@dataclass
class _Window:
    """Files waiting for their vectors, written as the vectors come back."""

    plans: list[FilePlan] = field(default_factory=list)
    missing: list[tuple[int, int, str, str]] = field(default_factory=list)
    """(plan index, chunk index, embed hash, embed text) of the chunks to embed."""
    order: list[str] = field(default_factory=list)
    """The embed hashes of the texts sent to the embedder, in the order sent."""
    sent: list[set[int]] = field(default_factory=list)
    """Per plan, the chunks handed to the writer already."""
    done: set[int] = field(default_factory=set)
    """The plans handed to the writer whole (their refreshes and deletes with the last part)."""
    chunks: int = 0


class LocalRunner:
    """Consumes stage-2 results in order, embeds windows on the embed thread while the next
    window is gathered, and hands the chunks whose vectors are back to the write thread: at
    least every `FLUSH_SECONDS` of embedding, and each window once it is whole."""

    def __init__(self, planner: Planner, embedder: Embedder, writers: int = 1) -> None:
        self.planner, self.report = planner, planner.report
        self.thread = EmbedThread(embedder, self.tell, self._slice_back)
        self.writer = WriteThread(planner.store, planner.report, self.tell, writers)
        self.window = _Window()
        self.inflight: deque[_Window] = deque()
        """Windows not yet handed to the writer whole, in order."""
        self.embedding = 0
        """Windows sent to the embedder whose end has not been read from its outbox."""
        #: embed hash -> the chunk slots (window, plan index, chunk index) waiting for its
        #: vector: a text repeated in a later window is embedded once, by the first
        self.waiting: dict[str, list[tuple[_Window, int, int]]] = {}
        self.fresh_hashes: set[str] = set()
        """Texts this run embeds, whose first write counts as kept (`WriteThread.kept`)."""
        self.lock = threading.Lock()  # the windows' vectors: filled by the embed thread
        self.last_flush = time.perf_counter()
        self.stopping = False
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
            w.sent.append(set())
            for j, (chunk, meta) in enumerate(plan.embed):
                w.missing.append((index, j, meta["embed_hash"], chunk.embed_text))
            w.chunks += len(plan.embed)
            if w.chunks >= EMBED_WINDOW:
                self.flush()
        self.tell(p.source)

    def flush(self) -> None:
        """Send the gathered window to the embedder (after reusing what is known), hand the
        writer what is ready, and wait while two windows are being embedded (backpressure)."""
        w, self.window = self.window, _Window()
        if w.plans:
            texts = self._reuse(w)
            with self.lock:
                self.inflight.append(w)
            self.tell()  # the texts to embed have grown
            if texts:
                if not self.thread.started:
                    self.thread.start()
                self.embedding += 1
                self.thread.submit(w, texts)
            with self.lock:
                self._hand_over()
        while self.embedding > 1 or (self.embedding and not self.thread.outbox.empty()):
            self._window_back()

    def _reuse(self, w: _Window) -> list[str]:
        """Fill in the vectors known by embed hash; the texts left to embed, sorted by
        length so that batches pad little (the window keeps the permutation)."""
        known = self.planner.known([h for _, _, h, _ in w.missing])
        todo = []
        with self.lock:  # the embed thread fills slots meanwhile
            for i, j, h, text in w.missing:
                v = known.get(h)
                if v is None:
                    v = self.planner.memo.get(h)  # embedded since `known` looked
                if v is not None:
                    w.plans[i].vectors[j] = v
                    self.report.reused += 1
                elif h in self.waiting:  # a window in flight embeds it
                    self.waiting[h].append((w, i, j))
                    self.report.reused += 1
                else:
                    todo.append((i, j, h, text))
            todo.sort(key=lambda t: len(t[3]))
            unique: dict[str, str] = {}
            for i, j, h, text in todo:
                if h not in unique:
                    unique[h] = text
                    self.waiting[h] = []
                    self.report.bill(w.plans[i].embed[j][0].format).texts += 1
                self.waiting[h].append((w, i, j))
            w.missing = todo
            w.order = list(unique)
            self.fresh_hashes.update(unique)
            self.report.embedded += len(unique)
        return list(unique.values())

    def _slice_back(self, tag: object, at: int, vectors: Sequence[Vector]) -> None:
        """On the embed thread: the vectors of `tag`'s texts from `at` on are back. They fill
        every slot waiting for them; the writer gets what is ready when `FLUSH_SECONDS` have
        passed since it last did, or when a window is whole."""
        assert isinstance(tag, _Window)
        with self.lock:
            if self.stopping:
                return
            for h, v in zip(tag.order[at:], vectors):
                self.planner.memo.put(h, v)
                for w, i, j in self.waiting.pop(h, ()):
                    w.plans[i].vectors[j] = v
            whole = at + len(vectors) >= len(tag.order)
            if whole or time.perf_counter() - self.last_flush >= FLUSH_SECONDS:
                self._hand_over()

    def _hand_over(self) -> None:
        """Give the writer, under `lock`, the chunks of the windows in flight whose vectors
        are known and that it has not had, in window order; drop the windows handed over
        whole."""
        parts = [part for w in self.inflight for part in self._ready(w)]
        self.inflight = deque(w for w in self.inflight if len(w.done) < len(w.plans))
        self.last_flush = time.perf_counter()
        if parts:
            self.writer.submit(parts)

    def _ready(self, w: _Window) -> list[FilePlan]:
        """The parts of `w`'s plans whose vectors are known and not handed over yet. A plan's
        refreshes and deletes go with its last part, so a file written in parts stays out
        of date (its records short of its count) until it is whole."""
        parts = []
        for index, plan in enumerate(w.plans):
            if index in w.done:
                continue
            sent = w.sent[index]
            ready = [j for j, v in enumerate(plan.vectors) if v is not None and j not in sent]
            whole = len(sent) + len(ready) == len(plan.embed)
            if not ready and not whole:
                continue
            sent.update(ready)
            fresh = [h for j in ready if (h := plan.embed[j][1]["embed_hash"]) in self.fresh_hashes]
            self.fresh_hashes.difference_update(fresh)
            parts.append(FilePlan(plan.source, [plan.embed[j] for j in ready],
                                  plan.refresh if whole else [], plan.stale if whole else [],
                                  [plan.vectors[j] for j in ready], fresh=len(fresh)))
            if whole:
                w.done.add(index)
        return parts

    def _window_back(self) -> None:
        """Wait for the next window the embedder finishes; raise what it met."""
        _, vectors = self.thread.outbox.get()
        self.embedding -= 1
        if isinstance(vectors, BaseException):
            raise vectors

    def finish(self) -> None:
        """Embed and write what is left; raises what the threads met."""
        self.flush()
        while self.embedding:
            self._window_back()
        with self.lock:
            self._hand_over()
        assert not self.inflight, "a window was left unwritten"
        self.thread.stop()
        self.writer.stop()
        self.report.truncated += self.thread.truncated
        self.planner.timers["write"] += self.writer.busy

    def interrupt(self) -> tuple[int, int, int]:
        """After a Ctrl-C: hand the writer every chunk whose vector is back, let it write
        them, and stop embedding. (texts embedded, texts known to need it, texts kept)."""
        with self.lock:
            self.stopping = True  # what comes back from now on is not written
            try:
                self._hand_over()
            except Exception:  # noqa: BLE001 - the writer failed: what it wrote is kept
                log.debug("handing over after an interrupt failed", exc_info=True)
        try:
            self.writer.stop()
        except Exception:  # noqa: BLE001 - as above; the interrupt is what is reported
            log.debug("writing after an interrupt failed", exc_info=True)
        return self.thread.done, self.report.embedded, self.writer.kept

    def close(self) -> None:
        """Stop both threads (after an error: whatever they hold is not written; after an
        interrupt the embed thread is left to end with the process, not waited for)."""
        if self.stopping:
            self.thread.abandon()
        else:
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
        self.kept = 0
        """Texts embedded in this run whose records are written (`FilePlan.fresh`)."""
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
                    self.kept += plan.fresh
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


