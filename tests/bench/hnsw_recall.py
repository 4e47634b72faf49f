"""How many of the true nearest chunks Chroma's HNSW index returns, by its search and build
settings: recall against brute force, on real vectors and real questions.

    python tests/bench/hnsw_recall.py --db chunkwise-db [--collection chunkwise]
    python tests/bench/hnsw_recall.py --cache vectors.sqlite [more.sqlite ...]
        [--questions tests/data/*.jsonl] [--ef-search 100,400,800] [--ef-construction 100]
        [--max-neighbors 16] [--builds 3]

The vectors: every stored vector of a chunkwise collection (`--db`), or every vector of one
or more embed caches (`--cache`: the SQLite files `chunkwise eval --compare --embed-cache`
keeps), normalised, exact duplicates dropped; written in the collection's own order (file
after file, as an ingest writes them: an HNSW graph built over clustered insertions is
worse than one built in random order), a cache's in a random one. The queries: the questions of the `--questions`
files (default: every question set in `tests/data/`), embedded as queries by the default
embedder (so the vectors must be its model's: MiniLM). For each setting, `--builds` fresh
collections (an HNSW build is not deterministic: threads insert in their own order) get the
vectors in batches of 4,096 and answer every question with `n_results=10`, against the
brute-force ranking of the same vectors (numpy, cosine):

- recall@10 and recall@5: the share of the true 10 (5) nearest that the index returns;
- top-1 lost: questions whose true nearest chunk is not among the 10 returned at all, and
  more than 1e-4 nearer (cosine similarity) than the 10th returned (so a tie is not a loss);
- ms/query: one question per call, a sample of 100, median;
- vectors/s: the write of the bare vectors (no documents or metadata) into the index.

The figure is the median over builds; the interval is the paired bootstrap (95%, over
questions) of each setting's recall@10 against the first setting's, both from their first
build.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
LOST_GAP = 1e-4


def cache_vectors(paths: list[Path]) -> np.ndarray:
    rows: dict[bytes, bytes] = {}
    for path in paths:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            rows.update(db.execute("SELECT key, vec FROM vectors"))
    dims = {len(v) for v in rows.values()}
    if len(dims) != 1:
        raise SystemExit(f"the caches hold vectors of several sizes: {sorted(dims)} bytes")
    return np.frombuffer(b"".join(rows.values()), dtype=np.float32).reshape(len(rows), -1)


def collection_vectors(db: Path, name: str) -> np.ndarray:
    import chromadb
    from chromadb.config import Settings

    col = chromadb.PersistentClient(path=str(db), settings=Settings(
        anonymized_telemetry=False)).get_collection(name)
    blocks, offset = [], 0
    while True:
        got = col.get(include=["embeddings"], limit=5000, offset=offset)
        if not len(got["ids"]):
            break
        blocks.append(np.asarray(got["embeddings"], dtype=np.float32))
        offset += len(got["ids"])
    return np.concatenate(blocks)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def build(client, name: str, vectors: np.ndarray, ef_search: int, ef_construction: int,
          max_neighbors: int):
    col = client.create_collection(name, configuration={"hnsw": {
        "space": "cosine", "ef_search": ef_search, "ef_construction": ef_construction,
        "max_neighbors": max_neighbors}})
    t = time.perf_counter()
    for lo in range(0, len(vectors), 4096):
        hi = min(len(vectors), lo + 4096)
        col.add(ids=[str(i) for i in range(lo, hi)], embeddings=vectors[lo:hi])
    return col, len(vectors) / (time.perf_counter() - t)


def score(col, queries: np.ndarray, sims: np.ndarray, truth: np.ndarray) -> dict:
    got = [list(map(int, ids)) for ids in
           col.query(query_embeddings=queries, n_results=10, include=[])["ids"]]
    r10 = [len(set(g) & set(t.tolist())) / 10 for g, t in zip(got, truth)]
    r5 = [len(set(g[:5]) & set(t[:5].tolist())) / 5 for g, t in zip(got, truth)]
    lost = sum(1 for i, (g, t) in enumerate(zip(got, truth))
               if t[0] not in g and sims[i, t[0]] - sims[i, g[-1]] > LOST_GAP)
    times = []
    for q in queries[:100]:
        t = time.perf_counter()
        col.query(query_embeddings=q[None, :], n_results=10, include=[])
        times.append((time.perf_counter() - t) * 1000)
    return {"r10": r10, "r5": r5, "lost": lost, "ms": statistics.median(times)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--db", type=Path)
    src.add_argument("--cache", type=Path, nargs="+")
    ap.add_argument("--collection", default="chunkwise")
    ap.add_argument("--questions", type=Path, nargs="+",
                    default=sorted((ROOT / "tests" / "data").glob("*.jsonl")))
    ap.add_argument("--ef-search", default="100,400,800")
    ap.add_argument("--ef-construction", default="100")
    ap.add_argument("--max-neighbors", default="16")
    ap.add_argument("--builds", type=int, default=3)
    args = ap.parse_args()

    import chromadb
    from chromadb.config import Settings
    from chunkwise.embeddings.functions import resolve_embedder
    from chunkwise.evaluation.metrics import paired_difference

    if args.cache:  # no order to keep: a random one
        vectors = np.unique(unit(cache_vectors(args.cache)), axis=0)
        np.random.default_rng(0).shuffle(vectors)
    else:  # the collection's own order (file after file, as an ingest writes), duplicates out
        vectors = unit(collection_vectors(args.db, args.collection))
        _, first = np.unique(vectors, axis=0, return_index=True)
        vectors = vectors[np.sort(first)]
    questions = [json.loads(line)["question"] for path in args.questions
                 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = unit(np.asarray(resolve_embedder().embed_queries(questions), dtype=np.float32))
    sims = queries @ vectors.T
    truth = np.argsort(-sims, axis=1)[:, :10]
    print(f"{len(vectors)} distinct vectors, {len(questions)} questions, {args.builds} builds "
          f"per setting", flush=True)
    settings = [(s, c, m) for m in map(int, args.max_neighbors.split(","))
                for c in map(int, args.ef_construction.split(","))
                for s in map(int, args.ef_search.split(","))]
    client = chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="bench-hnsw-"),
                                       settings=Settings(anonymized_telemetry=False))
    runs: dict[tuple[int, int, int], list[tuple[dict, float]]] = {s: [] for s in settings}
    for b in range(args.builds):
        for s in settings:  # each build of every setting before the next build: drift shared
            col, rate = build(client, f"b{b}-s{s[0]}-c{s[1]}-m{s[2]}", vectors, *s)
            runs[s].append((score(col, queries, sims, truth), rate))
            client.delete_collection(col.name)
    base = runs[settings[0]][0][0]["r10"]
    for s, got in runs.items():
        recall = [float(np.mean(r["r10"])) for r, _ in got]
        diff, lo, hi = paired_difference(got[0][0]["r10"], base)
        print(f"ef_search {s[0]:5d} ef_construction {s[1]:4d} max_neighbors {s[2]:3d}: "
              f"recall@10 {statistics.median(recall):.4f} "
              f"(builds {', '.join(f'{x:.4f}' for x in recall)}), "
              f"recall@5 {statistics.median(float(np.mean(r['r5'])) for r, _ in got):.4f}, "
              f"top-1 lost {statistics.median(r['lost'] for r, _ in got):.0f}/{len(questions)} "
              f"(builds {', '.join(str(r['lost']) for r, _ in got)}), "
              f"{statistics.median(r['ms'] for r, _ in got):.2f} ms/query, "
              f"{statistics.median(rate for _, rate in got):.0f} vectors/s; recall@10 against "
              f"the first setting {diff:+.4f} [{lo:+.4f}, {hi:+.4f}]", flush=True)


if __name__ == "__main__":
    main()
