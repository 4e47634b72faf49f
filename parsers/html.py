"""HTML: the visible main content of a page, with its heading, list, table and code structure.

The page is parsed with BeautifulSoup over lxml and walked once, iteratively (pages nested
100,000 deep must not exhaust the stack). The walk renders the canonical text as a person reads
the page: blocks separated by blank lines, inline text joined as written with whitespace
collapsed, `<br>` as a line break, list items as `- item` / `1. item` lines, table rows as
`a | b | c` lines, `<pre>` verbatim.

Only the main content is kept: `<main>`, else `[role=main]`, else a single `<article>`, else an
element with a content id (`content`, `page-content`, …), else `<body>`. Inside it, chrome is
dropped by element (nav, aside, page-level header, footer, forms, scripts), by ARIA role, by
hidden state (`hidden`, `aria-hidden`, inline `display:none`) and by class/id words that name
navigation (nav, menu, breadcrumb, sidebar, toc, footer, skip links, …). A few site
conventions of the reference corpus are named explicitly below (MediaWiki's `noprint`,
`metadata`, `[edit]` links and citation markers; the Apache httpd manual's language bars and
`#quickview` sidebar). An element holding the page's `<h1>` is never dropped by class or id, and
a page whose rules leave nothing falls back to its whole body.

Sections: a heading owns the content up to the next heading of the same or a higher rank,
bounded by the block it leads (`<div class="section"><h2>…`) or by its `<section>`/`<article>`;
blocks are paragraphs, lists (with `item` children), definition lists, code, quotes and
tables (with `row` children; the header row is the table's `context`, the caption ends its
path).
"""

from __future__ import annotations

import gc
import logging
import re
import warnings
from pathlib import PurePath

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.text.textio import declared_encoding, decode

log = logging.getLogger(__name__)

# Section levels, a total order: headings above blocks above their rows and items.
_LEVEL_HEADING = {f"h{i}": 101 - i for i in range(1, 7)}  # h1 100 … h6 95
_LEVELS = {"quote": 65, "table": 60, "definition": 55, "list": 50, "code": 40,
           "paragraph": 30, "item": 20, "row": 10}

# Elements whose content is never visible main text.
_DROP_TAGS = frozenset(
    "script style noscript template head title meta link base nav aside form button select "
    "option optgroup datalist textarea input svg iframe object embed video audio canvas map "
    "area dialog frameset frame footer".split()
)
_DROP_ROLES = frozenset(
    "navigation banner contentinfo search complementary menu menubar toolbar dialog "
    "alertdialog".split()
)
# Words in a class or id (split at '-', '_', spaces and camelCase) that name page chrome.
_BOILER_WORDS = re.compile(
    r"(?:^|[\s_-])(?:nav|navbar|navbox|navigation|navlinks|menu|menubar|breadcrumbs?|sidebar|"
    r"footer|toc|skip|jump|share|sharing|social|cookies?|consent|banner|advert|advertisement|"
    r"ads|popup|modal|dropdown|toolbar|portlet|pagination|pager|comments?|editsection|"
    r"permalink|headerlink)(?=$|[\s_-])"
)
# Whole class/id tokens that name chrome but are not made of the words above.
_BOILER_TOKENS = frozenset({
    "page-header", "site-header", "masthead", "prev", "next", "previous", "prevnext",
    # MediaWiki: not-for-print and metadata boxes, category links, the "Retrieved from" line,
    # the backlinks of a reference list, sister-project boxes.
    "noprint", "metadata", "catlinks", "printfooter", "mw-cite-backlink", "sistersitebox",
    "mw-redirectedfrom",
    # Apache httpd manual: language bars, the right-hand sidebar, the breadcrumb (id="path").
    "toplang", "bottomlang", "quickview", "path",
})
_COMMENTS_ID = re.compile(r"^comments?(?:[-_](?:section|thread|area|list))?$", re.I)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t]*\n)+")
_SECTIONING = frozenset({"article", "section", "main", "body"})
_SECTIONING_CONTENT = frozenset({"article", "section", "main"})  # where a <header> is content
_MAX_INDENT = 8
_WS = (" ", "\n", "\t", "\r", "\f", "\v", "\xa0", "\u2002", "\u2003", "\u2009", "\u3000")
_CONTENT_IDS = ("main-content", "maincontent", "page-content", "content", "main")

# How the walk treats each element (default: inline).
(_INLINE, _BLOCK, _HEADING, _LIST, _LI, _DL, _DT, _DD, _TABLE, _TGROUP, _TR, _CELL,
 _CAPTION, _PRE, _QUOTE, _BR, _HR, _HEADER) = range(18)
_KINDS = {name: _BLOCK for name in (
    "address article blockquote body center details div fieldset figcaption figure hgroup "
    "html legend main p section summary nav aside footer form".split())}
_KINDS.update({f"h{i}": _HEADING for i in range(1, 7)})
_KINDS.update({"ul": _LIST, "ol": _LIST, "menu": _LIST, "dir": _LIST, "li": _LI, "dl": _DL,
               "dt": _DT, "dd": _DD, "table": _TABLE, "thead": _TGROUP, "tbody": _TGROUP,
               "tfoot": _TGROUP, "tr": _TR, "td": _CELL, "th": _CELL, "caption": _CAPTION,
               "pre": _PRE, "blockquote": _QUOTE, "br": _BR, "hr": _HR, "header": _HEADER})


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse an HTML page into its canonical main text and sections."""
    text, warns = _decode(data, source)
    # bs4 allocates a few objects per node and no garbage cycles while it builds; the
    # collector's passes over the growing heap cost it 20-40% (more on a 30 MB page).
    paused = gc.isenabled()
    gc.disable()
    try:
        soup = _soup(text, source)
        title = _title(soup, text)
        root, root_is_content = _main_root(soup, text)
        walk = _Walker(root_is_content, rules=True)
        walk.run(root)
        if not walk.pos and root is not None and _has_text(root):
            # The rules removed everything: keep the whole page rather than nothing.
            warns.append("no main content found after removing navigation; kept the whole page")
            root = soup.body or soup
            walk = _Walker(False, rules=False)
            walk.run(root)
    finally:
        if paused:
            gc.enable()
    canonical = "".join(walk.parts)
    stem = PurePath(source).stem or source
    sections = _sections(walk, canonical, title, stem)
    return ParsedDocument(source=source, format="html", text=canonical,
                          sections=tuple(sections), title=title, warnings=tuple(warns),
                          prose=True, line_numbers=False)


# --- decoding and the tree -------------------------------------------------------------------

def _decode(data: bytes, source: str) -> tuple[str, list[str]]:
    """UTF-8 first; when that fails, the charset the page declares, else `textio`'s fallback.
    A declared latin-1 or ASCII is read as cp1252, and a declared UTF-16 or UTF-32 as UTF-8
    (`textio.decode`), as browsers do (WHATWG encoding standard)."""
    charset = declared_encoding(data, "html")
    if charset in ("iso-8859-1", "latin-1", "latin1", "us-ascii", "ascii"):
        charset = "cp1252"
    return decode(data, source, declared=charset)


def _soup(text: str, source: str):
    try:
        from bs4 import BeautifulSoup
        from bs4 import XMLParsedAsHTMLWarning
    except ImportError as e:  # pragma: no cover - core dependency
        from chunkwise.errors import MissingDependencyError
        raise MissingDependencyError("beautifulsoup4") from e
    with warnings.catch_warnings():
        # XHTML pages (`<?xml …?>` first) are fine to read as HTML; say nothing.
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        warnings.simplefilter("ignore", UserWarning)
        try:
            return BeautifulSoup(text, "lxml")
        except Exception as e:  # bs4/lxml refuse some markup outright
            raise ParseError(source, f"unparseable HTML: {e}") from e


def _title(soup, text: str) -> str:
    if "<title" not in text and "<TITLE" not in text:
        return ""
    tag = soup.title
    return " ".join(tag.get_text().split()) if tag is not None else ""


def _main_root(soup, text: str):
    """The element holding the main content, and whether it is a content element (not body).

    Cheap regex probes on the source decide which (expensive) tree searches are worth doing.
    """
    low = text.lower()
    if re.search(r"<main[\s>/]", low):
        tag = soup.find("main")
        if tag is not None:
            return tag, True
    if re.search(r"""role\s*=\s*["']?main\b""", low):
        tag = soup.find(attrs={"role": "main"})
        if tag is not None:
            return tag, True
    if len(re.findall(r"<article[\s>]", low)) == 1:
        tag = soup.find("article")
        if tag is not None:
            return tag, True
    for m in re.finditer(r"""\sid\s*=\s*["']?([\w-]+)""", low):
        if m.group(1) in _CONTENT_IDS:
            tag = soup.find(id=re.compile(f"^{re.escape(m.group(1))}$", re.I))
            if tag is not None and tag.name not in ("html", "head"):
                return tag, True
    return (soup.body or soup), False


def _has_text(root) -> bool:
    """Whether the element holds any text outside scripts, styles and the <head>."""
    from bs4 import NavigableString
    return any(type(s) is NavigableString and not s.isspace()
               and s.parent.name not in _DROP_TAGS for s in root.descendants)


# --- the walk -----------------------------------------------------------------------------

class _Frame:
    """An open element during the walk."""

    __slots__ = ("name", "kind", "start", "rec", "watch", "extra")

    def __init__(self, name: str, kind: int) -> None:
        self.name = name
        self.kind = kind
        self.start = -1          # offset of its first emitted character, -1 while none
        self.rec: _Rec | None = None      # the section it opened, if any
        self.watch: list[_Rec] | None = None  # headings whose scope this element may bound
        self.extra: object = None


_INLINE_FRAME = _Frame("", _INLINE)


class _Rec:
    """A section being recorded: spans are filled in as text is emitted."""

    __slots__ = ("kind", "start", "end", "level", "label", "context", "parent", "bound",
                 "sectioning_only")

    def __init__(self, kind: str, level: int, parent: _Rec | None = None) -> None:
        self.kind = kind
        self.level = level
        self.start = -1
        self.end = -1
        self.label = ""           # heading text, or table caption
        self.context = ""         # table header rows
        self.parent = parent      # the table/list of a row/item
        self.bound: int | None = None   # headings: end of the block that bounds the scope
        self.sectioning_only = False


class _Table:
    __slots__ = ("rec", "frame", "row", "kinds", "in_head", "header", "first_row_done",
                 "rows", "caption")

    def __init__(self, rec: _Rec | None, frame: _Frame) -> None:
        self.rec = rec
        self.frame = frame
        self.row: list[str] | None = None    # finished cell texts of the open row
        self.kinds: list[bool] = []          # per cell: is it a <th>
        self.in_head = False
        self.header: list[str] = []
        self.first_row_done = False
        self.rows = 0
        self.caption: list[str] | None = None


class _Walker:
    """Renders one element tree to canonical text and records its sections."""

    def __init__(self, root_is_content: bool, *, rules: bool) -> None:
        self.rules = rules
        self.root_is_content = root_is_content
        self.parts: list[str] = []
        self.pos = 0
        self.brk = 0              # pending break before the next text: 0, 1 (\n), 2 (\n\n)
        self.space = False        # pending space before the next text
        self.prefix = ""          # pending list marker
        self.waiting: list[_Frame] = []   # frames without a start yet
        self.para: _Rec | None = None
        self.recs: list[_Rec] = []
        self.headings: list[_Rec] = []
        self.stack: list = []
        self.atomic = 0           # inside a list/dl/table/pre: no sections, no headings
        self.quote = 0
        self.flat = 0             # inside a heading: breaks are spaces
        self.tight = 0            # inside li/dt/dd: blocks are separated by one newline
        self.sectioning = 0
        self.lists: list[list] = []       # [ordered, next number, list rec]
        self.dls: list[list] = []         # [dl rec, open group rec, group has dd]
        self.tables: list[_Table] = []
        self.cell: list[str] | None = None  # words of the open table cell (or caption)
        self.cell_space = False
        self.cell_sep = " "       # what a pending cell space becomes: " ", or ", " between items
        self.cell_depth = 0       # cells open, counting those of nested tables
        self.pre: list[str] | None = None
        self.heading: _Rec | None = None
        self._boiler_cache: dict[str, bool] = {}

    # -- the loop --

    def run(self, root) -> None:
        from bs4 import NavigableString, Tag
        if root is None:
            return
        text_types = (NavigableString,)
        frame = _Frame(root.name or "", _BLOCK)
        frame.watch = []
        frame.extra = "root"
        if self.root_is_content:
            self.sectioning += 1
        stack = self.stack
        stack.append((frame, iter(root.contents)))
        self.waiting.append(frame)
        while stack:
            frame, it = stack[-1]
            for node in it:
                cls = type(node)
                if cls is Tag:
                    child = self.open(node)
                    if child is not None:
                        stack.append((child, iter(node.contents)))
                        break
                elif cls in text_types:
                    self.text(node)
            else:
                stack.pop()
                self.close(frame)
        self.close_para()

    # -- output primitives --

    def emit(self, s: str, *, para_ok: bool = True) -> None:
        """Append `s` (no leading/trailing whitespace) after the pending break or space."""
        parts = self.parts
        if self.pos:
            if self.brk:
                parts.append("\n\n" if self.brk == 2 else "\n")
                self.pos += self.brk
            elif self.space:
                parts.append(" ")
                self.pos += 1
        self.brk = 0
        self.space = False
        start = self.pos
        if self.prefix:
            parts.append(self.prefix)
            self.pos += len(self.prefix)
            self.prefix = ""
        if para_ok and self.para is None and not self.atomic and self.heading is None \
                and self.flat == 0:
            self.para = rec = _Rec("paragraph", _LEVELS["paragraph"])
            rec.start = start
            self.recs.append(rec)
        if self.waiting:
            for f in self.waiting:
                f.start = start
                if f.rec is not None and f.rec.start < 0:
                    f.rec.start = start
            self.waiting.clear()
        parts.append(s)
        self.pos += len(s)

    def text(self, s: str) -> None:
        if self.pre is not None:
            self.pre.append(s)
            return
        if s.isspace():
            if self.cell is not None:
                self.cell_space = True
            else:
                self.space = True
            return
        if "\xad" in s:
            s = s.replace("\xad", "")  # soft hyphens are invisible
        words = " ".join(s.split())
        # startswith/endswith, not s[0]: indexing a NavigableString is a slow Python method.
        lead = s.startswith(_WS)
        trail = s.endswith(_WS)
        if self.cell is not None:
            if self.cell and (lead or self.cell_space):
                self.cell.append(self.cell_sep if self.cell_space else " ")
            self.cell.append(words)
            self.cell_space = trail
            self.cell_sep = " "
            return
        if self.tables:
            return  # stray text in a table outside its cells (browsers move it out)
        if lead:
            self.space = True
        self.emit(words)
        self.space = trail

    def block_break(self) -> None:
        if self.cell is not None:
            self.cell_space = True
        elif self.pre is not None:
            return
        elif self.flat:
            self.space = True
        else:
            self.close_para()
            want = 1 if self.tight else 2
            if self.brk < want:
                self.brk = want

    def line_break(self) -> None:
        if self.pre is not None:
            self.pre.append("\n")
        elif self.cell is not None:
            self.cell_space = True
        elif self.flat:
            self.space = True
        elif self.pos:
            self.brk = min(self.brk + 1, 2)

    def close_para(self) -> None:
        if self.para is not None:
            self.para.end = self.pos
            self.para = None

    # -- dropping --

    def dropped(self, tag, name: str, attrs: dict) -> bool:
        if "hidden" in attrs or attrs.get("aria-hidden") == "true":
            return True
        style = attrs.get("style")
        if style and _HIDDEN_STYLE.search(style):
            return True
        if not self.rules:
            return False
        cls = attrs.get("class")
        ident = attrs.get("id")
        hit = False
        if cls or ident:
            key = " ".join(cls) if isinstance(cls, list) else (cls or "")
            if ident:
                key = f"{key} {ident}"
            hit = self._boiler_cache.get(key)
            if hit is None:
                hit = self._boiler_cache[key] = _is_boiler(key)
            if not hit and name == "sup" and cls and "reference" in cls:
                return True  # citation markers, [1]
        if not hit and attrs.get("role") in _DROP_ROLES:
            hit = True
        if not hit and name in ("div", "section") and _led_by_comments_heading(tag):
            hit = True
        # Never drop the block that holds the page's title heading.
        return hit and tag.find("h1") is None

    # -- elements --

    def open(self, tag) -> _Frame | None:
        name = tag.name
        if name in _DROP_TAGS:
            if not self.rules and name in ("nav", "aside", "footer", "form"):
                pass
            else:
                return None
        attrs = tag.attrs
        if attrs and self.dropped(tag, name, attrs):
            return None
        kind = _KINDS.get(name, _INLINE)
        if kind == _INLINE:
            return _INLINE_FRAME  # transparent: shared, never started, never bounds
        if kind == _BR:
            self.line_break()
            return None
        if kind == _HR:
            self.block_break()
            return None
        if kind == _HEADER:
            if self.rules and not self.sectioning and tag.find("h1") is None:
                return None  # the page banner, not an article's header
            kind = _BLOCK
        f = _Frame(name, kind)
        self.waiting.append(f)
        getattr(self, _OPENERS[kind])(f, tag)
        return f

    def close(self, f: _Frame) -> None:
        if f.kind == _INLINE:
            return
        getattr(self, _CLOSERS[f.kind])(f)
        if f.watch:
            self.settle_bounds(f)

    def settle_bounds(self, f: _Frame) -> None:
        """A block that a heading leads bounds its scope if it holds more than the heading;
        a sectioning element bounds it always."""
        for rec in f.watch:
            if rec.bound is None and (f.name in _SECTIONING or f.extra == "root"
                                      or (not rec.sectioning_only and self.pos > rec.end)):
                rec.bound = self.pos

    def open_block(self, f: _Frame, tag) -> None:
        self.block_break()
        if f.name in _SECTIONING:
            f.watch = []
            if f.name in _SECTIONING_CONTENT:
                self.sectioning += 1

    def close_block(self, f: _Frame) -> None:
        self.block_break()
        if f.name in _SECTIONING_CONTENT:
            self.sectioning -= 1

    def open_heading(self, f: _Frame, tag) -> None:
        self.block_break()
        if self.atomic or self.quote or self.heading is not None or self.cell is not None:
            return  # a heading inside a list, table or quote is just a line of text
        rec = _Rec("section", _LEVEL_HEADING[f.name])
        f.rec = rec
        self.heading = rec
        self.flat += 1
        self.headings.append(rec)
        rec.sectioning_only = f.name == "h1"  # the page title heading spans the page
        # Candidates that may bound the scope: the blocks this heading leads (nothing emitted
        # in them yet), then the nearest sectioning element or the walk's root.
        stack = self.stack
        for i in range(len(stack) - 1, -1, -1):
            anc = stack[i][0]
            if anc.kind == _INLINE:
                continue  # `<a><h2>…</h2></a>`: inline wrappers are transparent
            led = anc.start < 0
            if anc.watch is None and led:
                anc.watch = []
            if anc.watch is not None and (led or anc.name in _SECTIONING or i == 0):
                anc.watch.append(rec)
                if anc.name in _SECTIONING or i == 0:
                    break

    def close_heading(self, f: _Frame) -> None:
        rec = f.rec
        if rec is not None:
            self.flat -= 1
            self.heading = None
            if rec.start >= 0:
                rec.end = self.pos
                rec.label = _span_text(self, rec.start, rec.end)
        self.block_break()

    def _open_atomic(self, f: _Frame, kind: str) -> _Rec | None:
        """Opens a list, definition list or table: a section of `kind`, unless it is inside
        another one (or in a table cell), where its text belongs to the enclosing section;
        no sections or headings start inside it until `_close_atomic`."""
        self.block_break()
        rec = None
        if not self.atomic and self.cell is None:
            rec = f.rec = _Rec(kind, _LEVELS[kind])
            self.recs.append(rec)
        self.atomic += 1
        return rec

    def _close_atomic(self, rec: _Rec | None) -> None:
        self.atomic -= 1
        self._end(rec)
        self.block_break()

    def open_list(self, f: _Frame, tag) -> None:
        rec = self._open_atomic(f, "list")
        start = 1
        if f.name == "ol":
            try:
                start = int(tag.attrs.get("start", 1))
            except (TypeError, ValueError):
                start = 1
        self.lists.append([f.name == "ol", start, rec])

    def close_list(self, f: _Frame) -> None:
        self.lists.pop()
        self._close_atomic(f.rec)

    def open_li(self, f: _Frame, tag) -> None:
        if self.cell is not None:
            self.cell_space = True
            self.cell_sep = ", "  # a list in a table cell reads as "a, b, c"
            return
        if self.flat:
            self.block_break()
            return
        self.close_para()
        if self.brk < 1 and self.pos:
            self.brk = 1
        self.tight += 1
        depth = len(self.lists)
        if depth:
            info = self.lists[-1]
            marker = f"{info[1]}. " if info[0] else "- "
            info[1] += 1
            if depth == 1 and info[2] is not None:
                f.rec = _Rec("item", _LEVELS["item"], info[2])
                self.recs.append(f.rec)
        else:
            marker = "- "
        # Indent nested items, but not without bound: a list nested 10,000 deep must not
        # make the text quadratic.
        self.prefix = "  " * min(max(depth - 1, 0), _MAX_INDENT) + marker
        f.extra = "li"

    def close_li(self, f: _Frame) -> None:
        if self._close_item(f, "li"):
            self.prefix = ""
            self._end(f.rec)

    def _close_item(self, f: _Frame, opened: str) -> bool:
        """Closes a list item, or a dl's term or description: one opened as an item
        (`f.extra == opened`) ends its line; any other (in a table cell or a heading, a dt or
        dd outside a dl) is a block break. Whether it was an item."""
        if f.extra != opened:
            self.block_break()
            return False
        self.tight -= 1
        if self.brk < 1 and self.pos:
            self.brk = 1
        return True

    def open_dl(self, f: _Frame, tag) -> None:
        self.dls.append([self._open_atomic(f, "definition"), None, False])

    def close_dl(self, f: _Frame) -> None:
        self._end(self.dls.pop()[1])  # the last group
        self._close_atomic(f.rec)

    def open_dt(self, f: _Frame, tag) -> None:
        self._dl_entry(f, term=True)

    def open_dd(self, f: _Frame, tag) -> None:
        self._dl_entry(f, term=False)

    def _dl_entry(self, f: _Frame, *, term: bool) -> None:
        if self.cell is not None or self.flat or not self.dls:
            self.block_break()
            return
        info = self.dls[-1]
        new_group = info[1] is None or (term and info[2])
        if new_group:
            self._end(info[1])
            want = 1 if self.tight else 2
            if self.pos and self.brk < want:
                self.brk = want
            info[1] = None
            if info[0] is not None:
                info[1] = group = _Rec("item", _LEVELS["item"], info[0])
                self.recs.append(group)
                self.waiting.append(_Holder(group))
            else:
                info[1] = _Rec("item", 0)  # a marker only: groups of a nested dl
            info[2] = False
        elif self.brk < 1:
            self.brk = 1
        if not term:
            info[2] = True
        self.tight += 1
        f.extra = "dl"

    def close_dt(self, f: _Frame) -> None:
        self._close_item(f, "dl")

    close_dd = close_dt

    def open_quote(self, f: _Frame, tag) -> None:
        self.block_break()
        if not self.atomic and not self.quote and self.cell is None and self.heading is None:
            f.rec = _Rec("quote", _LEVELS["quote"])
            self.recs.append(f.rec)
        self.quote += 1

    def close_quote(self, f: _Frame) -> None:
        self.block_break()
        self.quote -= 1
        self._end(f.rec)

    def open_pre(self, f: _Frame, tag) -> None:
        if self.cell is not None or self.flat or self.pre is not None:
            return  # inline: whitespace collapses like the rest of the cell or heading
        self.block_break()
        self.pre = []
        f.extra = "pre"

    def close_pre(self, f: _Frame) -> None:
        if f.extra != "pre":
            return
        raw = "".join(self.pre).replace("\xa0", " ")
        self.pre = None
        code = _LEADING_BLANK_LINES.sub("", raw).rstrip()
        if code:
            rec = None
            if not self.atomic:
                rec = _Rec("code", _LEVELS["code"])
                self.recs.append(rec)
            self.emit(code, para_ok=False)
            if rec is not None:
                rec.start = self.pos - len(code)
                rec.end = self.pos
        self.block_break()

    # -- tables --

    def open_table(self, f: _Frame, tag) -> None:
        if self.cell is not None or self.flat or (self.tables and self.cell_depth):
            if self.cell is not None:
                self.cell_space = True
            f.extra = "nested"
            return
        self.tables.append(_Table(self._open_atomic(f, "table"), f))

    def close_table(self, f: _Frame) -> None:
        if f.extra == "nested":
            if self.cell is not None:
                self.cell_space = True
            return
        table = self.tables[-1]
        self._end_row(table)
        self.tables.pop()
        rec = table.rec
        if rec is not None:
            rec.context = "\n".join(table.header)
            if table.caption:
                rec.label = " ".join("".join(table.caption).split())
        self._close_atomic(rec)

    def _table(self, f: _Frame) -> _Table | None:
        """The table an element belongs to directly (not through a nested table's cell)."""
        if not self.tables or self.cell_depth and f.kind != _CELL:
            return None
        return self.tables[-1]

    def open_tgroup(self, f: _Frame, tag) -> None:
        table = self._table(f)
        if table is not None and self.cell is None:
            table.in_head = f.name == "thead"
            f.extra = table

    def close_tgroup(self, f: _Frame) -> None:
        if isinstance(f.extra, _Table):
            f.extra.in_head = False

    def open_tr(self, f: _Frame, tag) -> None:
        table = self._table(f)
        if table is None or self.cell is not None:
            if self.cell is not None:
                self.cell_space = True
            return
        self._end_row(table)
        table.row = []
        table.kinds = []
        f.extra = table

    def close_tr(self, f: _Frame) -> None:
        if isinstance(f.extra, _Table):
            self._end_row(f.extra)
        elif self.cell is not None:
            self.cell_space = True

    def open_cell(self, f: _Frame, tag) -> None:
        if self.cell is not None or not self.tables:
            self.cell_space = True
            f.extra = "nested"
            if self.cell is not None:
                self.cell_depth += 1
            return
        table = self.tables[-1]
        if table.row is None:
            table.row = []
            table.kinds = []
        self.cell = []
        self.cell_space = False
        self.cell_depth += 1
        table.kinds.append(f.name == "th")
        f.extra = table

    def close_cell(self, f: _Frame) -> None:
        if f.extra == "nested":
            if self.cell is not None:
                self.cell_space = True
                self.cell_depth -= 1
            return
        table = f.extra
        table.row.append("".join(self.cell))
        self.cell = None
        self.cell_depth -= 1

    def open_caption(self, f: _Frame, tag) -> None:
        if self.cell is not None or not self.tables or self.tables[-1].caption is not None:
            self.cell_space = self.cell is not None or self.cell_space
            return
        self.cell = []
        self.cell_depth += 1
        f.extra = self.tables[-1]

    def close_caption(self, f: _Frame) -> None:
        if isinstance(f.extra, _Table):
            f.extra.caption = self.cell or []
            self.cell = None
            self.cell_depth -= 1

    def _end_row(self, table: _Table) -> None:
        row = table.row
        if row is None:
            return
        kinds = table.kinds
        table.row = None
        if not any(c.strip() for c in row):
            return
        line = " | ".join(c.strip() for c in row).strip()
        header = table.in_head or (not table.first_row_done and all(kinds) and not table.rows)
        table.first_row_done = True
        if table.rows or table.header:
            self.brk = 1
        self.emit(line, para_ok=False)
        if header and not table.rows:
            table.header.append(line)
            return
        table.rows += 1
        if table.rec is not None:
            rec = _Rec("row", _LEVELS["row"], table.rec)
            rec.start = self.pos - len(line)
            rec.end = self.pos
            self.recs.append(rec)

    def _end(self, rec: _Rec | None) -> None:
        if rec is not None and rec.start >= 0 and rec.end < 0:
            rec.end = self.pos


class _Holder:
    """Stands in the waiting list for a section that is not an element (a dl group)."""

    __slots__ = ("rec", "start")

    def __init__(self, rec: _Rec) -> None:
        self.rec = rec
        self.start = -1


_OPENERS = {_BLOCK: "open_block", _HEADING: "open_heading", _LIST: "open_list",
            _LI: "open_li", _DL: "open_dl", _DT: "open_dt", _DD: "open_dd",
            _TABLE: "open_table", _TGROUP: "open_tgroup", _TR: "open_tr",
            _CELL: "open_cell", _CAPTION: "open_caption", _PRE: "open_pre",
            _QUOTE: "open_quote"}
_CLOSERS = {k: v.replace("open_", "close_") for k, v in _OPENERS.items()}


def _span_text(walk: _Walker, start: int, end: int) -> str:
    """Text already emitted in [start, end) (only called for short heading spans)."""
    out: list[str] = []
    pos = walk.pos
    for piece in reversed(walk.parts):
        if pos <= start:
            break
        out.append(piece)
        pos -= len(piece)
    joined = "".join(reversed(out))
    return " ".join(joined[start - pos:end - pos].split())


def _is_boiler(key: str) -> bool:
    words = _CAMEL.sub(r"\1-\2", key).lower()
    if _BOILER_WORDS.search(words):
        return True
    return any(tok in _BOILER_TOKENS for tok in key.lower().split())


def _led_by_comments_heading(tag) -> bool:
    """A block whose first element is a heading anchored as the comments section (httpd)."""
    from bs4 import Tag
    for child in tag.contents:
        if type(child) is Tag:
            if child.name not in _LEVEL_HEADING:
                return False
            ids = [child.attrs.get("id")] + [a.attrs.get("id") or a.attrs.get("name")
                                             for a in child.contents if type(a) is Tag]
            return any(isinstance(i, str) and _COMMENTS_ID.match(i) for i in ids)
        if not child.isspace():
            return False
    return False


# --- sections --------------------------------------------------------------------------------

def _sections(walk: _Walker, text: str, title: str, stem: str) -> list[Section]:
    end_of_text = len(text)
    heads = [h for h in walk.headings if h.start >= 0 and h.label]
    has_h1 = any(h.level == _LEVEL_HEADING["h1"] for h in heads)
    prefix = () if has_h1 or not title else (title,)
    orphan = (title,) if title else ((heads[0].label,) if heads else (stem,))
    paths: dict[int, tuple[str, ...]] = {}
    scopes = _heading_scopes(heads, end_of_text, prefix, paths)
    out = []
    for h, end in scopes:
        while end > h.end and text[end - 1].isspace():
            end -= 1  # the blank line before the next heading
        out.append(Section(h.start, end, h.level, "section", paths[id(h)]))
    blocks = sorted((r for r in walk.recs if r.start >= 0 and r.end > r.start),
                    key=lambda r: r.start)
    # Sweep: the innermost heading scope holding each block's start gives its path.
    stack: list[tuple[int, tuple[str, ...]]] = []
    i = 0
    for rec in blocks:
        if rec.parent is not None:
            continue  # rows and items take their container's path below
        while i < len(scopes) and scopes[i][0].start <= rec.start:
            h, end = scopes[i]
            while stack and stack[-1][0] <= h.start:
                stack.pop()
            stack.append((end, paths[id(h)]))
            i += 1
        while stack and stack[-1][0] <= rec.start:
            stack.pop()
        path = stack[-1][1] if stack else orphan
        if rec.kind == "table" and rec.label:
            path = path + (rec.label,)
        paths[id(rec)] = path
    for rec in blocks:
        path = paths[id(rec.parent)] if rec.parent is not None else paths[id(rec)]
        out.append(Section(rec.start, rec.end, rec.level, rec.kind, path, rec.context))
    return out


def _heading_scopes(heads: list[_Rec], end_of_text: int, prefix: tuple[str, ...],
                    paths: dict[int, tuple[str, ...]]) -> list[tuple[_Rec, int]]:
    """Each heading's scope end: the next heading of the same or higher rank, the block that
    bounds it, and its parent heading's end, whichever comes first; so scopes nest."""
    out: list[list] = []
    stack: list[list] = []  # [rec, end] of the open scopes, ranks strictly increasing
    for h in heads:
        while stack and (stack[-1][0].level <= h.level or stack[-1][1] <= h.start):
            top = stack.pop()
            if top[0].level <= h.level:
                top[1] = min(top[1], h.start)
        end = h.bound if h.bound is not None else end_of_text
        if stack:
            end = min(end, stack[-1][1])
            paths[id(h)] = paths[id(stack[-1][0])] + (h.label,)
        else:
            paths[id(h)] = prefix + (h.label,)
        entry = [h, max(end, h.end)]
        stack.append(entry)
        out.append(entry)
    return [(h, end) for h, end in out]
