"""The stages of an ingest run, as functions of one file, and the planner every runner drives:

- stage 2, **prepare** (`prepare`, `prepare_bytes`): a file's bytes read and hashed; a file
  whose stored chunks carry this hash and these options is `unchanged` and not parsed; else
  it is parsed and chunked (`Prepared`), under the per-file time limit.
- stage 4, **plan** (`plan_file`): a changed file's chunks split against what is stored for
  it into upserts, metadata refreshes and stale ids (`FilePlan`); **write** (`write_window`):
  several files' plans written in as few calls as the store takes.
- `Planner`: what a runner does with the stage-2 results, in discovery order: counting them
  into the report, planning, and finding the vectors already known by embed hash
  (`VectorMemo`, then the collection).

Stage 3 (embedding) and the threads are in `threads`; the process pool in `pool`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Mapping, Sequence, TypeAlias

from ..chroma.records import SCHEMA, chunk_metadata, embed_hash
from ..chroma.store import SourceState, Store, as_rows
from ..errors import ChunkwiseError
from ..model import Chunk, ParsedDocument
from .deadlines import DeadlineExceeded, deadline
from .discover import DEFAULT_MAX_FILE_SIZE, FileTask, ReadError, read_bounded
from .options import ChunkerLike, DEFAULT_FILE_TIMEOUT, IngestProgress, IngestReport

if TYPE_CHECKING:
    import numpy as np


log = logging.getLogger(__name__)

#: one embedding: a row of the model's output (a list where a custom model gives lists)
Vector: TypeAlias = "np.ndarray | Sequence[float]"
#: a record's flat store metadata (`chroma.store.chunk_metadata`)
Metadata: TypeAlias = "dict[str, Any]"
#: what stage 2 made of a file
Status: TypeAlias = Literal["unchanged", "chunked", "failed"]


# -- stage 2: prepare -----------------------------------------------------------------------
@dataclass(frozen=True)
class Prepared:
    """One file after reading and chunking: the hand-off from stage 2 to stages 3 and 4."""

    source: str
    status: Status
    content_hash: str = ""
    chunks: tuple[Chunk, ...] = ()
    reason: str = ""
    """Why it failed; for a file chunked into nothing, why it holds no text."""
    read_seconds: float = 0.0
    parse_seconds: float = 0.0
    warnings: tuple[str, ...] = ()
    """The parser's warnings about the file (`ParsedDocument.warnings`), for the runner to
    say: per file, or once per run for a missing optional part (see `Planner.take`)."""
    format: str = ""
    """The format the file was parsed as (a chunked file only)."""
    size: int = 0
    """The file's bytes (a chunked file only): what the report's texts per MB divide by."""


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def options_fingerprint(chunker: ChunkerLike, fmt: str | None, embedder_identity: str) -> str:
    """What, besides the bytes, decides a file's stored chunks."""
    raw = f"{SCHEMA}|{chunker.fingerprint}|{fmt or ''}|{embedder_identity}"
    return hashlib.blake2b(raw.encode(), digest_size=8).hexdigest()


@dataclass(frozen=True)
class PrepareOptions:
    """What stage 2 needs besides the file (sent once to each worker)."""

    chunker: ChunkerLike
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
    """Stage 2 for a file already read (by `prepare`, or by whoever built a Ray dataset:
    then it may be over the size bound, which `prepare` checks before reading)."""
    if len(data) > opts.max_file_size:
        return Prepared(source, "failed", reason=f"larger than the {opts.max_file_size} bytes "
                                                 "limit")
    t0 = time.perf_counter()
    digest = content_hash(data)
    t1 = time.perf_counter()
    read_seconds += t1 - t0
    if stored is not None and stored.current(digest, opts.options):
        return Prepared(source, "unchanged", digest, read_seconds=read_seconds)
    try:
        with deadline(opts.file_timeout, "parsing and chunking"), _warnings_kept():
            doc = opts.chunker.parse_bytes(data, source=source, format=opts.format)
            chunks = opts.chunker.chunk_document(doc)
    except ChunkwiseError as e:
        return Prepared(source, "failed", digest, reason=failure_reason(e, source),
                        read_seconds=read_seconds, parse_seconds=time.perf_counter() - t1)
    except (MemoryError, RecursionError) as e:
        return Prepared(source, "failed", digest, reason=f"{type(e).__name__} while chunking",
                        read_seconds=read_seconds, parse_seconds=time.perf_counter() - t1)
    return Prepared(source, "chunked", digest, tuple(chunks),
                    reason="" if chunks else no_text_reason(doc), read_seconds=read_seconds,
                    parse_seconds=time.perf_counter() - t1, warnings=tuple(doc.warnings),
                    format=doc.format, size=len(data))


class _KeepWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno != logging.WARNING


#: where `Chunker.parse_bytes` logs a document's warnings, one line a file
_PARSE_LOG = logging.getLogger("chunkwise.chunking.api")


@contextmanager
def _warnings_kept() -> Iterator[None]:
    """The document warnings `Chunker.parse_bytes` logs kept out of the log: they travel in
    `Prepared.warnings` to the runner, which says them in the parent process (a worker's
    lines would ignore `--quiet`, and a missing grammar would be said by every worker)."""
    keep = _KeepWarnings()
    _PARSE_LOG.addFilter(keep)
    try:
        yield
    finally:
        _PARSE_LOG.removeFilter(keep)


def no_text_reason(doc: ParsedDocument) -> str:
    """Why a document gave no chunks: scanned pages that need the OCR extra, or none."""
    scanned = dict(doc.meta).get("needs_ocr")
    if scanned:
        return (f"no text: {scanned} scanned page{'s' if scanned != 1 else ''} without a text "
                f"layer (pip install 'chunkwise[ocr]' reads them)")
    return "no text"


def failure_reason(e: BaseException, source: str) -> str:
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
    embed: list[tuple[Chunk, Metadata]]
    refresh: list[tuple[str, Metadata]]
    stale: list[str]
    vectors: list[Vector | None] = field(default_factory=list)
    """The vectors of `embed`, in order, filled in by stage 3 (None until then)."""
    records: int = 0
    """The records the file has once written (one per distinct embed text)."""
    fresh: int = 0
    """How many of `embed` carry a text first embedded in this run (what an interrupted run
    says it kept)."""


def plan_file(source: str, chunks: Sequence[Chunk], stored: Mapping[str, Metadata],
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
    return FilePlan(source, embed, refresh, stale, records=records)


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


class VectorMemo:
    """Vectors of this run by embed hash, to embed a repeated text once (bounded)."""

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self.vectors: dict[str, Vector] = {}

    def get(self, key: str) -> Vector | None:
        return self.vectors.get(key)

    def put(self, key: str, vector: Vector) -> None:
        if len(self.vectors) >= self.limit:
            self.vectors.pop(next(iter(self.vectors)))
        self.vectors[key] = vector


# -- the driver's side, for every runner ----------------------------------------------------
class Planner:
    """What every runner does with stage-2 results, in discovery order: counts them, plans
    each changed file against the store (`plan_file`), finds the vectors already known by
    embed hash (this run's memo, then the collection), and keeps the report's timers. The
    plans go to a `WriteThread`. `fresh`: the collection was empty at the start, so it has no
    vectors to lend and is not asked. `root`: the root to record in the collection before
    its first write (None: recorded already), so that a run that writes nothing (an empty
    or unreadable folder) leaves the collection free to take another."""

    def __init__(self, store: Store, report: IngestReport, states: dict[str, SourceState],
                 options: str, files_total: int,
                 progress: Callable[[IngestProgress], None] | None, *,
                 fresh: bool = False, root: str | None = None) -> None:
        self.store, self.report, self.states = store, report, states
        self.options, self.files_total, self.progress = options, files_total, progress
        self.fresh, self.root = fresh, root
        self.memo = VectorMemo()
        self.timers = {"read": 0.0, "parse_chunk": 0.0, "write": 0.0, "plan": 0.0}
        self.telling = threading.Lock()  # the runners' threads all tell

    def tell(self, source: str = "", embed_seconds: float = 0.0,
             texts_embedded: int | None = None) -> None:
        """Call `progress` with the run so far; `texts_embedded` (default: all the texts
        counted in `report.embedded`) of `report.embedded`."""
        if self.progress is not None:
            r = self.report
            done = r.embedded if texts_embedded is None else texts_embedded
            with self.telling:
                self.progress(IngestProgress(r.files, self.files_total, r.written,
                                             embed_seconds, source, done, r.embedded,
                                             r.chunks))

    def _say(self, p: Prepared) -> None:
        """A file's warnings: per file in the log, except those about an optional part not
        installed (they name what `pip install` adds), said once in the report."""
        for warning in p.warnings:
            if "pip install" in warning:
                if warning not in self.report.missing_parts:
                    self.report.missing_parts.append(warning)
            else:
                log.warning("%s: %s", p.source, warning)

    def take(self, p: Prepared) -> FilePlan | None:
        """Count one stage-2 result; the plan of a file with something to write, else None
        (its `vectors` all None, to be filled in)."""
        r = self.report
        r.files += 1
        self.timers["read"] += p.read_seconds
        self.timers["parse_chunk"] += p.parse_seconds
        self._say(p)
        if p.status == "failed":
            r.failed.append((p.source, p.reason))
            return None
        if p.status == "unchanged":
            r.skipped += 1
            r.chunks += self.states[p.source].stored
            r.records += self.states[p.source].stored
            return None
        t0 = time.perf_counter()
        stored = self.store.chunks_of(p.source) if p.source in self.states else {}
        plan = plan_file(p.source, p.chunks, stored, p.content_hash, self.options)
        r.chunks += len(p.chunks)
        r.records += plan.records
        bill = r.bill(p.format)
        bill.files += 1
        bill.bytes += p.size
        bill.chunks += len(p.chunks)
        if not p.chunks:
            r.no_text.append((p.source, p.reason or "no text"))
        self.timers["plan"] += time.perf_counter() - t0
        if not (plan.embed or plan.refresh or plan.stale):
            r.skipped += 1
            return None
        r.changed += 1
        plan.vectors = [None] * len(plan.embed)
        if self.root is not None:  # before the first write (see the class docstring)
            self.store.set_root(self.root)
            self.root = None
        return plan

    def known(self, hashes: Sequence[str]) -> dict[str, Vector]:
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


