"""Scanned PDF pages (parsers/pdf/ocr.py): without the `ocr` extra a warning naming it and
`needs_ocr` in the meta, never an exception; with it the page's text from OCR, marked."""

from __future__ import annotations

import importlib.util
import sys
import time

import pytest

from chunkwise import Chunker
from chunkwise.parsers.pdf import reader as pdf
from chunkwise.parsers.pdf import ocr as pdf_ocr
from conftest import corpus_files
from pdftext import pdf_file

LETTER = "docling__scanned__sample_with_rotation_mismatch.pdf"
HAS_ENGINE = importlib.util.find_spec("rapidocr_onnxruntime") is not None


def _scanned():
    files = {p.name: p for p in corpus_files("pdf-tables")}
    return [files[LETTER], files["unstructured__scanned__table-multi-row-column-cells.pdf"]]


@pytest.mark.corpus
def test_without_engine_warns_and_marks(monkeypatch):
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)  # import fails
    monkeypatch.setenv(pdf_ocr.ENGINE_VARIABLE, "rapidocr")  # and Tesseract is not asked
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
def test_a_500_page_scan_of_one_image_reads_it_once(monkeypatch):
    """500 pages of one shared page object (its image too): OCR reads the image once, every
    page keeps the text, and the parse stays bounded. The engine is a stand-in that counts
    the images it is given (this test is about the bound, not about reading)."""
    import io
    import resource

    from pypdf import PdfReader, PdfWriter

    (path,) = [p for p in _scanned() if p.name != LETTER]
    page = PdfReader(path).pages[0]
    writer = PdfWriter()
    for _ in range(500):
        writer.add_page(page)  # the image object is shared: a small file of 500 scans
    buf = io.BytesIO()
    writer.write(buf)
    seen = []
    monkeypatch.setattr(pdf_ocr, "engine", lambda: _counting_engine(seen))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time()  # CPU time: a busy machine does not inflate it
    doc = pdf.parse(buf.getvalue(), source="scan500.pdf")
    assert time.process_time() - t0 < 120
    assert len(seen) == 1 and not doc.warnings
    assert dict(doc.meta)["ocr_pages"] == 500 and doc.text.count("page text 1") == 500
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024
    assert grown_mb < 1024


def scan_pdf(pages: int, images: int, *, side: int = 3000, text: str = "SHARED SCAN") -> bytes:
    """`pages` pages, each with a content stream of its own drawing one full-page image; the
    images are `images` distinct objects (page k shows image k % images), each a `side` ×
    `side` grey scan with `text` on it, Flate-compressed (a white page: a few kB)."""
    import zlib

    from PIL import Image, ImageDraw, ImageFont

    objs = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    for j in range(images):
        scan = Image.new("L", (side, side), 255)
        font = ImageFont.load_default(size=side // 25)
        ImageDraw.Draw(scan).text((side // 10, side // 10), f"{text} {j}", fill=0, font=font)
        raw = zlib.compress(scan.tobytes(), 9)
        objs[3 + j] = (b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace "
                       b"/DeviceGray /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\n"
                       b"stream\n" % (side, side, len(raw)) + raw + b"\nendstream")
    first = 3 + images
    for k in range(pages):
        draw = b"q 612 0 0 792 0 0 cm /Im0 Do Q"
        objs[first + 2 * k] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(draw), draw)
        objs[first + 2 * k + 1] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {first + 2 * k} 0 R "
            f"/Resources << /XObject << /Im0 {3 + k % images} 0 R >> >> >>").encode()
    kids = " ".join(f"{first + 2 * k + 1} 0 R" for k in range(pages))
    objs[2] = f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode()
    return pdf_file(objs)


def _counting_engine(seen):
    def fake(image):
        seen.append(image.shape)
        return [[[[0, 0], [900, 0], [900, 60], [0, 60]], f"page text {len(seen)}", 0.99]], 0.0
    return fake


def test_pages_sharing_one_scan_decode_and_read_it_once(monkeypatch):
    """Issue 44, item 5: 20 pages showing one image object were each decoded and OCR'd
    (a 42 KB file past 60 s). The image is read once, for its image key; every page keeps
    its text and nothing is warned."""
    data = scan_pdf(20, 1)
    assert len(data) < 100_000
    seen = []
    monkeypatch.setattr(pdf_ocr, "engine", lambda: _counting_engine(seen))
    t0 = time.process_time()
    doc = pdf.parse(data, source="shared-scan.pdf")
    assert time.process_time() - t0 < 30  # a guard (20 decodes: about 20 s here), not a benchmark
    assert len(seen) == 1 and not doc.warnings
    assert dict(doc.meta)["ocr_pages"] == 20
    assert doc.text.count("page text 1") == 20  # every page keeps the shared scan's text


def test_the_ocr_bound_counts_images_and_names_the_file_bound(monkeypatch):
    """Past `MAX_OCR_PAGES` distinct images, the pages left are named in one warning with
    the bound; pages that show an image already read still get its text."""
    seen = []
    monkeypatch.setattr(pdf_ocr, "engine", lambda: _counting_engine(seen))
    monkeypatch.setattr(pdf_ocr, "MAX_OCR_PAGES", 3)
    doc = pdf.parse(scan_pdf(12, 4, side=400), source="scans.pdf")  # page k shows image k % 4
    assert len(seen) == 3
    [warning] = doc.warnings
    assert warning == ("OCR read 3 images, the bound per file (MAX_OCR_PAGES); 3 of 12 scanned "
                       "pages left without text (pages 4, 8, 12)")
    assert dict(doc.meta)["ocr_pages"] == 9


@pytest.mark.skipif(not HAS_ENGINE, reason="the ocr extra (rapidocr-onnxruntime) is not installed")
def test_a_shared_scan_with_the_real_engine_is_bounded():
    """The same 20 pages through RapidOCR: one read of the 3000 × 3000 scan."""
    data = scan_pdf(20, 1)
    t0 = time.process_time()
    doc = pdf.parse(data, source="shared-scan.pdf")
    assert time.process_time() - t0 < 60  # 20 reads took past 60 s of wall time on 2 cores
    assert doc.text.count("SHARED SCAN") == 20, doc.text[:300]


def test_spaces_come_back_from_the_character_boxes():
    """RapidOCR's characters with their boxes (as `return_word_box` gives them, taken from
    the first line of a real page's scan, `TheEvolutionoftheWordProcessor`): a gap of
    `SPACE_GAP` of the line's height is a space; the model's own spaces stay."""
    chars = list("theWordProcessor")
    gaps = [1, 1, 15, 5, 0, 0, 9, 0, -1, 0, 1, -1, 0, -1, -1]  # measured, in pixels
    boxes, x = [], 0
    for g in [*gaps, 0]:
        boxes.append([[x, 10], [x + 10, 10], [x + 10, 39], [x, 39]])
        x += 10 + g
    assert pdf_ocr._spaced("theWordProcessor", [boxes, chars]) == "the Word Processor"
    assert pdf_ocr._spaced("a b", [boxes[:3], ["a", " ", "b"]]) == "a b"
    assert pdf_ocr._spaced("abc", [boxes[:2], ["a", "b"]]) == "abc"  # boxes do not match


def _rendered_scan(tmp_path):
    """Page 1 of a real text PDF of the corpus (proportional type) rendered at 150 dpi by
    poppler's `pdftoppm` and stored as a scan (JPEG in a PDF, no text layer)."""
    import shutil
    import subprocess

    from PIL import Image

    if shutil.which("pdftoppm") is None:
        pytest.skip("poppler-utils (pdftoppm) is not installed")
    (src,) = [p for p in corpus_files("pdf") if p.name == "evolution-of-word-processor.pdf"]
    subprocess.run(["pdftoppm", "-r", "150", "-gray", "-f", "1", "-l", "1", "-png", str(src),
                    str(tmp_path / "page")], check=True, timeout=60)
    (png,) = tmp_path.glob("page*.png")
    out = tmp_path / "scan.pdf"
    Image.open(png).convert("L").save(out, format="PDF", resolution=150)
    return out


@pytest.mark.corpus
def test_tesseract_keeps_the_word_spaces_of_a_modern_scan(tmp_path, monkeypatch):
    import shutil

    if shutil.which("tesseract") is None:
        pytest.skip("tesseract (Debian tesseract-ocr) is not installed")
    scan = _rendered_scan(tmp_path)
    monkeypatch.setenv(pdf_ocr.ENGINE_VARIABLE, "tesseract")
    pdf_ocr.engine.cache_clear()
    try:
        doc = pdf.parse(scan.read_bytes(), source=scan.name)
    finally:
        pdf_ocr.engine.cache_clear()
    text = " ".join(doc.text.split())
    for words in ("The Evolution of the Word Processor",
                  "The concept of the word processor predates modern computers",
                  "Patented in 1868 by Christopher Latham Sholes, the typewriter"):
        assert words in text, words
    assert dict(doc.meta)["ocr"] is True
