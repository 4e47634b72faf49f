"""Speed of code chunking per language, next to tree-sitter's own parse of the same files.

For each language of `chunkwise.parsers.code.languages` (files: the --folder(s), else
../shared/corpus/code-multi when present, else the fixtures), per run over that language's files, the median of --runs:
  - tree-sitter parse: `Parser.parse` of every file (the floor for any syntax-aware chunker),
  - chunkwise parse: `parsers.code` (decode + tree-sitter + sections),
  - chunkwise chunk: parse + fitting to the budget (tokenizer and budget as given).
Printed as a Markdown table: the milliseconds of each, and the ratios parse / tree-sitter and
chunk / tree-sitter (all three timed in the same process, so the ratios compare like with like).

    python tests/bench/bench_code_languages.py [--runs 5] [--tokenizer minilm] [--max-tokens 256]
        [--folder DIR ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from chunkwise import Chunker
from chunkwise.parsers import detect_format, get_parser
from chunkwise.parsers.code import languages as code_parser
from _timing import timed  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]


def files_by_language(folders: list[Path]) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for path in sorted(p for folder in folders for p in folder.iterdir()):
        fmt = detect_format(path.name)
        if fmt in code_parser.LANGUAGES:
            out.setdefault(fmt, []).append(path)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokenizer", default="minilm")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--folder", type=Path, nargs="+", default=None)
    args = ap.parse_args()
    from tree_sitter import Parser

    folders = args.folder or [ROOT.parent / "shared" / "corpus" / "code-multi"]
    if not all(f.is_dir() for f in folders):
        folders = [ROOT / "fixtures"]
    chunker = Chunker(tokenizer=args.tokenizer, max_tokens=args.max_tokens)
    print(f"files: {', '.join(map(str, folders))}; {args.tokenizer} {args.max_tokens}; median of {args.runs} runs\n")
    print("| language | files | KB | tree-sitter ms | parse ms | chunk ms | parse / ts "
          "| chunk / ts | chunks |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for fmt, paths in sorted(files_by_language(folders).items()):
        datas = [p.read_bytes() for p in paths]
        ts = Parser(code_parser.grammar(fmt))
        parse = get_parser(fmt)
        t_ts = timed(lambda: [ts.parse(d) for d in datas], args.runs, warm=True)
        t_parse = timed(lambda: [parse(d, source=p.name) for d, p in zip(datas, paths)],
                        args.runs, warm=True)
        t_chunk = timed(lambda: [chunker.chunk_document(parse(d, source=p.name))
                                 for d, p in zip(datas, paths)], args.runs, warm=True)
        n = sum(len(chunker.chunk_document(parse(d, source=p.name)))
                for d, p in zip(datas, paths))
        kb = sum(map(len, datas)) / 1024
        print(f"| {fmt} | {len(paths)} | {kb:.0f} | {t_ts * 1e3:.1f} | {t_parse * 1e3:.1f} "
              f"| {t_chunk * 1e3:.1f} | {t_parse / t_ts:.1f} | {t_chunk / t_ts:.1f} | {n} |")


if __name__ == "__main__":
    main()
