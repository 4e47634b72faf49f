"""What the packing engine works with: the budget, units, candidates, planned pieces, the
policy and the frame a strategy gives (`chunkwise.chunking.fitter`), and the work items of its
stack.

The engine (`Fitter`) drives an explicit stack of typed work items: `Emit` a planned chunk,
`SplitNode` (pack a section's children, or split a leaf's text), `SplitText` (split a span
at the next splitter) and `SplitChars` (the last resort). Planning one item gives the items
that replace it, in document order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Protocol, Sequence

from ..model import VIEW_FACTS, ParsedDocument, embed_text
from ..sizing.sizers import MAX_CHARS_PER_TOKEN, Sizer, limit_tokens
from .structure import Node

#: section kinds that only say where a section is, never what it holds (not in `kinds`)
STRUCTURAL_KINDS = frozenset({"document", "section"})


def held_kinds(seen: Iterable[str]) -> tuple[str, ...]:
    """A chunk's `kinds` from the kinds of the sections it is in and holds, in order: the
    structural ones dropped; what is left of a chunk in no content section at all (a heading
    with nothing under it before the next one) is its heading."""
    kinds = tuple(k for k in dict.fromkeys(seen) if k not in STRUCTURAL_KINDS)
    return kinds or ("heading",)


@dataclass(frozen=True, slots=True)
class Budget:
    """A chunk's token budget and what follows from it, computed once per chunker."""

    #: tokens of a chunk's embed text (context included)
    tokens: int
    #: characters a chunk may hold at most, whatever its count (see `MAX_CHARS_PER_TOKEN`)
    max_chars: int
    #: tokens a chunk's context may take at most
    context_limit: int

    @classmethod
    def of(cls, tokens: int, *, context_share: float = 0.5) -> Budget:
        return cls(tokens, tokens * MAX_CHARS_PER_TOKEN, max(1, int(tokens * context_share)))


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


class Unit:
    """A span that packing merges whole with its neighbours or splits: a section (`node`), or
    a piece of text cut by the splitter of `level`. `est` estimates its tokens, overhead
    included."""

    __slots__ = ("start", "end", "est", "node", "level")

    def __init__(self, start: int, end: int, est: int, node: Node | None, level: int) -> None:
        self.start, self.end, self.est, self.node, self.level = start, end, est, node, level


class Candidate(NamedTuple):
    """A chunk under consideration: what its exact count needs, nothing more."""

    start: int
    end: int
    context: str
    tokens: int
    chain: tuple[Node, ...]


class Cuts(NamedTuple):
    """A policy's say over one run of units."""

    #: per unit, whether a chunk must start there (None: nowhere)
    stops: Sequence[bool] | None = None
    #: units i..j-1 fit and unit j does not: an earlier end k in (i, j] to emit instead, if
    #: that chunk fits (j: none)
    recut: Callable[[int, int], int] | None = None


_FREE = Cuts()


class Policy:
    """How the packer chooses its cuts. The defaults are the `structure` strategy's: the
    splitters follow the section kinds (`LINED_LEVELS` in code and tables, else
    `PROSE_LEVELS`), a mark never stands alone (`join_marks`), no cut is forced, and runs are
    balanced."""

    def __init__(self, *, levels: Sequence[Splitter] | None = None, marks: bool = True,
                 balance: bool = True) -> None:
        #: the splitters of text, coarsest first (None: by section kind, see above)
        self.levels = tuple(levels) if levels is not None else None
        #: whether a cut that would leave a mark as a unit of its own is dropped
        self.marks = marks
        #: whether the units up to the next one that must be split are cut into the fewest
        #: chunks that hold them, of about equal size, rather than filled greedily up to a
        #: small tail (which embeds as a near-empty chunk that matches every query)
        self.balance = balance

    def first_units(self, node: Node, glue: int) -> tuple[int, list[Unit]]:
        """How the leaf `node` is first split: its units, or none and the splitter level to
        split it from (here: none, and the first level)."""
        return 0, []

    def cuts(self, units: list[Unit]) -> Cuts:
        """Forced and better cuts in a run of units (here: none)."""
        return _FREE


class Frame(Protocol):
    """What the packer needs to know about the document around a chunk."""

    doc: ParsedDocument
    text: str

    def children(self, node: Node) -> list[Unit]:
        """The units of a node's children (they tile it)."""

    def units(self, bounds: Sequence[int], level: int) -> list[Unit]:
        """The units of the text between consecutive `bounds`, cut at `level`."""

    def estimates(self, bounds: Sequence[int]) -> list[int]:
        """The estimates of the tiles between consecutive `bounds` (as `units` gives them)."""

    def context(self, chain: tuple[Node, ...], start: int) -> tuple[str, int]:
        """The context of a chunk starting at `start` under `chain`, and its token cost."""

    def count(self, context: str, a: int, b: int) -> int:
        """Exact tokens of the embed text of `text[a:b]` under `context`."""

    def piece(self, cand: Candidate, run: list[Node]) -> Piece:
        """The planned chunk of a candidate (`run`: the sections it holds whole, if several)."""


def lead_context(doc: ParsedDocument, path: tuple[str, ...]) -> list[str]:
    """The first lines of a chunk's context, the same for every strategy: the document's
    own context line (code: `# file.py`), then the heading path where the format embeds it."""
    parts = [doc.context] if doc.context else []
    if doc.path_in_context and path:
        parts.append(" > ".join(path))
    return parts


class Contexts:
    """Contexts cut to the budget's share, with their token cost inside an embed text,
    memoised by their lines: built once for every frame."""

    def __init__(self, sizer: Sizer, budget: Budget, *, at_line: bool,
                 cost: Callable[[str], int] | None = None) -> None:
        self.sizer, self.limit, self.at_line = sizer, budget.context_limit, at_line
        self._cost = cost or self._count_cost
        self._memo: dict[str, tuple[str, int]] = {}

    def of(self, parts: Sequence[str], anonymous: tuple[int, ...] = ()) -> tuple[str, int]:
        """The context made of `parts` (lines), and its cost: over the limit, its longest
        prefix that fits, cut at a line. When that prefix would lose the innermost part not
        at an index in `anonymous` (the innermost named section: the definition a chunk is
        in; anonymous parts are blocks, `if`/`for`, a tab title, a table's header row), parts
        before it go first: the anonymous ones, innermost first, then the named ones,
        outermost first (never the first part: the document's line)."""
        raw = "\n".join(parts)
        key = (raw, anonymous) if anonymous else raw
        hit = self._memo.get(key)
        if hit is None:
            count, limit = self.sizer.count, self.limit
            ctx = limit_tokens(raw, count, limit, at_line=self.at_line)
            if self.at_line and len(parts) > 2 and len(ctx) < len(raw):
                last = max((i for i in range(1, len(parts)) if i not in anonymous), default=0)
                if last and len(ctx) < sum(map(len, parts[:last + 1])) + last:  # lost it
                    ctx = limit_tokens("\n".join(self._innermost(parts, anonymous, last)),
                                       count, limit, at_line=True)
            hit = self._memo[key] = (ctx, self._cost(ctx))
        return hit

    def _innermost(self, parts: Sequence[str], anonymous: tuple[int, ...],
                   last: int) -> list[str]:
        """`parts` less those that must go for the named one at `last` to fit whole (all
        of them when it cannot)."""
        named = [i for i in range(1, last + 1) if i not in anonymous]
        kept = list(range(last + 1))
        drops = [*(i for i in reversed(kept) if i in anonymous), *named[:-1]]
        for i in [None, *drops]:
            if i is not None:
                kept.remove(i)
            if self.sizer.count("\n".join(parts[k] for k in kept)) <= self.limit:
                return [parts[k] for k in kept] + list(parts[last + 1:])
        return list(parts)  # too long even alone: the prefix keeps what it can

    def _count_cost(self, ctx: str) -> int:
        return self.sizer.count(embed_text(ctx, "")) - self.sizer.overhead if ctx else 0


def merge_meta(chain: tuple[Node, ...], run: Iterable[Node]) -> dict[str, Any]:
    """The metadata of a chunk: its chain's, then, for a run of sections, `*_start` the
    least, `*_end` the greatest of the run's own (not the parent's: its span holds more than
    the run) and other keys the first; never the parsers' facts for the views (`VIEW_FACTS`)."""
    meta: dict[str, Any] = {}
    for node in chain:
        meta.update(node.meta)
    spans: dict[str, Any] = {}
    for node in run:
        for key, value in node.meta:
            if key.endswith("_start"):
                spans[key] = min(spans.get(key, value), value)
            elif key.endswith("_end"):
                spans[key] = max(spans.get(key, value), value)
            else:
                meta.setdefault(key, value)
    meta.update(spans)
    for key in VIEW_FACTS:  # (a parser's facts for the views, not the chunk's)
        if key in meta:
            del meta[key]
    return meta


# -- the work items of the engine's stack ---------------------------------------------------
@dataclass(slots=True)
class Emit:
    """A planned chunk, final."""

    piece: Piece


@dataclass(slots=True)
class SplitNode:
    """A section to plan under its chain of sections (`chain[-1]` is `node`): its children
    packed, or, for a leaf, its text split."""

    node: Node
    chain: tuple[Node, ...]


@dataclass(slots=True)
class SplitText:
    """`text[start:end]` to split from the splitter of `level` on, under `chain`; no cut
    before `glue` (where the leaf's own content starts: a heading stays with it)."""

    start: int
    end: int
    level: int
    chain: tuple[Node, ...]
    glue: int


@dataclass(slots=True)
class SplitChars:
    """`text[start:end]` to cut at characters, under `chain`."""

    start: int
    end: int
    chain: tuple[Node, ...]


Work = Emit | SplitNode | SplitText | SplitChars
