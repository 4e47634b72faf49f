"""The `semantic` strategy: structure first, embedding distance to choose the cuts.

The prose of a document (every leaf section that is not code, a table or front matter) is
split into sentences. At a sentence boundary, the window of `window` sentences that ends there
and the window that starts after it are compared: a window's vector is the mean of its
sentences' unit vectors, and the boundary's distance is the cosine distance of the two (block
comparison, as in TextTiling). A threshold over the document's distances (percentile,
standard deviation, interquartile range, or the rise of the distance: LangChain's
SemanticChunker's four) marks the breakpoints.

Sizing is the fitter's, under a policy (`_SemanticPolicy`) with two changes: whole units
(sections, or the sentences of a leaf) are never merged across a breakpoint, and where the
budget forces a cut the cut moves to the boundary of largest distance in the second half of
what fits. So every chunk is under the budget and is still inside one section or a run of
whole sections (invariant 4).

Cost: each prose sentence is embedded exactly once, whatever the window, in streamed batches
that keep only the vectors later boundaries still need, so memory stays bounded on long
documents. Code, tables and CSV files cost no embedding at all.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from bisect import bisect_left
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..fitter import Budget, Cuts, Fitter, Piece, Policy, Unit
from ...model import ParsedDocument
from ...sizing.sizers import Sizer
from ...text.splitting import NON_PROSE, WORD_LEVEL, trim
from ...text.sentences import sentence_spans
from ..structure import Node, build_tree
from .spec import SemanticOptions, Setup

log = logging.getLogger(__name__)

#: boundaries measured per step, and texts per call of the embedder
BATCH = 128
MAX_CALL = 256
#: texts per forward pass of the default model: sentences vary in length, small batches pad
#: little (and keep onnxruntime's buffers small)
EMBED_BATCH = 8
#: a cut forced by the budget moves to the largest distance in the second half of the chunk
_MIN_FILL = 0.5
#: breakpoints never leave a piece smaller than this share of the budget (see `_stops`)
_MIN_SHARE = 1 / 8
#: distances are rounded so that float noise cannot flip a threshold decision
_DECIMALS = 6

Embed = Callable[[Sequence[str]], Any]

#: the traces of the last documents planned, keyed by what decides them (strategy options,
#: embedder, document), so that `trace` after `plan` (`chunkwise inspect` draws the curve of
#: the chunks it shows) does not embed the sentences a second time
_RECENT: OrderedDict = OrderedDict()
_RECENT_SIZE = 4
_RECENT_LOCK = threading.Lock()


def threshold_of(distances: np.ndarray, method: str, amount: float) -> tuple[np.ndarray, float]:
    """The scores compared with the threshold (the distances; for `gradient`, each distance's
    rise from the previous boundary) and the threshold itself, computed over the whole
    document; NaN with fewer than two boundaries (no breakpoint then)."""
    d = np.asarray(distances, dtype=np.float64)
    if d.size < 2:
        return d, float("nan")
    if method == "gradient":  # how sharply the distance rises into a boundary
        d = np.diff(d, prepend=d[0])
        return d, float(np.percentile(d, amount))
    if method == "percentile":
        return d, float(np.percentile(d, amount))
    if method == "stddev":
        return d, float(d.mean() + amount * d.std())
    q1, q3 = np.percentile(d, [25, 75])
    return d, float(d.mean() + amount * (q3 - q1))  # iqr


def breakpoints(distances: np.ndarray, method: str, amount: float) -> np.ndarray:
    """Boolean mask of the boundaries whose distance (for `gradient`, its rise from the
    previous boundary) is above the threshold computed over the whole document."""
    scores, limit = threshold_of(distances, method, amount)
    if scores.size < 2:
        return np.zeros(scores.size, dtype=bool)
    return scores > limit


@dataclass(frozen=True, slots=True)
class SemanticTrace:
    """How the `semantic` strategy sees one document, before sizing: its prose sentences, the
    distance at each boundary between neighbouring sentence windows, the threshold and the
    breakpoints it marks (`SemanticStrategy.trace`; `chunkwise inspect` plots it). Boundary
    `i` lies between sentences `i` and `i + 1`. The breakpoints are candidates: sizing may
    drop one that would leave a piece under 1/8 of the budget (see `_stops`), so the cuts
    actually made are the chunks' own starts."""

    sentences: tuple[tuple[int, int], ...]
    """(start, end) of every prose sentence in the canonical text, in order."""
    distances: np.ndarray
    """Cosine distance at each boundary between the windows on its two sides."""
    scores: np.ndarray
    """What is compared with the threshold: the distances, or their rise for `gradient`."""
    threshold: float
    """The threshold over `scores` (NaN with fewer than two boundaries)."""
    breaks: np.ndarray
    """Boolean mask of the boundaries above the threshold."""
    method: str
    """`percentile`, `stddev`, `iqr` or `gradient`."""
    amount: float
    """The method's parameter."""
    leaves: tuple[tuple[tuple[str, ...], int, int], ...]
    """(section path, first sentence, one past the last sentence) of each prose leaf section,
    in order: the sentences of one section's plot."""


def boundary_distances(boundaries: Sequence[int], n: int, window: int,
                       text_of: Callable[[int], str], embed: Embed, stats: Counter) -> np.ndarray:
    """Cosine distance at each given boundary (boundary i lies between sentences i and i + 1
    of `n`): between the mean vector of sentences i-window+1..i and that of i+1..i+window.

    `boundaries` must be ascending; `text_of(k)` is the text of sentence k. Each sentence is
    embedded at most once; `stats` counts `embed_calls` and `embedded` sentences.
    """
    out = np.zeros(len(boundaries), dtype=np.float32)
    cache: dict[int, np.ndarray] = {}
    for lo in range(0, len(boundaries), BATCH):
        block = boundaries[lo:lo + BATCH]
        need = sorted({k for b in block for k in range(max(0, b - window + 1), min(n, b + window + 1))}
                      - cache.keys())
        for c in range(0, len(need), MAX_CALL):
            part = need[c:c + MAX_CALL]
            cache.update(zip(part, _unit_rows(embed([text_of(k) for k in part]))))
            stats["embed_calls"] += 1
            stats["embedded"] += len(part)
        for j, b in enumerate(block, lo):
            left = _unit(sum(cache[k] for k in range(max(0, b - window + 1), b + 1)))
            right = _unit(sum(cache[k] for k in range(b + 1, min(n, b + window + 1))))
            out[j] = 1.0 - float(np.dot(left, right))
        if lo + BATCH < len(boundaries):  # keep what the next boundaries' windows reach back to
            first = boundaries[lo + BATCH] - window + 1
            cache = {k: v for k, v in cache.items() if k >= first}
    return np.round(out, _DECIMALS)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _unit_rows(vectors: Any) -> np.ndarray:
    m = np.asarray(vectors, dtype=np.float32)
    if m.ndim != 2:
        raise ValueError(f"the embedder returned an array of shape {m.shape}, expected 2-D")
    return m / np.clip(np.linalg.norm(m, axis=1, keepdims=True), 1e-12, None)


def make(setup: Setup, options: SemanticOptions) -> SemanticStrategy:
    return SemanticStrategy(setup.sizer, embedder=options.embedder, threshold=options.threshold,
                            amount=float(options.amount), window=options.window)


def _identity(fn: Any) -> str:
    """A stable name for an embed function (part of the semantic strategy's ids)."""
    if fn is None:
        return "minilm"
    target = fn if callable(fn) and hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', repr(target))}"


class SemanticStrategy:
    """The `semantic` strategy; `plan` is safe to call from several threads."""

    overlaps = False

    def __init__(self, sizer: Sizer, *, embedder: Embed | None, threshold: str, amount: float,
                 window: int) -> None:
        self.sizer, self.threshold, self.amount, self.window = sizer, threshold, amount, window
        self._embedder = embedder
        self._given = embedder  # None: the shared default model
        self.identity = f"|{threshold}={amount!r}|window={window}|embedder={_identity(embedder)}"
        self._lock = threading.Lock()
        #: cumulative: documents, sentences, embedded (sentences), embed_calls
        self.stats: Counter = Counter()

    def embed(self, texts: Sequence[str]) -> Any:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:  # the default model loads on first use
                    from ...embeddings.functions import shared_embedder

                    self._embedder = shared_embedder(batch_size=EMBED_BATCH).embed
        fn = self._embedder
        if hasattr(fn, "get_text_embedding_batch"):  # a LlamaIndex embed model
            return fn.get_text_embedding_batch(list(texts))
        return fn(list(texts))

    def trace(self, doc: ParsedDocument) -> SemanticTrace:
        """The sentences, distances, threshold and breakpoints of a document (what `plan`
        sizes under); each prose sentence is embedded once, and not at all when one of the
        last few documents planned with the same options and embedder was this one."""
        key = self._key(doc)
        with _RECENT_LOCK:
            hit = _RECENT.get(key)
        if hit is not None and hit[0] is self._given:
            return hit[1]
        return self._remember(key, self._trace(doc, build_tree(doc))[0])

    def _key(self, doc: ParsedDocument) -> tuple:
        digest = hashlib.blake2b(doc.text.encode("utf-8", "surrogatepass"), digest_size=16)
        return (self.identity, doc.source, doc.format, digest.digest())

    def _remember(self, key: tuple, trace: SemanticTrace) -> SemanticTrace:
        with _RECENT_LOCK:  # the embedder is kept with the trace: `is` tells two apart
            _RECENT[key] = (self._given, trace)
            _RECENT.move_to_end(key)
            while len(_RECENT) > _RECENT_SIZE:
                _RECENT.popitem(last=False)
        return trace

    def _trace(self, doc: ParsedDocument, root: Node) -> tuple[SemanticTrace, list[Node]]:
        text = doc.text
        prose = _prose_leaves(doc, root)
        leaves, spans = [], []
        for leaf in prose:
            first = len(spans)
            spans.extend(sentence_spans(text, leaf.start, leaf.end))
            leaves.append((leaf.path, first, len(spans)))
        stats: Counter = Counter(documents=1, sentences=len(spans))
        distances = boundary_distances(range(len(spans) - 1), len(spans), self.window,
                                       lambda k: text[spans[k][0]:spans[k][1]], self.embed, stats)
        scores, limit = threshold_of(distances, self.threshold, self.amount)
        breaks = breakpoints(distances, self.threshold, self.amount)
        log.info("%s: semantic: %d sentences embedded in %d calls, %d breakpoints",
                 doc.source, stats["embedded"], stats["embed_calls"], int(breaks.sum()))
        with self._lock:
            self.stats.update(stats)
        for array in (distances, scores, breaks):  # shared by `plan` and later `trace` calls
            array.flags.writeable = False
        return SemanticTrace(tuple(spans), distances, scores, limit, breaks, self.threshold,
                             self.amount, tuple(leaves)), prose

    def plan(self, doc: ParsedDocument, budget: Budget, root: Node) -> list[Piece]:
        trace, prose = self._trace(doc, root)
        self._remember(self._key(doc), trace)
        policy = _SemanticPolicy(doc.text, self.sizer, budget, {id(n) for n in prose},
                                 [s for s, _ in trace.sentences], trace.distances, trace.breaks)
        return Fitter(self.sizer, budget, policy=policy).fit(doc, root)


def _prose_leaves(doc: ParsedDocument, root: Node) -> list[Node]:
    """Leaves outside code, tables and the like, in document order."""
    if not doc.prose:
        return []
    out: list[Node] = []
    todo = [root]
    while todo:
        node = todo.pop()
        if node.kind in NON_PROSE:
            continue
        if node.children:
            todo.extend(reversed(node.children))
        else:
            out.append(node)
    return out


class _SemanticPolicy(Policy):
    """The fitter's policy with semantic cut choice (see the module docstring): breakpoints
    are kept (`stops`), a cut the budget forces moves back to the largest distance peak
    (`recut`), runs are not balanced (the cuts follow the peaks instead), and a prose leaf
    is first split at its sentences."""

    def __init__(self, text: str, sizer: Sizer, budget: Budget, prose: set[int],
                 starts: list[int], distances: np.ndarray, breaks: np.ndarray) -> None:
        super().__init__(balance=False)
        self.text, self.sizer, self._prose, self._starts = text, sizer, prose, starts
        #: per sentence boundary: distance (NaN where not measured) and breakpoint flag
        self.distances, self.breaks = distances, breaks
        self._least = max(1, int(budget.tokens * _MIN_SHARE))

    def first_units(self, node: Node, glue: int) -> tuple[int, list[Unit]]:
        if id(node) not in self._prose:
            return 0, []
        a, b = trim(self.text, node.start, node.end)
        starts = self._starts
        cuts = [c for c in starts[bisect_left(starts, a):bisect_left(starts, b)] if a < c and c > glue]
        if not cuts:  # one sentence (or a heading and one): words next
            return WORD_LEVEL, []
        bounds = [a, *cuts, b]
        spans = list(zip(bounds, bounds[1:]))
        ests = self.sizer.count_many([self.text[s:e].strip() for s, e in spans])
        # units one level above words, so a sentence that does not fit is split at words
        return 0, [Unit(s, e, c, None, WORD_LEVEL - 1) for (s, e), c in zip(spans, ests)]

    def cuts(self, units: list[Unit]) -> Cuts:
        gaps = self._gaps(units)
        return Cuts(_stops(units, gaps, self._least), lambda i, j: _peak(units, gaps, i, j))

    def _gaps(self, units: list[Unit]) -> list[tuple[float, bool] | None]:
        """For each unit, the (distance, is breakpoint) of the sentence boundary before it, or
        None where there is none (first unit, code, tables, a cut inside a sentence)."""
        starts, text, out = self._starts, self.text, [None]
        prev = trim(text, units[0].start, units[0].end)[0]
        for unit in units[1:]:
            s = trim(text, unit.start, unit.end)[0]
            k = bisect_left(starts, s)
            if (0 < k < len(starts) and starts[k] == s and starts[k - 1] >= prev
                    and not np.isnan(self.distances[k - 1])):
                out.append((float(self.distances[k - 1]), bool(self.breaks[k - 1])))
            else:
                out.append(None)
            prev = s
        return out


def _stops(units: list[Unit], gaps: list, least: int) -> list[bool]:
    """For each unit: whether the breakpoint before it is honoured. While some piece between
    breakpoints (or the units' ends) is smaller than `least`, the weaker breakpoint around it
    is dropped: a distance peak often marks two neighbouring boundaries, and a stray line is
    no topic of its own."""
    n = len(units)
    marks = [k for k in range(1, n) if gaps[k] is not None and gaps[k][1]]
    sizes = [0]
    for u in units:
        sizes.append(sizes[-1] + u.est)
    while marks:
        bounds = [0, *marks, n]
        small = next((x for x in range(len(bounds) - 1)
                      if sizes[bounds[x + 1]] - sizes[bounds[x]] < least), None)
        if small is None:
            break
        around = [m for m in (bounds[small], bounds[small + 1]) if 0 < m < n]
        marks.remove(min(around, key=lambda m: (gaps[m][0], m)))
    out = [False] * n
    for k in marks:
        out[k] = True
    return out


def _peak(units: list[Unit], gaps: list, i: int, j: int) -> int:
    """The cut in (i, j] with the largest distance among those leaving the chunk at least
    `_MIN_FILL` of the estimated size of units i..j-1 (ties: the later cut); j if none has a
    distance."""
    total = sum(u.est for u in units[i:j])
    best, best_d, size = j, -1.0, 0
    for k in range(i + 1, j + 1):
        size += units[k - 1].est
        gap = gaps[k] if k < len(gaps) else None
        if size >= _MIN_FILL * total and gap is not None and gap[0] >= best_d:
            best, best_d = k, gap[0]
    return best
