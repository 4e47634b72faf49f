"""Throughput of the structured-data and notebook parsers, as ratios to a reference reader of
the same files in the same process (median of --runs):

  - JSON (corpus/data/*.json): `json.loads` vs chunkwise parse vs parse + chunk,
  - JSON Lines (*.jsonl): `json.loads` of every line vs parse vs parse + chunk,
  - YAML (*.yaml, *.yml) and TOML (*.toml): tree-sitter's own parse vs parse vs parse + chunk
    (and `tomllib.loads`, which the TOML parser also runs),
  - notebooks (corpus/notebooks/*.ipynb): `json.loads` vs parse vs parse + chunk,
  - guards: a 50 MB one-line JSON array of small objects and a 10,000-deep array, parse +
    chunk in seconds next to `json.loads` of the same text (the deep one: `json.loads`
    refuses it).

    python tests/bench/bench_data.py [--runs 5] [--tokenizer minilm] [--max-tokens 256]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

from chunkwise import Chunker
from chunkwise.parsers import get_parser
from _timing import timed  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"


def tree_sitter_parse(module: str) -> Callable[[bytes], object]:
    import importlib

    from tree_sitter import Language, Parser

    parser = Parser(Language(importlib.import_module(module).language()))
    return parser.parse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokenizer", default="minilm")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--no-guards", action="store_true")
    args = ap.parse_args()
    chunker = Chunker(tokenizer=args.tokenizer, max_tokens=args.max_tokens)
    import tomllib

    groups = [
        ("json", "data", (".json",), lambda b: json.loads(b), "json.loads"),
        ("jsonl", "data", (".jsonl",),
         lambda b: [json.loads(x) for x in b.splitlines() if x.strip()], "json.loads a line"),
        ("yaml", "data", (".yaml", ".yml"), tree_sitter_parse("tree_sitter_yaml"), "tree-sitter"),
        ("toml", "data", (".toml",), tree_sitter_parse("tree_sitter_toml"), "tree-sitter"),
        ("notebook", "notebooks", (".ipynb",), lambda b: json.loads(b), "json.loads"),
    ]
    print(f"tokenizer {args.tokenizer}, budget {args.max_tokens}, median of {args.runs}")
    print(f"{'format':9} {'files':>5} {'KB':>7}  {'reference':18} {'ref ms':>8} "
          f"{'parse ms':>9} {'x ref':>6} {'chunk ms':>9} {'x ref':>6} {'chunks':>7}")
    for fmt, folder, exts, reference, ref_name in groups:
        files = [p.read_bytes() for p in sorted((CORPUS / folder).glob("*"))
                 if p.suffix in exts]
        if not files:
            continue
        parse = get_parser(fmt)
        ref = timed(lambda: [reference(b) for b in files], args.runs)
        par = timed(lambda: [parse(b, source=f"f{exts[0]}") for b in files], args.runs)
        count = [0]

        def chunk() -> None:
            count[0] = sum(len(chunker.chunk_bytes(b, source=f"f{exts[0]}", format=fmt))
                           for b in files)
        chk = timed(chunk, args.runs)
        kb = sum(map(len, files)) / 1024
        print(f"{fmt:9} {len(files):5} {kb:7.0f}  {ref_name:18} {ref * 1e3:8.1f} "
              f"{par * 1e3:9.1f} {par / ref:6.1f} {chk * 1e3:9.1f} {chk / ref:6.1f} "
              f"{count[0]:7}")
        if fmt == "toml":
            tl = timed(lambda: [tomllib.loads(b.decode()) for b in files], args.runs)
            print(f"{'':9} {'':5} {'':7}  {'tomllib.loads':18} {tl * 1e3:8.1f}")
    if args.no_guards:
        return
    big = json.dumps([{"id": i, "name": f"item {i}", "ok": i % 2 == 0}
                      for i in range(1_300_000)], separators=(",", ":")).encode()
    deep = b"[" * 10_000 + b"]" * 10_000
    parse = get_parser("json")
    for name, data in (("50 MB one-line array", big), ("10,000-deep array", deep)):
        try:
            ref = timed(lambda: json.loads(data), 1)
            ref_s = f"{ref:.2f} s"
        except RecursionError:
            ref_s = "refused"
        par = timed(lambda: parse(data, source="g.json"), 1)
        chk = timed(lambda: chunker.chunk_bytes(data, source="g.json", format="json"), 1)
        print(f"guard {name} ({len(data) / 1e6:.1f} MB): json.loads {ref_s}, "
              f"parse {par:.2f} s, parse + chunk {chk:.2f} s")


if __name__ == "__main__":
    main()
