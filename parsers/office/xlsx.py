"""Excel workbooks (`.xlsx`, `.xlsm`, `.xltx`): one block per sheet, its tables as pipe rows.

The workbook is read with lxml through `ooxml.Package` (every part within its bounds):
`xl/workbook.xml` gives the sheets in order, `xl/sharedStrings.xml` the strings (rich text
runs joined, phonetic guides left out), `xl/styles.xml` which cells are dates, times or
percentages. A sheet's XML is streamed (`XMLPullParser`, fed a megabyte at a time, asked
only for rows, values and merges): cells without a value (`<c r="B7" s="3"/>`, which a
formatted sheet holds by the million) are cut from the bytes before parsing, the elements
read are dropped as it goes, and nothing is allocated by the sheet's `dimension`. (A cell
without `r` is placed after its left neighbour; in a row that mixes cells with and without
`r`, an empty cell cut before it is not counted.)

Values as Excel shows them: strings, `TRUE`/`FALSE`, errors (`#N/A`) as written, numbers
without float noise (`1.0` -> `1`, `0.1+0.2` -> `0.3`: 15 significant digits), dates and
times from date formats (built-in ids 14-22 and 45-47, or a custom format with d, m, y, h or
s outside quotes and brackets) as `2023-06-30`, `2023-06-30 14:05` (`:SS` when the format
shows seconds), `14:05:00` (1900 date system, or 1904 when the workbook says so), and
percentages as `12.5%` with the format's decimals. A formula gives its cached value, never
its text (no cached value: empty). Other number formats (currency, thousands separators)
are not applied: the number is written plainly.

Canonical text: the visible worksheets in workbook order, each one block, blocks separated
by a blank line; `page_starts` holds where each sheet's block begins (page n = sheet n, an
empty sheet at the place it would be). Hidden and very hidden sheets are left out, and so
are chart sheets: the document meta counts them (`hidden_sheets`, `chart_sheets`), with no
warning (hiding is the author's choice, not a problem). Each sheet is a `sheet` section
with path (workbook title or file name, sheet name).

Blocks: cells that touch (left, right, up, down) are one block, and blocks whose bounding
boxes overlap are joined; so a block ends at a fully empty row or column within its extent,
and tables side by side, stacked, or touching only at a corner are apart. Two exceptions,
both lines that do not separate what a reader sees as one table: a spacer (a hidden row or
column, a row under 6 points high, a column under 3 characters wide: the thin lines that
financial sheets put between a header and its rows) is not a gap; and a strip (a block one
column wide) on the rows of a table beside it, at most 3 empty columns away, is that table's
column (a column of page numbers set apart by an empty column). A merged range whose
top-left cell has a value occupies its area. Blocks are written in reading order (top row,
then left column), each followed by a blank line.

A block where no row holds two cells is a paragraph, one line per cell; one of at most three
short lines at most one blank row above a table is its title instead. A table's leading
one-cell rows are title lines too, and its trailing one-cell texts its notes (a paragraph
after it). Titles are written before the table (the fitter keeps them with its first rows)
and end its path. Rows are `| a | b |` lines over the table's used columns (a column with no
value is left out), trailing empty cells trimmed, `|` in a cell written `\\|`, whitespace
collapsed. The first row is a header when (as in `csv.py`) it is all labels (texts, not
numbers) over at least half the columns, and either a labelled column holds data below
(numbers, dates, booleans) or no first-row label recurs in its column below (a header-less
table of texts repeats its values). The header grows by the rows of labels under it (at most
`_MAX_HEADER_ROWS`) while it holds merged labels or they label new columns, and is written
as one line: each column's labels top-down, joined by a space. A header row's one label,
unmerged, over the columns that the rows under it label (at least `_MIN_CAPTIONED` of them: a
period such as "January–June 2023" set above the last column) is the table's caption, not
that column's: it is taken out of the header and becomes a title line (so it ends the path,
and every row's context names it). The header is the table's
`context` and a `header` section; every other row is a `row` section (`row`, `row_start`
and `row_end`: Excel's row number). A table without a header gets `| column A | column B |`
from its column letters as its context (meta `header: synthesised`), not written in the
text.

Merged cells: in header rows the top-left value is repeated over the whole merged area (so
every column has its label); in data rows it is repeated down the merged rows, in the
area's first column only (a row read alone is complete, and a text merged across a row is
not written five times).

Bounds: at most `MAX_CELLS` cells with a value (merged copies included) are read; past that
the workbook is truncated there, with a warning. Parts are bounded by `ooxml`.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import PurePath
from typing import Any, Iterator

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.text.splitting import SENTENCES, WORDS, RegexSplitter
from chunkwise.text.tables import PIPE, first_pipe_line, table_facts

from .ooxml import Package, refuse_dtd

LEVEL_SHEET, LEVEL_TABLE, LEVEL_PARAGRAPH, LEVEL_ROW = 40, 30, 30, 20

#: cells with a value read from one workbook at most (merged copies included)
MAX_CELLS = 2_000_000
#: merged ranges read from one sheet at most (more are ignored, with a warning)
MAX_MERGES = 100_000
#: a synthesised header longer than this is not the table's context (as csv.py)
_MAX_CONTEXT = 65_536
_MAX_HEADER_ROWS = 3
#: an upper header row's one unmerged label over at least this many labelled columns is the
#: table's caption (`_lift_captions`)
_MIN_CAPTIONED = 3
#: a title longer than this is cut in the path; a block of one-cell rows above a table is
#: its title when it has at most `_MAX_TITLE_LINES` lines, none longer than `_MAX_TITLE`
_MAX_TITLE, _MAX_TITLE_LINES = 200, 3
#: spacer lines: rows lower than this (points), columns narrower than this (characters)
_SPACER_HEIGHT, _SPACER_WIDTH = 6.0, 3.0
#: more blocks than this in a sheet are not joined box by box (quadratic): the sheet is
#: split at its fully empty rows only
_MAX_BOXES = 2_000
#: empty columns at most between a table and a strip of values that joins it
_STRIP_GAP = 3
_FEED = 1 << 20
#: the most bytes of one text (a cell's value, a shared string) read from a part: Excel holds
#: 32,767 characters in a cell (at most about 230 kB of XML, escaped), and libxml2 refuses a
#: text past 10 MB; a longer one is cut here, with a warning
MAX_TEXT_RUN = 1 << 20
_MAX_ROW, _MAX_COL = 1_048_576, 16_384

#: a cell with a reference and no content (`<c r="B7" s="3"/>`): dropped before parsing, as
#: a sheet may hold millions of them (formatting only)
_EMPTY_CELL = re.compile(rb'<(?:[A-Za-z_][\w.-]*:)?c r="[A-Z]{1,3}[0-9]{1,7}"'
                         rb'(?:\s+[A-Za-z_][\w.:-]*="[^"<>]*")*\s*/>')
_REF = re.compile(r"\$?([A-Za-z]{1,3})\$?(\d{1,7})")
_ESCAPE = re.compile(r"_x([0-9A-Fa-f]{4})_")
_DATA_LIKE = re.compile(r"[\d\s.,:;/%$€£+\-eE()]+")
#: built-in number formats: dates 14-17, times 18-21 and 45-47, date-times 22, percent 9-10
_BUILTIN = {**{i: "date" for i in range(14, 18)}, **{i: "time" for i in (18, 19, 20, 21, 45,
            46, 47)}, 22: "datetime", 9: "percent", 10: "percent"}
_BUILTIN_CODES = {18: "h:mm AM/PM", 19: "h:mm:ss AM/PM", 21: "h:mm:ss", 22: "m/d/yy h:mm",
                  45: "mm:ss", 46: "[h]:mm:ss", 47: "mmss.0", 10: "0.00%"}
_NOT_CODES = re.compile(r'"[^"]*"|\[[^\]]*\]|\\.|[_*].')
#: a row is cut between its cells before inside one (as csv.py's rows between fields)
_CELLS = RegexSplitter(r" \| ")
_ROW_LEVELS = (_CELLS, SENTENCES, WORDS)

#: SpreadsheetML's namespaces: transitional, strict, none
_NS = ("{http://schemas.openxmlformats.org/spreadsheetml/2006/main}",
       "{http://purl.oclc.org/ooxml/spreadsheetml/main}", "")
TEXT, DATA = 0, 1  # cell kinds: a label, or a value (number, date, boolean, error)


class _Full(Exception):
    """`MAX_CELLS` reached: stop reading."""


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse `.xlsx` bytes into one `sheet` section per visible worksheet with its tables."""
    pkg = Package(data, source=source, fmt="xlsx")
    book = _Workbook(pkg)
    name = PurePath(source).name or source
    title = book.title or name
    parts: list[str] = []
    sections: list[Section] = []
    starts: list[int] = []
    pos, budget, tables = 0, _Budget(), 0
    for sheet_name, part in book.sheets:
        starts.append(pos + (2 if parts else 0))
        grid = _read_sheet(pkg, part, book, budget)  # up to the budget's end
        out = _Writer((title, sheet_name))
        for block in _layout(grid):
            out.block(block)
        out.flush_title()
        if not out.parts:
            if budget.full:
                break
            continue
        if parts:
            parts.append("\n\n")
            pos += 2
        text = "".join(out.parts)
        sections.append(Section(pos, pos + len(text), LEVEL_SHEET, "sheet", (title, sheet_name),
                                "", (("sheet", sheet_name),)))
        sections.extend(_shift(s, pos) for s in out.sections)
        tables += out.tables
        parts.append(text)
        pos += len(text)
        if budget.full:
            break
    if budget.full:
        book.warnings.append(f"truncated at {MAX_CELLS:,} cells: the rest of sheet "
                             f"{sheet_name!r} and the sheets after it are left out")
    text = "".join(parts)
    meta = [("sheets", len(starts)), ("tables", tables)]
    meta += [(k, v) for k, v in (("hidden_sheets", book.hidden),
                                 ("chart_sheets", book.charts)) if v]
    levels = tuple((k, _ROW_LEVELS) for k in ("row", "header"))
    return ParsedDocument(source=source, format="xlsx", text=text, sections=tuple(sections),
                          title=title, page_starts=tuple(min(s, len(text)) for s in starts)
                          or None, warnings=tuple(book.warnings), meta=tuple(meta),
                          leaf_splitters=levels, prose=False, line_numbers=False,
                          views=(("row", "table"),))


def _shift(s: Section, by: int) -> Section:
    return Section(s.start + by, s.end + by, s.level, s.kind, s.path, s.context, s.meta)


class _Budget:
    """Cells with a value still to be read, over the whole workbook."""

    def __init__(self) -> None:
        self.left, self.full = MAX_CELLS, False


# -- the workbook -----------------------------------------------------------------------------
def _local(tag: Any) -> str:
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _unescape(text: str) -> str:
    """OOXML's `_xHHHH_` escapes (`_x000D_` is a carriage return) decoded."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text) if "_x" in text else text


class _Workbook:
    """What every sheet needs: the sheets to read, strings, styles and the date system."""

    def __init__(self, pkg: Package) -> None:
        self.warnings: list[str] = []
        main = next((t for kind, t in pkg.rels("").values() if kind == "officeDocument"),
                    "xl/workbook.xml")
        if main not in pkg:
            raise ParseError(pkg.source, "not an Excel workbook: no workbook part")
        root = pkg.xml(main)
        self.ns = root.tag.rpartition("}")[0] + "}" if root.tag.startswith("{") else ""
        pr = root.find(f"{self.ns}workbookPr")
        self.date1904 = pr is not None and pr.get("date1904", "").lower() in ("1", "true")
        rels = pkg.rels(main)
        self.sheets: list[tuple[str, str]] = []  # (name, worksheet part)
        self.hidden = self.charts = 0
        for sheet in root.iter(f"{self.ns}sheet"):
            name = sheet.get("name") or f"Sheet{len(self.sheets) + 1}"
            rid = next((v for k, v in sheet.attrib.items() if _local(k) == "id"), "")
            kind, target = rels.get(rid, ("", ""))
            if sheet.get("state") in ("hidden", "veryHidden"):
                self.hidden += 1
            elif kind != "worksheet":  # chart and dialog sheets hold no cells
                self.charts += 1
            elif target not in pkg:
                self.warnings.append(f"sheet {name!r}: its part {target} is missing")
            else:
                self.sheets.append((name, target))
        targets = {kind: t for kind, t in rels.values()}
        self.strings = _shared_strings(pkg, targets.get("sharedStrings", ""), self.warnings)
        self.styles = _styles(pkg, targets.get("styles", ""))
        self.title = _title(pkg)


def _title(pkg: Package) -> str:
    if "docProps/core.xml" not in pkg:
        return ""
    for el in pkg.xml("docProps/core.xml"):
        if _local(el.tag) == "title" and el.text and el.text.strip():
            return " ".join(el.text.split())[:_MAX_TITLE]
    return ""


def _events(source: str, part: str, data: bytes, tags: tuple[str, ...],
            events: tuple[str, ...] = ("end",), drop: re.Pattern[bytes] | None = None,
            warnings: list[str] | None = None) -> Iterator[Any]:
    """(event, element) of the named elements (local names, in SpreadsheetML's namespaces) of a part's
    bytes, streamed with entities never resolved; None after each piece fed (a megabyte or
    so, see `_fed`). `drop`: what to cut from the bytes before parsing (never a `<` in a
    match). A text longer than `MAX_TEXT_RUN` is cut there, with one warning in `warnings`."""
    from lxml import etree

    refuse_dtd(source, part, data)
    # exact names: a `{*}` wildcard costs lxml half as much again as the parse itself
    parser = etree.XMLPullParser(events=events, tag=[f"{ns}{t}" for t in tags for ns in _NS],
                                 resolve_entities=False, no_network=True, load_dtd=False,
                                 huge_tree=False, remove_comments=True, remove_pis=True)
    cut = [0]
    try:
        for piece in _fed(data, drop, cut):
            parser.feed(piece)
            yield from parser.read_events()
            yield None
        parser.close()
        yield from parser.read_events()
    except etree.XMLSyntaxError as e:
        raise ParseError(source, f"part {part} is not well-formed XML: {e}") from e
    finally:
        if cut[0] and warnings is not None:
            warnings.append(f"part {part}: {cut[0]:,} text(s) cut at {MAX_TEXT_RUN:,} bytes, "
                            f"the bound on one text (an Excel cell holds 32,767 characters)")


def _fed(data: bytes, drop: re.Pattern[bytes] | None, cut: list[int]) -> Iterator[bytes]:
    """The bytes of a part in pieces of about `_FEED`, each ending before a `<` (so that no
    match of `drop` straddles two pieces, and `drop` is applied to each). Linear in the
    part for any text length: a stretch without a tag is found with one forward search,
    never by stepping back a byte at a time (a 10 MB cell was quadratic: hours). Of such a
    text (a cell's), at most `MAX_TEXT_RUN` bytes are kept, cut where no character or
    reference is split (UTF-8 parts only; a UTF-16 part is fed whole, in pieces)."""
    at, n = 0, len(data)
    utf8 = not data.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\x00" not in data[:512]
    while at < n:
        end = at + _FEED
        if end >= n:
            yield drop.sub(b"", data[at:]) if drop is not None else data[at:]
            return
        lt = data.rfind(b"<", at + 1, end)
        if lt > 0:  # the common case: cut before the last tag of the megabyte
            yield drop.sub(b"", data[at:lt]) if drop is not None else data[at:lt]
            at = lt
            continue
        nxt = data.find(b"<", end)  # a megabyte without a tag: one long text (or tag)
        nxt = n if nxt < 0 else nxt
        gt = data.find(b">", at, nxt)  # the end of the tag that opens the stretch
        head = data[at:gt + 1] if gt >= 0 else b""
        if head:
            yield drop.sub(b"", head) if drop is not None else head
        start = at + len(head)
        stop = nxt
        if utf8 and nxt - start > MAX_TEXT_RUN and gt >= 0:
            stop = _safe_cut(data, start, start + MAX_TEXT_RUN)
            cut[0] += 1
        for a in range(start, stop, _FEED):
            yield data[a:min(a + _FEED, stop)]
        at = nxt


def _safe_cut(data: bytes, start: int, at: int) -> int:
    """`at`, moved back so that it splits neither a UTF-8 character nor a `&...;`
    reference of the text that begins at `start`."""
    amp = data.rfind(b"&", max(start, at - 12), at)
    if amp >= 0 and data.find(b";", amp, at) < 0:
        at = amp
    while at > start and 0x80 <= data[at] < 0xC0:
        at -= 1
    return at


def _text_of(el: Any) -> str:
    """The text of a string item (`si`, `is`): its runs joined, phonetic guides left out."""
    return _unescape("".join(t.text or "" for t in el.iter("{*}t")
                             if _local(t.getparent().tag) != "rPh"))


def _shared_strings(pkg: Package, part: str, warnings: list[str]) -> list[str]:
    if not part or part not in pkg:
        return []
    out = []
    for ev in _events(pkg.source, part, pkg.read(part), ("si",), warnings=warnings):
        if ev is not None:
            out.append(_text_of(ev[1]))
            ev[1].clear()
            while ev[1].getprevious() is not None:
                del ev[1].getparent()[0]
    return out


def _styles(pkg: Package, part: str) -> list[tuple[str, int, bool, bool]]:
    """Per cell style (`s`): (kind: date/time/datetime/percent/"", percent decimals, whether
    the format shows seconds, elapsed hours `[h]`)."""
    if not part or part not in pkg:
        return []
    root = pkg.xml(part)
    codes = {int(f.get("numFmtId", "-1")): f.get("formatCode", "")
             for f in root.iter("{*}numFmt") if f.get("numFmtId", "").isdigit()}
    out = []
    xfs = next(root.iter("{*}cellXfs"), None)
    for xf in (xfs if xfs is not None else ()):
        fid = xf.get("numFmtId", "0")
        out.append(_format(int(fid) if fid.isdigit() else 0, codes))
    return out


def _format(fid: int, codes: dict[int, str]) -> tuple[str, int, bool, bool]:
    code = codes.get(fid, _BUILTIN_CODES.get(fid, ""))
    bare = _NOT_CODES.sub("", code.split(";")[0]).lower()
    kind = _BUILTIN.get(fid, "") if fid not in codes else ""
    if not kind and "%" in bare:
        kind = "percent"
    elif not kind and re.search(r"[dmyhs]", bare) and "general" not in bare:
        day, clock = bool(re.search(r"[dy]", bare)), bool(re.search(r"[hs]", bare))
        kind = "datetime" if day and clock else "time" if clock else "date"
    decimals = 0
    if kind == "percent":
        number = bare.split("%")[0]
        decimals = sum(ch in "0#?" for ch in number.partition(".")[2])
    return kind, decimals, "s" in bare, "[h" in code.lower()


# -- values -----------------------------------------------------------------------------------
def _number(v: str) -> str:
    try:
        x = float(v)
    except ValueError:
        return v
    if not math.isfinite(x):
        return v
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    s = f"{x:.15g}"
    if "e" in s:
        mantissa, exp = s.split("e")
        return f"{mantissa}E{int(exp):+03d}"
    return s


def _percent(x: float, decimals: int) -> str:
    try:
        d = Decimal(f"{x * 100:.15g}").quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_UP)
    except InvalidOperation:
        return _number(repr(x))
    return f"{d}%"


def _date(x: float, kind: str, seconds: bool, elapsed: bool, date1904: bool) -> str | None:
    """Excel's serial date `x` as ISO text, or None when it is no date Excel can show."""
    if x < 0 or x >= 2958466:
        return None
    days = math.floor(x)
    secs = round((x - days) * 86400)
    if secs >= 86400:
        days, secs = days + 1, secs - 86400
    h, m, s = secs // 3600, secs // 60 % 60, secs % 60
    if kind == "time":
        hours = days * 24 + h if elapsed else h
        return f"{hours:02d}:{m:02d}:{s:02d}"
    if date1904:
        day = str(date(1904, 1, 1) + timedelta(days))
    elif days == 60:
        day = "1900-02-29"  # Excel's (Lotus's) leap day that never was
    elif days == 0:
        day = "1900-01-00"
    else:
        day = str(date(1899, 12, 31 if days < 60 else 30) + timedelta(days))
    if kind == "date":
        return day
    return f"{day} {h:02d}:{m:02d}" + (f":{s:02d}" if seconds else "")


def _value(cell: Any, el: Any, tag: str, book: _Workbook) -> tuple[str, int] | None:
    """(text as Excel shows it, TEXT or DATA) of a cell, from its `v` or `is` element."""
    t = cell.get("t", "n")
    if tag == "is":
        return (_text_of(el), TEXT) if t == "inlineStr" else None
    if t == "inlineStr":
        return None
    raw = el.text or ""
    if t == "s":
        i = int(raw) if raw.strip().isdigit() else -1
        return (book.strings[i], TEXT) if 0 <= i < len(book.strings) else None
    if t in ("str", "e"):
        return _unescape(raw), TEXT if t == "str" else DATA
    if t == "b":
        return ("TRUE" if raw.strip() in ("1", "true") else "FALSE"), DATA
    if t == "d":  # an ISO date (rare): midnight left out
        return raw.replace("T", " ").removesuffix("Z").removesuffix(" 00:00:00"), DATA
    s = cell.get("s", "0")
    kind, decimals, seconds, elapsed = (book.styles[int(s)] if s.isdigit()
                                        and int(s) < len(book.styles) else ("", 0, False, False))
    if kind:
        try:
            x = float(raw)
        except ValueError:
            return _number(raw), DATA
        if kind == "percent":
            return _percent(x, decimals), DATA
        shown = _date(x, kind, seconds, elapsed, book.date1904)
        if shown is not None:
            return shown, DATA
    return _number(raw.strip()), DATA


# -- one sheet --------------------------------------------------------------------------------
def _col_number(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - 64
    return n


def column_letters(n: int) -> str:
    """Excel's name of column `n` (1 -> A, 27 -> AA)."""
    out = ""
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(65 + r) + out
    return out


_COLUMNS: dict[str, int] = {}


def _ref(text: str | None) -> tuple[int, int] | None:
    """(row, column) of a cell reference such as `B12` (`$B$12`), None if it is none."""
    m = _REF.fullmatch(text or "")
    if not m:
        return None
    letters = m.group(1)
    col = _COLUMNS.get(letters)
    if col is None:
        col = _COLUMNS[letters] = _col_number(letters)
    row = int(m.group(2))
    return (row, col) if 1 <= row <= _MAX_ROW and 1 <= col <= _MAX_COL else None


@dataclass
class _Grid:
    """The cells of one sheet with a value: row -> {column: (text, kind)}; merged ranges
    (r1, c1, r2, c2) whose top-left cell has a value; spacer rows and column ranges."""

    cells: dict[int, dict[int, tuple[str, int]]] = field(default_factory=dict)
    merges: list[tuple[int, int, int, int]] = field(default_factory=list)
    spacer_rows: set[int] = field(default_factory=set)
    spacer_cols: list[tuple[int, int]] = field(default_factory=list)
    budget: _Budget | None = None


class _Row:
    """Where the sheet reader is: the open row, and what places a cell without `r` (the
    cell after the last one placed)."""

    __slots__ = ("el", "no", "first", "anchor", "col")

    def __init__(self, el: Any, no: int) -> None:
        self.el, self.no = el, no
        self.first = 1  # the column of the row's first element still in the tree
        self.anchor, self.col = None, 0  # the last cell placed, and its column

    def column(self, cell: Any) -> int:
        """The column of a cell without `r`: one past its left neighbour."""
        steps, p = 0, cell.getprevious()
        while p is not None and p is not self.anchor:
            steps, p = steps + 1, p.getprevious()
        return self.col + steps + 1 if p is not None else self.first + steps

    def prune(self) -> None:
        """Drop the row's elements already read but the last (which may be open)."""
        row = self.el
        if len(row) > 1:
            last = row[-1]
            at = _ref(last.get("r"))
            self.first = at[1] if at is not None else self.column(last)
            self.anchor = None
            del row[:-1]


def _read_sheet(pkg: Package, part: str, book: _Workbook, budget: _Budget) -> _Grid:
    """The cells of a worksheet part, its merged ranges and spacer lines."""
    grid = _Grid(budget=budget)
    row: _Row | None = None
    last_row, merges = 0, 0
    names: dict[str, str] = {}
    try:
        # cells without a value are cut from the bytes before parsing, at C speed
        for ev in _events(pkg.source, part, pkg.read(part), ("row", "v", "is", "col",
                                                              "mergeCell"),
                          ("start", "end"), _EMPTY_CELL, book.warnings):
            if ev is None:  # a megabyte read: drop the elements of the open row already seen
                if row is not None:
                    row.prune()
                continue
            kind, el = ev
            tag = names.get(el.tag) or names.setdefault(el.tag, _local(el.tag))
            if tag == "v" or tag == "is":
                if kind == "end" and row is not None:
                    _cell(el, tag, row, grid, book)
            elif tag == "row":
                if kind == "start":
                    at = el.get("r", "")
                    last_row = int(at) if at.isdigit() else last_row + 1
                    row = _Row(el, last_row)
                    if el.get("hidden") in ("1", "true") or (
                            el.get("customHeight") in ("1", "true")
                            and _float(el.get("ht", ""), 99.0) < _SPACER_HEIGHT):
                        grid.spacer_rows.add(last_row)
                else:
                    el.clear()
                    row = None
                    up = el.getparent()
                    while up is not None and el.getprevious() is not None:
                        del up[0]
            elif kind == "start":
                continue
            elif tag == "col":
                lo, hi = _int(el.get("min")), _int(el.get("max"))
                if el.get("hidden") in ("1", "true") or _float(el.get("width", ""), 99.0) \
                        < _SPACER_WIDTH:
                    grid.spacer_cols.append((lo, hi))
            elif tag == "mergeCell":
                merges += 1
                if merges <= MAX_MERGES:
                    _merge(el.get("ref", ""), grid)
                el.clear()
    except _Full:
        budget.full = True
    grid.spacer_cols = _spacer_runs(grid.spacer_cols)
    if merges > MAX_MERGES:
        book.warnings.append(f"{merges - MAX_MERGES:,} merged ranges of {part} ignored "
                             f"(at most {MAX_MERGES:,} are read)")
    return grid


def _float(text: str, default: float) -> float:
    try:
        return float(text)
    except ValueError:
        return default


def _int(text: str | None) -> int:
    return int(text) if text and text.isdigit() else 0


def _cell(el: Any, tag: str, row: _Row, grid: _Grid, book: _Workbook) -> None:
    """Store the value of the cell whose `v` or `is` element `el` has just ended."""
    cell = el.getparent()
    if cell is None or cell.getparent() is not row.el:
        return
    got = _value(cell, el, tag, book)
    el.clear()
    r = cell.get("r")
    at = _ref(r) if r else None
    if at is None:
        at = (row.no, row.column(cell))
    row.anchor, row.col = cell, at[1]
    if got is None:
        return
    text = " ".join(got[0].split())
    if not text:
        return
    budget = grid.budget
    budget.left -= 1
    if budget.left < 0:
        budget.full = True
        raise _Full
    cells = grid.cells.get(at[0])
    if cells is None:
        cells = grid.cells[at[0]] = {}
    cells[at[1]] = (text, got[1])


def _merge(ref: str, grid: _Grid) -> None:
    a, _, b = ref.partition(":")
    top, bottom = _ref(a), _ref(b or a)
    if top is None or bottom is None:
        return
    r1, r2 = sorted((top[0], bottom[0]))
    c1, c2 = sorted((top[1], bottom[1]))
    if (r1, c1) != (r2, c2):
        grid.merges.append((r1, c1, r2, c2))


# -- blocks -----------------------------------------------------------------------------------
@dataclass
class _Block:
    """Cells of one block: per row, its entries (first column, last column, text, kind,
    whether the row is the entry's own: False for the rows a merge repeats it down)."""

    box: tuple[int, int, int, int]
    rows: dict[int, list[tuple[int, int, str, int, bool]]]


def _layout(grid: _Grid) -> list[_Block]:
    """The blocks of a sheet in reading order (top row, then left column)."""
    if not grid.cells:
        return []
    pieces = _pieces(grid)
    groups = _components(grid, pieces)
    blocks = []
    for group in groups:
        rows: dict[int, list[tuple[int, int, str, int, bool]]] = {}
        for r1, c1, r2, c2, text, kind in group:
            for r in range(r1, r2 + 1):
                rows.setdefault(r, []).append((c1, c2, text, kind, r == r1))
        for entries in rows.values():
            entries.sort()
        box = (min(p[0] for p in group), min(p[1] for p in group),
               max(p[2] for p in group), max(p[3] for p in group))
        blocks.append(_Block(box, dict(sorted(rows.items()))))
    blocks.sort(key=lambda b: (b.box[0], b.box[1]))
    return blocks


_Piece = tuple[int, int, int, int, str, int]  # r1, c1, r2, c2, text, kind


def _pieces(grid: _Grid) -> list[_Piece]:
    """Every cell with a value as a piece, a merged range with a value as one piece over its
    area (clipped to the cells' extent; its hidden cells' stale values dropped)."""
    cells = grid.cells
    top, bottom = min(cells), max(cells)
    right = max(max(row) for row in cells.values())
    covered: set[tuple[int, int]] = set()
    out: list[_Piece] = []
    budget = grid.budget
    for r1, c1, r2, c2 in grid.merges:
        value = cells.get(r1, {}).get(c1)
        r2, c2 = min(r2, bottom), min(c2, right)
        if value is None or (r1, c1) in covered or (r2, c2) == (r1, c1):
            continue
        cost = (r2 - r1) + (c2 - c1) * _MAX_HEADER_ROWS  # what repeating it may write
        if budget is None or budget.left < cost:
            continue  # no room to repeat it: its value stays in its first cell
        budget.left -= cost
        out.append((r1, c1, r2, c2, value[0], value[1]))
        for r in range(r1, r2 + 1):
            row = cells.get(r)
            if row:
                covered.update((r, c) for c in row if c1 <= c <= c2)
    del top
    for r, row in cells.items():
        for c, (text, kind) in row.items():
            if (r, c) not in covered:
                out.append((r, c, r, c, text, kind))
    return out


def _spacer_runs(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spacer column ranges as sorted runs, neither overlapping nor touching."""
    runs: list[tuple[int, int]] = []
    for a, b in sorted((max(a, 1), min(b, _MAX_COL)) for a, b in ranges if a <= b):
        if runs and a <= runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], max(runs[-1][1], b))
        else:
            runs.append((a, b))
    return runs


def _spacers_between(lo: int, hi: int, runs: list[tuple[int, int]]) -> bool:
    """Whether every column in [lo, hi] is a spacer (`runs` from `_spacer_runs`)."""
    i = bisect_right(runs, (lo, _MAX_COL + 1)) - 1
    return i >= 0 and runs[i][0] <= lo and hi <= runs[i][1]


def _components(grid: _Grid, pieces: list[_Piece]) -> list[list[_Piece]]:
    """Pieces that touch (across spacers) joined, then groups whose boxes overlap. Pieces
    side by side in a row are first joined into runs, so that a dense table costs a union
    per row, not per cell."""
    spans: dict[int, list[tuple[int, int, int]]] = {}
    for i, (r1, c1, r2, c2, _, _) in enumerate(pieces):
        for r in range(r1, r2 + 1):
            spans.setdefault(r, []).append((c1, c2, i))
    parent: list[int] = []  # union-find over runs
    of_piece = [-1] * len(pieces)  # a piece's first run

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    gap_ok: dict[tuple[int, int], bool] = {}
    runs: dict[int, list[tuple[int, int, int]]] = {}  # row -> (c1, c2, run) sorted
    for r in sorted(spans):
        line = sorted(spans[r])
        out: list[tuple[int, int, int]] = []
        for c1, c2, i in line:
            if out and (c1 <= out[-1][1] + 1 or _gap_is_spacer(out[-1][1] + 1, c1 - 1, grid,
                                                               gap_ok)):
                run = out[-1][2]
                out[-1] = (out[-1][0], max(out[-1][1], c2), run)
            else:
                run = len(parent)
                parent.append(run)
                out.append((c1, c2, run))
            if of_piece[i] < 0:
                of_piece[i] = run
            else:  # a merged range spanning rows: its runs are one
                union(of_piece[i], run)
        runs[r] = out
    rows = sorted(runs)
    for r, nxt in zip(rows, rows[1:]):
        if nxt == r + 1 or (nxt - r - 1 <= len(grid.spacer_rows) and all(
                q in grid.spacer_rows for q in range(r + 1, nxt))):
            _join_overlaps(runs[r], runs[nxt], union)
    groups: dict[int, list[int]] = {}
    for i in range(len(pieces)):
        groups.setdefault(find(of_piece[i]), []).append(i)
    if len(groups) > _MAX_BOXES:  # too many to join box by box: split at empty rows only
        return _bands(grid, pieces)
    boxes = [[min(pieces[i][0] for i in g), min(pieces[i][1] for i in g),
              max(pieces[i][2] for i in g), max(pieces[i][3] for i in g), g]
             for g in groups.values()]
    boxes = _join_strips(_join_boxes(boxes))
    return [[pieces[i] for i in sorted(b[4])] for b in boxes]


def _gap_is_spacer(lo: int, hi: int, grid: _Grid, memo: dict[tuple[int, int], bool]) -> bool:
    key = (lo, hi)
    if key not in memo:
        memo[key] = bool(grid.spacer_cols) and _spacers_between(lo, hi, grid.spacer_cols)
    return memo[key]


def _join_overlaps(upper: list[tuple[int, int, int]], lower: list[tuple[int, int, int]],
                   union: Any) -> None:
    """Union the pieces of two sorted rows of spans whose columns overlap."""
    i = j = 0
    while i < len(upper) and j < len(lower):
        a1, a2, p = upper[i]
        b1, b2, q = lower[j]
        if a1 <= b2 and b1 <= a2:
            union(p, q)
        if a2 < b2:
            i += 1
        else:
            j += 1


def _join_boxes(boxes: list[list[Any]]) -> list[list[Any]]:
    """Boxes [r1, c1, r2, c2, members] joined while any two overlap."""
    changed = True
    while changed:
        changed = False
        boxes.sort(key=lambda b: (b[0], b[1]))
        out: list[list[Any]] = []
        for b in boxes:
            for o in out:
                if o[2] >= b[0] and o[0] <= b[2] and o[1] <= b[3] and b[1] <= o[3]:
                    o[0], o[1] = min(o[0], b[0]), min(o[1], b[1])
                    o[2], o[3] = max(o[2], b[2]), max(o[3], b[3])
                    o[4] = o[4] + b[4]
                    changed = True
                    break
            else:
                out.append(b)
        boxes = out
    return boxes


def _join_strips(boxes: list[list[Any]]) -> list[list[Any]]:
    """A strip (one column of values) beside a table, on the table's rows (at least half of
    them) and at most `_STRIP_GAP` empty columns away, joined to it: a column of page
    numbers set apart by an empty column is the table's last column, not a table."""
    tables = [b for b in boxes if b[3] > b[1]]
    out = []
    for b in boxes:
        if b[3] > b[1] or not tables:
            out.append(b)
            continue
        near = [t for t in tables if t[0] <= b[0] and b[2] <= t[2]
                and 2 * (b[2] - b[0] + 1) >= t[2] - t[0] + 1
                and 0 < min(abs(b[1] - t[3]), abs(t[1] - b[1])) <= _STRIP_GAP + 1]
        near = [t for t in near if not any(_between(o, b, t) for o in boxes
                                           if o is not b and o is not t)]
        if not near:
            out.append(b)
            continue
        t = min(near, key=lambda t: min(abs(b[1] - t[3]), abs(t[1] - b[1])))
        t[1], t[3], t[4] = min(t[1], b[1]), max(t[3], b[3]), t[4] + b[4]
    return out


def _between(o: list[Any], strip: list[Any], table: list[Any]) -> bool:
    """Whether box `o` lies between a strip and a table, on the strip's rows."""
    lo, hi = (table[3], strip[1]) if strip[1] > table[3] else (strip[1], table[1])
    return o[0] <= strip[2] and strip[0] <= o[2] and o[1] < hi and o[3] > lo


def _bands(grid: _Grid, pieces: list[_Piece]) -> list[list[_Piece]]:
    """Pieces split at fully empty rows that are not spacers."""
    pieces = sorted(pieces)
    out: list[list[_Piece]] = []
    bottom = -2
    for p in pieces:
        gap = range(bottom + 1, p[0])
        if not out or (p[0] > bottom + 1 and not (
                len(gap) <= len(grid.spacer_rows) and all(q in grid.spacer_rows for q in gap))):
            out.append([])
        out[-1].append(p)
        bottom = max(bottom, p[2])
    return out


# -- tables -----------------------------------------------------------------------------------
def _all_labels(entries: list[tuple[int, int, str, int, bool]]) -> bool:
    return bool(entries) and all(k == TEXT and not _DATA_LIKE.fullmatch(t)
                                 for _, _, t, k, _ in entries)


def _header_rows(rows: list[tuple[int, list[tuple[int, int, str, int, bool]]]]) -> int:
    """How many of a table's first rows are its header (0: none)."""
    if len(rows) < 2 or not _all_labels(rows[0][1]):
        return 0
    n = 1
    # a second header row only over data (in a table of texts, a row of texts is a row)
    while n < _MAX_HEADER_ROWS and n + 1 < len(rows) and _has_data(rows[n + 1:]):
        head = [e for _, es in rows[:n] for e in es]
        labelled = {c for c1, c2, *_ in head for c in range(c1, c2 + 1)}
        # merged labels over it (a label across columns, or one running down into it)
        spread = any(c2 > c1 for c1, c2, *_ in head) or any(
            not own for _, es in rows[n:n + 1] for *_, own in es)
        if not (_all_labels(rows[n][1]) or spread and all(k == TEXT for *_, k, _ in rows[n][1])):
            break  # (under merged labels, texts such as "2022" are labels too)
        if not spread and all(c1 in labelled for c1, *_ in rows[n][1]):
            break  # a row that labels no new column is a row of data
        n += 1
    for size in dict.fromkeys((n, 1)):
        if _covers(rows[:size], rows[size:]) and _differs(rows[:size], rows[size:]):
            return size
    return 0


def _lift_captions(rows: list[Any], h: int, titles: list[str]) -> tuple[int, list[Any]]:
    """Header rows without the captions standing in them, which join `titles`; the header's
    new height and the rows.

    A caption is the one label of an upper header row over the columns that the rows under it
    label, not merged, when those rows label at least `_MIN_CAPTIONED` columns: a period
    ("January–June 2023") set above the last column of a table, which is the whole table's,
    not that column's (glued to it, the 2023 and 2022 tables of a sheet had the same
    context). A header row left with no label is no longer a header row."""
    out = list(rows)
    k = 0
    while k < h - 1:
        below = {c for _, es in out[k + 1:h] for c1, c2, *_ in es for c in range(c1, c2 + 1)}
        over = [e for e in out[k][1] if any(c in below for c in range(e[0], e[1] + 1))]
        if len(below) < _MIN_CAPTIONED or len(over) != 1 or over[0][0] != over[0][1]:
            k += 1
            continue
        titles.append(over[0][2])
        rest = [e for e in out[k][1] if e is not over[0]]
        if rest:
            out[k] = (out[k][0], rest)
            k += 1
        else:
            del out[k]
            h -= 1
    return h, out


def _has_data(rows: list[Any]) -> bool:
    return any(k == DATA or _DATA_LIKE.fullmatch(t) for _, es in rows for _, _, t, k, _ in es)


def _covers(head: list[Any], body: list[Any]) -> bool:
    """Whether the header rows label at least half the table's columns."""
    labelled = {c for _, es in head for c1, c2, *_ in es for c in range(c1, c2 + 1)}
    used = labelled | {c1 for _, es in body for c1, *_ in es}
    return len(labelled) * 2 >= len(used)


def _differs(head: list[Any], body: list[Any]) -> bool:
    """Whether a labelled column holds data below, or no first-row label recurs below in
    its column (a header-less table of texts repeats its first row's values)."""
    labels = {c1: t for c1, _, t, _, _ in head[0][1]}
    labelled = {c for _, es in head for c1, c2, *_ in es for c in range(c1, c2 + 1)}
    for _, es in body:
        for c1, _, t, k, _ in es:
            if c1 in labelled and (k == DATA or _DATA_LIKE.fullmatch(t)):
                return True
    return not any(labels.get(c1) == t for _, es in body for c1, _, t, _, _ in es)


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|")


def _pipe(values: list[str]) -> str:
    while values and not values[-1]:
        values.pop()
    return "| " + " | ".join(values) + " |" if values else ""


class _Writer:
    """The text and sections of one sheet, offsets from the sheet's start."""

    def __init__(self, path: tuple[str, str]) -> None:
        self.path = path
        self.parts: list[str] = []
        self.sections: list[Section] = []
        self.pos = 0
        self.tables = 0
        #: a short block of one-cell rows waiting to title the next table: lines, box
        self.title: tuple[list[str], tuple[int, int, int, int]] | None = None

    def _put(self, text: str) -> tuple[int, int]:
        if self.parts:
            self.parts.append("\n\n")
            self.pos += 2
        start = self.pos
        self.parts.append(text)
        self.pos += len(text)
        return start, self.pos

    def block(self, block: _Block) -> None:
        rows = list(block.rows.items())
        single = [r for r, es in rows if len(es) < 2]
        if len(single) == len(rows):
            self.flush_title()
            lines = [es[0][2] for _, es in rows if es and es[0][4]]
            if len(lines) <= _MAX_TITLE_LINES and all(len(t) <= _MAX_TITLE for t in lines):
                self.title = (lines, block.box)
            else:
                self._paragraph(lines)
            return
        titles: list[str] = []
        if self.title is not None:
            lines, (_, c1, r2, _) = self.title
            if block.box[0] - r2 <= 2 and block.box[1] - 1 <= c1 <= block.box[3]:
                titles, self.title = lines, None
            else:
                self.flush_title()
        while len(rows[0][1]) < 2:
            titles.append(rows.pop(0)[1][0][2])
        notes: list[str] = []
        while len(rows) > 2 and len(rows[-1][1]) == 1 and rows[-1][1][0][3] == TEXT:
            notes.insert(0, rows.pop()[1][0][2])
        path = self._table(block, titles, rows)
        if notes:  # a table's footnotes, after it
            self._paragraph(notes, path)

    def _paragraph(self, lines: list[str], path: tuple[str, ...] | None = None) -> None:
        start, end = self._put("\n".join(_cell_text(t) for t in lines))
        self.sections.append(Section(start, end, LEVEL_PARAGRAPH, "paragraph",
                                     path or self.path))

    def flush_title(self) -> None:
        if self.title is not None:
            self._paragraph(self.title[0])
            self.title = None

    def _table(self, block: _Block, titles: list[str], rows: list[Any]) -> tuple[str, ...]:
        h = _header_rows(rows)
        if h > 1:
            h, rows = _lift_captions(rows, h, titles)
        filled: list[tuple[int, dict[int, str]]] = []
        for k, (r, es) in enumerate(rows):
            vals: dict[int, str] = {}
            for c1, c2, text, _, _ in es:
                for c in (range(c1, c2 + 1) if k < h else (c1,)):
                    vals[c] = _cell_text(text)
            filled.append((r, vals))
        cols = sorted({c for _, vals in filled for c in vals})
        if sum(len(cols) for _ in filled) > 20 * sum(len(v) for _, v in filled) + 10_000:
            cols = []  # very sparse (a block joined from thousands of pieces): no alignment
        lines: list[tuple[int, str]] = []
        if h:
            labels = []
            for c in cols:
                seq: list[str] = []
                for _, vals in filled[:h]:
                    t = vals.get(c, "")
                    if t and (not seq or seq[-1] != t):
                        seq.append(t)
                labels.append(" ".join(seq))
            lines.append((0, _pipe(labels)))
        for r, vals in filled[h:]:
            line = _pipe([vals.get(c, "") for c in cols] if cols else list(vals.values()))
            if line:
                lines.append((r, line))
        path = self.path + tuple(" ".join(t.split())[:_MAX_TITLE] for t in titles)
        text = "\n".join([_cell_text(t) for t in titles] + [line for _, line in lines])
        start, end = self._put(text)
        table_start = end - sum(len(line) + 1 for _, line in lines) + 1
        header = lines[0][1] if h else _synthesised(cols)
        r1, c1, r2, c2 = block.box
        meta = (("cell_range", f"{column_letters(c1)}{r1}:{column_letters(c2)}{r2}"),
                ("header", "detected" if h else "synthesised"),
                *table_facts(PIPE, header if not h and len(header) <= _MAX_CONTEXT
                             else first_pipe_line(text, table_start - start, len(text))))
        self.sections.append(Section(table_start, end, LEVEL_TABLE, "table", path,
                                     header if len(header) <= _MAX_CONTEXT else "", meta))
        pos = table_start
        for r, line in lines:
            if r == 0:
                self.sections.append(Section(pos, pos + len(line), LEVEL_ROW, "header", path))
            else:
                self.sections.append(Section(pos, pos + len(line), LEVEL_ROW, "row", path, "",
                                             (("row", r), ("row_start", r), ("row_end", r))))
            pos += len(line) + 1
        self.tables += 1
        return path


def _synthesised(cols: list[int]) -> str:
    """`| column A | column B |` for a header-less table ("" past `_MAX_CONTEXT`)."""
    if len(cols) * 12 > _MAX_CONTEXT or not cols:
        return ""
    return _pipe([f"column {column_letters(c)}" for c in cols])
