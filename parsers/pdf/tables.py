"""PDF tables from ruling lines: pypdf's own operator stream, no further dependency.

`parsers.pdf` feeds every content-stream operator of a page to a `Rulings` collector (the
`visitor_operand_before` of the one extraction pass, with the CTM pypdf tracks) and keeps each
text fragment's position. A table is then found the way a reader sees one, from its rules:

- rules: stroked straight path segments (`m`/`l`/`h`, the edges of a stroked `re`) and thin
  filled rectangles (at most `THIN` points across: word processors draw borders so); white
  ones are invisible and skipped; clipping paths (`n`) and curves are not rules. Collinear
  pieces that touch are merged.
- grid: horizontal and vertical rules that cross form connected groups; a group with at least
  3 distinct rows of rules and 3 of columns is a grid. Neighbouring grid cells with no rule
  between them are one spanning cell.
- text: each fragment goes to the cell holding a point just inside its first glyph (so
  rotated header text lands in its cell too); a cell's text is its fragments in stream
  order, whitespace collapsed.
- false positives (a framed paragraph, a chart's gridlines, a page ruled into columns) are
  the main risk, so a grid is a table only when it has at least 2 rows and 2 columns of
  cells with text, most cells hold text (`MIN_FILLED`), and its cells are short
  (`MAX_CELL_CHARS` on average: a ruled column of prose is not a table).

Rendering (the canonical text of a table): one Markdown-style line per row, `| a | b |`,
`|` escaped as `\\|`, no separator line. Full-width rows at the top are the table's caption,
a paragraph before it. The header is the first row, extended down while a header cell spans
rows below it or spans several columns (its sub-headers follow); header rows are joined per
column with a space into one line. A cell spanning columns repeats its text over them (each
column keeps its name); one spanning rows repeats it over its rows when short (a key such as
a state name, which each row needs to stand alone) and is written once when long.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from chunkwise.model import Section
from chunkwise.text.tables import PIPE, first_pipe_line, table_facts

logger = logging.getLogger(__name__)

#: a filled rectangle at most this many points across is a rule
THIN = 2.0
#: points within which rules are one line, touch, or cross
TOL = 2.0
#: rules shorter than this are marks (bullets, ticks), not rules
MIN_RULE = 4.0
#: a page with more rule pieces than this is a drawing (a map, a plot): not searched
MAX_SEGMENTS = 20_000
#: at least this share of a table's cells hold text
MIN_FILLED = 0.25
#: average characters per non-empty cell at most (prose in ruled boxes is not a table)
MAX_CELL_CHARS = 120
#: curve or slanted-line points inside a grid that make it a drawing
MAX_MARKS = 3
#: header rows at most
MAX_HEADER_ROWS = 4
#: a character spacing (`Tc`) wider than this many font sizes places each glyph on its own
SPREAD_TC = 0.5
#: a row-spanning cell this long or shorter is repeated over its rows
REPEAT_SPAN_CHARS = 40

_WORD = re.compile(r"[^\W\d_]{2}")
_PAINT_STROKE = frozenset((b"S", b"s"))
_PAINT_FILL = frozenset((b"f", b"F", b"f*"))
_PAINT_BOTH = frozenset((b"B", b"B*", b"b", b"b*"))
_CLOSE_PAINT = frozenset((b"s", b"b", b"b*"))
_COLOR_FILL = frozenset((b"g", b"rg", b"k", b"sc", b"scn"))
_COLOR_STROKE = frozenset((b"G", b"RG", b"K", b"SC", b"SCN"))
_CURVES = frozenset((b"c", b"v", b"y"))
#: the operators `TextOps.before` looks at
TEXT_OPS = frozenset((b"Tf", b"Tc", b"Tw", b"Tj", b"TJ", b"'", b'"'))
#: every operator `Rulings.op` looks at (the others return at once)
OPS = frozenset((b"m", b"l", b"h", b"re", b"n", b"q", b"Q", b"cs", b"CS", *_PAINT_STROKE,
                 *_PAINT_FILL, *_PAINT_BOTH, *_COLOR_FILL, *_COLOR_STROKE, *_CURVES))

Matrix = Sequence[float]


def _apply(m: Matrix, x: float, y: float) -> tuple[float, float]:
    return x * m[0] + y * m[2] + m[4], x * m[1] + y * m[3] + m[5]


def _white(operands: Any, gray_ok: bool) -> bool:
    """A colour operand list that is white (RGB 1 1 1, CMYK 0 0 0 0, gray 1 when `gray_ok`: a
    single component may be a separation's tint, where 1 is full ink); a pattern name or
    anything unreadable counts as visible."""
    try:
        vals = [float(v) for v in operands]
    except (TypeError, ValueError):
        return False
    if len(vals) == 4:
        return all(v <= 0.01 for v in vals)
    if len(vals) == 3 or (len(vals) == 1 and gray_ok):
        return all(v >= 0.99 for v in vals)
    return False


# --------------------------------------------------------------------------------- rules
class Rulings:
    """Collects the horizontal and vertical rules of one page from its operators."""

    def __init__(self) -> None:
        self.h: list[tuple[float, float, float]] = []  # (y, x0, x1)
        self.v: list[tuple[float, float, float]] = []  # (x, y0, y1)
        self.overflow = False
        #: points of painted curves and slanted lines: a grid over them is a chart or a
        #: drawing (a plot's gridlines, a diagram), not a table
        self.marks: list[tuple[float, float]] = []
        self._curves: list[tuple[float, float]] = []
        self._lines: list[tuple[tuple[float, float], tuple[float, float]]] = []
        self._rects: list[tuple[tuple[float, float], ...]] = []  # four corners, in order
        self._start: tuple[float, float] | None = None
        self._cur: tuple[float, float] | None = None
        self._white = [False, False]  # fill, stroke
        self._gray = [True, True]  # the colour space is gray (`g`, `G`, /DeviceGray)
        self._stack: list[tuple[bool, bool]] = []

    def op(self, op: bytes, operands: Any, matrix: Matrix) -> None:
        """One operator of the content stream, with the CTM in force (form matrices applied)."""
        if op not in OPS or self.overflow:
            return
        try:
            self._op(op, operands, matrix)
        except (TypeError, ValueError, IndexError):  # malformed operands: not a rule
            self._cur = None

    def _op(self, op: bytes, operands: Any, m: Matrix) -> None:
        if op == b"m":
            self._start = self._cur = _apply(m, float(operands[0]), float(operands[1]))
        elif op == b"l":
            p = _apply(m, float(operands[0]), float(operands[1]))
            if self._cur is not None:
                self._lines.append((self._cur, p))
            self._cur = p
        elif op == b"h":
            if self._cur is not None and self._start is not None:
                self._lines.append((self._cur, self._start))
            self._cur = self._start
        elif op == b"re":
            x, y, w, h = (float(v) for v in operands[:4])
            self._rects.append(tuple(_apply(m, *p) for p in
                                     ((x, y), (x + w, y), (x + w, y + h), (x, y + h))))
            self._start = self._cur = _apply(m, x, y)
        elif op in _CURVES:
            self._cur = _apply(m, float(operands[-2]), float(operands[-1]))
            self._curves.append(self._cur)
        elif op in _COLOR_FILL or op in _COLOR_STROKE:
            k = op in _COLOR_STROKE
            self._white[k] = _white(operands, op in (b"g", b"G") or self._gray[k])
        elif op in (b"cs", b"CS"):  # a new colour space starts at its black-ish default
            k = op == b"CS"
            self._white[k] = False
            self._gray[k] = bool(operands) and str(operands[0]) in ("/DeviceGray", "/CalGray")
        elif op == b"q":
            self._stack.append((self._white[0], self._white[1]))
        elif op == b"Q":
            if self._stack:
                self._white = list(self._stack.pop())
        else:
            self._paint(op)

    def _paint(self, op: bytes) -> None:
        if op in _CLOSE_PAINT and self._cur is not None and self._start is not None:
            self._lines.append((self._cur, self._start))
        stroke = (op in _PAINT_STROKE or op in _PAINT_BOTH) and not self._white[1]
        fill = (op in _PAINT_FILL or op in _PAINT_BOTH) and not self._white[0]
        if (stroke or fill) and len(self.marks) < MAX_SEGMENTS:
            self.marks.extend(self._curves)
            self.marks.extend(((a[0] + b[0]) / 2, (a[1] + b[1]) / 2) for a, b in self._lines
                              if abs(a[0] - b[0]) > 0.5 and abs(a[1] - b[1]) > 0.5)
        self._curves = []
        if stroke:
            for a, b in self._lines:
                self._segment(a, b)
            for r in self._rects:
                for i in range(4):
                    self._segment(r[i], r[(i + 1) % 4])
        if fill:
            for r in self._rects:
                self._thin_rect(r)
        self._lines, self._rects = [], []
        self._start = self._cur = None
        if len(self.h) + len(self.v) > MAX_SEGMENTS:
            self.overflow = True
            self.h, self.v = [], []

    def _segment(self, a: tuple[float, float], b: tuple[float, float]) -> None:
        (x0, y0), (x1, y1) = a, b
        if abs(y0 - y1) <= 0.5 and abs(x1 - x0) >= MIN_RULE:
            self.h.append(((y0 + y1) / 2, min(x0, x1), max(x0, x1)))
        elif abs(x0 - x1) <= 0.5 and abs(y1 - y0) >= MIN_RULE:
            self.v.append(((x0 + x1) / 2, min(y0, y1), max(y0, y1)))

    def _thin_rect(self, r: tuple[tuple[float, float], ...]) -> None:
        xs = [p[0] for p in r]
        ys = [p[1] for p in r]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        w, h = x1 - x0, y1 - y0
        if h <= THIN and w >= MIN_RULE and w > h:
            self.h.append(((y0 + y1) / 2, x0, x1))
        elif w <= THIN and h >= MIN_RULE and h > w:
            self.v.append(((x0 + x1) / 2, y0, y1))


def _merge(segs: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Collinear rules (same coordinate within `TOL`) that touch or overlap, as one."""
    out: list[list[float]] = []
    for c, a, b in sorted(segs, key=lambda s: (round(s[0] / TOL), s[1])):
        last = out[-1] if out else None
        if last is not None and abs(last[0] - c) <= TOL and a <= last[2] + TOL:
            last[2] = max(last[2], b)
        else:
            out.append([c, a, b])
    return [(c, a, b) for c, a, b in out]


# ------------------------------------------------------------------------ text positions
class TextOps:
    """Where each string a text operator shows starts, to split pypdf's text fragments.

    pypdf reports text to `visitor_text` by the line, not by the string: a table row set in
    one text object (often one `TJ` whose offsets jump from cell to cell) comes as one
    fragment at the row's first cell. Each string of a `Tj`/`TJ`/`'`/`"` is queued here
    (`before`) with its position (the text matrix, advanced by the glyph widths of the font's
    /Widths or /W, `Tc`, `Tw` and the `TJ` offsets) and its number of non-space glyphs (one
    byte per code in a simple font, where byte 32 is the space; two in a Type0 font). A
    fragment takes strings off the queue while their glyphs add up to its non-space
    characters. When they do not (a `ToUnicode` map that turns one glyph into "fi", space
    glyphs in a Type0 font, an unknown font) the fragment keeps its one position, as before;
    the queue is emptied at every `ET`, where pypdf has flushed its text."""

    def __init__(self, fonts: Any) -> None:
        self.fonts = fonts  # the page's /Font resource dictionary (or None)
        self.cache: dict[str, tuple[bool, Callable[[int], float]] | None] = {}
        self.font: tuple[bool, Callable[[int], float]] | None = None
        self.size = self.tc = self.tw = 0.0
        self.last_tm: tuple[float, ...] = ()
        self.advance = 0.0  # text-space advance since the text matrix was last set
        self.queue: list[tuple[int, tuple[float, float] | None]] = []  # (glyphs, probe)

    def before(self, op: bytes, operands: Any, m: Matrix, tm: Any = None) -> None:
        try:
            if op == b"Tf" and len(operands) >= 2:
                self.font = self._font(str(operands[0]))
                self.size = float(operands[1])
            elif op in (b"Tc", b"Tw") and operands:
                setattr(self, "tc" if op == b"Tc" else "tw", float(operands[0]))
            elif op in (b"Tj", b"TJ", b"'", b'"') and operands:
                key = tuple(tm) if tm is not None else ()
                if key != self.last_tm or op in (b"'", b'"'):
                    self.last_tm, self.advance = key, 0.0
                items = operands[0] if op == b"TJ" else operands[-1:]
                for item in items:
                    self._show(item, m, op in (b"Tj", b"TJ"))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            self.queue.append((-1, None))

    def after(self, op: bytes) -> None:
        if op == b"ET":
            self.queue.clear()

    def _show(self, item: Any, m: Matrix, known: bool) -> None:
        if isinstance(item, (int, float)) or hasattr(item, "as_numeric"):
            self.advance -= float(item) / 1000 * self.size
            return
        if not isinstance(item, (str, bytes)) or str(item).startswith("/"):
            return
        if self.font is None:
            self.queue.append((-1, None))
            return
        two, width = self.font
        raw = item.original_bytes if hasattr(item, "original_bytes") else bytes(item)
        codes = ([raw[i] << 8 | raw[i + 1] for i in range(0, len(raw) - 1, 2)] if two
                 else list(raw))
        # glyphs spread apart by a character spacing wider than SPREAD_TC (a column of
        # figures set as one string, each digit placed in its cell) each get a probe
        each = abs(self.tc) > SPREAD_TC * (self.size or 1)
        probe, n = None, 0
        for c in codes:
            visible = two or c != 32
            if probe is None and known and visible:  # at the first visible glyph
                x = self.advance
                probe = _probe((m[0], m[1], m[2], m[3], m[4] + x * m[0], m[5] + x * m[1]),
                               self.size)
            self.advance += width(c) * self.size + self.tc + (self.tw if c == 32 and not two else 0)
            n += visible
            if each and n:
                self.queue.append((n, probe))
                probe, n = None, 0
        if not each or n:
            self.queue.append((n, probe if n else None))

    def _font(self, name: str) -> tuple[bool, Callable[[int], float]] | None:
        if name not in self.cache:
            try:
                font = self.fonts[name].get_object() if self.fonts is not None else None
                self.cache[name] = None if font is None else _widths(font)
            except (KeyError, TypeError, AttributeError, ValueError, IndexError):
                self.cache[name] = None
        return self.cache[name]

    def split(self, text: str) -> list[tuple[int, tuple[float, float] | None]] | None:
        """(offset in `text`, probe) where each string's text starts, or None when the
        queued strings do not add up to the fragment's non-space characters."""
        want = len(text) - sum(text.count(c) for c in _SPACE_CHARS)
        if not want:
            return []
        taken, total = [], 0
        while self.queue and total < want:
            n, probe = self.queue.pop(0)
            if n < 0:
                self.queue.clear()
                return None
            if n:
                taken.append((n, probe))
                total += n
        if total != want or any(p is None for _, p in taken):
            self.queue.clear()
            return None
        out, i = [], 0
        for n, probe in taken:  # each string starts at its first non-space character
            while i < len(text) and text[i] in _SPACE_CHARS:
                i += 1
            out.append((i, probe))
            seen = 0
            while i < len(text) and seen < n:
                if text[i] not in _SPACE_CHARS:
                    seen += 1
                i += 1
        out[0] = (0, out[0][1])
        return out


_SPACE_CHARS = " \n\t\u00a0"


def _widths(font: Any) -> tuple[bool, Callable[[int], float]]:
    """(two-byte codes, glyph width in text space per 1 pt of size) of a font dictionary:
    /FirstChar + /Widths of a simple font, /DW + /W of a Type0 font's descendant."""
    if font.get("/Subtype") == "/Type0":
        desc = font["/DescendantFonts"][0].get_object()
        default = float(desc.get("/DW", 1000))
        table: dict[int, float] = {}
        w = desc.get("/W")
        w = list(w.get_object()) if w is not None else []
        i = 0
        while i + 1 < len(w) and len(table) < 65536:
            first = int(w[i])
            nxt = w[i + 1].get_object() if hasattr(w[i + 1], "get_object") else w[i + 1]
            if isinstance(nxt, list):
                for k, v in enumerate(nxt):
                    table[first + k] = float(v)
                i += 2
            else:
                for c in range(first, min(int(nxt), first + 65536) + 1):
                    table[c] = float(w[i + 2])
                i += 3
        return True, lambda c: table.get(c, default) / 1000
    first = int(font.get("/FirstChar", 0))
    widths = [float(v) for v in (font.get("/Widths") or [])]
    desc = font.get("/FontDescriptor")
    missing = float(desc.get_object().get("/MissingWidth", 500)) if desc is not None else 500.0
    missing = missing or 500.0
    return False, lambda c: (widths[c - first] if 0 <= c - first < len(widths) else missing) / 1000


def cut(piece: str, begin: int,
        starts: list[tuple[int, tuple[float, float] | None]]) -> list[Piece]:
    """`piece` (at offset `begin` of its fragment) cut where operators start (`starts`,
    from `TextOps.split`), each part with its operator's probe."""
    end = begin + len(piece)
    out: list[Piece] = []
    probe = None
    for i, (at, p) in enumerate(starts):
        nxt = starts[i + 1][0] if i + 1 < len(starts) else end
        if nxt <= begin:
            probe = p
            continue
        if at >= end:
            break
        a, b = max(at, begin), min(nxt, end)
        if a > begin and not out:  # the piece starts inside the operator before
            out.append((piece[:a - begin], probe))
        out.append((piece[a - begin:b - begin], p))
    if not out:
        out.append((piece, probe))
    return [(t, p if t.strip() else None) for t, p in out if t]


def _probe(m: Matrix, size: float) -> tuple[float, float] | None:
    """A point inside the first glyph drawn with text matrix x CTM `m` at font size `size`:
    a third of the font up from the baseline, a little along it (so it lands in the cell
    that holds the text, however the text is rotated)."""
    try:
        return (m[4] + size * (0.3 * m[2] + 0.1 * m[0]), m[5] + size * (0.3 * m[3] + 0.1 * m[1]))
    except (TypeError, IndexError):
        return None


# ---------------------------------------------------------------------------------- grid
@dataclass(slots=True)
class Table:
    """One detected table: its box (x0, y0, x1, y1, PDF points, y up), its cells' text per
    grid row (a spanning cell's text in each grid cell it covers) and its spans."""

    bbox: tuple[float, float, float, float]
    cells: list[list[str]] = field(default_factory=list)
    #: (row, col) -> (row0, col0, row1, col1) of the merged cell covering it
    span: dict[tuple[int, int], tuple[int, int, int, int]] = field(default_factory=dict)
    caption: list[str] = field(default_factory=list)
    header: str = ""
    rows: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Grid:
    xs: list[float]  # column boundaries, left to right
    ys: list[float]  # row boundaries, top to bottom (descending y)
    h: list[tuple[float, float, float]]
    v: list[tuple[float, float, float]]


def _cluster(values: list[float]) -> list[float]:
    out: list[float] = []
    for v in sorted(values):
        if out and v - out[-1] <= TOL:
            continue
        out.append(v)
    return out


def _crosses(h: tuple[float, float, float], v: tuple[float, float, float]) -> bool:
    return h[1] - TOL <= v[0] <= h[2] + TOL and v[1] - TOL <= h[0] <= v[2] + TOL


def _grids(h: list[tuple[float, float, float]],
           v: list[tuple[float, float, float]]) -> list[_Grid]:
    """Groups of crossing rules (union-find over H x V crossings), as grids."""
    parent = list(range(len(h) + len(v)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    crossed = [False] * len(parent)
    for i, hs in enumerate(h):
        for j, vs in enumerate(v):
            if _crosses(hs, vs):
                crossed[i] = crossed[len(h) + j] = True
                a, b = find(i), find(len(h) + j)
                if a != b:
                    parent[a] = b
    groups: dict[int, tuple[list, list]] = {}
    for i in range(len(parent)):
        if crossed[i]:
            hs, vs = groups.setdefault(find(i), ([], []))
            (hs.append(h[i]) if i < len(h) else vs.append(v[i - len(h)]))
    out = []
    for hs, vs in groups.values():
        xs, ys = _cluster([s[0] for s in vs]), _cluster([s[0] for s in hs])[::-1]
        if len(xs) >= 3 and len(ys) >= 3:
            out.append(_Grid(xs, ys, hs, vs))
    return out


def _covered(segs: list[tuple[float, float, float]], c: float, lo: float, hi: float) -> bool:
    """A rule at coordinate `c` runs across the middle of [lo, hi]."""
    mid = (lo + hi) / 2
    return any(abs(s[0] - c) <= TOL and s[1] - TOL <= mid <= s[2] + TOL for s in segs)


def _spans(g: _Grid) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    """Grid cells joined where no rule separates them, as (row0, col0, row1, col1) boxes."""
    n_r, n_c = len(g.ys) - 1, len(g.xs) - 1
    parent = {(r, c): (r, c) for r in range(n_r) for c in range(n_c)}

    def find(k: tuple[int, int]) -> tuple[int, int]:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for r in range(n_r):
        for c in range(n_c):
            if c + 1 < n_c and not _covered(g.v, g.xs[c + 1], g.ys[r + 1], g.ys[r]):
                parent[find((r, c))] = find((r, c + 1))
            if r + 1 < n_r and not _covered(g.h, g.ys[r + 1], g.xs[c], g.xs[c + 1]):
                parent[find((r, c))] = find((r + 1, c))
    boxes: dict[tuple[int, int], list[int]] = {}
    for k in parent:
        root = find(k)
        b = boxes.setdefault(root, [k[0], k[1], k[0], k[1]])
        b[0], b[1] = min(b[0], k[0]), min(b[1], k[1])
        b[2], b[3] = max(b[2], k[0]), max(b[3], k[1])
    return {k: tuple(boxes[find(k)]) for k in parent}  # type: ignore[misc]


def _turn(p: tuple[float, float], turn: int) -> tuple[float, float]:
    """A page point in the reading frame of text climbing (`turn` 1: the top of the text is
    to the left) or descending (-1: to the right); `_turn(_turn(p, t), -t) == p`."""
    x, y = p
    return (y, -x) if turn > 0 else (-y, x)


def _turn_rule(rule: tuple[float, float, float], turn: int,
               vertical: bool) -> tuple[float, float, float]:
    """A page rule (coordinate, low, high) in the reading frame: vertical rules become
    horizontal ones and horizontal ones vertical."""
    c, lo, hi = rule
    if vertical:  # x = c, y in [lo, hi]
        return (-c, lo, hi) if turn > 0 else (c, -hi, -lo)
    return (c, -hi, -lo) if turn > 0 else (-c, lo, hi)  # y = c, x in [lo, hi]


def _locate(values: list[float], v: float, descending: bool) -> int:
    """Index i with v between values[i] and values[i + 1], else -1."""
    for i in range(len(values) - 1):
        a, b = values[i], values[i + 1]
        if (b <= v <= a) if descending else (a <= v <= b):
            return i
    return -1


# --------------------------------------------------------------------------------- text
#: a text piece: (text, probe point or None for spaces only)
Piece = tuple[str, "tuple[float, float] | None"]


def find_tables(rulings: Rulings, lines: list[list[Piece]], clean: Callable[[str], str], *,
                turn: int = 0) -> tuple[list[Table], list[list[int]]]:
    """Tables of a page from its rules and its text pieces (per line, in stream order), and
    for each line the index of the table holding each of its pieces (-1: none). `turn` is
    the direction of most of the page's text (1 climbing, -1 descending: a landscape page
    set sideways); rules and text are then read in that reading frame (`_turn`), so that
    printed rows stay rows, not columns."""
    owner = [[-1] * len(pieces) for pieces in lines]
    if rulings.overflow or not rulings.h or not rulings.v:
        return [], owner
    h, v = _merge(rulings.h), _merge(rulings.v)
    if len(h) * len(v) > 4_000_000:  # a drawing, not a table: bounded time
        return [], owner
    marks = rulings.marks
    if turn:
        h, v = _merge([_turn_rule(r, turn, True) for r in v]), \
            _merge([_turn_rule(r, turn, False) for r in h])
        lines = [[(t, p and _turn(p, turn)) for t, p in pieces] for pieces in lines]
        marks = [_turn(p, turn) for p in marks]
    tables: list[Table] = []
    for g in sorted(_grids(h, v), key=lambda g: -g.ys[0]):
        table = _fill(g, lines, owner, len(tables), clean, marks)
        if table is not None:
            if turn:
                (ax, ay), (bx, by) = (_turn(p, -turn) for p in (table.bbox[:2], table.bbox[2:]))
                table.bbox = (min(ax, bx), min(ay, by), max(ax, bx), max(ay, by))
            tables.append(table)
        else:  # not a table: its pieces go back to the page
            k = len(tables)
            for row in owner:
                for i, o in enumerate(row):
                    if o == k:
                        row[i] = -1
    return tables, owner


def _fill(g: _Grid, lines: list[list[Piece]], owner: list[list[int]], k: int,
          clean: Callable[[str], str], marks: list[tuple[float, float]] = ()) -> Table | None:
    """The grid's table with its cells' text (pieces claimed in `owner` as table `k`), or
    None when the grid does not look like a table."""
    x0, x1, y0, y1 = g.xs[0], g.xs[-1], g.ys[-1], g.ys[0]
    if sum(1 for x, y in marks if x0 < x < x1 and y0 < y < y1) >= MAX_MARKS:
        return None  # curves or slanted lines inside: a chart or a drawing
    n_r, n_c = len(g.ys) - 1, len(g.xs) - 1
    spans = _spans(g)
    texts: dict[tuple[int, int, int, int], list[str]] = {}
    last_line: dict[tuple[int, int, int, int], int] = {}
    # box -> [[y, x, text]]: y is the height of the piece's line (its first piece in the
    # box), so that a rotated word, whose glyphs climb, stays on one line
    placed: dict[tuple[int, int, int, int], list[list[Any]]] = {}
    line_y: dict[tuple[tuple[int, int, int, int], int], float] = {}
    box = None
    for li, pieces in enumerate(lines):
        last_in = False
        for pi, (text, probe) in enumerate(pieces):
            if probe is None:  # spaces go with the piece before them
                if last_in and owner[li][pi] == -1:
                    owner[li][pi] = k
                    if box is not None:
                        placed[box][-1][2] += text
                continue
            x, y = probe
            last_in = (owner[li][pi] == -1 and x0 - TOL <= x <= x1 + TOL
                       and y0 - TOL <= y <= y1 + TOL)
            if not last_in:
                continue
            owner[li][pi] = k
            r, c = _locate(g.ys, y, True), _locate(g.xs, x, False)
            if r < 0 or c < 0:
                continue  # on a border: dropped with the table's area
            box = spans[r, c]
            parts = texts.setdefault(box, [])
            if last_line.get(box, li) != li:  # a line break inside a cell is a space
                parts.append(" ")
            last_line[box] = li
            parts.append(text)
            placed.setdefault(box, []).append([line_y.setdefault((box, li), y), x, text])
    merged = {box: _cell_text(parts, clean) for box, parts in texts.items()}
    cells = [[merged.get(spans[r, c], "") for c in range(n_c)] for r in range(n_r)]
    cells, spans = _split_bands(cells, spans, placed, clean)
    table = Table((x0, y0, x1, y1), cells, spans)
    return table if _render(table) else None


def _split_bands(cells: list[list[str]], spans: dict[tuple[int, int], tuple[int, int, int, int]],
                 placed: dict[tuple[int, int, int, int], list[list[Any]]],
                 clean: Callable[[str], str]) -> tuple[list[list[str]], dict]:
    """Grid rows that hold several printed rows (rules drawn every few rows) split into one
    row per text baseline, where the columns agree (`_baselines`); other rows as they are."""
    n_r, n_c = len(cells), len(cells[0]) if cells else 0
    plan = [_baselines(r, n_c, spans, placed) for r in range(n_r)]
    if not any(plan):
        return cells, spans
    first, at = [], 0  # the new index of each grid row's first printed row
    for lines in plan:
        first.append(at)
        at += len(lines) if lines else 1
    out_cells: list[list[str]] = []
    out_spans: dict[tuple[int, int], tuple[int, int, int, int]] = {}
    for r, lines in enumerate(plan):
        if not lines:
            out_cells.append(cells[r])
            for c in range(n_c):
                r0, c0, r1, c1 = spans[r, c]
                last = first[r1] + (len(plan[r1]) if plan[r1] else 1) - 1
                out_spans[first[r], c] = (first[r0], c0, last, c1)
            continue
        for j, y in enumerate(lines):
            row = []
            for c in range(n_c):
                box = spans[r, c]
                parts = sorted((px, t) for py, px, t in placed.get(box, ())
                               if abs(py - y) <= TOL)
                row.append(_cell_text([t for _, t in parts], clean))
                out_spans[first[r] + j, c] = (first[r] + j, box[1], first[r] + j, box[3])
            out_cells.append(row)
    return out_cells, out_spans


def _baselines(r: int, n_c: int, spans: dict[tuple[int, int], tuple[int, int, int, int]],
               placed: dict[tuple[int, int, int, int], list[list[Any]]]) -> list[float]:
    """The text baselines (probe heights, top down) of grid row `r` when it is a band of
    printed rows: no cell of it spans other grid rows, it has two baselines or more, its
    first column with text has one line on each, and more than half of its cells with text
    (two at least) have as many lines as it has baselines; else [] (a wrapped key beside a
    one-line cell is one row)."""
    boxes = list(dict.fromkeys(spans[r, c] for c in range(n_c)))
    if any(b[0] != b[2] for b in boxes):
        return []
    filled = [b for b in boxes if placed.get(b)]
    lines = _cluster([p[0] for b in filled for p in placed[b]])[::-1]
    if len(lines) < 2 or len(filled) < 2:
        return []

    def count(b: tuple[int, int, int, int]) -> int:
        return len(_cluster([p[0] for p in placed[b]]))

    agree = sum(1 for b in filled if count(b) == len(lines))
    if count(filled[0]) != len(lines) or agree * 2 <= len(filled) or agree < 2:
        return []
    return lines


def _cell_text(parts: list[str], clean: Callable[[str], str]) -> str:
    text = " ".join(clean("".join(parts).replace("\n", " ")).split())
    return text.replace("|", "\\|")


# ------------------------------------------------------------------------------ render
def _render(t: Table) -> bool:
    """Set the caption, header and row lines of `t`; False when it is not a table."""
    n_r, n_c = len(t.cells), len(t.cells[0])
    filled = {t.span[r, c] for r in range(n_r) for c in range(n_c) if t.cells[r][c]}
    boxes = set(t.span.values())
    if not filled or len(filled) < MIN_FILLED * len(boxes):
        return False
    if sum(len(t.cells[b[0]][b[1]]) for b in filled) > MAX_CELL_CHARS * len(filled):
        return False
    top = 0
    while top < n_r and all(t.span[top, c] == t.span[top, 0] for c in range(n_c)):
        if t.cells[top][0]:
            t.caption.append(t.cells[top][0])
        top += 1
    rows = [r for r in range(top, n_r) if any(t.cells[r])]
    if len(rows) < 2 or len({t.span[r, c] for r in rows for c in range(n_c)
                             if t.cells[r][c]} & filled) < 3:
        return False
    if max(sum(1 for c in range(n_c) if t.cells[r][c] and t.span[r, c][1] == c)
           for r in rows) < 2:  # one column of text: a list in a box
        return False
    head_end = _header_end(t, top, n_r)
    if not any(r >= head_end for r in rows):
        head_end = top + 1
    header = [" ".join(filter(None, _dedup([t.cells[r][c] for r in range(top, head_end)])))
              for c in range(n_c)]
    if not any(_WORD.search(h) for h in header):
        return False  # a header without a word: numbers or marks in a drawing's grid
    t.header = _line(header)
    t.rows = [_line(_row_cells(t, r, head_end)) for r in rows if r >= head_end]
    return True


def _header_end(t: Table, top: int, n_r: int) -> int:
    """One past the last header row: the first row, extended while a header cell spans
    rows below or spans columns (sub-headers follow it)."""
    n_c = len(t.cells[0])
    end = top + 1
    r = top
    while r < end and end - top <= MAX_HEADER_ROWS and end < n_r:
        for c in range(n_c):
            r0, c0, r1, c1 = t.span[r, c]
            if r0 < top:  # a caption cell reaching down beside the header: not a header
                continue
            end = max(end, r1 + 1)
            if c1 > c0 and t.cells[r][c] and r1 + 1 < n_r:
                end = max(end, r1 + 2)
        r += 1
    return min(end, top + MAX_HEADER_ROWS, n_r)


def _dedup(values: list[str]) -> list[str]:
    """A header cell spanning header rows is written once per column."""
    out: list[str] = []
    for v in values:
        if v and (not out or out[-1] != v):
            out.append(v)
    return out


def _row_cells(t: Table, r: int, head_end: int) -> list[str]:
    out = []
    for c, text in enumerate(t.cells[r]):
        r0 = t.span[r, c][0]
        if r0 < r and (r0 < head_end or len(text) > REPEAT_SPAN_CHARS):
            text = ""  # written in its first row only (or it belongs to the header)
        out.append(text)
    return out


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def text_of(t: Table) -> str:
    """The table's canonical text: header line, then one line per row."""
    return "\n".join([t.header, *t.rows])


def sections(t: Table, start: int, path: tuple[str, ...], level: int) -> list[Section]:
    """The `table` section over the table's text at `start` (its context the header line),
    a `header` section over the header line and a `row` section per data row, one level
    below (rows are what the fitter packs; `views` renders them as `column: value`)."""
    end = start + len(text_of(t))
    text = text_of(t)  # its rows are pipe rows: the views label them with its header's cells
    facts = table_facts(PIPE, first_pipe_line(text, 0, len(text)))
    out = [Section(start, end, level, "table", path, t.header,
                   (("columns", len(t.cells[0])), *facts))]
    pos = start + len(t.header)
    out.append(Section(start, pos, level - 5, "header", path))
    for n, row in enumerate(t.rows, 1):
        pos += 1  # the newline before the row
        out.append(Section(pos, pos + len(row), level - 5, "row", path, "",
                           (("row", n), ("row_start", n), ("row_end", n))))
        pos += len(row)
    return out
