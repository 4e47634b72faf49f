"""PowerPoint (`.pptx`): the slides in presentation order, each one block of text: its title,
its shapes in reading order, its tables, and its speaker notes.

The slides are those `ppt/presentation.xml` lists in `p:sldIdLst`, through its relationships
(the part names say nothing of the order). The canonical text is one block per slide, blocks
separated by a blank line, no blank line inside a block:

- the slide's title (its first `title` or `ctrTitle` placeholder, paragraphs joined by a space)
  is the block's first line;
- then the other shapes in reading order: top to bottom, then left to right, by their `a:off`
  (a placeholder that does not say where it is sits where its slide layout's or master's
  placeholder does); a group (`p:grpSp`) is read where the group is, its shapes in the same
  order inside it, their offsets taken through the group's transform; groups nested deeper
  than `MAX_GROUP_DEPTH` are left out with a warning;
- a text body gives a line per paragraph (a line break inside one starts a new line); a
  bulleted paragraph is a `- ` line indented two spaces per level (`a:pPr lvl`). A paragraph
  is bulleted when its own `a:pPr`, the shape's list style, or the list style of the layout's
  or master's placeholder it inherits from says so (`a:buChar`, `a:buAutoNum`, `a:buBlip`:
  yes; `a:buNone`: no), else when the shape is a body placeholder (whose master style bullets);
- a table (`a:tbl` in a `p:graphicFrame`) is a line per row, `| cell | cell |`, cell text
  with whitespace collapsed and `|` escaped as `\\|`; merged cells are resolved into the grid:
  a cell covered by a horizontal (`hMerge`) or vertical (`vMerge`) merge repeats the text of
  the cell that covers it, so every row reads alone; empty rows are left out, and the first
  row left is the header;
- a picture, chart or other graphic frame with alt text (`p:cNvPr descr`) is a line
  `[image: alt text]`; without alt text it gives nothing;
- the speaker notes (the slide's notes slide, the text of its body placeholder: not the slide
  image, slide number, date, header or footer) follow a line `Notes:` at the end of the block.

Left out: hidden slides (`show="0"`, counted in the document meta as `hidden_slides`), the
slide-number, date, footer and header placeholders of a slide (boilerplate repeated on every
slide), empty paragraphs, shapes without text (connectors, pictures without alt text), the text
of SmartArt diagrams and of charts (it lives in other parts: only their alt text is read), and
what slide layouts and masters show (logos, footers).

Pages: slide n is page n, numbered as PowerPoint numbers them (every slide of `p:sldIdLst`,
hidden ones included). `page_starts[n - 1]` is where slide n's block begins; a slide with no
block (hidden, unreadable, or with no text) is an empty page that begins where the next block
does (or at the end of the text), so `ParsedDocument.pages_of`, which takes the last of equal
starts, never names it: chunks carry the real number of the slide they come from.

Sections: a `slide` per block (path: the deck's title and the slide's title, or `Slide N` when
it has none; the title itself when it is the deck's), its title line glued to what follows by
the section tree. A chunk always starts at a slide (`ParsedDocument.chunk_starts`): small
slides are never packed together, so every chunk holds one slide or a part of one and its path
and page are that slide's (a slide too big for the budget is split inside, as any section). Inside it: a `paragraph` per paragraph that is not bulleted, a `list` per
run of bulleted paragraphs with an `item` for each (an item spans the items of deeper levels
that follow it, which form a nested `list`), an `image` per alt-text line, a `table` whose
context is its header row with a `header` and one `row` per data row (numbered in the meta),
and a `notes` section from the `Notes:` line to the block's end, holding the notes' paragraphs
and lists. The deck's title is `docProps/core.xml`'s `dc:title` (unless it is PowerPoint's
default, "PowerPoint Presentation"), else the first shown slide's title, else the file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Callable, Iterator

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.text.tables import PIPE, table_facts

from .ooxml import NS, Package

# Section levels, a total order: slides above their notes above blocks above items and rows.
LEVEL_SLIDE, LEVEL_NOTES, LEVEL_TABLE, LEVEL_LIST = 90, 80, 60, 50
LEVEL_PARAGRAPH, LEVEL_ITEM, LEVEL_ROW = 30, 20, 10

#: groups nested deeper than this are left out (a hostile file may nest thousands)
MAX_GROUP_DEPTH = 32
#: the deepest bullet level PowerPoint has (`lvl` 0..8)
MAX_LEVEL = 8

_P, _A = f"{{{NS['p']}}}", f"{{{NS['a']}}}"
_R_ID = f"{{{NS['r']}}}id"
_MC_ALTERNATE = f"{{{NS['mc']}}}AlternateContent"
_MC_FALLBACK, _MC_CHOICE = f"{{{NS['mc']}}}Fallback", f"{{{NS['mc']}}}Choice"
_SP, _GRPSP, _PIC, _FRAME, _CXNSP = (f"{_P}{t}" for t in
                                     ("sp", "grpSp", "pic", "graphicFrame", "cxnSp"))
_A_P, _A_R, _A_FLD, _A_BR, _A_T, _A_PPR = (f"{_A}{t}" for t in
                                           ("p", "r", "fld", "br", "t", "pPr"))
_BU_NONE = f"{_A}buNone"
_BU_YES = frozenset(f"{_A}{t}" for t in ("buChar", "buAutoNum", "buBlip"))
_PH = f"*/{_P}nvPr/{_P}ph"  # a shape's placeholder element, under its nv*Pr
_CNVPR = f"*/{_P}cNvPr"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"

_TITLES = frozenset({"title", "ctrTitle"})
#: placeholders of a slide that repeat on every slide (slide number, date, footer, header)
_BOILERPLATE = frozenset({"sldNum", "dt", "ftr", "hdr"})
#: placeholder types whose text the master's body style bullets (no type is `obj`)
_BODY = frozenset({None, "obj", "body"})
#: dc:title values that PowerPoint writes by itself
_DEFAULT_TITLES = frozenset({"powerpoint presentation", "powerpoint-präsentation",
                             "présentation powerpoint"})
_TRUE = ("1", "true")
#: a slide is never merged with the slides before it: one slide per chunk (issue 41: merged
#: small slides took the first one's path and page, and LlamaIndex's slide-per-document
#: reading ranked better on decks; docs/formats-office.md)
_CHUNK_STARTS = frozenset({"slide"})
#: control characters dropped from text; vertical tab, form feed and CR are line breaks
_CONTROLS = {**{c: None for c in range(32) if c not in (9, 10)}, 11: "\n", 12: "\n", 13: "\n",
             127: None}
_SPACES = re.compile(r"\s+")


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse the bytes of a `.pptx` (or `.pptm`, `.ppsx`, `.potx`) into slide sections."""
    pkg = Package(data, source=source, fmt="pptx")
    main = next((t for kind, t in pkg.rels("").values() if kind == "officeDocument"),
                "ppt/presentation.xml")
    if main not in pkg:
        raise ParseError(source, "not a PowerPoint file: no presentation part")
    pres = pkg.xml(main)
    if pres.tag != f"{_P}presentation":
        raise ParseError(source, f"not a PowerPoint file we can read: its presentation part is "
                                 f"{pres.tag!r} (Strict Open XML is not read; save it as a "
                                 f"PowerPoint Presentation)")
    rels = pkg.rels(main)
    parts = [rels.get(sid.get(_R_ID, ""), ("", ""))
             for sid in pres.iterfind(f"{_P}sldIdLst/{_P}sldId")]
    deck = _Deck(pkg)
    for number, (kind, part) in enumerate(parts, 1):
        deck.add_slide(number, part if kind == "slide" else "")
    return deck.document(source, _core_title(pkg))


def _core_title(pkg: Package) -> str:
    """`dc:title` of the core properties, unless empty or PowerPoint's own default."""
    core = next((t for kind, t in pkg.rels("").values() if kind == "core-properties"),
                "docProps/core.xml")
    if core not in pkg:
        return ""
    element = pkg.xml(core).find(_DC_TITLE)
    title = _SPACES.sub(" ", (element.text or "") if element is not None else "").strip()
    return "" if title.lower() in _DEFAULT_TITLES else title


# -- the text of one slide ---------------------------------------------------------------------
class _Block:
    """The lines of one slide's block and its sections, at offsets from the block's start."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        #: (start, end, level, kind, context, meta)
        self.sections: list[tuple[int, int, int, str, str, tuple]] = []

    def line(self, text: str) -> tuple[int, int]:
        """Append one line; its (start, end) without the newline."""
        start = self.pos
        self.parts.append(text)
        self.parts.append("\n")
        self.pos += len(text) + 1
        return start, start + len(text)

    def add(self, start: int, end: int, level: int, kind: str, context: str = "",
            meta: tuple = ()) -> None:
        self.sections.append((start, end, level, kind, context, meta))

    def mark(self) -> tuple[int, int, int]:
        return len(self.parts), self.pos, len(self.sections)

    def rollback(self, mark: tuple[int, int, int]) -> None:
        del self.parts[mark[0]:]
        self.pos = mark[1]
        del self.sections[mark[2]:]


@dataclass(slots=True)
class _Bullets:
    """Whether the paragraphs of one text body are bulleted, level by level: the list styles
    it inherits (its own first), then a default."""

    styles: list[Any] = field(default_factory=list)  # a:lstStyle elements (or None)
    default: bool = False
    memo: dict[int, bool] = field(default_factory=dict)

    def at(self, ppr: Any, level: int) -> bool:
        own = _bullet_of(ppr)
        if own is not None:
            return own
        if level not in self.memo:
            tag = f"{_A}lvl{level + 1}pPr"
            found = (_bullet_of(s.find(tag)) for s in self.styles if s is not None)
            self.memo[level] = next((b for b in found if b is not None), self.default)
        return self.memo[level]


def _bullet_of(ppr: Any) -> bool | None:
    """What a paragraph's properties say of its bullet: yes, no, or nothing (None)."""
    if ppr is None:
        return None
    for child in ppr:
        if child.tag == _BU_NONE:
            return False
        if child.tag in _BU_YES:
            return True
    return None


def _text_body(block: _Block, body: Any, bullets: _Bullets) -> None:
    """A line per paragraph: `paragraph` sections, and `list` sections for runs of bullets."""
    run: list[tuple[int, int, int]] = []  # (start, end, level) of the bulleted lines so far
    for p in body.iterfind(_A_P):
        lines = [ln.rstrip() for ln in _paragraph_text(p).split("\n")]
        lines = [ln for ln in lines if ln.strip()]
        if not lines:
            continue
        ppr = p.find(_A_PPR)
        level = _level(ppr)
        if bullets.at(ppr, level):
            indent = "  " * level
            start, end = block.line(f"{indent}- {lines[0].strip()}")
            for more in lines[1:]:
                end = block.line(f"{indent}  {more.strip()}")[1]
            run.append((start, end, level))
            continue
        _list_sections(block, run)
        run = []
        start, end = block.line(lines[0])
        for more in lines[1:]:
            end = block.line(more)[1]
        block.add(start, end, LEVEL_PARAGRAPH, "paragraph")
    _list_sections(block, run)


def _level(ppr: Any) -> int:
    try:
        return min(max(int(ppr.get("lvl", 0)), 0), MAX_LEVEL) if ppr is not None else 0
    except ValueError:
        return 0


def _list_sections(block: _Block, items: list[tuple[int, int, int]]) -> None:
    """A `list` over a run of bulleted lines, an `item` per line holding the deeper lines
    after it, which form a nested `list` (nesting is at most `MAX_LEVEL` deep)."""
    if not items:
        return
    block.add(items[0][0], items[-1][1], LEVEL_LIST, "list")
    k = 0
    while k < len(items):
        m = k + 1
        while m < len(items) and items[m][2] > items[k][2]:
            m += 1
        block.add(items[k][0], items[m - 1][1], LEVEL_ITEM, "item")
        _list_sections(block, items[k + 1:m])
        k = m


def _paragraph_text(p: Any) -> str:
    """The text of an `a:p`: its runs and fields, `a:br` as a newline, control characters
    dropped."""
    out: list[str] = []
    for el in _unwrapped(p):
        tag = el.tag
        if tag == _A_R or tag == _A_FLD:
            t = el.find(_A_T)
            if t is not None and t.text:
                out.append(t.text)
        elif tag == _A_BR:
            out.append("\n")
    return "".join(out).translate(_CONTROLS)


def _unwrapped(parent: Any) -> Iterator[Any]:
    """The children of an element, those of an `mc:AlternateContent` in its place (its
    fallback, the form every reader understands, else its first choice)."""
    for el in parent:
        if el.tag == _MC_ALTERNATE:
            alt = el.find(_MC_FALLBACK)
            if alt is None:
                alt = el.find(_MC_CHOICE)
            if alt is not None:
                yield from alt
        else:
            yield el


def _table(block: _Block, tbl: Any) -> None:
    """Rows as `| a | b |` lines; a `table` section with the header row as its context."""
    grid: list[list[str]] = []
    for tr in tbl.iterfind(f"{_A}tr"):
        row: list[str] = []
        above = grid[-1] if grid else []
        for c, tc in enumerate(tr.iterfind(f"{_A}tc")):
            if tc.get("hMerge") in _TRUE and row:
                row.append(row[-1])
            elif tc.get("vMerge") in _TRUE and c < len(above):
                row.append(above[c])
            else:
                text = " ".join(_paragraph_text(p) for p in tc.iterfind(f"{_A}txBody/{_A_P}"))
                row.append(_SPACES.sub(" ", text).strip().replace("|", "\\|"))
        grid.append(row)
    rows = [r for r in grid if any(r)]
    if not rows:
        return
    width = max(len(r) for r in rows)
    texts = ["| " + " | ".join(r + [""] * (width - len(r))) + " |" for r in rows]
    lines = [block.line(t) for t in texts]
    block.add(lines[0][0], lines[-1][1], LEVEL_TABLE, "table", texts[0],
              table_facts(PIPE, texts[0]))
    if len(lines) > 1:
        block.add(*lines[0], LEVEL_ROW, "header")
    for n, (start, end) in enumerate(lines[1:], 1):
        block.add(start, end, LEVEL_ROW, "row", "", (("row", n), ("row_start", n),
                                                    ("row_end", n)))


def _alt_text(block: _Block, shape: Any) -> None:
    """`[image: alt text]` for a picture or graphic frame that has alt text."""
    nv = shape.find(_CNVPR)
    descr = _SPACES.sub(" ", (nv.get("descr") or "") if nv is not None else "")
    descr = descr.translate(_CONTROLS).strip()
    if descr:
        block.add(*block.line(f"[image: {descr}]"), LEVEL_PARAGRAPH, "image")


# -- positions and inheritance -----------------------------------------------------------------
def _offset(xfrm: Any) -> tuple[float, float] | None:
    off = xfrm.find(f"{_A}off") if xfrm is not None else None
    if off is None:
        return None
    try:
        return float(off.get("x", 0)), float(off.get("y", 0))
    except ValueError:
        return None


def _xfrm(shape: Any) -> Any:
    """The transform of a shape (a graphic frame keeps it outside its shape properties)."""
    if shape.tag == _FRAME:
        return shape.find(f"{_P}xfrm")
    return shape.find(f"{_P}spPr/{_A}xfrm")


def _master_type(ph_type: str | None) -> str:
    """The master placeholder a layout placeholder of this type inherits from."""
    if ph_type in _TITLES:
        return "title"
    return ph_type if ph_type in _BOILERPLATE else "body"


@dataclass(frozen=True, slots=True)
class _Placeholder:
    offset: tuple[float, float] | None
    styles: Any  # its a:lstStyle, or None


class _Layouts:
    """The placeholders of slide layouts and masters (where they sit, their list styles),
    read once per part: a slide's placeholder that says neither inherits them."""

    def __init__(self, pkg: Package) -> None:
        self.pkg = pkg
        self.parts: dict[str, dict[tuple[str, str | None], _Placeholder]] = {}
        self.masters: dict[str, str] = {}

    def placeholders(self, part: str) -> dict[tuple[str, str | None], _Placeholder]:
        if part not in self.parts:
            found: dict[tuple[str, str | None], _Placeholder] = {}
            if part in self.pkg:
                for sp in self.pkg.xml(part).iter(_SP):
                    ph = sp.find(_PH)
                    if ph is None:
                        continue
                    info = _Placeholder(_offset(_xfrm(sp)), sp.find(f"{_P}txBody/{_A}lstStyle"))
                    found.setdefault(("idx", ph.get("idx", "0")), info)
                    found.setdefault(("type", ph.get("type")), info)
                    found.setdefault(("master", _master_type(ph.get("type"))), info)
            self.parts[part] = found
        return self.parts[part]

    def master(self, layout: str) -> str:
        if layout not in self.masters:
            self.masters[layout] = next((t for kind, t in self.pkg.rels(layout).values()
                                         if kind == "slideMaster"), "")
        return self.masters[layout]

    def chain(self, layout: str, ph: Any) -> list[_Placeholder]:
        """The layout's and the master's placeholders that a slide's placeholder inherits
        from (by index, else by type; the master's by type)."""
        if not layout:
            return []
        ph_type = ph.get("type")
        mine = self.placeholders(layout)
        out = [p for p in (mine.get(("idx", ph.get("idx", "0"))) or mine.get(("type", ph_type)),)
               if p is not None]
        master = self.master(layout)
        if master:
            p = self.placeholders(master).get(("master", _master_type(ph_type)))
            if p is not None:
                out.append(p)
        return out


Transform = Callable[[tuple[float, float]], tuple[float, float]]


def _group_transform(outer: Transform, xfrm: Any) -> Transform:
    """Child offsets of a group to slide offsets: the group maps its child extent (`chOff`,
    `chExt`) onto its own (`off`, `ext`), inside its parent's transform."""
    def num(tag: str, attr: str, default: float) -> float:
        el = xfrm.find(f"{_A}{tag}") if xfrm is not None else None
        try:
            return float(el.get(attr, default)) if el is not None else default
        except ValueError:
            return default

    ox, oy, chx, chy = num("off", "x", 0), num("off", "y", 0), num("chOff", "x", 0), num(
        "chOff", "y", 0)
    cx, cy, chcx, chcy = num("ext", "cx", 1), num("ext", "cy", 1), num("chExt", "cx", 0), num(
        "chExt", "cy", 0)
    sx = cx / chcx if chcx > 0 else 1.0
    sy = cy / chcy if chcy > 0 else 1.0
    return lambda p: outer((ox + (p[0] - chx) * sx, oy + (p[1] - chy) * sy))


def _identity(p: tuple[float, float]) -> tuple[float, float]:
    return p


# -- the deck ----------------------------------------------------------------------------------
class _Deck:
    """The canonical text as slides are added, each slide's block start (None: no block)."""

    def __init__(self, pkg: Package) -> None:
        self.pkg = pkg
        self.layouts = _Layouts(pkg)
        self.parts: list[str] = []
        self.pos = 0
        self.starts: list[int | None] = []
        #: (number, title, start, end, sections at absolute offsets) of each block
        self.blocks: list[tuple[int, str, int, int, list[tuple]]] = []
        self.hidden = 0
        self.seen: set[str] = set()
        #: numbers of the slides whose part is missing, or was listed before (left out)
        self.missing: list[int] = []
        self.repeated: list[int] = []
        self.warnings: list[str] = []
        self.too_deep = False

    def add_slide(self, number: int, part: str) -> None:
        block, title = self._slide(number, part)
        if block is None or not block.parts:
            self.starts.append(None)
            return
        if self.pos:
            self.parts.append("\n")  # the blank line between blocks
            self.pos += 1
        base = self.pos
        self.parts.extend(block.parts)
        self.pos += block.pos
        self.starts.append(base)
        sections = [(base + s, base + e, *rest) for s, e, *rest in block.sections]
        self.blocks.append((number, title, base, base + block.pos - 1, sections))

    def _slide(self, number: int, part: str) -> tuple[_Block | None, str]:
        if not part or part not in self.pkg:
            self.missing.append(number)
            return None, ""
        if part in self.seen:  # listed twice (a damaged or hostile file): read once
            self.repeated.append(number)
            return None, ""
        self.seen.add(part)
        root = self.pkg.xml(part)
        if root.get("show") in ("0", "false"):
            self.hidden += 1
            return None, ""
        tree = root.find(f"{_P}cSld/{_P}spTree")
        if tree is None:
            return None, ""
        rels = self.pkg.rels(part)
        layout = next((t for kind, t in rels.values() if kind == "slideLayout"), "")
        shapes = self._ordered(tree, layout, _identity, 0)
        title_shape = next((s for s in shapes if s.tag == _SP and _ph_type(s) in _TITLES), None)
        title = ""
        if title_shape is not None:
            paras = title_shape.iterfind(f"{_P}txBody/{_A_P}")
            title = _SPACES.sub(" ", " ".join(_paragraph_text(p) for p in paras)).strip()
        block = _Block()
        if title:
            block.line(title)
        for shape in shapes:
            if shape is not title_shape:
                self._shape(block, shape, layout)
        notes = next((t for kind, t in rels.values() if kind == "notesSlide"), "")
        if notes and notes in self.pkg:
            self._notes(block, notes)
        return block, title

    def _ordered(self, tree: Any, layout: str, transform: Transform, depth: int) -> list[Any]:
        """The shapes under `tree` in reading order, groups read in place, recursively."""
        items: list[tuple[float, float, int, list[Any]]] = []
        last = (0.0, 0.0)  # a shape placed nowhere stays after the one before it
        for i, el in enumerate(_unwrapped(tree)):
            tag = el.tag
            if tag == _GRPSP:
                if depth >= MAX_GROUP_DEPTH:
                    if not self.too_deep:
                        self.warnings.append(f"groups nested more than {MAX_GROUP_DEPTH} deep "
                                             f"left out")
                        self.too_deep = True
                    continue
                xfrm = el.find(f"{_P}grpSpPr/{_A}xfrm")
                off = _offset(xfrm)
                pos = transform(off) if off is not None else last
                inner = _group_transform(transform, xfrm)
                items.append((pos[1], pos[0], i, self._ordered(el, layout, inner, depth + 1)))
            elif tag in (_SP, _PIC, _FRAME, _CXNSP):
                off = _offset(_xfrm(el))
                if off is not None:
                    pos = transform(off)
                else:  # a placeholder sits where its layout's (or master's) does
                    ph = el.find(_PH)
                    chain = self.layouts.chain(layout, ph) if ph is not None else []
                    inherited = next((p.offset for p in chain if p.offset is not None), None)
                    pos = transform(inherited) if inherited is not None else last
                items.append((pos[1], pos[0], i, [el]))
            else:
                continue
            last = (pos[0], pos[1])
        items.sort(key=lambda t: t[:3])
        return [shape for *_, shapes in items for shape in shapes]

    def _shape(self, block: _Block, shape: Any, layout: str) -> None:
        tag = shape.tag
        if tag == _SP:
            ph = shape.find(_PH)
            ph_type = ph.get("type") if ph is not None else None
            if ph_type in _BOILERPLATE:
                return
            body = shape.find(f"{_P}txBody")
            if body is None:
                return
            styles = [body.find(f"{_A}lstStyle")]
            if ph is not None:
                styles += [p.styles for p in self.layouts.chain(layout, ph)]
            _text_body(block, body, _Bullets(styles, ph is not None and ph_type in _BODY))
        elif tag == _FRAME:
            tbl = shape.find(f"{_A}graphic/{_A}graphicData/{_A}tbl")
            if tbl is not None:
                _table(block, tbl)
            else:
                _alt_text(block, shape)
        elif tag == _PIC:
            _alt_text(block, shape)

    def _notes(self, block: _Block, part: str) -> None:
        """`Notes:` and the text of the notes slide's body placeholders, as a `notes`
        section; nothing when they hold no text."""
        tree = self.pkg.xml(part).find(f"{_P}cSld/{_P}spTree")
        if tree is None:
            return
        mark = block.mark()
        start = block.line("Notes:")[0]
        for sp in tree.iter(_SP):
            body = sp.find(f"{_P}txBody")
            if body is not None and _ph_type(sp) == "body":
                _text_body(block, body, _Bullets([body.find(f"{_A}lstStyle")]))
        if len(block.sections) == mark[2]:  # no text: no notes
            block.rollback(mark)
            return
        block.add(start, block.pos - 1, LEVEL_NOTES, "notes")

    def document(self, source: str, core_title: str) -> ParsedDocument:
        text = "".join(self.parts)
        first = self.blocks[0][1] if self.blocks else ""
        deck = core_title or first or PurePath(source).name or source
        sections: list[Section] = []
        for number, title, start, end, inner in self.blocks:
            path = (deck,) if title == deck else (deck, title or f"Slide {number}")
            sections.append(Section(start, end, LEVEL_SLIDE, "slide", path))
            sections.extend(Section(s, e, level, kind, path, context, meta)
                            for s, e, level, kind, context, meta in inner)
        page_starts: list[int] = []
        following = len(text)
        for start in reversed(self.starts):  # an empty page starts where the next one does
            following = start if start is not None else following
            page_starts.append(following)
        page_starts.reverse()
        meta = (("slides", len(self.starts)), ("hidden_slides", self.hidden))
        warnings = [*self.warnings, *_numbered("part missing", self.missing),
                    *_numbered("part listed before, left out", self.repeated)]
        return ParsedDocument(
            source=source, format="pptx", text=text, sections=tuple(sections), title=deck,
            page_starts=tuple(page_starts) or None, warnings=tuple(warnings), meta=meta,
            prose=True, line_numbers=False, views=(("row", "table"),),
            chunk_starts=_CHUNK_STARTS)


def _numbered(what: str, numbers: list[int]) -> list[str]:
    """One warning for the slides `numbers` (the first ten named), or none."""
    if not numbers:
        return []
    named = ", ".join(map(str, numbers[:10]))
    more = f" and {len(numbers) - 10:,} more" if len(numbers) > 10 else ""
    return [f"slide{'s' if len(numbers) > 1 else ''} {named}{more}: {what}"]


def _ph_type(shape: Any) -> str | None:
    ph = shape.find(_PH)
    return ph.get("type") if ph is not None else None
