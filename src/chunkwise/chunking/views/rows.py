"""Table chunks re-cut into runs of whole rows whose views fit the room.

The fitter packs a table's rows by the size of their text; a row's `column: value` view is
the size of its rendering. A planned chunk of rows whose view does not fit is cut here,
between rows, into the longest runs that do (`fitting`); with the table-rows policy grouping
rows (`grouped`, or `auto` for a large table), consecutive planned chunks of one table are
packed anew (`grouped`). A row whose view does not fit even alone keeps its text.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import replace
from functools import partial
from typing import Callable, Iterable

from ..structure import Node
from ..work import Piece, merge_meta
from .base import DocumentViews

__all__ = ["grouping", "fitting", "grouped"]

_Rows = tuple[list[Node], list[int], "Node | None"]


def grouping(views: DocumentViews, piece: Piece) -> Node | None:
    """The table whose rows the chunk holds, when its rows are grouped by the table-rows
    policy (`grouped`, or `auto` for a large table) and it holds whole rows; else None."""
    name = views.view_name(piece.kinds)
    if views.table_rows == "row" or name is None or not views.registry[name].grouped_as:
        return None
    table = views.tables.table_of(piece)
    if table is None or views.view_of(piece, table) != views.registry[name].grouped_as \
            or not views.tables.whole_rows(table, piece):
        return None
    return table


def fitting(views: DocumentViews, p: Piece, count: Callable[[str], int],
            room: int) -> Iterable[tuple[Piece, str | None]]:
    """The planned chunk `p` with its view, or, when that does not fit, cut between rows
    into the longest runs whose view fits (one row a run when the view takes one row)."""
    name = views.view_name(p.kinds)
    table = views.tables.table_of(p) if name is not None and views.registry[name].rows \
        else None
    view = views.view(p, table)
    single = view is not None and bool(view.grouped_as)  # one row per chunk
    got = view.render(p, views.doc, views, table) if view is not None else None
    if got is None and not single:
        yield p, None
        return
    context, body = got if got is not None else ("", "")
    tokens = views.embed(context, body) if got is not None else room + 1
    if tokens <= room:  # (a view that changes only the context leaves the text as it is)
        same = body == views.doc.text[p.start:p.end]
        yield replace(p, context=context, tokens=tokens), None if same else body
        return
    bounds = views.tables.row_bounds(p, table)
    if not bounds or table is None:
        yield p, None
        return
    rows = views.tables.rows_of(table)
    if rows[2] is not None and p.start <= rows[2].end <= bounds[0]:
        bounds = bounds[1:]  # a header row stays with the first row under it
        if not bounds:
            yield p, None
            return
    yield from _runs(views, p, table, rows, bounds, single, count, room)


def _runs(views: DocumentViews, p: Piece, table: Node, rows: _Rows, bounds: list[int],
          single: bool, count: Callable[[str], int],
          room: int) -> Iterable[tuple[Piece, str | None]]:
    """`p` cut at `bounds` (row starts): the longest runs whose view fits, from the first
    row on."""
    starts = [p.start, *bounds]
    ends = [*bounds, p.end]
    i = 0
    text = views.doc.text
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
        j, sub, (context, body), t = best
        yield replace(sub, context=context, tokens=t), body
        i = j + 1


def grouped(views: DocumentViews, run: list[Piece], table: Node, count: Callable[[str], int],
            room: int) -> Iterable[tuple[Piece, str | None]]:
    """The planned chunks `run` (whole rows of `table`, consecutive) packed anew as runs of
    as many whole rows as fit the room with their `table` view (`column: value` lines).

    Each row's view is rendered and counted once; a run's view is its rows' views joined
    (what `render` gives it), and its count is estimated from theirs (the sum less the
    tokens every text adds, e.g. `[CLS]`/`[SEP]`, plus a separator's) and then made exact:
    the longest run from its first row whose embed text, counted whole, fits. Where the
    estimate of a run that fits was exact, the next row's estimate decides (the tokenizers
    here count rows separated by a blank line as the sum of the rows); else the next row
    is tried, counted whole. A row whose view does not fit alone keeps its text, as in
    `fitting`."""
    text = views.doc.text
    kinds = tuple(dict.fromkeys(k for q in run for k in q.kinds))
    p = replace(run[0], end=run[-1].end, kinds=kinds)
    rows = views.tables.rows_of(table)
    bounds = views.tables.row_bounds(p, table)
    header = rows[2]
    if header is not None and bounds and p.start <= header.end <= bounds[0]:
        bounds = bounds[1:]  # a header row stays with the first row under it
    starts, ends = [p.start, *bounds], [*bounds, p.end]
    context_at = partial(views.context_at, within=table)
    base = count("")
    shown: list[str | None] = []  # each row's view (None: nothing to show, or not viewed)
    est = []  # its tokens beyond `base`
    for a, b in zip(starts, ends):
        got = views.render(_sub(p, a, b, text, rows), table)
        shown.append(got[1] if got is not None else None)
        est.append(max(0, count(got[1]) - base) if got is not None else 0)
    gap = max(0, count("a\n\nb") - count("a") - count("b") + base)  # a row separator

    def fits(i: int, j: int) -> tuple[Piece, tuple[str, str], int] | None:
        sub = _sub(p, starts[i], ends[j], text, rows, context_at)
        parts = [v for v in shown[i:j + 1] if v is not None]
        if len(parts) == j + 1 - i:  # render's result, from the rows'
            got: tuple[str, str] | None = (views.tables.context(sub.context, table),
                                           "\n\n".join(parts))
        else:
            got = views.render(sub, table)
        if got is None or (got[0] and views.context_tokens(got[0], count) > room):
            return None
        t = views.embed(*got)
        return (sub, got, t) if t <= room else None

    i = 0
    while i < len(starts):
        context = views.tables.context(_sub(p, starts[i], ends[i], text, rows,
                                            context_at).context, table)
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
        sub, (context, body), t = best
        yield replace(sub, context=context, tokens=t), body
        i = j + 1


def _as_text(views: DocumentViews, sub: Piece, fallback: str, count: Callable[[str], int],
             room: int) -> tuple[Piece, None]:
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


def _sub(p: Piece, start: int, end: int, text: str, rows: _Rows,
         context_at: Callable[[int, int], str] | None = None) -> Piece:
    """The rows of `p` in [start, end), trimmed like the fitter's pieces, with the row
    numbers of those rows (`merge_meta`'s rule: `*_start` the least, `*_end` the greatest)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
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
