"""The table views: rows as `column: value` lines.

- `table`: every row of the chunk as `column: value` lines (rows separated by a blank line),
  the column names taken from the table's header cells; cells that are empty or hold their
  column's usual value (the value of more than half of the rows: `0` in a table of flags)
  are left out, so a row of 69 indicator columns reads as the few that are set. The header
  line itself is no longer repeated in the context (the labels carry it). A chunk of rows
  whose view would not fit is cut, between rows, into runs that do (`views.rows`), so rows
  are never viewed by halves.
- `table-row` (a variant, the default): one row per chunk, or grouped as `table` by the
  table-rows policy (`TABLE_ROWS`); `table-all`: every cell, usual values included.

What a table is made of is its parser's to say, in the table section's meta
(`chunkwise.model.VIEW_FACTS`): its `delimiter` (`|` for pipe rows, else a CSV delimiter)
and its `header_cells`. A table without them is embedded as it is.
"""

from __future__ import annotations

from typing import Sequence

from ...model import ParsedDocument
from ...text.tables import PIPE, cells, table_rows
from ..structure import Node
from ..work import Piece
from .base import BaseView, DocumentViews, Rendered
from .code import split_identifiers
from .tablefacts import AUTO_ROWS, SEPARATOR, TABLE_ROWS, rows_policy

__all__ = ["TABLE_ROWS", "AUTO_ROWS", "rows_policy", "view_of_rows", "TableView",
           "TableRowView", "TableAllView"]


def view_of_rows(rows: Sequence[Sequence[str]], header: Sequence[str],
                 usual: Sequence[str | None] = (), labels: dict[int, str] | None = None) -> str:
    """Rows as `column: value` lines, a blank line between rows, leaving out empty cells and
    cells holding their column's usual value. `labels`: the columns' labels by index, filled
    as they are made (one dict per header: a table's rows share them)."""
    if labels is None:
        labels = {}
    out = []
    for row in rows:
        lines = []
        for i, value in enumerate(row):
            v = " ".join(value.split())
            if not v or (i < len(usual) and usual[i] == v):
                continue
            label = labels.get(i)
            if label is None:
                name = header[i].strip() if i < len(header) and header[i].strip() \
                    else f"column {i + 1}"
                label = labels[i] = split_identifiers(name)
            lines.append(f"{label}: {v}")
        if lines:
            out.append("\n".join(lines))
    return "\n\n".join(out)


class TableView(BaseView):
    name = "table"
    kinds = frozenset({"row"})
    about = "rows as `column: value` lines, usual values left out"
    rows = True
    #: whether cells holding their column's usual value are left out
    usual = True
    #: a chunk of more than one row is not viewed: it is cut into single rows
    single = False

    def render(self, piece: Piece, doc: ParsedDocument, tree: DocumentViews,
               within: Node | None = None) -> Rendered | None:
        tables = tree.tables
        table = within if within is not None else tables.table_of(piece)
        if table is None or not tables.whole_rows(table, piece):
            return None
        t = tables.of(table)
        if not t.delimiter or not any(t.stripped):
            return None
        text = doc.text[piece.start:piece.end]
        if t.delimiter == PIPE:
            lines = [line for line in text.split("\n") if line.strip()]
            if not all(line.lstrip().startswith("|") for line in lines):
                return None  # a heading or a paragraph with the rows: as it is
            lines = [line for line in lines if not SEPARATOR.match(line)]
            if self.single and len(lines) > 2:
                return None  # two rows or more even past a header row: cut into rows
            rows = [cells(line, PIPE) for line in lines]
        else:
            rows = table_rows(text, t.delimiter)
        if rows and [c.strip() for c in rows[0]] == t.stripped:
            rows = rows[1:]  # the header row itself, at the top of the first chunk
        if not rows or (self.single and len(rows) > 1):
            return None  # (several rows: cut into single rows, `views.rows`)
        context = tables.context(piece.context, table)
        view = view_of_rows(rows, t.header, t.usual if self.usual else (), t.labels)
        return (context, view) if view.strip() else None  # nothing left to label


class TableRowView(TableView):
    name, stands_for = "table-row", "table"
    about = "one row per chunk"
    single = True
    grouped_as = "table"


class TableAllView(TableView):
    name, stands_for = "table-all", "table"
    about = "every cell, usual values included"
    usual = False
