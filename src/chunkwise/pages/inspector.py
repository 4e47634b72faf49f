"""The inspector page: one self-contained HTML file that shows how documents were chunked.

Built from the same `Chunk` objects `chunkwise chunk` prints (`Chunker.chunk_document` over
`Chunker.parse_bytes`), with the parsed document beside them for what chunks do not carry: the
canonical text, the section tree and the page starts. Per document and strategy it draws the
text with each chunk's span coloured (alternating hues; text repeated from the previous chunk,
the overlap, hatched), heading-led section starts and PDF page boundaries as empty marker
elements (so a chunk element's text is exactly the chunk's text), code line numbers in a
gutter beside the unwrapped text, a token histogram and summary figures; for `semantic`, the distance curve between neighbouring
sentence windows with its threshold and breakpoints, per section (`SemanticTrace`).

The text views are rendered here, escaped with `html.escape`; the browser only parses them.
Chunk metadata travels as JSON in a `<script type="application/json">` element with every `<`
written `\\u003c`, so no document text can close the element. The page loads nothing: no
`http://` or `https://` resource, CSS and script inline.
"""

from __future__ import annotations

import html
import json
import logging
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..model import Chunk, ParsedDocument
from ..chunking.structure import build_tree, walk
from ..text.textio import terminal_safe

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class View:
    """One strategy's chunks of one document."""

    label: str
    """What the column is called: the strategy's name."""
    chunks: Sequence[Chunk]
    max_tokens: int
    """The budget the chunks were sized to."""
    trace: Any = None
    """`semantic` only: the `chunkwise.chunking.strategies.semantic.SemanticTrace` of the document."""
    over_window: int | None = None
    """Chunks whose embed text exceeds the embedding model's window (None: not counted)."""


@dataclass(frozen=True, slots=True)
class DocumentReport:
    """A parsed document and its chunkings, one `View` per strategy."""

    doc: ParsedDocument
    views: Sequence[View]
    failures: Sequence[str] = field(default_factory=tuple)
    """Strategies that failed on this document, as `label: reason` lines."""


def count_over_window(chunks: Sequence[Chunk], count: Any, window: int) -> int:
    """How many chunks' embed texts are longer than `window` tokens of `count` (the
    embedding model's tokenizer): text past its window is never embedded."""
    return sum(1 for c in chunks if count(c.embed_text) > window)


class Inspector:
    """Chunks documents with one or more strategies, for `render`.

    Args:
        strategies: strategy names or `StrategySpec`s (a spec's keywords go to its Chunker);
            `keywords` are added to each strategy that takes them.
        max_tokens, tokenizer, overlap, views, table_rows: as `Chunker`'s, the same for every
            strategy.
        keywords: further Chunker keyword arguments (`semantic_threshold`, `llm`, ...): each
            goes to the strategies it applies to (strategy options to their own strategy).
    """

    def __init__(self, strategies: Sequence[Any] = ("structure",), *, max_tokens: int = 256,
                 tokenizer: str = "minilm", overlap: int = 0, views: str = "default",
                 table_rows: str = "row", **keywords: Any) -> None:
        from ..chunking.api import Chunker
        from ..chunking.strategies import REGISTRY, StrategySpec, registered

        own = {k for row in REGISTRY.values() for k in row.keywords}
        self.lenses: list[tuple[str, Any, Any]] = []  # (label, chunker, semantic tracer)
        for spec in strategies:
            name = spec.name if isinstance(spec, StrategySpec) else str(spec)
            row = registered(name)
            given = {**keywords, **(spec.keywords if isinstance(spec, StrategySpec) else {})}
            mine = {k: v for k, v in given.items() if k in row.keywords or k not in own}
            chunker = Chunker(max_tokens=max_tokens, tokenizer=tokenizer, overlap=overlap,
                              strategy=StrategySpec(name, mine), views=views,
                              table_rows=table_rows)
            tracer = None
            if name == "semantic":
                from ..chunking.strategies import Setup

                options = row.options(**{row.keywords[k]: v for k, v in mine.items()
                                         if k in row.keywords})
                tracer = row.factory(Setup(chunker.sizer, tokenizer, overlap), options)
            self.lenses.append((name, chunker, tracer))
        self.max_tokens = max_tokens
        from ..embeddings.minilm import MAX_TOKENS
        from ..sizing.sizers import get_sizer

        #: the default embedding model's window, and its tokenizer
        self.window = MAX_TOKENS
        self._window_count = get_sizer("minilm").count

    def report(self, data: bytes, *, source: str, format: str | None = None) -> DocumentReport:
        """Parse once, chunk with every strategy (`ParseError` if the document cannot be
        parsed; a strategy that fails is listed in `failures`)."""
        from ..errors import ChunkwiseError

        doc = self.lenses[0][1].parse_bytes(data, source=source, format=format)
        views, failures = [], []
        for label, chunker, tracer in self.lenses:
            try:
                chunks = chunker.chunk_document(doc)
                trace = tracer.trace(doc) if tracer is not None and doc.text.strip() else None
            except ChunkwiseError as e:
                failures.append(f"{label}: {e}")
                continue
            over = count_over_window(chunks, self._window_count, self.window)
            views.append(View(label, chunks, self.max_tokens, trace, over))
        return DocumentReport(doc, views, tuple(failures))


# -- the terminal view ---------------------------------------------------------------------
#: background colours of alternating chunks, and of text repeated from the previous chunk
_ANSI = ("\x1b[30;48;5;223m", "\x1b[30;48;5;152m")
_ANSI_OVERLAP = "\x1b[30;4;48;5;250m"
_ANSI_RESET = "\x1b[0m"


def terminal_view(text: str, chunks: Sequence[Chunk]) -> str:
    """The canonical text with chunks in alternating background colours (overlap underlined
    grey), like a diff; text outside every chunk plain. Control characters are shown as
    `\\xNN` escapes, so a document cannot send escape sequences to the terminal."""

    def safe(a: int, b: int, colour: str) -> str:
        part = terminal_safe(text[a:b], lines=True)
        if not colour:
            return part
        # colour each line alone: a background running past a newline fills the line's end
        return "\n".join(f"{colour}{line}{_ANSI_RESET}" if line else ""
                         for line in part.split("\n"))

    out, at = [], 0
    for i, c in enumerate(chunks):
        if c.start > at:
            out.append(safe(at, c.start, ""))
        overlap = min(max(at, c.start), c.end)
        if overlap > c.start:
            out.append(safe(c.start, overlap, _ANSI_OVERLAP))
        out.append(safe(overlap, c.end, _ANSI[i % 2]))
        at = max(at, c.end)
    if at < len(text):
        out.append(safe(at, len(text), ""))
    return "".join(out)


# -- rendering -----------------------------------------------------------------------------
#: alternating chunk hues (class c0..c5)
HUES = 6
#: at most this many entries in a document's section tree, and semantic plots per document
MAX_TREE = 3000
MAX_PLOTS = 60
#: bars of a token histogram
BINS = 16


def render(reports: Sequence[DocumentReport], *, title: str = "chunkwise inspect",
           window: int | None = None, errors: Sequence[str] = ()) -> str:
    """The whole page for some documents (`errors`: files that could not be read, listed)."""
    parts: list[str] = []
    payload: list[dict[str, Any]] = []
    for d, report in enumerate(reports):
        parts.append(_document(d, report, window, payload))
    # each name whole in its title: a name longer than the header's row ends in an ellipsis
    nav = "".join(f'<a href="#doc{d}" title="{escape(r.doc.source)}">{escape(r.doc.source)}</a>'
                  for d, r in enumerate(reports))
    errs = "".join(f"<li>{escape(e)}</li>" for e in errors)
    body = (f'<header><h1>{escape(title)}</h1><nav>{nav}</nav>'
            + (f'<ul class="errors">{errs}</ul>' if errs else "") + "</header>"
            + '<main>' + "".join(parts) + '</main>'
            + '<aside id="panel"><p class="hint">Hover or click a chunk to see its metadata.</p>'
              '</aside>')
    return page(title, _CSS, body, json_script("chunk-data", payload), _JS)


def _document(d: int, report: DocumentReport, window: int | None,
              payload: list[dict[str, Any]]) -> str:
    doc = report.doc
    tree, marks = _section_tree(doc)
    tree_html = "".join(
        f'<li style="--depth:{depth}"><a href="#" data-sec="{k}" title="{escape(label)}">'
        f'{escape(label)}</a></li>'
        for k, (_, depth, label) in enumerate(tree))
    columns = []
    for v, view in enumerate(report.views):
        chunks = [_chunk_data(c) for c in view.chunks]
        payload.append({"doc": d, "view": v, "label": view.label, "max_tokens": view.max_tokens,
                        "chunks": chunks})
        columns.append(_column(d, v, doc, view, marks, window))
    fails = "".join(f"<li>{escape(f)}</li>" for f in report.failures)
    cols = len(report.views) or 1
    return (f'<section class="doc" id="doc{d}" data-format="{escape(doc.format)}">'
            f'<h2>{escape(doc.source)} <small>{escape(doc.format)} · {len(doc.text):,} characters'
            f'{f" · {len(doc.page_starts)} pages" if doc.page_starts else ""}</small></h2>'
            + (f'<ul class="errors">{fails}</ul>' if fails else "")
            + f'<div class="body"><nav class="tree"><h3>Sections</h3><ul>{tree_html}</ul></nav>'
            f'<div class="columns" style="--cols:{cols}">{"".join(columns)}</div></div></section>')


def _section_tree(doc: ParsedDocument) -> tuple[list[tuple[int, int, str]], dict[int, int]]:
    """The heading-led sections, as (start, depth, label), and start -> tree index."""
    out: list[tuple[int, int, str]] = []
    seen: set[tuple[str, ...]] = set()
    for node, depth in walk(build_tree(doc)):
        if depth == 0 or not node.path or node.path in seen:
            continue
        seen.add(node.path)
        out.append((node.start, len(node.path), node.path[-1]))
        if len(out) >= MAX_TREE:
            break
    marks: dict[int, int] = {}
    for k, (start, _, _) in enumerate(out):
        marks.setdefault(start, k)
    return out, marks


def _chunk_data(c: Chunk) -> dict[str, Any]:
    return {"id": c.id, "start": c.start, "end": c.end, "tokens": c.tokens,
            "context": c.context, "section_path": list(c.section_path),
            "page_start": c.page_start, "page_end": c.page_end, "kinds": list(c.kinds),
            "meta": {k: v for k, v in c.meta.items() if isinstance(v, (str, int, float, bool))}}


def _column(d: int, v: int, doc: ParsedDocument, view: View, marks: dict[int, int],
            window: int | None) -> str:
    tokens = [c.tokens for c in view.chunks]
    n = len(tokens)
    used = sum(tokens) / (n * view.max_tokens) if n else 0.0
    over = "–" if view.over_window is None else f"{view.over_window}"
    figures = (f'<dl class="figures"><dt>chunks</dt><dd class="count">{n}</dd>'
               f'<dt>tokens</dt><dd>min {min(tokens, default=0)} · median '
               f'{sorted(tokens)[n // 2] if n else 0} · max {max(tokens, default=0)}</dd>'
               f'<dt>budget used</dt><dd>{used:.0%} of {view.max_tokens}</dd>'
               f'<dt>over the model window{f" ({window})" if window else ""}</dt>'
               f'<dd class="{"bad" if view.over_window else ""}">{over}</dd></dl>')
    plots = _semantic_plots(doc, view) if view.trace is not None else ""
    text = _text_view(d, v, doc, view.chunks, marks)
    if is_code(doc):  # one gutter of line numbers beside unwrapped text: one text node,
        # not an element per line (30,000 of those made a 1 MB file take 5 s to draw)
        lines = doc.text.count("\n") + (not doc.text.endswith("\n"))
        gutter = "\n".join(map(str, range(1, lines + 1)))
        body = (f'<div class="text code" data-doc="{d}" data-view="{v}"><pre class="gutter" '
                f'aria-hidden="true">{gutter}</pre><div class="src">{text}</div></div>')
    else:
        body = f'<div class="text" data-doc="{d}" data-view="{v}">{text}</div>'
    return (f'<div class="column" data-view="{v}"><h3>{escape(view.label)}</h3>{figures}'
            f'{histogram(tokens, view.max_tokens)}{plots}{body}</div>')


def is_code(doc: ParsedDocument) -> bool:
    """Whether the page numbers the document's lines: text line for line, not prose or a
    table (Markdown, plain text and CSV have lines too, but no one reads them by number)."""
    return doc.line_numbers and doc.format not in ("markdown", "text", "csv")


def _text_view(d: int, v: int, doc: ParsedDocument, chunks: Sequence[Chunk],
               marks: dict[int, int]) -> str:
    """The canonical text with one element per chunk whose text is the chunk's text. Markers
    (section starts, page starts) are empty elements drawn by CSS; code's line numbers are a
    gutter beside the text (see `_column`)."""
    text = doc.text
    points: dict[int, list[str]] = {}
    for start, k in marks.items():
        points.setdefault(start, []).append(f'<i class="sb" data-sec-mark="{k}"></i>')
    for p, start in enumerate(doc.page_starts or (), 1):
        if p > 1:
            points.setdefault(start, []).append(f'<i class="pb" data-page="{p}"></i>')
    stops = sorted(points)

    def piece(a: int, b: int) -> str:
        """text[a:b] escaped, with the markers that fall inside it."""
        out, i = [], bisect_left(stops, a)
        while i < len(stops) and stops[i] < b:
            s = stops[i]
            out.append(html.escape(text[a:s], quote=False))
            out.extend(points[s])
            a, i = s, i + 1
        out.append(html.escape(text[a:b], quote=False))
        return "".join(out)

    out: list[str] = []
    at = 0  # end of what is drawn so far
    for i, c in enumerate(chunks):
        if c.start > at:
            out.append(piece(at, c.start))
        overlap = min(max(at, c.start), c.end)
        inner = (f'<span class="ov">{piece(c.start, overlap)}</span>' if overlap > c.start else "")
        out.append(f'<span class="chunk c{i % HUES}" data-chunk-id="{c.id}" data-i="{i}">'
                   f'{inner}{piece(overlap, c.end)}</span>')
        at = max(at, c.end)
    if at < len(text):
        out.append(piece(at, len(text)))
    return "".join(out)


def histogram(values: Sequence[int], top: int, *, width: int = 260, height: int = 60) -> str:
    """An SVG histogram of token counts in `BINS` bars over 0..top, and a red bar for the
    counts over `top` (there should be none)."""
    if not values:
        return ""
    step = max(1, -(-top // BINS))
    counts = [0] * (top // step + 1)
    over = 0
    for t in values:
        if t > top:
            over += 1
        else:
            counts[t // step] += 1
    bins = [(f"{k * step}–{min(k * step + step - 1, top)} tokens", n, "bar")
            for k, n in enumerate(counts)] + ([(f"over {top} tokens", over, "over")] if over else [])
    most = max(n for _, n, _ in bins)
    bw = width / len(bins)
    bars = "".join(
        f'<rect x="{k * bw:.1f}" y="{height - 14 - h:.1f}" width="{max(bw - 1, 1):.1f}" '
        f'height="{h:.1f}" class="{cls}"><title>{label}: {n}</title></rect>'
        for k, (label, n, cls) in enumerate(bins) if n for h in [(height - 16) * n / most])
    return (f'<svg class="hist" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            f'role="img" aria-label="token histogram">{bars}'
            f'<line x1="0" x2="{width}" y1="{height - 14}" y2="{height - 14}" class="axis"/>'
            f'<text x="0" y="{height - 2}">0</text>'
            f'<text x="{width}" y="{height - 2}" text-anchor="end">{top} tokens</text></svg>')


def _semantic_plots(doc: ParsedDocument, view: View) -> str:
    trace = view.trace
    n = len(trace.scores)
    if n == 0:
        return '<p class="note">semantic: no sentence boundaries in prose</p>'
    cuts = {c.start for c in view.chunks}
    starts = [s for s, _ in trace.sentences]
    made = [k for k in range(n) if _trimmed_start(doc.text, starts[k + 1]) in cuts
            or starts[k + 1] in cuts]
    label = "rise of distance" if trace.method == "gradient" else "distance"
    head = (f'<p class="note">semantic: {len(trace.sentences)} sentences, {n} boundaries, '
            f'threshold {trace.method} {trace.amount:g} = {trace.threshold:.4f}, '
            f'{int(trace.breaks.sum())} breakpoints, {len(made)} boundaries cut</p>')
    plots = [distance_plot(trace.scores, trace.threshold, trace.breaks, set(made),
                           title=f"whole document ({label})", first=0)]
    groups: list[tuple[tuple[str, ...], int, int]] = []  # (path, first boundary, end)
    for path, a, b in trace.leaves:
        lo, hi = max(a - 1, 0), min(b - 1, n)
        if hi <= lo:
            continue
        if groups and groups[-1][0] == path and groups[-1][2] == lo:
            groups[-1] = (path, groups[-1][1], hi)
        else:
            groups.append((path, lo, hi))
    shown = [g for g in groups if g[2] - g[1] >= 2][:MAX_PLOTS]
    for path, lo, hi in shown:
        plots.append(distance_plot(trace.scores[lo:hi], trace.threshold, trace.breaks[lo:hi],
                                   {k - lo for k in made if lo <= k < hi},
                                   title=" > ".join(path) or "(no heading)", first=lo))
    more = len([g for g in groups if g[2] - g[1] >= 2]) - len(shown)
    tail = f'<p class="note">{more} more sections not plotted</p>' if more > 0 else ""
    return (f'<details class="semantic" open><summary>semantic distance curve</summary>{head}'
            + "".join(plots) + tail + "</details>")


def _trimmed_start(text: str, s: int) -> int:
    while s < len(text) and text[s].isspace():
        s += 1
    return s


def distance_plot(scores: Iterable[float], threshold: float, breaks: Iterable[bool],
                  cuts: set[int], *, title: str, first: int = 0, width: int = 260,
                  height: int = 80) -> str:
    """An SVG line of the distance at each boundary, the threshold as a dashed line, the
    breakpoints as dots and the boundaries where a chunk starts as vertical ticks."""
    ys = [float(s) for s in scores]
    marks = list(breaks)
    n = len(ys)
    lo = min(0.0, min(ys))
    hi = max(max(ys), threshold if threshold == threshold else 0.0, 1e-6)
    span = hi - lo or 1.0

    def x(k: int) -> float:
        return 4 + (width - 8) * (k / (n - 1) if n > 1 else 0.5)

    def y(v: float) -> float:
        return 4 + (height - 8) * (1 - (v - lo) / span)

    line = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in enumerate(ys))
    ticks = "".join(f'<line class="cut" x1="{x(k):.1f}" x2="{x(k):.1f}" y1="0" y2="{height}"/>'
                    for k in sorted(cuts))
    dots = "".join(f'<circle class="bp" cx="{x(k):.1f}" cy="{y(v):.1f}" r="2.5">'
                   f'<title>boundary {first + k}: {v:.4f}</title></circle>'
                   for k, (v, b) in enumerate(zip(ys, marks)) if b)
    thr = (f'<line class="thr" x1="0" x2="{width}" y1="{y(threshold):.1f}" '
           f'y2="{y(threshold):.1f}"/>' if threshold == threshold else "")
    return (f'<figure class="plot"><figcaption>{escape(title)}</figcaption>'
            f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="distance curve">{ticks}<polyline class="dist" points="{line}"/>{thr}'
            f'{dots}</svg></figure>')


# -- page assembly -------------------------------------------------------------------------
def escape(s: object) -> str:
    return html.escape(str(s), quote=True)


def json_script(element_id: str, data: Any) -> str:
    """JSON in a script element no text can break out of: `<`, `>` and `&` as escapes."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    raw = raw.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return f'<script type="application/json" id="{element_id}">{raw}</script>'


def page(title: str, css: str, body: str, data: str, js: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{escape(title)}</title><style>{css}</style></head><body>{body}{data}"
            f"<script>{js}</script></body></html>\n")


_CSS = """
:root{--bg:#fff;--fg:#1d1d1f;--muted:#6b6b70;--line:#ddd}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
/* --head: the sticky header's height, kept by the script (the fallback fits a full header):
   a jump to a document or a section stops below the header, not under it */
html{scroll-padding-top:calc(var(--head,8.5em) + 4px)}
/* the header ends where the side panel starts; the file list wraps, three rows at most, and
   scrolls: every name stays in the window, a name longer than a row ends in an ellipsis */
header{padding:8px 16px;border-bottom:1px solid var(--line);position:sticky;top:0;background:#fafafa;z-index:2;margin-right:320px}
header h1{font-size:16px;margin:0 0 4px}
header nav{display:flex;flex-wrap:wrap;gap:0 12px;font-size:12px;line-height:18px;max-height:54px;overflow-y:auto}
header nav a{max-width:100%;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.errors{color:#a00;font-size:12px;overflow-wrap:anywhere}
header .errors{max-height:4.5em;overflow-y:auto;margin:4px 0 0}
main{margin-right:330px;padding:0 16px 40px}
/* documents out of view are not laid out: the whole corpus (141 files, 29 MB) draws in 1.3 s, not 32 s */
.doc{content-visibility:auto;contain-intrinsic-size:auto 900px}
.doc h2{font-size:15px;margin:18px 0 8px;overflow-wrap:anywhere}
.doc h2 small{color:var(--muted);font-weight:normal}
.body{display:flex;gap:12px;align-items:flex-start}
.tree{flex:0 0 190px;max-height:calc(100vh - var(--head,8.5em) - 16px);overflow:auto;font-size:12px;position:sticky;top:calc(var(--head,8.5em) + 8px)}
.tree h3{font-size:12px;margin:0 0 4px;color:var(--muted)}
.tree ul{list-style:none;margin:0;padding:0}
.tree li{padding-left:calc((var(--depth) - 1) * 10px);white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.columns{flex:1;display:grid;grid-template-columns:repeat(var(--cols),minmax(0,1fr));gap:12px;min-width:0}
.column h3{margin:0;font-size:14px}
.figures{display:grid;grid-template-columns:auto 1fr;gap:0 8px;font-size:12px;margin:4px 0}
.figures dt{color:var(--muted)}.figures dd{margin:0}.figures .bad{color:#c00;font-weight:bold}
svg text{font-size:9px;fill:var(--muted)}
.hist .bar{fill:#6a8fd8}.hist .over{fill:#d33}.hist .axis{stroke:#999}
.plot{margin:4px 0}.plot figcaption{font-size:11px;color:var(--muted);white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.plot .dist{fill:none;stroke:#333;stroke-width:1}.plot .thr{stroke:#d33;stroke-dasharray:4 3}
.plot .bp{fill:#d33}.plot .cut{stroke:#3a3;stroke-opacity:.6}
.semantic{max-height:250px;overflow:auto;border:1px solid var(--line);padding:2px 4px;margin:4px 0}.semantic summary{font-size:12px;cursor:pointer}.note{font-size:12px;color:var(--muted);margin:2px 0}
.text{white-space:pre-wrap;word-wrap:break-word;font:12.5px/1.5 ui-monospace,Menlo,Consolas,monospace;border:1px solid var(--line);padding:6px;max-height:80vh;overflow:auto}
.chunk{cursor:pointer;border-radius:2px}
.chunk:hover{outline:1px solid #555}.chunk.sel{outline:2px solid #000}
.c0{background:#fde2c4}.c1{background:#c9e7f7}.c2{background:#d8f0c8}.c3{background:#f3d2ee}.c4{background:#fff3b0}.c5{background:#d9d6f7}
.ov{background-image:repeating-linear-gradient(45deg,rgba(0,0,0,.16) 0 3px,transparent 3px 7px)}
.sb::before{content:"§";color:#b50;font-weight:bold;font-style:normal;margin-right:2px}
.sb.hit::before{background:#fd0}
.pb{display:block;border-top:2px dashed #b50;margin:6px 0 2px}
.pb::before{content:"page " attr(data-page);font:11px system-ui;color:#b50;font-style:normal}
/* a grid, not a flex row: flex measures the 1 MB text's intrinsic width (1.9 s -> 0.8 s) */
.text.code{display:grid;grid-template-columns:max-content minmax(0,1fr);white-space:pre;overflow:auto}
.gutter{margin:0 .8em 0 0;font:inherit;color:#999;text-align:right;user-select:none}
.code .sb::before{content:"";border-left:2px solid #b50;margin-left:-2px}
#panel{position:fixed;z-index:3;right:0;top:0;bottom:0;width:320px;overflow:auto;border-left:1px solid var(--line);background:#fafafa;padding:12px;font-size:12px}
#panel h4{margin:0 0 6px;font-size:13px;word-break:break-all}
#panel dl{display:grid;grid-template-columns:auto 1fr;gap:2px 8px}#panel dt{color:var(--muted)}#panel dd{margin:0;word-break:break-word}
#panel pre{white-space:pre-wrap;background:#fff;border:1px solid var(--line);padding:4px;max-height:30vh;overflow:auto}
.bar-out{height:8px;background:#e4e4e4;border-radius:4px}.bar-in{height:8px;background:#6a8fd8;border-radius:4px}
.hint{color:var(--muted)}
"""

_JS = r"""
(function(){
"use strict";
var head=document.querySelector("body>header");
function headHeight(){document.documentElement.style.setProperty("--head",head.offsetHeight+"px");}
headHeight();
if(window.ResizeObserver)new ResizeObserver(headHeight).observe(head);
var data=JSON.parse(document.getElementById("chunk-data").textContent);
var views={};
data.forEach(function(v){views[v.doc+":"+v.view]=v;});
var panel=document.getElementById("panel");
var selected=null;
function el(tag,text,cls){var e=document.createElement(tag);if(text!==undefined)e.textContent=text;if(cls)e.className=cls;return e;}
function row(dl,k,v){dl.appendChild(el("dt",k));dl.appendChild(el("dd",v));}
function show(span){
  var box=span.closest(".text");
  var view=views[box.dataset.doc+":"+box.dataset.view];
  var c=view.chunks[+span.dataset.i];
  panel.textContent="";
  panel.appendChild(el("h4","chunk "+(+span.dataset.i+1)+" of "+view.chunks.length+" · "+view.label));
  var dl=el("dl");
  row(dl,"id",c.id);
  row(dl,"tokens",c.tokens+" / "+view.max_tokens);
  var bar=el("dd"),out=el("div",undefined,"bar-out"),inn=el("div",undefined,"bar-in");
  inn.style.width=Math.min(100,100*c.tokens/view.max_tokens)+"%";out.appendChild(inn);bar.appendChild(out);
  dl.appendChild(el("dt",""));dl.appendChild(bar);
  row(dl,"span","["+c.start+":"+c.end+"]");
  row(dl,"section_path",c.section_path.join(" > ")||"–");
  row(dl,"pages",c.page_start===null?"–":(c.page_start===c.page_end?String(c.page_start):c.page_start+"–"+c.page_end));
  row(dl,"kinds",c.kinds.join(", ")||"–");
  var m=c.meta;
  if(m.line_start!==undefined)row(dl,"lines",m.line_start+"–"+m.line_end);
  if(m.row_start!==undefined)row(dl,"rows",m.row_start+"–"+m.row_end);
  Object.keys(m).forEach(function(k){if(["line_start","line_end","row_start","row_end"].indexOf(k)<0)row(dl,k,String(m[k]));});
  panel.appendChild(dl);
  panel.appendChild(el("div","context (embedded before the text)","hint"));
  panel.appendChild(el("pre",c.context||"(none)","context"));
}
document.addEventListener("mouseover",function(ev){
  if(selected)return;
  var s=ev.target.closest&&ev.target.closest(".chunk");if(s)show(s);
});
document.addEventListener("click",function(ev){
  var a=ev.target.closest&&ev.target.closest("a[data-sec]");
  if(a){
    ev.preventDefault();
    var doc=a.closest(".doc");
    doc.querySelectorAll(".sb.hit").forEach(function(m){m.classList.remove("hit");});
    doc.querySelectorAll('[data-sec-mark="'+a.dataset.sec+'"]').forEach(function(m){
      m.classList.add("hit");
      var box=m.closest(".text");box.scrollTop+=m.getBoundingClientRect().top-box.getBoundingClientRect().top-8;
    });
    doc.scrollIntoView({block:"start"});
    return;
  }
  var s=ev.target.closest&&ev.target.closest(".chunk");
  if(!s)return;
  if(selected)selected.classList.remove("sel");
  selected=s;s.classList.add("sel");show(s);
});
})();
"""
