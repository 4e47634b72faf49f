"""Split a comparison by question subsets, with paired intervals against a reference.

    chunkwise eval QUESTIONS --compare LIST --corpus DIR --json --details > cmp.json
    python tests/bench/eval_subsets.py cmp.json [--reference structure] [--by kind,split,set]

For every subset (all questions, then each value of each `--by` key the questions carry, such
as `kind` = code / csv / table / markdown …, `split` = tune / heldout; `split+group` for each
pair of values of two keys) and every pipeline:
hit@1, hit@5, MRR@10, mean tokens of the top 5 chunks (the context it spends), then the
reference minus each other pipeline on MRR and hit@5, paired over the subset's questions,
with 95% bootstrap intervals (`chunkwise.evaluation.eval.paired_difference`). `--markdown` prints the
tables as Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys

from chunkwise.evaluation.eval import paired_difference


def per_question(strategy: dict) -> dict[int, dict]:
    out = {}
    for r in strategy["results"]:
        rank = r["rank"]
        out[r["line"]] = {
            "rr": 1.0 / rank if rank else 0.0,
            "hit1": float(rank is not None and rank <= 1),
            "hit5": float(rank is not None and rank <= 5),
            "tok5": sum(c.get("tokens", 0) for c in r["retrieved"][:5]),
            "extra": r.get("extra", {}),
        }
    return out


def subset_value(extra: dict, key: str) -> str | None:
    """The question's value for `key`; `a+b` joins two keys (`split+group` = `heldout python`).
    None when the question lacks one of them."""
    parts = key.split("+")
    if not all(p in extra for p in parts):
        return None
    return " ".join(str(extra[p]) for p in parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--reference", default=None)
    ap.add_argument("--by", default="kind,split,set")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args(argv)
    data = json.load(open(args.report))
    strategies = {s["strategy"]: s for s in data["strategies"]}
    ref = args.reference or data.get("differences", {}).get("reference") or next(iter(strategies))
    pq = {name: per_question(s) for name, s in strategies.items()}
    lines = sorted(pq[ref])
    subsets = [("all", lines)]
    for key in [k for k in args.by.split(",") if k]:
        value = {l: subset_value(pq[ref][l]["extra"], key) for l in lines}
        for v in sorted({v for v in value.values() if v is not None}):
            subsets.append((f"{key}={v}", [l for l in lines if value[l] == v]))
    order = [ref] + [n for n in strategies if n != ref]
    for label, sub in subsets:
        n = len(sub)
        print(f"\n### {label} ({n} questions)\n" if args.markdown else f"\n== {label} ({n} questions)")
        head = ["pipeline", "hit@1", "hit@5", "MRR@10", "tokens@5", "chunks",
                f"{ref} − it: MRR [95%]", "hit@5 [95%]"]
        rows = []
        for name in order:
            q = pq[name]
            m = {k: sum(q[l][k] for l in sub) / n for k in ("hit1", "hit5", "rr", "tok5")}
            if name == ref:
                d1 = d5 = ""
            else:
                a, lo, hi = paired_difference([pq[ref][l]["rr"] for l in sub],
                                              [q[l]["rr"] for l in sub])
                d1 = f"{a:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                a, lo, hi = paired_difference([pq[ref][l]["hit5"] for l in sub],
                                              [q[l]["hit5"] for l in sub])
                d5 = f"{a:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            rows.append([name, f"{m['hit1']:.3f}", f"{m['hit5']:.3f}", f"{m['rr']:.3f}",
                         f"{m['tok5']:.0f}", str(strategies[name]["chunks"]), d1, d5])
        if args.markdown:
            print("| " + " | ".join(head) + " |")
            print("|" + "|".join("---" for _ in head) + "|")
            for r in rows:
                print("| " + " | ".join(r) + " |")
        else:
            w = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
            for r in [head] + rows:
                print("  ".join(str(x).ljust(w[i]) for i, x in enumerate(r)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
