"""Hybrid search: the nearest chunks by meaning (the vectors) and by words (the lexical
index, `lexical`), fused into one ranking.

A small embedding model ranks a chunk that holds `CHUNKWISE_MAX_BYTES`, a contract number or
a state's figure below chunks that are merely about the same subject; a word index ranks
it first. Each leg returns its best `depth` chunks (both under the same `where` and
`contains` filters) and reciprocal rank fusion (Cormack et al. 2009) scores each chunk
`sum(weight / (k + rank))` over the legs that returned it, k = 60: ranks, not raw scores,
so a BM25 score and a cosine distance never need a common scale.

    >>> from chunkwise.chroma import search
    >>> hits = search("what is CHUNKWISE_MAX_BYTES?", db_path="chunkwise-db", k=5)
    >>> hits[0].ranks            # {'dense': 7, 'lexical': 1}

Modes: `hybrid` (default), `dense` (the vectors alone, what `query` does) and `lexical`
(words alone: no model is loaded). Every hit has its cosine `distance` to the query where a
vector was compared (hybrid, dense), the leg ranks and scores it came with, and `score`, the
fused score (hybrid) or BM25 (lexical).
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Any, Mapping, Sequence

from ..errors import ChunkwiseError, ConfigError, StoreError
from .queries import Hit, check_where, chroma_where, hit_of, space_of
from .store import (DEFAULT_COLLECTION, DEFAULT_TIMEOUT, RETRY_DELAYS, as_rows, connect,
                    lexical_location, open_collection, query_embedder, with_retries)

log = logging.getLogger(__name__)

MODES = ("hybrid", "dense", "lexical")
DEFAULT_MODE = "hybrid"
#: reciprocal rank fusion's constant: the standard 60 (a rank-1 hit of one leg weighs about
#: as much as a rank-3 hit of both)
RRF_K = 60
#: candidates each leg gives the fusion, at least (more when k is larger)
DEPTH = 50
#: the longest query text searched (characters): a pasted document is cut, said once
MAX_QUERY = 100_000


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ConfigError(f"unknown search mode {mode!r}: use one of {', '.join(MODES)}")
    return mode


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    """Leg weights of the fusion (`{"dense": 1, "lexical": 1}` unless given)."""
    out = {"dense": 1.0, "lexical": 1.0}
    for leg, w in (weights or {}).items():
        if leg not in out:
            raise ConfigError(f"unknown search leg {leg!r} in weights: use dense or lexical")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not w >= 0:
            raise ConfigError(f"the weight of {leg} must be a number >= 0, got {w!r}")
        out[leg] = float(w)
    if not any(out.values()):
        raise ConfigError("at least one search leg needs a weight above 0")
    return out


def parse_weights(text: str) -> dict[str, float]:
    """`--weights`'s `DENSE,LEXICAL` (e.g. `1,0.5`) as fusion weights (`check_weights`)."""
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 2:
        raise ConfigError(f"--weights takes two numbers DENSE,LEXICAL (e.g. 1,0.5), got {text!r}")
    return check_weights({"dense": values[0], "lexical": values[1]})


def fuse(legs: Mapping[str, Sequence[str]], *, weights: Mapping[str, float] | None = None,
         rrf_k: int = RRF_K) -> list[tuple[str, float, dict[str, int]]]:
    """Reciprocal rank fusion of ranked id lists: (id, score, {leg: 1-based rank}), best
    first; ties go to the better single rank, then the smaller id (deterministic)."""
    w = check_weights(weights)
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for leg, ids in legs.items():
        for rank, id_ in enumerate(ids, 1):
            if id_ in ranks and leg in ranks[id_]:
                continue  # a leg names an id once
            scores[id_] = scores.get(id_, 0.0) + w[leg] / (rrf_k + rank)
            ranks.setdefault(id_, {})[leg] = rank
    return [(i, scores[i], ranks[i]) for i in
            sorted(scores, key=lambda i: (-scores[i], min(ranks[i].values()), i))]


def search(text: str, *, k: int = 5, mode: str = DEFAULT_MODE,
           where: Mapping[str, Any] | None = None, contains: str | None = None,
           weights: Mapping[str, float] | None = None, depth: int | None = None,
           client: Any = None, db_path: str | os.PathLike | None = None,
           host: str | None = None, port: int | None = None,
           collection: str = DEFAULT_COLLECTION, embedder: Any = None,
           lexical: str | os.PathLike | bool = True,
           retry_delays: Sequence[float] = RETRY_DELAYS,
           timeout: float | None = DEFAULT_TIMEOUT) -> list[Hit]:
    """The `k` best chunks for `text` in `mode` (module docstring), best first.

    `where` filters on metadata (Chroma's syntax, e.g. `{"format": "pdf"}`) and `contains`
    on the chunk's text (Chroma's `$contains`), on both legs alike. `weights` weighs the
    legs in the fusion; `depth` is how many candidates each leg brings (default
    max(k, 50)). `lexical` locates the word index: True (an embedded database's own), a
    path (needed for a server), False (none: hybrid is then dense)."""
    mode = check_mode(mode)
    check_weights(weights)
    check_where(where)
    text = check_query(text)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    c = connect(client=client, db_path=db_path, host=host, port=port, create=False,
                retry_delays=retry_delays, timeout=timeout)
    col = open_collection(c, collection, retry_delays)
    legs = Legs(col, retry_delays, where, contains)
    lex = legs.lexical_index(c, collection, lexical, mode)
    if lex is None and mode == "hybrid":
        mode = "dense"
    n = legs.bounded(max(k, depth or DEPTH))
    if n == 0:
        return []
    vector = None
    if mode != "lexical":
        emb = query_embedder(col, embedder)
        vector = as_rows(emb.embed_queries([text]))
    dense = legs.dense(vector, n if mode == "hybrid" else min(k, n)) if vector is not None \
        else []
    words = legs.lexical(lex, text, n if mode == "hybrid" else min(k, n)) \
        if lex is not None and mode != "dense" else []
    return legs.fused(dense, words, k=k, mode=mode, vector=vector, weights=weights)


def check_query(text: Any) -> str:
    """The query text, checked: a non-empty string (cut to `MAX_QUERY` characters)."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"the query must be a non-empty string, got {text!r:.40}")
    if len(text) > MAX_QUERY:
        log.warning("the query is %d characters long; the first %d are searched",
                    len(text), MAX_QUERY)
        text = text[:MAX_QUERY]
    return text


class Legs:
    """The two legs of a search on one opened collection, and their fusion."""

    def __init__(self, col: Any, delays: Sequence[float], where: Mapping[str, Any] | None,
                 contains: str | None) -> None:
        self.col = col
        self.delays = delays
        self.where = chroma_where(where)
        if contains is not None and (not isinstance(contains, str) or not contains):
            raise ConfigError(f"contains must be a non-empty string, got {contains!r}")
        self.where_document = {"$contains": contains} if contains else None
        self.space = space_of(col)
        self._count: int | None = None

    def _call(self, fn: Any, what: str) -> Any:
        try:
            return with_retries(fn, what, self.delays)
        except ChunkwiseError:
            raise
        except Exception as e:
            raise StoreError(f"{what} failed: {type(e).__name__}: {e}") from e

    @property
    def count(self) -> int:
        if self._count is None:
            self._count = int(self._call(self.col.count, "count"))
        return self._count

    def bounded(self, n: int) -> int:
        """`n` candidates, at most the records the collection holds."""
        return min(n, self.count)

    def lexical_index(self, client: Any, name: str, lexical: str | os.PathLike | bool,
                      mode: str) -> Any:
        """The collection's lexical index opened read-only, None when there is none (said
        once; in `lexical` mode it is a `StoreError`)."""
        if mode == "dense":
            return None
        from .lexical import LexicalIndex

        path = lexical_location(client, lexical)
        lex = LexicalIndex(path, name, readonly=True) if path is not None else None
        if lex is None or not lex.exists:
            why = ("a Chroma server keeps no lexical index: give the file it was written to "
                   "(ingest --lexical-index PATH)" if path is None else
                   f"{path} holds none for it: the next `chunkwise ingest` or `chunkwise check "
                   f"--repair` builds it")
            if mode == "lexical":
                raise StoreError(f"collection {name!r} has no lexical index: {why}")
            log.warning("collection %r has no lexical index, so the search is by meaning "
                        "only: %s", name, why)
            return None
        held = lex.count()
        if held != self.count:
            log.warning("the lexical index of %r holds %d records, the collection %d: "
                        "`chunkwise check --repair` or the next ingest brings it up to date",
                        name, held, self.count)
        return lex

    def dense(self, vector: Any, n: int) -> list[Hit]:
        got = self._call(lambda: self.col.query(
            query_embeddings=vector, n_results=n, where=self.where,
            where_document=self.where_document,
            include=["documents", "metadatas", "distances"]), "query")
        return [hit_of(i, d, m, dist, self.space) for i, d, m, dist in
                zip(got["ids"][0], got["documents"][0], got["metadatas"][0],
                    got["distances"][0])]

    def lexical(self, lex: Any, text: str, n: int) -> list[tuple[Hit, float]]:
        """The `n` best records by BM25 that pass the filters, with their scores: the index
        is asked for more candidates, eight times as many each time, while the filters
        leave fewer than `n` and it has more."""
        want = n
        while True:
            found = lex.search(text, want)
            kept = self.fetch([i for i, _ in found])
            hits = [(kept[i], s) for i, s in found if i in kept]
            if len(hits) >= n or len(found) < want:
                return hits[:n]
            want *= 8

    def fetch(self, ids: Sequence[str], *, embeddings: bool = False) -> dict[str, Any]:
        """id -> Hit (distance NaN) of the stored records `ids` that pass the filters; with
        `embeddings`, id -> vector instead."""
        out: dict[str, Any] = {}
        include = ["embeddings"] if embeddings else ["documents", "metadatas"]
        for lo in range(0, len(ids), 1000):
            part = list(ids[lo:lo + 1000])
            got = self._call(lambda: self.col.get(
                ids=part, where=None if embeddings else self.where,
                where_document=None if embeddings else self.where_document,
                include=include), "read records")
            if embeddings:
                out.update(zip(got["ids"], got["embeddings"]))
            else:
                for i, d, m in zip(got["ids"], got["documents"], got["metadatas"]):
                    out[i] = hit_of(i, d, m, float("nan"), self.space)
        return out

    def fused(self, dense: Sequence[Hit], words: Sequence[tuple[Hit, float]], *, k: int,
              mode: str, vector: Any, weights: Mapping[str, float] | None) -> list[Hit]:
        """The hits of both legs as one ranking of `k` (module docstring)."""
        by_id = {h.id: h for h, _ in words}
        by_id.update((h.id, h) for h in dense)
        scores = {"dense": {h.id: h.distance for h in dense},
                  "lexical": {h.id: s for h, s in words}}
        order = fuse({"dense": [h.id for h in dense], "lexical": [h.id for h, _ in words]},
                     weights=weights)[:k]
        missing = [i for i, _, _ in order if i not in scores["dense"]]
        distances = self.distances(vector, missing) if vector is not None and missing else {}
        out = []
        for id_, fused_score, ranks in order:
            h = by_id[id_]
            distance = scores["dense"].get(id_, distances.get(id_))
            out.append(replace(
                h, distance=distance, ranks=ranks,
                scores={leg: scores[leg][id_] for leg in ranks},
                score=fused_score if mode == "hybrid" else
                scores["lexical"].get(id_) if mode == "lexical" else None))
        return out

    def distances(self, vector: Any, ids: Sequence[str]) -> dict[str, float]:
        """The distance from the query to each of `ids` in the collection's space (for hits
        only the lexical leg found)."""
        import numpy as np

        vectors = self.fetch(ids, embeddings=True)
        if not vectors:
            return {}
        q = np.asarray(vector, dtype=np.float32)[0]
        keys = list(vectors)
        m = np.asarray([vectors[i] for i in keys], dtype=np.float32)
        dots = m @ q
        if self.space == "ip":
            d = 1.0 - dots
        elif self.space == "l2":
            d = (m * m).sum(1) + float(q @ q) - 2.0 * dots
        else:
            d = 1.0 - dots / np.maximum(np.linalg.norm(m, axis=1) * np.linalg.norm(q), 1e-12)
        return {i: float(x) for i, x in zip(keys, d)}
