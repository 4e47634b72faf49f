"""Reading a chunkwise collection: `query` (the nearest chunks through Chroma's index, as an
application asks), `search_exact` (brute force over every stored vector, for evaluation),
`expand_hits` (each hit widened to its parent section, see `expand`) and `iter_collection`
(every record, paged). Each opens the database read-only through `store.connect`.

    >>> from chunkwise.chroma import query
    >>> hits = query("how do I configure retries?", db_path="chunkwise-db", k=5)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping, Sequence

from ..errors import ChunkwiseError, ConfigError, StoreError
from .store import (DEFAULT_COLLECTION, DEFAULT_TIMEOUT, RETRY_DELAYS, as_rows, connect,
                    open_collection, paged, query_embedder, with_retries)


@dataclass(frozen=True)
class Hit:
    """One query result."""

    id: str
    source: str
    text: str
    distance: float | None
    """The query's distance to the chunk's vector in the collection's space (None where no
    vector was compared: a lexical search)."""
    section_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    context: str
    metadata: dict[str, Any]
    space: str = "cosine"
    """The collection's distance: `cosine` (1 - cosine similarity), `l2` (squared) or `ip`."""
    score: float | None = None
    """The search's own score, larger is better: the fused score of a hybrid search, BM25 of
    a lexical one; None for a search by vectors alone (`distance` ranks it)."""
    ranks: dict[str, int] = field(default_factory=dict)
    """The hit's 1-based rank in each leg of a search that returned it (`dense`,
    `lexical`)."""
    scores: dict[str, float] = field(default_factory=dict)
    """Each leg's own measure: `dense` the distance, `lexical` the BM25 score."""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "source": self.source, "distance": self.distance,
                "space": self.space, "score": self.score, "ranks": dict(self.ranks),
                "scores": dict(self.scores),
                "section_path": list(self.section_path), "page_start": self.page_start,
                "page_end": self.page_end, "context": self.context, "text": self.text,
                "metadata": self.metadata}


#: the most levels of nesting a `where` filter may have (Chroma's own validator recurses, and
#: a filter 1,000 levels deep ended in a RecursionError traceback, issue 44)
MAX_WHERE_DEPTH = 32


def check_where(where: Any) -> Any:
    """`where` itself if it nests at most `MAX_WHERE_DEPTH` levels of objects and lists, else
    a `ConfigError` saying so (walked without recursion)."""
    stack = [(where, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children = list(value.values())
        elif isinstance(value, (list, tuple)):
            children = list(value)
        else:
            continue
        if depth > MAX_WHERE_DEPTH:
            raise ConfigError(f"the where filter nests more than {MAX_WHERE_DEPTH} levels")
        stack.extend((c, depth + 1) for c in children)
    return where


def chroma_where(where: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A metadata filter as Chroma takes it: several keys in one object (`{"format": "pdf",
    "page_start": {"$gte": 2}}`) are all required, as in MongoDB, so they become their `$and`
    (Chroma itself wants exactly one key a clause), at the top and inside `$and`/`$or`; `{}`
    or None is no filter."""
    if not where:
        return None
    clauses = [{key: [chroma_where(c) if isinstance(c, Mapping) else c for c in value]
                if key in ("$and", "$or") and isinstance(value, list) else value}
               for key, value in where.items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def query(text: str, *, k: int = 5, where: Mapping[str, Any] | None = None, client: Any = None,
          db_path: str | os.PathLike | None = None, host: str | None = None,
          port: int | None = None, collection: str = DEFAULT_COLLECTION, embedder: Any = None,
          retry_delays: Sequence[float] = RETRY_DELAYS,
          timeout: float | None = DEFAULT_TIMEOUT, contains: str | None = None) -> list[Hit]:
    """The `k` chunks nearest to `text`, best first, optionally filtered by a Chroma `where`
    clause on metadata (e.g. `{"format": "pdf"}`; several keys: all of them, `chroma_where`)
    and by `contains`, a text the chunk's text must hold exactly (Chroma's `$contains`).
    The query is embedded with the embedder the collection was built with unless `embedder`
    is given."""
    if contains is not None and (not isinstance(contains, str) or not contains):
        raise ConfigError(f"contains must be a non-empty string, got {contains!r}")
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"the query must be a non-empty string, got {text!r}")
    check_where(where)
    c = connect(client=client, db_path=db_path, host=host, port=port, create=False,
                retry_delays=retry_delays, timeout=timeout)
    col = open_collection(c, collection, retry_delays)
    emb = query_embedder(col, embedder)
    vector = as_rows(emb.embed_queries([text]))
    try:
        got = with_retries(lambda: col.query(query_embeddings=vector, n_results=k,
                                             where=chroma_where(where),
                                             where_document=({"$contains": contains}
                                                             if contains else None),
                                             include=["documents", "metadatas", "distances"]),
                           "query", retry_delays)
    except ChunkwiseError:
        raise
    except Exception as e:
        raise StoreError(f"query failed: {type(e).__name__}: {e}") from e
    space = space_of(col)
    return [hit_of(i, d, m, dist, space) for i, d, m, dist in
            zip(got["ids"][0], got["documents"][0], got["metadatas"][0], got["distances"][0])]


def expand_hits(hits: Sequence[Hit], *, tokens: int, client: Any = None,
                db_path: str | os.PathLike | None = None, host: str | None = None,
                port: int | None = None, collection: str = DEFAULT_COLLECTION,
                timeout: float | None = DEFAULT_TIMEOUT) -> list[Hit]:
    """Each hit replaced by its parent section cut to `tokens` (`chunkwise.chroma.expand`): its
    text, span (`start`/`end` in metadata) and `tokens` become the section's; `expanded`
    says how many chunks it joins. A hit without a recorded parent stays as it is.

    The sections are read together, not one store read per hit: each distinct section once,
    64 of them to a read (514 hits took 61-109 s one read each, issue 44)."""
    from .expand import Member, expand, section_of

    per_read = 64  # sections per store read: one `$or` of that many spans (a bounded filter)
    spans = {}  # (source, start, end) of every section wanted, in the order first met
    for h in hits:
        sec = section_of(h.metadata)
        if sec is not None:
            spans.setdefault((h.source, sec[1], sec[2]), None)
    members: dict[tuple[str, int, int], list[Member]] = {span: [] for span in spans}
    if spans:
        c = connect(client=client, db_path=db_path, host=host, port=port, create=False,
                    timeout=timeout)
        col = open_collection(c, collection, RETRY_DELAYS)
        wanted = list(spans)
        for at in range(0, len(wanted), per_read):
            part = wanted[at:at + per_read]
            # the stored chunks inside a section tile it (with overlap 0, invariant 3)
            clauses = [{"$and": [{"source": src}, {"start": {"$gte": lo}}, {"end": {"$lte": hi}}]}
                       for src, lo, hi in part]
            where = clauses[0] if len(clauses) == 1 else {"$or": clauses}
            got = with_retries(lambda: col.get(where=where, include=["documents", "metadatas"]),
                               "read sections", RETRY_DELAYS)
            by_source: dict[str, list[Member]] = {}
            for d, m in zip(got["documents"], got["metadatas"]):
                by_source.setdefault(str(m.get("source", "")), []).append(
                    Member(int(m["start"]), int(m["end"]), int(m.get("tokens", 0)), d or ""))
            for span in part:
                src, lo, hi = span
                members[span] = sorted((x for x in by_source.get(src, ())
                                        if x.start >= lo and x.end <= hi), key=lambda x: x.start)
    out = []
    for h in hits:
        sec = section_of(h.metadata)
        inside = members.get((h.source, sec[1], sec[2]), []) if sec is not None else []
        start = int(h.metadata.get("start", 0))
        at = next((i for i, m in enumerate(inside) if m.start == start), None)
        if at is None:
            out.append(h)
            continue
        e = expand(inside, at, max(tokens, inside[at].tokens))
        meta = {**h.metadata, "start": e.start, "end": e.end, "tokens": e.tokens,
                "expanded": e.chunks}
        out.append(replace(h, text=e.text, metadata=meta))  # its scores and ranks kept
    return out


def search_exact(texts: Sequence[str], *, k: int = 5, client: Any = None,
                 db_path: str | os.PathLike | None = None, host: str | None = None,
                 port: int | None = None, collection: str = DEFAULT_COLLECTION,
                 embedder: Any = None, page: int = 1000,
                 timeout: float | None = DEFAULT_TIMEOUT) -> list[list[Hit]]:
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
    c = connect(client=client, db_path=db_path, host=host, port=port, create=False,
                timeout=timeout)
    col = open_collection(c, collection, RETRY_DELAYS)
    emb = query_embedder(col, embedder)
    queries = np.asarray(as_rows(emb.embed_queries(list(texts))), dtype=np.float32)
    ids: list[str] = []
    docs: list[str | None] = []
    metas: list[Any] = []
    blocks = []
    for got in paged(lambda offset: with_retries(
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
    space = space_of(col)
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
        out.append([hit_of(ids[order[i]], docs[order[i]], metas[order[i]], float(row[i]), space)
                    for i in best])
    return out


def space_of(col: Any) -> str:
    """The distance space of a collection (`cosine`, `l2` or `ip`)."""
    conf = getattr(col, "configuration", None) or {}
    for key in ("hnsw", "spann"):
        space = (conf.get(key) or {}).get("space") if isinstance(conf, Mapping) else None
        if space:
            return str(space)
    return str((col.metadata or {}).get("hnsw:space", "l2"))


def hit_of(id_: str, doc: str | None, meta: Mapping[str, Any] | None, dist: float,
         space: str = "cosine") -> Hit:
    meta = dict(meta or {})
    path = meta.get("section_path_list")
    if not isinstance(path, list):
        joined = meta.get("section_path") or ""
        path = joined.split(" > ") if joined else []
    return Hit(id=id_, source=str(meta.get("source", "")), text=doc or "",
               distance=float(dist), section_path=tuple(path),
               page_start=meta.get("page_start"), page_end=meta.get("page_end"),
               context=str(meta.get("context", "")), metadata=meta, space=space)


def iter_collection(*, client: Any = None, db_path: str | os.PathLike | None = None,
                    host: str | None = None, port: int | None = None,
                    collection: str = DEFAULT_COLLECTION, page: int = 1000,
                    timeout: float | None = DEFAULT_TIMEOUT) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(id, document, metadata) of every record, paged; for exports and tests."""
    c = connect(client=client, db_path=db_path, host=host, port=port, create=False,
                timeout=timeout)
    col = open_collection(c, collection, RETRY_DELAYS)
    for got in paged(lambda offset: col.get(include=["documents", "metadatas"], limit=page,
                                             offset=offset), page):
        yield from zip(got["ids"], got["documents"], (m or {} for m in got["metadatas"]))

