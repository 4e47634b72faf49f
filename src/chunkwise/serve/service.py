"""The read-only service behind `chunkwise serve`: one opened collection, one loaded
embedding model, and the four questions a client may ask of them (search, fetch, sources,
health), each taking a JSON object and returning one.

Both front ends (`http`, the JSON endpoints; `mcp`, the MCP tools) call these methods and
nothing else, so a request is checked in one place: every parameter named, typed and
bounded (`LIMITS`), an unknown one refused (a misspelt `where` would otherwise search
everything). A bad request is a `ConfigError`, an id the collection does not hold a
`NotFound`, a store that fails a `StoreError`; the front ends turn each into a status and
one line.

    >>> service = Service(db_path="chunkwise-db")
    >>> service.search({"query": "trailing slash redirect", "k": 3})["hits"][0]["source"]

The model is loaded once, when the service is built, and every embedding goes through one
lock: a request never waits for a load, and an embedder that is not safe to call from
several threads (a user's `module:attr`) is still called by one at a time.

An embedded database written by another process while the service has it open (a
`chunkwise ingest` beside it) is reopened before the next request: Chroma's embedded client
keeps the state it loaded, and its next read of a record written since fails ("Error
finding id"). The database's files are looked at (one `stat` each) before every request;
when they changed, new requests wait while those in flight finish, the client is closed and
opened again.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..errors import ChunkwiseError, ConfigError

log = logging.getLogger(__name__)

__all__ = ["LIMITS", "Limits", "NotFound", "Service"]


class NotFound(ChunkwiseError):
    """The collection holds no record with the id asked for."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may ask for; larger requests are refused, not cut."""

    body: int = 64 * 1024
    """bytes of a request body (the JSON endpoints, MCP's HTTP transport)"""
    k: int = 100
    """results of one search"""
    query: int = 4096
    """characters of a query text (a question, not a document)"""
    contains: int = 1024
    """characters of a `contains` text"""
    expand_tokens: int = 4096
    """tokens of a section returned with a chunk"""


LIMITS = Limits()
#: tokens of the parent section `fetch` returns unless told (as `query --expand section`)
DEFAULT_SECTION_TOKENS = 512


class Service:
    """The collection `collection` of an embedded database (`db_path`) or a Chroma server
    (`host`, `port`), opened for reading, with its embedder loaded (`embedder`: a spec or
    object, default the one the collection was built with).
    Thread-safe: the HTTP server calls it from a thread per request."""

    def __init__(self, *, db_path: str | os.PathLike | None = None, host: str | None = None,
                 port: int | None = None, collection: str | None = None,
                 embedder: Any = None, lexical: str | os.PathLike | bool = True,
                 retry_delays: Sequence[float] | None = None, timeout: float | None = None,
                 limits: Limits = LIMITS) -> None:
        from ..chroma.store import (DEFAULT_COLLECTION, DEFAULT_TIMEOUT, RETRY_DELAYS, connect,
                                    lexical_location, open_collection, persist_directory,
                                    query_embedder)

        self.limits = limits
        self.name = collection or DEFAULT_COLLECTION
        self.delays = tuple(RETRY_DELAYS if retry_delays is None else retry_delays)
        self._connect = lambda: connect(db_path=db_path, host=host, port=port, create=False,
                                        retry_delays=self.delays,
                                        timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
        self.client = self._connect()
        self.lexical = lexical
        self._gate = _Gate()
        self._folder = persist_directory(self.client)
        self._stamp = self._files()
        self.reopened = 0
        """How many times the database was reopened after another process wrote it."""
        col = open_collection(self.client, self.name, self.delays)
        emb = query_embedder(col, embedder)
        if emb.load is not None:
            emb.load()  # now, not on the first request
        self.embedder = locked(emb)
        words = lexical_location(self.client, lexical)
        self.has_lexical = words is not None and words.is_file()

    # -- the four requests ----------------------------------------------------------------
    def health(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The collection's name and size, the model, whether a word index is there."""
        with self._current():
            return self._health(params)

    def search(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """`{"query": TEXT, "k": 5, "mode": "hybrid", "where": {...}, "contains": TEXT,
        "expand": "section", "expand_tokens": 512}`: the best hits, as `chunkwise query
        --json` prints them (`chunkwise.chroma.search`)."""
        with self._current():
            return self._search(params)

    def fetch(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """`{"id": ID, "section": true, "tokens": 512}`: the chunk stored under `id` and, with
        `section`, its parent section rebuilt from the chunks inside it within `tokens`
        (`chunkwise.chroma.expand`); `section` is null for a chunk that records none."""
        with self._current():
            return self._fetch(params)

    def sources(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """`{"contains": TEXT}` (optional, a part of the name): every source the collection
        holds, with its format and record count, sorted by name; one paged read of the
        collection's metadata."""
        with self._current():
            return self._sources(params)

    # -- another writer -------------------------------------------------------------------
    def _files(self) -> tuple[Any, ...] | None:
        """(mtime, size) of the embedded database's SQLite files; None for a server."""
        if self._folder is None:
            return None
        out = []
        for name in ("chroma.sqlite3", "chroma.sqlite3-wal"):
            try:
                st = (Path(self._folder) / name).stat()
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    @contextmanager
    def _current(self) -> Iterator[None]:
        """A request on the database as it is now: reopened first if another process wrote
        it since it was opened (module docstring)."""
        if self._files() != self._stamp:
            with self._gate.alone():
                stamp = self._files()
                if stamp != self._stamp:
                    log.info("%s was written by another process: reopening it", self._folder)
                    close = getattr(self.client, "close", None)
                    if close is not None:
                        close()
                    self.client = self._connect()
                    self._stamp = self._files()  # opening may write (Chroma's own upkeep)
                    self.reopened += 1
        with self._gate.shared():
            yield

    def _health(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        _known(params or {}, ())
        return {"ok": True, "collection": self.name, "records": self._count(),
                "embedder": self.embedder.identity, "lexical": self.has_lexical,
                "limits": {"k": self.limits.k, "query": self.limits.query,
                           "body": self.limits.body}}

    def _search(self, params: Mapping[str, Any]) -> dict[str, Any]:
        from ..chroma.search import MODES, search

        _known(params, ("query", "k", "mode", "where", "contains", "expand", "expand_tokens"))
        text = _text(params, "query", self.limits.query, required=True)
        k = _int(params, "k", 5, self.limits.k)
        mode = params.get("mode", "hybrid")
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {mode!r:.40}")
        where = where_filter(params.get("where"))
        contains = _text(params, "contains", self.limits.contains)
        expand = params.get("expand")
        if expand not in (None, "section"):
            raise ConfigError(f"expand must be \"section\" or absent, got {expand!r:.40}")
        tokens = _int(params, "expand_tokens", DEFAULT_SECTION_TOKENS, self.limits.expand_tokens)
        hits = search(text, k=k, mode=mode, where=where, contains=contains, client=self.client,
                      collection=self.name, embedder=self.embedder, lexical=self.lexical,
                      retry_delays=self.delays)
        if expand == "section":
            from ..chroma.queries import expand_hits

            hits = expand_hits(hits, tokens=tokens, client=self.client, collection=self.name)
        return {"query": text, "mode": mode, "k": k, "hits": [hit_dict(h) for h in hits]}

    def _fetch(self, params: Mapping[str, Any]) -> dict[str, Any]:
        from ..chroma.queries import expand_hits, hit_of, space_of
        from ..chroma.store import open_collection, with_retries

        _known(params, ("id", "section", "tokens"))
        id_ = _text(params, "id", 256, required=True)
        section = params.get("section", True)
        if not isinstance(section, bool):
            raise ConfigError(f"section must be true or false, got {section!r:.40}")
        tokens = _int(params, "tokens", DEFAULT_SECTION_TOKENS, self.limits.expand_tokens)
        col = open_collection(self.client, self.name, self.delays)
        got = with_retries(lambda: col.get(ids=[id_], include=["documents", "metadatas"]),
                           "read a record", self.delays)
        if not got["ids"]:
            raise NotFound(f"no chunk with id {id_!r} in collection {self.name!r}")
        hit = replace(hit_of(got["ids"][0], got["documents"][0], got["metadatas"][0], math.nan,
                             space_of(col)), distance=None)
        out: dict[str, Any] = {"chunk": hit_dict(hit), "section": None}
        if section:
            wide = expand_hits([hit], tokens=tokens, client=self.client, collection=self.name)[0]
            if "expanded" in wide.metadata:
                m = wide.metadata
                out["section"] = {
                    "id": m.get("parent_id"), "text": wide.text, "start": m["start"],
                    "end": m["end"], "tokens": m["tokens"], "chunks": m["expanded"],
                    "section_start": m.get("parent_start"), "section_end": m.get("parent_end"),
                    "section_path": _path(m.get("parent_path"))}
        return out

    def _sources(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        from ..chroma.store import open_collection, paged, with_retries

        params = params or {}
        _known(params, ("contains",))
        part = _text(params, "contains", self.limits.contains)
        col = open_collection(self.client, self.name, self.delays)
        found: dict[str, dict[str, Any]] = {}
        for got in paged(lambda offset: with_retries(
                lambda: col.get(include=["metadatas"], limit=1000, offset=offset),
                "read the collection", self.delays), 1000):
            for meta in got["metadatas"]:
                meta = meta or {}
                source = str(meta.get("source", ""))
                if part and part not in source:
                    continue
                row = found.setdefault(source, {"source": source,
                                                "format": meta.get("format"), "records": 0})
                row["records"] += 1
        rows = [found[s] for s in sorted(found)]
        return {"collection": self.name, "count": len(rows), "sources": rows}

    def _count(self) -> int:
        from ..chroma.store import open_collection, with_retries

        col = open_collection(self.client, self.name, self.delays)
        return int(with_retries(col.count, "count", self.delays))


# -- helpers --------------------------------------------------------------------------------
class _Gate:
    """Requests share the client (`shared`); a reopen has it alone (`alone`: it waits for
    the requests in flight, and new ones wait for it)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def alone(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: self._readers == 0)
            yield


def locked(emb: Any) -> Any:
    """`emb` (an `Embedder`) with every embedding serialised by one lock."""
    lock = threading.Lock()

    def guard(fn: Callable[[Sequence[str]], Any] | None) -> Callable[[Sequence[str]], Any] | None:
        if fn is None:
            return None

        def call(texts: Sequence[str]) -> Any:
            with lock:
                return fn(texts)
        return call
    return replace(emb, embed=guard(emb.embed), query_embed=guard(emb.query_embed))


def hit_dict(hit: Any) -> dict[str, Any]:
    """A hit as JSON: `Hit.to_dict()`, with no NaN (not JSON) anywhere in it."""
    out = hit.to_dict()
    if out["distance"] is not None and not math.isfinite(out["distance"]):
        out["distance"] = None
    return out


def where_filter(where: Any) -> dict[str, Any] | None:
    """A `where` parameter checked by Chroma's own validator: a JSON object; several keys at
    the top are joined with `$and` (Chroma takes one key or one operator there)."""
    if where is None or where == {}:
        return None
    if not isinstance(where, dict):
        raise ConfigError("where must be a JSON object, e.g. {\"format\": \"pdf\"}")
    if len(where) > 1 and not any(str(key).startswith("$") for key in where):
        where = {"$and": [{key: value} for key, value in where.items()]}
    from chromadb.api.types import validate_where

    try:
        validate_where(where)
    except ValueError as e:
        raise ConfigError(f"where is not a Chroma filter: {e}") from e
    return where


def _known(params: Mapping[str, Any], names: Sequence[str]) -> None:
    if not isinstance(params, Mapping):
        raise ConfigError("the request must be a JSON object")
    unknown = sorted(str(p) for p in params if p not in names)
    if unknown:
        allowed = ", ".join(names) or "none"
        raise ConfigError(f"unknown parameter {unknown[0]!r:.60} (known: {allowed})")


def _text(params: Mapping[str, Any], name: str, limit: int, *,
          required: bool = False) -> str | None:
    value = params.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{name} must be a non-empty string")
    if len(value) > limit:
        raise ConfigError(f"{name} is {len(value)} characters long; at most {limit}")
    return value


def _int(params: Mapping[str, Any], name: str, default: int, limit: int) -> int:
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise ConfigError(f"{name} must be an integer from 1 to {limit}, got {value!r:.40}")
    return value


def _path(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return value.split(" > ") if isinstance(value, str) and value else []
