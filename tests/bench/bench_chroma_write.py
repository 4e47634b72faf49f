"""The write stage alone: an embedded Chroma's upsert rate by batch size, and how much it
stalls the other threads of its process (it holds the GIL while it writes).

    python tests/bench/bench_chroma_write.py [--records 4096] [--sizes 128,512,2048]

Records look like chunkwise's: about 1,300 characters of text, 384-d float32 vectors and
the usual flat metadata. Each batch size writes into a fresh database. The stall is a
thread counting in a loop while another writes: its rate against the rate alone.
"""

from __future__ import annotations

import argparse
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


def collection(path: Path):
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    return client.get_or_create_collection("bench", metadata={"hnsw:space": "cosine"})


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
    a = ap.parse_args()
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
