"""Where a span of text may be cut, coarsest first: the splitters every chunker shares.

A splitter gives the offsets strictly inside `(a, b)` where `text` may be cut (the separator
stays with the piece before the cut). Two orders of them:

- `LINED_LEVELS` (code, tables, CSV, front matter: a line is a unit of meaning): blank
  lines, lines, sentences, words;
- `PROSE_LEVELS` (everything else): blank lines, sentences, lines, words. Prose is mostly
  hard-wrapped (PDF text, Project Gutenberg books, Markdown wrapped at 80 or 100 columns),
  so a line end inside a paragraph is where the editor wrapped, not a boundary of meaning:
  cutting there leaves half a sentence at each side. A sentence longer than what is left
  of the budget still falls back to lines (verse, tables inside a PDF paragraph), then words.

A mark (a piece with no letter or digit, such as "#" or "* * *") is never left alone by a
cut: `join_marks` keeps it with its neighbour.

Sentences come from the offline splitter in `chunkwise.text.sentences` (abbreviations,
decimals, URLs). Both orders have the same length and words at the same level, so a level
index means the same depth in either.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from .sentences import sentence_cuts

if TYPE_CHECKING:
    from ..model import ParsedDocument

#: a function giving the offsets strictly inside (start, end) where a text may be cut
Splitter = Callable[[str, int, int], list[int]]

#: section kinds that are not prose (a section under one of them is not prose either)
NON_PROSE = frozenset({
    "code", "table", "row", "header", "cell", "rows", "front_matter", "html", "rule",
    "function", "class", "method", "statement", "imports", "comment", "module_docstring",
})


class RegexSplitter:
    """Cut after every match of `pattern` (the separator stays with the piece before it)."""

    __slots__ = ("regex",)

    def __init__(self, pattern: str) -> None:
        self.regex = re.compile(pattern)

    def __call__(self, text: str, a: int, b: int) -> list[int]:
        return [m.end() for m in self.regex.finditer(text, a, b) if a < m.end() < b]

    def iter(self, text: str, a: int, b: int) -> Iterator[int]:
        """The same cuts, found as they are taken."""
        return (m.end() for m in self.regex.finditer(text, a, b) if a < m.end() < b)


def iter_cuts(split: Splitter, text: str, a: int, b: int) -> Iterator[int]:
    """`split(text, a, b)` one cut at a time; a splitter with an `iter` method (such as a
    `RegexSplitter`) finds them as they are taken, so that no list holds the cuts of a long
    text (a 50 MB line of words has 8 million cuts between words: 0.3 GB as a list)."""
    lazy = getattr(split, "iter", None)
    if lazy is not None:
        return lazy(text, a, b)
    return iter(split(text, a, b))


PARAGRAPHS = RegexSplitter(r"\n[ \t]*\n\s*")
LINES = RegexSplitter(r"\n\s*")
SENTENCES: Splitter = sentence_cuts
WORDS = RegexSplitter(r"\s+")

LINED_LEVELS: tuple[Splitter, ...] = (PARAGRAPHS, LINES, SENTENCES, WORDS)
PROSE_LEVELS: tuple[Splitter, ...] = (PARAGRAPHS, SENTENCES, LINES, WORDS)
#: the level of words in both orders (the last before characters)
WORD_LEVEL = 3


_NONSPACE = re.compile(r"\S")


def trim(text: str, a: int, b: int) -> tuple[int, int]:
    """`(a, b)` without leading and trailing whitespace; `(b, b)` when nothing is left."""
    m = _NONSPACE.search(text, a, b)
    if m is None:
        return b, b
    a = m.start()
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


#: a piece of text longer than this (in characters) is never a mere mark
MAX_MARK = 40
_WORD_CHAR = re.compile(r"[^\W_]")


def is_mark(text: str, a: int, b: int) -> bool:
    """Whether `text[a:b]` is a mark: short, without a letter or digit ("#", "* * *", "}").
    Alone, a mark means nothing: as a chunk it would embed as its context only."""
    return b - a <= MAX_MARK and _WORD_CHAR.search(text, a, b) is None


def join_marks(text: str, a: int, cuts: list[int], b: int) -> list[int]:
    """`cuts` of `text[a:b]` without those that would leave a mark as a piece of its own:
    a mark stays with the piece before it (the one after it when it comes first)."""
    bounds = [a, *cuts, b]
    kept = [c for c, end in zip(cuts, bounds[2:]) if not is_mark(text, c, end)]
    if kept and is_mark(text, a, kept[0]):
        del kept[0]
    return kept


def longest_fit(fits: Callable[[int], bool], lo: int, hi: int, guess: int) -> int:
    """The largest `end` in `[lo, hi]` with `fits(end)`, for a `fits` that holds at `lo` and
    turns false at most once. The search starts at `guess` (the length of the previous
    piece, say) and gallops from there before it bisects, so that on text of even density
    it counts a few spans of about the answer's length, not spans up to `hi`."""
    probe = min(max(guess, lo + 1), hi)
    if probe <= lo:
        return lo
    if not fits(probe):
        hi = probe - 1
    else:
        lo, step = probe, max(16, (probe - lo) // 8)
        while lo < hi:
            probe = min(hi, lo + step)
            if not fits(probe):
                hi = probe - 1
                break
            lo, step = probe, step * 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def is_prose(doc: ParsedDocument, kinds: Iterable[str]) -> bool:
    """Whether text of `doc` inside sections of these kinds (a leaf and its ancestors) is
    prose (see `ParsedDocument.prose`)."""
    return doc.prose and NON_PROSE.isdisjoint(kinds)
