"""Score a questions file against the collections an earlier `eval --compare --db DB` stored.

    chunkwise eval warm.jsonl --compare structure,llamaindex:sentence,… --corpus DIR… \
        --root ROOT --db DB --embed-cache vectors.sqlite --json --details > warm.json
    python tests/bench/eval_stored.py QUESTIONS --root ROOT --db DB \
        --strategies structure,llamaindex:sentence,… > cmp.json
    python tests/bench/eval_subsets.py cmp.json --reference structure --by group,style,split

The output has the form of `chunkwise eval --compare --json --details` (exact retrieval, the
same `evaluate` call `compare` makes after ingesting), so `eval_subsets.py` reads it. Only
the questions are embedded: a new question set costs seconds, not a re-ingest of the corpus
(which is what `compare` would do, the peers' collections rebuilt from scratch).
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from chunkwise.embeddings.functions import resolve_embedder
from chunkwise.evaluation.eval import evaluate, load_questions, split_names


def collection_name(strategy: str) -> str:
    """The collection `compare` stores a strategy or a peer in (`langchain:recursive` ->
    `eval-langchain-recursive`, `structure[views=none]` -> `eval-structure-views-none`)."""
    return "eval-" + re.sub(r"[^A-Za-z0-9_-]+", "-", strategy).strip("-")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("questions")
    ap.add_argument("--root", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--strategies", required=True)
    ap.add_argument("--relevance", default="overlap")
    args = ap.parse_args(argv)
    qs = load_questions(args.questions, root=args.root)
    embedder = resolve_embedder("minilm")
    reports = [evaluate(qs, db_path=args.db, collection=collection_name(s), embedder=embedder,
                        strategy=s, exact=True, relevance=args.relevance)
               for s in split_names(args.strategies)]
    json.dump({"strategies": [r.to_dict(details=True) for r in reports]}, sys.stdout, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
