"""The embedding bill of each corpus folder on this machine's CPU: texts per MB and embedding
seconds per MB with the default embedder, the default chunker (`table_rows="row"`).

    python tests/bench/embed_bill.py [--corpus ../shared/corpus] [--folders markdown,csv]
        [--sample 96] [--rounds 2]

Per folder: its files parsed and chunked as `chunkwise ingest` would (a file that fails to
parse is counted and left out), the distinct embed texts (a text repeated in the folder is
embedded once, as an ingest does), then the seconds per text of the default embedder on a
random sample of them (the median of `--rounds` passes over the sample, after a warm-up),
times the texts: an estimate of the embedding seconds a CPU ingest of that folder spends,
and per MB of input. The model runs as the default embedder does here (onnxruntime, the
threads it picks); on a shared machine the seconds are comparable between folders measured
in the same run, not across machines.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def folder_texts(folder: Path) -> tuple[float, int, int, list[str], int]:
    """(MB, files chunked, chunks, distinct embed texts, files that failed) of a folder."""
    from chunkwise import Chunker
    from chunkwise.chunking.api import parse_file
    from chunkwise.errors import ChunkwiseError

    chunker = Chunker()
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    mb, chunked, chunks, failed = 0.0, 0, 0, 0
    texts: dict[str, None] = {}
    for path in files:
        try:
            doc = parse_file(path, source=str(path.relative_to(folder)))
            made = chunker.chunk_document(doc)
        except ChunkwiseError:
            failed += 1
            continue
        mb += path.stat().st_size / 1e6
        chunked += 1
        chunks += len(made)
        texts.update(dict.fromkeys(c.embed_text for c in made))
    return mb, chunked, chunks, list(texts), failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--folders", default="",
                    help="comma-separated folder names (default: every folder of the corpus)")
    ap.add_argument("--sample", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    from chunkwise.embeddings.functions import resolve_embedder

    names = [n for n in a.folders.split(",") if n] or sorted(
        p.name for p in a.corpus.iterdir() if p.is_dir())
    embedder = resolve_embedder(None)
    embedder.embed(["warm up"] * 8)
    rng = random.Random(7)
    print(f"{'folder':<12}{'files':>6}{'MB':>7}{'chunks':>8}{'texts':>8}{'per MB':>8}"
          f"{'ms/text':>9}{'embed s':>9}{'s per MB':>9}", flush=True)
    total_s = total_mb = 0.0
    for name in names:
        mb, chunked, chunks, texts, failed = folder_texts(a.corpus / name)
        if not texts or mb <= 0:
            continue
        picked = rng.sample(texts, min(a.sample, len(texts)))
        per = []
        for _ in range(a.rounds):
            t = time.perf_counter()
            embedder.embed(picked)
            per.append((time.perf_counter() - t) / len(picked))
        s = statistics.median(per)
        total_s += s * len(texts)
        total_mb += mb
        note = f"  ({failed} failed to parse)" if failed else ""
        print(f"{name:<12}{chunked:>6}{mb:>7.2f}{chunks:>8}{len(texts):>8}"
              f"{len(texts) / mb:>8.0f}{s * 1000:>9.1f}{s * len(texts):>9.0f}"
              f"{s * len(texts) / mb:>9.0f}{note}", flush=True)
    if total_mb:
        print(f"{'all':<12}{'':>6}{total_mb:>7.2f}{'':>8}{'':>8}{'':>8}{'':>9}"
              f"{total_s:>9.0f}{total_s / total_mb:>9.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
