"""Where code headers are cut: the code parsers' `HeaderPlanner` (`chunkwise.model`).

A definition's header (its comments and attributes or decorators, name, parameters, up to
the body) is a `signature` section that the section tree glues to the first statement of the
body (`Node.lead_cuts`: for each header glued there, where it starts, where it may be cut,
where it ends). The fitter packs; this module says where such a span may be cut when the
headers do not fit with the first line after them: before and after each header, and
between the parts of one that alone does not fit. The code parsers hand `HEADERS` to the
chunker through `ParsedDocument.headers` (the parsers sit below the chunking room, which
reads it and imports nothing from here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from chunkwise.model import HeaderCuts
from chunkwise.text.splitting import trim

Heads = tuple[tuple[int, ...], ...]
Fits = Callable[[int, int], bool]


@dataclass(frozen=True, slots=True)
class CodeHeaders:
    """The cuts of a span that opens with definition headers (see the module)."""

    def cuts(self, text: str, a: int, b: int, glue: int, heads: Heads,
             fits: Fits) -> HeaderCuts | None:
        """The headers are cut from what follows only when they do not fit with the first
        line after it (see `header_cuts`); a span of headers only is one chunk when it
        fits, whatever its estimate, else cut around its headers (their parts when that
        leaves nothing to cut). None: split it as any text with a glue."""
        alone = -1
        if b <= glue:
            if fits(a, b):
                return HeaderCuts()
            cuts = solid(text, a, [c for h in heads for c in (h[0], h[-1])], b) or \
                solid(text, a, [c for h in heads for c in h[1:-1]], b)
        else:
            # with the whole first line after them: else that line's packing could cut
            # them to keep a word of it (a comment line above the first statement)
            line = text.find("\n", glue, b) % (b + 1)
            if fits(a, line):
                return None
            if fits(a, glue):
                cuts = [glue]
            else:
                cuts, alone = header_cuts(text, a, heads, glue, fits)
        return HeaderCuts(tuple(cuts), alone) if cuts else None


#: what the code parsers put in `ParsedDocument.headers`
HEADERS = CodeHeaders()


def header_cuts(text: str, a: int, heads: Heads, glue: int, fits: Fits) -> tuple[list[int], int]:
    """Where headers that do not fit with what follows them are cut, and the cut the
    packer must keep (-1: none): before and after each header (not between the last one
    and the lines up to `glue` that fit with it: the headers of the compound statements
    the body opens with, `for x in y:`, or comments), and between the parts of the last
    one when it alone does not fit (but inside the longest run of parts that ends it and
    fits); then it starts a chunk (started in the chunk of the headers before it, under
    their shorter context, it could have fitted and been cut for nothing). The packer
    keeps together what fits."""
    last = heads[-1]
    head, end = max(a, last[0]), last[-1]
    cuts = [c for h in heads for c in (h[0], h[-1])]
    # each position: the last header and the lines before it
    lines = [*line_starts(text, end, glue), glue]
    if not fits(head, end):
        # its parts, but the longest run of them that ends it and fits stays whole
        # (a signature cut from its attributes rather than between its parameters)
        parts = list(last[1:-1])
        tail = next((p for p in parts if fits(p, end)), None)
        if tail is not None:
            parts = [p for p in parts if p <= tail]
        return solid(text, a, cuts + parts + lines[:-1], glue), last[0]
    kept = 1
    while kept < len(lines) and fits(head, lines[kept]):
        kept += 1
    if kept == 1:
        return solid(text, a, cuts + lines[:-1], glue), -1
    cuts.remove(end)
    cuts = solid(text, a, cuts + lines[kept - 1:-1], glue)
    return (cuts + [glue] if kept == len(lines) else cuts), -1


def line_starts(text: str, a: int, b: int) -> list[int]:
    """The first non-blank character of every line that starts inside `(a, b)`."""
    out = []
    nl = text.find("\n", a, b)
    while nl != -1:
        start = trim(text, nl + 1, b)[0]
        if start < b:
            out.append(start)
        nl = text.find("\n", start, b) if start < b else -1
    return out


def solid(text: str, a: int, cuts: list[int], b: int) -> list[int]:
    """The sorted `cuts` in `(a, b)` that leave no blank piece between `a` and `b`."""
    kept: list[int] = []
    last = a
    for c in sorted(cuts):
        if a < c < b and trim(text, last, c)[0] < c and trim(text, c, b)[0] < b:
            kept.append(c)
            last = c
    return kept
