"""Throughput and structure for Python code and CSV tables on the shared corpus.

Code (corpus/code/*.py), per run over the whole folder (median of --runs):
  - tree-sitter alone: `Parser.parse` of every file (the floor for any AST splitter),
  - chunkwise parse: `parsers.python.parse` (decode + tree-sitter + sections),
  - chunkwise chunk: parse + fitting to the budget,
  - LlamaIndex `CodeSplitter` in token mode with the same tokenizer and budget (its parser is
    built from tree_sitter_python, so no tree_sitter_language_pack download is needed).
  Structure, for chunkwise and CodeSplitter: the share of functions/classes that fit the
  budget (with their enclosing class/def header lines, which chunkwise embeds as context)
  and are kept whole in one chunk, and the largest chunk in tokens (over the budget is a
  contract violation).
CSV (corpus/csv/*.csv): `csv.reader` over every file alone, chunkwise parse, chunkwise chunk.

    python tests/bench/bench_code_csv.py [--runs 5] [--tokenizer cl100k_base] [--max-tokens 512]
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import sys
from pathlib import Path
from typing import Callable

from chunkwise import Chunker
from chunkwise.parsers.code import languages as code_parser
from chunkwise.parsers import csv as csv_parser
from chunkwise.parsers.code.languages import parser_for
parse_python = parser_for("python")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lines import LineIndex  # noqa: E402 (the tests' own line index)
from _timing import timed  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]


def code_splitter(tokenizer: Callable[[str], list], budget: int):
    """LlamaIndex CodeSplitter counting the same tokens, or None when unavailable."""
    try:
        from llama_index.core.node_parser import CodeSplitter
        from tree_sitter import Parser
    except ImportError:
        return None
    parser = Parser(code_parser.grammar("python"))
    return CodeSplitter(language="python", parser=parser, count_mode="token",
                        max_tokens=budget, tokenizer=tokenizer, chunk_lines=10_000,
                        max_chars=10**9)


def definitions(text: str) -> list[tuple[int, int, str]]:
    """(start, end, enclosing headers) of every function/class, decorators included, from
    Python's own `ast`; the headers are the `class X:` / `def f():` lines around it."""
    lines = LineIndex(text)
    out, todo = [], [(ast.parse(text), "")]
    while todo:
        node, heads = todo.pop()
        for child in ast.iter_child_nodes(node):
            inner = heads
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = child.decorator_list[0] if child.decorator_list else child
                start = lines.offset(first.lineno - 1) + first.col_offset
                out.append((start - (1 if child.decorator_list else 0),
                            lines.offset(child.end_lineno - 1) + child.end_col_offset, heads))
                head = text[lines.offset(child.lineno - 1):lines.offset(child.body[0].lineno - 1)]
                inner = f"{heads}{head.rstrip()}\n"
            todo.append((child, inner))
    return out


def kept_whole(text: str, spans: list[tuple[int, int]], count, budget: int) -> tuple[int, int]:
    """(definitions that fit the budget together with their enclosing headers, those inside
    exactly one chunk span)."""
    fits = whole = 0
    for a, b, heads in definitions(text):
        if count(f"{heads}\n{text[a:b]}" if heads else text[a:b]) <= budget:
            fits += 1
            whole += sum(1 for s, e in spans if s <= a and b <= e) == 1
    return fits, whole


def splitter_spans(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """CodeSplitter returns stripped strings: locate them in order (offsets are ours)."""
    spans, pos = [], 0
    for piece in pieces:
        at = text.find(piece, pos)
        if at < 0:
            continue
        spans.append((at, at + len(piece)))
        pos = at + len(piece)
    return spans


def bench_code(files: list[Path], chunker: Chunker, tokenize: Callable[[str], list],
               runs: int) -> None:
    from tree_sitter import Parser

    datas = [f.read_bytes() for f in files]
    mb = sum(map(len, datas)) / 1e6
    count = chunker.sizer.count
    budget = chunker.max_tokens
    ts = Parser(code_parser.grammar("python"))
    rows = {
        "tree-sitter parse": timed(lambda: [ts.parse(d) for d in datas], runs),
        "chunkwise parse": timed(lambda: [parse_python(d, source="x.py") for d in datas],
                                 runs),
        "chunkwise chunk": timed(lambda: [chunker.chunk_bytes(d, source=f"{i}.py")
                                          for i, d in enumerate(datas)], runs),
    }
    splitter = code_splitter(tokenize, budget)
    texts = [parse_python(d, source="x.py").text for d in datas]
    if splitter is not None:
        rows["llama-index CodeSplitter"] = timed(lambda: [splitter.split_text(t) for t in texts],
                                                 runs)
    print(f"code: {len(files)} files, {mb:.2f} MB, {chunker.tokenizer} {budget} tokens")
    for name, secs in rows.items():
        print(f"  {name:26} {mb / secs:8.2f} MB/s  ({secs:.3f} s)")
    fits = whole = biggest = 0
    for d, t in zip(datas, texts):
        chunks = chunker.chunk_bytes(d, source="x.py")
        ours = [(c.start, c.end) for c in chunks]
        f, w = kept_whole(t, ours, count, budget)
        fits, whole = fits + f, whole + w
        biggest = max([biggest, *(c.tokens for c in chunks)])
    print(f"  chunkwise: {whole}/{fits} fitting definitions whole, largest chunk {biggest} tokens")
    if splitter is not None:
        fits = whole = biggest = over = total = 0
        for t in texts:
            pieces = splitter.split_text(t)
            f, w = kept_whole(t, splitter_spans(t, pieces), count, budget)
            fits, whole = fits + f, whole + w
            sizes = [count(p) for p in pieces]
            biggest = max([biggest, *sizes])
            over, total = over + sum(n > budget for n in sizes), total + len(sizes)
        print(f"  CodeSplitter: {whole}/{fits} fitting definitions whole, "
              f"largest chunk {biggest} tokens, {over}/{total} chunks over the budget")


def bench_csv(files: list[Path], chunker: Chunker, runs: int) -> None:
    datas = [f.read_bytes() for f in files]
    mb = sum(map(len, datas)) / 1e6
    texts = [d.decode("utf-8", "replace") for d in datas]

    def read_all() -> None:
        for t in texts:
            for _ in csv.reader(io.StringIO(t, newline="")):
                pass

    rows = {
        "csv.reader alone": timed(read_all, runs),
        "chunkwise parse": timed(lambda: [csv_parser.parse(d, source=f.name)
                                          for d, f in zip(datas, files)], runs),
        "chunkwise chunk": timed(lambda: [chunker.chunk_bytes(d, source=f.name)
                                          for d, f in zip(datas, files)], runs),
    }
    print(f"csv: {len(files)} files, {mb:.2f} MB")
    for name, secs in rows.items():
        print(f"  {name:26} {mb / secs:8.2f} MB/s  ({secs:.3f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--tokenizer", default="cl100k_base")
    ap.add_argument("--max-tokens", type=int, default=512)
    args = ap.parse_args()
    chunker = Chunker(max_tokens=args.max_tokens, tokenizer=args.tokenizer)
    if args.tokenizer in ("cl100k_base", "o200k_base"):
        from chunkwise.sizing.sizers import tiktoken_encoding

        tokenize = tiktoken_encoding(args.tokenizer).encode_ordinary
    else:  # CodeSplitter only takes len() of what the tokenizer returns
        tokenize = lambda s: [0] * chunker.sizer.count(s)  # noqa: E731
    bench_code(sorted((args.corpus / "code").glob("*.py")), chunker, tokenize, args.runs)
    bench_csv(sorted((args.corpus / "csv").glob("*.csv")), chunker, args.runs)

if __name__ == "__main__":
    main()
