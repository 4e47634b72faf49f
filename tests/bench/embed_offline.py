"""Fill `eval --compare`'s embedding cache on another machine (a GPU), so that a comparison of
many pipelines over a corpus embeds nothing here.

    # here: the unique texts every pipeline would embed that the cache lacks
    python tests/bench/embed_offline.py dump --corpus DIR --compare LIST \\
        --cache vectors.sqlite --out texts.jsonl.gz [--max-tokens 256] [--tokenizer minilm]
    # there (numpy, tokenizers and torch or onnxruntime; chunkwise imported from the checkout
    # in the current folder, no other dependency):
    python embed_offline.py embed --texts texts.jsonl.gz --model-dir MODEL --out OUTDIR \\
        [--device cuda]
    # here again: the vectors into the cache, under the local model's identity
    python tests/bench/embed_offline.py load --texts texts.jsonl.gz --vectors OUTDIR \\
        --cache vectors.sqlite

`--compare` takes what `chunkwise eval --compare` takes (strategies, `NAME[key=value]`
variants, peers). MODEL is a folder with the pinned int8 `model.onnx` and `tokenizer.json`:
the same weights as here, so the vectors are this model's (cosine >= 0.999 to the CPU's,
docs/ingest.md). Vectors come back as float16 `.npy` parts of at most 40,000 rows and are
stored in the cache as float32.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

PART_ROWS = 20_000


def cmd_dump(args: argparse.Namespace) -> int:
    from chunkwise.chunking.api import Chunker, parse_file
    from chunkwise.embeddings.functions import resolve_embedder
    from chunkwise.evaluation.eval import split_names, strategy_variant
    from chunkwise.evaluation.peers import corpus_files, is_peer, run_peer

    files = corpus_files(args.corpus)
    texts: dict[str, None] = {}
    for name in split_names(args.compare):
        t0 = time.perf_counter()
        n = 0
        if is_peer(name):
            run = run_peer(name, files, max_tokens=args.max_tokens, tokenizer=args.tokenizer)
            for c in run.chunks:
                texts.setdefault(c.text)
                n += 1
        else:
            base, options = strategy_variant(name)
            chunker = Chunker(**{"strategy": base, "max_tokens": args.max_tokens,
                                 "tokenizer": args.tokenizer, **options})
            for path, source in files:
                try:
                    doc = parse_file(path, source=source)
                except Exception as e:  # noqa: BLE001 - reported, the rest goes on
                    print(f"{source}: {e}", file=sys.stderr)
                    continue
                for c in chunker.chunk_document(doc):
                    texts.setdefault(c.embed_text)
                    n += 1
        print(f"{name}: {n} chunks in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    identity = resolve_embedder(None).identity
    have = _cached_keys(args.cache, identity, list(texts)) if args.cache else set()
    todo = [t for t in texts if _key(identity, t) not in have]
    with gzip.open(args.out, "wt", encoding="utf-8") as f:
        for t in todo:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    print(f"{len(texts)} unique texts, {len(todo)} not in the cache -> {args.out}",
          file=sys.stderr)
    return 0


def _key(identity: str, text: str) -> bytes:
    # chunkwise.embeddings.cached_embedder's key
    return hashlib.sha256(identity.encode() + b"\0" + text.encode("utf-8", "surrogatepass")).digest()


def _cached_keys(cache: str, identity: str, texts: list[str]) -> set[bytes]:
    if not Path(cache).exists():
        return set()
    db = sqlite3.connect(cache)
    keys = [_key(identity, t) for t in texts]
    found: set[bytes] = set()
    for i in range(0, len(keys), 500):
        part = keys[i:i + 500]
        found.update(k for (k,) in db.execute(
            f"SELECT key FROM vectors WHERE key IN ({','.join('?' * len(part))})", part))
    return found


def read_texts(path: str) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def cmd_embed(args: argparse.Namespace) -> int:
    root = Path.cwd()
    sys.path.insert(0, str(root / "src"))
    import chunkwise

    chunkwise.__path__.append(str(root))  # chunkwise.parsers -> parsers/, as pyproject maps it
    from chunkwise.embeddings.minilm import MiniLMEmbedder

    texts = read_texts(args.texts)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    emb = MiniLMEmbedder(args.model_dir, device=args.device)
    print("model:", emb.load(), flush=True)
    t0 = time.perf_counter()
    for part, lo in enumerate(range(0, len(texts), PART_ROWS)):
        vectors = emb.embed(texts[lo:lo + PART_ROWS])
        np.save(out / f"vectors_{part:03d}.npy", vectors.astype(np.float16))
        print(f"part {part}: {lo + len(vectors)}/{len(texts)} texts, "
              f"{(lo + len(vectors)) / (time.perf_counter() - t0):.0f} texts/s", flush=True)
    return 0


def cmd_load(args: argparse.Namespace) -> int:
    from chunkwise.embeddings.functions import resolve_embedder

    texts = read_texts(args.texts)
    parts = sorted(Path(args.vectors).glob("vectors_*.npy"))
    vectors = np.concatenate([np.load(p) for p in parts]).astype(np.float32)
    if len(vectors) != len(texts):
        raise SystemExit(f"{len(texts)} texts but {len(vectors)} vectors")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # float16 rounding
    identity = resolve_embedder(None).identity
    db = sqlite3.connect(args.cache)
    db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB)")
    with db:
        db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                       [(_key(identity, t), v.tobytes()) for t, v in zip(texts, vectors)])
    print(f"{len(texts)} vectors into {args.cache} ({identity})", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--corpus", nargs="+", required=True)
    d.add_argument("--compare", required=True)
    d.add_argument("--cache", default=None)
    d.add_argument("--out", required=True)
    d.add_argument("--max-tokens", type=int, default=256)
    d.add_argument("--tokenizer", default="minilm")
    e = sub.add_parser("embed")
    e.add_argument("--texts", required=True)
    e.add_argument("--model-dir", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--device", default="cuda")
    lo = sub.add_parser("load")
    lo.add_argument("--texts", required=True)
    lo.add_argument("--vectors", required=True)
    lo.add_argument("--cache", required=True)
    args = ap.parse_args(argv)
    return {"dump": cmd_dump, "embed": cmd_embed, "load": cmd_load}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
