"""The one packing engine: sizes a document to a token budget, under a small policy.

Packing works on *units*: the tiled children of a section, or pieces of a span of text cut by
a hierarchy of splitters. Whole consecutive units are merged while their estimated size
fits; the merge is then counted exactly on the embed text (context included) and shrunk if
the estimate was optimistic. A unit that does not fit alone is split at its own children, or,
for text, at the next splitter: blank lines, then sentences (lines first in code and tables,
see `chunkwise.text.splitting`), words and finally characters.

Two frames hold what packing needs to know about the document around a chunk (`Frame`):
the section tree (`Fitter.fit`, the `structure` strategy: context from the chunk's chain of
sections, and chunks inside one section or a run of whole sections), and the leaves of that
tree by offset (`Fitter.fit_span` with `chunkwise.chunking.strategies.base.SectionIndex`, for the
baselines that cut a span without regard to structure: context from the section each chunk
starts in). A `Policy` says where a chunk may end: the splitters to
use, cuts that must be kept, a better cut than the last unit that fits, and whether a run is
balanced into chunks of about equal size. Strategies give a policy or a frame; they never
re-implement the packing. These types live in `chunkwise.chunking.work` (re-exported here).
A candidate chunk is measured in one place (`Fitter._measure`: its trimmed span, context and
exact count).

Counting goes through a `SpanCounter` (see `tokenindex`). For the built-in tokenizers it is an
index from one pass over the document: the estimates of a node's children are one vectorised
search, an exact count re-encodes only a few characters at a chunk's ends, so the whole fit
costs about one tokenizer pass. Otherwise each leaf is counted once for the estimates and
each emitted chunk once exactly.

Work is driven by an explicit stack of typed items (`chunkwise.chunking.work`; no
recursion), so deeply nested documents are safe. Where headers glued before a body (code's
signatures) are cut is the parser's say (`ParsedDocument.headers`); the engine packs it.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import accumulate, chain as concat, islice
from typing import Callable, Iterable, Iterator, Sequence

from ..model import ParsedDocument
from ..sizing.sizers import Sizer
from ..sizing.tokenindex import SpanCounter, span_counter
from ..text.splitting import (LINED_LEVELS, PROSE_LEVELS, Splitter, is_prose, iter_cuts, join_marks,
                              longest_fit, trim)
from .structure import Node
from .work import (STRUCTURAL_KINDS, Budget, Candidate, Contexts, Cuts, Emit, Frame, Piece,
                   Policy, SplitChars, SplitNode, SplitText, Unit, Work, held_kinds,
                   lead_context, merge_meta)

__all__ = ["Budget", "Candidate", "Contexts", "Cuts", "Fitter", "Frame", "Piece", "Policy",
           "STRUCTURAL_KINDS", "Unit", "held_kinds", "lead_context", "merge_meta"]

#: a unit estimated up to this share of the budget over is counted before it is split
#: (estimates run high)
NEAR_MISS = 1.25
#: a span longer than this (in characters) is split a window of at least as many characters
#: at a time (`Fitter._plan_long`)
_WINDOW = 1 << 18
#: cuts of a long span joined, and units made and estimated, at once (`_long_units`)
_BATCH = 1 << 14


def _takes(total: int, more: int, target: float, budget: int) -> bool:
    """Whether a chunk of `total` tokens takes the next unit (`more` tokens): it must fit the
    budget and, past `target`, land nearer to it than the chunk is without the unit."""
    grown = total + more
    return grown <= budget and (grown <= target or grown - target < target - total)


class Fitter:
    """The packing engine. Fits one document at a time; holds per-document state only while
    fitting."""

    def __init__(self, sizer: Sizer, budget: Budget | int, *,
                 policy: Policy | None = None) -> None:
        self.sizer = sizer
        self.budget = budget if isinstance(budget, Budget) else Budget.of(budget)
        self.policy = policy or Policy()
        #: a unit estimated over this is split whatever its estimate (see `_run`), so an
        #: index may give a lower bound instead (see `SpanCounter.estimates`)
        self.enough = int(self.budget.tokens * NEAR_MISS) + sizer.overhead

    # -- public -------------------------------------------------------------------------
    def fit(self, doc: ParsedDocument, root: Node) -> list[Piece]:
        """Plan the chunks of a document by its section tree (`build_tree(doc)`), in
        document order."""
        frame = _Tree(doc, self, root)
        return self._drive(frame, [SplitNode(root, (root,))])

    def fit_span(self, frame: Frame, a: int, b: int) -> list[Piece]:
        """Plan the chunks of `text[a:b]` cut by the policy's splitters alone (the policy
        must name them, and cannot balance: the frame's units need not tile the text)."""
        assert self.policy.levels is not None and not self.policy.balance
        return self._drive(frame, [SplitText(a, b, 0, (), -1)])

    def fit_chars(self, frame: Frame, a: int, b: int) -> list[Piece]:
        """Plan the chunks of `text[a:b]` cut at characters alone."""
        return self._drive(frame, [SplitChars(a, b, ())])

    # -- the stack ----------------------------------------------------------------------
    def _drive(self, frame: Frame, stack: list[Work]) -> list[Piece]:
        self.frame, self.text = frame, frame.text
        out: list[Piece] = []
        stack.reverse()
        while stack:
            match stack.pop():
                case Emit(piece):
                    out.append(piece)
                case SplitNode(node, chain):
                    stack.extend(reversed(self._plan_node(node, chain)))
                case SplitText(a, b, level, chain, glue):
                    stack.extend(reversed(self._plan_text(a, b, level, chain, glue)))
                case SplitChars(a, b, chain):
                    stack.extend(reversed(self._split_chars(a, b, chain)))
        del self.frame, self.text
        return out

    # -- planning -----------------------------------------------------------------------
    def _plan_node(self, node: Node, chain: tuple[Node, ...]) -> list[Work]:
        if node.children:
            return self._pack(self.frame.children(node), chain)
        # the glue is where the own content's first character is: a cut lands after the
        # whitespace it consumes, so a cut just before indented content must not pass
        glue = trim(self.text, node.own_start, node.end)[0] if node.own_start > node.start \
            else node.own_start
        level, units = self.policy.first_units(node, glue)
        if units:
            return self._pack(units, chain, glue)
        return self._plan_text(node.start, node.end, level, chain, glue)

    def _levels(self, chain: tuple[Node, ...]) -> Sequence[Splitter]:
        """The cut levels of the text of `chain[-1]`: the policy's when it names them (the
        baselines), else those the parser declares for the leaf's kind
        (`ParsedDocument.leaf_splitters`), else the format's prose or lined levels."""
        if self.policy.levels is not None:
            return self.policy.levels
        doc = self.frame.doc
        for kind, levels in doc.leaf_splitters:
            if kind == chain[-1].kind:
                return levels
        return PROSE_LEVELS if is_prose(doc, (n.kind for n in chain)) else LINED_LEVELS

    def _plan_text(self, a: int, b: int, level: int, chain: tuple[Node, ...],
                   glue: int) -> list[Work]:
        """Split text at the first splitter from `level` that cuts it; no cut before `glue`,
        so that a heading or lead-in a leaf absorbed stays with the start of its content.
        When nothing after `glue` can be cut down to words (a lead-in too long to share a
        chunk with the first line after it), the glue gives way before characters do."""
        text = self.text
        a, b = trim(text, a, b)
        if a >= b:
            return []
        if glue > a and chain[-1].lead_cuts:
            plan = self._plan_header(a, b, level, chain, glue)
            if plan is not None:
                return plan
        levels, marks = self._levels(chain), self.policy.marks
        for floor in (glue, -1) if glue > a else (glue,):
            for lvl in range(level, len(levels)):
                if b - a > _WINDOW:
                    plan = self._plan_long(a, b, lvl, levels[lvl], chain, floor)
                    if plan is not None:
                        return plan
                    continue
                cuts = [c for c in levels[lvl](text, a, b) if c > floor]
                if marks:
                    cuts = join_marks(text, a, cuts, b)
                if cuts:
                    return self._pack(self.frame.units([a, *cuts, b], lvl), chain, floor)
        return self._split_chars(a, b, chain)

    def _plan_header(self, a: int, b: int, level: int, chain: tuple[Node, ...],
                     glue: int) -> list[Work] | None:
        """Plan `text[a:b]` when headers are glued before `glue` (definitions' signatures
        before the first statement of a body, see `Node.lead_cuts`) where the parser's
        `HeaderPlanner` cuts it, or None to split it as any text with a glue (cuts after
        `glue` only). A part too long alone is split as any text."""
        planner = self.frame.doc.headers
        if planner is None:
            return None
        measured: dict[tuple[int, int], Candidate | None] = {}

        def fits(s: int, e: int) -> bool:
            cand = measured[s, e] = self._measure(chain, s, e)
            return cand is not None and self._fits(cand)

        got = planner.cuts(self.text, a, b, glue, chain[-1].lead_cuts, fits)
        if got is None:
            return None
        cuts, alone = list(got.cuts), got.alone
        if not cuts:  # one chunk, measured by `fits`
            whole = measured[a, b] if (a, b) in measured else self._measure(chain, a, b)
            return [Emit(self.frame.piece(whole, []))] if whole is not None else []
        # units a level above the splitters': what follows the headers is split from `level`
        units = self.frame.units([a, *cuts, b], level - 1)
        k = bisect_right(cuts, alone)  # the cut that stands for `alone` (whitespace apart)
        if k and trim(self.text, cuts[k - 1], alone)[0] == alone:
            return self._pack(units[:k], chain, glue) + self._pack(units[k:], chain, glue)
        return self._pack(units, chain, glue)

    def _pack(self, units: list[Unit], chain: tuple[Node, ...], glue: int = -1) -> list[Work]:
        """Greedy merge of whole consecutive units; oversized units become split tasks."""
        rest = self._rest(units) if self.policy.balance else None
        return self._run(units, chain, glue, rest, len(units))[0]

    def _run(self, units: list[Unit], chain: tuple[Node, ...], glue: int,
             rest: Callable[[int], int] | None, upto: int) -> tuple[list[Work], int]:
        """`_pack`'s chunks that start before unit `upto`, and the unit after the last."""
        plan: list[Work] = []
        over, budget, max_chars = self.sizer.overhead, self.budget.tokens, self.budget.max_chars
        context, text = self.frame.context, self.text
        stops, recut = self.policy.cuts(units)
        stop = stops or [False] * len(units)
        starts = self.frame.doc.chunk_starts
        if starts:  # sections the parser says a chunk starts at
            stop = [s or (u.node is not None and u.node.kind in starts)
                    for s, u in zip(stop, units)]
        i, n = 0, len(units)
        while i < upto:
            _, ccost = context(chain, trim(text, units[i].start, units[i].end)[0])
            limit = budget
            if rest is not None:
                left = rest(i)
                if over + ccost + left > budget:
                    limit = over + ccost + left / -(-left // max(1, budget - over - ccost))
            total, j, reach = over + ccost, i, units[i].start + max_chars
            while j < n and (_takes(total, units[j].est - over, budget if j == i else limit,
                                    budget) and (j == i or not stop[j] and units[j].end <= reach)):
                total += units[j].est - over
                j += 1
            if j == i and units[i].est - over + ccost <= budget * NEAR_MISS:
                j = i + 1  # estimates run high: count before splitting a near miss
            cand = None
            while j > i:
                cand = self._measure_units(units, i, j, chain)
                if cand is None or self._fits(cand):
                    break
                # too big: drop at least one unit, and as many as the excess needs
                excess, j = cand.tokens - budget - (units[j - 1].est - over), j - 1
                while j > i + 1 and excess > 0:
                    j -= 1
                    excess -= units[j].est - over
                cand = None
            if j == i:  # the first unit alone does not fit: split it
                plan.append(self._split_task(units[i], chain, glue))
                i += 1
                continue
            # estimates run high: take more whole units while the exact count allows
            while (cand is not None and j < n and not stop[j] and units[j].end <= reach
                   and _takes(cand.tokens, units[j].est - over, limit, budget)):
                bigger = self._measure_units(units, i, j + 1, chain)
                if bigger is None or not self._fits(bigger):
                    break
                cand, j = bigger, j + 1
            if cand is not None and j < n and not stop[j] and recut is not None:
                k = recut(i, j)  # the budget forced this cut: the policy may move it back
                alt = self._measure_units(units, i, k, chain) if k < j else None
                if alt is not None and self._fits(alt):
                    cand, j = alt, k
            if cand is not None:
                # a single unit is in the chain already, but its subtree (a heading
                # section's code block or table) must be in `kinds` too
                run = [u.node for u in units[i:j]] if units[i].node is not None else []
                plan.append(Emit(self.frame.piece(cand, run)))
            i = j
        return plan, i

    def _rest(self, units: list[Unit]) -> Callable[[int], int]:
        """`rest(i)`: the estimated tokens (without overhead) of unit i and the units after
        it up to the next unit too big to share a chunk (asked once per chunk, so the work
        per unit is done by C loops)."""
        over, budget = self.sizer.overhead, self.budget.tokens
        sizes = [u.est - over for u in units]
        upto = list(accumulate(sizes, initial=0))
        big = [k for k, size in enumerate(sizes) if size > budget]
        big.append(len(units))

        def rest(i: int) -> int:
            stop = big[bisect_left(big, i)]
            return upto[stop] - upto[i] if stop > i else 0

        return rest

    def _split_task(self, unit: Unit, chain: tuple[Node, ...], glue: int) -> Work:
        if unit.node is not None:
            return SplitNode(unit.node, (*chain, unit.node))
        return SplitText(unit.start, unit.end, unit.level + 1, chain, glue)

    def _measure(self, chain: tuple[Node, ...], a: int, b: int,
                 node: Node | None = None) -> Candidate | None:
        """`text[a:b]` (trimmed) as one chunk under `chain` (and `node`, the one section it
        holds whole, if any): its span, context and exact count; None when it is blank. A
        span longer than `max_chars` cannot fit whatever its count: it is not counted, so
        that a 50 MB paragraph is not encoded whole only to be split."""
        start, end = trim(self.text, a, b)
        if start >= end:
            return None
        if node is not None:
            chain = (*chain, node)
        context, _ = self.frame.context(chain, start)
        if end - start > self.budget.max_chars:
            return Candidate(start, end, context, self.budget.tokens + 1, chain)
        return Candidate(start, end, context, self.frame.count(context, start, end), chain)

    def _measure_units(self, units: list[Unit], i: int, j: int,
                       chain: tuple[Node, ...]) -> Candidate | None:
        """Units i..j-1 as one chunk (`_measure`)."""
        return self._measure(chain, units[i].start, units[j - 1].end,
                             units[i].node if j - i == 1 else None)

    def _fits(self, cand: Candidate) -> bool:
        """Whether a candidate may be a chunk: within the budget, and not longer in
        characters than `max_chars` (see `MAX_CHARS_PER_TOKEN`)."""
        return cand.tokens <= self.budget.tokens and cand.end - cand.start <= self.budget.max_chars

    def _split_chars(self, a: int, b: int, chain: tuple[Node, ...]) -> list[Work]:
        """Last resort: successive longest prefixes that fit, searched on exact counts from
        the previous prefix's length (`longest_fit`). A prefix of one character fits (the
        context takes at most half the budget), but for a single odd character next to a
        long context, which then goes without it."""
        plan: list[Work] = []
        frame, text = self.frame, self.text
        budget, max_chars = self.budget.tokens, self.budget.max_chars
        guess = budget * 4
        while a < b:
            context, _ = frame.context(chain, a)
            lo = longest_fit(lambda end: frame.count(context, a, end) <= budget,
                             a + 1, min(b, a + max_chars), a + guess)
            guess = lo - a
            s, e = trim(text, a, lo)
            if s < e:
                tokens = frame.count(context, s, e)
                if tokens > budget:
                    context, tokens = "", frame.count("", s, e)
                plan.append(Emit(frame.piece(Candidate(s, e, context, tokens, chain), [])))
            a = trim(text, lo, b)[0] if lo < b else b
        return plan

    # -- long spans ---------------------------------------------------------------------
    def _plan_long(self, a: int, b: int, lvl: int, split: Splitter, chain: tuple[Node, ...],
                   glue: int) -> list[Work] | None:
        """`_plan_text` at level `lvl` for a span longer than `_WINDOW` (None when the level
        has no cut there), in bounded memory. A 50 MB line of words has 8 million units: as
        objects they would take 2 GB. Here the units are made and packed a window at a time.
        A chunk that starts at unit i looks at the units up to `max_chars` after it, so a
        window packs only the chunks that start more than that before its end, and the next
        window starts where they stopped: each chunk is the one `_pack` makes from all the
        units at once. The balanced sizes look further, up to the next unit too big to share
        a chunk: `_LongRest` gives them, from the cuts of the whole span kept in an array."""
        found = self._long_bounds(split, a, b, glue)
        head = list(islice(found, 2))  # a, and the first cut (b when there is none)
        if head[1] == b:
            return None
        bounds: Iterable[int] = concat(head, found)
        rests = None
        if self.policy.balance:
            bounds = array("q", bounds)
            rests = _LongRest(self, bounds)
        units = self._long_units(iter(bounds), lvl)
        max_chars = self.budget.max_chars
        span = max(_WINDOW, 2 * max_chars)
        plan: list[Work] = []
        window: list[Unit] = []
        k, more = 0, True  # the first unit of the window, among all; whether units follow
        while True:
            while more and (not window or window[-1].end < window[0].start + span):
                more = _extend(window, units)
            if not window:
                return plan
            upto = bisect_left([u.start for u in window], window[-1].end - max_chars) \
                if more else len(window)
            part, i = self._run(window, chain, glue, rests.window(k, window) if rests else None,
                                upto)
            plan += part
            k += i
            del window[:i]

    def _long_units(self, bounds: Iterator[int], lvl: int) -> Iterator[Unit]:
        """The frame's units between `bounds`, made `_BATCH` at a time."""
        edges = list(islice(bounds, _BATCH + 1))
        while len(edges) > 1:
            yield from self.frame.units(edges, lvl)
            edges = [edges[-1], *islice(bounds, _BATCH)]

    def _long_bounds(self, split: Splitter, a: int, b: int, floor: int) -> Iterator[int]:
        """`a`, the cuts `_plan_text` keeps in `text[a:b]` (those after `floor`; with the
        policy's `marks`, those `join_marks` keeps), then `b`, found as they are taken. The
        cuts are joined a batch at a time, from the last cut kept so far (or `a`) to the next
        batch's first cut, so that each piece ends where it does among all the cuts.
        `join_marks` also drops the first cut it keeps when the piece before it is a mark;
        among all the cuts it checks that only for the first cut kept of all, as here: the
        piece before a later one holds the piece after an earlier kept cut, which is no
        mark, so it is none either."""
        text = self.text
        cuts = (c for c in iter_cuts(split, text, a, b) if c > floor)
        yield a
        if not self.policy.marks:
            yield from cuts
        else:
            last, batch = a, list(islice(cuts, _BATCH))
            while batch:
                after = list(islice(cuts, _BATCH))
                kept = join_marks(text, last, batch, after[0] if after else b)
                yield from kept
                last = kept[-1] if kept else last
                batch = after
        yield b


def _extend(window: list[Unit], units: Iterator[Unit]) -> bool:
    """Add the next unit to the window; False when there is none."""
    unit = next(units, None)
    if unit is None:
        return False
    window.append(unit)
    return True


class _LongRest:
    """`Fitter._rest` over all the units of a long span (`Fitter._plan_long`), asked a window
    of units at a time. `rest(i)` sums the sizes of units i up to the next big one (too big
    to share a chunk): a first pass over the span keeps, for each big unit, the sum of the
    sizes of the units before it that are not big; the other sums come from the window.
    (A unit's size is its estimate less the overhead. Only a unit over `enough`, hence big,
    may be estimated differently when asked with other units: see `SpanCounter.estimates`.)
    The units are the tiles between `bounds` (the frame's units must tile the span).
    """

    def __init__(self, fitter: Fitter, bounds: array) -> None:
        self.over, self.budget = fitter.sizer.overhead, fitter.budget.tokens
        n = len(bounds) - 1
        self.bigs: list[int] = []
        self.sums_at: list[int] = []
        total = 0
        for k in range(0, n, _BATCH):
            ests = fitter.frame.estimates(bounds[k:k + _BATCH + 1].tolist())
            sums, bigs = self._sum_sizes(ests, total)
            self.bigs += [k + x for x in bigs]
            self.sums_at += [sums[x] for x in bigs]
            total = sums[-1]
        self.bigs.append(n)
        self.sums_at.append(total)
        #: the first unit of the last window, and its sums
        self._k, self._sums = 0, [0]

    def window(self, k: int, units: list[Unit]) -> Callable[[int], int]:
        """`rest` of the window `units`, which start at unit k of the span (0, or where the
        previous window's packing stopped)."""
        sums, _ = self._sum_sizes([u.est for u in units], self._sums[k - self._k])
        self._k, self._sums = k, sums
        bigs, sums_at = self.bigs, self.sums_at

        def rest(i: int) -> int:
            return sums_at[bisect_left(bigs, k + i)] - sums[i]

        return rest

    def _sum_sizes(self, ests: list[int], base: int) -> tuple[list[int], list[int]]:
        """For units estimated `ests`: the sizes of those not big summed from `base`
        (`sums[i]`: before unit i), and which are big."""
        over, budget = self.over, self.budget
        sizes = [est - over for est in ests]
        sums = list(accumulate((0 if size > budget else size for size in sizes), initial=base))
        return sums, [x for x, size in enumerate(sizes) if size > budget]


class _Tree:
    """The frame of `Fitter.fit`: a chunk's context comes from its chain of sections (the
    document's context line, the heading path, then each section's own context, such as a
    table's header row, once the chunk starts past that section's first character), and
    units are tiles counted by the document's `SpanCounter`."""

    def __init__(self, doc: ParsedDocument, fitter: Fitter, root: Node) -> None:
        self.doc, self.text, self.sizer = doc, doc.text, fitter.sizer
        self.budget, self.enough = fitter.budget, fitter.enough
        self.counter: SpanCounter = span_counter(fitter.sizer, doc.text)
        self.contexts = Contexts(fitter.sizer, fitter.budget, at_line=True,
                                 cost=self.counter.context_cost)
        self._tstart: dict[int, int] = {}
        # An index estimates any run of units at once; otherwise each leaf is counted up
        # front, once, and a node's estimate is the sum of its leaves'.
        self._est = None if self.counter.indexed else self._estimate(root)

    def children(self, node: Node) -> list[Unit]:
        """The units of a node's children (they tile it)."""
        kids = node.children
        if self._est is None:
            ests = self.counter.estimates([*(c.start for c in kids), node.end],
                                          enough=self.enough)
        else:
            ests = [self._est[id(c)] for c in kids]
        return [Unit(c.start, c.end, est, c, 0) for c, est in zip(kids, ests)]

    def units(self, bounds: Sequence[int], level: int) -> list[Unit]:
        ests = self.estimates(bounds)
        return [Unit(s, e, c, None, level) for s, e, c in zip(bounds, bounds[1:], ests)]

    def estimates(self, bounds: Sequence[int]) -> list[int]:
        """The estimates of the tiles between consecutive `bounds`."""
        return self.counter.estimates(bounds, enough=self.enough)

    def context(self, chain: tuple[Node, ...], start: int) -> tuple[str, int]:
        parts = lead_context(self.doc, chain[-1].path)
        anonymous: tuple[int, ...] = ()  # parts of sections adding no name to the path (blocks)
        path = None
        for node in chain:
            if node.context and start > self._node_start(node):
                if node.path is path or node.path == path:
                    anonymous += (len(parts),)
                parts.append(node.context)
            path = node.path
        return self.contexts.of(parts, anonymous)

    def count(self, context: str, a: int, b: int) -> int:
        return self.counter.embed(context, a, b)

    def piece(self, cand: Candidate, run: list[Node]) -> Piece:
        chain = cand.chain
        return Piece(cand.start, cand.end, cand.context, cand.tokens, chain[-1],
                     self._kinds(chain, run), merge_meta(chain, run))

    def _node_start(self, node: Node) -> int:
        key = id(node)
        if key not in self._tstart:
            self._tstart[key] = trim(self.text, node.start, node.end)[0]
        return self._tstart[key]

    @staticmethod
    def _kinds(chain: tuple[Node, ...], run: list[Node]) -> tuple[str, ...]:
        """The kinds of the chain's sections, then of the run's subtrees in document order,
        each once (see `held_kinds`)."""
        seen = dict.fromkeys(node.kind for node in chain)
        todo = run[::-1]
        while todo:
            node = todo.pop()
            seen[node.kind] = None
            if node.children:
                todo += node.children[::-1]
        return held_kinds(seen)

    def _estimate(self, root: Node) -> dict[int, int]:
        """Token estimate of every node: leaves counted once, parents summed."""
        order: list[Node] = []
        todo = [root]
        while todo:
            node = todo.pop()
            order.append(node)
            todo.extend(node.children)
        over = self.sizer.overhead
        # A leaf far longer than the budget in characters will be split anyway: do not
        # count it (its pieces are counted when it is split), estimate it as oversized.
        too_long = self.budget.max_chars // 2
        est: dict[int, int] = {}
        leaves = []
        for n in order:
            if n.children:
                continue
            if n.end - n.start > too_long:
                est[id(n)] = 2 * self.budget.tokens + (n.end - n.start) // too_long
            else:
                leaves.append(n)
        counts = self.counter.spans([trim(self.text, n.start, n.end) for n in leaves])
        est.update((id(n), c) for n, c in zip(leaves, counts))
        for node in reversed(order):  # children before parents
            if node.children:
                est[id(node)] = sum(est[id(c)] for c in node.children) - over * (
                    len(node.children) - 1)
        return est
