"""What the embedder sees of the chunk that holds a code question's answer (issue 34).

    chunkwise eval QUESTIONS --compare structure,llamaindex:sentence,… --corpus DIR \
        --root ROOT --json --details > cmp.json
    python tests/bench/code_misses.py QUESTIONS --root ROOT --report cmp.json \
        [--peer llamaindex:sentence] [--all] [--json out.json]

For every question that `structure` (chunkwise's default) misses at k=5 (every question with
`--all`), on the question's own file: chunkwise's chunks that hold part of the answer, with
their embed text (context, then text), their cosine similarity to the question under
all-MiniLM-L6-v2 and their rank among the file's chunks; the chunk of the file that ranks
first; the peer's chunks holding the answer, the same way; the corpus-wide ranks from the
report. Then the similarity of the answer chunk's text under other contexts, to tell what
moves it (none of them is what chunkwise embeds; they are probes, computed here only):

- `as embedded`: context + text, what chunkwise stores;
- `text only`: the chunk's text, no context;
- `def + doc line`: the file line, the qualified name of the innermost definition and the
  first line of its docstring or the comment above it, then the text;
- `window from def`: the definition's text from its header up to the answer's end, cut to
  the budget from the front (the lines a plain window over the definition would hold);
- `excerpt only`: the answer span alone (an upper bound on a chunk that is only the answer).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

from chunkwise.chunking.api import Chunker, parse_file
from chunkwise.embeddings.functions import cached_embedder, resolve_embedder
from chunkwise.evaluation.eval import load_questions
from chunkwise.evaluation.peers import run_peer
from chunkwise.sizing.sizers import get_sizer


def overlaps(a: int, b: int, start: int, end: int) -> bool:
    return a < end and start < b


def first_doc_line(text: str) -> str:
    """The first line of a definition's docstring (Python) or of the doc comment it starts
    with (the other languages: comments above a definition belong to it)."""
    m = re.search(r'(?:"""|\'\'\')\s*(\S[^\n]*)', text[:4000])
    if m:
        return m.group(1).strip(' "\'')
    m = re.match(r'\s*(?:/\*\*|///|//|#|--|\*)\s*([^\n]*\S)', text)
    return m.group(1).strip(" */") if m else ""


def def_span(doc, start: int, end: int) -> tuple[int, int] | None:
    """The smallest function/class/method section holding [start, end)."""
    best = None
    for s in doc.sections:
        if s.kind in ("function", "class", "method", "type") and s.start <= start and end <= s.end:
            if best is None or s.end - s.start < best.end - best.start:
                best = s
    return (best.start, best.end) if best else None


def window_before(text: str, a: int, b: int, sizer, budget: int) -> str:
    """The longest tail of text[a:b] that fits the budget (whole lines)."""
    lines = text[a:b].splitlines(keepends=True)
    while lines and sizer.count("".join(lines)) > budget:
        lines.pop(0)
    return "".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("questions")
    ap.add_argument("--root", required=True)
    ap.add_argument("--report", help="eval --compare --json --details output")
    ap.add_argument("--peer", default="llamaindex:sentence")
    ap.add_argument("--all", action="store_true", help="every question, not only the misses")
    ap.add_argument("--json", help="write the findings here")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--embed-cache", help="the SQLite vector cache of `eval --embed-cache`")
    args = ap.parse_args(argv)

    qs = load_questions(args.questions, root=args.root)
    ranks: dict[str, dict[str, int | None]] = {}  # strategy -> question -> rank
    if args.report:
        for s in json.load(open(args.report))["strategies"]:
            ranks[s["strategy"]] = {r["question"]: r["rank"] for r in s["results"]}
    ref = ranks.get("structure", {})
    emb = resolve_embedder("minilm")
    docs = cached_embedder(emb, args.embed_cache) if args.embed_cache else emb
    sizer = get_sizer("minilm")
    chunker = Chunker(max_tokens=args.max_tokens)
    out = []
    for q in qs.questions:
        if ref and not args.all and ref.get(q.question) is not None and ref[q.question] <= 5:
            continue
        path = Path(q.path)
        doc = parse_file(path)
        text = doc.text
        chunks = chunker.chunk_file(path)
        peer = run_peer(args.peer, [(path, q.source)], max_tokens=args.max_tokens).chunks
        qv = emb.embed([q.question])[0]
        cv = docs.embed([c.embed_text for c in chunks]) @ qv
        pv = docs.embed([p.text for p in peer]) @ qv
        order = np.argsort(-cv)
        porder = np.argsort(-pv)
        hold = [i for i, c in enumerate(chunks) if overlaps(c.start, c.end, q.start, q.end)]
        phold = [i for i, p in enumerate(peer) if overlaps(p.start, p.end, q.start, q.end)]
        rec = {"line": q.line, "question": q.question, "source": q.source,
               "extra": q.extra, "global_rank": {k: v.get(q.question) for k, v in ranks.items()},
               "chunkwise": [], "peer": [], "probes": {}}
        print("=" * 100)
        print(f"line {q.line}: {q.question}  [{q.source}]  "
              + ", ".join(f"{k}: {v.get(q.question)}" for k, v in ranks.items()))
        top = int(order[0])
        print(f"-- chunkwise top of file: cos {cv[top]:.3f}  {chunks[top].meta.get('symbol')}"
              f"  {chunks[top].embed_text[:160]!r}")
        for i in hold:
            c = chunks[i]
            r = int(np.where(order == i)[0][0]) + 1
            rec["chunkwise"].append({"rank_in_file": r, "of": len(chunks), "cos": float(cv[i]),
                                     "tokens": c.tokens, "context": c.context,
                                     "text": c.text, "symbol": c.meta.get("symbol")})
            print(f"-- chunkwise holds answer: rank in file {r}/{len(chunks)} cos {cv[i]:.3f} "
                  f"tokens {c.tokens} symbol {c.meta.get('symbol')}")
            print("   context: " + c.context.replace("\n", "\n            "))
            print("   text[:300]: " + repr(c.text[:300]))
        for i in phold:
            p = peer[i]
            r = int(np.where(porder == i)[0][0]) + 1
            rec["peer"].append({"rank_in_file": r, "of": len(peer), "cos": float(pv[i]),
                                "tokens": p.tokens, "text": p.text})
            print(f"-- {args.peer} holds answer: rank in file {r}/{len(peer)} cos {pv[i]:.3f} "
                  f"tokens {p.tokens}")
            print("   text[:300]: " + repr(p.text[:300]))
        # probes on the first chunkwise chunk holding the answer
        if hold:
            c = chunks[hold[0]]
            span = def_span(doc, q.start, q.end)
            first_line = c.context.split("\n", 1)[0] if c.context else ""
            probes = {"as embedded": c.embed_text, "text only": c.view or c.text,
                      "excerpt only": q.excerpt}
            if span:
                dtext = text[span[0]:span[1]]
                head = dtext.split("\n", 1)[0].strip()
                sym = c.meta.get("symbol") or ""
                probes["def + doc line"] = (f"{first_line}\n{sym}: {head}\n"
                                            f"{first_doc_line(dtext)}\n\n{c.text}")
                probes["window from def"] = window_before(text, span[0], max(q.end, c.end),
                                                           sizer, args.max_tokens)
            pvv = docs.embed(list(probes.values())) @ qv
            for (k, t), s in zip(probes.items(), pvv):
                rec["probes"][k] = {"cos": float(s), "tokens": sizer.count(t)}
                print(f"   probe {k:16s} cos {s:.3f}  tokens {sizer.count(t)}")
        out.append(rec)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
