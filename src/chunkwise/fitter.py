"""The one generic fitter: sizes a document's section tree to a token budget.

Packing works on *units* (the tiled children of a node, or pieces of a leaf's text). Whole
consecutive units are merged while their estimated size fits; the merge is then counted
exactly on the embed text (context included) and shrunk if the estimate was optimistic. A
unit that does not fit alone is split at its own children, or, for a leaf, at blank lines,
then sentences (lines first in code and tables, see `chunkwise.splitting`), words and
finally characters.

Counting goes through a `SpanCounter` (see `tokenindex`). For the built-in tokenizers it is an
index from one pass over the document: the estimates of a node's children are one vectorised
search, an exact count re-encodes only a few characters at a chunk's ends, so the whole fit
costs about one tokenizer pass. Otherwise each leaf is counted once for the estimates and
each emitted chunk once exactly.

Work is driven by an explicit stack (no recursion), so deeply nested documents are safe.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import Any, Callable, NamedTuple

from .model import ParsedDocument
from .sizing import MAX_CHARS_PER_TOKEN, Sizer, limit_tokens
from .splitting import (LINED_LEVELS, PROSE_LEVELS, Splitter, is_prose, iter_cuts, join_marks,
                        longest_fit, trim)
from .structure import Node, build_tree
from .tokenindex import SpanCounter, span_counter

#: leaf split levels below this one are characters
_CHARS = len(PROSE_LEVELS)
_STRUCTURAL = frozenset({"document", "section"})
#: a unit estimated up to this share of the budget over is counted before it is split (the
#: Fitter and the baselines' SpanPacker: estimates run high)
NEAR_MISS = 1.25
#: a leaf longer than this (in characters) is split a window of at least as many characters
#: at a time (`_plan_long`)
_WINDOW = 1 << 18
#: cuts of a long leaf joined at once (`_long_bounds`), and estimated at once (`_LongRest`)
_BATCH = 1 << 14


@dataclass(frozen=True, slots=True)
class Piece:
    """A planned chunk before ids are assigned (offsets are whitespace-trimmed)."""

    start: int
    end: int
    context: str
    tokens: int
    owner: Node
    kinds: tuple[str, ...]
    meta: dict[str, Any]


def lead_context(doc: ParsedDocument, path: tuple[str, ...]) -> list[str]:
    """The first lines of a chunk's context, the same for every strategy: the document's
    own context line (code: `# file.py`), then the heading path where the format embeds it."""
    parts = [doc.context] if doc.context else []
    if doc.path_in_context and path:
        parts.append(" > ".join(path))
    return parts


class _Candidate(NamedTuple):
    """A chunk under consideration: what its exact count needs, nothing more."""

    start: int
    end: int
    context: str
    tokens: int
    chain: tuple[Node, ...]


class _LongRest:
    """`Fitter._rest` over all the units of a long leaf (`Fitter._plan_long`), asked a window
    of units at a time. `rest(i)` sums the sizes of units i up to the next big one (too big
    to share a chunk): a first pass over the leaf keeps, for each big unit, the sum of the
    sizes of the units before it that are not big; the other sums come from the window.
    (A unit's size is its estimate less the overhead. Only a unit over `enough`, hence big,
    may be estimated differently when asked with other units: see `SpanCounter.estimates`.)
    """

    def __init__(self, fitter: Fitter, bounds: array) -> None:
        self.over, self.budget = fitter.sizer.overhead, fitter.budget
        n = len(bounds) - 1
        self.bigs: list[int] = []
        self.sums_at: list[int] = []
        total = 0
        for k in range(0, n, _BATCH):
            ests = fitter.counter.estimates(bounds[k:k + _BATCH + 1].tolist(),
                                            enough=fitter._enough)
            sums, bigs = self._sum_sizes(ests, total)
            self.bigs += [k + x for x in bigs]
            self.sums_at += [sums[x] for x in bigs]
            total = sums[-1]
        self.bigs.append(n)
        self.sums_at.append(total)
        #: the first unit of the last window, and its sums
        self._k, self._sums = 0, [0]

    def window(self, k: int, units: list[_Unit]) -> Callable[[int], int]:
        """`rest` of the window `units`, which start at unit k of the leaf (0, or where the
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


class _Unit:
    __slots__ = ("start", "end", "est", "node", "level")

    def __init__(self, start: int, end: int, est: int, node: Node | None, level: int) -> None:
        self.start, self.end, self.est, self.node, self.level = start, end, est, node, level


def _takes(total: int, more: int, target: float, budget: int) -> bool:
    """Whether a chunk of `total` tokens takes the next unit (`more` tokens): it must fit the
    budget and, past `target`, land nearer to it than the chunk is without the unit."""
    grown = total + more
    return grown <= budget and (grown <= target or grown - target < target - total)


class Fitter:
    """Fits one document at a time; holds per-document memos only while fitting."""

    def __init__(self, sizer: Sizer, max_tokens: int, *, context_share: float = 0.5) -> None:
        self.sizer = sizer
        self.budget = max_tokens
        self.max_chars = max_tokens * MAX_CHARS_PER_TOKEN
        self.context_limit = max(1, int(max_tokens * context_share))
        #: a unit estimated over this is split whatever its estimate (see `_pack`), so the
        #: index may give a lower bound instead (see `SpanCounter.estimates`)
        self._enough = int(max_tokens * NEAR_MISS) + sizer.overhead

    # -- public -------------------------------------------------------------------------
    def fit(self, doc: ParsedDocument, root: Node | None = None) -> list[Piece]:
        """Plan the chunks of a document, in document order."""
        self.doc, self.text = doc, doc.text
        self.counter: SpanCounter = span_counter(self.sizer, doc.text)
        self._ctx_memo: dict[str, tuple[str, int]] = {}
        self._tstart: dict[int, int] = {}
        root = root or build_tree(doc)
        # An index estimates any run of units at once; otherwise each leaf is counted up
        # front, once, and a node's estimate is the sum of its leaves'.
        self._est = None if self.counter.indexed else self._estimate(root)
        out: list[Piece] = []
        stack: list[tuple] = [("node", root, (root,))]
        while stack:
            item = stack.pop()
            if item[0] == "emit":
                out.append(item[1])
            elif item[0] == "node":
                _, node, chain = item
                stack.extend(reversed(self._plan_node(node, chain)))
            else:  # ("text", start, end, level, chain, glue)
                _, a, b, level, chain, glue = item
                stack.extend(reversed(self._plan_text(a, b, level, chain, glue)))
        del self.doc, self.text, self.counter, self._ctx_memo, self._tstart, self._est
        return out

    # -- estimates ----------------------------------------------------------------------
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
        too_long = self.max_chars // 2
        est: dict[int, int] = {}
        leaves = []
        for n in order:
            if n.children:
                continue
            if n.end - n.start > too_long:
                est[id(n)] = 2 * self.budget + (n.end - n.start) // too_long
            else:
                leaves.append(n)
        counts = self.counter.spans([self._trim(n.start, n.end) for n in leaves])
        est.update((id(n), c) for n, c in zip(leaves, counts))
        for node in reversed(order):  # children before parents
            if node.children:
                est[id(node)] = sum(est[id(c)] for c in node.children) - over * (
                    len(node.children) - 1)
        return est

    # -- planning -----------------------------------------------------------------------
    def _plan_node(self, node: Node, chain: tuple[Node, ...]) -> list[tuple]:
        kids = node.children
        if not kids:
            # the glue is where the own content's first character is: a cut lands after the
            # whitespace it consumes, so a cut just before indented content must not pass
            glue = self._trim(node.own_start, node.end)[0] if node.own_start > node.start \
                else node.own_start
            return self._plan_text(node.start, node.end, 0, chain, glue)
        if self._est is None:  # the children tile the node
            ests = self.counter.estimates([*(c.start for c in kids), node.end],
                                          enough=self._enough)
        else:
            ests = [self._est[id(c)] for c in kids]
        units = [_Unit(c.start, c.end, est, c, 0) for c, est in zip(kids, ests)]
        return self._pack(units, chain)

    def _plan_text(self, a: int, b: int, level: int, chain: tuple[Node, ...],
                   glue: int) -> list[tuple]:
        """Split a leaf's text; no cut before `glue`, so that a heading or lead-in the leaf
        absorbed stays with the start of its content. When nothing after `glue` can be cut
        down to words (a lead-in too long to share a chunk with the first line after it),
        the glue gives way before characters do."""
        a, b = self._trim(a, b)
        if a >= b:
            return []
        levels = self._levels(chain)
        for floor in (glue, -1) if glue > a else (glue,):
            for lvl in range(level, _CHARS):
                if b - a > _WINDOW:
                    plan = self._plan_long(a, b, lvl, levels[lvl], chain, floor)
                    if plan is not None:
                        return plan
                    continue
                cuts = join_marks(self.text, a,
                                  [c for c in levels[lvl](self.text, a, b) if c > floor], b)
                if cuts:
                    bounds = [a, *cuts, b]
                    ests = self.counter.estimates(bounds, enough=self._enough)
                    units = [_Unit(s, e, c, None, lvl)
                             for s, e, c in zip(bounds, bounds[1:], ests)]
                    return self._pack(units, chain, floor)
        return self._split_chars(a, b, chain)

    def _levels(self, chain: tuple[Node, ...]) -> tuple[Splitter, ...]:
        """The cut levels of the leaf `chain[-1]`: those its parser declares for its kind
        (`ParsedDocument.leaf_splitters`), else the format's prose or lined levels."""
        for kind, levels in self.doc.leaf_splitters:
            if kind == chain[-1].kind:
                return levels
        return PROSE_LEVELS if is_prose(self.doc.format, (n.kind for n in chain)) \
            else LINED_LEVELS

    def _pack(self, units: list[_Unit], chain: tuple[Node, ...], glue: int = -1) -> list[tuple]:
        """Greedy merge of whole consecutive units; oversized units become split tasks.
        Subclasses steer it through `_stops` (cuts that must be kept) and `_recut` (a
        better cut than the last unit that fits)."""
        rest = self._rest(units) if self._balanced(units) else None
        return self._pack_run(units, chain, glue, rest, len(units))[0]

    def _pack_run(self, units: list[_Unit], chain: tuple[Node, ...], glue: int,
                  rest: Callable[[int], int] | None, upto: int) -> tuple[list[tuple], int]:
        """`_pack`'s chunks that start before unit `upto`, and the unit after the last."""
        plan: list[tuple] = []
        over, budget = self.sizer.overhead, self.budget
        stop = self._stops(units)
        i, n = 0, len(units)
        while i < upto:
            tstart, _ = self._trim(units[i].start, units[i].end)
            _, ccost = self._context(chain, chain[-1], tstart)
            limit = budget
            if rest is not None:
                left = rest(i)
                if over + ccost + left > budget:
                    limit = over + ccost + left / -(-left // max(1, budget - over - ccost))
            total, j, reach = over + ccost, i, units[i].start + self.max_chars
            while j < n and (_takes(total, units[j].est - over, budget if j == i else limit,
                                    budget) and (j == i or not stop[j] and units[j].end <= reach)):
                total += units[j].est - over
                j += 1
            if j == i and units[i].est - over + ccost <= budget * NEAR_MISS:
                j = i + 1  # estimates run high: count before splitting a near miss
            cand = None
            while j > i:
                cand = self._measure(units, i, j, chain)
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
                bigger = self._measure(units, i, j + 1, chain)
                if bigger is None or not self._fits(bigger):
                    break
                cand, j = bigger, j + 1
            if cand is not None and j < n and not stop[j]:  # the budget forced this cut
                cand, j = self._recut(units, i, j, chain, cand)
            if cand is not None:
                plan.append(("emit", self._piece(cand, units, i, j)))
            i = j
        return plan, i

    def _balanced(self, units: list[_Unit]) -> bool:
        """Whether `_pack` balances the sizes of its chunks (hook; here always): the units
        up to the next one that must be split are cut into the fewest chunks that hold
        them, of about equal size, rather than filled greedily up to a small tail (which
        embeds as a near-empty chunk that matches every query)."""
        return True

    def _rest(self, units: list[_Unit]) -> Callable[[int], int]:
        """`rest(i)`: the estimated tokens (without overhead) of unit i and the units after
        it up to the next unit too big to share a chunk (asked once per chunk, so the work
        per unit is done by C loops)."""
        over, budget = self.sizer.overhead, self.budget
        sizes = [u.est - over for u in units]
        upto = list(accumulate(sizes, initial=0))
        big = [k for k, size in enumerate(sizes) if size > budget]
        big.append(len(units))

        def rest(i: int) -> int:
            stop = big[bisect_left(big, i)]
            return upto[stop] - upto[i] if stop > i else 0

        return rest

    def _stops(self, units: list[_Unit]) -> list[bool]:
        """For each unit, whether a chunk must start there (hook; none here)."""
        return [False] * len(units)

    def _recut(self, units: list[_Unit], i: int, j: int, chain: tuple[Node, ...],
               cand: _Candidate) -> tuple[_Candidate, int]:
        """Units i..j-1 fit and unit j does not: the chunk to emit and where the next one
        starts (hook; here that chunk)."""
        return cand, j

    def _split_task(self, unit: _Unit, chain: tuple[Node, ...], glue: int) -> tuple:
        if unit.node is not None:
            return ("node", unit.node, (*chain, unit.node))
        return ("text", unit.start, unit.end, unit.level + 1, chain, glue)

    def _measure(self, units: list[_Unit], i: int, j: int,
                 chain: tuple[Node, ...]) -> _Candidate | None:
        """Units i..j-1 as one chunk: its trimmed span, context and exact count."""
        start, end = self._trim(units[i].start, units[j - 1].end)
        if start >= end:
            return None
        first = units[i].node
        if j - i == 1 and first is not None:
            chain = (*chain, first)
        context, _ = self._context(chain, chain[-1], start)
        if end - start > self.max_chars:  # (one unit) too long to fit whatever its count:
            # not counted, so that a 50 MB paragraph is not encoded whole only to be split
            return _Candidate(start, end, context, self.budget + 1, chain)
        return _Candidate(start, end, context, self._count(context, start, end), chain)

    def _fits(self, cand: _Candidate) -> bool:
        """Whether a candidate may be a chunk: within the budget, and not longer in
        characters than `max_chars` (see `MAX_CHARS_PER_TOKEN`)."""
        return cand.tokens <= self.budget and cand.end - cand.start <= self.max_chars

    def _piece(self, cand: _Candidate, units: list[_Unit], i: int, j: int) -> Piece:
        """The planned chunk of a candidate that is emitted (kinds and meta only now: they
        walk the units' subtrees)."""
        run = [u.node for u in units[i:j]] if units[i].node is not None and j - i > 1 else []
        chain = cand.chain
        return Piece(cand.start, cand.end, cand.context, cand.tokens, chain[-1],
                     self._kinds(chain, run), self._meta(chain, run))

    def _split_chars(self, a: int, b: int, chain: tuple[Node, ...]) -> list[tuple]:
        """Last resort: successive longest prefixes that fit, searched on exact counts from
        the previous prefix's length (`longest_fit`)."""
        plan: list[tuple] = []
        guess = self.budget * 4
        while a < b:
            context, _ = self._context(chain, chain[-1], a)
            lo = longest_fit(lambda end: self._count(context, a, end) <= self.budget,
                             a + 1, min(b, a + self.max_chars), a + guess)
            guess = lo - a
            s, e = self._trim(a, lo)
            if s < e:
                plan.append(("emit", Piece(s, e, context, self._count(context, s, e), chain[-1],
                                           self._kinds(chain, []), self._meta(chain, []))))
            a, _ = self._trim(lo, b) if lo < b else (b, b)
        return plan

    # -- long leaves --------------------------------------------------------------------
    def _plan_long(self, a: int, b: int, lvl: int, split: Splitter, chain: tuple[Node, ...],
                   glue: int) -> list[tuple] | None:
        """`_plan_text` at level `lvl` for a leaf longer than `_WINDOW` (None when the
        level has no cut there), in bounded memory. A 50 MB line of words has 8 million
        units: as objects they would take 2 GB. Here the cuts are kept in an array and the
        units made and packed a window at a time. A chunk that starts at unit i looks at
        the units up to `max_chars` after it, so a window packs only the chunks that start
        more than that before its end, and the next window starts where they stopped: each
        chunk is the one `_pack` makes from all the units at once. The balanced sizes look
        further, up to the next unit too big to share a chunk: `_LongRest` gives them."""
        bounds = self._long_bounds(split, a, b, glue)
        n = len(bounds) - 1
        if n == 1:
            return None
        rests = _LongRest(self, bounds)
        plan: list[tuple] = []
        k, span = 0, max(_WINDOW, 2 * self.max_chars)
        while k < n:
            hi = bisect_left(bounds, bounds[k] + span, k, n)
            edges = bounds[k:hi + 1].tolist()
            ests = self.counter.estimates(edges, enough=self._enough)
            units = [_Unit(s, e, c, None, lvl) for s, e, c in zip(edges, edges[1:], ests)]
            upto = len(units) if hi == n else bisect_left(edges, edges[-1] - self.max_chars)
            rest = rests.window(k, units)
            part, i = self._pack_run(units, chain, glue, rest if self._balanced(units) else None,
                                     upto)
            plan += part
            k += i
        return plan

    def _long_bounds(self, split: Splitter, a: int, b: int, floor: int) -> array:
        """`[a, *cuts, b]` for `_plan_text`'s cuts of `text[a:b]` (those after `floor` that
        `join_marks` keeps), in an array. The cuts are joined a batch at a time, from the
        last cut kept so far (or `a`) to the next batch's first cut, so that each piece ends
        where it does among all the cuts. `join_marks` also drops the first cut it keeps when
        the piece before it is a mark; among all the cuts it checks that only for the first
        cut kept of all, as here: the piece before a later one holds the piece after an
        earlier kept cut, which is no mark, so it is none either."""
        text = self.text
        cuts = (c for c in iter_cuts(split, text, a, b) if c > floor)
        bounds = array("q", [a])
        batch = list(islice(cuts, _BATCH))
        while batch:
            after = list(islice(cuts, _BATCH))
            bounds.extend(join_marks(text, bounds[-1], batch, after[0] if after else b))
            batch = after
        bounds.append(b)
        return bounds

    # -- helpers ------------------------------------------------------------------------
    def _trim(self, a: int, b: int) -> tuple[int, int]:
        return trim(self.text, a, b)

    def _node_start(self, node: Node) -> int:
        key = id(node)
        if key not in self._tstart:
            self._tstart[key] = self._trim(node.start, node.end)[0]
        return self._tstart[key]

    def _context(self, chain: tuple[Node, ...], owner: Node, start: int) -> tuple[str, int]:
        """Context for a chunk starting at `start`, and its estimated token cost."""
        parts = lead_context(self.doc, owner.path)
        for node in chain:
            if node.context and start > self._node_start(node):
                parts.append(node.context)
        raw = "\n".join(parts)
        hit = self._ctx_memo.get(raw)
        if hit is None:
            ctx = self._limit_context(raw)
            cost = self.counter.context_cost(ctx)
            hit = self._ctx_memo[raw] = (ctx, cost)
        return hit

    def _limit_context(self, ctx: str) -> str:
        """Context may use at most `context_limit` tokens: cut it at a line, else a char."""
        return limit_tokens(ctx, self.sizer.count, self.context_limit, at_line=True)

    def _count(self, context: str, a: int, b: int) -> int:
        return self.counter.embed(context, a, b)

    def _kinds(self, chain: tuple[Node, ...], run: list[Node]) -> tuple[str, ...]:
        """The kinds of the chain's sections, then of the run's subtrees in document order,
        each once; structural kinds are dropped at the end (one test, not one per node)."""
        seen = dict.fromkeys(node.kind for node in chain)
        todo = run[::-1]
        while todo:
            node = todo.pop()
            seen[node.kind] = None
            if node.children:
                todo += node.children[::-1]
        for kind in _STRUCTURAL:
            seen.pop(kind, None)
        return tuple(seen)

    @staticmethod
    def _meta(chain: tuple[Node, ...], run: list[Node]) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        for node in chain:
            meta.update(node.meta)
        for node in run:  # a run of sections: *_start takes the min, *_end the max
            for key, value in node.meta:
                if key.endswith("_start"):
                    meta[key] = min(meta.get(key, value), value)
                elif key.endswith("_end"):
                    meta[key] = max(meta.get(key, value), value)
                else:
                    meta.setdefault(key, value)
        return meta
