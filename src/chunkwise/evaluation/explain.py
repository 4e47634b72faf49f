"""Why did retrieval miss? One question, its expected passage, and what the collection did
with it.

    >>> from chunkwise.evaluation.explain import explain
    >>> e = explain("How long do certificates last?", "short-lived (about 3 months)",
    ...             db_path="chunkwise-db")
    >>> e.verdict, e.reason

**Where the passage is.** The canonical text of each document is rebuilt from the stored
chunks: every record is `canonical[start:end]` (and a repeated record stands for the spans it
lists), so writing each text at its offsets gives the canonical text with only the whitespace
between chunks unknown (filled with spaces). No source file
is read or parsed again (a scanned PDF is not OCR'd twice, a moved corpus still answers) and
the text searched is exactly the text the collection holds. The expected text is found
exactly, then with whitespace runs equal and line-end hyphenation undone
(`inter-\\nnational` = `international`), then as the best fuzzy match (difflib's ratio over
windows of the chunks the lexical index, or the vectors, rank first for the passage itself).
More than `MAX_OCCURRENCES` exact occurrences is an error: name a longer passage or a source.

**Causes** (`CAUSES`), the first that applies:

1. `not extracted`: the passage is not in the canonical text (only a fuzzy match, similarity
   given, or none): OCR errors, a table read wrong, boilerplate removed.
2. `found`: a chunk holding the passage is in the top k of the verdict's mode; "holding" is
   `eval`'s relevance rule (`relevance=`): `overlap` (default: any of it), `most` (half or
   more) or `whole`.
3. `split`: no chunk holds half the passage (non-whitespace characters); the cuts inside it
   and the boundary each fell on are given.
4. `beyond window`: the chunk holding most of it has the passage past the embedder's window
   (`MAX_TOKENS` of the default model, counted on `context + "\\n\\n" + text`; a view that
   rewrites the text, such as table rows, makes this an estimate): its vector never saw it.
5. `context missing`: the question names a word of the document's structure (the chunk's
   heading path, the first line of its parent section, a table header above the chunk; the
   file name when a chunk of another document ranked above has the word) that the chunk's
   embed text lacks and the embed text of a chunk ranked above it has.
6. `outranked`: a chunk holds it and the chunks listed rank above it (near duplicates of it,
   chunks under the same heading, other documents are marked).

The verdict's mode is `hybrid` where the collection has both legs, else `dense`.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import PurePath
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError
from .metrics import count_units

log = logging.getLogger(__name__)

#: the causes a verdict names, in the order they are tried (module docstring)
CAUSES: dict[str, str] = {
    "not extracted": "the passage is not in the canonical text the collection holds",
    "found": "a chunk holding it is in the top k",
    "split": "no chunk holds half of it",
    "beyond window": "it lies past the embedder's last token in its chunk",
    "context missing": "its chunk's embed text lacks what the question names",
    "outranked": "a chunk holds it, and other chunks rank above it",
}
#: exact occurrences of the expected text beyond which it names no passage
MAX_OCCURRENCES = 20
#: how far down each mode's ranking a holder's rank is looked for
DEPTH = 100
#: a fuzzy match below this similarity is no match ("nothing like it")
FUZZY_FLOOR = 0.5
#: the most canonical text an explanation carries for the page
EXCERPT = 8000
#: the default model's window, [CLS] and [SEP] included (embeddings.minilm.MAX_TOKENS)
MAX_TOKENS = 256
#: question words too common to be "named" by it
_COMMON = frozenset("""
what which when where who whom whose why how does did do is are was were the a an of in on
for to and or with from by at as be it its this that these those there their they can could
should would will shall may might must use used using about into than then also not no yes
""".split())


@dataclass(frozen=True, slots=True)
class Location:
    """Where the expected text is: `match` is `exact`, `tolerant` (whitespace and
    hyphenation) or `fuzzy` (with `similarity` < 1), `text` the canonical text there."""

    source: str
    start: int
    end: int
    match: str
    similarity: float
    text: str
    occurrences: int = 1


@dataclass(frozen=True, slots=True)
class Holder:
    """A stored chunk that overlaps the passage: `share` of the passage's non-whitespace
    characters it holds; `ranks` its 1-based rank in each mode (None: below `DEPTH`);
    `answer_token` where the passage starts in its embed text (tokens); `window_end` the
    canonical offset where the embedder's window ends inside it (None: it all fits)."""

    id: str
    source: str
    start: int
    end: int
    share: float
    tokens: int
    answer_token: int
    window_end: int | None
    context: str
    section_path: str
    ranks: Mapping[str, int | None]
    distance: float | None
    scores: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Ranked:
    """A chunk the verdict's mode ranks above the best holder; `why` says what it shares
    with the holder (`near duplicate`, `same heading`, `same document`, `other document`)."""

    id: str
    source: str
    start: int
    end: int
    rank: int
    distance: float | None
    score: float | None
    context: str
    preview: str
    why: str


@dataclass(frozen=True, slots=True)
class Explanation:
    """The answer of `explain` (module docstring); `to_dict()` is `why --json`."""

    question: str
    expected: str
    k: int
    modes: tuple[str, ...]
    mode: str
    verdict: str
    reason: str
    location: Location | None
    holders: tuple[Holder, ...]
    above: tuple[Ranked, ...]
    cuts: tuple[tuple[int, str], ...] = ()
    missing: tuple[str, ...] = ()
    seconds: float = 0.0
    excerpt: str = ""
    """The canonical text the holders cover (at most `EXCERPT` characters), from
    `excerpt_start`: what the page's question view draws."""
    excerpt_start: int = 0

    @property
    def best(self) -> Holder | None:
        """The holder with the largest share (the better rank on a tie)."""
        if not self.holders:
            return None
        return max(self.holders, key=lambda h: (round(h.share, 6), -_rank_key(h.ranks.get(
            self.mode))))

    @property
    def format(self) -> str:
        return _format_of(self.location.source if self.location else "")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["holders"] = [{**asdict(h), "ranks": dict(h.ranks), "scores": dict(h.scores)}
                          for h in self.holders]
        out["cuts"] = [{"offset": o, "boundary": b} for o, b in self.cuts]
        out["causes"] = dict(CAUSES)
        return out


def _rank_key(rank: int | None) -> int:
    return rank if rank is not None else 1 << 30


def _format_of(source: str) -> str:
    return PurePath(source).suffix.lstrip(".").lower() or "text"


# -- the documents as the collection holds them --------------------------------------------
@dataclass(slots=True)
class Record:
    id: str
    source: str
    start: int
    end: int
    text: str
    meta: dict[str, Any]
    spans: tuple[tuple[int, int], ...]


class Documents:
    """Every stored record, and each document's canonical text rebuilt from them (module
    docstring)."""

    def __init__(self, rows: Sequence[tuple[str, str, Mapping[str, Any]]]) -> None:
        self.records: dict[str, Record] = {}
        self.by_source: dict[str, list[Record]] = {}
        for id_, doc, meta in rows:
            src = str(meta.get("source", ""))
            s, e = int(meta.get("start", 0)), int(meta.get("end", 0))
            spans = [(s, e)] + list(zip(_ints(meta.get("repeat_starts")),
                                        _ints(meta.get("repeat_ends"))))
            r = Record(id_, src, s, e, doc or "", dict(meta), tuple(spans))
            self.records[id_] = r
            self.by_source.setdefault(src, []).append(r)
        self.texts = {src: _rebuild(rs) for src, rs in self.by_source.items()}

    def holders(self, source: str, start: int, end: int) -> list[tuple[Record, int, int]]:
        """(record, span start, span end) of every stored span overlapping [start, end)."""
        return [(r, s, e) for r in self.by_source.get(source, ())
                for s, e in r.spans if s < end and e > start]


def _ints(v: Any) -> list[int]:
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    if isinstance(v, str) and v.strip():
        return [int(x) for x in re.findall(r"-?\d+", v)]
    return []


def _rebuild(records: Sequence[Record]) -> str:
    size = max((e for r in records for _, e in r.spans), default=0)
    buf = [" "] * size
    for r in records:
        for s, e in r.spans:
            buf[s:e] = r.text[:e - s].ljust(e - s)
    return "".join(buf)


# -- finding the expected text -------------------------------------------------------------
def tolerant_pattern(expected: str) -> re.Pattern[str]:
    """A pattern for `expected` with any whitespace run matching any other, and a word
    matching its hyphenated break across a line (`inter-\\n national`)."""
    s = re.sub(r"(\w)-\s+(\w)", r"\1\2", expected.strip())
    words = s.split()
    word = lambda w: r"(?:-\s+)?".join(re.escape(c) for c in w)  # noqa: E731
    return re.compile(r"\s+".join(word(w) for w in words))


def locate(docs: Documents, expected: str, *, sources: Sequence[str],
           candidates: Callable[[], Sequence[str]] = list) -> list[Location]:
    """The expected text's occurrences in `sources` (module docstring); a fuzzy match is
    looked for among the records `candidates()` names (ids), best first; [] when nothing is like
    it. A `ConfigError` when it occurs more than `MAX_OCCURRENCES` times."""
    found: list[Location] = []
    for src in sources:
        text = docs.texts[src]
        at = text.find(expected)
        while at >= 0:
            found.append(Location(src, at, at + len(expected), "exact", 1.0, expected))
            if len(found) > MAX_OCCURRENCES:
                break
            at = text.find(expected, at + 1)
    if not found:
        pattern = tolerant_pattern(expected)
        for src in sources:
            for m in pattern.finditer(docs.texts[src]):
                found.append(Location(src, m.start(), m.end(), "tolerant", 1.0, m.group()))
                if len(found) > MAX_OCCURRENCES:
                    break
    if len(found) > MAX_OCCURRENCES:
        n = sum(docs.texts[s].count(expected) for s in sources) if found[0].match == "exact" \
            else len(found)
        raise ConfigError(f"the expected text occurs {n if n > MAX_OCCURRENCES else 'over ' + str(MAX_OCCURRENCES)} "
                          f"times: give a longer passage, or --source")
    if found:
        return [Location(f.source, f.start, f.end, f.match, f.similarity, f.text, len(found))
                for f in found]
    best = fuzzy(docs, expected, [c for c in candidates() if docs.records[c].source in sources])
    return [best] if best is not None else []


def fuzzy(docs: Documents, expected: str, ids: Sequence[str]) -> Location | None:
    """The window of the records `ids` (each widened by the passage's length) most like
    `expected` by difflib's ratio, snapped to whole words; None below `FUZZY_FLOOR`."""
    n = len(expected)
    step = max(1, n // 8)
    best: tuple[float, str, int, int] | None = None
    seen: set[tuple[str, int]] = set()
    for id_ in ids:
        r = docs.records[id_]
        text = docs.texts[r.source]
        lo, hi = max(0, r.start - n), min(len(text), r.end + n)
        for s in range(lo, max(lo + 1, hi - n + 1), step):
            if (r.source, s) in seen:
                continue
            seen.add((r.source, s))
            sm = difflib.SequenceMatcher(None, expected, text[s:s + n], autojunk=False)
            if sm.real_quick_ratio() < FUZZY_FLOOR or sm.quick_ratio() < FUZZY_FLOOR:
                continue
            ratio = sm.ratio()
            if best is None or ratio > best[0]:
                best = (ratio, r.source, s, min(len(text), s + n))
    if best is None:
        return None
    ratio, src, s, e = best
    text = docs.texts[src]
    # refine both ends within one step, then snap to word boundaries
    for _ in range(2):
        s = max(range(max(0, s - step), min(e, s + step)),
                key=lambda x: difflib.SequenceMatcher(None, expected, text[x:e],
                                                      autojunk=False).ratio())
        e = max(range(max(s + 1, e - step), min(len(text), e + step) + 1),
                key=lambda x: difflib.SequenceMatcher(None, expected, text[s:x],
                                                      autojunk=False).ratio())
    while s > 0 and not text[s - 1].isspace() and not text[s].isspace():
        s -= 1
    while e < len(text) and not text[e].isspace() and not text[e - 1].isspace():
        e += 1
    span = text[s:e].strip()
    s = text.index(span, s) if span else s
    ratio = difflib.SequenceMatcher(None, expected, span, autojunk=False).ratio()
    if ratio < FUZZY_FLOOR:
        return None
    return Location(src, s, s + len(span), "fuzzy", round(ratio, 4), span)


def select_sources(docs: Documents, source: str | None) -> list[str]:
    """The stored sources named by `source` (equal, or ending with its path components), or
    all; a `ConfigError` when it names none."""
    if source is None:
        return list(docs.texts)
    want = PurePath(source).parts
    found = [s for s in docs.texts if s == source or PurePath(s).parts[-len(want):] == want]
    if not found:
        raise ConfigError(f"no stored document is {source!r} ({len(docs.texts)} documents "
                          f"in the collection)")
    return found


# -- the explainer -------------------------------------------------------------------------
class Explainer:
    """One collection read once, asked many questions (`eval --explain` does that)."""

    def __init__(self, *, collection: str = "chunkwise", client: Any = None,
                 db_path: str | os.PathLike | None = None, host: str | None = None,
                 port: int | None = None, embedder: Any = None, lexical: Any = True,
                 mode: str | None = None, timeout: float | None = None) -> None:
        from ..chroma.queries import iter_collection
        from ..chroma.search import Legs, check_mode
        from ..chroma.store import RETRY_DELAYS, connect, open_collection, query_embedder

        self.client = connect(client=client, db_path=db_path, host=host, port=port,
                              create=False, **({"timeout": timeout} if timeout else {}))
        self.name = collection
        self.col = open_collection(self.client, collection, RETRY_DELAYS)
        self.docs = Documents(list(iter_collection(client=self.client, collection=collection)))
        if not self.docs.records:
            raise ConfigError(f"collection {collection!r} is empty: nothing to explain")
        self.legs = Legs(self.col, RETRY_DELAYS, None, None)
        self.lexical = lexical
        self.lex = self.legs.lexical_index(self.client, collection, lexical,
                                           "lexical" if mode == "lexical" else "hybrid")
        self.embedder = query_embedder(self.col, embedder)
        self.modes = ("dense",) + (("lexical", "hybrid") if self.lex is not None else ())
        if mode is not None and check_mode(mode) not in self.modes:
            raise ConfigError(f"collection {collection!r} has no lexical index, so no {mode} "
                              f"search: leave out --mode (dense), or rebuild it with "
                              f"`chunkwise check --repair`")
        self.mode = mode or ("hybrid" if self.lex is not None else "dense")
        self.window = MAX_TOKENS if "minilm" in self.embedder.identity.lower() else None
        self._count = None

    # the pieces ------------------------------------------------------------------------
    def count(self, text: str) -> int:
        if self._count is None:
            from ..sizing.sizers import get_sizer

            self._count = get_sizer("minilm").count
        return self._count(text)

    def rankings(self, question: str) -> tuple[dict[str, list[Any]], Any]:
        """Each mode's hits for `question`, `DEPTH` deep, and the query vector."""
        from ..chroma.search import search
        from ..chroma.store import as_rows

        vector = as_rows(self.embedder.embed_queries([question]))
        out = {}
        for mode in self.modes:
            out[mode] = search(question, k=DEPTH, mode=mode, client=self.client,
                               collection=self.name, embedder=self.embedder,
                               lexical=self.lexical, depth=DEPTH)
        return out, vector

    def candidates(self, expected: str) -> list[str]:
        """Record ids most like the passage itself: where a fuzzy match is looked for."""
        ids: list[str] = []
        if self.lex is not None:
            ids += [i for i, _ in self.lex.search(expected[:2000], 10)]
        from ..chroma.store import as_rows

        vector = as_rows(self.embedder.embed_queries([expected[:2000]]))
        ids += [h.id for h in self.legs.dense(vector, min(10, self.legs.count))]
        return [i for i in dict.fromkeys(ids) if i in self.docs.records]

    def window_of(self, r: Record, s: int, answer: int) -> tuple[int, int, int | None]:
        """(tokens of the embed text, token position of `answer` in it, canonical offset
        where the window ends, None if it all fits) for the span [s, ...) of `r`."""
        context = str(r.meta.get("context") or "")
        head = context + "\n\n" if context else ""
        total = self.count(head + r.text)
        at = self.count(head + r.text[:max(0, answer - s)]) - 1  # [SEP] is not before it
        if self.window is None or total <= self.window:
            return total, at, None
        lo, hi = 0, len(r.text)  # the longest prefix that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(head + r.text[:mid]) <= self.window:
                lo = mid
            else:
                hi = mid - 1
        return total, at, s + lo

    # the question ----------------------------------------------------------------------
    def explain(self, question: str, expected: str, *, k: int = 5,
                source: str | None = None, relevance: str = "overlap") -> Explanation:
        from ..chroma.search import check_query

        t0 = time.perf_counter()
        question = check_query(question)
        if not isinstance(expected, str) or not expected.strip():
            raise ConfigError("the expected text must be a non-empty string")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError(f"k must be a positive integer, got {k!r}")
        expected = expected.strip()
        sources = select_sources(self.docs, source)
        locations = locate(self.docs, expected, sources=sources,
                           candidates=lambda: self.candidates(expected))
        return self._explain(question, expected, locations, k, t0, relevance)

    def explain_span(self, question: str, source: str, start: int, end: int, *,
                     k: int = 5, relevance: str = "overlap") -> Explanation:
        """The same for a passage given by its offsets (a question set's span)."""
        t0 = time.perf_counter()
        text = self.docs.texts.get(source, "")
        loc = Location(source, start, end, "exact", 1.0, text[start:end])
        return self._explain(question, loc.text, [loc], k, t0, relevance)

    def _explain(self, question: str, expected: str, locations: Sequence[Location], k: int,
                 t0: float, relevance: str = "overlap") -> Explanation:
        from .eval import check_relevance

        need = {"overlap": 1e-9, "most": 0.5, "whole": 1.0}[check_relevance(relevance)]
        ranked, vector = self.rankings(question)
        loc = locations[0] if locations else None
        holders = self._holders(locations, ranked, vector)
        verdict, reason, above, cuts, missing = self._verdict(question, loc, holders, ranked, k,
                                                              need)
        lo = hi = 0
        if loc is not None:
            mine = [h for h in holders if h.source == loc.source]
            # from a little before the passage, so that the page shows it without scrolling
            lo = max(min([loc.start] + [h.start for h in mine]), loc.start - 400)
            hi = min(max([loc.end] + [h.end for h in mine]), lo + EXCERPT)
        excerpt = self.docs.texts[loc.source][lo:hi] if loc is not None else ""
        return Explanation(question, expected, k, self.modes, self.mode, verdict, reason, loc,
                           tuple(holders), tuple(above), tuple(cuts), tuple(missing),
                           round(time.perf_counter() - t0, 4), excerpt, lo)

    def _holders(self, locations: Sequence[Location], ranked: Mapping[str, list[Any]],
                 vector: Any) -> list[Holder]:
        rank_of = {m: {h.id: i for i, h in enumerate(hits, 1)} for m, hits in ranked.items()}
        hit_of = {h.id: h for hits in ranked.values() for h in hits}
        found: dict[tuple[str, int], tuple[Record, int, int, Location]] = {}
        for loc in locations:
            if loc.match == "fuzzy" and loc.similarity < 0.8:
                continue  # nothing there holds the passage
            for r, s, e in self.docs.holders(loc.source, loc.start, loc.end):
                found.setdefault((r.id, s), (r, s, e, loc))
        missing_d = [r.id for r, _, _, _ in found.values()
                     if r.id not in hit_of or hit_of[r.id].distance is None]
        distances = self.legs.distances(vector, missing_d) if missing_d else {}
        text_of = self.docs.texts
        out = []
        for r, s, e, loc in found.values():
            whole = count_units(text_of[loc.source][loc.start:loc.end]) or 1
            part = count_units(text_of[loc.source][max(s, loc.start):min(e, loc.end)])
            tokens, at, window_end = self.window_of(r, s, max(s, loc.start))
            h = hit_of.get(r.id)
            out.append(Holder(
                r.id, r.source, s, e, round(part / whole, 4), tokens, at, window_end,
                str(r.meta.get("context") or ""), str(r.meta.get("section_path") or ""),
                {m: rank_of[m].get(r.id) for m in self.modes},
                h.distance if h is not None and h.distance is not None
                else distances.get(r.id), dict(h.scores) if h is not None else {}))
        return sorted(out, key=lambda h: (h.source, h.start))

    def _verdict(self, question: str, loc: Location | None, holders: Sequence[Holder],
                 ranked: Mapping[str, list[Any]], k: int,
                 need: float = 1e-9) -> tuple[str, str, list[Ranked],
                                                                   list[tuple[int, str]],
                                                                   list[str]]:
        mode = self.mode
        if loc is None or loc.match == "fuzzy":
            near = (f"; the nearest text ({loc.similarity:.0%} alike, {loc.source} "
                    f"{loc.start}-{loc.end}): {_short(loc.text, 120)!r}" if loc else
                    "; nothing in the collection is like it")
            return "not extracted", "the passage is not in the canonical text" + near, [], [], []
        rank = lambda h: _rank_key(h.ranks.get(mode))  # noqa: E731
        held = [h for h in holders if h.share >= need - 1e-9]
        top = min(held, key=rank) if held else None
        if top is not None and rank(top) <= k:
            return ("found", f"{_where(top)} holds {top.share:.0%} of it, rank {rank(top)} "
                    f"({mode})", [], [], [])
        if not holders:  # a stored collection always covers its text; said, not assumed
            return "not extracted", "no stored chunk overlaps the passage", [], [], []
        best = max(holders, key=lambda h: (h.share, -rank(h)))
        above = self._above(best, ranked.get(mode, []), k)
        if best.share < 0.5:
            cuts = self._cuts(loc, holders)
            said = ", ".join(f"{o} ({b})" for o, b in cuts) or "none"
            return ("split", f"no chunk holds half of it (the most: {best.share:.0%}); cut at "
                    f"{said}", above, cuts, [])
        if best.window_end is not None and best.window_end <= loc.start:
            return ("beyond window", f"{_where(best)} has {best.tokens} tokens; the passage "
                    f"starts at token {best.answer_token}, past the model's {self.window}",
                    above, [], [])
        missing = self._missing(question, best, above)
        if missing:
            return ("context missing", f"the question names {', '.join(missing)}, which "
                    f"the document's structure has and {_where(best)}'s embed text lacks "
                    f"(rank {_said(best.ranks.get(mode))})", above, [], missing)
        marks = sorted({a.why for a in above})
        return ("outranked", f"{_where(best)} holds {best.share:.0%} of it at rank "
                f"{_said(best.ranks.get(mode))} ({mode}); above it: "
                f"{', '.join(marks) or 'other chunks'}", above, [], [])

    def _above(self, best: Holder, hits: Sequence[Any], k: int) -> list[Ranked]:
        mine = self.docs.records[best.id].text
        out = []
        for i, h in enumerate(hits[:k], 1):
            if h.id == best.id:
                break
            s, e = int(h.metadata.get("start", 0)), int(h.metadata.get("end", 0))
            alike = difflib.SequenceMatcher(None, mine[:1000], (h.text or "")[:1000],
                                            autojunk=False).ratio()
            why = ("near duplicate" if alike >= 0.8 else
                   "same heading" if h.source == best.source and h.context == best.context
                   and h.context else
                   "same document" if h.source == best.source else "other document")
            out.append(Ranked(h.id, h.source, s, e, i, h.distance, h.score, h.context,
                              _short(h.text or "", 100), why))
        return out

    def _cuts(self, loc: Location, holders: Sequence[Holder]) -> list[tuple[int, str]]:
        """The chunk boundaries inside the passage and what each fell on."""
        text = self.docs.texts[loc.source]
        ordered = sorted(holders, key=lambda h: h.start)
        out = []
        for a, b in zip(ordered, ordered[1:]):
            cut = b.start
            if not loc.start < cut < loc.end:
                continue
            gap = text[a.end:b.start]
            before = text[:a.end].rstrip()[-1:]
            rule = ("a section boundary" if a.section_path != b.section_path else
                    "a paragraph break" if len(gap) >= 2 or "\n" in gap else
                    "a sentence end" if before in ".!?:;" else
                    "a line or word break" if gap else
                    "inside a word (the character fallback)")
            out.append((cut, rule))
        return out

    def _missing(self, question: str, best: Holder, above: Sequence[Ranked]) -> list[str]:
        """Words of the question that the document's structure names and the holder's
        embed text lacks, while the embed text of a chunk ranked above it has them: the
        chunk's heading path, its parent section's first line (a table's header row, a
        signature), a table header just above the chunk (the line over a `|---|` rule), and
        the file name, which counts only when a chunk of another document ranked above has
        the word (within one document every chunk lacks its file name alike)."""
        from ..text.terms import terms

        r = self.docs.records[best.id]
        text = self.docs.texts[best.source]
        names = set(terms(best.section_path))
        ps = r.meta.get("parent_start")
        if isinstance(ps, int) and ps < best.start:
            inside = text[ps:best.start]
            names |= set(terms(inside.split("\n", 1)[0]))
            before = [ln for ln in inside.split("\n") if ln.strip()]
            rules = [i for i, ln in enumerate(before) if i and set(ln.strip()) <= set("|-: +=")]
            if rules:
                names |= set(terms(before[rules[-1] - 1]))  # a table's header above its rule
        files = set(terms(PurePath(best.source).name)) - names
        have = set(terms(best.context + "\n" + r.text))
        pulled: set[str] = set()
        others: set[str] = set()
        for a in above:
            rec = self.docs.records.get(a.id)
            got = set(terms(a.context + "\n" + (rec.text if rec else a.preview)))
            pulled |= got
            if a.source != best.source:
                others |= got | set(terms(PurePath(a.source).name))
        asked = [t for t in dict.fromkeys(terms(question))
                 if len(t) > 2 and t not in _COMMON and not t.isdigit()]
        return [t for t in asked if t not in have and (
            (t in names and t in pulled) or (t in files and t in others))]


def _where(h: Holder) -> str:
    return f"chunk {h.start}-{h.end}"


def _said(rank: int | None) -> str:
    return str(rank) if rank is not None else f">{DEPTH}"


def _short(text: str, n: int) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[:n - 1] + "…"


def explain(question: str, expected: str, *, k: int = 5, source: str | None = None,
            relevance: str = "overlap", collection: str = "chunkwise", client: Any = None,
            db_path: str | os.PathLike | None = None, host: str | None = None,
            port: int | None = None, embedder: Any = None, lexical: Any = True,
            mode: str | None = None) -> Explanation:
    """Why `question` does (not) retrieve `expected` from a collection (module docstring).
    `source` limits the search for the passage to one stored document."""
    return Explainer(collection=collection, client=client, db_path=db_path, host=host,
                     port=port, embedder=embedder, lexical=lexical,
                     mode=mode).explain(question, expected, k=k, source=source,
                                        relevance=relevance)


# -- a whole question set ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Miss:
    """One missed question of an evaluation and its explanation; `line` is its line in the
    questions file, `rank` eval's rank of its first relevant chunk (None: not in the top
    max(k))."""

    line: int
    rank: int | None
    format: str
    explanation: Explanation


def explain_misses(report: Any, *, k: int = 5, mode: str | None = None,
                   collection: str | None = None, embedder: Any = None, lexical: Any = True,
                   **location: Any) -> list[Miss]:
    """An explanation for every question of an `EvalReport` whose first relevant chunk is
    not in the top `k` (questions without a reference span have none to give), worst first:
    the best holder's rank in the verdict's mode, lowest first (not ranked at all: first)."""
    misses = [r for r in report.results if r.question.has_span
              and (r.rank is None or r.rank > k)]
    if not misses:
        return []
    ex = Explainer(collection=collection or report.collection, embedder=embedder,
                   lexical=lexical, mode=mode, **location)
    out = []
    for r in misses:
        q = r.question
        e = ex.explain_span(q.question, r.source, q.start, q.end, k=k,
                            relevance=report.relevance)
        fmt = next((str(ex.docs.records[h.id].meta.get("format") or "") for h in e.holders),
                   "") or _format_of(r.source)
        out.append(Miss(q.line, r.rank, fmt, e))
    return sorted(out, key=_worst)


def _worst(m: Miss) -> tuple[int, int]:
    e = m.explanation
    ranks = [h.ranks.get(e.mode) for h in e.holders]
    best = min((_rank_key(x) for x in ranks), default=1 << 31)
    return (-best, m.line)


def cause_table(misses: Sequence[Miss]) -> dict[str, dict[str, int]]:
    """format -> cause -> how many misses, formats with the most misses first."""
    table: dict[str, dict[str, int]] = {}
    for m in misses:
        row = table.setdefault(m.format, {c: 0 for c in CAUSES})
        row[m.explanation.verdict] += 1
    return dict(sorted(table.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])))
