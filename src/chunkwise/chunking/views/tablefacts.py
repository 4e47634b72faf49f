"""A document's tables as the table views read them, each found once: its delimiter and
header cells (its parser's facts, `chunkwise.model.VIEW_FACTS`), its rows and their edges,
its columns' usual values; and the table-rows policy (`TABLE_ROWS`)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Callable

from ...model import ParsedDocument
from ...text.splitting import trim
from ...text.tables import PIPE, cells, table_rows
from ..structure import Node
from ..work import Piece

__all__ = ["TABLE_ROWS", "AUTO_ROWS", "USUAL_SHARE", "SEPARATOR", "rows_policy", "TableFacts",
           "Tables"]

#: a column's value is its "usual" one when more than this share of the rows hold it
USUAL_SHARE = 0.5
#: how the `table-row` view packs a table's rows (`Chunker(table_rows=...)`)
TABLE_ROWS = {"row": "one row per chunk",
              "grouped": "as many whole rows per chunk as fit the budget",
              "auto": "one row per chunk in a table of up to AUTO_ROWS rows, grouped above"}
#: `auto`: the largest table whose rows are embedded one per chunk
AUTO_ROWS = 100
#: a pipe table's delimiter row (`|---|:--:|`)
SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")


def rows_policy(rows: int) -> str:
    """`auto`'s choice for a table of `rows` rows: `row` or `grouped`."""
    return "row" if rows <= AUTO_ROWS else "grouped"


class TableFacts:
    """One table's facts, found once: its delimiter, header cells (stripped, and as the
    labels made of them), usual values, rows, and where its rows may start and end."""

    __slots__ = ("delimiter", "header", "stripped", "labels", "usual", "rows", "starts",
                 "head", "edges")

    def __init__(self, doc: ParsedDocument, table: Node) -> None:
        meta = dict(table.meta)
        self.delimiter: str = meta.get("delimiter", "")
        self.header: list[str] = list(meta.get("header_cells", ()))
        self.stripped = [c.strip() for c in self.header]
        self.labels: dict[int, str] = {}
        self.rows = [c for c in table.children if c.kind == "row"]
        self.starts = [c.start for c in self.rows]
        self.head = next((c for c in table.children if c.kind == "header"), None)
        self.usual = self._usual(doc.text) if self.delimiter else []
        text = doc.text
        starts, ends = {trim(text, table.start, table.end)[0]}, set()
        for c in table.children:
            a, b = trim(text, c.start, c.end)
            if c.kind == "row":
                starts.add(a)
                ends.add(b)
            elif c.kind == "header":
                starts.add(a)
        self.edges = (starts, ends)

    def _usual(self, text: str) -> list[str | None]:
        firsts = [r for c in self.rows
                  for r in table_rows(text[c.start:c.end], self.delimiter)[:1]]
        usual: list[str | None] = []
        for i in range(len(self.header)):
            counts = Counter(" ".join(r[i].split()) for r in firsts if i < len(r))
            value, n = counts.most_common(1)[0] if counts else ("", 0)
            usual.append(value if firsts and n > USUAL_SHARE * len(firsts) else None)
        return usual


class Tables:
    """A document's tables, each read once (the rows of a table share its facts)."""

    def __init__(self, doc: ParsedDocument, chain: Callable[[int, int], list[Node]]) -> None:
        self.doc, self.chain = doc, chain
        self._tables: dict[int, TableFacts] = {}
        self._contexts: dict[tuple[str, int], str] = {}  # (context, table) -> without header

    def of(self, table: Node) -> TableFacts:
        got = self._tables.get(id(table))
        if got is None:
            got = self._tables[id(table)] = TableFacts(self.doc, table)
        return got

    def table_of(self, piece: Piece) -> Node | None:
        """The table section a chunk of rows lies in, or None."""
        return next((n for n in reversed(self.chain(piece.start, piece.end))
                     if n.kind == "table"), None)

    def rows_of(self, table: Node) -> tuple[list[Node], list[int], Node | None]:
        """A table's row sections, their starts, and its header section (or None)."""
        t = self.of(table)
        return t.rows, t.starts, t.head

    def whole_rows(self, table: Node, piece: Piece) -> bool:
        """Whether the chunk starts at the table's or a row's start and ends at a row's end
        (a row cut between its fields is embedded as it is)."""
        starts, ends = self.of(table).edges
        return piece.start in starts and piece.end in ends

    def row_bounds(self, piece: Piece, table: Node | None = None) -> list[int]:
        """Where rows start inside a table chunk (after its first character)."""
        if table is None:
            table = self.table_of(piece)
        if table is None:
            return []
        from bisect import bisect_left, bisect_right

        starts = self.of(table).starts
        return starts[bisect_right(starts, piece.start):bisect_left(starts, piece.end)]

    def context(self, context: str, table: Node) -> str:
        """A table chunk's context without the header row (and a pipe table's delimiter
        row): the labels carry it. Found once per context and table."""
        key = (context, id(table))
        out = self._contexts.get(key)
        if out is None:
            t = self.of(table)
            pipe = t.delimiter == PIPE
            out = self._contexts[key] = "\n".join(
                line for line in context.split("\n")
                if not (pipe and SEPARATOR.match(line))
                and [c.strip() for c in cells(line, t.delimiter)] != t.stripped)
        return out


