"""Word spaces in OCR text: word error rate, character error rate and run-together words of
chunkwise's OCR against a reference text, per page.

A page is given as `IMAGE_OR_PDF=REFERENCE`: the reference is a text file transcribed by hand,
or `pdf:PATH:PAGE` for the text layer of a real PDF page that IMAGE was rendered from
(`pdftoppm -r 150 -gray -f N -l N -png PATH out`). An image is wrapped into a one-page
scanned PDF (no text layer) and read through `chunkwise.parsers.pdf.reader.parse`, so the
line assembly of `parsers/pdf/ocr.py` is measured with the engine.

    python tests/bench/ocr_words.py /tmp/scans/page.png=pdf:corpus.pdf:1 ...

A run-together word is an OCR token that is not a reference word but splits into two or
more reference words (`DateofService`). Reference and OCR are compared with whitespace
collapsed (a reference of the top of a page is compared with the OCR text up to its
last three words, when they are found); WER is the word-level edit distance over the reference's words, CER the
character-level one over its characters.
"""

from __future__ import annotations

import io
import re
import sys
import time
from pathlib import Path


def _distance(a: list, b: list) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def _splits(token: str, vocab: set[str]) -> bool:
    """`token` is two or more words of `vocab` written together."""
    n = len(token)
    parts = [0] + [-1] * n  # fewest words covering token[:i], -1: none
    for i in range(1, n + 1):
        for j in range(max(0, i - 30), i):
            if parts[j] >= 0 and token[j:i] in vocab:
                parts[i] = parts[j] + 1 if parts[i] < 0 else min(parts[i], parts[j] + 1)
    return parts[n] >= 2


def _words(text: str) -> list[str]:
    return text.split()


def _reference(spec: str) -> str:
    if spec.startswith("pdf:"):
        from pypdf import PdfReader

        _, path, page = spec.split(":")
        return PdfReader(path).pages[int(page) - 1].extract_text() or ""
    return Path(spec).read_text(encoding="utf-8")


def _scan(path: Path) -> bytes:
    if path.suffix.lower() == ".pdf":
        return path.read_bytes()
    from PIL import Image

    buf = io.BytesIO()
    Image.open(path).convert("L").save(buf, format="PDF", resolution=150)
    return buf.getvalue()


def measure(image: Path, reference: str) -> dict:
    from chunkwise.parsers.pdf import reader

    t0 = time.process_time()
    doc = reader.parse(_scan(image), source=image.name)
    seconds = time.process_time() - t0
    ref, got = _words(reference), _words(doc.text)
    tail = ref[-3:]  # a reference of part of a page: the OCR text up to its last words
    for i in range(len(got) - 2, 0, -1):
        if got[i:i + 3] == tail:
            got = got[:i + 3]
            break
    strip = re.compile(r"^\W+|\W+$")
    vocab = {strip.sub("", w).lower() for w in ref} - {""}
    together = [w for w in got if strip.sub("", w).lower() not in vocab
                and _splits(strip.sub("", w).lower(), vocab)]
    return {"page": image.name, "words": len(ref),
            "wer": _distance(ref, got) / max(1, len(ref)),
            "cer": _distance(list(" ".join(ref)), list(" ".join(got))) / max(1, len(" ".join(ref))),
            "run_together": len(together), "examples": together[:5], "cpu_s": round(seconds, 1)}


def main(argv: list[str]) -> None:
    for arg in argv:
        image, ref = arg.split("=", 1)
        r = measure(Path(image), _reference(ref))
        print(f"{r['page']}\twords {r['words']}\tWER {r['wer']:.1%}\tCER {r['cer']:.1%}\t"
              f"run-together {r['run_together']} {r['examples']}\tcpu {r['cpu_s']} s")


if __name__ == "__main__":
    main(sys.argv[1:])
