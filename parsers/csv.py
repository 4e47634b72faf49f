"""CSV and TSV tables: one `table` section whose rows are `row` sections.

The canonical text is the decoded file (newlines normalised). The `csv` module gives no
offsets, so record boundaries come from a linear scan that follows the module's own rules
(quotes open a field only at its start, doubled quotes escape, newlines inside quotes do not
end a record), and are then checked against `csv.reader`. The header line is the table's
`context`, so every later chunk of rows is embedded after `file.csv` and the header. It is
also a `header` section of its own (the first chunk packs it with the rows that follow when
they fit), so that a very wide header is split between its cells rather than glued to row 1.
A header-less file gets a synthesised `column_1,column_2,…` context and
`("header", "synthesised")` in the document meta.

A row (or header) that does not fit the budget is cut between its fields, never inside a
field that fits: the document declares `_FieldCuts` as the first cut level of its rows
(`ParsedDocument.leaf_splitters`), so the fitter finds the fields as it needs them, one
row at a time. Rows longer than `_CELL_ROW` characters also list their cells as sections
(kind `cell`, with their column numbers), up to `_MAX_CELLS` cells in a document: a file
with more (one 20 MB line of two million fields) lists none, as a section per field would
cost the fitter about 0.6 KB each; its rows are cut between fields all the same.

A header longer than `_MAX_CONTEXT` characters (or a synthesised one that would be) is not
the table's context: repeated before every chunk it would leave no room for rows, and the
fitter would drop it anyway (it limits context to half the budget, cut at a line).
"""

from __future__ import annotations

import csv
import io
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from pathlib import PurePath
from typing import Iterator

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.text.splitting import LINES, SENTENCES, WORDS
from chunkwise.text.tables import table_facts
from chunkwise.text.textio import decode

log = logging.getLogger(__name__)

LEVEL_TABLE, LEVEL_ROW, LEVEL_CELL = 30, 20, 10

_DELIMITERS = ",;\t|"
_SNIFF = 8192  # characters given to csv.Sniffer (its regexes are not linear: keep it small)
_SAMPLE = 65536  # characters on which each candidate delimiter's consistency is measured
_SAMPLE_ROWS = 20
_CELL_ROW = 2000  # rows longer than this get cell sections
#: cell sections in one document at most: past it, none (a row is still cut between fields)
_MAX_CELLS = 200_000
#: a header longer than this (in characters) is not the table's context
_MAX_CONTEXT = 65_536
_NUL_SHARE = 1000  # more than one NUL per this many characters: binary, not a table
_NONSPACE = re.compile(r"\S")
_SEP_HINT = re.compile(r"sep=(.)[ \t]*\n")  # Excel's "sep=;" first line
_DATA_LIKE = re.compile(r"[\d\s.,:;/%$€£+\-eE()]+")


@dataclass(frozen=True, slots=True)
class _Dialect:
    """The dialect the scan and `csv.reader` share (doubled quotes, non-strict); csv.reader
    takes any object with these attributes."""

    delimiter: str = ","
    quotechar: str = '"'
    skipinitialspace: bool = False
    doublequote: bool = True
    escapechar: None = None
    lineterminator: str = "\n"
    quoting: int = csv.QUOTE_MINIMAL
    strict: bool = False


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse CSV/TSV bytes into a table section with one section per data row."""
    text, warnings = decode(data, source)
    text = _drop_nul(text, source, warnings)
    name = PurePath(source).name or source
    if not _NONSPACE.search(text):
        return ParsedDocument(source=source, format="csv", text=text, title=name,
                              warnings=tuple(warnings))
    begin = 0
    hint = _SEP_HINT.match(text)
    if hint and hint.group(1) in _DELIMITERS:
        dialect, begin = _Dialect(delimiter=hint.group(1)), hint.end()
    else:
        dialect = _sniff(text, name)
    records = list(_records(text, dialect, begin))
    warnings.extend(_verify(text, records, dialect))
    sample = [_row(text, s, e, dialect) for s, e in records[:_SAMPLE_ROWS + 1]]
    has_header = _has_header(sample, text, records, dialect)
    columns = max((len(r) for r in sample), default=0)
    if has_header:
        head_start, head_end = records[0]
        header, rows = text[head_start:head_end], records[1:]
        columns = len(sample[0])
    else:
        header, rows = _synthesised(columns, dialect.delimiter), records
    context = header if len(header) <= _MAX_CONTEXT else ""
    nl = text.find("\n")  # without a context, the table's first line heads it
    facts = table_facts(dialect.delimiter, context or text[:nl if nl != -1 else len(text)])
    sections = [Section(records[0][0], records[-1][1], LEVEL_TABLE, "table", (name,), context,
                        facts)]
    cells = _CellBudget(text, dialect, name)
    if has_header and rows:  # its own section, so a wide header is split between its cells
        sections.append(Section(head_start, head_end, LEVEL_ROW, "header", (name,)))
        sections.extend(cells.of(head_start, head_end))
    for n, (start, end) in enumerate(rows, 1):
        sections.append(Section(start, end, LEVEL_ROW, "row", (name,), "",
                                (("row", n), ("row_start", n), ("row_end", n))))
        sections.extend(cells.of(start, end))
    if cells.spent:
        sections = [s for s in sections if s.kind != "cell"]
    meta = (("header", "detected" if has_header else "synthesised"), ("columns", columns),
            ("delimiter", dialect.delimiter))
    # rows are cut between fields, and so is a header, or a table with no section under
    # it (a header alone)
    levels = (_FieldCuts(dialect), LINES, SENTENCES, WORDS)
    return ParsedDocument(source=source, format="csv", text=text, sections=tuple(sections),
                          title=name, warnings=tuple(warnings), meta=meta,
                          leaf_splitters=tuple((k, levels) for k in ("row", "header", "table")),
                          views=(("row", "table"),))


def _synthesised(columns: int, delimiter: str) -> str:
    """`column_1,column_2,…` for a header-less table; "" when it would be longer than
    `_MAX_CONTEXT` (each name takes at least 9 characters), without building it."""
    if columns * 9 > _MAX_CONTEXT:
        return ""
    return delimiter.join(f"column_{i}" for i in range(1, columns + 1))


# -- decoding and dialect -----------------------------------------------------------------------
def _drop_nul(text: str, source: str, warnings: list[str]) -> str:
    """A few stray NULs are dropped (with a warning); many mean the file is not text."""
    nuls = text.count("\x00")
    if not nuls:
        return text
    if nuls * _NUL_SHARE > len(text):
        raise ParseError(source, "binary data (NUL bytes), not a CSV table",
                         position=text.index("\x00"))
    warnings.append(f"dropped {nuls} NUL character(s)")
    return text.replace("\x00", "")


def _sniff(text: str, name: str) -> _Dialect:
    """Delimiter from the extension (.tsv) or csv.Sniffer, checked against how consistently
    each candidate splits the sample; quotes are always `"` unless the sample has none."""
    lower = name.lower()
    if lower.endswith((".tsv", ".tab")):
        return _Dialect(delimiter="\t")
    sample = _cut(text, _SAMPLE)
    sniffed: csv.Dialect | None
    try:
        sniffed = csv.Sniffer().sniff(_cut(text, _SNIFF), delimiters=_DELIMITERS)
    except csv.Error:
        sniffed = None
    quote = '"'
    cut = len(sample) < len(text)
    if sniffed is not None and sniffed.quotechar == "'" and '"' not in sample and \
            _best_consistency(sample, "'", cut) > _best_consistency(sample, '"', cut):
        # apostrophes are common in text: `'` quotes only when it reads the sample better
        quote = "'"
    space = bool(sniffed and sniffed.skipinitialspace)
    dialects = {d: _Dialect(delimiter=d, quotechar=quote) for d in _DELIMITERS}
    scores = {d: _consistency(sample, dialects[d], cut=cut) for d in _DELIMITERS}
    if quote in sample:  # a reading that leaves stray quotes is the wrong one
        for d in _DELIMITERS:
            if scores[d][0] and _stray_quotes(sample, dialects[d]):
                scores[d] = (-1.0, scores[d][1])
    best = max(_DELIMITERS, key=lambda d: scores[d])  # ties: the order of _DELIMITERS
    if sniffed is not None and sniffed.delimiter in scores and \
            scores[sniffed.delimiter] >= scores[best]:
        best = sniffed.delimiter
    return _Dialect(delimiter=best, quotechar=quote, skipinitialspace=space)


def _best_consistency(sample: str, quote: str, cut: bool) -> tuple:
    return max(_consistency(sample, _Dialect(delimiter=d, quotechar=quote), cut=cut)
               for d in _DELIMITERS)


def _stray_quotes(sample: str, dialect: _Dialect) -> bool:
    """Whether reading `sample` with `dialect` finds a quote character that neither opens a
    field nor closes one (`a"b`, `"a"b`): what csv.writer never writes, and what a wrong
    delimiter makes of quoted fields that hold the right one or a newline."""
    field = _compiled(dialect)[0]
    quote, pos, n = dialect.quotechar, 0, len(sample)
    while pos < n:
        end = field.match(sample, pos).end()
        if sample.find(quote, pos, end) != -1:
            body = sample[pos:end].lstrip(" ") if dialect.skipinitialspace else sample[pos:end]
            if not body.startswith(quote) or (end < n and not body.endswith(quote)) \
                    or len(body) == 1:
                return True
        pos = end + 1
    return False


def _cut(text: str, size: int) -> str:
    """The first `size` characters, cut after the last whole line when there is one."""
    if len(text) <= size:
        return text
    head = text[:size]
    nl = head.rfind("\n")
    return head[:nl] if nl > 0 else head


def _consistency(sample: str, dialect: _Dialect, *, cut: bool = True) -> tuple[float, int]:
    """(share of sample rows with the most common field count, that count); a delimiter
    that never splits a row scores zero. Rows are read as the csv module reads the file
    (a quoted field may hold newlines); the last row is left out when the sample was cut."""
    counts: dict[int, int] = {}
    try:
        rows = list(islice(csv.reader(io.StringIO(sample), dialect), 101))
    except csv.Error:
        return (0.0, 0)
    if len(rows) > 100:
        rows = rows[:100]
    elif cut and len(rows) > 1:  # the last row may be cut
        rows = rows[:-1]
    for row in rows:
        if row:
            counts[len(row)] = counts.get(len(row), 0) + 1
    if not counts:
        return (0.0, 0)
    width, freq = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    if width < 2:
        return (0.0, 0)
    return (freq / sum(counts.values()), width)


# -- records ----------------------------------------------------------------------------------
def _field_pattern(d: _Dialect) -> str:
    """One field as the csv module reads it (non-strict): a quoted field runs to its closing
    quote (doubled quotes are literal; unterminated, to the end of the text) and may be
    followed by literal text; an unquoted field runs to the delimiter or newline."""
    q, sep = re.escape(d.quotechar), re.escape(d.delimiter)
    lead = " *" if d.skipinitialspace else ""
    return (f"{lead}{q}[^{q}]*(?:{q}{q}[^{q}]*)*(?:{q}[^{sep}\\n]*|\\Z)"
            f"|[^{sep}\\n]*")


@lru_cache(maxsize=16)
def _compiled(dialect: _Dialect) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(one field, one whole record) for a dialect."""
    field = _field_pattern(dialect)
    sep = re.escape(dialect.delimiter)
    return re.compile(field), re.compile(f"(?:{field})(?:{sep}(?:{field}))*")


def _records(text: str, dialect: _Dialect, pos: int = 0) -> Iterator[tuple[int, int]]:
    """(start, end) of every non-blank record, end excluding its newline. Lines without a
    quote character are records as they are; others are matched field by field."""
    record = _compiled(dialect)[1]
    quote, find, n = dialect.quotechar, text.find, len(text)
    while pos < n:
        nl = find("\n", pos)
        if nl == -1:
            nl = n
        end = nl if find(quote, pos, nl) == -1 else record.match(text, pos).end()
        if _NONSPACE.search(text, pos, end):
            yield pos, end
        pos = end + 1


def _verify(text: str, records: list[tuple[int, int]], dialect: _Dialect) -> list[str]:
    """Each scanned record must be exactly one `csv.reader` row; a mismatch is reported as a
    warning (the spans stay exact either way, only the row split may differ)."""
    i, n = 0, len(records)
    while i < n:
        lines = (text[s:e] for s, e in records[i:])
        reader = csv.reader(lines, dialect)
        try:
            for k, _ in enumerate(reader, 1):
                if reader.line_num != k:
                    return [f"record {i + k}: csv.reader disagrees on the row boundary"]
            return []
        except csv.Error as e:  # e.g. a field over csv.field_size_limit(): skip that record
            i += max(reader.line_num, 1)
            log.debug("csv.reader could not check record %d: %s", i, e)
    return []


def _row(text: str, start: int, end: int, dialect: _Dialect) -> list[str]:
    try:
        return next(csv.reader([text[start:end]], dialect), [])
    except csv.Error:  # an oversized field: split it ourselves
        return [text[a:b] for a, b in _cells(text, start, end, dialect)]


def _cells(text: str, start: int, end: int, dialect: _Dialect,
           limit: int | None = None) -> list[tuple[int, int]] | None:
    """(start, end) of each field of one record; None when there are more than `limit`."""
    field = _compiled(dialect)[0]
    out, pos = [], start
    while True:
        m = field.match(text, pos, end)
        out.append((pos, m.end()))
        pos = m.end()
        if pos >= end or text[pos] != dialect.delimiter:
            return out
        if limit is not None and len(out) >= limit:
            return None
        pos += 1


class _CellBudget:
    """Cell sections of long rows, up to `_MAX_CELLS` in the document: once a row would pass
    it, `spent` is set and no more are made (the caller drops those made)."""

    def __init__(self, text: str, dialect: _Dialect, name: str) -> None:
        self.text, self.dialect, self.name = text, dialect, name
        self.left, self.spent = _MAX_CELLS, False

    def of(self, start: int, end: int) -> list[Section]:
        """Cells of the row `text[start:end]` if it is long, each with the delimiter after
        it (so pieces start at a cell)."""
        if self.spent or end - start <= _CELL_ROW:
            return []
        cells = _cells(self.text, start, end, self.dialect, self.left)
        if cells is None:
            self.spent = True
            return []
        if len(cells) < 2:
            return []
        self.left -= len(cells)
        return [Section(a, b + 1 if j < len(cells) else b, LEVEL_CELL, "cell", (self.name,), "",
                        (("column_start", j), ("column_end", j)))
                for j, (a, b) in enumerate(cells, 1)]


@dataclass(frozen=True, slots=True)
class _FieldCuts:
    """A splitter (see `chunkwise.text.splitting`) of a row's text: after each delimiter or
    newline that ends a field, as the csv module reads them (a delimiter or newline inside
    quotes ends nothing). The fitter asks it for the cuts of a row or header that does not
    fit, so a piece of it starts at a field; `iter` finds them as they are taken (a 20 MB
    row has millions). The spans it is given start at a record, or at text that the
    section tree attached before one (a `sep=;` line), which ends at a newline."""

    dialect: _Dialect

    def __call__(self, text: str, a: int, b: int) -> list[int]:
        return list(self.iter(text, a, b))

    def iter(self, text: str, a: int, b: int) -> Iterator[int]:
        """The cuts strictly inside `(a, b)`, in order."""
        match = _compiled(self.dialect)[0].match
        pos = a
        while pos < b:
            pos = match(text, pos, b).end() + 1  # past the delimiter or newline
            if pos < b:
                yield pos


# -- header -----------------------------------------------------------------------------------
def _has_header(sample: list[list[str]], text: str, records: list[tuple[int, int]],
                dialect: _Dialect) -> bool:
    """csv.Sniffer's vote (column types and lengths), or a first row of non-empty, non-numeric
    labels: most CSV files have a header, so a plausible one is taken."""
    if not sample:
        return False
    first = sample[0]
    if len(sample) > 1 and _readable(text, records[:len(sample)], dialect):
        head = "\n".join(text[s:e] for s, e in records[:len(sample)])
        try:
            if _FixedSniffer(dialect).has_header(head):
                return True
        except Exception:  # noqa: BLE001 - a heuristic's failure is a "no", not a crash
            log.debug("csv.Sniffer.has_header failed", exc_info=True)
    # (no list of the stripped cells: a one-line file may have millions; the first
    # data-like one ends the look)
    if not first or any(_DATA_LIKE.fullmatch(c.strip()) for c in first):
        return False
    return sum(1 for c in first if c.strip()) * 2 >= len(first)


def _readable(text: str, records: list[tuple[int, int]], dialect: _Dialect) -> bool:
    """Whether `csv.Sniffer.has_header` reads these records joined by newlines without a
    `csv.Error` (such as a field over `csv.field_size_limit()`): the rows it reads (at most
    23) are read here a line at a time, because has_header copies its sample whole, to a
    StringIO at four bytes a character (one 50 MB cell took 0.25 GB more, only to fail)."""
    try:
        for _ in islice(csv.reader(_joined_lines(text, records), dialect), 23):
            pass
    except csv.Error:
        return False
    return True


def _joined_lines(text: str, records: list[tuple[int, int]]) -> Iterator[str]:
    """The lines of `"\\n".join(text[s:e] for s, e in records)`, each with its newline, as
    a StringIO of it gives them."""
    last = len(records) - 1
    for k, (s, e) in enumerate(records):
        while (nl := text.find("\n", s, e)) != -1:  # a newline inside a quoted field
            yield text[s:nl + 1]
            s = nl + 1
        if k < last:  # with the newline that joins it to the next: the text's own, if any
            yield text[s:e + 1] if text[e:e + 1] == "\n" else text[s:e] + "\n"
        elif s < e:
            yield text[s:e]


class _FixedSniffer(csv.Sniffer):
    """`has_header` re-sniffs the dialect of its sample; use the one already chosen."""

    def __init__(self, dialect: _Dialect) -> None:
        super().__init__()
        self._dialect = dialect

    def sniff(self, sample: str, delimiters: str | None = None) -> _Dialect:  # noqa: ARG002
        return self._dialect
