"""Chunking throughput on the shared corpus (text + Markdown), 512 cl100k_base tokens.

For every document, times (median of --runs):
  - one tiktoken `encode_ordinary` pass over the document (the reference, 1.0x),
  - chunkwise (parsing included),
  - LangChain `RecursiveCharacterTextSplitter.from_tiktoken_encoder`,
  - Chonkie `RecursiveChunker` (with the same tiktoken encoding),
and prints, per format, the median over documents of each time as a ratio to the reference,
then the total over documents of each time against the total of the reference, per format
and over every format timed (with `--formats text,markdown`, the "Markdown + text input" of
issue 33; large documents weigh on it as they weigh on a corpus run). It also checks linear
growth: the corpus doubled and tripled (documents concatenated) should take about 2x and 3x
the time.

    python tests/bench/bench_chunk.py [--runs 5] [--corpus ../shared/corpus]
        [--table-rows row,grouped,auto] [--formats text,markdown] [--per-document] [--cpu]
        [--interleave] [--no-views]

`--table-rows`: one chunkwise column per table-rows policy (`Chunker(table_rows=...)`),
named `chunkwise` for the default's and `cw-POLICY` for the others'. `--per-document`: each
document's ratios too (and its reference time), under its format's line, and which chunkwise
is measured (its folder: run this script with another checkout's Python to time that one).
`--cpu`: this process's CPU time (`time.process_time`) instead of wall time, for both the
reference and the chunkers: on a shared machine, what other processes take is not counted.
`--no-views`: one more chunkwise column, `cw-noviews`, with `views="none"` (every chunk
embeds its context and text: what the views cost). `--interleave`: per document, `--runs`
rounds that each call the reference and every chunker once, in turn (a slow spell of the
machine then slows them alike); the medians as before. To time another revision, lay its
package out as installed with `identity.py`'s `package` and run this script over it:

    python -c "import sys; from pathlib import Path; sys.path.insert(0, 'tests/bench');
               from identity import package; package('30d3e98', Path('/tmp/rev'))"
    PYTHONPATH=/tmp/rev python tests/bench/bench_chunk.py --cpu --interleave

Competitors are optional: `pip install langchain-text-splitters chonkie`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from chunkwise import Chunker

try:
    from chunkwise.sizing.sizers import tiktoken_encoding
except ImportError:  # a checkout from before the sub-packages (2026-11-27), timed for comparison
    from chunkwise.sizing import tiktoken_encoding  # type: ignore[no-redef]
from _timing import timed, timed_interleaved  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]


def competitors(enc, budget: int) -> dict:
    out = {}
    try:
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        lc = RecursiveCharacterTextSplitter.from_tiktoken_encoder(
            encoding_name="cl100k_base", chunk_size=budget, chunk_overlap=0)
        out["langchain"] = lc.split_text
    except ImportError:
        pass
    try:
        from chonkie import RecursiveChunker

        ch = RecursiveChunker(tokenizer=enc, chunk_size=budget)
        # Chonkie memoises token counts by text (an `lru_cache` on the class, 4,096 entries):
        # a document chunked again is then nearly free (0.1x a pass after the first run in
        # Chonkie 1.7), which no corpus run sees. Each timed call starts with it empty.
        forget = getattr(getattr(RecursiveChunker, "_estimate_token_count", None),
                         "cache_clear", lambda: None)

        def chonkie(text: str) -> list:
            forget()
            return ch.chunk(text)

        out["chonkie"] = chonkie
    except Exception:  # not installed, or its API changed
        pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--table-rows", default="", help="policies to time, comma-separated")
    ap.add_argument("--formats", default="text,markdown")
    ap.add_argument("--per-document", action="store_true",
                    help="print each document's ratios, not only their median")
    ap.add_argument("--cpu", action="store_true", help="time CPU, not wall, time")
    ap.add_argument("--interleave", action="store_true",
                    help="call the reference and the chunkers in turn, run after run")
    ap.add_argument("--no-views", action="store_true",
                    help="also time chunkwise with views='none' (column cw-noviews)")
    args = ap.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    enc = tiktoken_encoding("cl100k_base")
    chunker = Chunker(max_tokens=args.max_tokens, tokenizer="cl100k_base")
    default = getattr(chunker, "table_rows", "row")
    others = {f"cw-{p}": Chunker(max_tokens=args.max_tokens, tokenizer="cl100k_base",
                                 table_rows=p).chunk_text
              for p in filter(None, args.table_rows.split(",")) if p != default}
    if args.no_views:
        others["cw-noviews"] = Chunker(max_tokens=args.max_tokens, tokenizer="cl100k_base",
                                       views="none").chunk_text
    others.update(competitors(enc, args.max_tokens))
    if args.per_document:
        import chunkwise

        print(f"chunkwise from {Path(chunkwise.__file__).parent}")
    print(f"median time / one tiktoken pass, per document ({args.runs} runs each)")
    print(f"{'format':10} {'docs':>5} {'MB':>6} {'chunkwise':>10} " + " ".join(f"{k:>10}" for k in others))
    exts = {"text": "txt", "markdown": "md"}
    totals: dict[str, dict[str, float]] = {}  # format -> reference and each chunker: seconds
    for fmt in args.formats.split(","):
        ext = exts[fmt]
        files = sorted((args.corpus / fmt).glob(f"*.{ext}"))
        ratios: dict[str, list[float]] = {"chunkwise": [], **{k: [] for k in others}}
        total = totals[fmt] = dict.fromkeys(["ref", *ratios], 0.0)
        size, lines = 0, []
        for f in files:
            data = f.read_bytes()
            text = data.decode("utf-8", "replace")
            size += len(data)
            calls = [lambda: enc.encode_ordinary(text),
                     lambda: chunker.chunk_bytes(data, source=str(f), format=fmt)]
            for name, fn in others.items():
                calls.append((lambda fn=fn: fn(text, format=fmt)) if name.startswith("cw-")
                             else (lambda fn=fn: fn(text)))
            if args.interleave:
                ref, *spent = timed_interleaved(calls, args.runs, clock=clock)
            else:
                ref, *spent = [timed(call, args.runs, collect="once", clock=clock)
                               for call in calls]
            total["ref"] += ref
            for name, seconds in zip(ratios, spent):
                ratios[name].append(seconds / ref)
                total[name] += seconds
            lines.append(f"  {f.stem[:26]:26} ref {ref * 1e3:7.2f} ms " +
                         " ".join(f"{v[-1]:>9.3f}x" for v in ratios.values()))
        cells = " ".join(f"{statistics.median(v):>9.2f}x" for v in ratios.values())
        print(f"{fmt:10} {len(files):>5} {size / 1e6:>6.2f} {cells}")
        if args.per_document:
            print("\n".join(lines))
    print("total time / total tiktoken time (the documents' medians summed)")
    print(f"{'format':10} " + " ".join(f"{k:>10}" for k in ["chunkwise", *others]))
    every = {name: sum(t[name] for t in totals.values()) for name in next(iter(totals.values()))}
    for label, t in [*totals.items(), ("all", every)]:
        print(f"{label:10} " + " ".join(f"{t[name] / t['ref']:>9.2f}x"
                                        for name in t if name != "ref"))
    if "text" not in args.formats.split(","):
        return
    # linear growth: whole corpus text once, twice, three times
    files = sorted((args.corpus / "text").glob("*.txt"))
    base = "\n\n".join(f.read_text("utf-8", "replace") for f in files)
    t1 = timed(lambda: chunker.chunk_text(base), 3, collect="once", clock=clock)
    for k in (2, 3):
        big = "\n\n".join([base] * k)
        tk = timed(lambda: chunker.chunk_text(big), 3, collect="once", clock=clock)
        print(f"linear growth: {k}x the text takes {tk / t1:.2f}x the time")


if __name__ == "__main__":
    main()
