"""Tables in PDFs (parsers/pdf/tables.py): ruled grids found from pypdf's operators, emitted
as `| cell |` rows with the header as context, rows whole, pages kept; no table on text."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkwise import Chunker
from chunkwise.parsers.pdf import reader as pdf
from conftest import FIXTURES, corpus_files

FIXTURE = FIXTURES / "camelot__column_span_1.pdf"


def _parse(path: Path):
    return pdf.parse(path.read_bytes(), source=path.name)


def _tables(doc):
    out = []
    for t in (s for s in doc.sections if s.kind == "table"):
        rows = [s for s in doc.sections if s.kind == "row" and t.start <= s.start < t.end]
        out.append((t, rows))
    return out


@pytest.fixture(scope="module")
def doc():
    return _parse(FIXTURE)


def test_fixture_table_rows_header_pages(doc):
    tables = _tables(doc)
    assert len(tables) == 1
    table, rows = tables[0]
    assert len(rows) == 48  # "(1) … (8)" numbering row + 47 years, 1967 to 2013
    assert table.context.startswith("| Sl. No. | Year | Population (in Lakh) |")
    assert "| Accidental Deaths Incidence | Accidental Deaths Rate |" in table.context
    assert doc.text[rows[1].start:rows[1].end] == (
        "| 1. | 1967 | 4999 | 126762 | 25.4 | 38829 | 7.8 | 2.2 |")
    assert doc.text[rows[-1].start:rows[-1].end].startswith("| 47. | 2013 |")
    assert dict(doc.meta)["tables"] == 1 and ("row", "table") in doc.views
    # the words of the table's area are not also in the page text
    assert doc.text.count("126762") == 1
    header = [s for s in doc.sections if s.kind == "header"]
    assert doc.text[header[0].start:header[0].end] == table.context


def test_fixture_chunks_keep_header_and_whole_rows(doc):
    chunks = Chunker(max_tokens=96).chunk_document(doc)
    row_spans = [(s.start, s.end) for s in doc.sections if s.kind == "row"]
    table = next(s for s in doc.sections if s.kind == "table")
    inside = [c for c in chunks if table.start < c.start < table.end]
    assert len(inside) >= 2
    for c in inside:
        # the header rides along: in the context, or as the labels of the `table` view
        assert table.context in c.context or "Year: " in c.view
        assert c.page_start == c.page_end == 1
    for c in chunks:  # no chunk boundary falls inside a row
        for s, e in row_spans:
            assert not (s < c.start < e or s < c.end < e)


def test_no_table_on_text_pages():
    doc = _parse(FIXTURES / "latex-two-column-sample.pdf")
    assert not _tables(doc)
    assert "tables" not in dict(doc.meta)


@pytest.mark.corpus
def test_camelot_corpus_tables():
    files = {p.name: p for p in corpus_files("pdf-tables")}
    want = {"camelot__column_span_1.pdf": (1, [48]), "camelot__agstat.pdf": (1, [31]),
            "camelot__row_span_3.pdf": (1, [6])}
    for name, (n, rows) in want.items():
        doc = _parse(files[name])
        tables = _tables(doc)
        assert len(tables) == n, name
        assert [len(r) for _, r in tables] == rows, name
        for t, rs in tables:
            assert t.context.startswith("| ") and all(doc.text[r.start] == "|" for r in rs)
    doc = _parse(files["camelot__vertical_header.pdf"])
    tables = _tables(doc)
    assert len(tables) >= 3
    pages = [doc.pages_of(t.start, t.end) for t, _ in tables]
    assert "Brian Calley" in tables[0][0].context
    assert pages == sorted(pages) and pages[:2] == [(1, 1), (2, 2)] and pages[-1][0] >= 4
    # the scanned files have no text layer: no table, no error
    for name in ("docling__scanned__sample_with_rotation_mismatch.pdf",):
        assert not _tables(_parse(files[name]))


DATA = Path(__file__).resolve().parent.parent / "data" / "pdf"  # provenance: SOURCES.md there
TENNESSEE = ("| Tennessee | 9,509 | 28,815 | 24,023 | 0 | 1,300 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 17 "
             "| 1 | 5 |  |  | 0 | 0 | 0 | 0 | 0 | 0 | 63,670 |")


def _row(doc, first_cell):
    (t, rows), = _tables(doc)
    found = [doc.text[r.start:r.end] for r in rows
             if doc.text[r.start:r.end].startswith(f"| {first_cell} |")]
    assert len(found) == 1, [doc.text[r.start:r.end][:40] for r in rows]
    return t, rows, found[0]


@pytest.mark.parametrize("name", ["nics-background-checks-2015-11.pdf",
                                  "nics-background-checks-2015-11-rotated.pdf"])
def test_rules_every_five_rows_give_one_row_per_state(name):
    """Issue 41: the NICS table draws a rule every five states, so one grid row held five
    states and their figures interleaved (`Tennessee Texas Utah Vermont Virgin Islands |
    9,509 21,550 …`); each figure is one string spread by a character spacing of 4.1 em, so
    digits landed in the cell of their first glyph (`06 | 3,670` for `0 | 63,670`). Now one
    row per baseline, each glyph in its own cell, the header (not the first state) as the
    context. The `/Rotate 90` copy reads the same."""
    doc = _parse(DATA / name)
    t, rows, tennessee = _row(doc, "Tennessee")
    assert tennessee == TENNESSEE
    assert len(rows) == 56  # 50 states, DC, 4 territories, and the totals
    assert t.context.split(" | ")[1:4] == ["Permit", "Handgun", "Long Gun"]
    assert "Alabama" not in t.context
    assert _row(doc, "Texas")[2].endswith("| 5,748 | 5,331 | 21 | 1 | 2 | 1 |  |  | 42 | 36 "
                                          "| 4 | 1 | 5 | 0 | 146,982 |")
    assert _row(doc, "Totals")[2].endswith("| 2,236,457 |")
    chunk = next(c for c in Chunker(max_tokens=256).chunk_document(doc) if TENNESSEE in c.text)
    assert t.context in chunk.context or "Permit: 9,509" in chunk.view


@pytest.mark.parametrize("name", ["camelot__anticlockwise_table_1.pdf",
                                  "camelot__clockwise_table_1.pdf"])
def test_a_table_set_sideways_is_read_as_printed(name):
    """Issue 41: a landscape table set sideways on a portrait page came out transposed (each
    printed row a column: `| Fasting Blood Sugar … | Women Men | 2391 1645 | …`). The page's
    text direction turns the rules and the text into its reading frame first."""
    doc = _parse(DATA / name)
    t, rows, kerala = _row(doc, "Kerala")
    assert kerala == "| Kerala | 5738 | 6633 | 8864 | 8297 | 245 | 2161 | 3195 | 1645 | 2391 |"
    assert t.context.startswith("| State | Nutritional Assessment (No. of individuals) 1975-79 |")
    assert t.context.endswith("| Fasting Blood Sugar (No. of adults: 2011-12) Women |")
    assert len(rows) == 11 and doc.text[rows[-1].start:rows[-1].end].startswith("| Pooled |")
