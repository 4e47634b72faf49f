"""Is every stored chunk findable? A check of a collection's vector index against its
metadata, and the repair.

Chroma keeps a record's metadata and document in SQLite and its vector in an HNSW index on
disk (embedded) or on the server. Two writers at once, a killed compaction or a deleted
or truncated index folder leave records whose vector is gone: `count()` still counts them,
a query silently searches the rest, and an incremental ingest that trusts the metadata
would call their files unchanged for ever. `check` reads every record's vector (a page at
a time, bisecting a page that fails down to the ids that do) and `repair` re-embeds the
missing ones from their stored text and context, with the collection's own embedder, and
writes them back under the same ids and metadata.

    >>> health = check(store)
    >>> health.ok, len(health.missing)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from ..model import embed_text
from .store import (EARLIER_EF_SEARCH, EARLIER_GRAPH, Store, as_rows, ef_search, graph,
                    hnsw_configuration)

log = logging.getLogger(__name__)

#: ids read per call when looking for missing vectors
PAGE = 500
#: records probed by `quick_check` before an ingest
SAMPLE = 256


@dataclass
class Health:
    """What `check` found."""

    collection: str
    records: int
    """Records in the metadata store (`count()`)."""
    missing: list[str] = field(default_factory=list)
    """Ids whose vector cannot be read."""
    searchable: int | None = None
    """Records a query over the whole index returns (None: the query failed)."""
    error: str = ""
    """Why the index could not be queried at all, if it could not."""
    ef_search: int | None = None
    """The HNSW candidates a query keeps (None: the client does not say)."""
    graph: tuple[int | None, int | None] = (None, None)
    """`(max_neighbors, ef_construction)` the HNSW graph was built with."""

    @property
    def ok(self) -> bool:
        """Healthy: every record has a readable vector and a query over the index reaches
        every record (no slack: a record the index cannot reach is never found)."""
        return self._reaches(0)

    @property
    def usable(self) -> bool:
        """Every vector readable and the index answers, with at most `slack` records it does
        not reach (an HNSW graph is approximate: a freshly built one can leave a node or two
        without an edge to it). Not `ok`, so never called healthy; plain `check` exits 0."""
        return self._reaches(slack(self.records))

    def _reaches(self, unreachable: int) -> bool:
        """Every vector readable, the index answering, at most `unreachable` records it
        does not reach."""
        return not self.missing and not self.error and (
            self.searchable is None or self.searchable >= self.records - unreachable)

    def summary(self) -> str:
        """One line: `healthy`, or each thing that is wrong, with its count."""
        if self.ok:
            return "healthy"
        wrong = []
        if self.missing:
            wrong.append(f"{len(self.missing)} of {self.records} records have no readable "
                         f"vector")
        if self.error:
            wrong.append(f"the index does not answer ({self.error})")
        elif self.searchable is not None and self.searchable < self.records:
            wrong.append(f"a query over the index reaches {self.searchable} of "
                         f"{self.records} records ({self.records - self.searchable} "
                         f"unreachable"
                         f"{'; check --repair rebuilds the index' if self.usable else ''})")
        return "; ".join(wrong)

    @property
    def narrow_search(self) -> bool:
        """The index searches with an `ef_search` chunkwise used to set, which leaves out
        true nearest chunks on large collections (the next ingest or `--repair` raises it)."""
        return self.ef_search in EARLIER_EF_SEARCH

    @property
    def narrow_graph(self) -> bool:
        """The HNSW graph was built with the settings chunkwise used before, where a query
        can miss nearest chunks whatever its width (`--repair` rebuilds it)."""
        return self.graph == EARLIER_GRAPH

    def to_dict(self) -> dict[str, Any]:
        return {"collection": self.collection, "records": self.records, "ok": self.ok,
                "missing": len(self.missing), "missing_ids": self.missing[:20],
                "searchable": self.searchable, "error": self.error,
                "ef_search": self.ef_search, "max_neighbors": self.graph[0],
                "ef_construction": self.graph[1]}


def _readable(store: Store, ids: Sequence[str]) -> list[str]:
    """The ids among `ids` whose vector cannot be read (bisecting a failing batch)."""
    if not ids:
        return []
    try:
        got = store.collection.get(ids=list(ids), include=["embeddings"])
    except Exception:  # noqa: BLE001 - Chroma raises InternalError for a missing vector
        if len(ids) == 1:
            return list(ids)
        mid = len(ids) // 2
        return _readable(store, ids[:mid]) + _readable(store, ids[mid:])
    vectors = got.get("embeddings")
    if vectors is None:
        return list(ids)
    found = {i for i, v in zip(got["ids"], vectors) if v is not None and len(v)}
    return [i for i in ids if i not in found]


def check(store: Store) -> Health:
    """Every record's vector read back; the index queried for all records."""
    health = Health(store.name, store.count(), ef_search=ef_search(store.collection),
                    graph=graph(store.collection))
    for got in store.pages(include=()):
        ids = list(got["ids"])
        for lo in range(0, len(ids), PAGE):
            health.missing += _readable(store, ids[lo:lo + PAGE])
    if health.records:
        health.searchable, health.error = _searchable(store, health.records)
    return health


def _searchable(store: Store, n: int) -> tuple[int | None, str]:
    """How many records a query for all of them returns (the HNSW index's view)."""
    try:
        probe = store.collection.get(limit=1, include=["embeddings"])
        vector = probe["embeddings"][0] if len(probe["ids"]) else None
        if vector is None:
            return None, ""
        got = store.collection.query(query_embeddings=as_rows([vector]), n_results=n,
                                     include=[])
        return len(got["ids"][0]), ""
    except Exception as e:  # noqa: BLE001 - the index is unusable: say why
        return None, f"{type(e).__name__}: {e}"


def slack(records: int) -> int:
    """Records a query over a sound HNSW graph may still miss: the graph is approximate, and
    a few nodes can be unreachable from its entry point (seen: 3 of 6,442 after a repair)."""
    return records // 200


#: up to this many records, `quick_check` also counts what a query over the index returns
COUNT_QUERY_LIMIT = 100_000


def quick_check(store: Store, sample: int = SAMPLE) -> bool:
    """A cheap probe before an ingest: the vectors of `sample` records spread over the
    collection can be read, and (up to `COUNT_QUERY_LIMIT` records) a query over the index
    returns as many records as the metadata store counts. False means: run `check`."""
    n = store.count()
    if n == 0:
        return True
    if n <= COUNT_QUERY_LIMIT:
        found = _searchable(store, n)[0]
        if found is None or found < n - slack(n):
            return False
    parts = min(8, n)
    size = max(1, sample // parts)
    for k in range(parts):
        offset = min(n - 1, k * n // parts)
        try:
            got = store.collection.get(limit=size, offset=offset, include=["embeddings"])
        except Exception:  # noqa: BLE001
            return False
        vectors = got.get("embeddings")
        if vectors is None or any(v is None or not len(v) for v in vectors):
            return False
    return True


def repair(store: Store, missing: Sequence[str], embedder: Any) -> int:
    """Re-embed the records `missing` from their stored document and context and write them
    back (same ids, documents, metadata); returns how many were written."""
    done = 0
    for lo in range(0, len(missing), PAGE):
        ids = list(missing[lo:lo + PAGE])
        got = store.collection.get(ids=ids, include=["documents", "metadatas"])
        texts = []
        for doc, meta in zip(got["documents"], got["metadatas"]):
            context = str((meta or {}).get("context", "") or "")
            texts.append(embed_text(context, doc or ""))
        if not texts:
            continue
        vectors = embedder.embed(texts)
        store.upsert(list(got["ids"]), list(got["documents"]), as_rows(vectors),
                     [dict(m or {}) for m in got["metadatas"]])
        done += len(texts)
    log.info("%s: re-embedded %d records whose vectors were missing", store.name, done)
    return done


def rebuild(store: Store) -> None:
    """Rewrite the collection into a fresh index (same ids, documents, metadata, vectors) and
    put it in the old one's place: for an index whose graph is damaged though every vector
    can be read. A crash midway leaves the old collection as it was (and a `.rebuild` copy
    that the next rebuild replaces)."""
    client, name = store.client, store.name
    tmp = f"{name}.rebuild"
    try:
        client.delete_collection(tmp)
    except Exception:  # noqa: BLE001 - not there
        pass
    old = store.collection
    new = client.create_collection(
        tmp, embedding_function=store.embedder.chroma_function,
        metadata=dict(old.metadata or {}), configuration=hnsw_configuration())
    for got in store.pages(include=("documents", "metadatas", "embeddings")):
        if len(got["ids"]):
            for lo in range(0, len(got["ids"]), store.max_batch):
                hi = lo + store.max_batch
                new.upsert(ids=got["ids"][lo:hi], documents=got["documents"][lo:hi],
                           embeddings=as_rows(got["embeddings"][lo:hi]),
                           metadatas=[dict(m or {}) for m in got["metadatas"][lo:hi]])
    client.delete_collection(name)
    new.modify(name=name)
    store.collection = client.get_collection(name)
    log.info("%s: index rebuilt (%d records)", name, store.count())


def heal(store: Store, embedder: Any) -> tuple[Health, Health]:
    """`check`, then whatever it takes: re-embed missing vectors, rebuild a damaged graph or
    one built with chunkwise's earlier settings (Chroma cannot change a built graph), raise
    an earlier `ef_search` (`Store.raise_ef_search`). Returns the health found before
    healing and after it (the same object when nothing was wrong): the caller says what
    could not be repaired."""
    found = check(store)
    if found.ok and not found.narrow_search and not found.narrow_graph:
        return found, found
    if found.missing:
        repair(store, found.missing, embedder)
    after = check(store) if found.missing else found
    if not after.ok or after.narrow_graph:
        rebuild(store)  # a fresh graph, with today's settings
        after = check(store)
    elif after.narrow_search:
        store.collection = store.raise_ef_search(store.collection)
        after = replace(after, ef_search=ef_search(store.collection))
    return found, after


# -- the lexical leg ------------------------------------------------------------------------
@dataclass
class LexicalHealth:
    """Whether a collection's lexical index holds exactly its records."""

    path: str | None
    """The index file; None: the store has none (a server given no `--lexical-index`)."""
    records: int = 0
    """Records the index holds."""
    missing: int = 0
    """Records of the collection the index lacks (hybrid search cannot find them by words)."""
    stale: int = 0
    """Records the index holds that the collection does not (never returned: dropped)."""
    outdated: bool = False
    """Written with another version of the terms: rebuilt by the next ingest or --repair."""

    @property
    def ok(self) -> bool:
        return self.path is None or not (self.missing or self.stale or self.outdated)

    def summary(self) -> str:
        if self.path is None:
            return "none (a server collection: --lexical-index FILE keeps one)"
        if self.ok:
            return f"{self.records} records, the same as the collection"
        parts = [f"{self.missing} records missing"] if self.missing else []
        parts += [f"{self.stale} stale"] if self.stale else []
        parts += ["written with an earlier version of its terms"] if self.outdated else []
        return f"{self.records} records, " + ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "records": self.records, "missing": self.missing,
                "stale": self.stale, "outdated": self.outdated, "ok": self.ok}


def check_lexical(store: Store) -> LexicalHealth:
    """Compare the store's lexical index with its collection, id by id (reads only)."""
    from .lexical import LexicalIndex, differences

    if store.lexical_path is None:
        return LexicalHealth(None)
    lex = LexicalIndex(store.lexical_path, store.name, readonly=True)
    try:
        ids = store.all_ids()
        if not lex.exists:
            return LexicalHealth(str(store.lexical_path), 0, len(ids), 0, False)
        missing, stale = differences(lex, ids)
        return LexicalHealth(str(store.lexical_path), lex.count(), len(missing), len(stale),
                             lex.stale_version)
    finally:
        lex.close()
