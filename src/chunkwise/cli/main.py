"""The `chunkwise` command: a thin layer over the API.

Parses arguments, calls the library, prints; a `ChunkwiseError` becomes one line on stderr
(`path: reason`). Exit status: 0 all good, 1 some file failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import sys
import textwrap
import warnings
from typing import Any, Iterator, Sequence

from .options import (add_command, check_file_timeout, chunk_options, chunker_from,
                      examples_epilog, file_deadline, file_timeout_option, walk_report)
from ..errors import ChunkwiseError, ConfigError, no_space_message
from ..text.textio import TerminalSafeFormatter, display_name, terminal_safe

EXAMPLES = {
    "chunk": "chunkwise chunk docs/ --jsonl --max-tokens 512 --tokenizer cl100k_base",
    "text": "chunkwise text page.html",
    "sections": "chunkwise sections guide.md --jsonl",
}



#: what `sections --jsonl` prints, field by field (the README says it too)
LEVELS_HELP = """\
--jsonl fields: source, start, end (offsets into the canonical text), kind, depth (1 for
the outermost, +1 per nesting), section_path, page_start, page_end, and level: the
section's rank among its format's boundaries, higher = a bigger boundary (the fitter merges
whole sections under one parent and cuts inside a section at its children first). Levels
compare within one format: Markdown `#` 99 ... `######` 94, front matter 60, container
55, paragraph/list/code/table/quote 50, list item or table row 10; HTML h1 100 ... h6 95,
quote 65, table 60, list 50, code 40; PDF heading 100 - depth, paragraph 10; Python class
40, function 30, compound statement 20, statement 10; CSV table 30, row 20, cell 10; text
heading 100, paragraph 10."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("chunkwise")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown"


def formats_read() -> str:
    """The formats files are read as, from the parsers' tables (a format added there is
    listed here): each by name, the code languages as a count and their names."""
    from chunkwise.parsers import EXTENSIONS, MODULES

    named = [f for f in MODULES if f in set(EXTENSIONS.values())]
    code = [f for f in named if MODULES[f] == "code"]
    others = ", ".join(f for f in named if MODULES[f] != "code")
    return f"{others}, and code in {len(code)} languages ({', '.join(code)})"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="chunkwise",
        description=textwrap.fill("Structure-aware chunking of documents into token-exact "
                                  "chunks, and ingestion into Chroma. Formats: "
                                  f"{formats_read()}.", 78),
        epilog=examples_epilog(list(EXAMPLES.values())),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="log details on stderr")
    ap.add_argument("--version", action="version", version=f"chunkwise {_version()}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    p = add_command(sub, "chunk", cmd_chunk, help="chunk files and folders",
                    description="Chunk files (folders are walked recursively).",
                    examples=EXAMPLES["chunk"])
    _paths_option(p)
    p.add_argument("--jsonl", action="store_true", help="one JSON object per chunk (the contract)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress, notes, warnings or summary on stderr (errors still)")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="name documents relative to DIR (default: the folder given)")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="read symlinks that point outside the root (default: skipped)")
    p.add_argument("--color", nargs="?", const="auto", default="never",
                   choices=("auto", "always", "never"),
                   help="print each document's text with chunks in alternating colours "
                        "(auto: only on a terminal; always: forced)")
    file_timeout_option(p)
    chunk_options(p)

    p = add_command(sub, "text", cmd_text, help="print a document's canonical text",
                    description="Print the canonical text that all offsets index.",
                    examples=EXAMPLES["text"])
    _paths_option(p, "; with more than one document each text follows a line `==> SOURCE <==`")
    p.add_argument("--format", default=None, help="force the input format")
    file_timeout_option(p)

    p = add_command(sub, "sections", cmd_sections, help="print a document's sections",
                    description="Print the tiled sections the fitter respects.",
                    examples=EXAMPLES["sections"], notes=LEVELS_HELP)
    _paths_option(p)
    p.add_argument("--jsonl", action="store_true", help="one JSON object per section")
    p.add_argument("--format", default=None, help="force the input format")
    file_timeout_option(p)

    try:
        from . import store as cli_store
    except ImportError:  # the store commands are optional
        cli_store = None
    if cli_store is not None:
        cli_store.register(sub)
        from . import eval as cli_eval  # evaluation runs on a store

        cli_eval.register(sub)
        from . import serve as cli_serve  # a warm server over a store

        cli_serve.register(sub)
        from . import why as cli_why

        cli_why.register(sub)
    from . import pages as cli_inspect  # the inspector page and the collection map

    cli_inspect.register(sub)
    return ap


def _paths_option(p: argparse.ArgumentParser, more: str = "") -> None:
    """The documents a command reads through `_documents`, with `more` said of them."""
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help=f"files, folders, or - (standard input, with --format){more}")


def _write(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.write("\n")


def _documents(args: argparse.Namespace) -> tuple[list[tuple[str, Any]], int]:
    """(source, path or bytes) of every document named by `args.paths` (`-`: standard input,
    which needs --format), and how many paths failed; what the walk skipped or missed is
    printed, one line each (`walk_report`)."""
    from ..pipeline.discover import discover, resolve_root

    quiet = getattr(args, "quiet", False)
    paths = [p for p in args.paths if p != "-"]
    docs: list[tuple[str, Any]] = []
    if len(paths) < len(args.paths):
        if args.format is None:
            raise ConfigError("reading standard input (-) needs --format")
        docs.append(("<stdin>", sys.stdin.buffer.read()))
    if not paths:
        return docs, 0
    root = getattr(args, "root", None)
    found = discover(paths, root=resolve_root(root) if root else None,
                     follow_symlinks=getattr(args, "follow_symlinks", False))
    lines, failed = walk_report(found, paths, quiet=quiet)
    for line in lines:
        print(display_name(line), file=sys.stderr)
    docs.extend((task.source, task.path) for task in found.files)
    return docs, failed


def _read(item: Any) -> bytes:
    from ..pipeline.discover import read_bounded

    return item if isinstance(item, bytes) else read_bounded(item)


def cmd_chunk(args: argparse.Namespace) -> int:
    from .progress import Progress
    from ..pipeline.discover import ReadError

    chunker = chunker_from(args)
    check_file_timeout(args)
    docs, failed = _documents(args)
    # a bar on a terminal only: `chunk` writes data, and a log line every few seconds in a
    # pipeline's stderr would be noise (`ingest`, a long job, prints them)
    bar = Progress("chunk", len(docs), sys.stderr) if sys.stderr.isatty() and not args.quiet \
        else None
    made = 0
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    try:
        for done, (source, item) in enumerate(docs, 1):
            try:
                data = _read(item)
                with file_deadline(args):
                    if color and not args.jsonl:  # the view shows the canonical text
                        doc = chunker.parse_bytes(data, source=source, format=args.format)
                        text, chunks = doc.text, chunker.chunk_document(doc)
                    else:
                        chunks = chunker.chunk_bytes(data, source=source, format=args.format)
            except (ChunkwiseError, ReadError) as e:
                failed += 1
                print(display_name(_one_line(e, source)), file=sys.stderr)
                continue
            made += len(chunks)
            if bar is not None:
                bar.update(files=done, chunks=made)
            if color and not args.jsonl:
                from ..pages.inspector import terminal_view

                _write(f"=== {display_name(source)}: {len(chunks)} chunks")
                _write(terminal_view(text, chunks))
                continue
            for c in chunks:
                if args.jsonl:
                    _write(json.dumps(c.to_dict(), ensure_ascii=False))
                else:
                    where = " > ".join(c.section_path) or "-"
                    pages = f" p.{c.page_start}-{c.page_end}" if c.page_start else ""
                    _write(f"--- {display_name(c.source)} [{c.start}:{c.end}] {c.tokens} tokens"
                           f"{pages} | {display_name(where)}")
                    _write(terminal_safe(c.text, lines=True))
    finally:
        if bar is not None:
            bar.close()
    return 1 if failed else 0


def _parsed(args: argparse.Namespace) -> Iterator[tuple[str, Any, int]]:
    """(source, ParsedDocument, how many documents) of every document of `args.paths` that
    parses; the others are printed, one line each, and counted in `args.failed`."""
    from ..chunking.api import parse_bytes
    from ..pipeline.discover import ReadError

    check_file_timeout(args)
    docs, failed = _documents(args)
    args.failed = failed
    for source, item in docs:
        try:
            data = _read(item)
            with file_deadline(args):
                doc = parse_bytes(data, source=source, format=args.format)
        except (ChunkwiseError, ReadError) as e:
            args.failed += 1
            print(display_name(_one_line(e, source)), file=sys.stderr)
            continue
        yield source, doc, len(docs)


def cmd_text(args: argparse.Namespace) -> int:
    for source, doc, count in _parsed(args):
        if count > 1:
            sys.stdout.write(f"==> {display_name(source)} <==\n")
        # exact bytes into a pipe or file (the canonical text); escaped on a terminal
        sys.stdout.write(terminal_safe(doc.text, lines=True) if sys.stdout.isatty() else doc.text)
        if count > 1:
            sys.stdout.write("\n")
    return 1 if args.failed else 0


def cmd_sections(args: argparse.Namespace) -> int:
    from ..chunking.structure import build_tree, walk

    for source, doc, count in _parsed(args):
        if count > 1 and not args.jsonl:
            _write(f"==> {display_name(source)} <==")
        for node, depth in walk(build_tree(doc)):
            page_start, page_end = doc.pages_of(node.start, node.end)
            row = {"source": source, "start": node.start, "end": node.end, "level": node.level,
                   "kind": node.kind, "depth": depth, "section_path": list(node.path),
                   "page_start": page_start, "page_end": page_end}
            if args.jsonl:
                _write(json.dumps(row, ensure_ascii=False))
            else:
                _write(f"{'  ' * (depth - 1)}{node.kind} [{node.start}:{node.end}] "
                       f"{' > '.join(node.path)}")
    return 1 if args.failed else 0


def _one_line(e: BaseException, path: object = None) -> str:
    msg = " ".join(str(e).split())
    src = getattr(e, "source", None)
    if path is not None and not src:
        msg = f"{path}: {msg}"
    return msg


def parse(ap: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """`ap.parse_args(argv)`, except that an option no parser knows is bad usage of the
    subcommand it follows, answered with that subcommand's usage (argparse answers every
    unknown option with the top-level usage): `chunkwise query --bogus` prints
    `usage: chunkwise query ...` and exits 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args, extra = ap.parse_known_args(argv)
    if extra:
        command = getattr(args, "command", None)
        # the top-level options come before the command; everything after it is the command's
        before = argv[:argv.index(command)] if command in argv else argv
        owner = ap if any(x in before for x in extra) else getattr(args, "parser", ap)
        owner.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = parse(ap, argv)
    # --quiet: errors only (a file's warnings, e.g. syntax errors kept as text, are not)
    level = (logging.INFO if args.verbose else
             logging.ERROR if getattr(args, "quiet", False) else logging.WARNING)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TerminalSafeFormatter("%(levelname)s %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    # pydantic >= 2.12 warns, on import, about field attributes that older llama-index-core
    # releases set: noise on a command's stderr, and nothing a user can act on
    warnings.filterwarnings("ignore", module=r"pydantic\._internal\._generate_schema")
    if not getattr(args, "func", None):
        ap.print_help()
        return 2
    fmt = getattr(args, "format", None)
    if fmt is not None:  # bad usage: one line, not one per file
        from chunkwise.parsers import MODULES

        if fmt not in MODULES:
            print(f"chunkwise: unknown --format {display_name(fmt)!r}; known: "
                  f"{', '.join(sorted(MODULES))}", file=sys.stderr)
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
    except OSError as e:  # the disk, a permission: one line, never a traceback
        where = display_name(str(e.filename)) if e.filename else "the output"
        if e.errno == errno.ENOSPC:
            print(f"chunkwise: {no_space_message(where)}", file=sys.stderr)
        else:
            print(f"chunkwise: {where}: {e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:  # one line where the command says what it kept
        print(display_name(str(e) or "interrupted"), file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
