"""The measures retrieval evaluation averages over questions, each of one ranking or one
question (their definitions: `chunkwise.evaluation.eval`): DCG and NDCG, reciprocal rank,
the span scores (recall, precision, IoU on exact offsets, counted in non-whitespace
characters), and the paired bootstrap that says whether two strategies differ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence


def dcg(relevant: Sequence[bool], k: int) -> float:
    """Binary-relevance discounted cumulative gain of the top k: sum of 1/log2(rank + 1)."""
    return sum(1.0 / math.log2(rank + 1) for rank, rel in enumerate(relevant[:k], 1) if rel)


def ndcg(relevant: Sequence[bool], k: int, n_relevant: int) -> float:
    """DCG of the top k over the best DCG possible when `n_relevant` relevant items exist."""
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, n_relevant) + 1))
    return dcg(relevant, k) / ideal if ideal else 0.0


def reciprocal_rank(relevant: Sequence[bool]) -> float:
    """1 / rank of the first relevant item, 0 when there is none."""
    return next((1.0 / rank for rank, rel in enumerate(relevant, 1) if rel), 0.0)


def merge_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-overlapping union of half-open spans (touching spans are joined)."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(sp for sp in spans if sp[1] > sp[0]):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


@dataclass(frozen=True, slots=True)
class SpanScores:
    recall: float
    precision: float
    iou: float


def span_scores(reference: tuple[int, int], retrieved: Sequence[tuple[int, int]], *,
                other: int = 0, count: Callable[[int, int], int] | None = None) -> SpanScores:
    """Token-level scores of one question (see `chunkwise.evaluation.eval`).

    `retrieved`: spans of the top-k chunks from the reference's source (overlaps allowed);
    `other`: units in the top-k chunks from other sources; `count(a, b)`: units in
    `[a, b)` of the source (default: characters, `b - a`)."""
    count = count or (lambda a, b: b - a)
    a, b = reference
    ref = count(a, b)
    inter = sum(count(max(a, s), min(b, e)) for s, e in merge_spans(retrieved)
                if max(a, s) < min(b, e))
    total = sum(count(s, e) for s, e in retrieved) + other
    return SpanScores(recall=inter / ref if ref else 0.0,
                      precision=inter / total if total else 0.0,
                      iou=inter / (ref + total - inter) if ref + total - inter else 0.0)


class UnitCounter:
    """Non-whitespace characters in any span of one text, in O(1) per span."""

    def __init__(self, text: str) -> None:
        import numpy as np

        solid = np.fromiter((not c.isspace() for c in text), dtype=np.int64, count=len(text))
        self._prefix = np.concatenate(([0], np.cumsum(solid)))

    def __call__(self, start: int, end: int) -> int:
        return int(self._prefix[end] - self._prefix[start]) if end > start else 0


def count_units(text: str) -> int:
    """Non-whitespace characters of `text`."""
    return sum(len(run) for run in text.split())



def paired_difference(a: Sequence[float], b: Sequence[float], *, rounds: int = 10_000,
                      level: float = 0.95, seed: int = 0) -> tuple[float, float, float]:
    """Mean of `a[i] - b[i]` over paired questions, and its percentile bootstrap interval
    at `level`: the questions are resampled with replacement `rounds` times. The seed is
    fixed, so the same results always give the same interval."""
    import numpy as np

    if len(a) != len(b):
        raise ValueError(f"paired values differ in length: {len(a)} and {len(b)}")
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.size == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = np.empty(rounds)
    for lo in range(0, rounds, 1000):  # bounded memory: 1000 resamples at a time
        n = min(1000, rounds - lo)
        means[lo:lo + n] = d[rng.integers(0, d.size, size=(n, d.size))].mean(axis=1)
    low, high = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return float(d.mean()), float(low), float(high)

