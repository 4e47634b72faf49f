"""The table-rows policies measured (docs/ingest.md, "Table rows"): the question set and corpus
they were scored on, and what each policy costs the embedder.

    python tests/bench/table_rows.py setup DIR      # DIR/tables.jsonl and DIR/corpus/
    chunkwise eval DIR/tables.jsonl --compare "structure[table_rows=row],\\
        structure[table_rows=grouped],structure[table_rows=auto]" --corpus DIR/corpus \\
        --root DIR/corpus --embed-cache DIR/vectors.sqlite --json --details > DIR/cmp.json
    python tests/bench/eval_subsets.py DIR/cmp.json --reference "structure[table_rows=row]" \\
        --by kind,split,split+kind --markdown
    python tests/bench/table_rows.py cost DIR/corpus [--sample 160] [--rounds 3]

`setup`: the table questions (`tests/data/questions_code_tables.jsonl` kinds `csv` and
`table`, `tests/data/questions_office.jsonl` kind `xlsx`, each with its `split`), the CSV
questions of `tests/data/questions.jsonl` as split `earlier`, and the files they cite (but the
three large CSV files, whose rows the embedder here cannot afford one per vector: their bill
comes from `chunkwise ingest --dry-run`). `cost`: per policy, the chunks, the distinct embed
texts (and per MB), their minilm tokens, and the seconds the default embedder takes per text
on a random sample of each policy's texts (alternating rounds), times the texts.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
LARGE = {"csv/538__mayweather-mcgregor-tweets.csv", "csv/538__raw-polls-2016.csv",
         "csv/rust-csv__nfl-play-by-play.csv"}
POLICIES = ("row", "grouped", "auto")


def setup(out: Path) -> int:
    data = ROOT / "tests" / "data"
    questions = []
    for name, kinds in (("questions_code_tables.jsonl", {"csv", "table"}),
                        ("questions_office.jsonl", {"xlsx"})):
        for line in (data / name).read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            if q.get("kind") in kinds:
                questions.append(q)
    for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["source"].startswith("csv/"):
            questions.append({**q, "kind": "csv", "split": "earlier"})
    questions = [q for q in questions if q["source"] not in LARGE]
    for source in sorted({q["source"] for q in questions}):
        (out / "corpus" / source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / source, out / "corpus" / source)
    with (out / "tables.jsonl").open("w", encoding="utf-8") as f:
        for q in questions:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    print(f"{len(questions)} questions over {len({q['source'] for q in questions})} files "
          f"-> {out}", file=sys.stderr)
    return 0


def cost(corpus: Path, sample: int, rounds: int) -> int:
    from chunkwise import Chunker
    from chunkwise.chunking.api import parse_file
    from chunkwise.embeddings.functions import resolve_embedder

    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    docs = [parse_file(p, source=str(p.relative_to(corpus))) for p in files]
    mb = sum(p.stat().st_size for p in files) / 1e6
    texts = {}
    for policy in POLICIES:
        chunks = [c for d in docs for c in Chunker(table_rows=policy).chunk_document(d)]
        texts[policy] = list(dict.fromkeys(c.embed_text for c in chunks))
        print(f"{policy}: {len(chunks)} chunks, {len(texts[policy])} texts "
              f"({len(texts[policy]) / mb:.0f} per MB), "
              f"{sum(c.tokens for c in chunks)} tokens", flush=True)
    embedder = resolve_embedder(None)
    embedder.embed(["warm up"] * 8)
    rng = random.Random(7)
    picked = {p: rng.sample(t, min(sample, len(t))) for p, t in texts.items()}
    per: dict[str, list[float]] = {p: [] for p in POLICIES}
    for r in range(rounds):
        for policy in POLICIES if r % 2 == 0 else POLICIES[::-1]:
            t = time.perf_counter()
            embedder.embed(picked[policy])
            per[policy].append((time.perf_counter() - t) / len(picked[policy]))
    for policy in POLICIES:
        s = statistics.median(per[policy])
        print(f"{policy}: {s * 1000:.1f} ms per text, about {s * len(texts[policy]):.0f} s to "
              f"embed ({s * len(texts[policy]) / mb:.0f} s per MB)")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("setup")
    s.add_argument("out", type=Path)
    c = sub.add_parser("cost")
    c.add_argument("corpus", type=Path)
    c.add_argument("--sample", type=int, default=160)
    c.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if args.cmd == "setup":
        return setup(args.out)
    return cost(args.corpus, args.sample, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
