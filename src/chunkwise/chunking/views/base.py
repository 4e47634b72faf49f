"""What a view is (`View`), and the one document's state every view renders with
(`DocumentViews`): which view the parser declared for which kind, the section tree with its
lookups memoised, the contexts the fitter gave, and each view family's per-document facts.

A view renders a planned chunk (`Piece`) of a document (`ParsedDocument`) over its section
tree: `render(piece, doc, tree)` gives the (context, body) to embed instead of the chunk's own,
or None to embed it as it is. `tree` is the document's `DocumentViews`: its `root` is the
tree (`Node`), its methods the lookups a view needs (the chain of sections holding a span, the
context the fitter gives a span), memoised once per document.
"""

from __future__ import annotations

from typing import Callable, Mapping, Protocol, Sequence

from ...model import ParsedDocument
from ..structure import Node, chain_of
from ..work import Piece, lead_context
from .tablefacts import Tables, rows_policy

__all__ = ["View", "BaseView", "DocumentViews"]

#: what a view gives: the context, then the body, of the embed text
Rendered = tuple[str, str]


class View(Protocol):
    """A rendering of a chunk's text for the embedder, registered under its `name`."""

    #: the name `Chunker(views=...)` and a parser's declaration use
    name: str
    #: the view a parser declares that this one renders (a variant's base; itself otherwise)
    stands_for: str
    #: the section kinds a parser may declare it for (empty: any kind, `"*"`)
    kinds: frozenset[str]
    #: what it does, in a line (`chunkwise chunk --help`, the error on an unknown name)
    about: str
    #: it renders whole table rows: a chunk of rows whose view does not fit is re-cut
    rows: bool
    #: one row per chunk, unless the table-rows policy groups them: then this view instead
    grouped_as: str

    def render(self, piece: Piece, doc: ParsedDocument, tree: DocumentViews,
               within: Node | None = None) -> Rendered | None:
        """(context, body) to embed for `piece`, or None to embed it as it is. `within`:
        the table the piece lies in, when the caller knows it."""
        ...


class BaseView:
    """The defaults of a view's attributes; a view sets `name`, `about` and `render`."""

    name = ""
    stands_for = ""
    kinds: frozenset[str] = frozenset()
    about = ""
    rows = False
    grouped_as = ""

    def __init__(self) -> None:
        if not self.stands_for:
            self.stands_for = self.name


class DocumentViews:
    """The views one document declares, ready to render its chunks: the lookups over its
    tree memoised (a document's chunks share its sections), and its tables' facts."""

    def __init__(self, doc: ParsedDocument, registry: Mapping[str, View], root: Node,
                 declared: Sequence[tuple[str, str]] | None = None,
                 table_rows: str = "row") -> None:
        self.doc, self.registry, self.root, self.table_rows = doc, registry, root, table_rows
        self.by_kind = dict(doc.views if declared is None else declared)
        self.starts: dict[int, list[int]] = {}  # each node's children's starts (`chain_of`)
        self._context_tokens: dict[str, int] = {}
        self._above: dict[int, list[Node]] = {}  # a table's enclosing sections (context_at)
        self._leads: dict[tuple[str, ...], list[str]] = {}
        self._tables: Tables | None = None
        #: `(context, body) -> count(embed_text(context, body))` (set by `apply_views`)
        self.embed: Callable[[str, str], int] = lambda context, body: 0

    @property
    def tables(self) -> Tables:
        """The document's tables: header cells, rows, usual values, found once each."""
        if self._tables is None:
            self._tables = Tables(self.doc, self.chain)
        return self._tables

    def chain(self, start: int, end: int) -> list[Node]:
        """The sections holding [start, end), from the root down."""
        return chain_of(self.root, start, end, self.starts)

    def context_tokens(self, context: str, count: Callable[[str], int]) -> int:
        """Tokens of a context, counted once per document: the rows of a table share it,
        and a wide table's header would otherwise be counted again for every row."""
        n = self._context_tokens.get(context)
        if n is None:
            n = self._context_tokens[context] = count(context)
        return n

    def view_name(self, kinds: Sequence[str]) -> str | None:
        """The view declared for the first of `kinds` that has one (else for `"*"`)."""
        for k in kinds:
            if k in self.by_kind:
                return self.by_kind[k]
        return self.by_kind.get("*")

    def view(self, piece: Piece, table: Node | None = None) -> View | None:
        """The view a planned chunk takes: the one declared for its kinds, read through the
        table-rows policy when it puts one row in a chunk (`row`: as it is; `grouped`: its
        `grouped_as`; `auto`: per table, `rows_policy`). `table`: the chunk's table when
        the caller knows it."""
        name = self.view_name(piece.kinds)
        if name is None:
            return None
        view = self.registry[name]
        if not view.grouped_as or self.table_rows == "row":
            return view
        if self.table_rows == "grouped":
            return self.registry[view.grouped_as]
        if table is None:
            table = self.tables.table_of(piece)
            if table is None:
                return view
        grouped = rows_policy(len(self.tables.rows_of(table)[0])) != "row"
        return self.registry[view.grouped_as] if grouped else view

    def view_of(self, piece: Piece, table: Node | None = None) -> str | None:
        """The name of `view(piece, table)`."""
        view = self.view(piece, table)
        return view.name if view is not None else None

    def render(self, piece: Piece, table: Node | None = None) -> Rendered | None:
        """(context, view text) of a planned chunk, or None to embed it as it is. `table`:
        the table the chunk lies in when the caller knows it."""
        view = self.view(piece, table)
        return view.render(piece, self.doc, self, table) if view is not None else None

    def context_at(self, start: int, end: int, within: Node | None = None) -> str:
        """The context the fitter gives a chunk [start, end): the document's lead lines,
        then the context of every enclosing section that starts before it (`Frame.context`,
        without its limit: a view is only used when the whole embed text fits). `within`: a
        section known to hold the chunk (a table), whose own chain is then found once."""
        if within is None:
            chain = self.chain(start, end)
        else:  # the sections above `within` are the same for every row of it
            above = self._above.get(id(within))
            if above is None:
                full = self.chain(within.start, within.end)
                at = next((i for i, n in enumerate(full) if n is within), None)
                above = self._above[id(within)] = full[:at] if at is not None else []
            chain = above + chain_of(within, start, end, self.starts) if above \
                else self.chain(start, end)
        path = chain[-1].path
        lead = self._leads.get(path)
        if lead is None:
            lead = self._leads[path] = lead_context(self.doc, path)
        return "\n".join([*lead, *(n.context for n in chain if n.context and start > n.start)])

