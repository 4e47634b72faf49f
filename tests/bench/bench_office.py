"""Speed of the Office parsers (and of PDF tables) next to MarkItDown on the same files.

For each format (docx, pptx, xlsx, and pdf for the ruled-table files), per run over that
format's files, the median of --runs:
  - chunkwise parse: `parsers.<fmt>.parse` of every file's bytes,
  - chunkwise chunk: parse + fitting to the budget,
  - MarkItDown: `MarkItDown().convert(path)` of every file (its text only, no chunking),
all timed in the same process, so the ratio chunkwise / MarkItDown compares like with like.
Printed as a Markdown table (MB, milliseconds, seconds per MB, ratios).

    pip install 'markitdown[docx,pptx,xlsx,pdf]'
    python tests/bench/bench_office.py [--runs 5] [--folder DIR ...]

Default folders: ../shared/corpus/office and ../shared/corpus/pdf-tables when present, else
the fixtures. MarkItDown missing: its columns say so.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from chunkwise import Chunker
from chunkwise.parsers import detect_format, get_parser
from _timing import timed  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ("docx", "pptx", "xlsx", "pdf")


def files_by_format(folders: list[Path]) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for folder in folders:
        for p in sorted(folder.iterdir()):
            fmt = detect_format(p.name) if p.is_file() else None
            if fmt in FORMATS:
                out.setdefault(fmt, []).append(p)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--folder", type=Path, nargs="*", default=None)
    args = ap.parse_args()
    corpus = ROOT.parent / "shared" / "corpus"
    folders = args.folder or ([corpus / "office", corpus / "pdf-tables"]
                              if (corpus / "office").is_dir() else [ROOT / "fixtures"])
    try:
        from markitdown import MarkItDown

        mid = MarkItDown()
    except ImportError:
        mid = None
    chunker = Chunker()
    print("| format | files | MB | parse ms | chunk ms | parse s/MB | MarkItDown ms | "
          "parse / MarkItDown | chunk / MarkItDown |")
    print("|---|---|---|---|---|---|---|---|---|")
    for fmt, files in files_by_format(folders).items():
        if fmt == "pdf":  # the scanned files measure OCR, not table detection
            files = [p for p in files if "scanned" not in p.name]
        data = [(p, p.read_bytes()) for p in files]
        mb = sum(len(d) for _, d in data) / 1e6
        parse = get_parser(fmt)
        t_parse = timed(lambda: [parse(d, source=p.name) for p, d in data], args.runs, warm=True)
        t_chunk = timed(lambda: [chunker.chunk_bytes(d, source=p.name) for p, d in data],
                        args.runs, warm=True)
        if mid is not None:
            t_mid = timed(lambda: [mid.convert(str(p)) for p, _ in data], args.runs, warm=True)
            ratios = f"{t_mid * 1e3:.0f} | {t_parse / t_mid:.2f} | {t_chunk / t_mid:.2f}"
        else:
            ratios = "not installed | - | -"
        print(f"| {fmt} | {len(files)} | {mb:.2f} | {t_parse * 1e3:.0f} | {t_chunk * 1e3:.0f} | "
              f"{t_parse / mb:.3f} | {ratios} |")


if __name__ == "__main__":
    main()
