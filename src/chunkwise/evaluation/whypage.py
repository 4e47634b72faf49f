"""The page of `eval --explain-html`: the causes of a question set's misses per format, and
every missed question worst first with its verdict, the chunks holding its passage and the
chunks ranked above them. Static HTML: every text from a document or a question is escaped,
and the page has no script (a document's content cannot run anything in it)."""

from __future__ import annotations

from html import escape
from typing import Any, Sequence

from .explain import CAUSES, DEPTH, Miss, cause_table

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;max-width:1300px;color:#222}
table{border-collapse:collapse;margin:8px 0 18px}td,th{border:1px solid #ccc;padding:3px 8px}
th{background:#f3f3f3}td.n{text-align:right}.q{border-top:2px solid #ddd;padding:10px 0}
.v{font-weight:600;padding:1px 6px;border-radius:3px;background:#fde2e2}
.v.found{background:#dff5df}.v.outranked{background:#fff0c2}.v.split{background:#e6e0ff}
.v.context-missing{background:#d9efff}.v.beyond-window{background:#ffe0f0}
pre{white-space:pre-wrap;background:#f8f8f8;padding:6px;margin:4px 0;max-height:9em;overflow:auto}
small{color:#666}
.doc{white-space:pre-wrap;font:12px/1.5 ui-monospace,monospace;border:1px solid #ddd;
padding:6px;max-height:22em;overflow:auto}
.c{border-left:2px solid #555;padding-left:1px}.top{background:#c8f0c8}.near{background:#fff0b0}
.far{background:#eee}.ans{outline:2px solid #d33;background:rgba(255,80,80,.18)}
.win{color:#c00;font-weight:700}.doc,pre{overflow-wrap:anywhere}
ul.above{list-style:none;padding-left:12px}
"""


def page(misses: Sequence[Miss], *, title: str, questions: int) -> str:
    """The whole page, as one string."""
    table = cause_table(misses)
    causes = list(CAUSES)
    head = "".join(f"<th>{escape(c)}</th>" for c in causes)
    rows = "".join(
        f"<tr><td>{escape(fmt)}</td>" + "".join(f"<td class=n>{row[c] or ''}</td>"
                                                 for c in causes)
        + f"<td class=n>{sum(row.values())}</td></tr>" for fmt, row in table.items())
    body = [f"<h1>{escape(title)}</h1>",
            f"<p>{len(misses)} of {questions} questions missed the top "
            f"{misses[0].explanation.k if misses else '-'}; causes per format "
            f"(definitions: <code>chunkwise.evaluation.explain</code>):</p>",
            f"<table><tr><th>format</th>{head}<th>misses</th></tr>{rows}</table>",
            "<dl>" + "".join(f"<dt>{escape(c)}</dt><dd>{escape(d)}</dd>"
                             for c, d in CAUSES.items()) + "</dl>",
            "<h2>Missed questions, worst first</h2>"]
    body += [_question(m) for m in misses]
    return ("<!doctype html><html><head><meta charset=utf-8>"
            "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">"
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
            + "\n".join(body) + "</body></html>")


def _question(m: Miss) -> str:
    e = m.explanation
    loc = e.location
    cls = e.verdict.replace(" ", "-")
    parts = [f"<div class=q id=line-{m.line}><span class='v {cls}'>{escape(e.verdict)}</span> "
             f"<b>{escape(e.question)}</b> <small>line {m.line}, {escape(m.format)}</small>",
             f"<div>{escape(e.reason)}</div>"]
    if loc is not None:
        parts.append(f"<small>passage: {escape(loc.source)} {loc.start}-{loc.end}</small>"
                     f"<pre>{escape(loc.text[:1500])}</pre>")
    if e.excerpt:
        parts.append(_passage_view(e))
    if e.holders:
        cells = "".join(
            f"<tr><td>{h.start}-{h.end}</td><td>{escape(h.section_path)}</td>"
            f"<td class=n>{h.share:.0%}</td>"
            + "".join(f"<td class=n>{_r(h.ranks.get(md))}</td>" for md in e.modes)
            + f"<td class=n>{'' if h.distance is None else f'{h.distance:.3f}'}</td>"
            f"<td>{'fits' if h.window_end is None else f'ends at {h.window_end}'} "
            f"({h.tokens} tok)</td></tr>" for h in e.holders[:8])
        parts.append("<table><tr><th>chunk</th><th>section</th><th>share</th>"
                     + "".join(f"<th>{escape(md)}</th>" for md in e.modes)
                     + f"<th>distance</th><th>window</th></tr>{cells}</table>")
    if e.above:
        items = "".join(f"<li>{a.rank}. {escape(a.source)} {a.start}-{a.end} "
                        f"<i>{escape(a.why)}</i>: {escape(a.preview)}</li>" for a in e.above)
        parts.append(f"<small>ranked above it ({escape(e.mode)}):</small>"
                     f"<ul class=above>{items}</ul>")
    return "".join(parts) + "</div>"


def _r(rank: Any) -> str:
    return str(rank) if rank is not None else f"&gt;{DEPTH}"


def _passage_view(e: Any) -> str:
    """The text the holders cover: each chunk coloured by its rank in the verdict's mode
    (green: top k, yellow: top 20, grey: lower), a bar at each cut, the passage outlined,
    and `▏window` where the model's window ends inside a chunk."""
    base, text = e.excerpt_start, e.excerpt
    end = base + len(text)
    marks: set[int] = {base, end}
    loc = e.location
    same = [h for h in e.holders if loc is not None and h.source == loc.source]
    for h in same:
        marks |= {min(max(h.start, base), end), min(max(h.end, base), end)}
        if h.window_end is not None and base < h.window_end < end:
            marks.add(h.window_end)
    if loc is not None:
        marks |= {min(max(loc.start, base), end), min(max(loc.end, base), end)}
    windows = {h.window_end for h in same if h.window_end is not None}
    out = []
    cuts = sorted(marks)
    for a, b in zip(cuts, cuts[1:]):
        if a in windows:
            out.append("<span class=win title='the embedder window ends here'>▏window</span>")
        h = next((h for h in same if h.start <= a < h.end), None)
        cls = []
        if h is not None:
            r = h.ranks.get(e.mode)
            cls.append("top" if r is not None and r <= e.k else
                       "near" if r is not None and r <= 20 else "far")
            if a == h.start:
                cls.append("c")
        if loc is not None and loc.start <= a < loc.end:
            cls.append("ans")
        title = f" title='chunk {h.start}-{h.end}, {e.mode} rank {_r(h.ranks.get(e.mode))}'" \
            if h is not None else ""
        out.append(f"<span class='{' '.join(cls)}'{title}>{escape(text[a - base:b - base])}"
                   f"</span>")
    return "<div class=doc>" + "".join(out) + "</div>"
