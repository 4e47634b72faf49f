"""Chroma ingestion and query: files in, an up-to-date collection out.

    >>> from chunkwise.chroma import ingest, query
    >>> report = ingest(["docs/"], db_path="chunkwise-db")        # embedded PersistentClient
    >>> hits = query("how do I configure retries?", db_path="chunkwise-db", k=5)

A `chroma run` server is used instead with `host=`/`port=`, or pass any `client=`.

Incremental by construction: every chunk's metadata records the hash of its file's bytes
(`content_hash`), the options that shaped it (`options`) and how many chunks the file has
(`chunk_count`). A file is up to date when the chunks stored for its source all carry its
current hash and options and there are exactly `chunk_count` of them; such a file is neither
parsed nor embedded. Otherwise the file is re-chunked and, in this order, new chunks are
upserted, chunks that only changed metadata are updated, and stale chunks are deleted. Any
prefix of that sequence leaves a state the check above sees as out of date, so a run killed at
any moment is completed by the next one, which converges on what an uninterrupted run writes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .errors import ChunkwiseError, ConfigError
from .model import Chunk
from .textio import source_name

log = logging.getLogger(__name__)

DEFAULT_DB = "chunkwise-db"
DEFAULT_COLLECTION = "chunkwise"
#: bump when the stored metadata layout changes: every file is then rewritten once
SCHEMA = "1"
#: chunks embedded between writes and progress reports
EMBED_SLICE = 256
#: seconds to wait before each retry of a store call that failed to reach the server
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
#: metadata keys chunkwise writes; chunk meta keys equal to these are stored as `meta.<key>`
RESERVED_KEYS = frozenset({
    "source", "format", "start", "end", "chunk_index", "chunk_count", "tokens", "context",
    "section_path", "section_path_list", "kinds", "page_start", "page_end", "content_hash",
    "options",
})
_COLLECTION_EMBEDDER = "chunkwise_embedder"
_COLLECTION_SPEC = "chunkwise_embedder_spec"
_INT64 = (-(2 ** 63), 2 ** 63 - 1)


class StoreError(ChunkwiseError):
    """The vector store could not be reached, or refused an operation (the message says which
    and why); rerunning after the cause is fixed completes the job."""


# -- results --------------------------------------------------------------------------------
@dataclass
class IngestReport:
    """What an `ingest` run did. Chunk counts are chunks, file counts are files."""

    files: int = 0
    """Files seen (found under the paths given)."""
    chunks: int = 0
    """Chunks those files have now (stored or written)."""
    skipped: int = 0
    """Files already up to date: not parsed, nothing written."""
    changed: int = 0
    """Files (re)written: new, edited, or chunked with other options."""
    written: int = 0
    """Chunks embedded and upserted."""
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
    truncated: int = 0
    """Chunks embedded in this run that are longer than the embedding model's window (when
    the model says, see `Embedder.window`): only their start is in their vector."""
    window: int | None = None
    """That window, in the model's tokens."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per phase: `read`, `parse_chunk`, `embed`, `write`, `total`."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files, "chunks": self.chunks, "skipped": self.skipped,
            "changed": self.changed, "written": self.written, "updated": self.updated,
            "deleted": self.deleted, "pruned_files": self.pruned_files,
            "pruned_chunks": self.pruned_chunks,
            "failed": [{"source": s, "reason": r} for s, r in self.failed],
            "truncated": self.truncated, "window": self.window,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }


@dataclass(frozen=True)
class IngestProgress:
    """Passed to the `progress` callback after each file is planned and each slice written."""

    files_done: int
    files_total: int
    chunks_written: int
    embed_seconds: float
    source: str = ""

    @property
    def rate(self) -> float:
        """Chunks embedded per second of embedding so far."""
        return self.chunks_written / self.embed_seconds if self.embed_seconds > 0 else 0.0


@dataclass(frozen=True)
class Hit:
    """One query result."""

    id: str
    source: str
    text: str
    distance: float
    section_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    context: str
    metadata: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "distance": self.distance,
                "section_path": list(self.section_path), "page_start": self.page_start,
                "page_end": self.page_end, "context": self.context, "text": self.text,
                "metadata": self.metadata}


# -- metadata -------------------------------------------------------------------------------
def flatten_metadata(meta: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Metadata Chroma accepts: str/int/float/bool values and non-empty lists of one of those
    types. None and empty values are dropped, dicts become dotted keys, anything else (mixed
    lists, NaN, huge ints, objects) becomes a string."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_metadata(value, prefix=f"{name}."))
            continue
        flat = _flat_value(value)
        if flat is not None:
            out[name] = flat
    return out


def _flat_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_flat_value(v) for v in value]
        items = [v for v in items if v is not None and not isinstance(v, list)]
        if not items:
            return None
        kinds = {bool if isinstance(v, bool) else type(v) for v in items}
        return items if len(kinds) == 1 else json.dumps(items, default=str)
    return str(value)


def chunk_metadata(chunk: Chunk, *, index: int, count: int, content_hash: str,
                   options: str) -> dict[str, Any]:
    """The flat metadata stored with a chunk: its contract fields, its position in the file,
    the file's hash and options (for incremental runs), then the chunk's own meta."""
    meta: dict[str, Any] = {
        "source": chunk.source, "format": chunk.format, "start": chunk.start, "end": chunk.end,
        "chunk_index": index, "chunk_count": count, "tokens": chunk.tokens,
        "context": chunk.context, "section_path": " > ".join(chunk.section_path),
        "content_hash": content_hash, "options": options,
    }
    if chunk.section_path:
        meta["section_path_list"] = list(chunk.section_path)
    if chunk.kinds:
        meta["kinds"] = list(chunk.kinds)
    if chunk.page_start is not None:
        meta["page_start"] = chunk.page_start
    if chunk.page_end is not None:
        meta["page_end"] = chunk.page_end
    extra = flatten_metadata(chunk.meta)
    for key, value in extra.items():
        meta[f"meta.{key}" if key in RESERVED_KEYS else key] = value
    return meta


# -- connection and retries -----------------------------------------------------------------
def _transient(e: BaseException) -> bool:
    """Errors worth retrying: the server is unreachable or went away mid-request."""
    try:
        import httpx
    except ImportError:  # pragma: no cover - a chromadb dependency
        httpx = None
    if httpx is not None and isinstance(e, httpx.TransportError):
        return True
    if isinstance(e, ConnectionError):
        return True
    return isinstance(e, ValueError) and "Could not connect" in str(e)


def with_retries(fn: Callable[[], Any], what: str, delays: Sequence[float] = RETRY_DELAYS) -> Any:
    """Call `fn`; on a transient failure wait and retry (exponential backoff), then raise a
    `StoreError` naming the operation and the cause."""
    for attempt in range(len(delays) + 1):
        try:
            return fn()
        except Exception as e:
            if not _transient(e):
                raise
            if attempt == len(delays):
                raise StoreError(f"Chroma unreachable while trying to {what} "
                                 f"({attempt + 1} attempts): {type(e).__name__}: {e}") from e
            log.warning("Chroma unreachable (%s: %s); retrying in %.1fs", type(e).__name__, e,
                        delays[attempt])
            time.sleep(delays[attempt])
    raise AssertionError("unreachable")  # pragma: no cover


def connect(*, client: Any = None, db_path: str | os.PathLike | None = None,
            host: str | None = None, port: int | None = None, create: bool = True,
            retry_delays: Sequence[float] = RETRY_DELAYS) -> Any:
    """A Chroma client: `client` as given, an `HttpClient` when `host` or `port` is set, else a
    `PersistentClient` on `db_path` (default `./chunkwise-db`; with `create=False` a missing
    directory is an error instead of a new empty database)."""
    if client is not None:
        if db_path is not None or host is not None or port is not None:
            raise ConfigError("give either a client or a database location, not both")
        return client
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if host is not None or port is not None:
        if db_path is not None:
            raise ConfigError("give either a database directory or a server, not both")
        h, p = host or "localhost", port or 8000
        return with_retries(lambda: chromadb.HttpClient(host=h, port=p, settings=settings),
                            f"connect to {h}:{p}", retry_delays)
    path = Path(db_path if db_path is not None else DEFAULT_DB)
    if not create and not path.is_dir():
        raise StoreError(f"no Chroma database at {path}; run `chunkwise ingest` first")
    try:
        # Chroma caches clients by path string: an absolute path keeps "db" in two working
        # directories apart.
        return chromadb.PersistentClient(path=str(path.resolve()), settings=settings)
    except Exception as e:
        raise StoreError(f"cannot open Chroma database {path}: {e}") from e


class _Store:
    """One collection, every call retried on transient failures."""

    def __init__(self, client: Any, name: str, embedder: Any, *, create: bool,
                 retry_delays: Sequence[float]) -> None:
        self.client = client
        self.name = name
        self.embedder = embedder
        self.delays = retry_delays
        self.collection = self._open(create)
        self.max_batch = max(1, int(self._call(client.get_max_batch_size, "read the batch size")))

    def _call(self, fn: Callable[[], Any], what: str) -> Any:
        try:
            return with_retries(fn, what, self.delays)
        except ChunkwiseError:
            raise
        except Exception as e:
            raise StoreError(f"Chroma refused to {what} in collection {self.name!r}: "
                             f"{type(e).__name__}: {e}") from e

    def _open(self, create: bool) -> Any:
        from chromadb.errors import NotFoundError

        try:
            col = self._call(lambda: self.client.get_collection(self.name),
                             f"open collection {self.name!r}")
        except StoreError as e:
            if not isinstance(e.__cause__, NotFoundError):
                raise
            if not create:
                raise StoreError(f"no collection {self.name!r}; run `chunkwise ingest` first") from e
            return self._create()
        self._check_embedder(col)
        return col

    def _create(self) -> Any:
        e = self.embedder
        metadata = {_COLLECTION_EMBEDDER: e.identity}
        if e.spec:
            metadata[_COLLECTION_SPEC] = e.spec
        return self._call(lambda: self.client.get_or_create_collection(
            self.name, embedding_function=e.chroma_function, metadata=metadata,
            configuration={"hnsw": {"space": "cosine"}}), f"create collection {self.name!r}")

    def _check_embedder(self, col: Any) -> None:
        stored = (col.metadata or {}).get(_COLLECTION_EMBEDDER)
        if stored is None:
            if self._call(col.count, "count") == 0:  # adopt an empty collection
                metadata = {**(col.metadata or {}), _COLLECTION_EMBEDDER: self.embedder.identity}
                if self.embedder.spec:
                    metadata[_COLLECTION_SPEC] = self.embedder.spec
                self._call(lambda: col.modify(metadata=metadata), "set collection metadata")
                return
            raise StoreError(f"collection {self.name!r} was not made by chunkwise (no "
                             f"{_COLLECTION_EMBEDDER} metadata); use another collection")
        if stored != self.embedder.identity:
            raise StoreError(f"collection {self.name!r} holds vectors of {stored}, not "
                             f"{self.embedder.identity}; use the same embedder or another collection")

    # -- reads --------------------------------------------------------------------------
    def chunks_of(self, source: str) -> dict[str, dict[str, Any]]:
        """id -> metadata of every chunk stored for `source`."""
        got = self._call(lambda: self.collection.get(where={"source": source},
                                                     include=["metadatas"]),
                         f"read the chunks of {source}")
        return dict(zip(got["ids"], (m or {} for m in got["metadatas"])))

    def sources(self) -> dict[str, list[str]]:
        """source -> ids, over the whole collection (paged)."""
        out: dict[str, list[str]] = {}
        offset, page = 0, max(100, min(self.max_batch, 5000))
        while True:
            got = self._call(lambda: self.collection.get(include=["metadatas"], limit=page,
                                                         offset=offset), "list sources")
            for id_, meta in zip(got["ids"], got["metadatas"]):
                out.setdefault(str((meta or {}).get("source", "")), []).append(id_)
            if len(got["ids"]) < page:
                return out
            offset += page

    # -- writes -------------------------------------------------------------------------
    def upsert(self, ids: list[str], documents: list[str], embeddings: Any,
               metadatas: list[dict[str, Any]]) -> None:
        for lo in range(0, len(ids), self.max_batch):
            hi = lo + self.max_batch
            self._call(lambda: self.collection.upsert(
                ids=ids[lo:hi], documents=documents[lo:hi], embeddings=embeddings[lo:hi],
                metadatas=metadatas[lo:hi]), "upsert chunks")

    def update(self, ids: list[str], metadatas: list[dict[str, Any]]) -> None:
        for lo in range(0, len(ids), self.max_batch):
            hi = lo + self.max_batch
            self._call(lambda: self.collection.update(ids=ids[lo:hi], metadatas=metadatas[lo:hi]),
                       "update chunk metadata")

    def delete(self, ids: list[str]) -> None:
        for lo in range(0, len(ids), self.max_batch):
            batch = ids[lo:lo + self.max_batch]
            self._call(lambda: self.collection.delete(ids=batch), "delete chunks")


# -- planning -------------------------------------------------------------------------------
@dataclass
class _FilePlan:
    """What one changed file needs: chunks to embed and upsert, chunks whose metadata only
    changed, and stale ids to delete (in that order)."""

    source: str
    embed: list[tuple[Chunk, dict[str, Any]]]
    refresh: list[tuple[str, dict[str, Any]]]
    stale: list[str]


def is_current(stored: Mapping[str, Mapping[str, Any]], content_hash: str, options: str) -> bool:
    """Whether the chunks stored for a file are exactly those of its current bytes and options."""
    return bool(stored) and all(
        m.get("content_hash") == content_hash and m.get("options") == options
        and m.get("chunk_count") == len(stored) for m in stored.values())


def plan_file(source: str, chunks: Sequence[Chunk], stored: Mapping[str, Mapping[str, Any]],
              content_hash: str, options: str) -> _FilePlan:
    """Split a file's new chunks against what is stored for it."""
    embed, refresh, seen = [], [], set()
    for index, chunk in enumerate(chunks):
        if chunk.id in seen:  # ids hash source and span: a repeat is a chunker bug; keep one
            log.warning("%s: duplicate chunk id %s", source, chunk.id)
            continue
        seen.add(chunk.id)
        meta = chunk_metadata(chunk, index=index, count=len(chunks),
                              content_hash=content_hash, options=options)
        old = stored.get(chunk.id)
        if old is None:
            embed.append((chunk, meta))
            continue
        # Chroma merges metadata on upsert and update: drop keys the new record lacks.
        full = {**{k: None for k in old if k not in meta}, **meta}
        if old.get("context", "") != chunk.context:  # same text, new embed text
            embed.append((chunk, full))
        elif dict(old) != meta:
            refresh.append((chunk.id, full))
    stale = [i for i in stored if i not in seen]
    return _FilePlan(source, embed, refresh, stale)


def options_fingerprint(chunker: Any, fmt: str | None, embedder_identity: str) -> str:
    """What, besides the bytes, decides a file's stored chunks."""
    raw = f"{SCHEMA}|{chunker.fingerprint}|{fmt or ''}|{embedder_identity}"
    return hashlib.blake2b(raw.encode(), digest_size=8).hexdigest()


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


# -- ingest ---------------------------------------------------------------------------------
class _Run:
    """State of one ingest run: plans wait here until enough chunks are queued to embed in
    well-filled batches, then are written file by file in plan order."""

    def __init__(self, store: _Store, embedder: Any, report: IngestReport, files_total: int,
                 progress: Callable[[IngestProgress], None] | None) -> None:
        self.store = store
        self.embedder = embedder
        self.report = report
        self.files_total = files_total
        self.progress = progress
        self.pending: list[_FilePlan] = []
        self.queued = 0
        self.timers = {"read": 0.0, "parse_chunk": 0.0, "embed": 0.0, "write": 0.0}

    def tell(self, source: str = "") -> None:
        if self.progress is not None:
            r = self.report
            self.progress(IngestProgress(r.files, self.files_total, r.written,
                                         self.timers["embed"], source))

    def add(self, plan: _FilePlan) -> None:
        self.pending.append(plan)
        self.queued += len(plan.embed)
        if self.queued >= EMBED_SLICE:
            self.flush()

    def flush(self) -> None:
        """Embed and upsert every queued chunk, then refresh and delete per file. A file's
        deletions always follow its upserts, which keeps killed runs recoverable."""
        todo = [(c, m) for plan in self.pending for c, m in plan.embed]
        for lo in range(0, len(todo), EMBED_SLICE):
            part = todo[lo:lo + EMBED_SLICE]
            t0 = time.perf_counter()
            texts = [c.embed_text for c, _ in part]
            vectors = self.embedder.embed(texts)
            if self.embedder.overflowing is not None:
                self.report.truncated += self.embedder.overflowing(texts)
            t1 = time.perf_counter()
            self.store.upsert([c.id for c, _ in part], [c.text for c, _ in part],
                              _as_rows(vectors), [m for _, m in part])
            self.timers["embed"] += t1 - t0
            self.timers["write"] += time.perf_counter() - t1
            self.report.written += len(part)
            self.tell()
        t0 = time.perf_counter()
        for plan in self.pending:
            if plan.refresh:
                self.store.update([i for i, _ in plan.refresh], [m for _, m in plan.refresh])
                self.report.updated += len(plan.refresh)
            if plan.stale:
                self.store.delete(plan.stale)
                self.report.deleted += len(plan.stale)
        self.timers["write"] += time.perf_counter() - t0
        self.pending, self.queued = [], 0


def _as_rows(vectors: Any) -> Any:
    try:
        import numpy as np

        return np.asarray(vectors, dtype=np.float32)
    except (ImportError, ValueError):  # ragged or exotic output: let Chroma judge it
        return [list(v) for v in vectors]


def ingest(paths: Iterable[str | os.PathLike], *, client: Any = None,
           db_path: str | os.PathLike | None = None, host: str | None = None,
           port: int | None = None, collection: str = DEFAULT_COLLECTION,
           max_tokens: int = 256, tokenizer: str = "minilm", overlap: int = 0,
           format: str | None = None, chunker: Any = None, embedder: Any = None,
           prune: bool = False, progress: Callable[[IngestProgress], None] | None = None,
           retry_delays: Sequence[float] = RETRY_DELAYS) -> IngestReport:
    """Chunk, embed and write files (folders are walked) into a Chroma collection.

    Unchanged files are skipped; changed files replace their chunks; with `prune`, sources
    under the given paths whose files are gone are deleted. A file that cannot be read or
    parsed is recorded in `report.failed` and the rest is ingested. `embedder` is anything
    `chunkwise.embeddings.resolve_embedder` accepts (default: all-MiniLM-L6-v2).

    Raises `StoreError` when the store is unreachable after retries or refuses a write,
    `ConfigError` for invalid options.
    """
    from .api import Chunker
    from .embeddings import resolve_embedder

    t_start = time.perf_counter()
    chunker = chunker or Chunker(max_tokens=max_tokens, tokenizer=tokenizer, overlap=overlap)
    emb = resolve_embedder(embedder)
    roots = [Path(p) for p in paths]
    if not roots:
        raise ConfigError("no paths to ingest")
    store = _Store(connect(client=client, db_path=db_path, host=host, port=port,
                           retry_delays=retry_delays), collection, emb, create=True,
                   retry_delays=retry_delays)
    options = options_fingerprint(chunker, format, emb.identity)
    report = IngestReport(window=emb.window)
    files, missing = _collect(roots, prune)
    report.failed.extend((source_name(p), "no such file or directory") for p in missing)
    run = _Run(store, emb, report, len(files), progress)
    for path in files:
        report.files += 1
        _ingest_file(run, chunker, path, format, options)
        run.tell(source_name(path))
    run.flush()
    if prune:
        _prune(store, roots, {source_name(p) for p in files}, report)
    report.seconds = {**run.timers, "total": time.perf_counter() - t_start}
    return report


def _collect(roots: list[Path], prune: bool) -> tuple[list[Path], list[Path]]:
    """Files to ingest (deduplicated, in walk order) and paths that do not exist. With prune, a
    missing path is just a root whose files are gone, not a failure."""
    from .api import iter_files

    present = [r for r in roots if r.exists()]
    missing = [] if prune else [r for r in roots if not r.exists()]
    seen: dict[str, Path] = {}
    for path in iter_files(present):
        seen.setdefault(source_name(path), path)
    return list(seen.values()), missing


def _ingest_file(run: _Run, chunker: Any, path: Path, fmt: str | None, options: str) -> None:
    report, source = run.report, source_name(path)
    t0 = time.perf_counter()
    try:
        data = path.read_bytes()
    except OSError as e:
        report.failed.append((source, f"cannot read: {e.strerror or e}"))
        return
    digest = content_hash(data)
    run.timers["read"] += time.perf_counter() - t0
    t0 = time.perf_counter()
    stored = run.store.chunks_of(source)
    run.timers["write"] += time.perf_counter() - t0
    if is_current(stored, digest, options):
        report.skipped += 1
        report.chunks += len(stored)
        return
    t0 = time.perf_counter()
    try:
        chunks = chunker.chunk_bytes(data, source=source, format=fmt)
    except ChunkwiseError as e:  # one bad file never stops the corpus; old chunks stay
        report.failed.append((source, _reason(e, source)))
        return
    finally:
        run.timers["parse_chunk"] += time.perf_counter() - t0
    plan = plan_file(source, chunks, stored, digest, options)
    report.chunks += len(chunks)
    if plan.embed or plan.refresh or plan.stale:
        report.changed += 1
        run.add(plan)
    else:
        report.skipped += 1


def _reason(e: BaseException, source: str) -> str:
    reason = getattr(e, "reason", None) or str(e)
    prefix = f"{source}: "
    reason = reason[len(prefix):] if reason.startswith(prefix) else reason
    return " ".join(reason.split())


def _under(source: str, roots: list[Path]) -> bool:
    parts = PurePath(source).parts
    return any(parts[:len(r.parts)] == r.parts for r in roots)


def _prune(store: _Store, roots: list[Path], present: set[str], report: IngestReport) -> None:
    t0 = time.perf_counter()
    for source, ids in sorted(store.sources().items()):
        if source in present or not _under(source, roots):
            continue
        store.delete(ids)
        report.pruned_files += 1
        report.pruned_chunks += len(ids)
        log.info("pruned %s (%d chunks)", source, len(ids))
    report.seconds["prune"] = time.perf_counter() - t0


# -- query ----------------------------------------------------------------------------------
def query(text: str, *, k: int = 5, where: Mapping[str, Any] | None = None, client: Any = None,
          db_path: str | os.PathLike | None = None, host: str | None = None,
          port: int | None = None, collection: str = DEFAULT_COLLECTION, embedder: Any = None,
          retry_delays: Sequence[float] = RETRY_DELAYS) -> list[Hit]:
    """The `k` chunks nearest to `text`, best first, optionally filtered by a Chroma `where`
    clause on metadata (e.g. `{"format": "pdf"}`). The query is embedded with the embedder the
    collection was built with unless `embedder` is given."""
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"the query must be a non-empty string, got {text!r}")
    c = connect(client=client, db_path=db_path, host=host, port=port, create=False,
                retry_delays=retry_delays)
    col = _open_for_query(c, collection, retry_delays)
    emb = _query_embedder(col, embedder)
    vector = _as_rows(emb.embed_queries([text]))
    try:
        got = with_retries(lambda: col.query(query_embeddings=vector, n_results=k,
                                             where=dict(where) if where else None,
                                             include=["documents", "metadatas", "distances"]),
                           "query", retry_delays)
    except ChunkwiseError:
        raise
    except Exception as e:
        raise StoreError(f"query failed: {type(e).__name__}: {e}") from e
    return [_hit(i, d, m, dist) for i, d, m, dist in
            zip(got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0])]


def search_exact(texts: Sequence[str], *, k: int = 5, client: Any = None,
                 db_path: str | os.PathLike | None = None, host: str | None = None,
                 port: int | None = None, collection: str = DEFAULT_COLLECTION,
                 embedder: Any = None, page: int = 1000) -> list[list[Hit]]:
    """The `k` nearest chunks to each of `texts`, found by comparing every stored vector
    (brute force) instead of walking Chroma's HNSW graph: no approximation, so the same
    collection and queries always give the same ranking (ties broken by id). Distances are
    those of the collection's space (`cosine`, `l2` squared, or `ip`), as `query` reports
    them. Meant for evaluation: it reads the whole collection once per call."""
    import numpy as np

    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    if not texts:
        return []
    c = connect(client=client, db_path=db_path, host=host, port=port, create=False)
    col = _open_for_query(c, collection, RETRY_DELAYS)
    emb = _query_embedder(col, embedder)
    queries = np.asarray(_as_rows(emb.embed_queries(list(texts))), dtype=np.float32)
    ids: list[str] = []
    docs: list[str | None] = []
    metas: list[Any] = []
    blocks = []
    for got in _pages(lambda offset: with_retries(
            lambda: col.get(include=["documents", "metadatas", "embeddings"], limit=page,
                            offset=offset), "read", RETRY_DELAYS), page):
        ids += got["ids"]
        docs += got["documents"]
        metas += got["metadatas"]
        if len(got["ids"]):
            blocks.append(np.asarray(got["embeddings"], dtype=np.float32))
    if not ids:
        return [[] for _ in texts]
    stored = np.concatenate(blocks)
    space = _space(col)
    dots = queries @ stored.T
    if space == "ip":
        dist = 1.0 - dots
    elif space == "l2":
        dist = ((queries * queries).sum(1)[:, None] + (stored * stored).sum(1)[None, :]
                - 2.0 * dots)
    else:
        qn = np.linalg.norm(queries, axis=1)[:, None]
        sn = np.linalg.norm(stored, axis=1)[None, :]
        dist = 1.0 - dots / np.maximum(qn * sn, 1e-12)
    order = np.argsort(ids, kind="stable")  # ties: smaller id first
    out = []
    for row in dist[:, order]:
        best = np.argsort(row, kind="stable")[:k]
        out.append([_hit(ids[order[i]], docs[order[i]], metas[order[i]], float(row[i]))
                    for i in best])
    return out


def _space(col: Any) -> str:
    """The distance space of a collection (`cosine`, `l2` or `ip`)."""
    conf = getattr(col, "configuration", None) or {}
    for key in ("hnsw", "spann"):
        space = (conf.get(key) or {}).get("space") if isinstance(conf, Mapping) else None
        if space:
            return str(space)
    return str((col.metadata or {}).get("hnsw:space", "l2"))


def _query_embedder(col: Any, embedder: Any) -> Any:
    """The embedder for queries on `col`: `embedder`, else the one it was built with; a
    different model than the stored vectors' is a `StoreError`."""
    from .embeddings import resolve_embedder

    stored_spec = (col.metadata or {}).get(_COLLECTION_SPEC)
    emb = resolve_embedder(embedder if embedder is not None else stored_spec)
    stored_identity = (col.metadata or {}).get(_COLLECTION_EMBEDDER)
    if stored_identity and stored_identity != emb.identity:
        raise StoreError(f"collection {col.name!r} holds vectors of {stored_identity}, "
                         f"not {emb.identity}; query with the embedder it was built with")
    return emb


def _open_for_query(client: Any, name: str, delays: Sequence[float]) -> Any:
    from chromadb.errors import NotFoundError

    try:
        return with_retries(lambda: client.get_collection(name), f"open collection {name!r}",
                            delays)
    except NotFoundError as e:
        raise StoreError(f"no collection {name!r}; run `chunkwise ingest` first") from e
    except ChunkwiseError:
        raise
    except Exception as e:
        raise StoreError(f"cannot open collection {name!r}: {type(e).__name__}: {e}") from e


def _hit(id_: str, doc: str | None, meta: Mapping[str, Any] | None, dist: float) -> Hit:
    meta = dict(meta or {})
    path = meta.get("section_path_list")
    if not isinstance(path, list):
        joined = meta.get("section_path") or ""
        path = joined.split(" > ") if joined else []
    return Hit(id=id_, source=str(meta.get("source", "")), text=doc or "",
               distance=float(dist), section_path=tuple(path),
               page_start=meta.get("page_start"), page_end=meta.get("page_end"),
               context=str(meta.get("context", "")), metadata=meta)


def iter_collection(*, client: Any = None, db_path: str | os.PathLike | None = None,
                    host: str | None = None, port: int | None = None,
                    collection: str = DEFAULT_COLLECTION,
                    page: int = 1000) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(id, document, metadata) of every record, paged; for exports and tests."""
    c = connect(client=client, db_path=db_path, host=host, port=port, create=False)
    col = _open_for_query(c, collection, RETRY_DELAYS)
    for got in _pages(lambda offset: col.get(include=["documents", "metadatas"], limit=page,
                                             offset=offset), page):
        yield from zip(got["ids"], got["documents"], (m or {} for m in got["metadatas"]))


def _pages(fetch: Callable[[int], Any], page: int) -> Iterator[Any]:
    """`fetch(offset)` for offset 0, page, 2 * page, … up to the first short page."""
    offset = 0
    while True:
        got = fetch(offset)
        yield got
        if len(got["ids"]) < page:
            return
        offset += page
