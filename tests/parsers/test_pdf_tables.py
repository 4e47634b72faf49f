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
