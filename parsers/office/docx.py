"""Word (`.docx`): the body of the document in reading order, with its heading, list and table
structure.

The canonical text is the body (`word/document.xml`) as a reader sees it, blocks separated
by a blank line:

- Headings come from paragraph styles: `Title`, `heading 1`-`heading 9`, any style based on
  one (the `w:basedOn` chain of `word/styles.xml`, built-in names being English in every
  language) and any `w:outlineLvl` of the paragraph or its styles (level 9 is body text). A
  numbered heading starts with its number (`1.2. Scope`) when the numbering format is one
  that can be computed (decimal, letters, Roman); else it is its text alone. A heading leads
  a `section` up to the next heading of the same or a higher rank; its `path` is the heading
  path, under the document title when there is one (a `Title` heading equal to it is not
  repeated). Headings are only headings in the body: in a cell, a text box or a note they
  are text.
- Paragraphs are `paragraph` sections; a paragraph holding only a display equation is an
  `equation` section. List paragraphs (`w:numPr` of the paragraph or its style, or a
  `List Bullet`/`List Number` style without one; `w:numId` 0 means "not a list") are
  `- item` lines, two spaces of indent per level, `N.` (the item's count at its level) in
  place of `-` when the level's format is decimal; consecutive ones make a `list` section
  of `item` sections.
- Tables are pipe rows, one line per row (`| a | b |`, whitespace collapsed, `|` escaped),
  a `table` section whose `context` is its first row, that row a `header` section and every
  other a `row` section (a one-row table is a `table` alone). Merged cells are resolved on
  the grid: a cell spanning columns (`w:gridSpan`, legacy `w:hMerge`) repeats its text in
  every column it covers, a vertical continuation (`w:vMerge`) takes the text of the cell
  above, so every column of every row says what a reader sees there (the row view labels
  each value with its column); `w:gridBefore`/`w:gridAfter` are empty cells; rows with no
  text are left out. A table in a cell is flattened into the cell (cells joined by `, `,
  rows by `; `), however deep: only the outermost table has rows.
- Text boxes (`w:txbxContent` in DrawingML or VML shapes) follow the paragraph that anchors
  them, as paragraphs of their own. An `mc:AlternateContent` is read once: its first
  `mc:Choice`, its `mc:Fallback` only when it has none (Word writes the same box in both).
- Inline: content controls (`w:sdt`), hyperlinks, smart tags and custom XML read as if they
  were not there; `w:tab` is a tab, `w:br`/`w:cr` a line break; tracked changes are read
  as accepted (`w:ins`, `w:moveTo` in; `w:del`, `w:moveFrom`, deleted rows out); a field
  shows its result, never its instruction (`w:instrText`; an instruction still open at the
  end of its paragraph is closed there, so a broken field cannot swallow the document).
  Horizontal whitespace runs are collapsed, lines stripped.
- Equations (OMML `m:oMath`): their text inline, linearised lightly (the `m:t` text, with
  the n-ary operator, delimiters, `/` for a fraction, `^`/`_` before a superscript or
  subscript and `√` for a root, which plain concatenation loses).
- Footnotes and endnotes: `[n]` at the reference, numbered together in the order of their
  first reference, and their text at the end under a `Footnotes` heading, one `[n] text`
  paragraph each.

Left out: comments (`word/comments.xml`: remarks on the text, not the text), headers and
footers (running boilerplate, as HTML's), deleted text, field instructions, images and their
alt text, embedded objects and `w:altChunk` parts.

Empty paragraphs are left out (a numbered one is still counted, as Word counts it). The
title is the core properties' `dc:title`, else the first `Title` paragraph's text. The
document's `meta` counts its tables, notes, text boxes and equations.
Every part is read through `ooxml.Package` (bounded, entities never resolved). The body is
streamed (`_body_children`): parsed a megabyte at a time, each of its children walked once it
is whole and then dropped, so time is linear in the part and memory holds one block's
elements, not the document's tree. At most `MAX_BODY` bytes (64 MiB) of its XML are read: a
longer body is cut after the last whole block before the bound, with one warning naming the
part and the bound, and the text before it is kept. The walk is iterative (an explicit
stack), and the XML parser refuses nesting deeper than 256 elements.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.text.tables import PIPE, table_facts

from .ooxml import NS, Package

W = "{%s}" % NS["w"]
_M = "{%s}" % NS["m"]
_MC = "{%s}" % NS["mc"]
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_STRICT_W = "http://purl.oclc.org/ooxml/wordprocessingml/main"

# Section levels, a total order: Title 100, heading n 100 - n, blocks, then rows and items.
_LEVEL_BLOCK, _LEVEL_CHILD = 50, 10
#: the most columns one cell may span, and empty cells before or after a row (Word: 63)
_MAX_SPAN = 63
#: the most steps followed up a `w:basedOn` chain (a cycle ends sooner)
_MAX_CHAIN = 32
#: the most bytes of the main part's XML read (a 127,000-word handbook's is 9 MB; 64 MiB is
#: some 400,000 paragraphs): past it the body is cut, with a warning (issue 44 item 6)
MAX_BODY = 64 * 1024 ** 2

_HEADING_NAME = re.compile(r"heading ([1-9])")
_LIST_NAME = re.compile(r"list (bullet|number)(?: ([2-9]))?")
_HSPACE = re.compile(r"[ \t]{2,}|\t")
#: elements never read: properties, deleted or instruction text, marks without text
_SKIP = frozenset(W + t for t in (
    "pPr", "rPr", "sectPr", "tblPr", "tblGrid", "trPr", "tcPr", "tblPrEx", "sdtPr", "sdtEndPr",
    "del", "moveFrom", "delText", "instrText", "delInstrText", "fldData", "commentReference",
    "annotationRef", "footnoteRef", "endnoteRef", "separator", "continuationSeparator",
    "bookmarkStart", "bookmarkEnd", "proofErr", "lastRenderedPageBreak", "object",
    "altChunk", "subDoc", "softHyphen", "commentRangeStart", "commentRangeEnd",
    "rt"))  # (w:rt: the phonetic guide above a ruby's base text, which is read)
_PPR = W + "pPr"
_CHARS = {W + "tab": "\t", W + "ptab": "\t", W + "br": "\n", W + "cr": "\n",
          W + "noBreakHyphen": "-"}


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse a Word document into its canonical text and sections."""
    pkg = Package(data, source=source, fmt="docx")
    warnings: list[str] = []
    main = _main_part(pkg)
    if main not in pkg:
        raise ParseError(source, f"part {main} is missing from the container")
    rels = {kind: target for kind, target in pkg.rels(main).values()}

    def part(name: str | None) -> Any:
        if name is None or name not in pkg:
            return None
        try:
            return pkg.xml(name)
        except ParseError as e:  # a damaged side part costs its feature, not the document
            warnings.append(f"{name} not read: {e.reason}")
            return None

    def related(kind: str, default: str) -> Any:
        return part(rels.get(kind, default))

    styles = _Styles(related("styles", "word/styles.xml"))
    numbering = _Numbering(related("numbering", "word/numbering.xml"), styles)
    walker = _Walker(styles, numbering)
    blocks = walker.body(_body_children(pkg, main, warnings))
    notes = walker.notes(related("footnotes", "word/footnotes.xml"),
                         related("endnotes", "word/endnotes.xml"))
    core = next((t for k, t in pkg.rels("").values() if k == "core-properties"),
                "docProps/core.xml")
    title = _core_title(part(core)) or next((b[2] for b in blocks
                                             if b[0] == "heading" and b[1] == 0), "")
    if notes:
        blocks.append(("heading", 1, "Footnotes"))
        blocks.extend(("paragraph", f"[{n}] {text}".rstrip()) for n, text in notes)
    text, sections, tables = _render(blocks, (title,) if title else ())
    meta = (("tables", tables), ("footnotes", len(notes)),
            ("text_boxes", walker.boxes), ("equations", walker.equations))
    return ParsedDocument(source=source, format="docx", text=text, sections=tuple(sections),
                          title=title, warnings=tuple(warnings), meta=meta, prose=True,
                          line_numbers=False, views=(("row", "table"),))


def _body_children(pkg: Package, main: str, warnings: list[str]) -> Iterator[Any]:
    """The children of the main part's `w:body`, each once it is parsed whole, streamed:
    the part is inflated and parsed a megabyte at a time, and every child is cleared and
    dropped once the walker has moved past it, so memory holds one block's elements, not
    the document's. Past `MAX_BODY` bytes of XML the body ends after the last whole child
    read, with one warning naming the part and the bound."""
    from lxml import etree

    source = pkg.source
    stream = pkg.stream(main, MAX_BODY)
    # "end" events only (half the cost of "start" too): the body is found as the parent of
    # its first child to end
    parser = etree.XMLPullParser(events=("end",), resolve_entities=False,
                                 no_network=True, load_dtd=False, huge_tree=False,
                                 remove_comments=True, remove_pis=True)
    found: list[Any] = [None, None]  # the body, the root element

    def children() -> Iterator[Any]:
        body = found[0]
        for _, el in parser.read_events():
            parent = el.getparent()
            if parent is None:  # the root element, ended
                found[1] = el
                continue
            if parent is not body:
                if body is not None:
                    continue
                top = parent.getparent()
                if parent.tag != W + "body" or top is None or top.getparent() is not None:
                    continue
                body = found[0] = parent
            yield el

    done = None  # the child handed out last, dropped when the walker asks for the next
    try:
        for piece in stream:
            parser.feed(piece)
            for el in children():
                if done is not None:
                    _drop(found[0], done)
                done = el
                yield el
        if not stream.cut:
            parser.close()
            yield from children()
    except etree.XMLSyntaxError as e:
        raise ParseError(source, f"part {main} is not well-formed XML: {e}") from e
    bound = f"{stream.limit:,} bytes of XML, the bound on a Word body (MAX_BODY)"
    if found[0] is None:
        if stream.cut:
            raise ParseError(source, f"part {main}: no w:body in its first {bound}; not read "
                                     f"(a zip bomb?)")
        strict = found[1] is not None and _STRICT_W in str(found[1].tag)
        raise ParseError(source, "Strict Open XML documents are not read (save as a Word "
                                 "document)" if strict else f"{main} has no w:body")
    if stream.cut:
        warnings.append(f"{main} cut after {bound}: the text before it is kept")


def _drop(body: Any, child: Any) -> None:
    """Clear a body child and drop it, with any siblings before it."""
    child.clear()
    while child.getprevious() is not None:  # (len() of an lxml element counts: O(n))
        del body[0]
    body.remove(child)


def _main_part(pkg: Package) -> str:
    """The main document part, as the package's relationships name it."""
    for kind, target in pkg.rels("").values():
        if kind == "officeDocument" and target in pkg:
            return target
    return "word/document.xml"


def _core_title(core: Any) -> str:
    el = core.find(_DC_TITLE) if core is not None else None
    return " ".join((el.text or "").split()) if el is not None else ""


def _val(el: Any, child: str) -> str | None:
    """The `w:val` of `el`'s child `w:<child>`, or None."""
    c = el.find(W + child) if el is not None else None
    return c.get(W + "val") if c is not None else None


# --- styles and numbering ---------------------------------------------------------------

class _StyleInfo:
    __slots__ = ("rank", "num_id", "ilvl", "list_level")

    def __init__(self, rank: int | None, num_id: str | None, ilvl: int | None,
                 list_level: int | None) -> None:
        self.rank = rank              # 0 Title, 1-9 heading n, None body text
        self.num_id = num_id          # numbering given by the style chain
        self.ilvl = ilvl
        self.list_level = list_level  # a List Bullet/Number style's level, else None


class _Styles:
    """Paragraph styles of `word/styles.xml`, each resolved through its `w:basedOn` chain."""

    def __init__(self, root: Any) -> None:
        self.raw: dict[str, tuple[str, str | None, Any]] = {}  # id -> (name, basedOn, pPr)
        self.default = ""
        self.memo: dict[str, _StyleInfo] = {}
        if root is None:
            return
        for st in root.iter(W + "style"):
            if st.get(W + "type", "paragraph") != "paragraph":
                continue
            sid = st.get(W + "styleId", "")
            name = (_val(st, "name") or "").lower()
            self.raw[sid] = (" ".join(name.split()), _val(st, "basedOn"), st.find(W + "pPr"))
            if st.get(W + "default") in ("1", "true", "on") and not self.default:
                self.default = sid

    def info(self, sid: str | None) -> _StyleInfo:
        sid = sid if sid is not None else self.default
        got = self.memo.get(sid)
        if got is None:
            got = self.memo[sid] = self._resolve(sid)
        return got

    def _resolve(self, sid: str) -> _StyleInfo:
        rank = num_id = ilvl = list_level = None
        decided = False
        seen: set[str] = set()
        cur: str | None = sid
        while cur is not None and cur not in seen and len(seen) < _MAX_CHAIN:
            seen.add(cur)
            entry = self.raw.get(cur)
            if entry is None:
                break
            name, based, ppr = entry
            if not decided:
                m = _HEADING_NAME.fullmatch(name)
                outline = _val(ppr, "outlineLvl")
                if name == "title" or m:
                    rank, decided = (0 if name == "title" else int(m.group(1))), True
                elif outline is not None:
                    rank, decided = _outline_rank(outline), True
            num = ppr.find(W + "numPr") if ppr is not None else None
            if num is not None:
                num_id = num_id if num_id is not None else _val(num, "numId")
                ilvl = ilvl if ilvl is not None else _int(_val(num, "ilvl"))
            lm = _LIST_NAME.fullmatch(name)
            if lm and list_level is None:
                list_level = int(lm.group(2) or 1) - 1
            cur = based
        return _StyleInfo(rank, num_id, ilvl, list_level)

    def num_id_of(self, sid: str) -> str | None:
        """The numbering a numbering style (`w:numStyleLink`'s target) stands for."""
        entry = self.raw.get(sid)
        num = entry[2].find(W + "numPr") if entry is not None and entry[2] is not None else None
        return _val(num, "numId") if num is not None else None


def _outline_rank(val: str) -> int | None:
    n = _int(val)
    return n + 1 if n is not None and 0 <= n < 9 else None


def _int(val: str | None) -> int | None:
    try:
        return int(val) if val is not None else None
    except ValueError:
        return None


class _Lvl:
    __slots__ = ("start", "fmt", "text", "legal", "style")

    def __init__(self, el: Any) -> None:
        self.start = _int(_val(el, "start"))
        self.fmt = _val(el, "numFmt") or "decimal"
        self.text = _val(el, "lvlText")
        self.legal = _val(el, "isLgl") not in (None, "0", "false", "off")
        self.style = _val(el, "pStyle")


class _Numbering:
    """The list definitions of `word/numbering.xml` and the counters of the lists met so far
    (one set per abstract list, as Word continues a list across its `w:num`s, and one per
    `w:num` that restarts it with a `w:startOverride`)."""

    def __init__(self, root: Any, styles: _Styles) -> None:
        self.abstract: dict[str, dict[int, _Lvl]] = {}
        self.style_link: dict[str, str] = {}        # numbering style -> abstract id
        self.num_link: dict[str, str] = {}          # abstract id -> numbering style it uses
        self.nums: dict[str, tuple[str, dict[int, int], dict[int, _Lvl]]] = {}
        self.counters: dict[str, list[int | None]] = {}
        self.styles = styles
        if root is None:
            return
        for ab in root.iter(W + "abstractNum"):
            aid = ab.get(W + "abstractNumId", "")
            self.abstract[aid] = {_int(lv.get(W + "ilvl")) or 0: _Lvl(lv)
                                  for lv in ab.iter(W + "lvl")}
            if _val(ab, "styleLink"):
                self.style_link[_val(ab, "styleLink") or ""] = aid
            if _val(ab, "numStyleLink"):
                self.num_link[aid] = _val(ab, "numStyleLink") or ""
        for num in root.iter(W + "num"):
            starts, lvls = {}, {}
            for ov in num.iter(W + "lvlOverride"):
                k = _int(ov.get(W + "ilvl")) or 0
                if _int(_val(ov, "startOverride")) is not None:
                    starts[k] = _int(_val(ov, "startOverride"))
                if ov.find(W + "lvl") is not None:
                    lvls[k] = _Lvl(ov.find(W + "lvl"))
            self.nums[num.get(W + "numId", "")] = (_val(num, "abstractNumId") or "", starts, lvls)

    def levels(self, num_id: str) -> tuple[str, dict[int, _Lvl]]:
        aid, _, lvls = self.nums[num_id]
        if aid in self.num_link:  # the list's levels live with the numbering style's list
            linked = self.styles.num_id_of(self.num_link[aid])
            aid = self.style_link.get(self.num_link[aid]) or (
                self.nums[linked][0] if linked in self.nums else aid)
        return aid, {**self.abstract.get(aid, {}), **lvls}

    def level_of_style(self, num_id: str, style: str | None) -> int:
        if num_id in self.nums and style:
            for k, lv in self.levels(num_id)[1].items():
                if lv.style == style:
                    return k
        return 0

    def advance(self, num_id: str, ilvl: int) -> tuple[str, str | None, int]:
        """Count one paragraph of list `num_id` at level `ilvl`: its level's format, its
        number label as Word shows it (None when a format cannot be computed) and its
        count."""
        if num_id not in self.nums:
            return "bullet", None, 0
        aid, lvls = self.levels(num_id)
        starts = self.nums[num_id][1]
        key = f"n{num_id}" if starts else f"a{aid}"
        counters = self.counters.get(key)
        if counters is None:
            counters = self.counters[key] = [None] * 9
        start = [starts.get(k, (lvls[k].start if k in lvls else None)) for k in range(9)]
        cur = counters[ilvl]
        counters[ilvl] = (start[ilvl] if start[ilvl] is not None else 1) if cur is None \
            else cur + 1
        for k in range(ilvl + 1, 9):
            counters[k] = None
        # a level above never counted shows its start, and is still uncounted after
        shown = [c if c is not None else (s if s is not None else 1)
                 for c, s in zip(counters, start)]
        lvl, count = lvls.get(ilvl), shown[ilvl]
        if lvl is None:
            return "decimal", str(count), count
        if lvl.text is None or lvl.fmt in ("bullet", "none"):
            return lvl.fmt, None, count
        label = lvl.text
        for k in range(9):
            if f"%{k + 1}" in label:
                fmt = "decimal" if lvl.legal else (lvls[k].fmt if k in lvls else "decimal")
                number = _number(shown[k], fmt)
                if number is None:
                    return lvl.fmt, None, count
                label = label.replace(f"%{k + 1}", number)
        return lvl.fmt, label.strip() or None, count


def _number(n: int, fmt: str) -> str | None:
    if fmt == "decimal":
        return str(n)
    if fmt == "decimalZero":
        return f"{n:02d}"
    if n <= 0 or n > 3999:
        return None
    if fmt in ("lowerLetter", "upperLetter"):
        s = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)
        return s.upper() if fmt == "upperLetter" else s
    if fmt in ("lowerRoman", "upperRoman"):
        out = []
        for value, numeral in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"),
                               (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"),
                               (5, "V"), (4, "IV"), (1, "I")):
            while n >= value:
                out.append(numeral)
                n -= value
        return "".join(out) if fmt == "upperRoman" else "".join(out).lower()
    return None


# --- the walk ---------------------------------------------------------------------------

# A block is a tuple: ("heading", rank, text), ("paragraph", text), ("equation", text),
# ("item", depth, marker, text) or ("table", rows).
Block = tuple


class _Container:
    """Where finished blocks go: the body or a text box (kept as blocks), or a table cell or
    a note (flattened into one text when it closes)."""

    __slots__ = ("kind", "blocks")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.blocks: list[Block] = []


class _Para:
    __slots__ = ("pieces", "ppr", "container", "after", "display", "plain")

    def __init__(self, ppr: Any, container: _Container) -> None:
        self.pieces: list[str] = []
        self.ppr = ppr
        self.container = container
        self.after: list[Block] = []   # the blocks of text boxes anchored here
        self.display = False           # holds an m:oMathPara
        self.plain = False             # holds text outside equations


class _Table:
    __slots__ = ("rows", "row", "prev", "after")

    def __init__(self) -> None:
        self.rows: list[list[str]] = []
        self.row: list[tuple[str, int, str | None]] | None = None  # (text, span, merge)
        self.prev: list[str] = []      # the grid of the row above (vertical merges)
        self.after = 0                 # the open row's w:gridAfter


class _Walker:
    """Renders WordprocessingML block content (the body, a cell, a text box, a note) to
    blocks, one element at a time with an explicit stack."""

    def __init__(self, styles: _Styles, numbering: _Numbering) -> None:
        self.styles, self.numbering = styles, numbering
        self.containers: list[_Container] = []
        self.paras: list[_Para] = []
        self.tables: list[_Table] = []
        self.fields: list[bool] = []   # open complex fields: True while in the instruction
        self.instr = 0                 # how many of them are in their instruction
        self.note_ids: dict[tuple[str, str], int] = {}
        self.numbering_notes = True
        self.boxes = self.equations = 0
        self.enter: dict[str, Callable[[Any], tuple[Iterator, Callable | None] | None]] = {
            **{tag: _skip for tag in _SKIP},
            W + "p": self._p, W + "t": self._t, W + "fldChar": self._fld_char,
            W + "sym": self._sym, W + "footnoteReference": self._note_ref,
            W + "endnoteReference": self._note_ref, W + "tbl": self._tbl, W + "tr": self._tr,
            W + "tc": self._tc, W + "txbxContent": self._box,
            _MC + "AlternateContent": _alternate, _M + "oMathPara": self._math_para,
            _M + "oMath": self._math,
            **{tag: self._char for tag in _CHARS},
        }

    # -- entry points --

    def body(self, children: Iterator[Any]) -> list[Block]:
        """The blocks of the body, from its children (streamed: `_body_children`)."""
        return self._walk(children, _Container("body")).blocks

    def notes(self, footnotes: Any, endnotes: Any) -> list[tuple[int, str]]:
        """(number, text) of every referenced note, in number order."""
        parts = {"footnote": footnotes, "endnote": endnotes}
        by_id: dict[tuple[str, str], Any] = {}
        for kind, root in parts.items():
            if root is not None:
                for el in root.iter(W + kind):
                    by_id.setdefault((kind, el.get(W + "id", "")), el)
        self.numbering_notes = False  # a reference inside a note numbers nothing new
        out = []
        for key, n in sorted(self.note_ids.items(), key=lambda kv: kv[1]):
            el = by_id.get(key)
            text = _flat(self._run(el, _Container("note")).blocks, "\n") if el is not None \
                else ""
            out.append((n, text))
        return out

    def _run(self, root: Any, container: _Container) -> _Container:
        return self._walk(iter(root), container)

    def _walk(self, children: Iterator[Any], container: _Container) -> _Container:
        self.containers.append(container)
        enter = self.enter
        stack: list[tuple[Any, Iterator, Callable | None]] = [(None, children, None)]
        while stack:
            el, it, leave = stack[-1]
            for child in it:
                handler = enter.get(child.tag)
                if handler is None:  # a wrapper (run, hyperlink, w:sdt, w:ins, shape): in
                    if len(child):
                        stack.append((child, iter(child), None))
                        break
                    continue
                opened = handler(child)
                if opened is not None:
                    stack.append((child, *opened))
                    break
            else:
                stack.pop()
                if leave is not None:
                    leave(el)
        self.containers.pop()
        return container

    # -- paragraphs and inline content --

    def _p(self, el: Any) -> tuple[Iterator, Callable]:
        first = el[0] if len(el) else None  # (w:pPr comes first; find() is slower)
        ppr = first if first is not None and first.tag == _PPR else el.find(_PPR)
        self.paras.append(_Para(ppr, self.containers[-1]))
        return iter(el), self._end_p

    def _end_p(self, el: Any) -> None:
        para = self.paras.pop()
        if self.instr:  # an instruction never separated: closed with its paragraph
            self.fields = [f for f in self.fields if not f]
            self.instr = 0
        block = self._classify(para, _clean("".join(para.pieces)))
        blocks = para.container.blocks
        if block is not None:
            blocks.append(block)
        blocks.extend(para.after)

    def _classify(self, para: _Para, text: str) -> Block | None:
        ppr = para.ppr
        own_num = ppr.find(W + "numPr") if ppr is not None else None
        style_id = _val(ppr, "pStyle")
        info = self.styles.info(style_id)
        outline = _val(ppr, "outlineLvl")
        rank = _outline_rank(outline) if outline is not None else info.rank
        num_id = _val(own_num, "numId") if own_num is not None else None
        num_id = num_id if num_id is not None else info.num_id
        ilvl = _int(_val(own_num, "ilvl")) if own_num is not None else None
        if ilvl is None:
            ilvl = info.ilvl if info.ilvl is not None else \
                self.numbering.level_of_style(num_id or "", style_id)
        ilvl = min(max(ilvl, 0), 8)
        fmt, label, count = "", None, 0
        if num_id not in (None, "0"):  # Word counts a numbered paragraph even when empty
            fmt, label, count = self.numbering.advance(num_id, ilvl)
        if not text:
            return None
        if rank is not None and para.container.kind == "body":
            return "heading", rank, f"{label} {text}" if label else text
        if num_id not in (None, "0"):
            marker = f"{count}." if fmt in ("decimal", "decimalZero") else "-"
            return "item", ilvl, marker, text
        if num_id is None and info.list_level is not None:
            return "item", info.list_level, "-", text
        return ("equation" if para.display and not para.plain else "paragraph"), text

    def _t(self, el: Any) -> None:
        if self.paras and not self.instr and el.text:
            para = self.paras[-1]
            para.pieces.append(el.text)
            if not para.plain and not el.text.isspace():
                para.plain = True

    def _char(self, el: Any) -> None:
        if self.paras and not self.instr:
            self.paras[-1].pieces.append(_CHARS[el.tag])

    def _sym(self, el: Any) -> None:
        code = el.get(W + "char", "")
        try:
            n = int(code, 16)
        except ValueError:
            return
        # 0xF000-0xF0FF: a symbol font's own code page, not a Unicode character
        if self.paras and not self.instr and (0x20 <= n < 0xF000
                                                       or 0xF0FF < n < 0x110000):
            self.paras[-1].pieces.append(chr(n))
            self.paras[-1].plain = True

    def _fld_char(self, el: Any) -> None:
        kind = el.get(W + "fldCharType")
        if kind == "begin":
            self.fields.append(True)
            self.instr += 1
        elif kind == "separate" and self.fields and self.fields[-1]:
            self.fields[-1] = False
            self.instr -= 1
        elif kind == "end" and self.fields:
            self.instr -= self.fields.pop()

    def _note_ref(self, el: Any) -> None:
        if not self.paras or self.instr:
            return
        key = (el.tag[len(W):-len("Reference")], el.get(W + "id", ""))
        n = self.note_ids.get(key)
        if n is None and self.numbering_notes:
            n = self.note_ids[key] = len(self.note_ids) + 1
        if n is not None:
            self.paras[-1].pieces.append(f"[{n}]")
            self.paras[-1].plain = True

    def _math_para(self, el: Any) -> tuple[Iterator, None]:
        if self.paras:
            self.paras[-1].display = True
        return iter(el), None

    def _math(self, el: Any) -> None:
        if not self.paras or self.instr:
            return
        self.equations += 1
        para = self.paras[-1]
        text = _math_text(el)
        parent = el.getparent()
        if parent is not None and parent.tag == _M + "oMathPara" and el.getprevious() is not None:
            text = "\n" + text  # each equation of a display block on its line
        para.pieces.append(text)

    def _box(self, el: Any) -> tuple[Iterator, Callable]:
        self.boxes += 1
        self.containers.append(_Container("box"))
        return iter(el), self._end_box

    def _end_box(self, el: Any) -> None:
        box = self.containers.pop()
        if self.paras:  # after the paragraph that anchors it
            self.paras[-1].after.extend(box.blocks)
        else:
            self.containers[-1].blocks.extend(box.blocks)

    # -- tables --

    def _tbl(self, el: Any) -> tuple[Iterator, Callable]:
        self.tables.append(_Table())
        return iter(el), self._end_tbl

    def _end_tbl(self, el: Any) -> None:
        table = self.tables.pop()
        rows = [r for r in table.rows if any(r)]
        if rows:
            width = max(map(len, rows))
            self.containers[-1].blocks.append(
                ("table", [r + [""] * (width - len(r)) for r in rows]))

    def _tr(self, el: Any) -> tuple[Iterator, Callable] | None:
        if not self.tables:
            return iter(el), None
        trpr = el.find(W + "trPr")
        if trpr is not None and trpr.find(W + "del") is not None:
            return None  # a deleted row (tracked change): read as accepted
        table = self.tables[-1]
        table.row = [("", min(_int(_val(trpr, "gridBefore")) or 0, _MAX_SPAN), None)] \
            if _val(trpr, "gridBefore") else []
        table.after = min(_int(_val(trpr, "gridAfter")) or 0, _MAX_SPAN)
        return iter(el), self._end_tr

    def _end_tr(self, el: Any) -> None:
        table = self.tables[-1]
        grid: list[str] = []
        for text, span, merge in table.row or ():
            if merge == "v":
                col = len(grid)
                text = table.prev[col] if col < len(table.prev) else ""
            elif merge == "h":
                text = grid[-1] if grid else ""
            grid.extend([text] * span)
        grid.extend([""] * table.after)
        table.rows.append(grid)
        table.prev, table.row = grid, None

    def _tc(self, el: Any) -> tuple[Iterator, Callable]:
        if not self.tables or self.tables[-1].row is None:
            return iter(el), None
        self.containers.append(_Container("cell"))
        return iter(el), self._end_tc

    def _end_tc(self, el: Any) -> None:
        cell = self.containers.pop()
        tcpr = el.find(W + "tcPr")
        span = min(max(_int(_val(tcpr, "gridSpan")) or 1, 1), _MAX_SPAN)
        merge = None
        if tcpr is not None:
            vm = tcpr.find(W + "vMerge")
            hm = tcpr.find(W + "hMerge")
            if vm is not None and vm.get(W + "val", "continue") == "continue":
                merge = "v"
            elif hm is not None and hm.get(W + "val", "continue") == "continue":
                merge = "h"
            if tcpr.find(W + "cellDel") is not None:
                return
        row = self.tables[-1].row
        if row is not None:
            row.append((" ".join(_flat(cell.blocks, " ").split()), span, merge))


def _skip(el: Any) -> None:
    return None


def _alternate(el: Any) -> tuple[Iterator, None]:
    """An `mc:AlternateContent` read once: its first Choice, else its Fallback."""
    choice = el.find(_MC + "Choice")
    chosen = choice if choice is not None else el.find(_MC + "Fallback")
    return iter(() if chosen is None else (chosen,)), None


def _math_text(om: Any) -> str:
    """An OMML equation as one line of text: its `m:t` runs, with the few signs that its
    structure carries rather than its text."""
    from lxml import etree

    out: list[str] = []
    closers: list[str] = []
    for event, el in etree.iterwalk(om, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str):
            continue
        name = tag[len(_M):] if tag.startswith(_M) else ""
        if event == "start":
            if name == "t" or tag == W + "t":
                out.append(el.text or "")
            elif name == "nary":
                out.append(_math_chr(el, "naryPr", "chr", "\u222b"))
            elif name == "d":
                out.append(_math_chr(el, "dPr", "begChr", "("))
                closers.append(_math_chr(el, "dPr", "endChr", ")"))
            elif name == "rad":
                out.append("\u221a")
            elif name == "sup":
                out.append("^")
            elif name == "sub":
                out.append("_")
            elif name == "den":
                out.append("/")
        elif name == "d" and closers:
            out.append(closers.pop())
        elif name == "fName":
            out.append(" ")
    return " ".join("".join(out).split())


def _math_chr(el: Any, pr: str, child: str, default: str) -> str:
    props = el.find(_M + pr)
    c = props.find(_M + child) if props is not None else None
    return c.get(_M + "val", default) if c is not None else default


def _clean(s: str) -> str:
    """A paragraph's text: each line stripped, runs of spaces and tabs made one (a tab if
    they hold one), empty lines dropped."""
    if "\t" not in s and "  " not in s and "\n" not in s:
        return s.strip()
    lines = (_HSPACE.sub(_one_space, line).strip() for line in s.split("\n"))
    return "\n".join(line for line in lines if line)


def _one_space(m: re.Match) -> str:
    return "\t" if "\t" in m.group(0) else " "


def _flat(blocks: list[Block], sep: str) -> str:
    """Blocks as the text of one cell (`sep` " ") or one note (`sep` newline)."""
    out = []
    for b in blocks:
        kind = b[0]
        if kind == "table":
            out.append("; ".join(", ".join(c for c in row if c) for row in b[1]))
        elif kind == "item":
            out.append(f"{b[2]} {b[3]}")
        else:
            out.append(b[-1])
    return sep.join(out)


# --- canonical text and sections --------------------------------------------------------

def _render(blocks: list[Block], root: tuple[str, ...]) -> tuple[str, list[Section], int]:
    """The canonical text of the blocks, their sections, and the number of tables."""
    parts: list[str] = []
    sections: list[Section] = []
    pos = last_end = 0
    heads: list[list] = []   # open headings: [rank, start, path]
    path = root
    list_start = -1
    prev_item = False
    tables = 0
    for b in blocks:
        kind = b[0]
        item = kind == "item"
        if list_start >= 0 and not item:
            sections.append(Section(list_start, last_end, _LEVEL_BLOCK, "list", path))
            list_start = -1
        if kind == "heading":
            while heads and heads[-1][0] >= b[1]:
                rank, start, hpath = heads.pop()
                sections.append(Section(start, last_end, 100 - rank, "section", hpath))
        if pos:
            sep = "\n" if item and prev_item else "\n\n"
            parts.append(sep)
            pos += len(sep)
        start = pos
        if kind == "table":
            tables += 1
            lines = ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                     for row in b[1]]
            body = "\n".join(lines)
            context = lines[0] if len(lines) > 1 else ""
            sections.append(Section(start, start + len(body), _LEVEL_BLOCK, "table", path,
                                    context, table_facts(PIPE, lines[0])))
            if len(lines) > 1:
                at = start
                for i, line in enumerate(lines):
                    sections.append(Section(at, at + len(line), _LEVEL_CHILD,
                                            "row" if i else "header", path, "",
                                            (("row", i),) if i else ()))
                    at += len(line) + 1
        elif item:
            indent = "  " * b[1]
            body = f"{indent}{b[2]} " + b[3].replace("\n", "\n" + indent + "  ")
            if list_start < 0:
                list_start = start
            sections.append(Section(start, start + len(body), _LEVEL_CHILD, "item", path))
        else:
            body = b[-1]
            if kind == "heading":
                label = " ".join(body.split())
                names = [h[2][-1] for h in heads] + [label]
                if root and _fold(names[0]) == _fold(root[-1]):
                    names = names[1:]
                path = root + tuple(names)
                heads.append([b[1], start, path])
            else:
                sections.append(Section(start, start + len(body), _LEVEL_BLOCK, kind, path))
        parts.append(body)
        pos += len(body)
        last_end = pos
        prev_item = item
    if list_start >= 0:
        sections.append(Section(list_start, last_end, _LEVEL_BLOCK, "list", path))
    for rank, start, hpath in heads:
        sections.append(Section(start, last_end, 100 - rank, "section", hpath))
    return "".join(parts), sections, tables


def _fold(title: str) -> str:
    return " ".join(title.split()).casefold()
