"""The `why` command: where one question's expected passage is, which chunks hold it, how
they rank in each search mode, and the cause of a miss (`chunkwise.evaluation.explain`).

Registered on the main parser by `chunkwise.cli` through `register(subparsers)`. Exit status:
0 when it explained (found or not), 2 on bad input (an empty question or passage, a passage
occurring too often, an unknown source), 1 when the store fails (no database there, no such
collection, `--mode lexical` without a word index).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from .options import add_command, lexical_option, store_location, store_options

EXAMPLES = (
    'chunkwise why "How long do certificates last?" --expect "about 3 months" --db chunkwise-db',
    'chunkwise why "what does bloom.cc hash?" --expect "BloomHash" --source bloom.cc --json',
)

DESCRIPTION = """\
Find the passage TEXT in the documents the collection holds (exactly,
then with whitespace and hyphenation tolerated, then the best fuzzy
match), list the chunks that overlap it and their rank for QUESTION in
each search mode the collection has, the chunks ranked above them, and
a verdict: found, not extracted, split, beyond window, context missing
or outranked (definitions: the chunkwise.evaluation.explain docstring)."""


def register(subparsers: Any) -> None:
    """Add `why` to the main parser's subcommands."""
    p = add_command(subparsers, "why", cmd_why, description=DESCRIPTION, examples=EXAMPLES,
                    help="explain why a question does or does not retrieve a passage")
    p.add_argument("question", metavar="QUESTION")
    p.add_argument("--expect", required=True, metavar="TEXT",
                   help="the passage the question should retrieve")
    p.add_argument("--source", default=None, metavar="DOC",
                   help="look for the passage in this stored document only")
    p.add_argument("-k", "--k", type=int, default=5, metavar="K",
                   help="the cut-off of a hit (default 5)")
    p.add_argument("--mode", choices=("hybrid", "dense", "lexical"), default=None,
                   help="the mode the verdict judges (default hybrid, dense without a "
                        "lexical index)")
    p.add_argument("--relevance", default="overlap", choices=("overlap", "most", "whole"),
                   help="how much of the passage a chunk must hold to count, as in eval "
                        "(default overlap: any of it)")
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="embedder (default: the collection's own)")
    store_options(p)


def cmd_why(args: argparse.Namespace) -> int:
    from ..evaluation.explain import Explainer

    loc = store_location(args)
    loc.pop("retry_delays")
    quiet = logging.getLogger("chunkwise.chroma.search")  # the note below says it once
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        ex = Explainer(embedder=args.embedder, lexical=lexical_option(args), mode=args.mode,
                       **loc)
        if ex.lex is None:
            print(f"note: collection {args.collection!r} has no lexical index: dense ranks "
                  f"only (`chunkwise check --repair` builds it)", file=sys.stderr)
        e = ex.explain(args.question, args.expect, k=args.k, source=args.source,
                       relevance=args.relevance)
    finally:
        quiet.setLevel(level)  # `main()` may run in a longer process (a test, a notebook)
    if args.json:
        print(json.dumps(e.to_dict(), ensure_ascii=False, indent=1))
    else:
        for line in render(e):
            print(line)
    return 0


def render(e: Any) -> list[str]:
    """The explanation in at most about 24 lines of 100 columns."""
    out = [f"verdict: {e.verdict.upper()} — {e.reason}"[:300]]
    loc = e.location
    if loc is not None:
        sim = f", {loc.similarity:.0%} alike" if loc.match == "fuzzy" else ""
        more = f" (and {loc.occurrences - 1} more)" if loc.occurrences > 1 else ""
        out.append(f"passage: {loc.source} {loc.start}-{loc.end} ({loc.match}{sim}){more}")
    modes = list(e.modes)
    if e.holders:
        out.append(f"chunks holding it ({len(e.holders)}):   share  "
                   + "  ".join(f"{m:>7}" for m in modes) + "  distance  window")
        for h in e.holders[:6]:
            ranks = "  ".join(f"{_rank(h.ranks.get(m)):>7}" for m in modes)
            win = (f"ends at {h.window_end} ({h.tokens} tok)" if h.window_end is not None
                   else f"fits ({h.tokens} tok)")
            dist = f"{h.distance:.3f}" if h.distance is not None else "-"
            out.append(f"  {h.start:>7}-{h.end:<7} {h.section_path[:14]:14} {h.share:>5.0%}  "
                       f"{ranks}  {dist:>8}  {win}")
        if len(e.holders) > 6:
            out.append(f"  … {len(e.holders) - 6} more (--json)")
    for off, rule in e.cuts[:4]:
        out.append(f"cut at {off}: {rule}")
    if e.above:
        out.append(f"ranked above it ({e.mode}, top {e.k}):")
        for a in e.above[:e.k]:
            out.append(f"  {a.rank:>2}. {a.source} {a.start}-{a.end} [{a.why}] "
                       f"{a.preview}"[:100])
    out.append(f"({e.seconds:.2f} s)")
    return out


def _rank(r: int | None) -> str:
    from ..evaluation.explain import DEPTH

    return str(r) if r is not None else f">{DEPTH}"
