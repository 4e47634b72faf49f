"""Embedding throughput and end-to-end ingest time on the shared corpus.

1. Embedding: chunks/s of chunkwise's `MiniLMEmbedder` (batches sorted by length, padded to
   their longest member) next to Chroma's own `ONNXMiniLM_L6_V2` (pads every text to 256
   tokens), both running the *same* model files: the pinned int8 `model.onnx` and the shipped
   `tokenizer.json`, laid out as Chroma's cache expects in a temporary folder (Chroma never
   downloads here). Texts are the real chunks of the corpus (default budget), a sample of
   --sample chunks, then short texts (the first sentence-sized 120 characters of each, the
   size of queries and small chunks); median of --runs runs each. The vectors of both are
   compared too.
2. Ingest: `chunkwise.pipeline.ingest` of the corpus into a fresh embedded Chroma, with the
   report's split of wall time into read, parse+chunk, embed and write. Chunking must stay
   under 10% of the total.

    python tests/bench/bench_embed.py [--corpus ../shared/corpus] [--sample 2000] [--runs 3]
                                      [--skip-ingest] [--ingest-paths markdown html …]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from chunkwise import Chunker
from chunkwise.pipeline.discover import iter_files
from chunkwise.embeddings.functions import MiniLMEmbedder, default_model_path, default_tokenizer_path
from _timing import timed_result as timed  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]


def chroma_cache_layout(folder: Path) -> Path:
    """Chroma's cache layout (`<folder>/onnx/…`) holding our model and tokenizer files."""
    onnx = folder / "onnx"
    onnx.mkdir(parents=True, exist_ok=True)
    (onnx / "model.onnx").symlink_to(default_model_path())
    (onnx / "tokenizer.json").symlink_to(default_tokenizer_path())
    vocab = json.loads(default_tokenizer_path().read_text(encoding="utf-8"))["model"]["vocab"]
    (onnx / "vocab.txt").write_text("\n".join(sorted(vocab, key=vocab.get)) + "\n",
                                    encoding="utf-8")
    for name in ("config.json", "special_tokens_map.json", "tokenizer_config.json"):
        (onnx / name).write_text("{}", encoding="utf-8")  # only checked for existence
    return onnx


def sample_chunks(corpus: Path, n: int) -> list[str]:
    chunker = Chunker()
    texts = [c.embed_text for p in iter_files([corpus]) for c in chunker.chunk_file(p)]
    random.Random(0).shuffle(texts)
    return texts[:n]


def bench_embedding(texts: list[str], runs: int) -> None:
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    with tempfile.TemporaryDirectory() as tmp:
        onnx = chroma_cache_layout(Path(tmp))
        ours = MiniLMEmbedder(onnx)
        theirs = ONNXMiniLM_L6_V2(preferred_providers=["CPUExecutionProvider"])
        theirs.DOWNLOAD_PATH = Path(tmp)  # instance attribute: the temp layout, no download
        ours.embed(texts[:8])  # load both models before timing
        theirs(texts[:8])
        t_ours, v_ours = timed(lambda: ours.embed(texts), runs)
        t_theirs, v_theirs = timed(lambda: np.asarray(theirs(texts)), runs)
    cos = np.sum(np.asarray(v_ours) * np.asarray(v_theirs), axis=1)
    tokens = [len(e.ids) for e in ours._tokenizer.encode_batch(texts)]
    print(f"embedding {len(texts)} texts (median tokens {statistics.median(tokens):.0f}, "
          f"max {max(tokens)}), median of {runs} runs:")
    print(f"  chunkwise MiniLMEmbedder   {len(texts) / t_ours:8.1f} chunks/s")
    print(f"  chroma ONNXMiniLM_L6_V2    {len(texts) / t_theirs:8.1f} chunks/s")
    print(f"  speed-up {t_theirs / t_ours:.2f}x; cosine ours vs chroma: min {cos.min():.6f}")


def bench_ingest(paths: list[Path]) -> None:
    from chunkwise.pipeline.runner import ingest

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        report = ingest(paths, db_path=Path(tmp) / "db")
        wall = time.perf_counter() - t
    s = report.seconds
    print(f"ingest of {report.files} files, {report.chunks} chunks in {wall:.1f}s "
          f"({report.chunks / wall:.1f} chunks/s end to end):")
    for phase in ("read", "parse_chunk", "embed", "write"):
        print(f"  {phase:12s} {s.get(phase, 0):7.1f}s  {100 * s.get(phase, 0) / s['total']:5.1f}%")
    share = s["parse_chunk"] / s["total"]
    print(f"  chunking share {100 * share:.1f}% of the total "
          f"({'under' if share < 0.10 else 'OVER'} the 10% target)")
    if report.failed:
        print(f"  failed: {report.failed}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--sample", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--ingest-paths", nargs="*", default=None,
                    help="corpus sub-folders to ingest (default: the whole corpus)")
    args = ap.parse_args()
    if not args.corpus.is_dir():
        raise SystemExit(f"no corpus at {args.corpus}")
    texts = sample_chunks(args.corpus, args.sample)
    bench_embedding(texts, args.runs)
    bench_embedding([t[:120] for t in texts], args.runs)
    if not args.skip_ingest:
        paths = [args.corpus / p for p in args.ingest_paths] if args.ingest_paths else [args.corpus]
        bench_ingest(paths)


if __name__ == "__main__":
    main()
