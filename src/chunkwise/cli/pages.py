"""The `inspect` and `map` commands: self-contained HTML pages to look at chunks
(`chunkwise.pages.inspector`) and at a stored collection (`chunkwise.pages.map`)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from .options import (add_command, check_file_timeout, chunk_options, file_deadline,
                      file_timeout_option,
                      store_location, store_options, walk_report)
from ..errors import ChunkwiseError, ConfigError
from ..text.textio import display_name

log = logging.getLogger(__name__)

EXAMPLES = {
    "inspect": "chunkwise inspect guide.md report.pdf --strategy structure,semantic -o report.html",
    "map": "chunkwise map --db chunkwise-db --collection chunkwise -o map.html",
}


def _strategy_list(value: str) -> list[str]:
    from ..chunking.strategies import STRATEGIES

    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in STRATEGIES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown strategy {', '.join(bad) or repr(value)}; choose from {', '.join(STRATEGIES)}")
    return list(dict.fromkeys(names))


def register(sub: Any) -> None:
    """Add `inspect` and `map` to the main parser's subcommands."""
    p = add_command(sub, "inspect", cmd_inspect,
                    help="write an HTML page showing how documents are chunked",
                    description="Chunk files (folders are walked) and write one self-contained "
                                "HTML page: each chunk coloured over the text, its metadata on "
                                "click, token histograms, strategies side by side, and the "
                                "distance curve of `semantic`.",
                    examples=EXAMPLES["inspect"], conflict_handler="resolve")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("-o", "--output", default="chunkwise-inspect.html", metavar="FILE",
                   help="the page to write (default chunkwise-inspect.html)")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="name documents relative to DIR (default: the folder given)")
    file_timeout_option(p)
    chunk_options(p)
    # several strategies, side by side: replaces the one-strategy flag of `chunk_options`
    p.add_argument("--strategy", dest="strategies", type=_strategy_list, default=["structure"],
                   metavar="NAME[,NAME…]",
                   help="one or more strategies, comma-separated, shown side by side "
                        "(default structure)")
    p.set_defaults(strategy="structure")

    p = add_command(sub, "map", cmd_map, help="write an HTML scatter of a collection's vectors",
                    description="Project the stored vectors of a collection to 2-D (PCA) and "
                                "write one self-contained HTML page: points coloured by source "
                                "or format, a click shows the chunk. Above 100,000 chunks a "
                                "random sample is drawn (the page says so).",
                    examples=EXAMPLES["map"])
    p.add_argument("-o", "--output", default="chunkwise-map.html", metavar="FILE",
                   help="the page to write (default chunkwise-map.html)")
    store_options(p)


def _write_page(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot write {path}: {e.strerror or e}") from e
    print(f"wrote {display_name(path)} ({len(text.encode('utf-8')):,} bytes)", file=sys.stderr)


def cmd_inspect(args: argparse.Namespace) -> int:
    from ..pipeline.discover import ReadError, discover, read_bounded, resolve_root
    from ..pages.inspector import Inspector, render

    check_file_timeout(args)
    spec = args.strategy  # a StrategySpec when a strategy flag (--semantic-…) was given
    keywords = dict(getattr(spec, "keywords", {}) or {})
    inspector = Inspector(args.strategies, max_tokens=args.max_tokens, tokenizer=args.tokenizer,
                          overlap=args.overlap, views=args.views,
                          table_rows=args.table_rows, **keywords)
    found = discover(args.paths, root=resolve_root(args.root) if args.root else None)
    errors, failed = walk_report(found, args.paths)  # on stderr and at the top of the page
    reports = []
    for task in found.files:
        try:
            data = read_bounded(task.path)
            with file_deadline(args):
                reports.append(inspector.report(data, source=task.source, format=args.format))
        except (ChunkwiseError, ReadError) as e:
            failed += 1
            errors.append(" ".join(str(e).split()))
            continue
        failed += bool(reports[-1].failures)
    for line in errors:
        print(display_name(line), file=sys.stderr)
    _write_page(args.output, render(reports, window=inspector.window, errors=errors))
    return 1 if failed else 0


def cmd_map(args: argparse.Namespace) -> int:
    from ..pages.map import read_collection, render_map

    where = store_location(args)
    cmap = read_collection(db_path=where["db_path"], host=where["host"], port=where["port"],
                           collection=where["collection"], timeout=where["timeout"],
                           retry_delays=where["retry_delays"])
    if cmap.sampled:
        print(f"chunkwise: {cmap.total:,} chunks: the map shows a random sample of "
              f"{len(cmap.ids):,}", file=sys.stderr)
    _write_page(args.output, render_map(cmap))
    return 0
