"""Retrieval evaluation: questions with known answer locations, scored against a collection.

    >>> from chunkwise.evaluation.eval import load_questions, evaluate
    >>> qs = load_questions("questions.jsonl", root="corpus")
    >>> report = evaluate(qs, db_path="chunkwise-db")
    >>> report.metrics["mrr"], report.metrics["recall@5"]

Question sets (the file's format, excerpts, how sources are matched) are
`chunkwise.evaluation.questions`; the measures themselves `chunkwise.evaluation.metrics`.
Comparing strategies (`compare`) evaluates one collection per strategy.

**Relevance.** A retrieved chunk is *relevant* when it comes from the expected source and,
if the question has a reference span, holds enough of it, by the rule chosen (`relevance=`,
`--relevance`; units are non-whitespace characters, as below):

- `overlap` (default): at least one unit of the reference. Lenient: a chunking that cuts an
  answer in two gets two relevant chunks, so two chances to rank one of them high.
- `most`: at least half the units of the reference.
- `whole`: every unit of the reference, the rule of top-k accuracy in open-domain QA (DPR:
  a retrieved passage counts when it contains the answer). A reference longer than a chunk
  can hold is relevant nowhere, so keep references shorter than the budget.

**Metrics**, each the mean over questions, for every cut-off k:

- `hit@k`: a relevant chunk is among the top k; `source_hit@k`: a chunk of the expected
  source is (the same thing for questions without a span).
- `mrr`: mean of 1 / rank of the first relevant chunk within the top max(k) (0 if none).
- `answerable`: the share of questions for which the collection holds a relevant chunk at
  all, ranked or not: the ceiling of hit@k, set by the chunking alone. Under `whole` it is
  the share of answers that some chunk holds in one piece.
- `ndcg@k`: binary-relevance DCG of the top k, sum of 1 / log2(rank + 1) over relevant
  ranks, divided by the ideal DCG of min(k, R) relevant chunks, where R is the number of
  relevant chunks the collection holds (known exactly from the stored offsets).
- `recall@k`, `precision@k`, `iou@k` (questions with a span only): the token-level metrics
  of Chroma's "Evaluating Chunking Strategies for Retrieval", computed on exact offsets.
  The unit is a *non-whitespace character* of the canonical text, so where a chunker puts
  blank lines and indentation does not matter. With R the reference span, C the top-k
  chunks, U the union of the spans of those chunks that come from the same source, and
  |C| the total units of all top-k chunks (every source; a unit held by two overlapping
  chunks counts twice, as in Chroma's report, so overlap costs precision):
  recall = |R ∩ U| / |R|, precision = |R ∩ U| / |C|,
  IoU = |R ∩ U| / (|R| + |C| − |R ∩ U|).
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError
from .metrics import (SpanScores, UnitCounter, count_units, dcg, merge_spans, ndcg,
                      paired_difference, reciprocal_rank, span_scores)
from .questions import (Question, QuestionsError, QuestionSet, load_questions,
                        locate_excerpt, match_sources)

__all__ = [
    "DEFAULT_KS", "RELEVANCE", "REPORT_K", "EvalReport", "Question", "QuestionResult",
    "QuestionSet", "QuestionsError", "RetrievedChunk", "SpanScores", "UnitCounter",
    "check_relevance", "compare", "count_units", "dcg", "differences", "evaluate",
    "load_questions", "locate_excerpt", "match_sources", "merge_spans", "ndcg",
    "paired_difference", "parse_ks", "per_question", "reciprocal_rank", "span_scores",
    "split_names", "strategy_variant", "summarise",
]

log = logging.getLogger(__name__)

DEFAULT_KS = (1, 3, 5, 10)
#: how much of a question's reference span a chunk must hold to be relevant (module docstring)
RELEVANCE = ("overlap", "most", "whole")
#: the k of the single-number columns (NDCG, recall, precision, IoU) in comparison tables
REPORT_K = 5


# -- evaluation -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RetrievedChunk:
    source: str
    start: int
    end: int
    units: int
    distance: float
    tokens: int = 0


@dataclass
class QuestionResult:
    """How one question fared: ranks are 1-based, None when not in the top max(k)."""

    question: Question
    source: str
    retrieved: list[RetrievedChunk]
    relevant: list[bool]
    n_relevant: int
    rank: int | None
    source_rank: int | None
    scores: dict[int, SpanScores] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        q = self.question
        out: dict[str, Any] = {
            "line": q.line, "question": q.question, "source": q.source,
            "stored_source": self.source, "start": q.start, "end": q.end, "rank": self.rank,
            "source_rank": self.source_rank,
            "relevant_in_collection": self.n_relevant,
            "retrieved": [{"source": c.source, "start": c.start, "end": c.end,
                           "distance": round(c.distance, 6), "tokens": c.tokens}
                          for c in self.retrieved],
        }
        if self.scores:
            out["scores"] = {str(k): {"recall": s.recall, "precision": s.precision, "iou": s.iou}
                             for k, s in self.scores.items()}
        if q.extra:
            out["extra"] = dict(q.extra)
        return out


@dataclass
class EvalReport:
    """Metrics of one collection (see the module docstring for their definitions)."""

    collection: str
    ks: tuple[int, ...]
    metrics: dict[str, float]
    results: list[QuestionResult]
    chunks: int
    mean_tokens: float
    strategy: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    relevance: str = "overlap"
    #: peers only: how many chunks were located in the canonical text each way (`peers`)
    located: dict[str, int] | None = None

    @property
    def questions(self) -> int:
        return len(self.results)

    @property
    def with_spans(self) -> int:
        return sum(r.question.has_span for r in self.results)

    def to_dict(self, *, details: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "collection": self.collection, "strategy": self.strategy, "ks": list(self.ks),
            "questions": self.questions, "with_spans": self.with_spans,
            "relevance": self.relevance, "chunks": self.chunks,
            "mean_tokens": round(self.mean_tokens, 2),
            "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }
        if self.located is not None:
            out["located"] = dict(self.located)
        if details:
            out["results"] = [r.to_dict() for r in self.results]
        return out


def parse_ks(spec: str | Sequence[int]) -> tuple[int, ...]:
    """`"1,3,5,10"` -> (1, 3, 5, 10): positive, deduplicated, sorted."""
    if isinstance(spec, str):
        try:
            values = [int(p) for p in spec.split(",") if p.strip()]
        except ValueError as e:
            raise ConfigError(f"k must be a comma-separated list of integers, got {spec!r}") from e
    else:
        values = list(spec)
    if not values or any(not isinstance(v, int) or v < 1 for v in values):
        raise ConfigError(f"k values must be positive integers, got {spec!r}")
    return tuple(sorted(set(values)))


def evaluate(qset: QuestionSet, *, ks: Sequence[int] = DEFAULT_KS,
             collection: str = "chunkwise", client: Any = None,
             db_path: str | os.PathLike | None = None, host: str | None = None,
             port: int | None = None, embedder: Any = None,
             retry_delays: Sequence[float] | None = None, timeout: float | None = None,
             cwd: str | os.PathLike | None = None, strategy: str | None = None,
             exact: bool = False, relevance: str = "overlap",
             expand_tokens: int | None = None, mode: str = "dense",
             lexical: Any = True,
             searcher: Callable[[str, int], list[Any]] | None = None,
             sources: Sequence[str] = ()) -> EvalReport:
    """Ask every question of `qset` against a collection and score the answers.

    With `expand_tokens`, each retrieved chunk is replaced by its parent section cut to that
    many tokens around it (`chunkwise.chroma.expand`, what `query --expand section` returns): the
    score is then that of small-to-big retrieval, and `tokens@k` its context cost.

    With `exact`, the nearest chunks are found by brute force over every stored vector
    (`chunkwise.chroma.search_exact`) rather than through Chroma's approximate HNSW index:
    the ranking then depends only on the chunks and the model, which is what a comparison
    of chunkings should measure. Without it, the collection is queried as an application
    would query it.

    `relevance` is how much of a reference span a chunk must hold to be relevant: `overlap`,
    `most` or `whole` (see the module docstring).

    `mode` is the search asked: `dense` (the vectors, default), `hybrid` (vectors and the
    lexical index fused, what `chunkwise query` does) or `lexical` (`chunkwise.chroma.search`);
    `exact` ranks the vectors alone, so it takes `dense` only. `searcher(question, k)`, when
    given, asks each question instead (a peer's own retriever, `peer_hybrid`). `sources`: more
    names a question may refer to though the collection holds no chunk of them (a file a peer
    could not read: its questions are misses, not an error).

    Raises `QuestionsError` when a question's source is not in the collection, `StoreError`
    when the collection cannot be read, `ConfigError` for an unknown `relevance`."""
    from ..chroma.queries import iter_collection, query, search_exact
    from ..chroma.store import RETRY_DELAYS

    from ..chroma.search import check_mode, search

    ks = parse_ks(ks)
    check_relevance(relevance)
    if check_mode(mode) != "dense" and exact:
        raise ConfigError("exact retrieval ranks the vectors alone: use mode dense, or leave "
                          "out exact")
    location = {"client": client, "db_path": db_path, "host": host, "port": port,
                "collection": collection}
    if timeout is not None:
        location["timeout"] = timeout
    t0 = time.perf_counter()
    from ..chroma.expand import Member, expand, section_of

    spans: dict[str, list[tuple[int, int]]] = {}
    tokens: list[int] = []
    members_of: dict[str, list[Member]] = {}
    units_at: dict[tuple[str, int], int] = {}
    for _id, _doc, meta in iter_collection(**location):
        src = str(meta.get("source", ""))
        spans.setdefault(src, []).append((int(meta.get("start", 0)), int(meta.get("end", 0))))
        if isinstance(meta.get("tokens"), int):
            tokens.append(meta["tokens"])
        if expand_tokens:
            start = int(meta.get("start", 0))
            members_of.setdefault(src, []).append(Member(
                start, int(meta.get("end", 0)), int(meta.get("tokens") or 0)))
            units_at[(src, start)] = count_units(_doc or "")
    starts_of = {}
    for src, members in members_of.items():
        members.sort(key=lambda m: m.start)
        starts_of[src] = [m.start for m in members]

    def expanded(c: RetrievedChunk, meta: Mapping[str, Any]) -> RetrievedChunk:
        """The hit's section cut to `expand_tokens`: the stored chunks inside the section
        (they tile it) around the hit."""
        from bisect import bisect_left

        sec = section_of(meta)
        if sec is None or c.source not in members_of:
            return c
        ms, st = members_of[c.source], starts_of[c.source]
        members = [m for m in ms[bisect_left(st, sec[1]):bisect_left(st, sec[2])]
                   if m.end <= sec[2]]
        at = next((i for i, m in enumerate(members) if m.start == c.start), None)
        if at is None:
            return c
        e = expand(members, at, max(expand_tokens, members[at].tokens))
        units = sum(units_at[(c.source, m.start)] for m in members if e.start <= m.start < e.end)
        return RetrievedChunk(c.source, e.start, e.end, units, c.distance, e.tokens)
    matched = match_sources(qset, [*spans, *sources], cwd=cwd)
    t1 = time.perf_counter()
    counters = {p: UnitCounter(t) for p, t in qset.texts.items()}
    if searcher is not None:
        answers = (searcher(q.question, max(ks)) for q in qset.questions)
    elif exact:
        answers = search_exact([q.question for q in qset.questions], k=max(ks),
                               embedder=embedder, **location)
    elif mode == "dense":
        delays = RETRY_DELAYS if retry_delays is None else retry_delays
        answers = (query(q.question, k=max(ks), embedder=embedder, retry_delays=delays,
                         **location) for q in qset.questions)
    else:
        delays = RETRY_DELAYS if retry_delays is None else retry_delays
        answers = (search(q.question, k=max(ks), mode=mode, embedder=embedder,
                          retry_delays=delays, lexical=lexical, **location)
                   for q in qset.questions)
    results = []
    for i, (q, hits) in enumerate(zip(qset.questions, answers)):
        retrieved = [RetrievedChunk(h.source, int(h.metadata.get("start", 0)),
                                    int(h.metadata.get("end", 0)), count_units(h.text),
                                    h.distance if h.distance is not None else float("nan"),
                                    int(h.metadata.get("tokens") or 0))
                     for h in hits]
        if expand_tokens:
            retrieved = [expanded(c, h.metadata) for c, h in zip(retrieved, hits)]
        results.append(_score(q, matched[i], retrieved, spans.get(matched[i], []), ks,
                              counters.get(q.path), relevance))
    t2 = time.perf_counter()
    return EvalReport(collection=collection, ks=ks, metrics=summarise(results, ks),
                      results=results, chunks=sum(len(v) for v in spans.values()),
                      mean_tokens=sum(tokens) / len(tokens) if tokens else 0.0,
                      strategy=strategy, seconds={"read": t1 - t0, "query": t2 - t1},
                      relevance=relevance)


def check_relevance(relevance: str) -> str:
    """`relevance` itself, or a `ConfigError` naming the known rules."""
    if relevance not in RELEVANCE:
        raise ConfigError(f"unknown relevance rule {relevance!r}; known: {', '.join(RELEVANCE)}")
    return relevance


def _score(q: Question, source: str, retrieved: list[RetrievedChunk],
           stored_spans: list[tuple[int, int]], ks: tuple[int, ...],
           count: Callable[[int, int], int] | None,
           relevance: str = "overlap") -> QuestionResult:
    count = count or (lambda a, b: b - a)
    ref = count(q.start, q.end) if q.has_span else 0
    need = ref if relevance == "whole" else (ref + 1) // 2  # units, unless `overlap`

    def holds(s: int, e: int) -> bool:
        if not q.has_span:
            return True
        lo, hi = max(s, q.start), min(e, q.end)
        return lo < hi and (relevance == "overlap" or count(lo, hi) >= need)

    same = [c.source == source for c in retrieved]
    relevant = [ok and holds(c.start, c.end) for ok, c in zip(same, retrieved)]
    n_relevant = sum(holds(s, e) for s, e in stored_spans)
    rank = next((i for i, r in enumerate(relevant, 1) if r), None)
    source_rank = next((i for i, r in enumerate(same, 1) if r), None)
    scores = {}
    if q.has_span:
        for k in ks:
            top = retrieved[:k]
            mine = [(c.start, c.end) for c in top if c.source == source]
            other = sum(c.units for c in top if c.source != source)
            scores[k] = span_scores((q.start, q.end), mine, other=other, count=count)
    return QuestionResult(q, source, retrieved, relevant, n_relevant, rank, source_rank, scores)


def summarise(results: Sequence[QuestionResult], ks: Sequence[int]) -> dict[str, float]:
    """Means over questions (span metrics over the questions that have a span)."""
    n = len(results) or 1
    out: dict[str, float] = {}
    for k in ks:
        out[f"hit@{k}"] = sum(r.rank is not None and r.rank <= k for r in results) / n
        out[f"source_hit@{k}"] = sum(r.source_rank is not None and r.source_rank <= k
                                     for r in results) / n
    out["mrr"] = sum(reciprocal_rank(r.relevant) for r in results) / n
    for k in ks:  # the context a pipeline spends: tokens of the top k chunks' embed texts
        out[f"tokens@{k}"] = sum(sum(c.tokens for c in r.retrieved[:k]) for r in results) / n
    out["answerable"] = sum(r.n_relevant > 0 for r in results) / n
    for k in ks:
        out[f"ndcg@{k}"] = sum(ndcg(r.relevant, k, r.n_relevant) for r in results) / n
    spanned = [r for r in results if r.scores]
    if spanned:
        m = len(spanned)
        for k in ks:
            out[f"recall@{k}"] = sum(r.scores[k].recall for r in spanned) / m
            out[f"precision@{k}"] = sum(r.scores[k].precision for r in spanned) / m
            out[f"iou@{k}"] = sum(r.scores[k].iou for r in spanned) / m
    return out


def per_question(report: EvalReport, metric: str) -> list[float]:
    """One value per question of `metric`: `mrr` (the reciprocal rank, every question) or
    `recall@k`, `precision@k`, `iou@k` (the questions with a reference span)."""
    if metric == "mrr":
        return [reciprocal_rank(r.relevant) for r in report.results]
    name, _, k = metric.partition("@")
    if name not in ("recall", "precision", "iou") or not k.isdigit():
        raise ConfigError(f"no per-question values for metric {metric!r}")
    return [getattr(r.scores[int(k)], name) for r in report.results if r.scores]



def differences(reports: Sequence[EvalReport], reference: str,
                metrics: Sequence[str]) -> dict[str, dict[str, tuple[float, float, float]]]:
    """For every strategy but `reference`: `reference` minus it on each metric, paired over
    the questions, with a 95% bootstrap interval (see `paired_difference`)."""
    by_name = {r.strategy or r.collection: r for r in reports}
    if reference not in by_name:
        raise ConfigError(f"reference strategy {reference!r} is not among those compared")
    ref = by_name[reference]
    return {name: {m: paired_difference(per_question(ref, m), per_question(r, m))
                   for m in metrics}
            for name, r in by_name.items() if name != reference}


# -- comparing strategies -------------------------------------------------------------------
def split_names(spec: str) -> list[str]:
    """`--compare`'s list: names separated by commas outside brackets
    (`structure,structure[max_tokens=128,expand=512]` is two names)."""
    out, depth, cur = [], 0, []
    for ch in spec:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    return [n for n in out if n]


def strategy_variant(name: str) -> tuple[str, dict[str, Any]]:
    """`structure[views=none,max_tokens=128]` -> ("structure", {"views": "none",
    "max_tokens": 128}): a strategy with Chunker options, so that `--compare` can set two
    variants of one strategy side by side (values that are digits are integers; a list
    inside an option's value is separated by `+`: `views=code+table`)."""
    m = re.fullmatch(r"([\w-]+)(?:\[(.*)\])?", name.strip())
    if m is None:
        raise ConfigError(f"cannot read strategy {name!r}: expected NAME or NAME[key=value,...]")
    options: dict[str, Any] = {}
    for part in filter(None, (m.group(2) or "").split(",")):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"strategy {name!r}: expected key=value, got {part!r}")
        value = value.strip().replace("+", ",")
        options[key.strip()] = int(value) if value.isdigit() else value
    return m.group(1), options


def compare(qset: QuestionSet, corpus: Sequence[str | os.PathLike], strategies: Sequence[str], *,
            ks: Sequence[int] = DEFAULT_KS, db_path: str | os.PathLike | None = None,
            max_tokens: int = 256, tokenizer: str = "minilm", overlap: int = 0,
            embedder: Any = None, on_ingest: Callable[[str, Any], None] | None = None,
            embed_cache: str | os.PathLike | None = None,
            relevance: str = "overlap", mode: str = "dense") -> list[EvalReport]:
    """Chunk and embed `corpus` once per strategy into collection `eval-<strategy>` (in
    `db_path`, else a temporary database removed afterwards), evaluate each, and return the
    reports best first (by MRR, then hit@max(k)). Retrieval is exact (brute force, see
    `evaluate`), so differences between strategies are not search noise. Every strategy
    name is checked before anything is ingested; an unknown one is a `ConfigError`.
    `on_ingest(strategy, report)` is called after each ingest (e.g. to print failures).
    With `embed_cache` (an SQLite file, see `chunkwise.embeddings.cached_embedder`) a chunk
    text is embedded once across strategies and runs. `relevance`: see `evaluate`.

    `mode` `hybrid` searches chunkwise's collections as `chunkwise query` does (vectors and the
    lexical index fused, through the HNSW index) and the hybrid peers (`langchain:hybrid`,
    `llamaindex:hybrid`) with their own retrievers; the other peers are still ranked by their
    vectors exactly. A hybrid peer needs mode `hybrid`."""
    from ..chunking.api import Chunker
    from ..pipeline.runner import ingest
    from ..chunking.strategies import STRATEGIES
    from ..embeddings.functions import cached_embedder, resolve_embedder
    from .peers import PEERS

    ks = parse_ks(ks)
    check_relevance(relevance)
    names = list(dict.fromkeys(s.strip() for s in strategies if s.strip()))
    if not names:
        raise ConfigError("no strategies to compare")
    from .peers import check_peer, corpus_files, is_peer, run_peer, store_peer

    for name in names:
        if is_peer(name):
            check_peer(name)
    peers = [s for s in names if is_peer(s)]
    from ..chroma.search import check_mode
    from .peer_hybrid import HYBRIDS, hybrid_searcher

    if check_mode(mode) not in ("dense", "hybrid"):
        raise ConfigError(f"--compare ranks by the vectors (dense) or hybrid, not {mode}")
    hybrid_peers = [s for s in peers if s in HYBRIDS]
    if hybrid_peers and mode != "hybrid":
        raise ConfigError(f"{', '.join(hybrid_peers)}: a peer's hybrid search; compare it "
                          f"with --mode hybrid")
    variants = {s: strategy_variant(s) for s in names if s not in peers}
    unknown = [s for s, (base, _) in variants.items() if base not in STRATEGIES]
    if unknown:
        raise ConfigError(f"unknown strateg{'ies' if len(unknown) > 1 else 'y'} "
                          f"{', '.join(map(repr, unknown))}; known: {', '.join(STRATEGIES)} "
                          f"and the peers {', '.join(PEERS)}")
    embedder = resolve_embedder(embedder)
    if embed_cache is not None:
        embedder = cached_embedder(embedder, embed_cache)
    chunkers = {}
    expands = {s: options.pop("expand", None) for s, (_, options) in variants.items()}
    for s, (base, options) in variants.items():
        try:
            chunkers[s] = Chunker(**{"strategy": base, "max_tokens": max_tokens,
                                     "tokenizer": tokenizer, "overlap": overlap, **options})
        except TypeError as e:
            raise ConfigError(f"strategy {s!r}: {e}") from None
    if not corpus:
        raise ConfigError("no corpus paths to ingest (--corpus)")
    tmp = None
    if db_path is None:
        tmp = tempfile.TemporaryDirectory(prefix="chunkwise-eval-")
        db_path = tmp.name
    try:
        reports = []
        files = corpus_files(corpus) if peers else []  # walked once for every peer
        corpus_sources = [source for _, source in files]
        for name in peers:
            collection = "eval-" + name.replace(":", "-")
            t0 = time.perf_counter()
            run = run_peer(name, files, max_tokens=max_tokens, tokenizer=tokenizer)
            records = store_peer(run, db_path=db_path, collection=collection,
                                 embedder=embedder)
            searcher = (hybrid_searcher(name, records, db_path=db_path, collection=collection,
                                        embedder=embedder) if name in HYBRIDS else None)
            seconds = time.perf_counter() - t0
            if on_ingest is not None:
                on_ingest(name, run)
            report = evaluate(qset, ks=ks, db_path=db_path, collection=collection,
                              embedder=embedder, strategy=name, exact=searcher is None,
                              relevance=relevance, searcher=searcher,
                              sources=corpus_sources)
            report.seconds["ingest"] = seconds
            report.located = run.located
            reports.append(report)
        for name, chunker in chunkers.items():
            collection = "eval-" + re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-")
            t0 = time.perf_counter()
            ingested = ingest(corpus, chunker=chunker, db_path=db_path, collection=collection,
                              embedder=embedder)
            seconds = time.perf_counter() - t0
            if on_ingest is not None:
                on_ingest(name, ingested)
            report = evaluate(qset, ks=ks, db_path=db_path, collection=collection,
                              embedder=embedder, strategy=name, exact=mode == "dense",
                              relevance=relevance, expand_tokens=expands[name], mode=mode)
            report.seconds["ingest"] = seconds
            reports.append(report)
    finally:
        if tmp is not None:
            tmp.cleanup()
    top = max(ks)
    return sorted(reports, key=lambda r: (-r.metrics["mrr"], -r.metrics[f"hit@{top}"]))
