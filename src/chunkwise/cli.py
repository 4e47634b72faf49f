"""The `chunkwise` command: a thin layer over the API.

Parses arguments, calls the library, prints; a `ChunkwiseError` becomes one line on stderr
(`path: reason`). Exit status: 0 all good, 1 some file failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Sequence

from .cli_options import chunk_options
from .errors import ChunkwiseError, ConfigError
from .textio import display_name

EXAMPLES = {
    "chunk": "chunkwise chunk docs/ --jsonl --max-tokens 512 --tokenizer cl100k_base",
    "text": "chunkwise text page.html",
    "sections": "chunkwise sections guide.md --jsonl",
}



def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="chunkwise",
        description="Structure-aware chunking of documents (Markdown, HTML, PDF, Python, CSV, "
                    "text) into token-exact chunks, and ingestion into Chroma.",
        epilog="Examples:\n  " + "\n  ".join(EXAMPLES.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="log details on stderr")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("chunk", help="chunk files and folders",
                       description="Chunk files (folders are walked recursively).",
                       epilog=f"Example:\n  {EXAMPLES['chunk']}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--jsonl", action="store_true", help="one JSON object per chunk (the contract)")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="name documents relative to DIR (default: the folder given)")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="read symlinks that point outside the root (default: skipped)")
    p.add_argument("--color", nargs="?", const="auto", default="never",
                   choices=("auto", "always", "never"),
                   help="print each document's text with chunks in alternating colours "
                        "(auto: only on a terminal; always: forced)")
    chunk_options(p)
    p.set_defaults(func=cmd_chunk)

    p = sub.add_parser("text", help="print a document's canonical text",
                       description="Print the canonical text that all offsets index.",
                       epilog=f"Example:\n  {EXAMPLES['text']}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", metavar="PATH")
    p.add_argument("--format", default=None, help="force the input format")
    p.set_defaults(func=cmd_text)

    p = sub.add_parser("sections", help="print a document's sections",
                       description="Print the tiled sections the fitter respects.",
                       epilog=f"Example:\n  {EXAMPLES['sections']}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", metavar="PATH")
    p.add_argument("--jsonl", action="store_true", help="one JSON object per section")
    p.add_argument("--format", default=None, help="force the input format")
    p.set_defaults(func=cmd_sections)

    try:
        from . import cli_store
    except ImportError:  # the store commands are optional
        cli_store = None
    if cli_store is not None:
        cli_store.register(sub)
        from . import cli_eval  # evaluation runs on a store

        cli_eval.register(sub)
    from . import cli_inspect  # the inspector page and the collection map

    cli_inspect.register(sub)
    return ap


def _write(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.write("\n")


def cmd_chunk(args: argparse.Namespace) -> int:
    from .api import Chunker
    from .discover import ReadError, discover, read_bounded, resolve_root, unsupported_summary

    chunker = Chunker(max_tokens=args.max_tokens, tokenizer=args.tokenizer,
                      overlap=args.overlap, strategy=args.strategy)
    found = discover(args.paths, root=resolve_root(args.root) if args.root else None,
                     follow_symlinks=args.follow_symlinks)
    for name, reason in found.skipped:
        print(f"{display_name(name)}: skipped: {reason}", file=sys.stderr)
    for name in found.missing:
        print(f"{display_name(name)}: no such file or directory", file=sys.stderr)
    if found.unsupported:
        print(unsupported_summary(found.unsupported), file=sys.stderr)
    failed = len(found.missing)
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    for task in found.files:
        try:
            doc = chunker.parse_bytes(read_bounded(task.path), source=task.source,
                                      format=args.format)
            chunks = chunker.chunk_document(doc)
        except (ChunkwiseError, ReadError) as e:
            failed += 1
            print(display_name(_one_line(e, task.source)), file=sys.stderr)
            continue
        if color and not args.jsonl:
            from .inspector import terminal_view

            _write(f"=== {display_name(doc.source)}: {len(chunks)} chunks")
            _write(terminal_view(doc.text, chunks))
            continue
        for c in chunks:
            if args.jsonl:
                _write(json.dumps(c.to_dict(), ensure_ascii=False))
            else:
                where = " > ".join(c.section_path) or "-"
                pages = f" p.{c.page_start}-{c.page_end}" if c.page_start else ""
                _write(f"--- {display_name(c.source)} [{c.start}:{c.end}] {c.tokens} tokens"
                       f"{pages} | {display_name(where)}")
                _write(c.text)
    return 1 if failed else 0


def cmd_text(args: argparse.Namespace) -> int:
    from .api import parse_file

    doc = parse_file(args.path, format=args.format)
    sys.stdout.write(doc.text)
    return 0


def cmd_sections(args: argparse.Namespace) -> int:
    from .api import parse_file
    from .structure import build_tree, walk

    doc = parse_file(args.path, format=args.format)
    for node, depth in walk(build_tree(doc)):
        page_start, page_end = doc.pages_of(node.start, node.end)
        row = {"start": node.start, "end": node.end, "level": node.level, "kind": node.kind,
               "depth": depth, "section_path": list(node.path),
               "page_start": page_start, "page_end": page_end}
        if args.jsonl:
            _write(json.dumps(row, ensure_ascii=False))
        else:
            _write(f"{'  ' * (depth - 1)}{node.kind} [{node.start}:{node.end}] "
                   f"{' > '.join(node.path)}")
    return 0


def _one_line(e: BaseException, path: object = None) -> str:
    msg = " ".join(str(e).split())
    src = getattr(e, "source", None)
    if path is not None and not src:
        msg = f"{path}: {msg}"
    return msg


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(message)s", stream=sys.stderr)
    if not getattr(args, "func", None):
        ap.print_help()
        return 2
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"chunkwise: {display_name(_one_line(e))}", file=sys.stderr)
        return 2
    except ChunkwiseError as e:
        print(display_name(_one_line(e)), file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `chunkwise chunk … | head`
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
