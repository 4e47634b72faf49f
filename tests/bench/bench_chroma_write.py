"""The write stage alone: an embedded Chroma's upsert rate by batch size, and how much it
stalls the other threads of its process (it holds the GIL while it writes); with `--corpus`,
records/s and bytes per record of chunkwise's real record layout and of the levers on it.

    python tests/bench/bench_chroma_write.py [--records 4096] [--sizes 128,512,2048]
    python tests/bench/bench_chroma_write.py --corpus ../shared/corpus/markdown [--rounds 5]

Records look like chunkwise's: about 1,300 characters of text, 384-d float32 vectors and
the usual flat metadata. Each batch size writes into a fresh database. The stall is a
thread counting in a loop while another writes: its rate against the rate alone.

`--corpus`: the records `chunkwise ingest` writes for the folder (`plan_file`,
`chunk_metadata`; 384-d vectors drawn at random, no model: the write alone is timed), one
process, written in fresh databases by each variant: today's layout (`_node_content`
without the fields LlamaIndex fills in with its defaults) at batch sizes 128, 512 and 2048;
the layout before 2026-11-27 (those fields spelled out, as LlamaIndex's own
`node_to_metadata_dict` writes them); `_node_content` left out (a floor: LlamaIndex can no
longer read the records);
a `Schema` with the full-text index and the string indexes of `_node_content` and `context`
off; fewer metadata rows (`packed`: the keys chunkwise filters on kept, the others folded
into one JSON string; `one JSON key`: all of them), at batch 2048; ids, documents and
vectors alone. Bytes per record: document plus metadata as JSON,
and the database folder over the records. The variants run in a new order each round; the
figure is the median of the rounds (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np


def records(n: int) -> tuple[list[str], list[str], list[dict], np.ndarray]:
    rng = np.random.default_rng(0)
    ids = [f"id-{i}" for i in range(n)]
    docs = [f"some words here and there {i} " * 40 for i in range(n)]
    metas = [{"source": f"dir/file{i // 20}.md", "start": i * 100, "end": i * 100 + 90,
              "section_path": "A > B > C", "chunk_index": i % 20, "chunk_count": 20,
              "tokens": 200, "format": "markdown", "embed_hash": f"{i:032x}",
              "content_hash": "0" * 32, "options": "0123456789abcdef", "line_start": 1,
              "line_end": 5, "kinds": ["paragraph"], "context": ""} for i in range(n)]
    return ids, docs, metas, rng.standard_normal((n, 384)).astype(np.float32)


def collection(path: Path, schema=None):
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    if schema is not None:
        return client.get_or_create_collection("bench", schema=schema)
    return client.get_or_create_collection("bench", metadata={"hnsw:space": "cosine"})


# -- --corpus: the real record layout and its levers -----------------------------------------
def corpus_records(folder: Path) -> tuple[list[str], list[str], list[dict]]:
    from chunkwise.chunking.api import Chunker
    from chunkwise.errors import ChunkwiseError
    from chunkwise.pipeline.stages import content_hash, plan_file

    chunker = Chunker(max_tokens=256)
    ids, docs, metas = [], [], []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        try:
            doc = chunker.parse_bytes(data, source=str(path.relative_to(folder)))
        except ChunkwiseError:  # a file the real ingest reports as failed
            continue
        plan = plan_file(doc.source, chunker.chunk_document(doc), {}, content_hash(data), "x")
        for chunk, meta in plan.embed:
            ids.append(chunk.id)
            docs.append(chunk.text)
            metas.append(meta)
    return ids, docs, metas


def full_node(meta: dict) -> dict:
    """The record as chunkwise wrote it before 2026-11-27: `_node_content` with LlamaIndex's
    defaults spelled out, `_node_type`, and the document id under its three names (what
    `node_to_metadata_dict` writes)."""
    node = {**json.loads(meta["_node_content"]), "embedding": None, "text": "",
            "mimetype": "text/plain", "class_name": "TextNode"}
    for rel in node["relationships"].values():
        rel.update(metadata={}, hash=None, class_name="RelatedNodeInfo")
    return {**meta, "_node_content": json.dumps(node, ensure_ascii=False),
            "_node_type": "TextNode", "doc_id": meta["document_id"],
            "ref_doc_id": meta["document_id"]}


def no_node(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k != "_node_content"}


#: the keys chunkwise's own reads filter on (prune, identity, reuse, LlamaIndex's delete) and
#: the node LlamaIndex reads; `packed` folds every other key into one JSON string
FILTER_KEYS = frozenset({"source", "document_id", "format", "page_start", "page_end",
                         "embed_hash", "_node_content", "kinds", "section_path_list"})


def packed(meta: dict) -> dict:
    """A layout with fewer rows: the filtered keys as they are, the rest as one JSON string
    (`--where` on any other key would no longer work)."""
    out = {k: v for k, v in meta.items() if k in FILTER_KEYS}
    out["chunkwise"] = json.dumps({k: v for k, v in meta.items() if k not in FILTER_KEYS},
                                  ensure_ascii=False)
    return out


def one_key(meta: dict) -> dict:
    """Every key in one JSON string: the fewest rows a record with metadata can have."""
    return {"chunkwise": json.dumps(meta, ensure_ascii=False)}


def lean_schema():
    from chromadb import Schema
    from chromadb.api.types import (FtsIndexConfig, StringInvertedIndexConfig,
                                    VectorIndexConfig)

    schema = Schema().create_index(VectorIndexConfig(space="cosine"))
    schema = schema.delete_index(FtsIndexConfig(), key="#document")
    for key in ("_node_content", "context"):
        schema = schema.delete_index(StringInvertedIndexConfig(), key=key)
    return schema


def text_bytes(docs: list[str], metas: list[dict]) -> float:
    return sum(len(d.encode()) + len(json.dumps(m, ensure_ascii=False).encode())
               for d, m in zip(docs, metas)) / len(docs)


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def layouts(folder: Path, rounds: int) -> None:
    ids, docs, metas = corpus_records(folder)
    vecs = np.random.default_rng(0).standard_normal((len(ids), 384)).astype(np.float32)
    variants = {  # name: (metadatas, batch size, schema)
        "before: full node, 3 id keys": ([full_node(m) for m in metas], 512, None),
        "today, batch 512": (metas, 512, None), "today, batch 128": (metas, 128, None),
        "today, batch 2048": (metas, 2048, None),
        "no _node_content": ([no_node(m) for m in metas], 512, None),
        "Schema: FTS, 2 indexes off": (metas, 512, lean_schema),
        "packed: 9 keys + 1 JSON": ([packed(m) for m in metas], 2048, None),
        "one JSON key": ([one_key(m) for m in metas], 2048, None),
        "ids + documents + vectors": ([{"s": 0}] * len(ids), 512, None)}
    rates: dict[str, list[float]] = {k: [] for k in variants}
    disk: dict[str, int] = {}
    print(f"{len(ids)} records from {folder}, {rounds} rounds", flush=True)
    order = list(variants)
    for r in range(rounds):
        random.Random(r).shuffle(order)
        with tempfile.TemporaryDirectory(prefix="bench-layout-") as tmp:
            for k, name in enumerate(order):
                m, size, schema = variants[name]
                col = collection(Path(tmp) / str(k), schema() if schema else None)
                t = time.perf_counter()
                for lo in range(0, len(ids), size):
                    col.upsert(ids=ids[lo:lo + size], documents=docs[lo:lo + size],
                               metadatas=m[lo:lo + size], embeddings=vecs[lo:lo + size])
                rates[name].append(len(ids) / (time.perf_counter() - t))
                disk[name] = folder_bytes(Path(tmp) / str(k))
    for name, (m, _, _) in variants.items():
        print(f"{name:28} {statistics.median(rates[name]):6.0f} records/s (rounds "
              f"{', '.join(f'{x:.0f}' for x in rates[name])}); bytes/record: "
              f"{text_bytes(docs, m):5.0f} as text, {disk[name] / len(ids):6.0f} on disk",
              flush=True)


def write(col, data, size: int) -> float:
    ids, docs, metas, vecs = data
    t = time.perf_counter()
    for lo in range(0, len(ids), size):
        hi = lo + size
        col.upsert(ids=ids[lo:hi], documents=docs[lo:hi], metadatas=metas[lo:hi],
                   embeddings=vecs[lo:hi])
    return time.perf_counter() - t


def spin_rate(stop: threading.Event | None, seconds: float = 1.0) -> float:
    n, t0 = 0, time.perf_counter()
    end = t0 + seconds
    while (stop is None and time.perf_counter() < end) or (stop is not None and not stop.is_set()):
        n += 1
        time.perf_counter()
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=4096)
    ap.add_argument("--sizes", default="128,512,2048")
    ap.add_argument("--corpus", type=Path, default=None,
                    help="time the real record layout of this folder and its levers")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    if a.corpus is not None:
        layouts(a.corpus, a.rounds)
        return
    data = records(a.records)
    with tempfile.TemporaryDirectory(prefix="bench-chroma-") as tmp:
        for size in (int(s) for s in a.sizes.split(",")):
            seconds = write(collection(Path(tmp) / f"b{size}"), data, size)
            print(f"upserts of {size}: {a.records / seconds:.0f} records/s", flush=True)
        alone = spin_rate(None)
        col = collection(Path(tmp) / "stall")
        done = threading.Event()
        writer = threading.Thread(target=lambda: (write(col, data, 512), done.set()))
        writer.start()
        during = spin_rate(done)
        writer.join()
        print(f"a counting thread: {alone:,.0f}/s alone, {during:,.0f}/s while upserts of 512 "
              f"ran ({alone / during:.0f}x slower)")


if __name__ == "__main__":
    main()
