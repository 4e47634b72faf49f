"""Benchmark: the HTML parser against BeautifulSoup's own parse time.

    python tests/bench/bench_html.py [FOLDER_OR_FILE ...] [--runs 5] [--max-tokens 256]
                                     [--tokenizer minilm]

For every page (default: ../shared/corpus/html) it times, as the median of `--runs` runs:

- `bs4`   : `BeautifulSoup(data, "lxml")` on the file's bytes alone, as a user would call it;
- `str`   : the same on the already decoded text with the garbage collector paused, which is
  exactly the bs4 work inside `parse` (it decodes first, sparing bs4 its encoding detection,
  and pauses the collector while the tree is built), so `vs str` is the cost of the walk;
- `parse` : `chunkwise.parsers.html.parse` (decode, the same bs4 parse, one walk, sections);
- `chunk` : parse + fitting to the token budget (`Chunker.chunk_document`).

It prints a table of times, MB/s and the overhead of `parse` over `bs4` and over `bs4 str`
(target: at most +50% over BeautifulSoup's parse).
"""

from __future__ import annotations

import argparse
import gc
import sys
import warnings
from pathlib import Path
from _timing import timed  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus" / "html"


def _nogc(fn, *args):
    gc.disable()
    try:
        return fn(*args)
    finally:
        gc.enable()


def _files(args: list[str]) -> list[Path]:
    out: list[Path] = []
    for a in args or [str(DEFAULT_CORPUS)]:
        p = Path(a)
        out.extend(sorted(q for q in p.iterdir() if q.suffix in (".html", ".htm"))
                   if p.is_dir() else [p])
    return out


def _row(name: str, size: int, t_bs4: float, t_str: float, t_parse: float,
         t_chunk: float) -> None:
    print(f"{name[:36]:36} {size / 1e3:5.0f} {t_bs4 * 1e3:7.1f} {t_str * 1e3:7.1f} "
          f"{t_parse * 1e3:8.1f} {t_chunk * 1e3:8.1f} {t_parse / t_bs4 - 1:+7.0%} "
          f"{t_parse / t_str - 1:+7.0%}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--tokenizer", default="minilm")
    args = ap.parse_args(argv)

    from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning

    from chunkwise.parsers.html import parse

    warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
    chunker = None
    try:
        from chunkwise import Chunker
        chunker = Chunker(max_tokens=args.max_tokens, tokenizer=args.tokenizer)
    except Exception as e:  # the fitter may not be there in a partial checkout
        print(f"(full chunking not measured: {e})", file=sys.stderr)

    files = _files(args.paths)
    if not files:
        print("no HTML files found", file=sys.stderr)
        return 2
    head = (f"{'file':36} {'KB':>5} {'bs4 ms':>7} {'str ms':>7} {'parse ms':>8} {'chunk ms':>8}"
            f" {'vs bs4':>7} {'vs str':>7}")
    print(head)
    print("-" * len(head))
    totals = {"bytes": 0, "bs4": 0.0, "str": 0.0, "parse": 0.0, "chunk": 0.0}
    for path in files:
        data = path.read_bytes()
        src = str(path)
        text = data.decode("utf-8", errors="replace")
        t_bs4 = timed(lambda: BeautifulSoup(data, "lxml"), args.runs, collect="each")
        t_str = timed(lambda: _nogc(BeautifulSoup, text, "lxml"), args.runs, collect="each")
        t_parse = timed(lambda: parse(data, source=src), args.runs, collect="each")
        t_chunk = float("nan")
        if chunker is not None:
            t_chunk = timed(
                lambda: chunker.chunk_document(parse(data, source=src)), args.runs,
                collect="each")
        totals["bytes"] += len(data)
        totals["bs4"] += t_bs4
        totals["str"] += t_str
        totals["parse"] += t_parse
        totals["chunk"] += t_chunk
        _row(path.name, len(data), t_bs4, t_str, t_parse, t_chunk)
    mb = totals["bytes"] / 1e6
    print("-" * len(head))
    _row("total", totals["bytes"], totals["bs4"], totals["str"], totals["parse"], totals["chunk"])
    print(f"\nthroughput MB/s: bs4 {mb / totals['bs4']:.2f}   str {mb / totals['str']:.2f}"
          f"   parse {mb / totals['parse']:.2f}"
          f"   parse+chunk {mb / totals['chunk']:.2f}"
          f"   ({args.tokenizer}, max_tokens {args.max_tokens}, median of {args.runs} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
