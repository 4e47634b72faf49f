"""Ingestion: files in, an up-to-date Chroma collection out, in four stages.

    >>> from chunkwise.pipeline import ingest
    >>> report = ingest(["docs/"], db_path="chunkwise-db", workers=2)

1. **discover** (`chunkwise.pipeline.discover`): the files under the paths given, each named by its
   path relative to the root; only regular files, within the size bound.
2. **prepare** (`prepare`): read the bytes, hash them; a file whose stored chunks carry this
   hash and these options is *unchanged* and not parsed; otherwise parse and chunk it, under
   the per-file time limit. Runs inline (`workers=1`) or in a process pool (`workers=N`),
   results consumed in discovery order so the output never depends on N.
3. **embed**: the chunks to write are looked up by the sha256 of their embed text, in this
   run and in the collection; only texts never embedded before go to the embedder, in
   batches sorted by length across files, on a thread of their own fed through a bounded
   queue (backpressure: memory stays flat in corpus size).
4. **write** (`write_file`): for each file, in order, upsert its new chunks, refresh the
   metadata of kept ones, then delete its stale ones. Any prefix of that sequence leaves a
   state that stage 2 sees as out of date, so a run killed at any moment is completed by the
   next one.

The same stage functions are driven by the Ray runner (`chunkwise.ray`). An embedded database
is written by one process at a time (`chunkwise.chroma.locking`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ..chroma.records import SCHEMA, chunk_metadata, embed_hash
from ..chroma.store import (DEFAULT_COLLECTION, DEFAULT_DB, DEFAULT_TIMEOUT,
                            RETRY_DELAYS, SourceState, Store, StoreError, as_rows, connect,
                            persist_directory)
from .deadlines import DeadlineExceeded, deadline
from .discover import (DEFAULT_MAX_FILE_SIZE, Discovery, FileTask, ReadError, default_root,
                       discover, inside, read_bounded, resolve_root, unsupported_summary)
from ..embeddings.process import EmbeddingProcess
from ..errors import ChunkwiseError, ConfigError
from ..chroma.locking import DEFAULT_WAIT, WriteLock
from ..model import Chunk

log = logging.getLogger(__name__)

#: chunks gathered (in whole files) before they are sorted by length and embedded together
EMBED_WINDOW = 512
#: default limit on the parse and chunking of one file, in seconds
DEFAULT_FILE_TIMEOUT = 600.0


# -- results --------------------------------------------------------------------------------
@dataclass
class IngestReport:
    """What an `ingest` run did. Chunk counts are chunks, file counts are files."""

    files: int = 0
    """Files found under the paths given (and read or skipped as unchanged)."""
    chunks: int = 0
    """Chunks those files have now (stored or written)."""
    skipped: int = 0
    """Files already up to date: not parsed, nothing written."""
    changed: int = 0
    """Files (re)written: new, edited, or chunked with other options."""
    written: int = 0
    """Chunks upserted (embedded now or with a reused vector)."""
    embedded: int = 0
    """Texts sent to the embedder."""
    reused: int = 0
    """Chunks written with a vector reused from the collection or this run (same embed text)."""
    updated: int = 0
    """Chunks kept as they were whose metadata was refreshed (no embedding)."""
    deleted: int = 0
    """Stale chunks of changed files removed."""
    pruned_files: int = 0
    """Sources removed by `prune` because their files are gone."""
    pruned_chunks: int = 0
    """Chunks of those sources."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(source, reason) of every file that could not be read or parsed."""
    ignored: list[tuple[str, str]] = field(default_factory=list)
    """(name, reason) of entries not read at all: FIFOs, devices, symlinks out of the root,
    files over the size limit."""
    unsupported: int = 0
    """Files in the folders walked that no parser reads (unknown extensions), not listed."""
    no_text: list[tuple[str, str]] = field(default_factory=list)
    """(source, why) of files read without error that hold no text to chunk: a scanned PDF
    without the OCR extra, an empty document. Nothing is stored for them; never silent."""
    repaired: int = 0
    """Stored records whose vectors were missing from the index at the start, re-embedded
    (see `chunkwise.chroma.health`)."""
    truncated: int = 0
    """Chunks embedded in this run that are longer than the embedding model's window (when
    the model says, see `Embedder.window`): only their start is in their vector."""
    window: int | None = None
    """That window, in the model's tokens."""
    root: str = ""
    """The folder every source is relative to."""
    workers: int = 1
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per stage: `discover`, `read` and `parse_chunk` (summed over workers),
    `embed` (the embedder busy), `embed_idle` (the embedder waiting for work), `write`,
    `prune`, `total`."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files, "chunks": self.chunks, "skipped": self.skipped,
            "changed": self.changed, "written": self.written, "embedded": self.embedded,
            "reused": self.reused, "updated": self.updated, "deleted": self.deleted,
            "pruned_files": self.pruned_files, "pruned_chunks": self.pruned_chunks,
            "failed": [{"source": s, "reason": r} for s, r in self.failed],
            "ignored": [{"source": s, "reason": r} for s, r in self.ignored],
            "unsupported": self.unsupported,
            "no_text": [{"source": s, "reason": r} for s, r in self.no_text],
            "repaired": self.repaired, "truncated": self.truncated, "window": self.window,
            "root": self.root,
            "workers": self.workers,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


@dataclass(frozen=True)
class IngestProgress:
    """Passed to the `progress` callback after each file is prepared and each batch written."""

    files_done: int
    files_total: int
    chunks_written: int
    embed_seconds: float
    source: str = ""

    @property
    def rate(self) -> float:
        """Chunks embedded per second of embedding so far."""
        return self.chunks_written / self.embed_seconds if self.embed_seconds > 0 else 0.0


# -- stage 2: prepare -----------------------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """One file after reading and chunking: the hand-off from stage 2 to stages 3 and 4."""

    source: str
    status: str
    """`unchanged`, `chunked` or `failed`."""
    content_hash: str = ""
    chunks: tuple[Chunk, ...] = ()
    reason: str = ""
    """Why it failed; for a file chunked into nothing, why it holds no text."""
    read_seconds: float = 0.0
    parse_seconds: float = 0.0


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def options_fingerprint(chunker: Any, fmt: str | None, embedder_identity: str) -> str:
    """What, besides the bytes, decides a file's stored chunks."""
    raw = f"{SCHEMA}|{chunker.fingerprint}|{fmt or ''}|{embedder_identity}"
    return hashlib.blake2b(raw.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class PrepareOptions:
    """What stage 2 needs besides the file (sent once to each worker)."""

    chunker: Any
    format: str | None
    options: str
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT


def prepare(task: FileTask, stored: SourceState | None, opts: PrepareOptions) -> Prepared:
    """Stage 2 for one file. Never raises for a bad file: the reason is in the result."""
    t0 = time.perf_counter()
    try:
        data = read_bounded(task.path, opts.max_file_size)
    except ReadError as e:
        return Prepared(task.source, "failed", reason=str(e))
    except MemoryError:
        return Prepared(task.source, "failed", reason="cannot read: too large for memory")
    return prepare_bytes(task.source, data, stored, opts, read_seconds=time.perf_counter() - t0)


def prepare_bytes(source: str, data: bytes, stored: SourceState | None, opts: PrepareOptions,
                  *, read_seconds: float = 0.0) -> Prepared:
    """Stage 2 for a file already read (by `prepare`, or by whoever built a Ray dataset)."""
    t0 = time.perf_counter()
    digest = content_hash(data)
    t1 = time.perf_counter()
    read_seconds += t1 - t0
    if stored is not None and stored.current(digest, opts.options):
        return Prepared(source, "unchanged", digest, read_seconds=read_seconds)
    try:
        with deadline(opts.file_timeout, "parsing and chunking"):
            doc = opts.chunker.parse_bytes(data, source=source, format=opts.format)
            chunks = opts.chunker.chunk_document(doc)
    except ChunkwiseError as e:
        return Prepared(source, "failed", digest, reason=_reason(e, source),
                        read_seconds=read_seconds, parse_seconds=time.perf_counter() - t1)
    except (MemoryError, RecursionError) as e:
        return Prepared(source, "failed", digest, reason=f"{type(e).__name__} while chunking",
                        read_seconds=read_seconds, parse_seconds=time.perf_counter() - t1)
    return Prepared(source, "chunked", digest, tuple(chunks),
                    reason="" if chunks else no_text_reason(doc), read_seconds=read_seconds,
                    parse_seconds=time.perf_counter() - t1)


def no_text_reason(doc: Any) -> str:
    """Why a document gave no chunks: scanned pages that need the OCR extra, or none."""
    scanned = dict(doc.meta).get("needs_ocr")
    if scanned:
        return (f"no text: {scanned} scanned page{'s' if scanned != 1 else ''} without a text "
                f"layer (pip install 'chunkwise[ocr]' reads them)")
    return "no text"


def _reason(e: BaseException, source: str) -> str:
    cause: BaseException | None = e
    while cause is not None:  # a parser may have wrapped the deadline in its own error
        if isinstance(cause, DeadlineExceeded):
            return f"{cause} (--file-timeout)"
        cause = cause.__cause__ or cause.__context__
    reason = getattr(e, "reason", None) or str(e)
    prefix = f"{source}: "
    reason = reason[len(prefix):] if reason.startswith(prefix) else reason
    return " ".join(reason.split())


# -- stage 4: plan and write ----------------------------------------------------------------
@dataclass
class FilePlan:
    """What one changed file needs: chunks to upsert (with their vectors once known),
    chunks whose metadata only changed, and stale ids to delete (in that order)."""

    source: str
    embed: list[tuple[Chunk, dict[str, Any]]]
    refresh: list[tuple[str, dict[str, Any]]]
    stale: list[str]
    vectors: list[Any] = field(default_factory=list)


def plan_file(source: str, chunks: Sequence[Chunk], stored: Mapping[str, Mapping[str, Any]],
              content_hash: str, options: str) -> FilePlan:
    """Split a file's new chunks against what is stored for it.

    Chunks of the file whose embed texts are identical share one record (the first of
    them), which lists where the others are (`chroma.repeat_keys`): thousands of identical
    vectors break Chroma's HNSW graph (search returns the copies, records become
    unreachable), and one record answers a query as well as all of them."""
    firsts: dict[str, int] = {}  # embed hash -> index of the chunk that holds the record
    hashes, record_of, seen = [], [], set()
    for index, chunk in enumerate(chunks):
        h = embed_hash(chunk.embed_text)
        hashes.append(h)
        record_of.append(firsts.setdefault(h, index))
    repeats: dict[int, list[int]] = {}
    for index, first in enumerate(record_of):
        if first != index:
            repeats.setdefault(first, []).append(index)
    records = len(firsts)
    embed, refresh = [], []
    for index, chunk in enumerate(chunks):
        if record_of[index] != index:
            continue
        if chunk.id in seen:  # ids hash source and span: a repeat is a chunker bug; keep one
            log.warning("%s: duplicate chunk id %s", source, chunk.id)
            continue
        seen.add(chunk.id)
        prev_id = chunks[record_of[index - 1]].id if index else None
        after = index + 1
        while after < len(chunks) and record_of[after] == index:
            after += 1  # the chunk after this one's own copies
        next_id = chunks[record_of[after]].id if after < len(chunks) else None
        meta = chunk_metadata(chunk, index=index, count=len(chunks),
                              content_hash=content_hash, options=options,
                              prev_id=prev_id, next_id=next_id, embed_key=hashes[index],
                              records=records, repeats=[chunks[i] for i in
                                                        repeats.get(index, ())])
        old = stored.get(chunk.id)
        if old is None:
            embed.append((chunk, meta))
            continue
        # Chroma merges metadata on upsert and update: drop keys the new record lacks.
        full = {**{k: None for k in old if k not in meta}, **meta}
        if old.get("embed_hash") != meta["embed_hash"]:  # same text, new embed text
            embed.append((chunk, full))
        elif dict(old) != meta:
            refresh.append((chunk.id, full))
    stale = [i for i in stored if i not in seen]
    return FilePlan(source, embed, refresh, stale)


def write_file(store: Store, plan: FilePlan) -> None:
    """Stage 4 for one file whose vectors are known: upserts, then refreshes, then deletes."""
    if plan.embed:
        store.upsert([c.id for c, _ in plan.embed], [c.text for c, _ in plan.embed],
                     as_rows(plan.vectors), [m for _, m in plan.embed])
    if plan.refresh:
        store.update([i for i, _ in plan.refresh], [m for _, m in plan.refresh])
    if plan.stale:
        store.delete(plan.stale)


def write_window(store: Store, plans: Sequence[FilePlan]) -> None:
    """Stage 4 for several files at once: all their upserts in as few calls as the store
    takes (a call costs far more than a record), then each file's refreshes and deletes.
    Every file's deletes still follow its upserts."""
    embed = [(c, m, v) for plan in plans for (c, m), v in zip(plan.embed, plan.vectors)]
    if embed:
        store.upsert([c.id for c, _, _ in embed], [c.text for c, _, _ in embed],
                     as_rows([v for _, _, v in embed]), [m for _, m, _ in embed])
    for plan in plans:
        if plan.refresh:
            store.update([i for i, _ in plan.refresh], [m for _, m in plan.refresh])
        if plan.stale:
            store.delete(plan.stale)


# -- stage 3: embed -------------------------------------------------------------------------
class VectorMemo:
    """Vectors of this run by embed hash, to embed a repeated text once (bounded)."""

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self.vectors: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        return self.vectors.get(key)

    def put(self, key: str, vector: Any) -> None:
        if len(self.vectors) >= self.limit:
            self.vectors.pop(next(iter(self.vectors)))
        self.vectors[key] = vector


_LOAD = object()  # the embed thread's job that loads the model


class EmbedThread:
    """The embedder on a thread of its own: windows of texts in, vectors out, through
    bounded queues. Times how long it worked and how long it waited for work."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.inbox: queue.Queue = queue.Queue(maxsize=1)
        self.outbox: queue.Queue = queue.Queue()
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
                vectors = self.embedder.embed(texts)
                if self.embedder.overflowing is not None:
                    self.truncated += self.embedder.overflowing(texts)
            except BaseException as e:  # handed to the main thread, which raises it
                self.outbox.put((tag, e))
                return
            finally:
                self.busy += time.perf_counter() - t1
            self.outbox.put((tag, vectors))

    def submit(self, tag: Any, texts: list[str]) -> None:
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


# -- stage 4, the driver's side, for every runner -------------------------------------------
class Planner:
    """What every runner does with stage-2 results, in discovery order: counts them, plans
    each changed file against the store (`plan_file`), finds the vectors already known by
    embed hash (this run's memo, then the collection), and keeps the report's timers. The
    plans go to a `WriteThread`. `fresh`: the collection was empty at the start, so it has no
    vectors to lend and is not asked."""

    def __init__(self, store: Store, report: IngestReport, states: dict[str, SourceState],
                 options: str, files_total: int,
                 progress: Callable[[IngestProgress], None] | None, *,
                 fresh: bool = False) -> None:
        self.store, self.report, self.states = store, report, states
        self.options, self.files_total, self.progress = options, files_total, progress
        self.fresh = fresh
        self.memo = VectorMemo()
        self.timers = {"read": 0.0, "parse_chunk": 0.0, "write": 0.0, "plan": 0.0}

    def tell(self, source: str = "", embed_seconds: float = 0.0) -> None:
        if self.progress is not None:
            r = self.report
            self.progress(IngestProgress(r.files, self.files_total, r.written, embed_seconds,
                                         source))

    def take(self, p: Prepared) -> FilePlan | None:
        """Count one stage-2 result; the plan of a file with something to write, else None
        (its `vectors` all None, to be filled in)."""
        r = self.report
        r.files += 1
        self.timers["read"] += p.read_seconds
        self.timers["parse_chunk"] += p.parse_seconds
        if p.status == "failed":
            r.failed.append((p.source, p.reason))
            return None
        if p.status == "unchanged":
            r.skipped += 1
            r.chunks += self.states[p.source].stored
            return None
        t0 = time.perf_counter()
        stored = self.store.chunks_of(p.source) if p.source in self.states else {}
        plan = plan_file(p.source, p.chunks, stored, p.content_hash, self.options)
        r.chunks += len(p.chunks)
        if not p.chunks:
            r.no_text.append((p.source, p.reason or "no text"))
        self.timers["plan"] += time.perf_counter() - t0
        if not (plan.embed or plan.refresh or plan.stale):
            r.skipped += 1
            return None
        r.changed += 1
        plan.vectors = [None] * len(plan.embed)
        return plan

    def known(self, hashes: Sequence[str]) -> dict[str, Any]:
        """Vectors of `hashes` embedded earlier in this run or stored in the collection."""
        t0 = time.perf_counter()
        found = {h: v for h in hashes if (v := self.memo.get(h)) is not None}
        if not self.fresh:
            found.update(self.store.vectors_by_hash([h for h in hashes if h not in found]))
        self.timers["plan"] += time.perf_counter() - t0
        return found

    def seconds(self, discover: float, embed: float, idle: float, t_start: float) -> dict[str, float]:
        """The report's time split (see `IngestReport.seconds`)."""
        t = self.timers
        return {"discover": discover, "read": t["read"], "parse_chunk": t["parse_chunk"],
                "plan": t["plan"], "embed": embed, "embed_idle": idle, "write": t["write"],
                **self.report.seconds, "total": time.perf_counter() - t_start}


# -- the local runner -----------------------------------------------------------------------
@dataclass
class _Window:
    """Files waiting for their vectors, written in order once the window is embedded."""

    plans: list[FilePlan] = field(default_factory=list)
    missing: list[tuple[int, int, str, str]] = field(default_factory=list)
    """(plan index, chunk index, embed hash, embed text) of the chunks to embed."""
    order: list[str] = field(default_factory=list)
    """The embed hashes of the texts sent to the embedder, in the order sent."""
    chunks: int = 0


class _Runner:
    """Consumes stage-2 results in order, embeds windows on the embed thread while the next
    window is gathered, and writes each window on the write thread once its vectors are
    known."""

    def __init__(self, planner: Planner, embedder: Any) -> None:
        self.planner, self.report = planner, planner.report
        self.thread = EmbedThread(embedder)
        self.writer = WriteThread(planner.store, planner.report, self.tell)
        self.window = _Window()
        self.inflight: deque[_Window] = deque()
        if planner.fresh:  # everything will be embedded: load the model while the first files parse
            self.thread.load_ahead()

    def tell(self, source: str = "") -> None:
        self.planner.tell(source, self.thread.busy)

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
            else:
                todo.append((i, j, h, text))
        todo.sort(key=lambda t: len(t[3]))
        unique: dict[str, int] = {}
        for _, _, h, text in todo:
            unique.setdefault(h, len(unique))
        w.missing = todo
        w.order = list(unique)
        texts_by_hash = {h: text for _, _, h, text in todo}
        self.report.embedded += len(unique)
        return [texts_by_hash[h] for h in unique]

    def _write_next(self) -> None:
        w = self.inflight.popleft()
        tag, vectors = self.thread.outbox.get()
        assert tag is w
        if isinstance(vectors, BaseException):
            raise vectors
        by_hash = dict(zip(w.order, vectors))
        for h, v in by_hash.items():
            self.planner.memo.put(h, v)
        for i, j, h, _ in w.missing:
            w.plans[i].vectors[j] = by_hash[h]
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
    """Stage 4 on a thread of its own, windows written in the order given (Chroma releases
    the GIL while it writes, so parsing and planning go on meanwhile). An error stops the
    thread and is raised by the next `submit` or by `stop`."""

    def __init__(self, store: Store, report: IngestReport, tell: Callable[[], None]) -> None:
        self.store, self.report, self.tell = store, report, tell
        self.inbox: queue.Queue = queue.Queue(maxsize=2)
        self.busy = 0.0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="chunkwise-write", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            plans = self.inbox.get()
            if plans is None:
                return
            if self.error is not None:
                continue  # drain: the main thread raises it
            t0 = time.perf_counter()
            try:
                write_window(self.store, plans)
            except BaseException as e:
                self.error = e
                continue
            finally:
                self.busy += time.perf_counter() - t0
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
        if self.thread.is_alive():
            self.inbox.put(None)
            self.thread.join()
        self._raise()

    def close(self) -> None:
        """`stop`, after an error: whatever it holds is not written, and its own error (if
        any) gives way to the one being raised."""
        try:
            self.stop()
        except BaseException:  # noqa: BLE001 - the error being raised is the one to report
            pass


def _prepared_in_order(tasks: list[FileTask], states: dict[str, SourceState],
                       opts: PrepareOptions, workers: int) -> Iterator[Prepared]:
    """Stage 2 over `tasks`, results in task order: inline, or in a pool of `workers`
    processes with at most a few files per worker in flight (backpressure). A file that kills
    its worker (a crash in a parser's C code, the kernel's out-of-memory killer) fails alone:
    the files in flight when the pool broke are run again one at a time, each in a process
    of its own, and the pool is started afresh for the rest."""
    if workers > 1 and len(tasks) > 1 and not picklable(opts):
        log.warning("these chunking options cannot be sent to worker processes; "
                    "parsing in this process")
        workers = 1
    if workers > 1 and len(tasks) > 1 and not _can_spawn():
        log.warning("worker processes cannot start from a program read from standard input; "
                    "parsing in this process (run a script file to use workers)")
        workers = 1
    if workers <= 1 or len(tasks) <= 1:
        for task in tasks:
            yield prepare(task, states.get(task.source), opts)
        return
    todo = deque(tasks)
    while todo:
        yield from _pooled(todo, states, opts, workers)


def _can_spawn() -> bool:
    """Whether a spawned process can import the main module (it cannot when the program was
    read from stdin: multiprocessing then looks for a file named `<stdin>`)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path is None or os.path.exists(path)


def _pool(workers: int, opts: PrepareOptions) -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")  # no fork of a process holding Chroma's threads
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init,
                               initargs=(opts, os.getpid()))


def _pooled(todo: deque[FileTask], states: dict[str, SourceState], opts: PrepareOptions,
            workers: int) -> Iterator[Prepared]:
    """Take tasks from `todo` through one pool until it is empty or the pool breaks; then
    run the files that were in flight alone."""
    from concurrent.futures.process import BrokenProcessPool

    suspects: list[FileTask] = []
    with _pool(workers, opts) as pool:
        pending: deque = deque()

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


def _alone(task: FileTask, stored: SourceState | None, opts: PrepareOptions) -> Prepared:
    """Stage 2 for one file in a process of its own; a failure if that process dies."""
    from concurrent.futures.process import BrokenProcessPool

    with _pool(1, opts) as pool:
        try:
            return pool.submit(_worker_prepare, task, stored).result()
        except BrokenProcessPool:
            return Prepared(task.source, "failed", reason="the worker process parsing it died "
                            "(a crash in a parser, or out of memory)")


def picklable(obj: Any) -> bool:
    import pickle

    try:
        pickle.dumps(obj)
        return True
    except Exception:  # noqa: BLE001 - any object may refuse in its own way
        return False


_worker_opts: PrepareOptions | None = None


def _worker_init(opts: PrepareOptions, parent: int) -> None:
    global _worker_opts
    _worker_opts = opts
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


# -- roots ----------------------------------------------------------------------------------
def choose_root(paths: Sequence[str | os.PathLike], root: str | os.PathLike | None,
                recorded: str | None, collection: str) -> Path:
    """The root of this run: `root` if given; else the collection's own root when every path
    lies inside it; else the folder given (see `discover.default_root`). A collection keeps
    the root it was first written from: another one is refused, since its sources would name
    the same files differently."""
    if root is not None:
        chosen = resolve_root(root)
    else:
        chosen = default_root(paths)
        if recorded is not None:
            rec = Path(recorded)
            if all(inside(Path(os.path.abspath(os.fspath(p))).resolve(), rec) for p in paths):
                chosen = rec
    if recorded is not None and Path(recorded) != chosen:
        raise StoreError(
            f"collection {collection!r} holds documents named relative to {recorded}, not "
            f"{chosen}: ingest paths inside {recorded} (or --root {recorded}), or use another "
            "--collection")
    return chosen


# -- the API --------------------------------------------------------------------------------
@dataclass(frozen=True)
class IngestOptions:
    """The options of an ingest run, the same for every runner: `ingest` here and
    `chunkwise.ray.ingest` take them as keyword arguments, or as one `IngestOptions`
    (keywords given as well override its fields).

    - store: a Chroma `client`, a server at `host`/`port`, or an embedded database at
      `db_path` (default `chunkwise-db`), locked for the run: another writer is waited for
      up to `wait` seconds (`on_wait` is told who holds it); `collection`; `timeout` and
      `retry_delays` bound the requests to the store.
    - chunking: `chunker`, or one built from `max_tokens`, `tokenizer` and `overlap`;
      `format` reads every file as that format.
    - embedding: `embedder` (a spec or an object; default `minilm`), on `device` (`auto`: a
      GPU when there is one; the minilm embedder only).
    - files: documents are named by their path relative to `root` (default: the folder
      given, or the collection's recorded root); `prune` deletes the documents under the
      paths given whose files are gone; `follow_symlinks`; `max_file_size` (bytes) and
      `file_timeout` (seconds of parsing and chunking) bound each file.
    - the run: `workers` parse and chunk (local: processes, default one per core; Ray: the
      tasks at once); `rebuild` empties the collection first; `progress` is called as files
      are done.
    """

    client: Any = None
    db_path: str | os.PathLike | None = None
    host: str | None = None
    port: int | None = None
    collection: str = DEFAULT_COLLECTION
    max_tokens: int = 256
    tokenizer: str = "minilm"
    overlap: int = 0
    format: str | None = None
    chunker: Any = None
    embedder: Any = None
    device: str = "auto"
    prune: bool = False
    root: str | os.PathLike | None = None
    workers: int | None = None
    follow_symlinks: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT
    wait: float = DEFAULT_WAIT
    timeout: float | None = DEFAULT_TIMEOUT
    rebuild: bool = False
    progress: Callable[[IngestProgress], None] | None = None
    on_wait: Callable[[str], None] | None = None
    retry_delays: Sequence[float] = RETRY_DELAYS

    @classmethod
    def of(cls, options: IngestOptions | None, given: Mapping[str, Any]) -> IngestOptions:
        """`options` (default: all defaults) with the keyword arguments `given` over it; a
        name that is not an option is a `TypeError`, as for any function."""
        return replace(options if options is not None else cls(), **given)

    def make_chunker(self) -> Any:
        """`chunker`, or the one `max_tokens`, `tokenizer` and `overlap` describe."""
        from ..chunking.api import Chunker

        return self.chunker or Chunker(max_tokens=self.max_tokens, tokenizer=self.tokenizer,
                                       overlap=self.overlap)

    def open_store(self) -> Any:
        """`open_for_writing` with these options: a context manager giving the client."""
        return open_for_writing(client=self.client, db_path=self.db_path, host=self.host,
                                port=self.port, wait=self.wait, on_wait=self.on_wait,
                                retry_delays=self.retry_delays, timeout=self.timeout)

    def start(self, c: Any, paths: list[str] | None, chunker: Any, emb: Any, *, workers: int,
              hashes: set[str] | None = None) -> Run:
        """`start_run` with these options."""
        return start_run(c, paths, self.collection, chunker, emb, self.format,
                         prune=self.prune, root=self.root, workers=workers,
                         follow_symlinks=self.follow_symlinks,
                         max_file_size=self.max_file_size, file_timeout=self.file_timeout,
                         rebuild=self.rebuild, retry_delays=self.retry_delays, hashes=hashes)


def ingest(paths: Iterable[str | os.PathLike], options: IngestOptions | None = None, /,
           **kwargs: Any) -> IngestReport:
    """Chunk, embed and write files (folders are walked) into a Chroma collection; the
    options are `IngestOptions`' (keyword arguments, or one `IngestOptions`).

    Documents are named by their path relative to `root` (default: the folder given, or the
    collection's recorded root). Unchanged files are skipped; changed files replace their
    chunks, reusing the vectors of texts already embedded; with `prune`, documents under the
    given paths whose files are gone are deleted. A file that cannot be read or parsed is
    recorded in `report.failed` and the rest is ingested. `workers` processes parse and
    chunk (default: one per core). An embedded database is locked for the run; another
    writer is waited for up to `wait` seconds. `rebuild` empties the collection first.
    `device` is where the default embedder runs (`auto`: a GPU when there is one).

    Raises `StoreError` when the store is unreachable after retries, refuses a write, or
    was built from another root; `LockedError` when another process keeps writing;
    `ConfigError` for invalid options.
    """
    from ..embeddings.functions import resolve_embedder

    t_start = time.perf_counter()
    opts = IngestOptions.of(options, kwargs)
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ConfigError("no paths to ingest")
    workers = _check_workers(opts.workers)
    check_limits(opts.max_file_size, opts.file_timeout)
    chunker = opts.make_chunker()
    emb = resolve_embedder(opts.embedder, device=opts.device)
    with opts.open_store() as c:
        return _ingest_locked(c, paths, opts, chunker, emb, workers, t_start)


@contextmanager
def open_for_writing(*, client: Any = None, db_path: str | os.PathLike | None = None,
                     host: str | None = None, port: int | None = None,
                     wait: float = DEFAULT_WAIT, on_wait: Callable[[str], None] | None = None,
                     retry_delays: Sequence[float] = RETRY_DELAYS,
                     timeout: float | None = DEFAULT_TIMEOUT) -> Iterator[Any]:
    """The Chroma client of a run that writes, every runner alike: a server's, the `client`
    given, or an embedded database's, which is locked for the run (`WriteLock`) and opened
    only once the lock is held."""
    server = client is None and (host is not None or port is not None)
    if client is not None or server:
        c = connect(client=client, db_path=db_path, host=host, port=port,
                    retry_delays=retry_delays, timeout=timeout)
        folder = persist_directory(c) if client is not None else None
    else:
        c, folder = None, Path(db_path if db_path is not None else DEFAULT_DB)
    lock = WriteLock(folder, wait=wait, on_wait=on_wait) if folder is not None else None
    if lock is not None:
        lock.__enter__()
    try:
        if c is None:
            # Opened under the lock: two processes creating one new database at once race
            # on its tables ("table collections already exists").
            c = connect(db_path=folder, retry_delays=retry_delays, timeout=timeout)
        yield c
    finally:
        if lock is not None:
            lock.__exit__(None, None, None)


def check_limits(max_file_size: int, file_timeout: float | None) -> None:
    """`ConfigError` unless the per-file bounds are positive."""
    if max_file_size < 1:
        raise ConfigError(f"max_file_size must be a positive number of bytes, got {max_file_size!r}")
    if file_timeout is not None and not file_timeout > 0:
        raise ConfigError(f"file_timeout must be a positive number of seconds, got {file_timeout!r}")


def _check_workers(workers: int | None) -> int:
    if workers is None:
        return max(1, os.cpu_count() or 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be a positive integer, got {workers!r}")
    return workers


@dataclass
class Run:
    """What every runner starts from: the store, the files found, what is stored for each
    source, the report so far, and the options of stage 2."""

    store: Store
    found: Discovery
    states: dict[str, SourceState]
    report: IngestReport
    opts: PrepareOptions
    discover_seconds: float


def start_run(c: Any, paths: list[str] | None, collection: str, chunker: Any, emb: Any,
              fmt: str | None, *, prune: bool, root: Any, workers: int,
              follow_symlinks: bool = False, max_file_size: int = DEFAULT_MAX_FILE_SIZE,
              file_timeout: float | None = DEFAULT_FILE_TIMEOUT, rebuild: bool = False,
              retry_delays: Sequence[float] = RETRY_DELAYS,
              hashes: set[str] | None = None) -> Run:
    """Open (or `rebuild`) the collection, choose and record the root, repair a damaged
    index, discover the files under `paths` and read what is stored (one paged pass;
    `hashes`, when given, gets every stored embed hash on the way). `paths=None` discovers
    nothing: the caller brings its own files, named relative to `root`, and adds them to
    `run.found.files` as it reads them (what `prune_gone` keeps)."""
    if rebuild:
        _drop(c, collection, retry_delays)
    store = Store(c, collection, emb, create=True, retry_delays=retry_delays)
    recorded = store.root
    if recorded is None and store.count() > 0:
        raise StoreError(
            f"collection {collection!r} was written by an earlier chunkwise, which named "
            "documents by the path as typed (so one folder could be stored several times); "
            "rebuild it once with --rebuild (API: rebuild=True), or use another --collection")
    the_root = choose_root(paths if paths is not None else [root], root, recorded, collection)
    repaired = _heal_if_damaged(store, emb)
    t0 = time.perf_counter()
    if paths is not None:
        found = discover(paths, root=the_root, follow_symlinks=follow_symlinks,
                         max_file_size=max_file_size)
    else:
        found = Discovery(root=the_root, scopes=[""])
    if recorded is None:
        store.set_root(str(the_root))
    report = IngestReport(window=emb.window, root=str(the_root), workers=workers,
                          repaired=repaired)
    report.ignored.extend(found.skipped)
    if found.unsupported:
        log.warning("%s", unsupported_summary(found.unsupported))
    report.unsupported = len(found.unsupported)
    if found.missing and not prune:
        report.failed.extend((m, "no such file or directory") for m in found.missing)
    states = store.summary(hashes)
    opts = PrepareOptions(chunker, fmt, options_fingerprint(chunker, fmt, emb.identity),
                          max_file_size, file_timeout)
    return Run(store, found, states, report, opts, time.perf_counter() - t0)


def _ingest_locked(c: Any, paths: list[str], opts: IngestOptions, chunker: Any, emb: Any,
                   workers: int, t_start: float) -> IngestReport:
    run = opts.start(c, paths, chunker, emb, workers=workers)
    # an empty collection at the start has nothing to lend: only this run's vectors
    fresh = not run.states and run.store.count() == 0
    planner = Planner(run.store, run.report, run.states, run.opts.options,
                      len(run.found.files), opts.progress, fresh=fresh)
    # With worker processes, the model gets a process of its own too (see embedding_process)
    away = EmbeddingProcess(emb.spec, device=opts.device) if (
        workers > 1 and emb.spec is not None and not emb.local_only and _can_spawn()) else None
    runner = _Runner(planner, away.embedder(emb) if away else emb)
    try:
        for prepared in _prepared_in_order(run.found.files, run.states, run.opts, workers):
            runner.take(prepared)
        runner.finish()
    finally:
        runner.close()
        if away is not None:
            away.close()
    if opts.prune:
        prune_gone(run)
    run.report.seconds = planner.seconds(run.discover_seconds, runner.thread.busy,
                                         runner.thread.idle, t_start)
    return run.report


def _heal_if_damaged(store: Store, emb: Any) -> int:
    """A damaged index (vectors lost, a graph that no longer answers) is repaired before
    anything is called unchanged; returns the records re-embedded."""
    from ..chroma.health import heal, quick_check

    if quick_check(store):
        return 0
    found, after = heal(store, emb)
    if found.ok:
        return 0
    if after.ok:
        log.warning("collection %r was damaged (%s); repaired", store.name, found.summary())
    else:
        log.warning("collection %r is damaged (%s) and could not be repaired (%s); "
                    "`chunkwise check` tells more", store.name, found.summary(), after.summary())
    return max(len(found.missing), 1)


def _drop(c: Any, name: str, delays: Sequence[float]) -> None:
    from chromadb.errors import NotFoundError

    from ..chroma.store import with_retries

    try:
        with_retries(lambda: c.delete_collection(name), f"delete collection {name!r}", delays)
    except NotFoundError:
        pass
    except ValueError as e:  # older Chroma: "does not exist"
        if "does not exist" not in str(e):
            raise


def prune_gone(run: Run) -> None:
    """Delete the documents under the paths given whose files are really gone: not found,
    skipped or failed in this run, and not on disk under the root."""
    store, found, states, report = run.store, run.found, run.states, run.report
    t0 = time.perf_counter()
    present = {f.source for f in found.files} | {s for s, _ in found.skipped} | \
        {s for s, _ in report.failed}
    gone = set()
    for source in states:
        if source in present or not any(_under(source, scope) for scope in found.scopes):
            continue
        if os.path.lexists(found.root / source):
            continue
        gone.add(source)
    for source, ids in sorted(store.ids_of_sources(gone).items()):
        store.delete(ids)
        report.pruned_files += 1
        report.pruned_chunks += len(ids)
        log.info("pruned %s (%d chunks)", source, len(ids))
    report.seconds["prune"] = time.perf_counter() - t0


def _under(source: str, scope: str) -> bool:
    return scope == "" or source == scope or source.startswith(scope.rstrip("/") + "/")
