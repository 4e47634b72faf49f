"""PDF throughput: chunkwise against pypdf's own `extract_text()` over the same pages.

For every PDF (default: the shared corpus folder pdf/), times, median of --runs, each run
on a fresh reader so that pypdf's caches do not favour either side:
  - pypdf: `PdfReader(...)` and `page.extract_text()` for every page (the reference),
  - parse: `chunkwise.parsers.pdf.reader.parse()` (extraction, running lines, headings, sections),
  - chunk: parse plus fitting (`Chunker(max_tokens=..., tokenizer=...)`),
and prints pages/s for each and the overhead of chunkwise on top of pypdf. The target is
parse overhead <= 50%.

    python tests/bench/bench_pdf.py [PDF_OR_FOLDER ...] [--runs 5] [--tokenizer minilm]
"""

from __future__ import annotations

import argparse
import io
import logging
from pathlib import Path

import pypdf

from chunkwise import Chunker
from chunkwise.parsers.pdf import reader as pdf
from _timing import timed  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT.parent / "shared" / "corpus" / "pdf"


def pypdf_extract(data: bytes) -> int:
    reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
    return sum(len(page.extract_text()) for page in reader.pages)


def files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        out += sorted(p.glob("*.pdf")) if p.is_dir() else [p]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path, default=[DEFAULT])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokenizer", default="minilm")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # the reference side logs too
    chunker = Chunker(max_tokens=args.max_tokens, tokenizer=args.tokenizer)

    print(f"{'file':44} {'pages':>5} {'pypdf p/s':>10} {'parse p/s':>10} {'chunk p/s':>10} "
          f"{'parse +%':>9} {'chunk +%':>9}")
    totals = [0.0, 0.0, 0.0]
    total_pages = 0
    for path in files(args.paths):
        data = path.read_bytes()
        pages = len(pypdf.PdfReader(io.BytesIO(data), strict=False).pages)
        ref = timed(lambda: pypdf_extract(data), args.runs)
        par = timed(lambda: pdf.parse(data, source=str(path)), args.runs)
        chk = timed(lambda: chunker.chunk_document(pdf.parse(data, source=str(path))), args.runs)
        for k, t in enumerate((ref, par, chk)):
            totals[k] += t
        total_pages += pages
        print(f"{path.name[:44]:44} {pages:5} {pages / ref:10.1f} {pages / par:10.1f} "
              f"{pages / chk:10.1f} {100 * (par / ref - 1):8.0f}% {100 * (chk / ref - 1):8.0f}%")
    ref, par, chk = totals
    if total_pages:
        n = total_pages
        print(f"{'ALL':44} {n:5} {n / ref:10.1f} {n / par:10.1f} {n / chk:10.1f} "
              f"{100 * (par / ref - 1):8.0f}% {100 * (chk / ref - 1):8.0f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
