"""Scanned PDF pages (parsers/pdf/ocr.py): without the `ocr` extra a warning naming it and
`needs_ocr` in the meta, never an exception; with it the page's text from OCR, marked."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from chunkwise import Chunker
from chunkwise.parsers.pdf import reader as pdf
from chunkwise.parsers.pdf import ocr as pdf_ocr
from conftest import corpus_files

LETTER = "docling__scanned__sample_with_rotation_mismatch.pdf"
HAS_ENGINE = importlib.util.find_spec("rapidocr_onnxruntime") is not None


def _scanned():
    files = {p.name: p for p in corpus_files("pdf-tables")}
    return [files[LETTER], files["unstructured__scanned__table-multi-row-column-cells.pdf"]]


@pytest.mark.corpus
def test_without_engine_warns_and_marks(monkeypatch):
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # import fails
    pdf_ocr.engine.cache_clear()
    try:
        for path in _scanned():
            doc = pdf.parse(path.read_bytes(), source=path.name)
            meta = dict(doc.meta)
            assert meta["needs_ocr"] == 1 and "ocr" not in meta
            assert sum("chunkwise[ocr]" in w for w in doc.warnings) == 1
            assert not doc.text.strip()
    finally:
        pdf_ocr.engine.cache_clear()


def test_text_pages_are_not_scanned():
    from conftest import FIXTURES

    doc = pdf.parse((FIXTURES / "latex-two-column-sample.pdf").read_bytes(), source="x.pdf")
    assert "needs_ocr" not in dict(doc.meta) and "ocr" not in dict(doc.meta)


def test_lines_order_boxes():
    boxes = [(10, 20, 50, "world"), (11, 21, 5, "hello"), (40, 50, 5, "next")]
    assert [t for *_, t in pdf_ocr._lines(boxes)] == ["hello world", "next"]


@pytest.fixture(scope="module")
def letter():
    if not HAS_ENGINE:
        pytest.skip("the ocr extra (rapidocr-onnxruntime) is not installed")
    path = _scanned()[0]
    return pdf.parse(path.read_bytes(), source=path.name)


@pytest.mark.corpus
def test_ocr_reads_the_letter(letter):
    text = letter.text
    for words in ("SLEREXE COMPANY", "Dear Pete", "facsimile", "raster scan",
                  "Yours sincerely", "P.J. CROSS"):
        assert words in text, words
    meta = dict(letter.meta)
    assert meta["ocr"] is True and meta["ocr_pages"] == 1 and "needs_ocr" not in meta
    assert all(("ocr", True) in s.meta for s in letter.sections if s.kind == "paragraph")
    # upright: the /Rotate of the page was applied (read sideways it would be gibberish)
    assert text.index("SLEREXE") < text.index("Dear Pete") < text.index("Yours sincerely")
    chunks = Chunker().chunk_document(letter)
    assert chunks and all(c.page_start == c.page_end == 1 for c in chunks)


@pytest.mark.corpus
def test_a_500_page_scan_reads_at_most_the_bound(monkeypatch):
    """500 scanned pages: OCR reads the first MAX_OCR_PAGES (one page at a time), warns
    for the rest, and the parse stays bounded. The engine is a stand-in that counts the
    images it is given (this test is about the bound, not about reading)."""
    import io
    import resource
    import time

    from pypdf import PdfReader, PdfWriter

    (path,) = [p for p in _scanned() if p.name != LETTER]
    page = PdfReader(path).pages[0]
    writer = PdfWriter()
    for _ in range(500):
        writer.add_page(page)  # the image object is shared: a small file of 500 scans
    buf = io.BytesIO()
    writer.write(buf)
    seen = []

    def fake(image):
        seen.append(image.shape)
        return [[[[0, 0], [100, 0], [100, 20], [0, 20]], f"page text {len(seen)}", 0.99]], 0.0

    monkeypatch.setattr(pdf_ocr, "engine", lambda: fake)
    monkeypatch.setattr(pdf_ocr, "MAX_OCR_PAGES", 20)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.process_time()  # CPU time: a busy machine does not inflate it
    doc = pdf.parse(buf.getvalue(), source="scan500.pdf")
    assert time.process_time() - t < 120
    assert len(seen) == 20
    assert any("OCR read the first 20 of 500 scanned pages" in w for w in doc.warnings)
    assert dict(doc.meta)["ocr_pages"] == 20 and "page text 20" in doc.text
    assert "page text 21" not in doc.text
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
    assert grown_mb < 1024
