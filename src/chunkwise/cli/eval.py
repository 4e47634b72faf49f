"""The `eval` command: how well a collection answers a set of questions, or which chunking
strategy answers them best.

Registered on the main parser by `chunkwise.cli` through `register(subparsers)`. Exit status:
0 when the evaluation ran; 2 when the questions file is invalid (every bad line is printed as
`file:line: reason` on stderr) or an option is; 1 when the store fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from .options import add_command, budget_options, lexical_option, store_location, store_options
from ..errors import ConfigError

EXAMPLES = (
    "chunkwise eval questions.jsonl --db chunkwise-db --root docs/ --k 1,3,5,10",
    "chunkwise eval questions.jsonl --compare structure,recursive,sentence,fixed,semantic "
    "--corpus docs/",
)

#: `eval --help`'s description, shown as it is written here
DESCRIPTION = """\
Ask every question of QUESTIONS (JSON Lines: question, source, and
optionally start/end or an excerpt of the source's canonical text) and
report hit rate@k, MRR, NDCG@k and, for questions with a span, recall,
precision and IoU of the retrieved chunks counted in non-whitespace
characters. With --compare, the corpus is chunked and embedded once per
strategy and the strategies are ranked by MRR; the first strategy listed
is then compared with each other one, question by question (its MRR and
IoU minus theirs, with 95% bootstrap intervals). Exit status 2 for an
invalid questions file (every bad line is listed). Definitions: the
chunkwise.evaluation.eval module docstring."""


def register(subparsers: Any) -> None:
    """Add `eval` to the main parser's subcommands."""
    p = add_command(subparsers, "eval", cmd_eval, description=DESCRIPTION, examples=EXAMPLES,
                    help="score retrieval against questions with known answers")
    p.add_argument("questions", metavar="QUESTIONS", help="questions file (.jsonl)")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="directory the questions' sources are relative to (default: the "
                        "--corpus directory when comparing, else the questions file's directory)")
    p.add_argument("--k", default="1,3,5,10", metavar="LIST",
                   help="cut-offs, comma-separated (default 1,3,5,10)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--details", action="store_true",
                   help="also list every question with the rank of its answer")
    p.add_argument("--relevance", default="overlap", choices=("overlap", "most", "whole"),
                   help="how much of a question's reference span a chunk must hold to count "
                        "as relevant: overlap (default: any of it), most (half or more) or "
                        "whole (all of it, as in QA top-k accuracy)")
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="embedder (default: the collection's own; minilm when comparing)")
    store_options(p)
    g = p.add_argument_group("comparing strategies")
    g.add_argument("--compare", default=None, metavar="LIST",
                   help="strategies to compare, comma-separated (collections eval-<strategy> "
                        "in --db, else in a temporary database); also other libraries' "
                        "chunkers: langchain:recursive, llamaindex:sentence, "
                        "llamaindex:markdown, chonkie:recursive, and with --mode hybrid "
                        "their hybrid retrievers langchain:hybrid, llamaindex:hybrid (pip "
                        "install 'chunkwise[compare]'; see chunkwise.evaluation.peers)")
    g.add_argument("--corpus", nargs="+", default=None, metavar="PATH",
                   help="files and folders to ingest for --compare")
    budget_options(g)
    g.add_argument("--embed-cache", default=None, metavar="FILE",
                   help="SQLite file keeping chunk vectors between strategies and runs, so "
                        "a re-run embeds only the chunks that changed")
    p.add_argument("--mode", choices=("hybrid", "dense", "lexical"), default=None,
                   help="the search asked, as in `chunkwise query` (default hybrid; dense "
                        "with --exact and --compare, which rank the vectors alone unless "
                        "--compare is given --mode hybrid)")
    p.add_argument("--exact", action="store_true",
                   help="rank by brute force over every stored vector instead of Chroma's "
                        "approximate index (on with --compare in dense mode)")
    g = p.add_argument_group("explaining the misses (chunkwise.evaluation.explain)")
    g.add_argument("--explain", action="store_true",
                   help="a verdict for every question whose answer is not in the top K "
                        "(--explain-k, default 5): "
                        "the causes per format, then the questions, worst first")
    g.add_argument("--explain-k", type=int, default=5, metavar="K",
                   help="a miss is a question whose answer is not in the top K (default 5)")
    g.add_argument("--explain-html", default=None, metavar="FILE",
                   help="also write them as one HTML page (implies --explain)")


def cmd_eval(args: argparse.Namespace) -> int:
    from ..evaluation.eval import (QuestionsError, compare, differences, evaluate, load_questions, parse_ks,
                                   split_names)

    ks = parse_ks(args.k)
    if args.compare is None and args.corpus:
        raise ConfigError("--corpus is only used with --compare")
    if args.compare is None and args.embed_cache:
        raise ConfigError("--embed-cache is only used with --compare")
    if args.compare is not None:
        if not args.corpus:
            raise ConfigError("--compare needs --corpus PATH… to ingest")
        if args.host is not None or args.port is not None:
            raise ConfigError("--compare writes to --db or a temporary database, not a server")
        if args.mode not in (None, "dense", "hybrid"):
            raise ConfigError("--compare ranks by the vectors exactly (--mode dense, the "
                              "default) or by hybrid search (--mode hybrid)")
    explaining = args.explain or args.explain_html is not None
    if explaining and args.compare is not None:
        raise ConfigError("--explain explains one collection's misses: leave out --compare")
    root = args.root
    if root is None and args.compare is not None and len(args.corpus) == 1 \
            and Path(args.corpus[0]).is_dir():
        root = args.corpus[0]
    try:
        qset = load_questions(args.questions, root=root)
        if args.compare is None:
            mode = args.mode or ("dense" if args.exact else "hybrid")
            reports = [evaluate(qset, ks=ks, embedder=args.embedder, exact=args.exact,
                                relevance=args.relevance, mode=mode,
                                lexical=lexical_option(args), **store_location(args))]
        else:
            reports = compare(qset, args.corpus, split_names(args.compare), ks=ks,
                              db_path=args.db, max_tokens=args.max_tokens,
                              tokenizer=args.tokenizer, overlap=args.overlap,
                              embedder=args.embedder, on_ingest=_ingested,
                              embed_cache=args.embed_cache, relevance=args.relevance,
                              mode=args.mode or "dense")
    except QuestionsError as e:
        for line in e.problems:
            print(line, file=sys.stderr)
        print(f"chunkwise: {len(e.problems)} invalid question line(s) in {args.questions}",
              file=sys.stderr)
        return 2
    diffs = None
    if args.compare is not None and len(reports) > 1:
        reference = split_names(args.compare)[0]
        diffs = (reference, differences(reports, reference, _diff_metrics(reports[0])))
    misses = _explain(args, reports[0], qset) if explaining else None
    if args.json:
        if args.compare is None:
            out: Any = reports[0].to_dict(details=True)
            if misses is not None:
                out["explain"] = [{"line": m.line, "rank": m.rank, "format": m.format,
                                   **m.explanation.to_dict()} for m in misses]
        else:
            out = {"strategies": [r.to_dict(details=args.details) for r in reports]}
            if diffs is not None:
                out["differences"] = {"reference": diffs[0], "interval": 0.95,
                                      "minus": {name: {m: [round(x, 6) for x in v]
                                                       for m, v in row.items()}
                                                for name, row in diffs[1].items()}}
        print(json.dumps(out, ensure_ascii=False))
        return 0
    if args.compare is None:
        print(format_report(reports[0]))
        if misses is not None:
            print(format_misses(misses, k=args.explain_k))
    else:
        print(format_comparison(reports))
        if diffs is not None:
            print(format_differences(*diffs))
    if args.details:
        for r in reports:
            print(format_details(r))
    return 0


def _explain(args: argparse.Namespace, report: Any, qset: Any) -> list[Any]:
    """The misses of `report` explained (and the page written, with --explain-html)."""
    from ..evaluation.explain import explain_misses

    loc = store_location(args)
    loc.pop("retry_delays")
    loc.pop("collection")
    mode = args.mode or ("dense" if args.exact else "hybrid")
    if args.explain_k < 1:
        raise ConfigError("--explain-k must be a positive integer")
    misses = explain_misses(report, k=args.explain_k, mode=mode, embedder=args.embedder,
                            lexical=lexical_option(args), **loc)
    if args.explain_html is not None:
        from ..evaluation.whypage import page

        Path(args.explain_html).write_text(page(
            misses, title=f"Why did it miss? {Path(args.questions).name} on "
                          f"{report.collection!r}", questions=report.questions),
            encoding="utf-8")
        print(f"eval: wrote {args.explain_html}", file=sys.stderr)
    return misses


def format_misses(misses: Sequence[Any], *, rows: int = 20, k: int = 5) -> str:
    """The causes per format, then the worst `rows` misses, one line each."""
    from ..evaluation.explain import CAUSES, DEPTH, cause_table

    if not misses:
        return f"no question missed the top {k}"
    short = {"not extracted": "not-extr", "found": "found", "split": "split",
             "beyond window": "window", "context missing": "context",
             "outranked": "outranked"}
    lines = [f"{len(misses)} questions missed the top {k}; causes per format "
             f"(chunkwise.evaluation.explain):",
             f"{'format':<10}" + "".join(f"{short[c]:>10}" for c in CAUSES) + f"{'misses':>8}"]
    for fmt, row in cause_table(misses).items():
        lines.append(f"{fmt:<10}" + "".join(f"{row[c] or '':>10}" for c in CAUSES)
                     + f"{sum(row.values()):>8}")
    lines.append(f"worst first: line  verdict    best rank  question")
    for m in misses[:rows]:
        e = m.explanation
        best = min((h.ranks.get(e.mode) or DEPTH + 1 for h in e.holders), default=None)
        said = "-" if best is None else (f">{DEPTH}" if best > DEPTH else str(best))
        lines.append(f"{m.line:>16}  {short[e.verdict]:<10} {said:>9}  {e.question}"[:110])
    if len(misses) > rows:
        lines.append(f"… {len(misses) - rows} more (--json, --explain-html)")
    return "\n".join(lines)


def _ingested(strategy: str, report: Any) -> None:
    for source, reason in report.failed:
        print(f"{source}: {reason}", file=sys.stderr)
    if hasattr(report, "located"):  # a peer (chunkwise.evaluation.peers.PeerRun)
        how = ", ".join(f"{n} by {k}" for k, n in sorted(report.located.items()))
        print(f"eval: {strategy}: {report.files} files, {len(report.chunks)} chunks, located "
              f"in the canonical text: {how}", file=sys.stderr)
        return
    print(f"eval: {strategy}: {report.files} files, {report.chunks} chunks "
          f"({report.written} embedded) in {report.seconds.get('total', 0):.1f}s",
          file=sys.stderr)


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def format_report(r: Any) -> str:
    """One collection: a row per k, then MRR."""
    m = r.metrics
    lines = [f"{r.questions} questions ({r.with_spans} with a reference span{_rule(r)}); "
             f"collection {r.collection!r}: {r.chunks} chunks, mean {r.mean_tokens:.1f} tokens",
             f"{'k':>4}  {'hit':>6}  {'src_hit':>7}  {'ndcg':>6}  {'recall':>6}  "
             f"{'precision':>9}  {'iou':>6}"]
    for k in r.ks:
        lines.append(f"{k:>4}  {_f(m[f'hit@{k}']):>6}  {_f(m[f'source_hit@{k}']):>7}  "
                     f"{_f(m[f'ndcg@{k}']):>6}  {_f(m.get(f'recall@{k}')):>6}  "
                     f"{_f(m.get(f'precision@{k}')):>9}  {_f(m.get(f'iou@{k}')):>6}")
    lines.append(f"MRR@{max(r.ks)}: {_f(m['mrr'])}; answerable (a relevant chunk exists): "
                 f"{_f(m['answerable'])}")
    return "\n".join(lines)


def format_comparison(reports: Sequence[Any]) -> str:
    """Strategies, best first: hit@k for every k, MRR, then NDCG/recall/precision/IoU at
    k = 5 (or the largest k below it, else the smallest), answerable, chunk count and mean
    tokens."""
    ks = reports[0].ks
    at = _report_k(ks)
    cols = [f"hit@{k}" for k in ks] + ["mrr", f"ndcg@{at}", f"recall@{at}",
                                        f"precision@{at}", f"iou@{at}", "answerable"]
    width = max(8, *(len(r.strategy or r.collection) for r in reports))
    head = f"{'strategy':<{width}}  " + "  ".join(f"{c:>{max(6, len(c))}}" for c in cols)
    head += f"  {'chunks':>7}  {'tokens':>6}  {f'tokens@{at}':>9}"
    lines = [head]
    for r in reports:
        row = f"{(r.strategy or r.collection):<{width}}  "
        row += "  ".join(f"{_f(r.metrics.get(c)):>{max(6, len(c))}}" for c in cols)
        row += f"  {r.chunks:>7}  {r.mean_tokens:>6.1f}  {r.metrics.get(f'tokens@{at}', 0):>9.0f}"
        lines.append(row)
    lines.append(f"{reports[0].questions} questions ({reports[0].with_spans} with a reference "
                 f"span{_rule(reports[0])}); best first by MRR; tokens@{at}: tokens of the top "
                 f"{at} chunks' embed texts, the context each pipeline spends")
    peers = [r for r in reports if r.located]
    if peers:
        lines.append("peers' chunks located in the canonical text: " + "; ".join(
            f"{r.strategy} " + ", ".join(f"{n} by {k}" for k, n in sorted(r.located.items()))
            for r in peers) + " (chunkwise.evaluation.peers)")
    return "\n".join(lines)


def _rule(report: Any) -> str:
    """How relevance was decided, when it matters (some question has a span)."""
    if not report.with_spans:
        return ""
    return {"overlap": "; relevant: holds any of it",
            "most": "; relevant: holds half of it or more",
            "whole": "; relevant: holds all of it"}[report.relevance]


def _report_k(ks: Sequence[int]) -> int:
    """The k of the single-number columns: REPORT_K (5), or the largest k below it, else
    the smallest."""
    from ..evaluation.eval import REPORT_K

    return max((k for k in ks if k <= REPORT_K), default=min(ks))


def _diff_metrics(report: Any) -> list[str]:
    """MRR, and IoU at the table's k when the questions have reference spans."""
    return ["mrr"] + ([f"iou@{_report_k(report.ks)}"] if report.with_spans else [])


def format_differences(reference: str, diffs: dict[str, dict[str, tuple[float, float,
                                                                         float]]]) -> str:
    """`reference` minus each other strategy, per metric, with its 95% interval."""
    width = max(8, *(len(n) for n in diffs))
    lines = [f"{reference} minus each other strategy, paired over the questions "
             f"(95% bootstrap interval; an interval that holds 0 is no difference):"]
    for name, row in diffs.items():
        cells = [f"{m.upper() if m == 'mrr' else m.replace('iou', 'IoU')} "
                 f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for m, (d, lo, hi) in row.items()]
        lines.append(f"  {name:<{width}}  " + "   ".join(cells))
    return "\n".join(lines)


def format_details(r: Any) -> str:
    """One line per question: rank of the first relevant chunk and of the first chunk of the
    expected source ('-' when not in the top max(k))."""
    label = r.strategy or r.collection
    out = [f"-- {label}: rank  src_rank  line  question"]
    for res in r.results:
        rank = "-" if res.rank is None else str(res.rank)
        src = "-" if res.source_rank is None else str(res.source_rank)
        out.append(f"{rank:>4}  {src:>8}  {res.question.line:>4}  {res.question.question}")
    return "\n".join(out)
