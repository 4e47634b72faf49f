"""Views: what the embedder sees of a chunk's text, per kind of section (DESIGN: embed text =
context + "\\n\\n" + view(text)).

A chunk's `text` is always the exact slice of the canonical text; a *view* is another
rendering of it that embeds better, declared by the parser for the section kinds it applies
to (`ParsedDocument.views`: `(kind, view name)` pairs, `"*"` for every kind). No declaration,
no view: the embed text is the text itself, as before. The core applies a view only when the
viewed embed text still fits the budget (counted with the real tokenizer; `tokens` is that
count), else the chunk keeps its text; a chunk that took a view carries it in `Chunk.view`.

Views, keyed by name so that any parser of a format can declare one:

- `code`: identifiers split into words (`get_max_batch_size` -> `get max batch size`,
  `ReadingOrderModel` -> `Reading Order Model`), after a first line naming the chunk's
  qualified name in words when the chunk's owner has one (`ReadingOrderModel._merge_elements`
  -> `Reading Order Model merge elements`). Natural-language questions ask with words; a
  WordPiece tokenizer cuts `snake_case` into pieces and underscores that carry little.
- `table`: every row of the chunk as `column: value` lines (rows separated by a blank line),
  the column names taken from the table's header; cells that are empty or hold their
  column's usual value (the value of more than half of the rows: `0` in a table of flags)
  are left out, so a row of 69 indicator columns reads as the few that are set. The header
  line itself is no longer repeated in the context (the labels carry it). A chunk of rows
  whose view would not fit is cut, between rows, into runs that do (`repack_rows`), so
  rows are never viewed by halves.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from dataclasses import replace
from functools import partial
from typing import Any, Callable, Iterable, Sequence

from ..model import embed_text
from ..text.splitting import trim
from .work import lead_context, merge_meta

__all__ = ["VIEWS", "TABLE_ROWS", "DocumentViews", "split_identifiers", "code_view",
           "table_rows", "view_of_rows", "rows_policy"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
#: a column's value is its "usual" one when more than this share of the rows hold it
USUAL_SHARE = 0.5


def _words(ident: str) -> str:
    if "_" not in ident.strip("_") and not _CAMEL.search(ident):
        return ident
    parts = [p for chunk in ident.split("_") for p in _CAMEL.split(chunk) if p]
    return " ".join(parts) if parts else ident


def split_identifiers(text: str) -> str:
    """`text` with every snake_case or CamelCase identifier written as words."""
    return _IDENT.sub(lambda m: _words(m.group(0)), text)


def code_view(text: str, qualified: str = "") -> str:
    """The `code` view: the qualified name in words on a first line (when given), then the
    text with its identifiers split into words."""
    body = split_identifiers(text)
    if qualified:
        return f"{split_identifiers(qualified.replace('.', ' '))}\n{body}"
    return body


def _cells(line: str, delimiter: str) -> list[str]:
    if delimiter == "|":  # a Markdown row, `| a | b |`, or an HTML one, `a | b`
        s = line.strip()
        if s.startswith("|"):
            s = s[1:]
        if s.endswith("|") and not s.endswith("\\|"):
            s = s[:-1]
        return [c.strip() for c in re.split(r"(?<!\\)\|", s)]
    try:
        return next(csv.reader(io.StringIO(line), delimiter=delimiter), [])
    except csv.Error:
        return line.split(delimiter)


def table_rows(text: str, delimiter: str) -> list[list[str]]:
    """The rows of a run of table lines (CSV records may span lines)."""
    if delimiter == "|":
        return [_cells(l, "|") for l in text.split("\n") if l.strip()]
    try:
        return [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if r]
    except csv.Error:
        return [l.split(delimiter) for l in text.split("\n") if l.strip()]


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


class DocumentViews:
    """The views one document declares, ready to render its chunks (tables' headers and
    usual values are found once per document)."""

    def __init__(self, doc: Any, declared: Sequence[tuple[str, str]] | None = None,
                 root: Any = None, table_rows: str = "row") -> None:
        self.doc = doc
        self.table_rows = table_rows
        self.root = root
        self.by_kind = dict(doc.views if declared is None else declared)
        self.delimiter = str(dict(doc.meta).get("delimiter", ",")) if doc.format == "csv" \
            else "|"
        self._tables: dict[tuple[int, int], tuple[list[str], list[str | None]]] = {}
        self._edges: dict[tuple[int, int], tuple[set[int], set[int]]] = {}
        self._rows: dict[tuple[int, int], tuple[list[Any], list[int], Any]] = {}
        self._starts: dict[int, list[int]] = {}
        self._context_tokens: dict[str, int] = {}
        self._above: dict[int, list[Any]] = {}  # a table's enclosing sections (context_at)
        self._leads: dict[tuple[str, ...], list[str]] = {}
        self._contexts: dict[tuple[str, int], str] = {}  # (context, table) -> without header
        #: a table's header cells stripped, and its column labels (`view_of_rows`)
        self._labels: dict[tuple[int, int], tuple[list[str], dict[int, str]]] = {}
        #: `(context, body) -> count(embed_text(context, body))` (set by `apply_views`)
        self.embed: Callable[[str, str], int] = lambda context, body: 0

    def context_tokens(self, context: str, count: Callable[[str], int]) -> int:
        """Tokens of a context, counted once per document: the rows of a table share it,
        and a wide table's header would otherwise be counted again for every row."""
        n = self._context_tokens.get(context)
        if n is None:
            n = self._context_tokens[context] = count(context)
        return n

    def view_name(self, kinds: Sequence[str]) -> str | None:
        for k in kinds:
            if k in self.by_kind:
                return self.by_kind[k]
        return self.by_kind.get("*")

    def grouping(self, piece: Any) -> Any:
        """The table whose rows the chunk holds, when its rows are grouped by the table-rows
        policy (`grouped`, or `auto` for a large table) and it holds whole rows; else None."""
        if self.table_rows == "row" or self.view_name(piece.kinds) != "table-row":
            return None
        table = self.table_of(piece)
        if table is None or self.view_of(piece, table) != "table" \
                or not self.whole_rows(table, piece):
            return None
        return table

    def view_of(self, piece: Any, table: Any = None) -> str | None:
        """The view a planned chunk takes: `view_name` of its kinds, with `table-row` read
        through the table-rows policy (`row`: as it is; `grouped`: `table`; `auto`: per
        table, `rows_policy`). `table`: the chunk's table when the caller knows it."""
        name = self.view_name(piece.kinds)
        if name != "table-row" or self.table_rows == "row":
            return name
        if self.table_rows == "grouped":
            return "table"
        if table is None:
            table = self.table_of(piece)
            if table is None:
                return name
        return "table-row" if rows_policy(len(self.rows_of(table)[0])) == "row" else "table"

    # -- tables ---------------------------------------------------------------------------
    def table_of(self, piece: Any) -> Any:
        """The table section a chunk of rows lies in, or None."""
        if self.root is None:
            return piece.owner if piece.owner is not None and piece.owner.kind == "table" \
                else None
        return next((n for n in reversed(chain_of(self.root, piece.start, piece.end,
                                                  self._starts))
                     if n.kind == "table"), None)

    def context_at(self, start: int, end: int, within: Any = None) -> str:
        """The context the fitter gives a chunk [start, end): the document's lead lines,
        then the context of every enclosing section that starts before it (`Frame.context`,
        without its limit: a view is only used when the whole embed text fits). `within`: a
        section known to hold the chunk (a table), whose own chain is then found once."""
        if within is None:
            chain = chain_of(self.root, start, end, self._starts)
        else:  # the sections above `within` are the same for every row of it
            above = self._above.get(id(within))
            if above is None:
                full = chain_of(self.root, within.start, within.end, self._starts)
                at = next((i for i, n in enumerate(full) if n is within), None)
                above = self._above[id(within)] = full[:at] if at is not None else []
            chain = above + chain_of(within, start, end, self._starts) if above \
                else chain_of(self.root, start, end, self._starts)
        path = chain[-1].path
        lead = self._leads.get(path)
        if lead is None:
            lead = self._leads[path] = lead_context(self.doc, path)
        return "\n".join([*lead, *(n.context for n in chain if n.context and start > n.start)])

    def rows_of(self, table: Any) -> tuple[list[Any], list[int], Any]:
        """A table's row sections, their starts, and its header section (or None)."""
        key = (table.start, table.end)
        if key not in self._rows:
            rows = [c for c in table.children if c.kind == "row"]
            header = next((c for c in table.children if c.kind == "header"), None)
            self._rows[key] = (rows, [c.start for c in rows], header)
        return self._rows[key]

    def header_of(self, table: Any) -> tuple[list[str], list[str | None]]:
        key = (table.start, table.end)
        if key not in self._tables:
            text = self.doc.text
            # CSV, and a table whose header is synthesised (a spreadsheet's column letters,
            # not in the text): the context is the header line
            if table.context and (self.delimiter != "|"
                                  or dict(table.meta).get("header") == "synthesised"):
                header_line = table.context
            else:  # Markdown: the table's first row line is its header row
                lines = text[table.start:table.end].split("\n")
                header_line = next((l for l in lines if l.lstrip().startswith("|")), lines[0])
            header = _cells(header_line, self.delimiter)
            rows = [r for c in table.children if c.kind == "row"
                    for r in table_rows(text[c.start:c.end], self.delimiter)[:1]]
            usual: list[str | None] = []
            for i in range(len(header)):
                counts = Counter(" ".join(r[i].split()) for r in rows if i < len(r))
                value, n = counts.most_common(1)[0] if counts else ("", 0)
                usual.append(value if rows and n > USUAL_SHARE * len(rows) else None)
            self._tables[key] = (header, usual)
        return self._tables[key]

    def render(self, piece: Any, table: Any = None) -> tuple[str, str] | None:
        """(context, view text) of a planned chunk, or None to embed it as it is. `table`:
        the table the chunk lies in when the caller knows it."""
        name = self.view_of(piece, table)
        if name is None:
            return None
        text = self.doc.text[piece.start:piece.end]
        if name == "code-doc":
            context = self.definition_context(piece)
            return (context, text) if context else None
        if name in ("code", "code-split", "code-name"):
            path = piece.owner.path if piece.owner is not None else ()
            qualified = ".".join(path) if path and path != (self.doc.title,) else ""
            if name == "code-split":
                return piece.context, split_identifiers(text)
            if name == "code-name":
                return piece.context, f"{qualified}\n{text}" if qualified else text
            return piece.context, code_view(text, qualified)
        if name in ("table", "table-row", "table-all"):
            if table is None:
                table = self.table_of(piece)
            if table is None or not self.whole_rows(table, piece):
                return None
            header, usual = self.header_of(table)
            if self.delimiter == "|":
                lines = [l for l in text.split("\n") if l.strip()]
                if not all(l.lstrip().startswith("|") or self.doc.format == "html"
                           for l in lines):
                    return None  # a heading or a paragraph with the rows: as it is
                lines = [l for l in lines if not _SEPARATOR.match(l)]
                if name == "table-row" and len(lines) > 2:
                    return None  # two rows or more even past a header row: cut by `_fitting`
                rows = [_cells(l, "|") for l in lines]
            else:
                rows = table_rows(text, self.delimiter)
            key = (table.start, table.end)
            labels = self._labels.get(key)
            if labels is None:  # the header's cells stripped, then its labels as made
                labels = self._labels[key] = ([c.strip() for c in header], {})
            if rows and [c.strip() for c in rows[0]] == labels[0]:
                rows = rows[1:]  # the header row itself, at the top of the first chunk
            if not rows or not any(labels[0]):
                return None
            if name == "table-row" and len(rows) > 1:
                return None  # cut into single rows by `_fitting`
            context = self.table_context(piece.context, table, header)
            view = view_of_rows(rows, header, () if name == "table-all" else usual, labels[1])
            return (context, view) if view.strip() else None  # nothing left to label
        return None

    def table_context(self, context: str, table: Any, header: Sequence[str]) -> str:
        """A table chunk's context without the header row (and a Markdown separator): the
        labels carry it. Found once per context and table: the rows of a table share it."""
        key = (context, id(table))
        out = self._contexts.get(key)
        if out is None:
            want = [h.strip() for h in header]
            out = self._contexts[key] = "\n".join(
                line for line in context.split("\n")
                if not (_SEPARATOR.match(line) and self.delimiter == "|")
                and [c.strip() for c in _cells(line, self.delimiter)] != want)
        return out

    def definition_context(self, piece: Any) -> str:
        """`code-doc`: the chunk's context, then a comment line naming the innermost definition
        the chunk starts inside (past its first character) with the first line of its
        documentation (the doc comment above it, or a Python docstring), or "" when there is
        no such definition or it has no documentation."""
        if self.root is None:
            return ""
        chain = chain_of(self.root, piece.start, piece.end, self._starts)
        text = self.doc.text
        for node in reversed(chain):
            if node.kind not in _DEFINITIONS:
                continue
            if piece.start <= trim(text, node.start, node.end)[0]:
                return ""  # the definition's own start: its documentation is in the text
            line = doc_line(text, node.start, node.end, format=self.doc.format)
            if not line:
                return ""
            symbol = dict(node.meta).get("symbol") or ".".join(node.path[1:] or node.path)
            # a line comment, as the document's own line is (`# file.py`), so that the
            # context followed by the text still parses
            mark = self.doc.context.split(" ", 1)[0] if " " in self.doc.context else ""
            return "\n".join(p for p in (piece.context, f"{mark} {symbol}: {line}".strip()) if p)
        return ""

    def whole_rows(self, table: Any, piece: Any) -> bool:
        """Whether the chunk starts at the table's or a row's start and ends at a row's end
        (a row cut between its fields is embedded as it is)."""
        key = (table.start, table.end)
        if key not in self._edges:
            text = self.doc.text
            starts, ends = {trim(text, table.start, table.end)[0]}, set()
            for c in table.children:
                a, b = trim(text, c.start, c.end)
                if c.kind == "row":
                    starts.add(a)
                    ends.add(b)
                elif c.kind == "header":
                    starts.add(a)
            self._edges[key] = (starts, ends)
        starts, ends = self._edges[key]
        return piece.start in starts and piece.end in ends

    def row_bounds(self, piece: Any, table: Any = None) -> list[int]:
        """Where rows start inside a table chunk (after its first character)."""
        if table is None:
            table = self.table_of(piece)
        if table is None:
            return []
        from bisect import bisect_left, bisect_right

        _, starts, _ = self.rows_of(table)
        return starts[bisect_right(starts, piece.start):bisect_left(starts, piece.end)]


_DEFINITIONS = frozenset({"function", "method", "class", "type"})
#: a comment line's marker (`//`, `///`, `/**`, ` * `, `#`, `--`, `--[[`), stripped for its words
_COMMENT = re.compile(r"^(?:/\*+!?|//[/!]?|\*+/?|--+(?:\[=*\[)?)")
_HASH_COMMENT = re.compile(r"^#+(?![!\[])")
#: the formats whose line comments start with `#` (elsewhere `#` starts `#define`, `#[attr]`)
_HASH_FORMATS = frozenset({"python", "ruby", "bash"})
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_QUOTES = re.compile(r"^[rRbBuUfF]{0,2}(?:\"\"\"|\'\'\'|\"|\')")
_DOC_LINE_CHARS = 160


def _words_of_comment(line: str, marker: re.Pattern[str]) -> str:
    s = marker.sub("", line.strip()).strip()
    s = re.sub(r"\*+/$", "", s).strip()
    s = " ".join(_TAG.sub(" ", s).split())
    if s.startswith(("@", "{@inheritdoc")) or not re.search(r"[A-Za-z]{2}", s):
        return ""
    return s


def doc_line(text: str, start: int, end: int, *, format: str = "") -> str:
    """The first line of a definition's documentation in `text[start:end]`: the first
    line of words in the comment block at its top (a doc comment above the header), else,
    in Python, the first line of the docstring after the header; "" when there is none.
    `format`: the document's (`#` starts a comment in Python, Ruby and bash only)."""
    python = format == "python"
    marker = _HASH_COMMENT if format in _HASH_FORMATS else _COMMENT
    lines = text[start:min(end, start + 8000)].split("\n")
    i = 0
    found = ""
    while i < len(lines):
        s = lines[i].strip()
        if not s:
            i += 1
            continue
        if not marker.match(s):
            break
        if not found:
            found = _words_of_comment(s, marker)
        i += 1
    if found or not python:
        return found[:_DOC_LINE_CHARS]
    depth = 0  # past the decorators and the (possibly multi-line) header to its `:`
    while i < len(lines):
        s = lines[i].split("#")[0].rstrip() if "#" in lines[i] and '"' not in lines[i] \
            and "'" not in lines[i] else lines[i].rstrip()
        depth += sum(s.count(c) for c in "([{") - sum(s.count(c) for c in ")]}")
        i += 1
        if depth <= 0 and s.endswith(":") and not s.lstrip().startswith("@"):
            break
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not _QUOTES.match(lines[i].strip()):
        return ""
    first = _QUOTES.sub("", lines[i].strip())
    for s in [first, *lines[i + 1:i + 4]]:
        s = s.strip().rstrip("\"'").strip()
        if re.search(r"[A-Za-z]{2}", s):
            return s[:_DOC_LINE_CHARS]
    return ""


def chain_of(root: Any, start: int, end: int,
             starts: dict[int, list[int]] | None = None) -> list[Any]:
    """The sections holding [start, end), from the document's root down (`build_tree`'s
    nodes: children sorted by start, not overlapping). `starts` caches each node's
    children's starts between calls (one dict per document)."""
    from bisect import bisect_right

    chain = [root]
    node = root
    while node.children:
        kids = node.children
        if starts is None:
            firsts = [c.start for c in kids]
        else:
            firsts = starts.get(id(node))
            if firsts is None:
                firsts = starts[id(node)] = [c.start for c in kids]
        i = bisect_right(firsts, start) - 1
        if i < 0 or not (kids[i].start <= start and end <= kids[i].end):
            break
        node = kids[i]
        chain.append(node)
    return chain


def parent_of(chain: Sequence[Any], start: int, end: int, text: str) -> Any:
    """The smallest section of `chain` that holds more than the chunk [start, end) (more
    than whitespace around it): the section to return for small-to-big retrieval."""
    for node in reversed(chain):
        # A search, not a slice: the root spans the whole document, and slicing it for
        # every chunk made a long document quadratic (a 25 MB JSON array: 136 s).
        if _NONSPACE.search(text, node.start, start) or _NONSPACE.search(text, end, node.end):
            return node
    return chain[0]


_NONSPACE = re.compile(r"\S")


_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")
_TABLE_VIEWS = frozenset({"table", "table-row", "table-all"})


def apply_views(doc: Any, pieces: list[Any], count: Callable[[str], int],
                room: int, allowed: Iterable[str] | None = None,
                root: Any = None, table_rows: str = "row",
                embed: Callable[[str, str], int] | None = None) -> list[tuple[Any, str | None]]:
    """Each planned chunk with its view text (None: embedded as it is), after cutting table
    chunks whose view would not fit into runs of rows that do. A piece that takes a view
    gets its (possibly shorter) context and the viewed embed text's token count. `allowed`:
    the view names to apply (default all); `table_rows`: how the `table-row` view packs
    rows (`TABLE_ROWS`); `embed`: `count(embed_text(context, body))`, exact, made faster
    (`chunkwise.sizing.tokenindex.embed_counter`)."""
    declared = doc.views
    if allowed is not None:
        use = {VARIANTS.get(a, (a, ""))[0]: a for a in allowed}
        declared = tuple((k, use[v]) for k, v in declared if v in use)
    if not declared:
        return [(p, None) for p in pieces]
    views = DocumentViews(doc, declared, root, table_rows)
    views.embed = embed or (lambda context, body: count(embed_text(context, body)))
    out: list[tuple[Any, str | None]] = []
    i = 0
    while i < len(pieces):
        table = views.grouping(pieces[i])
        if table is None:
            out.extend(_fitting(views, pieces[i], count, room))
            i += 1
            continue
        j = i + 1  # the planned chunks of whole rows of the same table, packed anew
        while j < len(pieces) and views.grouping(pieces[j]) is table:
            j += 1
        out.extend(_grouped(views, pieces[i:j], table, count, room))
        i = j
    return out


def _fitting(views: DocumentViews, p: Any, count: Callable[[str], int],
             room: int) -> Iterable[tuple[Any, str | None]]:
    table = views.table_of(p) if views.view_name(p.kinds) in _TABLE_VIEWS else None
    got = views.render(p, table)
    if got is None and views.view_of(p, table) != "table-row":
        yield p, None
        return
    context, view = got if got is not None else ("", "")
    tokens = views.embed(context, view) if got is not None else room + 1
    if tokens <= room:  # (a view that changes only the context leaves the text as it is)
        same = view == views.doc.text[p.start:p.end]
        yield replace(p, context=context, tokens=tokens), None if same else view
        return
    bounds = views.row_bounds(p, table)
    if not bounds or table is None:
        yield p, None
        return
    # a header row stays with the first row under it
    header = views.rows_of(table)[2]
    if header is not None and p.start <= header.end <= bounds[0]:
        bounds = bounds[1:]
        if not bounds:
            yield p, None
            return
    # cut between rows: the longest runs whose view fits, from the first row on
    starts = [p.start, *bounds]
    ends = [*bounds, p.end]
    i = 0
    text = views.doc.text
    rows = views.rows_of(table)
    single = views.view_of(p, table) == "table-row"  # one row per chunk
    context_at = partial(views.context_at, within=table)
    while i < len(starts):
        best = None
        j = i
        while j < len(starts):
            if single and j > i:
                break
            sub = _sub(p, starts[i], ends[j], text, rows, context_at)
            got = views.render(sub, table)
            if got is None:
                break
            if got[0] and views.context_tokens(got[0], count) > room:
                break  # the context alone is over: no run of rows fits under it
            t = views.embed(*got)
            if t > room:
                break
            best = (j, sub, got, t)
            j += 1
        if best is None:  # the piece's own context, which fitted with more rows
            yield _as_text(views, _sub(p, starts[i], ends[i], text, rows, context_at),
                           p.context, count, room)
            i += 1
            continue
        j, sub, (context, view), t = best
        yield replace(sub, context=context, tokens=t), view
        i = j + 1


def _grouped(views: DocumentViews, run: list[Any], table: Any, count: Callable[[str], int],
             room: int) -> Iterable[tuple[Any, str | None]]:
    """The planned chunks `run` (whole rows of `table`, consecutive) packed anew as runs of
    as many whole rows as fit the room with their `table` view (`column: value` lines).

    Each row's view is rendered and counted once; a run's view is its rows' views joined
    (what `render` gives it), and its count is estimated from theirs (the sum less the
    tokens every text adds, e.g. `[CLS]`/`[SEP]`, plus a separator's) and then made exact:
    the longest run from its first row whose embed text, counted whole, fits. Where the
    estimate of a run that fits was exact, the next row's estimate decides (the tokenizers
    here count rows separated by a blank line as the sum of the rows); else the next row
    is tried, counted whole. A row whose view does not fit alone keeps its text, as in
    `_fitting`."""
    text = views.doc.text
    kinds = tuple(dict.fromkeys(k for q in run for k in q.kinds))
    p = replace(run[0], end=run[-1].end, kinds=kinds)
    rows = views.rows_of(table)
    bounds = views.row_bounds(p, table)
    header = rows[2]
    if header is not None and bounds and p.start <= header.end <= bounds[0]:
        bounds = bounds[1:]  # a header row stays with the first row under it
    starts, ends = [p.start, *bounds], [*bounds, p.end]
    labels = views.header_of(table)[0]
    context_at = partial(views.context_at, within=table)
    base = count("")
    shown: list[str | None] = []  # each row's view (None: nothing to show, or not viewed)
    est = []  # its tokens beyond `base`
    for a, b in zip(starts, ends):
        got = views.render(_sub(p, a, b, text, rows), table)
        shown.append(got[1] if got is not None else None)
        est.append(max(0, count(got[1]) - base) if got is not None else 0)
    gap = max(0, count("a\n\nb") - count("a") - count("b") + base)  # a row separator

    def fits(i: int, j: int) -> tuple[Any, tuple[str, str], int] | None:
        sub = _sub(p, starts[i], ends[j], text, rows, context_at)
        if all(v is not None for v in shown[i:j + 1]):  # render's result, from the rows'
            got: tuple[str, str] | None = (views.table_context(sub.context, table, labels),
                                           "\n\n".join(shown[i:j + 1]))  # type: ignore[arg-type]
        else:
            got = views.render(sub, table)
        if got is None or (got[0] and views.context_tokens(got[0], count) > room):
            return None
        t = views.embed(*got)
        return (sub, got, t) if t <= room else None

    i = 0
    while i < len(starts):
        context = views.table_context(_sub(p, starts[i], ends[i], text, rows,
                                           context_at).context, table, labels)
        total = base + (views.context_tokens(context, count) - base + gap if context else 0)
        total += est[i]
        j = i
        while j + 1 < len(starts) and total + gap + est[j + 1] <= room:
            j += 1
            total += gap + est[j]
        best = fits(i, j)
        if best is not None:  # the estimate fits: more rows may, counted whole
            exact = best[2] == total and best[1][0] == context
            while j + 1 < len(starts) and not exact:
                more = fits(i, j + 1)
                if more is None:
                    break
                j, best = j + 1, more
        else:
            while j > i and best is None:
                j -= 1
                best = fits(i, j)
        if best is None:  # the context of the planned chunk it came from
            sub = _sub(p, starts[i], ends[i], text, rows, context_at)
            own = next(q for q in reversed(run) if q.start <= sub.start)
            yield _as_text(views, sub, own.context, count, room)
            i += 1
            continue
        sub, (context, view), t = best
        yield replace(sub, context=context, tokens=t), view
        i = j + 1


def _as_text(views: DocumentViews, sub: Any, fallback: str, count: Callable[[str], int],
             room: int) -> tuple[Any, None]:
    """One row whose view does not fit even alone: it keeps its text, under its own context,
    or under `fallback` (a context that fitted the rows it was planned with) when that is
    over the room."""
    body = views.doc.text[sub.start:sub.end]
    over = sub.context and views.context_tokens(sub.context, count) > room
    t = room + 1 if over else views.embed(sub.context, body)
    if t > room:
        sub = replace(sub, context=fallback)
        t = views.embed(sub.context, body)
    return replace(sub, tokens=t), None


def _sub(p: Any, start: int, end: int, text: str, rows: tuple[list[Any], list[int], Any],
         context_at: Callable[[int, int], str] | None = None) -> Any:
    """The rows of `p` in [start, end), trimmed like the fitter's pieces, with the row
    numbers of those rows (`merge_meta`'s rule: `*_start` the least, `*_end` the greatest)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    from bisect import bisect_left, bisect_right

    kids, starts, _ = rows
    lo = max(0, bisect_right(starts, start) - 1)
    run = [c for c in kids[lo:bisect_left(starts, end)]
           if c.start < end and c.end > start and text[max(c.start, start):min(c.end, end)].strip()]
    meta = dict(p.meta)
    for key in [k for k in meta if k == "row" or k.startswith("row_")]:
        meta.pop(key)
    if run:
        meta.update(merge_meta((), run))
    return replace(p, start=start, end=end, meta=meta,
                   context=context_at(start, end) if context_at else p.context)


#: how the `table-row` view packs a table's rows (`Chunker(table_rows=...)`)
TABLE_ROWS = {"row": "one row per chunk",
              "grouped": "as many whole rows per chunk as fit the budget",
              "auto": "one row per chunk in a table of up to AUTO_ROWS rows, grouped above"}
#: `auto`: the largest table whose rows are embedded one per chunk
AUTO_ROWS = 100


def rows_policy(rows: int) -> str:
    """`auto`'s choice for a table of `rows` rows: `row` or `grouped`."""
    return "row" if rows <= AUTO_ROWS else "grouped"


#: view name -> what it does (the names a parser may declare)
VIEWS = {"code": "identifiers split into words, qualified name first",
         "table": "rows as `column: value` lines, usual values left out"}
#: what `Chunker()` applies: table rows one per chunk as `column: value` lines (issue 22's
#: measurements, docs/evaluation.md: MRR on table questions 0.445 -> 0.671; the `code` view
#: lowered code MRR from 0.836 to 0.788, so it is opt-in), and code chunks inside a documented
#: definition naming it with its first doc line (issue 34, docs/code-retrieval.md: code
#: questions' MRR@10 0.727 -> 0.741 on the tuning and earlier sets, hit@5 unchanged)
DEFAULT_VIEWS = ("table-row", "code-doc")
#: other renderings of a declared view, for measuring (`Chunker(views="code-split")`): the
#: view they stand for, and what they do instead
VARIANTS = {"code-doc": ("code", "text as is; a chunk inside a definition adds its qualified "
                         "name and first doc line to the context"),
            "code-split": ("code", "identifiers split into words, no qualified-name line"),
            "code-name": ("code", "qualified name first, identifiers as they are"),
            "table-row": ("table", "one row per chunk"),
            "table-all": ("table", "every cell, usual values included")}
