"""PDF: page texts from pypdf, running headers and footers removed, headings from the outline
or from font sizes, paragraphs from the line geometry.

One extraction pass per page: `extract_text(visitor_text=...)` returns pypdf's own text and
reports every fragment with its font and position, so text and layout come from the same
pass. The fragments, concatenated, are exactly the returned text (checked per page; when they
differ the page keeps the text without layout). From the fragments each line gets a font
size, a bold flag and a position, which give:

- running headers/footers: lines repeated within the first/last lines of at least half the
  pages (digits ignored, so page numbers do not matter; odd and even pages also counted apart
  for alternating running heads; a variant sharing most of a running line also goes), plus
  bare page numbers ("12", "Page 3 of 9", "- 4 -", "xii") at the page edges;
- headings: the PDF outline when it has two entries or more, each title located in its
  destination page (whole, or without its number and with the number line just above it),
  else the heading starts that page; without an outline, lines noticeably bigger than the
  body font (the most common size) or short bold lines, with depth by size and then by
  section number ("3" above "3.1");
- paragraphs: a blank line where the vertical gap is larger than the page's usual line
  spacing, where a line is indented against its neighbours, the font size changes, or a
  bullet starts; a short bold label stays with the text it introduces.

Canonical text: page texts joined by `\n\n`; in a page, paragraphs are separated by a blank
line, a heading from its text by one newline; hyphenated line breaks between lower-case
letters are joined, ligatures (ﬁ, ﬂ, …) expanded, control characters dropped and trailing
spaces removed. Title: metadata /Title when meaningful, else the biggest line of the first
page, else the first heading, else the file name. Sections: heading sections nested by depth
(one runs to the next heading of the same or a higher level, across pages) and paragraphs;
no `page` sections: a page boundary is an accident of layout (paragraphs run on), and as
sections pages would stop the fitter from joining the tail of one page with the head of the
next (page_start/page_end are exact without them). Damaged files are read by pypdf in
non-strict mode; what it cannot read is a `ParseError`, a page it cannot extract a warning.
A page over `MAX_PAGE_CONTENT` bytes of content, or over `PAGE_SECONDS` of extraction, is
left out with the same warning (see there).
"""

from __future__ import annotations

import io
import logging
import re
import signal
import statistics
import threading
import unicodedata
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import Any, Iterator

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section

from . import ocr as pdf_ocr, tables as pdf_tables

logger = logging.getLogger(__name__)

#: A page whose content streams hold more than this many bytes (decoded) is left out, with a
#: warning naming it, before pypdf extracts it. pypdf's extraction time grows with the
#: square of a page's text (it appends every fragment to the page's text so far, copying it:
#: `output += ...` in `_flush_text` and `crlf_space_check`): a 1.2 MB stream of text
#: operators takes about 1 s, 4.8 MB 9 s, 10.7 MB 53 s. Pages of the corpus hold 0.5 MB at
#: most; a drawing with more (a map, a plan) loses its few words, with the warning.
MAX_PAGE_CONTENT = 4 << 20
#: CPU seconds one page's extraction may take; a page over it is left out with the same
#: warning (a short content stream can still be slow: a form XObject drawn many times).
#: CPU time, not wall-clock time, so that a loaded machine drops no more pages than a quiet
#: one. Enforced only in the main thread on Unix (a signal timer, see `_cpu_deadline`);
#: elsewhere `MAX_PAGE_CONTENT` alone holds.
PAGE_SECONDS = 10.0
#: Decoded content-stream bytes extracted from one file at most (the corpus's largest PDF
#: holds 3 MB; a 2,000-page book about 40 MB). Pages sharing one content stream with the
#: same resources are extracted once and spend it once; past the bound, pages still to be
#: extracted are left out with one warning (300 pages drawing one 20,000-operator stream
#: took 4 minutes, each page under the per-page bounds).
MAX_FILE_CONTENT = 64 << 20

_LEVEL_HEADING = 100  # minus the heading depth
_LEVEL_PARAGRAPH = 10

# Running headers/footers.
_EDGE_DETECT = 6  # lines at each end of a page where repeated lines are counted
_EDGE_KEEP = 3  # a removal scan stops after this many kept lines from an edge
_EDGE_MAX = 10  # ... or this many lines from the edge
_MIN_PAGES_RUNNING = 3
_PAGE_NUMBER = re.compile(
    r"(?:(?:page|p\.|seite|s\.|pág\.?|página|str\.)\s*)?[-–—]?\s*(?P<n>\d{1,5})\s*[-–—]?"
    r"(?:\s*(?:of|/|von|de|sur|из)\s*\d{1,5})?",
    re.IGNORECASE,
)
# front-matter folios in lower case (i … xxxix); a lone "v" or "x" is too likely a variable
_ROMAN_FOLIO = re.compile(r"(?=[ivx]*i|[ivx]{2})x{0,3}(?:ix|iv|v?i{0,3})")
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")

# Headings from fonts.
_BIGGER = 1.12  # a heading's font is at least this much bigger than the body font
_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|medi(?:um)?\b|-md\b|\bmd\b", re.I)
_MAX_HEADING_CHARS = 150
_MAX_HEADING_WORDS = 20
_MAX_BOLD_HEADING_CHARS = 90
_MAX_HEADING_LINES = 3
_NUMBERING = re.compile(r"(?:(?:[A-Z]|\d+|[IVXLC]+)[.\-]?)(?:\d+[.\-]?)*\s+(?=\S)")
_LETTERS = re.compile(r"[^\W\d_]{2}")

# Paragraphs.
_GAP_FACTOR = 1.45  # a gap this many times the usual line spacing separates paragraphs
_BULLET = re.compile(r"[•●◦▪■►▸‣⁃∙·◆○□➢✓✔]\s")
_HYPHENS = ("-", "\u00ad", "\u2010")

# Text clean-up.
_LIGATURES = str.maketrans({
    "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
    "\ufb05": "st", "\ufb06": "st",
})
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_TRAILING = re.compile(r"[ \t\u00a0]+$", re.M)

_MEANINGLESS_TITLE = re.compile(
    r"(?:untitled|title|document|microsoft word|powerpoint|slide|\s*)(?:\s*\d*)$|"
    r".*\.(?:pdf|docx?|odt|rtf|tex|dvi|ps|indd|qxd|pptx?|xlsx?|html?|txt)$|microsoft word - .*",
    re.IGNORECASE,
)
#: the outline search looks at this many (title, line) pairs at most, for bounded time
_OUTLINE_SCAN_BUDGET = 2_000_000
_MAX_OUTLINE = 5000
_MIN_OUTLINE = 2  # a lone entry (often just the title) says less than the fonts do


@dataclass(slots=True)
class _Line:
    """One line of a page's text, with the layout of its first visible fragment."""

    text: str
    size: float = 0.0  # dominant font size in points, 0 when unknown
    bold: bool = False
    x: float = 0.0
    y: float = 0.0
    rotated: bool = False
    heading: int = -1  # heading depth when the line starts a heading, else -1
    title: str = ""  # the heading's title (set on the heading's first line)
    more: list[tuple[int, str]] | None = None  # further outline entries on this line
    head_cont: bool = False  # a further line of the heading above
    removed: bool = False  # running header/footer or page number
    table: Any = None  # a `pdf_tables.Table` standing in for the lines of its area


# ---------------------------------------------------------------------------------- parse
def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse PDF bytes; `ParseError` when the file cannot be read or needs a password."""
    warnings: list[str] = []
    with _pypdf_log_routed() as routed:
        reader = _open(data, source)
        pages, failed = _extract_pages(reader, source, warnings)
        ocr = _ocr(reader, pages, source, warnings)
        outline = _outline(reader, len(pages), warnings)
        meta_title = _metadata_title(reader)
    if routed:
        first = routed[0] if len(routed[0]) <= 200 else routed[0][:200] + "…"
        warnings.append(f"pypdf repaired or skipped {len(routed)} defect(s); first: {first}")
    _remove_running(pages)
    body = _body_size(pages)
    if len(outline) >= _MIN_OUTLINE:
        _place_outline(pages, outline)
    else:
        _font_headings(pages, body)
    text, page_spans, blocks, heads, tables = _assemble(pages)
    if not text.strip():
        warnings.append(f"no text extracted ({failed} page(s) failed, see above)" if failed
                        else "no text layer (a scanned PDF?): nothing to extract")
    title = (meta_title or _first_page_title(pages, body) or (heads[0][2] if heads else "")
             or PurePath(source).stem)
    sections = _sections(text, blocks, heads, title, tables)
    meta: tuple[tuple[str, Any], ...] = (("tables", len(tables)),) if tables else ()
    if ocr:
        sections = _mark_ocr(sections, [page_spans[i] for i in ocr["read"]])
        meta += tuple((k, v) for k, v in (("ocr", bool(ocr["read"])), ("ocr_pages", len(ocr["read"])),
                                           ("needs_ocr", ocr["missing"])) if v)
    return ParsedDocument(
        source=source, format="pdf", text=text, sections=tuple(sections), title=title,
        page_starts=tuple(s for s, _ in page_spans), warnings=tuple(warnings), prose=True,
        line_numbers=False, meta=meta, views=(("row", "table"),),
    )


# ---------------------------------------------------------------------------------- OCR
def _ocr(reader: Any, pages: list[list[_Line]], source: str,
         warnings: list[str]) -> dict[str, Any]:
    """Scanned pages get their lines from OCR (see `pdf_ocr`); {} when there are none, else
    the pages read and how many are left without text."""
    visible = [sum(len(ln.text) - ln.text.count(" ") for ln in lines) for lines in pages]
    if min(visible, default=MIN_VISIBLE) >= pdf_ocr.MIN_TEXT_CHARS:
        return {}  # the common case: every page has a text layer
    objects = list(reader.pages)
    scanned = [i for i, n in enumerate(visible) if pdf_ocr.is_scanned(objects[i], n)]
    if not scanned:
        return {}
    read = pdf_ocr.ocr_pages(objects, scanned, warnings, source)
    for i, lines in read.items():
        pages[i] = [_Line(t, size=round(h, 1), x=x, y=y) for t, x, y, h in lines]
    return {"read": sorted(read), "missing": len(scanned) - len(read)}


MIN_VISIBLE = 1 << 30


def _mark_ocr(sections: list[Section], spans: list[tuple[int, int]]) -> list[Section]:
    """Sections on OCR'd pages carry `("ocr", True)` in their meta."""
    def on_ocr(s: Section) -> bool:
        return any(a <= s.start < b or (s.start == a == b) for a, b in spans)
    return [Section(s.start, s.end, s.level, s.kind, s.path, s.context, (*s.meta, ("ocr", True)))
            if on_ocr(s) else s for s in sections]


# ------------------------------------------------------------------------- reading, errors
class _Routed(logging.Handler):
    """Collects pypdf's log warnings instead of letting them reach the user's console."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        logger.debug("pypdf: %s", message)


@contextmanager
def _pypdf_log_routed() -> Iterator[list[str]]:
    """pypdf logs a warning for every small defect it repairs (from loggers below `pypdf`);
    while parsing they are collected into the document's warnings instead of propagating
    to the root logger (which prints them when logging is not configured)."""
    routed = _Routed()
    log = logging.getLogger("pypdf")
    propagate = log.propagate
    log.addHandler(routed)
    log.propagate = False
    try:
        yield routed.messages
    finally:
        log.removeHandler(routed)
        log.propagate = propagate


def _open(data: bytes, source: str) -> Any:
    """A pypdf reader (non-strict, so that it repairs what it can), decrypted if possible."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    if b"%PDF" not in data[:1024]:  # readers accept junk before the header, as here
        raise ParseError(source, "not a PDF file (no %PDF header)")
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ParseError(source, "encrypted PDF: a password is required")
        _ = len(reader.pages)  # forces the page tree, where broken files usually fail
    except ParseError:
        raise
    except MemoryError:
        raise
    except DependencyError as e:  # AES needs `cryptography`, a dependency (pypdf[crypto]):
        # only a broken install lacks it; pypdf may raise this before `decrypt`
        raise ParseError(source, f"encrypted PDF that needs a missing package: {e} "
                                 "(pip install cryptography)") from e
    except Exception as e:  # pypdf raises many types on damaged files; convert them here
        raise ParseError(source, f"damaged or truncated PDF ({type(e).__name__}: {e})") from e
    return reader


def _metadata_title(reader: Any) -> str:
    try:
        meta = reader.metadata
        raw = meta.get("/Title") if meta else None
    except Exception:  # a broken info dictionary is not worth failing the document for
        return ""
    if not isinstance(raw, str):
        return ""
    title = " ".join(raw.split())
    if len(title) < 3 or not _LETTERS.search(title) or _MEANINGLESS_TITLE.fullmatch(title):
        return ""
    return title


# ------------------------------------------------------------------------------ extraction
def _extract_pages(reader: Any, source: str,
                   warnings: list[str]) -> tuple[list[list[_Line]], int]:
    """Lines of every page, and how many pages failed: a page whose extraction fails is
    empty, with a warning. Pages drawn by the same content streams with the same resources
    (one object shared by 300 pages) are extracted once: the others get copies of its lines
    (or its failure). Each extraction spends its page's content bytes from the file's
    `MAX_FILE_CONTENT`; a page that would pass it is left out, with one warning for all."""
    pages: list[list[_Line]] = []
    try:
        page_objects = list(reader.pages)
    except MemoryError:
        raise
    except Exception as e:
        raise ParseError(source, f"unreadable page tree: {type(e).__name__}: {e}") from e
    failed: list[str] = []
    over: list[int] = []
    done: dict[Any, int | str] = {}  # content key -> the page index read from it, or why not
    spent = 0
    for number, page in enumerate(page_objects, 1):
        key = pdf_ocr.content_key(page)
        got = done.get(key) if key is not None else None
        if isinstance(got, int):
            pages.append([replace(ln) for ln in pages[got]])
            continue
        why = got
        if why is None:
            try:
                size = _check_size(page)
                if spent + size > MAX_FILE_CONTENT:
                    over.append(number)
                    pages.append([])
                    continue  # (not remembered: a smaller page may still fit)
                spent += size
                with _cpu_deadline(PAGE_SECONDS):
                    pages.append(_page_lines(page))
            except MemoryError:
                raise
            except _OverBound as e:
                why = str(e)
            except Exception as e:  # one broken page should not cost the whole document
                why = f"{type(e).__name__}: {e}"
            if key is not None:
                done[key] = why if why is not None else len(pages) - 1
        if why is not None:
            logger.debug("page %d of %s: %s", number, source, why)
            failed.append(f"{number} ({why})")
            pages.append([])
    if failed:
        warnings.append(f"text of {len(failed)} page(s) could not be extracted: "
                        + "; ".join(failed[:5]) + (" …" if len(failed) > 5 else ""))
    if over:
        warnings.append(f"{len(over)} page(s) left out (pages {pdf_ocr.page_ranges(over)}): "
                        f"the file's content streams passed {MAX_FILE_CONTENT >> 20} MB "
                        f"decoded, the bound per file")
    return pages, len(failed) + len(over)


class _OverBound(BaseException):
    """A page over `MAX_PAGE_CONTENT` or `PAGE_SECONDS`. A BaseException, so that pypdf's
    own `except Exception` around parts of its extraction cannot swallow the deadline."""


def _check_size(page: Any) -> int:
    """The decoded size of the page's content streams; `_OverBound` past `MAX_PAGE_CONTENT`
    (pypdf keeps each decoded stream, so the extraction does not decode it again)."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    total = 0
    for stream in contents if isinstance(contents, list) else [contents]:
        stream = stream.get_object()
        if hasattr(stream, "get_data"):
            total += len(stream.get_data())
            if total > MAX_PAGE_CONTENT:
                raise _OverBound(f"content stream over {MAX_PAGE_CONTENT >> 20} MB")
    return total


#: CPU seconds between repeated expiries of `_cpu_deadline`'s timer
_REPEAT = 0.05


@contextmanager
def _cpu_deadline(seconds: float) -> Iterator[None]:
    """Raise `_OverBound` in the block once the process has spent `seconds` of CPU time in
    it: a virtual timer (`ITIMER_VIRTUAL`, `SIGVTALRM`), armed only in the main thread on Unix
    and only when no other such timer or handler is set; elsewhere nothing. After the first
    expiry it fires again every `_REPEAT` s of CPU: an exception raised while a garbage
    collector callback or a `__del__` runs is swallowed by Python (seen with hypothesis's gc
    callback installed), and the next expiry raises again.
    On the way out, however the block is left, the timer is disarmed and the previous
    handler restored; a signal that lands after the block has ended raises nothing."""
    if not (seconds > 0 and hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGVTALRM) == signal.SIG_DFL
            and signal.getitimer(signal.ITIMER_VIRTUAL)[0] == 0):
        yield
        return
    inside = True

    def expire(signum: int, frame: Any) -> None:
        if inside:
            raise _OverBound(f"over {seconds:g} s of extraction")

    previous = signal.signal(signal.SIGVTALRM, expire)
    try:
        signal.setitimer(signal.ITIMER_VIRTUAL, seconds, _REPEAT)
        yield
    finally:
        inside = False
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


class _Collector:
    """The visitor of one page's extraction: builds lines with their layout."""

    def __init__(self, fonts: Any = None) -> None:
        self.parts: list[str] = []
        self.lines: list[_Line] = []
        self.cur_text: list[str] = []
        self.cur_sizes: Counter[float] = Counter()
        self.cur_bold = 0
        self.cur_chars = 0
        self.cur_pos: tuple[float, float, bool] | None = None
        self.cur_pieces: list[pdf_tables.Piece] = []
        self.pieces: list[list[pdf_tables.Piece]] = []  # per line, for `pdf_tables`
        #: visible characters by text direction: 0 upright, 1 climbing, -1 descending
        self.turns: Counter = Counter()
        self.rulings = pdf_tables.Rulings()
        self.text_ops = pdf_tables.TextOps(fonts)
        self.bold_cache: dict[int, bool] = {}
        # matrices of the form XObjects being extracted: pypdf extracts a form's text with
        # its own coordinates, so the page's matrix at the `Do` is applied on top (the form's
        # /Matrix is not seen by the visitors; it is usually the identity)
        self.forms: list[tuple[float, ...]] = []

    def before(self, op: bytes, operands: Any, cm: Any, tm: Any) -> None:
        if op in pdf_tables.OPS:
            try:
                m = _mult(cm, self.forms[-1]) if self.forms else cm
            except (TypeError, ValueError, IndexError):
                m = _IDENTITY
            self.rulings.op(op, operands, m)
        elif op in pdf_tables.TEXT_OPS:
            try:
                m = _mult(tm, cm)
                if self.forms:
                    m = _mult(m, self.forms[-1])
            except (TypeError, ValueError, IndexError):
                m = _IDENTITY
            self.text_ops.before(op, operands, m, tm)
        elif op == b"Do":
            try:
                outer = _mult(cm, self.forms[-1]) if self.forms else tuple(map(float, cm))
            except (TypeError, ValueError, IndexError):
                outer = _IDENTITY
            self.forms.append(outer)

    def after(self, op: bytes, operands: Any, cm: Any, tm: Any) -> None:
        if op == b"Do" and self.forms:
            self.forms.pop()
        elif op == b"ET":
            self.text_ops.after(op)

    def __call__(self, text: str, cm: Any, tm: Any, font: Any, size: Any) -> None:
        if not text:
            return
        self.parts.append(text)
        layout = None
        starts = self.text_ops.split(text)
        at = 0
        for k, piece in enumerate(text.split("\n")):
            if k:
                self._end_line()
                at += 1
            begin, at = at, at + len(piece)
            if not piece:
                continue
            self.cur_text.append(piece)
            visible = len(piece) - piece.count(" ")
            if not visible:
                self.cur_pieces.append((piece, None))
                continue
            if layout is None:
                layout = self._layout(cm, tm, font, size)
            eff, bold, pos, probe = layout
            if starts:
                self.cur_pieces.extend(pdf_tables.cut(piece, begin, starts))
            else:
                self.cur_pieces.append((piece, probe))
            self.cur_sizes[eff] += visible
            self.cur_chars += visible
            self.turns[pos[2]] += visible
            if bold:
                self.cur_bold += visible
            if self.cur_pos is None:
                self.cur_pos = pos

    def _layout(self, cm: Any, tm: Any, font: Any,
                size: Any) -> tuple[float, bool, tuple, tuple[float, float] | None]:
        try:
            m = _mult(tm, cm)
            if self.forms:
                m = _mult(m, self.forms[-1])
            eff = round(float(size) * (m[2] * m[2] + m[3] * m[3]) ** 0.5, 1)
            rotated = (1 if m[1] > 0 else -1) if abs(m[1]) > abs(m[0]) + 1e-6 else 0
            pos = (float(m[4]), float(m[5]), rotated)
            # a point inside the first glyph (a third of the font up from the baseline, a
            # little along it): the cell of a table that holds the fragment, however rotated
            s = float(size)
            probe = (pos[0] + s * (0.3 * m[2] + 0.1 * m[0]), pos[1] + s * (0.3 * m[3] + 0.1 * m[1]))
        except (TypeError, ValueError, IndexError):
            eff, pos, probe = 0.0, (0.0, 0.0, False), None
        return eff, self._is_bold(font), pos, probe

    def _is_bold(self, font: Any) -> bool:
        key = id(font)
        hit = self.bold_cache.get(key)
        if hit is None:
            hit = self.bold_cache[key] = _font_is_bold(font)
        return hit

    def _end_line(self) -> None:
        text = "".join(self.cur_text)
        line = _Line(text)
        if self.cur_chars and self.cur_pos is not None:
            line.size = self.cur_sizes.most_common(1)[0][0]
            line.bold = self.cur_bold >= 0.8 * self.cur_chars
            line.x, line.y, turn = self.cur_pos
            line.rotated = bool(turn)
        self.lines.append(line)
        self.pieces.append(self.cur_pieces)
        self.cur_pieces = []
        self.cur_text, self.cur_sizes = [], Counter()
        self.cur_bold = self.cur_chars = 0
        self.cur_pos = None

    def finish(self, output: str) -> list[_Line]:
        self._end_line()
        if "".join(self.parts) != output:
            # pypdf post-processed its output: keep its text, without layout
            logger.debug("visitor fragments differ from extract_text(); layout dropped")
            self.pieces = []
            return [_Line(t) for t in output.split("\n")]
        return self.lines


_IDENTITY = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


def _mult(m: Any, n: Any) -> tuple[float, ...]:
    return (
        m[0] * n[0] + m[1] * n[2], m[0] * n[1] + m[1] * n[3],
        m[2] * n[0] + m[3] * n[2], m[2] * n[1] + m[3] * n[3],
        m[4] * n[0] + m[5] * n[2] + n[4], m[4] * n[1] + m[5] * n[3] + n[5],
    )


def _font_is_bold(font: Any) -> bool:
    if not font or not hasattr(font, "get"):
        return False
    try:
        name = str(font.get("/BaseFont", "") or "")
        if _BOLD_NAME.search(name.split("+")[-1]):
            return True
        desc = font.get("/FontDescriptor")
        desc = desc.get_object() if desc is not None else None
        if desc is not None:
            weight = desc.get("/FontWeight")
            flags = int(desc.get("/Flags", 0) or 0)
            return (weight is not None and float(weight) >= 600) or bool(flags & (1 << 18))
    except Exception:  # a malformed font dictionary only costs the bold flag
        return False
    return False


def _page_lines(page: Any) -> list[_Line]:
    collector = _Collector(_fonts(page))
    output = page.extract_text(visitor_text=collector, visitor_operand_before=collector.before,
                               visitor_operand_after=collector.after)
    lines = collector.finish(output)
    if collector.pieces:
        lines = _with_tables(lines, collector)
    for line in lines:
        if line.table is None:
            line.text = _clean(line.text)
    return lines


def _with_tables(lines: list[_Line], collector: _Collector) -> list[_Line]:
    """The page's lines with each table's area replaced by one line standing for the table
    (at the place of its first line); a line partly in a table keeps its other pieces."""
    turn, most = max(collector.turns.items(), key=lambda kv: kv[1], default=(0, 0))
    tables, owner = pdf_tables.find_tables(collector.rulings, collector.pieces, _clean,
                                           turn=turn if most * 2 > sum(collector.turns.values())
                                           else 0)
    if not tables:
        return lines
    out: list[_Line] = []
    placed = set()
    for line, pieces, owners in zip(lines, collector.pieces, owner):
        for k in dict.fromkeys(o for o in owners if o >= 0):
            if k not in placed:
                placed.add(k)
                t = tables[k]
                out.append(_Line(pdf_tables.text_of(t), x=t.bbox[0], y=t.bbox[3], table=t))
        if any(o >= 0 for o in owners):
            rest = "".join(p for (p, _), o in zip(pieces, owners) if o < 0)
            if not rest.strip():
                continue
            line.text = rest.strip()
        out.append(line)
    return out


def _fonts(page: Any) -> Any:
    """The page's /Font resources (None when absent or unreadable)."""
    try:
        return page["/Resources"].get_object()["/Font"].get_object()
    except Exception:  # no fonts, or a broken dictionary: text keeps one position per line
        return None


def _clean(text: str) -> str:
    text = text.replace("\r", "")
    if not text.isascii():
        text = text.translate(_LIGATURES)
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    return text.rstrip(" \t\u00a0")


# ---------------------------------------------------------------- running headers/footers
def _key(text: str) -> str:
    """A line as compared across pages: digits dropped, spaces collapsed, lower case."""
    return _SPACES.sub(" ", _DIGITS.sub("", text)).strip().lower()


def _is_page_number(text: str) -> bool:
    s = text.strip()
    if not s or len(s) > 24:
        return False
    if _ROMAN_FOLIO.fullmatch(s):  # "IV" alone may be a part heading; lower case is a folio
        return True
    m = _PAGE_NUMBER.fullmatch(s)
    return bool(m) and int(m.group("n")) >= 1


def _edges(lines: list[_Line], depth: int) -> list[int]:
    """Indexes of the first and last `depth` lines that have words (marks such as "#" or
    "•" between a running line and the page edge do not push it out)."""
    idx = [i for i, ln in enumerate(lines) if ln.table is None and _LETTERS.search(ln.text)]
    if len(idx) <= 2 * depth:
        return idx
    return idx[:depth] + idx[-depth:]


def _remove_running(pages: list[list[_Line]]) -> None:
    """Mark running headers/footers and page numbers at the page edges as removed: from
    each edge, lines are looked at until `_EDGE_KEEP` lines with words were kept."""
    running = _running_keys(pages)
    for lines in pages:
        idx = [i for i, ln in enumerate(lines) if ln.text.strip()]
        for order in (idx, idx[::-1]):
            kept = seen = 0
            for i in order:
                line = lines[i]
                if kept >= _EDGE_KEEP or seen >= _EDGE_MAX:
                    break
                if line.removed:
                    continue
                if line.table is not None:  # body, never a running line
                    kept += 1
                    continue
                if not _LETTERS.search(line.text):
                    if kept <= 1 and _is_page_number(line.text):
                        line.removed = True
                    continue
                seen += 1
                if _is_running(line, running) or (kept <= 1 and _is_page_number(line.text)):
                    line.removed = True
                else:
                    kept += 1
        _keep_if_alone(lines)


def _keep_if_alone(lines: list[_Line]) -> None:
    """A page whose words are all in running lines keeps them: repeated on every page they
    are its text (identical pages, a blank page with its running head), not a frame around
    it; removing them would lose a document of identical pages whole."""
    if any(not ln.removed and _LETTERS.search(ln.text) for ln in lines):
        return
    for ln in lines:
        if ln.removed and _LETTERS.search(ln.text) and not _is_page_number(ln.text):
            ln.removed = False


def _running_keys(pages: list[list[_Line]]) -> dict[str, float]:
    """Keys of the running lines, with their usual font size (0 when unknown)."""
    n = len(pages)
    if n < _MIN_PAGES_RUNNING:
        return {}
    total: Counter[str] = Counter()
    by_parity: tuple[Counter[str], Counter[str]] = (Counter(), Counter())
    sizes: dict[str, list[float]] = {}
    for number, lines in enumerate(pages):
        seen = set()
        for i in _edges(lines, _EDGE_DETECT):
            key = _key(lines[i].text)
            if key in seen or len(key) < 3 or not _LETTERS.search(key):
                continue
            seen.add(key)
            sizes.setdefault(key, []).append(lines[i].size)
        total.update(seen)
        by_parity[number % 2].update(seen)
    half = (n + 1) // 2, n // 2  # pages with even / odd index
    keys = {k for k, c in total.items() if c >= max(_MIN_PAGES_RUNNING, n / 2)}
    if n >= 2 * _MIN_PAGES_RUNNING:  # alternating running heads of books and manuals
        for parity in (0, 1):
            keys |= {k for k, c in by_parity[parity].items()
                     if c >= max(_MIN_PAGES_RUNNING, 0.75 * half[parity])}
    return {k: statistics.median(sizes[k]) for k in sorted(keys)}


def _is_running(line: _Line, running: dict[str, float]) -> bool:
    """The line is a running line: its key equals one, or is the same line with a part
    changed (a section number, 'Exhibit' added): most of both is a shared prefix or suffix.
    A running line set clearly bigger than usual (the title on the first page, repeated
    small as the running head elsewhere) is kept."""
    key = _key(line.text)
    if len(key) < 3 or not running:
        return False
    match = key if key in running else None
    if match is None:
        for r in running:
            longest = max(len(key), len(r))
            if min(len(key), len(r)) < 12:
                continue
            if (_common_prefix(key, r) >= 0.75 * longest
                    or _common_prefix(key[::-1], r[::-1]) >= 0.75 * longest):
                match = r
                break
    if match is None:
        return False
    usual = running[match]
    return not (usual and line.size > 1.15 * usual)


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


# ---------------------------------------------------------------------- outline headings
def _outline(reader: Any, n_pages: int, warnings: list[str]) -> list[tuple[int, int, str]]:
    """(page index, depth, title) of the outline entries that point at a page."""
    try:
        root = reader.outline
    except RecursionError:
        warnings.append("outline too deeply nested; headings taken from fonts")
        return []
    except MemoryError:
        raise
    except Exception as e:  # a damaged outline only costs the outline
        warnings.append(f"outline unreadable ({type(e).__name__}); headings taken from fonts")
        return []
    out: list[tuple[int, int, str]] = []
    # pypdf gives a list where an entry's children follow it as a nested list; walk it
    # with an explicit stack (outlines can be deep)
    stack: list[tuple[Iterator[Any], int]] = [(iter(root), 0)]
    while stack and len(out) < _MAX_OUTLINE:
        items, depth = stack[-1]
        item = next(items, _END)
        if item is _END:
            stack.pop()
        elif isinstance(item, list):
            stack.append((iter(item), depth + 1))
        else:
            title = " ".join(str(getattr(item, "title", "") or "").split())
            page = _dest_page(reader, item)
            if title and page is not None and 0 <= page < n_pages:
                out.append((page, depth, title))
    return out


_END = object()


def _dest_page(reader: Any, entry: Any) -> int | None:
    try:
        return reader.get_destination_page_number(entry)
    except MemoryError:
        raise
    except Exception:  # a dangling destination: the entry is skipped
        return None


def _norm(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def _place_outline(pages: list[list[_Line]], outline: list[tuple[int, int, str]]) -> None:
    """Mark the line where each outline title starts, searching its destination page from
    the previous heading placed there; a title not found starts its page."""
    cursor = [0] * len(pages)
    budget = [_OUTLINE_SCAN_BUDGET]
    for page, depth, title in outline:
        lines = pages[page]
        found = _find_title(lines, cursor[page], title, budget)
        if found is None:
            first = next((i for i, ln in enumerate(lines)
                          if ln.text.strip() and not ln.removed), None)
            if first is None or lines[first].table is not None:
                # an empty page (or one that starts with a table): the heading still
                # starts there, on a line of its own
                first = 0 if first is None else first
                lines.insert(first, _Line(""))
            start, end = first, first
        else:
            start, end = found
        head = lines[start]
        if head.heading >= 0:  # several entries at one line (often a page start)
            head.more = [*(head.more or []), (depth, title)]
            continue
        head.heading, head.title = depth, title
        for i in range(start + 1, end + 1):
            lines[i].head_cont = True
        cursor[page] = end + 1 if found is not None else cursor[page]


def _find_title(lines: list[_Line], cursor: int, title: str,
                budget: list[int]) -> tuple[int, int] | None:
    """(first, last) line of the title on the page, searched from `cursor`: the whole title
    over one or more lines; else the title without its numbering, extended back to a line
    holding that number just above (side headings: "2.3.1 / (date) / Title")."""
    want = _norm(title)
    m = _NUMBERING.match(title)
    number = title[:m.end()].strip().rstrip(".").casefold() if m else ""
    bare = _norm(title[m.end():]) if m else ""
    for target in (want, bare):
        if len(target) < 3:
            continue
        hit = _scan(lines, cursor, target, budget)
        if hit is None:
            continue
        first, last = hit
        if target is bare and number:
            for back in range(first - 1, max(cursor, first - 3) - 1, -1):
                if number in _norm(lines[back].text).split():
                    first = back
                    break
        return first, last
    return None


def _scan(lines: list[_Line], cursor: int, target: str,
          budget: list[int]) -> tuple[int, int] | None:
    """First run of up to 6 lines from `cursor` whose normalised text is exactly `target`."""
    n = len(lines)
    for i in range(cursor, n):
        budget[0] -= 1
        if budget[0] < 0:
            return None
        line = lines[i]
        if line.removed or line.table is not None or not line.text.strip():
            continue
        acc = _norm(line.text)
        j = i
        while target.startswith(acc):
            if len(acc) == len(target):
                return i, j
            j += 1
            while j < n and (lines[j].removed or not lines[j].text.strip()
                             or lines[j].table is not None):
                j += 1
            if j >= n or j - i >= 6:
                break
            acc = f"{acc} {_norm(lines[j].text)}"
    return None


# ------------------------------------------------------------------------- font headings
def _body_size(pages: list[list[_Line]]) -> float:
    """The body font size: the most common one, weighted by characters (0 when unknown)."""
    sizes: Counter[float] = Counter()
    for lines in pages:
        for ln in lines:
            if ln.size and not ln.removed and not ln.rotated:
                sizes[ln.size] += len(ln.text)
    return sizes.most_common(1)[0][0] if sizes else 0.0


def _font_headings(pages: list[list[_Line]], body: float) -> None:
    """Headings from font size and weight, against the body size. Depth: by size (bigger is
    higher; bold at body size lowest), then, within one size, by the depth of a leading
    section number ("3" above "3.1")."""
    if not body:
        return
    candidates: list[tuple[int, int, float]] = []  # (page, line, size; -1 for bold-only)
    for p, lines in enumerate(pages):
        for i, ln in enumerate(lines):
            kind = _heading_kind(ln, body)
            if kind:
                candidates.append((p, i, ln.size if kind == "size" else -1.0))
    n_lines = sum(1 for lines in pages for ln in lines if ln.text.strip() and not ln.removed)
    if sum(1 for c in candidates if c[2] < 0) > n_lines / 4:  # bold is a body style here
        candidates = [c for c in candidates if c[2] >= 0]
    front = _title_block(pages, candidates)
    candidates = [c for c in candidates if (c[0], c[1]) not in front]
    sizes = sorted({round(c[2] * 2) / 2 for c in candidates}, reverse=True)
    rank = {size: r for r, size in enumerate(sizes)}  # bold-only (-1) sorts last
    keys = {(p, i): (rank[round(size * 2) / 2], _number_depth(pages[p][i].text))
            for p, i, size in candidates}
    depth_of = {key: d for d, key in enumerate(sorted(set(keys.values())))}
    for p, i, _ in candidates:
        lines = pages[p]
        depth = depth_of[keys[p, i]]
        prev = lines[i - 1] if i else None
        if prev is not None and (prev.heading >= 0 or prev.head_cont) and _continues(
                prev, lines[i]):  # a wrapped heading: its lines make one title
            head = next(k for k in range(i - 1, -1, -1) if lines[k].heading >= 0)
            same_font = keys.get((p, head), (None,))[0] == keys[p, i][0]
            if i - head < _MAX_HEADING_LINES and same_font:
                lines[i].head_cont = True
                lines[head].title = f"{lines[head].title} {lines[i].text.strip()}"
                continue
        lines[i].heading, lines[i].title = depth, " ".join(lines[i].text.split())


def _title_block(pages: list[list[_Line]],
                 candidates: list[tuple[int, int, float]]) -> set[tuple[int, int]]:
    """The heading candidates that are title-block matter, not headings: on the first page
    with text, before its first body line, a run of big lines followed directly (no text of
    its own) by a bigger one. A heading heads text; a byline ("Your Name" / "January 3,
    2024") or an affiliation set between the title and the first section heads nothing."""
    first = next((p for p, pg in enumerate(pages) if any(ln.text.strip() for ln in pg)), None)
    if first is None:
        return set()
    sizes = {i: size for p, i, size in candidates if p == first}
    region: list[int] = []  # the candidates above the first body line, in order
    for i, ln in enumerate(pages[first]):
        if ln.removed or not ln.text.strip():
            continue
        if i not in sizes:
            break
        region.append(i)
    out: set[tuple[int, int]] = set()
    for k, i in enumerate(region):
        size = sizes[i]
        if size < 0:
            continue
        later = next((sizes[j] for j in region[k + 1:] if abs(sizes[j] - size) >= 0.3), None)
        if later is not None and later > size:
            out.add((first, i))
    return out


_SECTION_NUMBER = re.compile(r"\s*(\d{1,3}(?:\.\d{1,3}){0,5})\.?\s+\S")


def _number_depth(text: str) -> int:
    """1 for "3 Title" and unnumbered headings, 2 for "3.1 Title", …"""
    m = _SECTION_NUMBER.match(text)
    return m.group(1).count(".") + 1 if m else 1


def _first_page_title(pages: list[list[_Line]], body: float) -> str:
    """The biggest line on the first page with text, when it is bigger than the body (plus
    the lines right below it in the same font: titles wrap)."""
    lines = next((pg for pg in pages if any(ln.text.strip() for ln in pg)), [])
    best = None
    for i, ln in enumerate(lines):
        if (ln.size and not ln.removed and not ln.rotated and _LETTERS.search(ln.text)
                and len(ln.text) <= _MAX_HEADING_CHARS
                and (best is None or ln.size > lines[best].size)):
            best = i
    if best is None or not body or lines[best].size < body * _BIGGER:
        return ""
    parts = [lines[best].text.strip()]
    for ln in lines[best + 1:best + _MAX_HEADING_LINES]:
        if ln.removed or not ln.text.strip() or not _continues(lines[best], ln, loose=True):
            break
        parts.append(ln.text.strip())
    return " ".join(" ".join(parts).split())


def _heading_kind(ln: _Line, body: float) -> str:
    text = ln.text.strip()
    if ln.removed or ln.rotated or not ln.size or not text or not _LETTERS.search(text):
        return ""
    if len(text) > _MAX_HEADING_CHARS or len(text.split()) > _MAX_HEADING_WORDS:
        return ""
    if ln.size >= body * _BIGGER:
        return "size"
    if (ln.bold and ln.size >= body * 0.95 and len(text) <= _MAX_BOLD_HEADING_CHARS
            and text.count(",") < 2 and not text.endswith((".", ",", ";", ":"))
            and (text[0].isupper() or text[0].isdigit())):
        return "bold"
    return ""


def _continues(prev: _Line, line: _Line, *, loose: bool = False) -> bool:
    """The line carries on the heading above (same font, next line down; `loose`: any
    distance down, for the first line of a wrapped title)."""
    limit = 4.0 if loose else 2.0
    return (abs(prev.size - line.size) < 0.3 and prev.bold == line.bold
            and 0 < prev.y - line.y <= limit * max(line.size, 1.0))


# ------------------------------------------------------------------------------ assembly
@dataclass(slots=True)
class _Block:
    lines: list[_Line]
    heading: bool
    table: Any = None


def _assemble(pages: list[list[_Line]]) -> tuple[str, list[tuple[int, int]], list[tuple[int, int]],
                                                 list[tuple[int, int, str]], list[tuple[int, Any]]]:
    """Canonical text, page spans, paragraph spans, headings (offset, depth, title) and
    tables (offset, table)."""
    tables: list[tuple[int, Any]] = []
    out: list[str] = []
    pos = 0
    page_spans: list[tuple[int, int]] = []
    blocks: list[tuple[int, int]] = []
    heads: list[tuple[int, int, str]] = []
    for number, lines in enumerate(pages):
        if number:
            out.append("\n\n")
            pos += 2
        start = pos
        prev: _Block | None = None
        for block in _blocks(lines):
            if prev is not None:
                # a heading is followed by a single newline: the fitter splits at blank
                # lines first, so this keeps a heading with the start of a long paragraph
                sep = "\n" if prev.heading and not block.heading else "\n\n"
                out.append(sep)
                pos += len(sep)
            prev = block
            text = _join_lines(block.lines) if block.table is None else block.lines[0].text
            if block.table is not None:
                tables.append((pos, block.table))
            elif block.heading:
                first = block.lines[0]
                heads.append((pos, first.heading, first.title))
                heads.extend((pos, depth, title) for depth, title in first.more or ())
            else:
                blocks.append((pos, pos + len(text)))
            out.append(text)
            pos += len(text)
        page_spans.append((start, pos))
    return "".join(out), page_spans, blocks, heads, tables


def _blocks(lines: list[_Line]) -> list[_Block]:
    """The page's lines (running lines dropped) grouped into headings and paragraphs."""
    kept = [ln for ln in lines if not ln.removed and (ln.text.strip() or ln.heading >= 0)]
    spacing = _line_spacing(kept)
    out: list[_Block] = []
    for i, ln in enumerate(kept):
        if ln.table is not None:  # a table is a block of its own, after its caption
            if ln.table.caption:
                out.append(_Block([_Line(c) for c in ln.table.caption], False))
            out.append(_Block([ln], False, ln.table))
        elif ln.heading >= 0:
            out.append(_Block([ln], True))
        elif ln.head_cont and out and out[-1].heading:
            out[-1].lines.append(ln)
        elif out and not out[-1].heading and out[-1].table is None and (
                _is_label(out[-1], ln) or not _breaks(kept, i, spacing)):
            out[-1].lines.append(ln)
        else:
            out.append(_Block([ln], False))
    return out


def _is_label(block: _Block, nxt: _Line) -> bool:
    """A short bold block that is not a heading ("Exhibit 12", "Note:") introduces what
    follows in regular type: it stays in the same paragraph."""
    return (len(block.lines) <= 2 and not nxt.bold and all(ln.bold for ln in block.lines)
            and sum(len(ln.text) for ln in block.lines) <= _MAX_BOLD_HEADING_CHARS)


def _line_spacing(lines: list[_Line]) -> float:
    """The page's usual distance between consecutive lines, relative to the font size."""
    ratios = []
    for a, b in zip(lines, lines[1:]):
        if a.size and b.size and abs(a.size - b.size) < 0.3:
            r = (a.y - b.y) / b.size
            if 0.5 < r < 3:
                ratios.append(r)
    return statistics.median(ratios) if len(ratios) >= 3 else 1.25


def _breaks(lines: list[_Line], i: int, spacing: float) -> bool:
    """Whether a paragraph starts at line i (never inside a hyphenated word)."""
    prev, line = lines[i - 1], lines[i]
    if _hyphen_joins(prev.text, line.text):
        return False
    if _BULLET.match(line.text.lstrip()):
        return True
    if not (prev.size and line.size):
        return False
    if abs(prev.size - line.size) > 0.15 * max(prev.size, line.size):
        return True
    dy = prev.y - line.y
    if dy > 0 and dy > spacing * _GAP_FACTOR * line.size:
        return True
    nxt = lines[i + 1] if i + 1 < len(lines) else None
    if nxt is not None and nxt.size and 0 < dy < 2 * spacing * line.size:
        indent = line.x - nxt.x
        if (0.5 * line.size <= indent <= 6 * line.size and abs(prev.x - nxt.x) < 0.5 * line.size
                and 0 < line.y - nxt.y < 2 * spacing * line.size):
            return True
    return False


def _hyphen_joins(a: str, b: str) -> bool:
    a = a.rstrip()
    b = b.lstrip()
    return (len(a) >= 2 and a.endswith(_HYPHENS) and a[-2].islower()
            and bool(b) and b[0].islower())


def _join_lines(lines: list[_Line]) -> str:
    parts: list[str] = []
    for ln in lines:
        text = ln.text.strip() if ln.heading >= 0 or ln.head_cont else ln.text.rstrip()
        if parts and _hyphen_joins(parts[-1], text):
            parts[-1] = parts[-1].rstrip()[:-1] + text.lstrip()
        else:
            parts.append(text)
    return "\n".join(parts).strip("\n")


# ------------------------------------------------------------------------------ sections
def _sections(text: str, blocks: list[tuple[int, int]], heads: list[tuple[int, int, str]],
              title: str, tables: list[tuple[int, Any]] = ()) -> list[Section]:
    heads = sorted(heads, key=lambda h: h[0])  # stable: outline order at equal offsets
    spans = _end_abstract(_heading_spans(text, heads, title), blocks)
    sections = [Section(s, e, _LEVEL_HEADING - min(d, 40), "section", path)
                for s, e, d, path in spans if s < e]
    for (s, e), path in zip(blocks, _enclosing_paths(spans, blocks, title)):
        if s < e:
            sections.append(Section(s, e, _LEVEL_PARAGRAPH, "paragraph", path))
    starts = [(pos, pos) for pos, _ in tables]
    for (pos, table), path in zip(tables, _enclosing_paths(spans, starts, title)):
        sections.extend(pdf_tables.sections(table, pos, path, _LEVEL_PARAGRAPH))
    return sections


def _heading_spans(text: str, heads: list[tuple[int, int, str]],
                   title: str) -> list[tuple[int, int, int, tuple[str, ...]]]:
    """(start, end, depth, path) per heading: to the next heading of the same or a higher
    level (trailing whitespace trimmed); the path runs from the title down."""
    n = len(heads)
    ends = [len(text)] * n
    stack: list[int] = []
    for i, (_, depth, _) in enumerate(heads):
        while stack and heads[stack[-1]][1] >= depth:
            ends[stack.pop()] = heads[i][0]
        stack.append(i)
    out = []
    chain: list[tuple[int, str]] = []  # (depth, title) of the open headings
    key = title.casefold()
    for i, (start, depth, head) in enumerate(heads):
        while chain and chain[-1][0] >= depth:
            chain.pop()
        chain.append((depth, head))
        titles = [h for _, h in chain]
        if titles[0].casefold() == key:  # the first heading is the document title itself
            titles = titles[1:]
        end = len(text[:ends[i]].rstrip()) if ends[i] > start else start
        out.append((start, max(start, end), depth, (title, *titles)))
    return out


def _end_abstract(spans: list[tuple[int, int, int, tuple[str, ...]]],
                  blocks: list[tuple[int, int]]) -> list[tuple[int, int, int, tuple[str, ...]]]:
    """An "Abstract" heading heads one paragraph: what follows it up to the next heading (a
    paper whose sections the fonts do not show) belongs to the document, not to the
    abstract."""
    out = []
    for start, end, depth, path in spans:
        if path[-1].strip(" .:").casefold() == "abstract":
            after = [e for s, e in blocks if start <= s < end]
            if len(after) > 1:
                end = after[0]
        out.append((start, end, depth, path))
    return out


def _enclosing_paths(spans: list[tuple[int, int, int, tuple[str, ...]]],
                     blocks: list[tuple[int, int]], title: str) -> list[tuple[str, ...]]:
    """Path of the innermost heading section holding each block (both lists are sorted by
    start and the heading sections nest, so one sweep with a stack does it)."""
    out = []
    open_: list[tuple[int, tuple[str, ...]]] = []  # (end, path) of the open sections
    k = 0
    for s, _ in blocks:
        while k < len(spans) and spans[k][0] <= s:
            if spans[k][1] > spans[k][0]:
                while open_ and open_[-1][0] <= spans[k][0]:
                    open_.pop()
                open_.append((spans[k][1], spans[k][3]))
            k += 1
        while open_ and open_[-1][0] <= s:
            open_.pop()
        out.append(open_[-1][1] if open_ else (title,))
    return out
