"""The Chroma store: connecting (embedded or a `chroma run` server, every call bounded in
time and retried while the server is unreachable), opening or creating the one collection
chunkwise writes (checked against the embedder its vectors came from), and `Store`, which
writes records in batches and reads what is stored per source for incremental runs.

The records themselves are `records`; reading a collection for answers is `queries`;
writing a folder into a collection is the ingestion pipeline's job (`chunkwise.pipeline`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..errors import ChunkwiseError, ConfigError, StoreError, no_space_message
from .records import SCHEMA

log = logging.getLogger(__name__)

DEFAULT_DB = "chunkwise-db"
DEFAULT_COLLECTION = "chunkwise"
#: HNSW candidates kept while searching. Chroma's 100 leaves out true nearest chunks: on
#: one collection of the shared corpus (16,871 chunks, 442 real questions) recall@10 is
#: 0.964 and the nearest chunk is missing from the 10 returned for 14 questions; 1,600 gives
#: 0.999 and none, for about a millisecond more a query (`tests/bench/hnsw_recall.py`,
#: docs/retrieval.md)
HNSW_EF_SEARCH = 1600
#: what collections chunkwise made before got (its own earlier setting, Chroma's defaults):
#: raised to `HNSW_EF_SEARCH` by the next ingest or `check --repair`; any other value is a
#: user's choice and stays
EARLIER_EF_SEARCH = (10, 100)
#: the HNSW graph: links per node and candidates kept while inserting. Chroma's 16 and 100
#: build a graph a wide search still gets lost in where chunks cluster (the rows of a CSV
#: file, written file after file): on the whole shared corpus (49,836 chunks) recall@10
#: 0.891 at search width 1,600, and 928 chunks no query reaches (`check` fails); 32 and 400
#: give 0.999 and 149, for a write about 15% slower (docs/retrieval.md)
HNSW_MAX_NEIGHBORS = 32
HNSW_EF_CONSTRUCTION = 400
#: the graph collections chunkwise made before got (Chroma's defaults): `check --repair`
#: rebuilds it (Chroma cannot change a built graph's settings)
EARLIER_GRAPH = (16, 100)
#: seconds to wait before each retry of a store call that failed to reach the server
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
_COLLECTION_EMBEDDER = "chunkwise_embedder"
_COLLECTION_SPEC = "chunkwise_embedder_spec"
#: collection metadata: the folder (absolute) every stored `source` is relative to
COLLECTION_ROOT = "chunkwise_root"
#: seconds a call to a Chroma server may take before it is given up (`--timeout`)
DEFAULT_TIMEOUT = 60.0


def hnsw_configuration() -> dict[str, Any]:
    """The index configuration of every collection chunkwise creates (a new dict each time:
    Chroma may keep what it is given)."""
    return {"hnsw": {"space": "cosine", "ef_search": HNSW_EF_SEARCH,
                     "max_neighbors": HNSW_MAX_NEIGHBORS,
                     "ef_construction": HNSW_EF_CONSTRUCTION}}


def hnsw_setting(col: Any, key: str) -> int | None:
    """One HNSW setting of a collection (`ef_search`, `max_neighbors`, `ef_construction`);
    None: not an HNSW collection, or a client that does not say."""
    conf = getattr(col, "configuration", None) or {}
    value = (conf.get("hnsw") or {}).get(key) if isinstance(conf, Mapping) else None
    return int(value) if isinstance(value, int) else None


def ef_search(col: Any) -> int | None:
    """The HNSW `ef_search` a collection searches with."""
    return hnsw_setting(col, "ef_search")


def graph(col: Any) -> tuple[int | None, int | None]:
    """`(max_neighbors, ef_construction)` the collection's HNSW graph was built with."""
    return hnsw_setting(col, "max_neighbors"), hnsw_setting(col, "ef_construction")


# -- connection and retries -----------------------------------------------------------------
def _transient(e: BaseException) -> bool:
    """Errors worth retrying: the server cannot be reached (refused, reset, name not found).
    A server that accepted the request but did not answer in time is frozen or overloaded:
    retrying would multiply the wait, so a timeout is final."""
    try:
        import httpx
    except ImportError:  # pragma: no cover - a chromadb dependency
        httpx = None
    if httpx is not None and isinstance(e, httpx.TimeoutException):
        return False
    if httpx is not None and isinstance(e, httpx.TransportError):
        return True
    if isinstance(e, (ConnectionError, TimeoutError)):
        return isinstance(e, ConnectionError)
    return isinstance(e, ValueError) and "Could not connect" in str(e)


def _timed_out(e: BaseException) -> bool:
    try:
        import httpx
    except ImportError:  # pragma: no cover
        return isinstance(e, TimeoutError)
    return isinstance(e, (httpx.TimeoutException, TimeoutError))


def with_retries(fn: Callable[[], Any], what: str, delays: Sequence[float] = RETRY_DELAYS) -> Any:
    """Call `fn`; on a transient failure wait and retry (exponential backoff), then raise a
    `StoreError` naming the operation and the cause. A timeout is a `StoreError` at once."""
    for attempt in range(len(delays) + 1):
        try:
            return fn()
        except Exception as e:
            if _timed_out(e):
                raise StoreError(f"Chroma did not answer in time while trying to {what} "
                                 "(server frozen or overloaded?); --timeout sets the limit") from e
            if not _transient(e):
                raise
            if attempt == len(delays):
                raise StoreError(f"Chroma unreachable while trying to {what} "
                                 f"({attempt + 1} attempts): {type(e).__name__}: {e}") from e
            log.warning("Chroma unreachable (%s: %s); retrying in %.1fs", type(e).__name__, e,
                        delays[attempt])
            time.sleep(delays[attempt])
    raise AssertionError("unreachable")  # pragma: no cover


def check_server(host: str | None, port: int | None) -> tuple[str, int]:
    """(host, port) of a Chroma server, validated: `ConfigError` for an impossible one."""
    h = "localhost" if host is None else host
    if not isinstance(h, str) or not h.strip() or any(c.isspace() or c in "/?#@" for c in h):
        raise ConfigError(f"invalid Chroma server host {h!r}: give a host name or address, "
                          "without scheme or path")
    p = 8000 if port is None else port
    if isinstance(p, bool) or not isinstance(p, int) or not 1 <= p <= 65535:
        raise ConfigError(f"invalid Chroma server port {p!r}: it must be 1 to 65535")
    return h, p


def connect(*, client: Any = None, db_path: str | os.PathLike | None = None,
            host: str | None = None, port: int | None = None, create: bool = True,
            retry_delays: Sequence[float] = RETRY_DELAYS,
            timeout: float | None = DEFAULT_TIMEOUT) -> Any:
    """A Chroma client: `client` as given, an `HttpClient` when `host` or `port` is set (each
    request limited to `timeout` seconds), else a `PersistentClient` on `db_path` (default
    `./chunkwise-db`; with `create=False` a missing directory is an error instead of a new
    empty database)."""
    if client is not None:
        if db_path is not None or host is not None or port is not None:
            raise ConfigError("give either a client or a database location, not both")
        return client
    if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if host is not None or port is not None:
        if db_path is not None:
            raise ConfigError("give either a database directory or a server, not both")
        h, p = check_server(host, port)
        c = with_retries(lambda: _http_client(chromadb, h, p, settings, timeout),
                         f"connect to {h}:{p}", retry_delays)
        return c
    path = Path(db_path if db_path is not None else DEFAULT_DB)
    if not create and not (path / "chroma.sqlite3").is_file():
        # a read never creates a database: Chroma would make one in any folder it is given
        what = "the folder holds none" if path.is_dir() else \
            "it is a file" if path.exists() else "no such folder"
        raise StoreError(f"no Chroma database at {path} ({what}); run `chunkwise ingest` first")
    try:
        # Chroma caches clients by path string: an absolute path keeps "db" in two working
        # directories apart.
        return chromadb.PersistentClient(path=str(path.resolve()), settings=settings)
    except Exception as e:
        raise StoreError(f"cannot open Chroma database {path}: {e}") from e


def _http_client(chromadb: Any, host: str, port: int, settings: Any, timeout: float | None) -> Any:
    """An `HttpClient` whose every request gives up after `timeout` seconds. Chroma builds its
    httpx session with no timeout at all (a frozen server hangs the caller for ever) and
    offers no setting for it, so the session's timeout is set on the client it made; the
    requests the constructor itself makes are bounded by running it on a daemon thread."""
    box: dict[str, Any] = {}

    def build() -> None:
        try:
            box["client"] = chromadb.HttpClient(host=host, port=port, settings=settings)
        except BaseException as e:  # handed to the caller
            box["error"] = e

    worker = threading.Thread(target=build, name="chunkwise-connect", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"no answer from {host}:{port} within {timeout:g} s")
    if "error" in box:
        raise box["error"]
    c = box["client"]
    session = getattr(getattr(c, "_server", None), "_session", None)
    if session is not None and timeout is not None:
        import httpx

        session.timeout = httpx.Timeout(timeout)
    return c


def persist_directory(client: Any) -> Path | None:
    """The folder of an embedded (persistent) client, None for a server."""
    try:
        settings = client.get_settings()
    except Exception:  # noqa: BLE001 - not a chromadb client we know
        return None
    if getattr(settings, "is_persistent", False) and getattr(settings, "persist_directory", None):
        return Path(settings.persist_directory)
    return None


#: free bytes below which a refused write is put down to a full disk
_FULL = 16 * 1024 ** 2


def disk_full(client: Any) -> str:
    """The message for a write Chroma refused because the disk of an embedded database is
    full (Chroma says only "Error in compaction: Failed to apply logs…"), else ""."""
    import shutil

    try:
        folder = client.get_settings().persist_directory
        free = shutil.disk_usage(folder).free if folder else None
    except Exception:  # a server client, or a folder gone
        return ""
    if free is None or free >= _FULL:
        return ""
    return no_space_message(folder)


class Store:
    """The chunkwise collection of one client, every call retried on transient failures and
    converted to `StoreError` on others."""

    def __init__(self, client: Any, name: str, embedder: Any, *, create: bool,
                 retry_delays: Sequence[float] = RETRY_DELAYS,
                 lexical: str | os.PathLike | bool = True) -> None:
        self.client = client
        self.name = name
        self.embedder = embedder
        self.delays = retry_delays
        self.collection = self._open(create)
        self.max_batch = max(1, int(self._call(client.get_max_batch_size, "read the batch size")))
        self.lexical_path = lexical_location(client, lexical)
        """The file of the collection's lexical index (`chroma.lexical`): written with the
        vectors by every upsert and delete; None: no lexical leg (a server given no path)."""
        self._lexical: Any = None

    def _call(self, fn: Callable[[], Any], what: str) -> Any:
        try:
            return with_retries(fn, what, self.delays)
        except ChunkwiseError:
            raise
        except Exception as e:
            full = disk_full(self.client)
            if full:
                raise StoreError(full) from e
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
        return self.raise_ef_search(col) if create else col

    def raise_ef_search(self, col: Any) -> Any:
        """`col`, given today's `HNSW_EF_SEARCH` if chunkwise made it with an earlier one
        (`EARLIER_EF_SEARCH`), read again then. Chroma searches with it the next time the
        database is opened (an embedded client keeps the index it has loaded). A graph built
        with the settings of before (`EARLIER_GRAPH`) cannot be changed: a warning says that
        `check --repair` rebuilds it."""
        before = ef_search(col)
        if before in EARLIER_EF_SEARCH:
            self._call(lambda: col.modify(configuration={"hnsw": {
                "ef_search": HNSW_EF_SEARCH}}), "set the index's ef_search")
            log.info("%s: HNSW ef_search raised from %d to %d (the nearest chunks a query "
                     "may miss: docs/retrieval.md)", self.name, before, HNSW_EF_SEARCH)
            col = self._call(lambda: self.client.get_collection(self.name),
                             f"open collection {self.name!r}")
        if graph(col) == EARLIER_GRAPH:
            log.warning("%s: its index graph was built with max_neighbors %d and "
                        "ef_construction %d, which lose nearest chunks; `chunkwise check "
                        "--repair` rebuilds it with %d and %d (nothing is embedded again)",
                        self.name, *EARLIER_GRAPH, HNSW_MAX_NEIGHBORS, HNSW_EF_CONSTRUCTION)
        return col

    def _create(self) -> Any:
        e = self.embedder
        metadata = {_COLLECTION_EMBEDDER: e.identity, "chunkwise_schema": SCHEMA}
        if e.spec:
            metadata[_COLLECTION_SPEC] = e.spec
        return self._call(lambda: self.client.get_or_create_collection(
            self.name, embedding_function=e.chroma_function, metadata=metadata,
            configuration=hnsw_configuration()),
            f"create collection {self.name!r}")

    def _check_embedder(self, col: Any) -> None:
        stored = (col.metadata or {}).get(_COLLECTION_EMBEDDER)
        if stored is None:
            if self._call(col.count, "count") == 0:  # adopt an empty collection
                metadata = {**(col.metadata or {}), _COLLECTION_EMBEDDER: self.embedder.identity,
                            "chunkwise_schema": SCHEMA}
                if self.embedder.spec:
                    metadata[_COLLECTION_SPEC] = self.embedder.spec
                self._call(lambda: col.modify(metadata=metadata), "set collection metadata")
                return
            raise StoreError(f"collection {self.name!r} was not made by chunkwise (no "
                             f"{_COLLECTION_EMBEDDER} metadata); use another collection")
        if stored != self.embedder.identity:
            raise StoreError(f"collection {self.name!r} holds vectors of {stored}, not "
                             f"{self.embedder.identity}; use the same embedder or another collection")

    # -- collection metadata --------------------------------------------------------------
    @property
    def root(self) -> str | None:
        """The folder the stored sources are relative to, as recorded by the first ingest."""
        return (self.collection.metadata or {}).get(COLLECTION_ROOT)

    def set_root(self, root: str) -> None:
        metadata = {**(self.collection.metadata or {}), COLLECTION_ROOT: root,
                    "chunkwise_schema": SCHEMA}
        self._call(lambda: self.collection.modify(metadata=metadata), "record the root")
        self.collection = self._call(lambda: self.client.get_collection(self.name),
                                     f"open collection {self.name!r}")

    def count(self) -> int:
        return int(self._call(self.collection.count, "count"))

    # -- reads --------------------------------------------------------------------------
    def chunks_of(self, source: str) -> dict[str, dict[str, Any]]:
        """id -> metadata of every chunk stored for `source`."""
        got = self._call(lambda: self.collection.get(where={"source": source},
                                                     include=["metadatas"]),
                         f"read the chunks of {source}")
        return dict(zip(got["ids"], (m or {} for m in got["metadatas"])))

    def pages(self, include: Sequence[str] = ("metadatas",)) -> Iterator[Any]:
        """The whole collection, a page at a time."""
        page = max(100, min(self.max_batch, 5000))
        return paged(lambda offset: self._call(
            lambda: self.collection.get(include=list(include), limit=page, offset=offset),
            "read the collection"), page)

    def summary(self, hashes: set[str] | None = None) -> dict[str, SourceState]:
        """source -> what is stored for it (hash, options, complete or not), over the whole
        collection in one paged pass: a file whose state matches its bytes is not re-read.
        `hashes`, when given, gets every stored `embed_hash` in the same pass."""
        states: dict[str, SourceState] = {}
        for got in self.pages():
            for meta in got["metadatas"]:
                meta = meta or {}
                if hashes is not None and meta.get("embed_hash"):
                    hashes.add(str(meta["embed_hash"]))
                source = str(meta.get("source", ""))
                state = states.get(source)
                key = (meta.get("content_hash"), meta.get("options"),
                       meta.get("record_count", meta.get("chunk_count")))
                if state is None:
                    states[source] = SourceState(*key, stored=1)
                else:
                    state.stored += 1
                    if (state.content_hash, state.options, state.chunk_count) != key:
                        state.mixed = True
        return states

    def ids_of_sources(self, sources: set[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for got in self.pages():
            for id_, meta in zip(got["ids"], got["metadatas"]):
                source = str((meta or {}).get("source", ""))
                if source in sources:
                    out.setdefault(source, []).append(id_)
        return out

    def vectors_by_hash(self, hashes: Sequence[str]) -> dict[str, Any]:
        """embed_hash -> a stored vector with that hash, for those of `hashes` stored."""
        out: dict[str, Any] = {}
        unique = sorted(set(hashes))
        for lo in range(0, len(unique), 500):
            part = unique[lo:lo + 500]
            try:
                got = self._call(lambda: self.collection.get(
                    where={"embed_hash": {"$in": part}}, include=["metadatas", "embeddings"]),
                    "read stored vectors")
            except StoreError as e:  # reuse saves time, nothing more: embed these anew
                log.info("stored vectors not reused: %s", e)
                continue
            for meta, vector in zip(got["metadatas"], got["embeddings"]):
                h = (meta or {}).get("embed_hash")
                if h and vector is not None and len(vector):
                    out.setdefault(h, vector)
        return out

    # -- the lexical leg -----------------------------------------------------------------
    @property
    def lexical(self) -> Any:
        """The collection's `LexicalIndex`, opened for writing on first use; None without
        one."""
        if self._lexical is None and self.lexical_path is not None:
            from .lexical import LexicalIndex

            self._lexical = LexicalIndex(self.lexical_path, self.name)
        return self._lexical

    def all_ids(self) -> set[str]:
        """Every id the collection holds (one paged pass, ids only)."""
        return {i for got in self.pages(include=()) for i in got["ids"]}

    def records(self, ids: Sequence[str]) -> Iterator[tuple[str, str | None, str]]:
        """(id, document, context) of the stored records `ids`, for the lexical index."""
        for lo in range(0, len(ids), 500):
            part = list(ids[lo:lo + 500])
            got = self._call(lambda: self.collection.get(ids=part,
                                                         include=["documents", "metadatas"]),
                             "read stored records")
            for id_, doc, meta in zip(got["ids"], got["documents"], got["metadatas"]):
                yield id_, doc, str((meta or {}).get("context") or "")

    def sync_lexical(self) -> Any:
        """Make the lexical index hold exactly the collection's records, indexing missing
        ones from their stored text (nothing is embedded): after a run killed between the
        two writes, for a collection written before the index existed or by another program.
        Returns the `SyncReport`, None without a lexical index. Call it holding the lock."""
        if self.lexical is None:
            return None
        from .lexical import sync

        first = self.lexical.count() == 0
        report = sync(self.lexical, self.all_ids(), self.records)
        if report.added and (first or report.rebuilt):
            log.warning("%s: lexical index built from the %d stored records (nothing "
                        "embedded)", self.name, report.added)
        elif report.changed:
            log.info("%s: lexical index %s", self.name, report.summary())
        return report

    # -- writes -------------------------------------------------------------------------
    def upsert(self, ids: list[str], documents: list[str], embeddings: Any,
               metadatas: list[dict[str, Any]]) -> None:
        """Write records to both legs: the vectors (Chroma) first, then the lexical index
        (a run killed between them is completed by the next run's `sync_lexical`)."""
        for lo in range(0, len(ids), self.max_batch):
            hi = lo + self.max_batch
            self._call(lambda: self.collection.upsert(
                ids=ids[lo:hi], documents=documents[lo:hi], embeddings=embeddings[lo:hi],
                metadatas=metadatas[lo:hi]), "upsert chunks")
        if self.lexical is not None:
            self.lexical.upsert(ids, documents, [str(m.get("context") or "") for m in metadatas])

    def update(self, ids: list[str], metadatas: list[dict[str, Any]]) -> None:
        for lo in range(0, len(ids), self.max_batch):
            hi = lo + self.max_batch
            self._call(lambda: self.collection.update(ids=ids[lo:hi], metadatas=metadatas[lo:hi]),
                       "update chunk metadata")

    def delete(self, ids: list[str]) -> None:
        for lo in range(0, len(ids), self.max_batch):
            batch = ids[lo:lo + self.max_batch]
            self._call(lambda: self.collection.delete(ids=batch), "delete chunks")
        if self.lexical is not None:
            self.lexical.delete(ids)

    def close(self) -> None:
        """Close the lexical index's file (Chroma's client closes itself)."""
        if self._lexical is not None:
            self._lexical.close()
            self._lexical = None


def lexical_location(client: Any, lexical: str | os.PathLike | bool | None) -> Path | None:
    """The lexical index file of a store: `lexical` when it is a path, the default file in
    an embedded database's folder when it is True, else None (a server without a path)."""
    if lexical is None or lexical is False:
        return None
    if lexical is not True:
        return Path(lexical)
    folder = persist_directory(client)
    if folder is None:
        return None
    from .lexical import default_path

    return default_path(folder)


@dataclass
class SourceState:
    """What the collection holds for one source."""

    content_hash: str | None
    options: str | None
    chunk_count: int | None
    """Records the source should have: its chunks, fewer where repeated chunks share one."""
    stored: int = 0
    mixed: bool = False

    def current(self, content_hash: str, options: str) -> bool:
        """Whether the stored chunks are exactly those of these bytes and options."""
        return (not self.mixed and self.content_hash == content_hash
                and self.options == options and self.chunk_count == self.stored)


def as_rows(vectors: Any) -> Any:
    """Vectors as a float32 matrix Chroma takes (a list of lists when they are ragged)."""
    try:
        import numpy as np

        return np.asarray(vectors, dtype=np.float32)
    except (ImportError, ValueError):  # ragged or exotic output: let Chroma judge it
        return [list(v) for v in vectors]


# -- opening a collection to read -----------------------------------------------------------
def query_embedder(col: Any, embedder: Any) -> Any:
    """The embedder for queries on `col`: `embedder`, else the one it was built with; a
    different model than the stored vectors' is a `StoreError`."""
    from ..embeddings.functions import resolve_embedder

    stored_spec = (col.metadata or {}).get(_COLLECTION_SPEC)
    emb = resolve_embedder(embedder if embedder is not None else stored_spec)
    stored_identity = (col.metadata or {}).get(_COLLECTION_EMBEDDER)
    if stored_identity and stored_identity != emb.identity:
        raise StoreError(f"collection {col.name!r} holds vectors of {stored_identity}, "
                         f"not {emb.identity}; query with the embedder it was built with")
    return emb


def open_embedder(client: Any, name: str, embedder: Any = None, *, load: bool = True) -> Any:
    """The embedder a collection was built with (or `embedder`, if it is the same model);
    with `load=False` only its identity, enough to open the collection for reading."""
    col = open_collection(client, name, RETRY_DELAYS)
    if not load:
        from ..embeddings.functions import Embedder

        identity = (col.metadata or {}).get(_COLLECTION_EMBEDDER) or "unknown"
        return Embedder(identity=identity, embed=lambda texts: [])
    return query_embedder(col, embedder)


def open_collection(client: Any, name: str, delays: Sequence[float]) -> Any:
    """The collection `name` of `client`, opened for reading: a `StoreError` when there is
    none or it cannot be opened."""
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


# -- paging ---------------------------------------------------------------------------------
def paged(fetch: Callable[[int], Any], page: int) -> Iterator[Any]:
    """`fetch(offset)` for offset 0, page, 2 * page, … up to the first short page."""
    offset = 0
    while True:
        got = fetch(offset)
        yield got
        if len(got["ids"]) < page:
            return
        offset += page
