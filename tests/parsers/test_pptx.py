"""PowerPoint parser: slides in presentation order, titles, shapes in reading order, bullets
and their levels, tables with merged cells, alt text, speaker notes, hidden slides and the
page numbers they leave, and bad or hostile containers."""

from __future__ import annotations

import io
import json
import subprocess
import time
import zipfile
from xml.sax.saxutils import escape

import pytest

from chunkwise import Chunker, ParseError
from chunkwise.parsers import detect_format
from chunkwise.parsers.office import ooxml
from chunkwise.parsers.office import pptx as pptx_parser

from conftest import CHUNKWISE_CLI, FIXTURES, corpus_files
from contract import check_contract

FIXTURE = FIXTURES / "docling__powerpoint_sample.pptx"

_NS = ('xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
       'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
       'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"')
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_RELS_NS = "http://schemas.openxmlformats.org/package/2006/relationships"


# -- building decks -------------------------------------------------------------------------
def para(text: str, *, lvl: int | None = None, bu: str | None = None) -> str:
    """An `a:p`; `bu`: "char", "num" or "none"; a "\\n" in `text` is an `a:br`."""
    marks = {"char": '<a:buChar char="•"/>', "num": '<a:buAutoNum type="arabicPeriod"/>',
             "none": "<a:buNone/>", None: ""}[bu]
    attrs = f' lvl="{lvl}"' if lvl is not None else ""
    ppr = f"<a:pPr{attrs}>{marks}</a:pPr>" if attrs or marks else ""
    runs = "<a:br/>".join(f"<a:r><a:t>{escape(t)}</a:t></a:r>" for t in text.split("\n"))
    return f"<a:p>{ppr}{runs}</a:p>"


def _xfrm(x: int | None, y: int | None, tag: str = "a:xfrm") -> str:
    return "" if x is None else f'<{tag}><a:off x="{x}" y="{y}"/><a:ext cx="100" cy="100"/></{tag}>'


def sp(*paras: str, ph: str | None = None, idx: int | None = None, x: int | None = None,
       y: int | None = None, lst: str = "") -> str:
    """A shape with a text body; `ph`: a placeholder type ("" for a typeless one)."""
    if ph is None:
        nv = "<p:nvPr/>"
    else:
        attrs = (f' type="{ph}"' if ph else "") + (f' idx="{idx}"' if idx is not None else "")
        nv = f"<p:nvPr><p:ph{attrs}/></p:nvPr>"
    return (f'<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/>{nv}</p:nvSpPr>'
            f"<p:spPr>{_xfrm(x, y)}</p:spPr><p:txBody><a:bodyPr/><a:lstStyle>{lst}</a:lstStyle>"
            f"{''.join(paras)}</p:txBody></p:sp>")


def pic(descr: str | None, x: int = 0, y: int = 0) -> str:
    d = f' descr="{escape(descr)}"' if descr is not None else ""
    return (f'<p:pic><p:nvPicPr><p:cNvPr id="5" name="Picture 4"{d}/><p:cNvPicPr/><p:nvPr/>'
            f"</p:nvPicPr><p:blipFill/><p:spPr>{_xfrm(x, y)}</p:spPr></p:pic>")


def frame(inner: str, *, descr: str | None = None, x: int = 0, y: int = 0) -> str:
    d = f' descr="{escape(descr)}"' if descr is not None else ""
    return (f'<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="6" name="f"{d}/>'
            f"<p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr>{_xfrm(x, y, 'p:xfrm')}"
            f"<a:graphic><a:graphicData>{inner}</a:graphicData></a:graphic></p:graphicFrame>")


def table(*rows: list[str | tuple[str, dict]]) -> str:
    """An `a:tbl`; a cell is its text, or (text, attributes) for merges."""
    out = []
    for row in rows:
        cells = []
        for cell in row:
            text, attrs = (cell, {}) if isinstance(cell, str) else cell
            a = "".join(f' {k}="{v}"' for k, v in attrs.items())
            cells.append(f"<a:tc{a}><a:txBody><a:bodyPr/>{para(text)}</a:txBody></a:tc>")
        out.append(f'<a:tr h="1">{"".join(cells)}</a:tr>')
    return f"<a:tbl><a:tblGrid/>{''.join(out)}</a:tbl>"


def group(*shapes: str, off=(0, 0), ext=(100, 100), ch_off=(0, 0), ch_ext=(100, 100)) -> str:
    return (f'<p:grpSp><p:nvGrpSpPr><p:cNvPr id="9" name="g"/><p:cNvGrpSpPr/><p:nvPr/>'
            f'</p:nvGrpSpPr><p:grpSpPr><a:xfrm><a:off x="{off[0]}" y="{off[1]}"/>'
            f'<a:ext cx="{ext[0]}" cy="{ext[1]}"/><a:chOff x="{ch_off[0]}" y="{ch_off[1]}"/>'
            f'<a:chExt cx="{ch_ext[0]}" cy="{ch_ext[1]}"/></a:xfrm></p:grpSpPr>'
            f"{''.join(shapes)}</p:grpSp>")


def slide(*shapes: str, hidden: bool = False) -> str:
    show = ' show="0"' if hidden else ""
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:sld {_NS}{show}>'
            f"<p:cSld><p:spTree><p:nvGrpSpPr/><p:grpSpPr/>{''.join(shapes)}</p:spTree>"
            f"</p:cSld></p:sld>")


def notes(*shapes: str) -> str:
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:notes {_NS}><p:cSld>'
            f"<p:spTree>{''.join(shapes)}</p:spTree></p:cSld></p:notes>")


def _rels(*rels: tuple[str, str, str]) -> str:
    body = "".join(f'<Relationship Id="{i}" Type="{_REL}/{t}" Target="{target}"/>'
                   for i, t, target in rels)
    return (f'<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="{_RELS_NS}">{body}'
            f"</Relationships>")


def deck(*slides: str, slide_notes: dict[int, str] | None = None, title: str | None = None,
         layout: str | None = None, order: list[int] | None = None,
         targets: list[str] | None = None, extra: dict[str, bytes | str] | None = None) -> bytes:
    """A .pptx of these slides (slide i in part slide{i}.xml); `order`: the part numbers in
    presentation order; `targets`: the slide part each rId{n} names (default slide{n}.xml);
    `layout`: a slide layout's spTree content, used by every slide."""
    slide_notes = slide_notes or {}
    order = order or list(range(1, len(slides) + 1))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.'
                   'openxmlformats.org/package/2006/content-types"/>')
        root = [("rId1", "officeDocument", "ppt/presentation.xml")]
        if title is not None:
            root.append(("rId2", "metadata/core-properties", "docProps/core.xml"))
            z.writestr("docProps/core.xml", '<cp:coreProperties xmlns:cp="http://schemas.'
                       'openxmlformats.org/package/2006/metadata/core-properties" '
                       f'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{escape(title)}'
                       "</dc:title></cp:coreProperties>")
        z.writestr("_rels/.rels", _rels(*root))
        ids = "".join(f'<p:sldId id="{255 + k}" r:id="rId{n}"/>' for k, n in enumerate(order, 1))
        z.writestr("ppt/presentation.xml", f'<p:presentation {_NS}><p:sldIdLst>{ids}'
                   f"</p:sldIdLst></p:presentation>")
        z.writestr("ppt/_rels/presentation.xml.rels",
                   _rels(*((f"rId{n}", "slide", f"slides/{t}") for n, t in enumerate(
                       targets or [f"slide{k}.xml" for k in range(1, len(slides) + 1)], 1))))
        for n, xml in enumerate(slides, 1):
            z.writestr(f"ppt/slides/slide{n}.xml", xml)
            rels = []
            if n in slide_notes:
                rels.append(("rId1", "notesSlide", f"../notesSlides/notesSlide{n}.xml"))
                z.writestr(f"ppt/notesSlides/notesSlide{n}.xml", slide_notes[n])
            if layout is not None:
                rels.append(("rId2", "slideLayout", "../slideLayouts/slideLayout1.xml"))
            z.writestr(f"ppt/slides/_rels/slide{n}.xml.rels", _rels(*rels))
        if layout is not None:
            z.writestr("ppt/slideLayouts/slideLayout1.xml",
                       f'<p:sldLayout {_NS}><p:cSld><p:spTree>{layout}</p:spTree></p:cSld>'
                       f"</p:sldLayout>")
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return buf.getvalue()


def _parse(data: bytes, source: str = "deck.pptx"):
    return pptx_parser.parse(data, source=source)


def _of(doc, kind: str) -> list:
    return sorted((s for s in doc.sections if s.kind == kind), key=lambda s: s.start)


def _texts(doc, kind: str) -> list[str]:
    return [doc.text[s.start:s.end] for s in _of(doc, kind)]


# -- the fixture ----------------------------------------------------------------------------
def test_fixture_slides_tables_and_notes():
    doc = _parse(FIXTURE.read_bytes(), FIXTURE.name)
    assert (doc.format, doc.prose, doc.line_numbers) == ("pptx", True, False)
    assert doc.views == (("row", "table"),)
    assert doc.title == "Test Table Slide"  # no dc:title: the first slide's
    assert dict(doc.meta) == {"slides": 3, "hidden_slides": 0}
    slides = _of(doc, "slide")
    assert [s.path for s in slides] == [("Test Table Slide",),
                                        ("Test Table Slide", "Second slide title"),
                                        ("Test Table Slide", "Slide 3")]
    assert doc.page_starts == tuple(s.start for s in slides)
    blocks = doc.text.split("\n\n")
    assert len(blocks) == 3 and blocks[0].startswith("Test Table Slide\n| ")
    # merged cells: the gridSpan'd "Class1" and "A merged with B" fill every column they cover
    (tbl,) = _of(doc, "table")
    assert tbl.context == "|  | Class1 | Class1 | Class1 | Class2 | Class2 | Class2 |"
    assert _texts(doc, "header") == [tbl.context]
    rows = _texts(doc, "row")
    assert rows[0] == "|  | A merged with B | A merged with B | C | A | B | C |"
    assert len(rows) == 8 and all(r.count(" | ") == 6 for r in rows)
    assert dict(_of(doc, "row")[2].meta) == {"row": 3, "row_start": 3, "row_end": 3}
    # slide 2: the rectangle (higher on the slide) before the body; buNone, then bullets
    assert blocks[1] == ("Second slide title\nA rectangle shape with this text inside.\n"
                         "Let’s introduce a list\n- With foo\n- Bar\n- And baz things\n"
                         "Notes:\nSome notes on the second slide.")
    notes_ = _of(doc, "notes")
    assert [doc.text[n.start:n.end] for n in notes_] == [
        "Notes:\nSome notes on the second slide.",
        "Notes:\nFinal notes on the third slide.\nSecond line of notes."]
    assert all(slides[k].start < n.start and n.end == slides[k].end
               for k, n in zip((1, 2), notes_))
    assert "Some info:\n- Item A\n- Item B" in blocks[2]


def test_fixture_chunks_keep_the_contract_and_slide_numbers():
    data = FIXTURE.read_bytes()
    for budget in (32, 64, 256):
        chunks = check_contract(data, FIXTURE.name, Chunker(max_tokens=budget))
        for c in chunks:
            assert "<a:" not in c.text and "<p:" not in c.text
            assert 1 <= c.page_start <= c.page_end <= 3
    chunks = check_contract(data, FIXTURE.name, Chunker(max_tokens=48))
    table_rows = [c for c in chunks if "row" in c.kinds and c.view]
    assert table_rows and all("Class1: " in c.view for c in table_rows if "True" in c.text)
    notes_chunk = next(c for c in chunks if "Final notes" in c.text)
    assert notes_chunk.page_start == 3 and "notes" in notes_chunk.kinds
    assert notes_chunk.section_path == ("Test Table Slide", "Slide 3")


def test_each_slide_is_its_own_chunk_with_its_title_and_number():
    """Issue 41: small slides were packed into one chunk named after the first of them. Now a
    chunk starts at every slide: its path is its own slide's title, its page its number, and
    a slide too big for the budget is still split inside (never joined to the next)."""
    long_body = sp(*(para(f"Point {k} of the long slide about margins and costs.")
                     for k in range(40)), x=0, y=100)
    slides = [slide(sp(para(f"Title {n}"), ph="title", x=0, y=0),
                    sp(para(f"One line of slide {n}."), x=0, y=100)) for n in (1, 2, 3)]
    data = deck(*slides[:2], slide(sp(para("Long"), ph="title", x=0, y=0), long_body),
                slides[2], title="Deck")
    chunks = check_contract(data, "deck.pptx", Chunker(max_tokens=128))
    by_page: dict[int, list] = {}
    for c in chunks:
        assert c.page_start == c.page_end
        by_page.setdefault(c.page_start, []).append(c)
    assert sorted(by_page) == [1, 2, 3, 4]
    for page, title in ((1, "Title 1"), (2, "Title 2"), (4, "Title 3")):
        [c] = by_page[page]
        assert c.section_path == ("Deck", title) and c.text.startswith(title)
        assert c.text.rstrip().endswith(f"slide {title[-1]}.")
    assert len(by_page[3]) > 1 and all(c.section_path == ("Deck", "Long") for c in by_page[3])


# -- titles, order, bullets -------------------------------------------------------------------
def test_title_first_then_shapes_top_to_bottom_left_to_right():
    xml = slide(sp(para("bottom"), x=0, y=900), sp(para("right"), x=500, y=300),
                sp(para("left"), x=100, y=300), sp(para("The Title"), ph="title", x=0, y=5000))
    doc = _parse(deck(xml, title="My Deck"))
    assert doc.text == "The Title\nleft\nright\nbottom\n"
    (s,) = _of(doc, "slide")
    assert s.path == ("My Deck", "The Title") and doc.title == "My Deck"
    assert _texts(doc, "paragraph") == ["left", "right", "bottom"]


def test_groups_read_in_place_through_their_transform():
    # the group sits between "top" and "bottom"; inside it, child offsets are scaled by the
    # group's transform (child space 0..1000 onto 100 EMU) and ordered by them
    inner = group(sp(para("g-b"), x=0, y=800), sp(para("g-a"), x=0, y=10),
                  off=(0, 500), ext=(100, 100), ch_off=(0, 0), ch_ext=(1000, 1000))
    xml = slide(sp(para("bottom"), x=0, y=700), inner, sp(para("top"), x=0, y=100))
    doc = _parse(deck(xml))
    assert doc.text == "top\ng-a\ng-b\nbottom\n"
    nested = group(group(sp(para("deep"), x=0, y=0)), sp(para("shallow"), x=0, y=50))
    assert _parse(deck(slide(nested))).text == "deep\nshallow\n"


def test_group_depth_is_capped():
    shape = sp(para("too deep"))
    for _ in range(pptx_parser.MAX_GROUP_DEPTH + 3):
        shape = group(shape)
    doc = _parse(deck(slide(sp(para("kept")), shape)))
    assert doc.text == "kept\n"
    assert any("nested" in w for w in doc.warnings)


def test_bullets_levels_and_list_sections():
    body = sp(para("Intro", bu="none"), para("one"), para("one.a", lvl=1), para("one.a.i", lvl=2),
              para("two"), para("Closing", bu="none"), ph="", idx=1, x=0, y=100)
    box = sp(para("plain text box"), para("starred", bu="char"), para("numbered", bu="num"),
             x=0, y=200)
    doc = _parse(deck(slide(sp(para("T"), ph="title", x=0, y=0), body, box)))
    assert doc.text == ("T\nIntro\n- one\n  - one.a\n    - one.a.i\n- two\nClosing\n"
                        "plain text box\n- starred\n- numbered\n")
    lists = _texts(doc, "list")
    assert lists[0] == "- one\n  - one.a\n    - one.a.i\n- two"
    assert "  - one.a\n    - one.a.i" in lists and "    - one.a.i" in lists
    assert lists[-1] == "- starred\n- numbered"
    items = _texts(doc, "item")
    assert items[0] == "- one\n  - one.a\n    - one.a.i" and "- two" in items
    assert _texts(doc, "paragraph") == ["Intro", "Closing", "plain text box"]


def test_bullets_follow_the_layout_placeholder_and_its_position():
    # the layout's placeholder idx=1 says no bullets at level 1 and sits below idx=2
    layout = (sp(ph="body", idx=1, x=0, y=800,
                 lst='<a:lvl1pPr><a:buNone/></a:lvl1pPr><a:lvl2pPr><a:buChar char="-"/>'
                     "</a:lvl2pPr>")
              + sp(ph="body", idx=2, x=0, y=400))
    xml = slide(sp(para("not bulleted"), para("sub", lvl=1), ph="body", idx=1),
                sp(para("bulleted, higher"), ph="body", idx=2))
    doc = _parse(deck(xml, layout=layout))
    assert doc.text == "- bulleted, higher\nnot bulleted\n  - sub\n"


def test_subtitle_line_breaks_fields_and_control_characters():
    xml = slide(sp(para("Deck"), ph="ctrTitle", x=0, y=0),
                sp(para("first line\nsecond line"), ph="subTitle", idx=1, x=0, y=10),
                sp('<a:p><a:fld type="datetime"><a:t>1/2/2024</a:t></a:fld>'
                   "<a:r><a:t>\x09tab kept</a:t></a:r></a:p>", x=0, y=20),
                sp(para("5"), ph="sldNum", idx=12, x=0, y=30),
                sp(para("footer text"), ph="ftr", idx=11, x=0, y=40))
    doc = _parse(deck(xml))
    assert doc.text == "Deck\nfirst line\nsecond line\n1/2/2024\ttab kept\n"
    assert _texts(doc, "paragraph") == ["first line\nsecond line", "1/2/2024\ttab kept"]


# -- tables, images, notes --------------------------------------------------------------------
def test_table_merges_escapes_and_empty_rows():
    tbl = table(["Name", ("Span", {"gridSpan": 2}), ("", {"hMerge": 1})],
                [("Tall", {"rowSpan": 2}), "a|b", "c"],
                [("", {"vMerge": 1}), "d", "e"],
                ["", "", ""],
                ["x"])
    doc = _parse(deck(slide(frame(tbl))))
    assert doc.text == ("| Name | Span | Span |\n| Tall | a\\|b | c |\n| Tall | d | e |\n"
                        "| x |  |  |\n")
    (t,) = _of(doc, "table")
    assert t.context == "| Name | Span | Span |"
    assert _texts(doc, "row") == ["| Tall | a\\|b | c |", "| Tall | d | e |", "| x |  |  |"]
    chunks = check_contract(deck(slide(frame(tbl))), "t.pptx", Chunker(max_tokens=32))
    viewed = [c.view for c in chunks if c.view]
    # rows embedded as `column: value` lines ("Tall", its column's usual value, left out)
    assert "Span: d\nSpan: e" in viewed and "Name: x" in viewed


def test_alt_text_of_pictures_and_charts():
    chart = frame('<c:chart xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart"/>',
                  descr="Sales by\n quarter", y=20)
    xml = slide(pic("A cat on a mat", y=10), pic(None, y=15), pic("   ", y=16), chart)
    doc = _parse(deck(xml))
    assert doc.text == "[image: A cat on a mat]\n[image: Sales by quarter]\n"
    assert _texts(doc, "image") == ["[image: A cat on a mat]", "[image: Sales by quarter]"]


def test_notes_are_the_body_placeholder_only():
    note = notes(sp(ph="sldImg", idx=2), sp(para("Say hello:"), para("point", bu="char"),
                                               ph="body", idx=3),
                 sp(para("7"), ph="sldNum", idx=5))
    empty = notes(sp(para(" "), ph="body", idx=3))
    doc = _parse(deck(slide(sp(para("T"), ph="title")), slide(sp(para("U"), ph="title")),
                      slide_notes={1: note, 2: empty}))
    assert doc.text == "T\nNotes:\nSay hello:\n- point\n\nU\n"
    (n,) = _of(doc, "notes")
    assert doc.text[n.start:n.end] == "Notes:\nSay hello:\n- point"
    assert _texts(doc, "paragraph") == ["Say hello:"]


def test_notes_alone_make_a_block():
    doc = _parse(deck(slide(pic(None)), slide_notes={1: notes(sp(para("only notes"), ph="body"))}))
    assert doc.text == "Notes:\nonly notes\n"
    assert _of(doc, "slide")[0].path == ("deck.pptx", "Slide 1")


# -- order, hidden slides, pages --------------------------------------------------------------
def test_presentation_order_not_part_names():
    parts = [slide(sp(para(f"part {n}"), ph="title")) for n in (1, 2, 3)]
    doc = _parse(deck(*parts, order=[3, 1, 2]))
    assert doc.text == "part 3\n\npart 1\n\npart 2\n"
    assert [s.path[-1] for s in _of(doc, "slide")] == ["part 3", "part 1", "part 2"]


def test_hidden_slides_leave_empty_pages_and_real_numbers():
    words = " ".join(["enough words to fill a small budget"] * 3)
    titled = [slide(sp(para(f"Slide title {n}"), ph="title"), sp(para(f"body {n} {words}")),
                    hidden=n in (1, 3, 5)) for n in range(1, 6)]
    doc = _parse(deck(*titled))
    assert doc.text == f"Slide title 2\nbody 2 {words}\n\nSlide title 4\nbody 4 {words}\n"
    assert dict(doc.meta) == {"slides": 5, "hidden_slides": 3}
    second = doc.text.index("Slide title 4")
    assert doc.page_starts == (0, 0, second, second, len(doc.text))
    assert doc.pages_of(0, 5) == (2, 2)
    assert doc.pages_of(second, second + 3) == (4, 4)
    assert doc.pages_of(0, len(doc.text)) == (2, 4)
    assert doc.title == "Slide title 2"  # the first shown slide's
    chunks = check_contract(deck(*titled), "h.pptx", Chunker(max_tokens=32))
    assert {(c.page_start, c.page_end) for c in chunks} == {(2, 2), (4, 4)}


def test_empty_slide_is_an_empty_page():
    doc = _parse(deck(slide(sp(para("one"), ph="title")), slide(pic(None)),
                      slide(sp(para("three"), ph="title"))))
    assert doc.text == "one\n\nthree\n"
    assert doc.page_starts == (0, 5, 5) and doc.pages_of(5, 10) == (3, 3)


def test_deck_title_sources():
    one = slide(sp(para("First"), ph="title"))
    assert _parse(deck(one, title="Core Title")).title == "Core Title"
    assert _parse(deck(one, title="PowerPoint Presentation")).title == "First"
    untitled = _parse(deck(slide(sp(para("text"))), title=""), "talks/q3.pptx")
    assert untitled.title == "q3.pptx" and _of(untitled, "slide")[0].path == ("q3.pptx",
                                                                              "Slide 1")


# -- bad input ------------------------------------------------------------------------------------
def test_empty_deck_and_missing_slide_parts():
    doc = _parse(deck())
    assert doc.text == "" and doc.sections == () and doc.page_starts is None
    data = deck(slide(sp(para("kept"), ph="title")), targets=["slide1.xml", "gone.xml"],
                order=[1, 2, 1])
    doc = _parse(data)
    assert doc.text == "kept\n" and doc.page_starts == (0, 5, 5)
    assert doc.warnings == ("slide 2: part missing", "slide 3: part listed before, left out")
    many = deck(slide(sp(para("x"))), targets=["slide1.xml"], order=[1] * 30)
    assert _parse(many).warnings == ("slides 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 19 more: part "
                                     "listed before, left out",)


def _zip(files: dict[str, bytes | str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


@pytest.mark.parametrize("data,words", [
    (b"PK\x03\x04 this is not a zip at all", "corrupt zip"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600, "legacy binary"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + "EncryptedPackage".encode("utf-16-le") + b"\0" * 64,
     "encrypted"),
    (b"<!DOCTYPE html><html><body>slides</body></html>", "HTML"),
    (_zip({"[Content_Types].xml": "<Types/>"}), "no presentation part"),
    (_zip({"ppt/presentation.xml": '<p:presentation xmlns:p="http://purl.oclc.org/ooxml/'
                                   'presentationml/main"/>'}), "Strict"),
    (_zip({"ppt/presentation.xml": "<p:presentation"}), "not well-formed"),
])
def test_bad_containers_are_one_parse_error(data, words):
    with pytest.raises(ParseError, match=words):
        _parse(data)


def test_entities_are_refused():
    bomb = ('<?xml version="1.0"?><!DOCTYPE p:sld [<!ENTITY a "aaaaaaaaaa">'
            '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>' + slide(sp(para("&b;")))[38:])
    with pytest.raises(ParseError, match="DTD"):
        _parse(deck(bomb))


def test_zip_bomb_parts_are_refused(monkeypatch):
    monkeypatch.setattr(ooxml, "MAX_PART", 50_000)
    big = slide(sp(*(para("x" * 100) for _ in range(2000))))  # 0.3 MB deflating to a few KB
    data = deck(big)
    assert len(data) < 20_000
    with pytest.raises(ParseError, match="zip bomb"):
        _parse(data)


def test_two_thousand_slides_in_seconds():
    parts = [slide(sp(para(f"Slide {n} title"), ph="title"), sp(para("point a"), para("point b"),
                                                                 ph="", idx=1, x=0, y=100))
             for n in range(1, 2001)]
    note = notes(sp(para("a speaker note"), ph="body"))
    data = deck(*parts, slide_notes={n: note for n in range(1, 2001, 2)})
    started = time.process_time()
    doc = _parse(data)
    elapsed = time.process_time() - started
    assert len(doc.page_starts) == 2000 and len(_of(doc, "slide")) == 2000
    assert doc.pages_of(doc.page_starts[1999], len(doc.text)) == (2000, 2000)
    assert len(_of(doc, "notes")) == 1000
    assert elapsed < 10, f"{elapsed:.1f} s for 2,000 slides"


def test_sniffed_without_extension():
    data = FIXTURE.read_bytes()
    assert detect_format("deck.bin", data) == "pptx"
    assert detect_format("deck.pptm") == "pptx"


# -- the shared corpus ------------------------------------------------------------------------
def _pptx_corpus() -> list:
    files = [p for p in corpus_files("office") if p.suffix == ".pptx"]
    if not files:
        pytest.skip("no .pptx in the shared corpus")
    return files


@pytest.mark.corpus
def test_corpus_decks_parse_and_chunk():
    chunker = Chunker(max_tokens=256)
    for path in _pptx_corpus():
        data = path.read_bytes()
        doc = _parse(data, path.name)
        assert doc.text.strip() and not doc.warnings, path.name
        assert len(doc.page_starts) == dict(doc.meta)["slides"]
        chunks = check_contract(data, path.name, chunker)
        for c in chunks:
            assert "<a:" not in c.text and "PK\x03\x04" not in c.text, path.name
            # one slide per chunk (issue 41), named by that slide's section
            assert c.page_start is not None and c.page_start == c.page_end, path.name
            [own] = [s for s in _of(doc, "slide") if s.start <= c.start < s.end]
            assert c.end <= own.end and c.section_path == own.path, path.name
        shown = {doc.pages_of(s.start, s.end)[0] for s in _of(doc, "slide")}
        assert {c.page_start for c in chunks} == shown, path.name


@pytest.mark.corpus
def test_corpus_hidden_slides_and_tables():
    files = {p.name: p for p in _pptx_corpus()}
    perf = files.get("poi__2411-Performance_Up.pptx")
    if perf is not None:
        doc = _parse(perf.read_bytes(), perf.name)
        assert dict(doc.meta) == {"slides": 48, "hidden_slides": 2}
        assert doc.title == "Apache Performance Tuning"
        assert "Monitoring Solaris" not in doc.text and "Further Reading" not in doc.text
        ganglia = doc.text.index("Monitoring: Ganglia")
        assert doc.pages_of(ganglia, ganglia + 10) == (14, 14)  # slide 13 is hidden
        assert doc.page_starts[12] == doc.page_starts[13] == ganglia
        assert len(_of(doc, "table")) == 1
    refactor = files.get("poi__HowWeRefactor.pptx")
    if refactor is not None:
        doc = _parse(refactor.read_bytes(), refactor.name)
        assert dict(doc.meta) == {"slides": 28, "hidden_slides": 0}
        # its two tables are grids of coloured cells without text: no table sections
        assert not _of(doc, "table") and len(_of(doc, "image")) >= 4
        assert all(doc.text[t.start:t.end].startswith("| ") for t in _of(doc, "table"))


@pytest.mark.corpus
def test_cli_chunk_reports_slide_numbers():
    path = next((p for p in _pptx_corpus() if p.name == "poi__2411-Performance_Up.pptx"), None)
    if path is None:
        pytest.skip("poi__2411-Performance_Up.pptx not in the corpus")
    out = subprocess.run([*CHUNKWISE_CLI, "chunk", str(path), "--jsonl", "--max-tokens", "128"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    chunks = [json.loads(line) for line in out.splitlines()]
    pages = {c["page_start"] for c in chunks}
    assert 13 not in pages and 48 not in pages and 14 in pages
    assert all(c["format"] == "pptx" for c in chunks)
