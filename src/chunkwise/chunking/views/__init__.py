"""Views: what the embedder sees of a chunk's text, per kind of section (DESIGN: embed text =
context + "\\n\\n" + view(text)).

A chunk's `text` is always the exact slice of the canonical text; a *view* is another
rendering of it that embeds better, declared by the parser for the section kinds it applies
to (`ParsedDocument.views`: `(kind, view name)` pairs, `"*"` for every kind). No declaration,
no view: the embed text is the text itself, as before. The core applies a view only when the
viewed embed text still fits the budget (counted with the real tokenizer; `tokens` is that
count), else the chunk keeps its text; a chunk that took a view carries it in `Chunk.view`.

Each view is a class (`View`, `views.base`) and one row of `VIEWS`: the code views
(`views.code`) and the table views (`views.table`; table chunks re-cut into runs of rows
whose views fit, `views.rows`). What a view needs to know of a format (a table's header
cells and delimiter, a definition's doc line) its parser wrote into the section's meta
(`chunkwise.model.VIEW_FACTS`): nothing here names a format.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ...model import ParsedDocument, embed_text
from ...text.tables import table_rows
from ..structure import Node
from ..work import Piece
from .base import BaseView, DocumentViews, View
from .code import CodeDocView, CodeNameView, CodeSplitView, CodeView, code_view, split_identifiers
from .rows import fitting, grouped, grouping
from .table import (AUTO_ROWS, TABLE_ROWS, TableAllView, TableRowView, TableView, rows_policy,
                    view_of_rows)

__all__ = ["VIEWS", "DECLARED", "VARIANTS", "DEFAULT_VIEWS", "TABLE_ROWS", "AUTO_ROWS", "View",
           "BaseView", "DocumentViews", "apply_views", "split_identifiers", "code_view",
           "table_rows", "view_of_rows", "rows_policy"]

#: every view by name: one row per view (a class in `views.code`, `views.table`, ...)
VIEWS: dict[str, View] = {v.name: v for v in (
    CodeView(), CodeDocView(), CodeSplitView(), CodeNameView(),
    TableView(), TableRowView(), TableAllView())}
#: the views a parser may declare, and what they do (`Chunker(views="all")`)
DECLARED = {v.name: v.about for v in VIEWS.values() if v.stands_for == v.name}
#: other renderings of a declared view, for measuring (`Chunker(views="code-split")`): the
#: view they stand for, and what they do instead
VARIANTS = {v.name: (v.stands_for, v.about) for v in VIEWS.values()
            if v.stands_for != v.name}
#: what `Chunker()` applies: table rows one per chunk as `column: value` lines (issue 22's
#: measurements, docs/evaluation.md: MRR on table questions 0.445 -> 0.671; the `code` view
#: lowered code MRR from 0.836 to 0.788, so it is opt-in), and code chunks inside a documented
#: definition naming it with its first doc line (issue 34, docs/code-retrieval.md: code
#: questions' MRR@10 0.727 -> 0.741 on the tuning and earlier sets, hit@5 unchanged)
DEFAULT_VIEWS = ("table-row", "code-doc")


def apply_views(doc: ParsedDocument, pieces: list[Piece], count: Callable[[str], int],
                room: int, allowed: Iterable[str] | None, root: Node,
                table_rows: str = "row",
                embed: Callable[[str, str], int] | None = None) -> list[tuple[Piece, str | None]]:
    """Each planned chunk with its view text (None: embedded as it is), after cutting table
    chunks whose view would not fit into runs of rows that do. A piece that takes a view
    gets its (possibly shorter) context and the viewed embed text's token count. `allowed`:
    the view names to apply (None: all); `root`: the document's tree; `table_rows`: how
    the `table-row` view packs rows (`TABLE_ROWS`); `embed`: `count(embed_text(context,
    body))`, exact, made faster (`chunkwise.sizing.tokenindex.embed_counter`)."""
    declared = doc.views
    if allowed is not None:
        use = {VIEWS[a].stands_for if a in VIEWS else a: a for a in allowed}
        declared = tuple((k, use[v]) for k, v in declared if v in use)
    if not declared:
        return [(p, None) for p in pieces]
    views = DocumentViews(doc, VIEWS, root, declared, table_rows)
    views.embed = embed or (lambda context, body: count(embed_text(context, body)))
    out: list[tuple[Piece, str | None]] = []
    i = 0
    while i < len(pieces):
        table = grouping(views, pieces[i])
        if table is None:
            out.extend(fitting(views, pieces[i], count, room))
            i += 1
            continue
        j = i + 1  # the planned chunks of whole rows of the same table, packed anew
        while j < len(pieces) and grouping(views, pieces[j]) is table:
            j += 1
        out.extend(grouped(views, pieces[i:j], table, count, room))
        i = j
    return out
