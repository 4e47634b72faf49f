"""Scanned PDF pages: detected per page, their text read by a local OCR engine when the
`ocr` extra is installed.

- A page is scanned when its text layer has fewer than `MIN_TEXT_CHARS` visible characters
  and an image drawn on it covers at least `MIN_COVER` of the page (a content-stream walk
  of `cm`/`q`/`Q`/`Do`: an image is drawn as the unit square under the CTM). A page of
  text with a photo, or an empty page, is not.
- The engine (`engine`, chosen once per process; `CHUNKWISE_OCR_ENGINE` = `auto` or
  `rapidocr`, the default, or `tesseract`): RapidOCR on onnxruntime (`rapidocr-onnxruntime`,
  Apache-2.0, the `ocr` extra), whose models ship inside its wheel, with the word spaces it
  drops put back from its character boxes (`_spaced`); or Tesseract 5 through its
  `tesseract` program (Debian `tesseract-ocr` with `eng`; its TSV words grouped by its
  lines), which keeps the words of modern proportional type apart far better
  (docs/formats-office.md: word error rate 1.2% against 38% on a page rendered at
  150 dpi). Nothing is downloaded at run time. A missing or broken engine is never an
  exception: the document gets one warning naming the extra and the meta
  `("needs_ocr", pages)` so that an ingest report can count it.
- The page's largest image is taken from pypdf (`page.images`), turned by the page's
  /Rotate (a scan stored sideways and shown upright by the viewer: OCR must read it upright
  too), scaled down to `MAX_SIDE` pixels, and read; one page at a time, so memory stays at
  one image. Text boxes become lines (boxes whose vertical extents overlap by half, left to
  right) in points on the page, so the PDF parser finds paragraphs from their gaps as for a
  text layer.
- Bounds: pages that show one image object (a scan shared by many pages) decode and read
  it once (`image_key`); at most `MAX_OCR_PAGES` images per file are read (one warning
  names the bound and the pages left without text); the CLI's `--file-timeout` bounds the
  whole file.
"""

from __future__ import annotations

import logging
import os
import shutil
import statistics
import subprocess
from functools import lru_cache
from typing import Any, Callable

logger = logging.getLogger(__name__)

#: a page with fewer visible characters than this in its text layer may be a scan
MIN_TEXT_CHARS = 20
#: ... when an image covers at least this share of it
MIN_COVER = 0.5
#: pages read by OCR per file at most (about 3 s each on two cores)
MAX_OCR_PAGES = 200
#: images are scaled down to this many pixels on their longer side before OCR
MAX_SIDE = 3000
#: boxes below this recognition score are dropped (smudges, stamps)
MIN_SCORE = 0.5
EXTRA = "pip install 'chunkwise[ocr]'"


#: the engine: `auto` or `rapidocr` (the `ocr` extra), or `tesseract` (its program with
#: English data on the PATH); from the environment variable CHUNKWISE_OCR_ENGINE, read once
#: per process. RapidOCR stays the default until the question sets' OCR excerpts are
#: re-made from Tesseract's text (it reads modern scans far better, docs/formats-office.md)
ENGINE_VARIABLE = "CHUNKWISE_OCR_ENGINE"
#: seconds one page may take in the `tesseract` program
TESSERACT_SECONDS = 120


@lru_cache(maxsize=1)
def engine() -> Callable[[Any], Any] | None:
    """The OCR engine as `read(image array) -> ([(corner points, text, score)], _)`, one
    entry a line; None when no engine is installed (or it fails to load)."""
    choice = os.environ.get(ENGINE_VARIABLE, "auto").strip().lower() or "auto"
    if choice == "tesseract":
        return _tesseract()
    return _rapidocr()


def _tesseract() -> Callable[[Any], Any] | None:
    """Tesseract 5 through its program (Debian's `tesseract-ocr`, with `eng`): words with
    their boxes as TSV, grouped into its lines; None when it is not installed."""
    program = shutil.which("tesseract")
    if program is None:
        return None
    try:
        langs = subprocess.run([program, "--list-langs"], capture_output=True, text=True,
                               timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError) as e:
        logger.debug("tesseract unusable: %s", e)
        return None
    if "eng" not in langs:
        return None

    def read(image: Any) -> tuple[list[Any], Any]:
        import io

        from PIL import Image

        buf = io.BytesIO()
        Image.fromarray(image).save(buf, format="PNG")
        run = subprocess.run([program, "stdin", "stdout", "-l", "eng", "tsv"],
                             input=buf.getvalue(), capture_output=True,
                             timeout=TESSERACT_SECONDS, check=True)
        return _tsv_lines(run.stdout.decode("utf-8", "replace")), None
    return read


def _tsv_lines(tsv: str) -> list[tuple[list[list[float]], str, float]]:
    """Tesseract's TSV words grouped by (block, paragraph, line): each line's box corners,
    its words joined by spaces and its mean word confidence (0-1)."""
    lines: dict[tuple[str, str, str], list[tuple[int, int, int, int, float, str]]] = {}
    for row in tsv.splitlines()[1:]:
        f = row.split("\t")
        if len(f) < 12 or f[0] != "5" or not f[11].strip():
            continue
        left, top, width, height, conf = int(f[6]), int(f[7]), int(f[8]), int(f[9]), float(f[10])
        lines.setdefault((f[2], f[3], f[4]), []).append(
            (left, top, left + width, top + height, conf, f[11].strip()))
    out = []
    for words in lines.values():
        x0, y0 = min(w[0] for w in words), min(w[1] for w in words)
        x1, y1 = max(w[2] for w in words), max(w[3] for w in words)
        text = " ".join(w[5] for w in words)
        score = sum(max(w[4], 0.0) for w in words) / len(words) / 100
        out.append(([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], text, score))
    return out


def _rapidocr() -> Callable[[Any], Any] | None:
    """RapidOCR (the `ocr` extra), with word spaces put back from its character boxes."""
    try:
        from rapidocr_onnxruntime import RapidOCR
    except Exception as e:  # ImportError, or a broken native dependency (cv2, onnxruntime)
        logger.debug("OCR engine unavailable: %s", e)
        return None
    try:
        rapid = RapidOCR()
    except Exception as e:  # a model that does not load is the same as no engine
        logger.debug("OCR engine failed to start: %s", e)
        return None

    def read(image: Any) -> tuple[list[Any], Any]:
        result, elapse = rapid(image, return_word_box=True)
        return [(points, _spaced(text, extra), score)
                for points, text, score, *extra in result or ()], elapse
    return read


#: a gap between two recognised characters at least this share of the line's height is a
#: space the model left out
SPACE_GAP = 0.28


def _spaced(text: str, extra: list[Any]) -> str:
    """`text` with the word spaces put back where its characters' boxes (RapidOCR's
    `return_word_box`: one box per character, from the recogniser's CTC columns) stand
    apart by `SPACE_GAP` of the line's height or more, inside a run of `MIN_RUN` characters
    or more without a space. The recogniser drops spaces between
    words of proportional type on scans with a little noise (`DateofService`); the gap is
    still in the picture. `text` as it is when the boxes do not match its characters."""
    try:
        boxes, chars = extra[0], extra[1]
        if not boxes or len(boxes) != len(chars) or "".join(chars) != text:
            return text
        spans = [(min(p[0] for p in b), max(p[0] for p in b)) for b in boxes]
        height = statistics.median(max(p[1] for p in b) - min(p[1] for p in b) for b in boxes)
    except (TypeError, ValueError, IndexError):
        return text
    out: list[str] = []
    run_start = 0  # where the current run of characters without a space begins, in chars
    for i, (ch, span) in enumerate(zip(chars, spans)):
        if ch == " ":
            out.append(ch)
            run_start = i + 1
            continue
        if i > run_start and span[0] - spans[i - 1][1] >= SPACE_GAP * height \
                and _run_length(chars, run_start) >= MIN_RUN:
            out.append(" ")
        out.append(ch)
    return "".join(out)


#: only a run of at least this many characters without a space is looked at (letter-spaced
#: capitals, `T H E  S L E R E X E`, have wide gaps inside short words)
MIN_RUN = 10


def _run_length(chars: list[str], start: int) -> int:
    end = start
    while end < len(chars) and chars[end] != " ":
        end += 1
    return end - start


# ------------------------------------------------------------------- shared objects
def content_key(page: Any) -> Any:
    """What a page's text and drawing depend on, as object ids: its content streams'
    references and its resources (their references, or the dictionary as written); None
    when a content stream is not an indirect object (nothing to share). Pages with equal
    keys draw the same thing, so their text is read once (`pdf._extract_pages`) and so is
    their scan (`Scans`)."""
    from pypdf.generic import IndirectObject

    contents = page.get("/Contents")
    if contents is None:
        return None
    refs = contents if isinstance(contents, list) else [contents]
    if not refs or not all(isinstance(r, IndirectObject) for r in refs):
        return None
    return (tuple((r.idnum, r.generation) for r in refs), repr(page.get("/Resources")))


# ---------------------------------------------------------------------------- detection
def is_scanned(page: Any, visible_chars: int) -> bool:
    """Whether the page is an image of text (see the module docstring)."""
    if visible_chars >= MIN_TEXT_CHARS:
        return False
    try:
        box = page.mediabox
        area = abs(float(box.width) * float(box.height))
        return area > 0 and _image_area(page) >= MIN_COVER * area
    except Exception:  # a page we cannot measure is not OCR'd
        return False


def _image_area(page: Any) -> float:
    """The largest area (in points) an image XObject is drawn over on the page."""
    from pypdf.generic import ContentStream

    xobjects = page["/Resources"].get_object().get("/XObject")
    if xobjects is None:
        return 0.0
    xobjects = xobjects.get_object()
    contents = page.get_contents()
    if contents is None:
        return 0.0
    ops = contents.operations if isinstance(contents, ContentStream) else \
        ContentStream(contents, page.pdf).operations
    cm, stack, best = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0], [], 0.0
    for operands, op in ops:
        if op == b"q":
            stack.append(cm)
        elif op == b"Q" and stack:
            cm = stack.pop()
        elif op == b"cm" and len(operands) == 6:
            m = [float(v) for v in operands]
            cm = [m[0] * cm[0] + m[1] * cm[2], m[0] * cm[1] + m[1] * cm[3],
                  m[2] * cm[0] + m[3] * cm[2], m[2] * cm[1] + m[3] * cm[3],
                  m[4] * cm[0] + m[5] * cm[2] + cm[4], m[4] * cm[1] + m[5] * cm[3] + cm[5]]
        elif op == b"Do" and operands:
            x = xobjects.get(operands[0])
            if x is not None and x.get_object().get("/Subtype") == "/Image":
                best = max(best, abs(cm[0] * cm[3] - cm[1] * cm[2]))
    return best


# ---------------------------------------------------------------------------------- OCR
def image_key(page: Any) -> Any:
    """What OCR of the page reads, as object ids: its largest image's reference (chosen by
    the size the image declares, without decoding it), the page's /Rotate and its shown
    size; None when the image is not an indirect object. Pages with equal keys have the
    same OCR lines, so a scan shared by 20 pages is decoded and read once (`ocr_pages`)."""
    found = _largest_image_ref(page)
    if found is None or found[1] is None:
        return None
    rotation = (page.get("/Rotate", 0) or 0) % 360
    return (found[1], rotation, _shown_size(page, rotation))


def _largest_image_ref(page: Any) -> tuple[Any, Any] | None:
    """(name, (idnum, generation) or None) of the page's largest image XObject by its
    declared /Width × /Height; None when the page has no image at its top level."""
    xobjects = page["/Resources"].get_object().get("/XObject")
    if xobjects is None:
        return None
    best, best_px = None, 0
    for name, ref in xobjects.get_object().items():
        x = ref.get_object()
        if x.get("/Subtype") != "/Image":
            continue
        px = int(x.get("/Width", 0) or 0) * int(x.get("/Height", 0) or 0)
        if px > best_px:
            key = getattr(ref, "idnum", None)
            best, best_px = (name, None if key is None else (key, ref.generation)), px
    return best


def read_page(page: Any, ocr: Callable[[Any], Any]) -> list[tuple[str, float, float, float]]:
    """The page's text lines as (text, x, y, height) in points (y up), top to bottom."""
    import numpy as np

    image = _largest_image(page)
    if image is None:
        return []
    image = image.convert("RGB")
    rotation = (page.get("/Rotate", 0) or 0) % 360
    if rotation:  # /Rotate turns the page clockwise for display; PIL rotates anticlockwise
        image = image.rotate(-rotation, expand=True)
    scale = MAX_SIDE / max(image.size)
    if scale < 1:
        image = image.resize((round(image.width * scale), round(image.height * scale)))
    result, _ = ocr(np.asarray(image))
    width_pt, height_pt = _shown_size(page, rotation)
    to_pt = width_pt / image.width
    boxes = []
    for points, text, score in result or ():
        if float(score) < MIN_SCORE or not str(text).strip():
            continue
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        boxes.append((min(ys), max(ys), min(xs), str(text).strip()))
    lines = _lines(boxes)
    return [(text, x0 * to_pt, height_pt - top * to_pt, (bottom - top) * to_pt * 0.8)
            for top, bottom, x0, text in lines]


def _largest_image(page: Any) -> Any:
    """The page's largest image, decoded: the top-level one `_largest_image_ref` names
    (only that one is decoded), else the largest pypdf finds (images inside forms)."""
    found = _largest_image_ref(page)
    if found is not None:
        try:
            return page.images[found[0]].image
        except Exception:  # an image pypdf cannot decode: look further
            pass
    best, best_px = None, 0
    for image in page.images:  # decoded lazily by pypdf, one at a time
        try:
            w, h = image.image.size
        except Exception:  # an image pypdf cannot decode is skipped
            continue
        if w * h > best_px:
            best, best_px = image.image, w * h
    return best


def _shown_size(page: Any, rotation: int) -> tuple[float, float]:
    box = page.mediabox
    w, h = abs(float(box.width)), abs(float(box.height))
    return (h, w) if rotation in (90, 270) else (w, h)


def _lines(boxes: list[tuple[float, float, float, str]]) -> list[tuple[float, float, float, str]]:
    """Boxes (top, bottom, left, text) grouped into lines: a box joins the line whose
    vertical extent it overlaps by at least half its height; lines top to bottom, boxes
    left to right."""
    lines: list[list[Any]] = []  # [top, bottom, [(left, text)]]
    for top, bottom, left, text in sorted(boxes):
        for line in lines:
            overlap = min(bottom, line[1]) - max(top, line[0])
            if overlap >= 0.5 * min(bottom - top, line[1] - line[0]):
                line[0], line[1] = min(top, line[0]), max(bottom, line[1])
                line[2].append((left, text))
                break
        else:
            lines.append([top, bottom, [(left, text)]])
    out = []
    for top, bottom, parts in sorted(lines, key=lambda ln: ln[0]):
        parts.sort()
        out.append((top, bottom, parts[0][0], " ".join(t for _, t in parts)))
    return out


def ocr_pages(pages: list[Any], scanned: list[int], warnings: list[str],
              source: str) -> dict[int, list[tuple[str, float, float, float]]]:
    """OCR lines of the scanned pages (indexes into `pages`); warnings for a missing engine,
    pages over the bound and pages that fail. Pages showing the same image object the same
    way (`image_key`) are read once and share its lines (or its failure); `MAX_OCR_PAGES`
    bounds the images read, so a shared scan spends it once."""
    ocr = engine()
    if ocr is None:
        warnings.append(f"{len(scanned)} scanned page(s) without a text layer: no OCR engine "
                        f"installed ({EXTRA})")
        return {}
    out: dict[int, list[tuple[str, float, float, float]]] = {}
    done: dict[Any, int | str] = {}  # image key -> the page read from it, or why it failed
    failed, over, runs = [], [], 0
    for i in scanned:
        try:
            key = image_key(pages[i])
        except Exception:  # resources we cannot walk: the page is read on its own
            key = None
        got = done.get(key) if key is not None else None
        if isinstance(got, int):
            out[i] = list(out[got])
            continue
        why = got
        if why is None:
            if runs >= MAX_OCR_PAGES:
                over.append(i + 1)
                continue
            runs += 1
            try:
                out[i] = read_page(pages[i], ocr)
            except MemoryError:
                raise
            except Exception as e:  # one unreadable image costs its page only
                why = type(e).__name__
                logger.debug("OCR of page %d of %s: %s", i + 1, source, e)
            if key is not None:
                done[key] = why if why is not None else i
        if why is not None:
            failed.append(f"{i + 1} ({why})")
    if over:
        warnings.append(f"OCR read {MAX_OCR_PAGES} images, the bound per file "
                        f"(MAX_OCR_PAGES); {len(over)} of {len(scanned)} scanned pages left "
                        f"without text (pages {page_ranges(over)})")
    if failed:
        warnings.append(f"OCR failed on {len(failed)} page(s): " + "; ".join(failed[:5]))
    return out


def page_ranges(numbers: list[int], most: int = 5) -> str:
    """`3-7, 9, 12-40` for sorted page numbers (the first `most` runs, then `…`)."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:most])
    return text + (", …" if len(runs) > most else "")
