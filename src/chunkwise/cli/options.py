"""What the `chunkwise` subcommands share: how a subcommand is declared (`add_command`: its
help, description and examples), chunking options (`chunk`, `ingest`, `eval`), the store's
location (`ingest`, `check`, `query`, `eval`) and what a walk of the paths given found
(`walk_report`, `unreadable`: `chunk`, `text`, `sections`, `inspect`, `ingest`), kept apart
from the command modules so that they depend on this one and not on each other."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any, Callable, Sequence

from ..errors import ConfigError


def examples_epilog(examples: str | Sequence[str], notes: str = "") -> str:
    """A help page's closing text: `notes`, if any, then `Example:` (or `Examples:`) and the
    command lines, indented."""
    lines = (examples,) if isinstance(examples, str) else tuple(examples)
    text = f"{'Example' if len(lines) == 1 else 'Examples'}:\n  " + "\n  ".join(lines)
    return f"{notes}\n\n{text}" if notes else text


def add_command(subparsers: Any, name: str, func: Callable[[argparse.Namespace], int], *,
                help: str, description: str, examples: str | Sequence[str], notes: str = "",
                **kwargs: Any) -> argparse.ArgumentParser:
    """A subcommand that runs `func(args)`: `help` is its line in `chunkwise --help`, its own
    help page shows `description` (its line breaks kept, lines over 79 characters wrapped)
    and ends with `examples_epilog(examples, notes)`; `kwargs` go to `add_parser`.
    `args.parser` is the subcommand's own parser: an error in its usage shows its usage."""
    description = "\n".join(textwrap.fill(line, 79) if len(line) > 79 else line
                            for line in description.splitlines())  # long lines wrapped
    p = subparsers.add_parser(name, help=help, description=description,
                              epilog=examples_epilog(examples, notes),
                              formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
    p.set_defaults(func=func, parser=p)
    return p


def walk_report(found: Any, paths: Sequence[str], *, quiet: bool = False) -> tuple[list[str], int]:
    """What a command says of a walk of `paths` (`found`: a `pipeline.discover.Discovery`), one
    line each, and how many failures that is. A path that does not exist, or cannot be
    listed or searched, is a failure (`name: reason`); an entry not read by choice (a FIFO,
    a symlink out of the root) is `name: skipped: reason`. Files of no supported format are
    counted in one line (none with `quiet`); when they are all there was, that line is a
    failure, said even with `quiet`. An empty folder is a note (none with `quiet`), never a
    failure."""
    from ..pipeline.discover import unsupported_summary

    lines = [f"{name}: {reason}" if unreadable(reason) else f"{name}: skipped: {reason}"
             for name, reason in found.skipped]
    lines += [f"{name}: no such file or directory" for name in found.missing]
    failed = len(found.missing) + sum(unreadable(reason) for _, reason in found.skipped)
    unsupported = unsupported_summary(found.unsupported) if found.unsupported else ""
    if found.files or failed:
        if unsupported and not quiet:
            lines.append(f"chunkwise: {unsupported}")
    elif unsupported:  # files were there, and none could be read
        lines.append(no_documents(paths, unsupported))
        failed += 1
    elif not quiet:
        lines.append(no_documents(paths))
    return lines, failed


def no_documents(paths: Sequence[str], unsupported: str = "") -> str:
    """The line for paths that hold no document of a supported format; `unsupported` says
    what they held instead (a failure), if anything (a note)."""
    line = f"chunkwise: no documents of a supported format in {', '.join(map(str, paths))}"
    return f"{line}: {unsupported}" if unsupported else line


def unreadable(reason: str) -> bool:
    """Whether a skipped entry's reason says it could not be read at all (a folder that cannot
    be listed, a path that cannot be searched): a failure, where a FIFO or a symlink out of
    the root is a choice."""
    return reason.startswith("cannot")


def budget_options(g: Any) -> None:
    """--max-tokens, --tokenizer, --overlap (`chunk`, `ingest`, `inspect` and `eval`)."""
    g.add_argument("--max-tokens", type=int, default=256, metavar="N",
                   help="token budget per chunk, context included (default 256)")
    g.add_argument("--tokenizer", default="minilm", metavar="NAME",
                   help="minilm (default), cl100k_base, o200k_base, chars, or a tokenizer.json path")
    g.add_argument("--overlap", type=int, default=0, metavar="N",
                   help="tokens repeated from the previous chunk (default 0)")


def file_timeout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="give up parsing one file after this long (default 600)")


def check_file_timeout(args: argparse.Namespace) -> float | None:
    """`--file-timeout`, a `ConfigError` unless positive (checked before any file is read)."""
    seconds = getattr(args, "file_timeout", None)
    if seconds is not None and not seconds > 0:
        raise ConfigError("--file-timeout must be a positive number of seconds")
    return seconds


def file_deadline(args: argparse.Namespace) -> Any:
    """A context bounding one file's parsing and chunking by `--file-timeout` (a file past it
    fails with one line, the others go on)."""
    from ..pipeline.deadlines import deadline

    return deadline(check_file_timeout(args), "parsing and chunking")


def chunk_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("chunking")
    budget_options(g)
    from ..chunking.strategies import STRATEGIES
    from ..chunking.strategies.cli_options import StrategyOption

    # The strategy flags reach the Chunker folded into `strategy` (see StrategyOption).
    g.add_argument("--strategy", default="structure", choices=STRATEGIES, action=StrategyOption,
                   help="structure (default: sections first), fixed, sentence, recursive, "
                        "semantic or llm; all but structure and semantic ignore structure")
    g.add_argument("--semantic-threshold", choices=("percentile", "stddev", "iqr", "gradient"),
                   action=StrategyOption, help="semantic: how breakpoints are found "
                                               "(default percentile)")
    g.add_argument("--semantic-amount", type=float, metavar="X", action=StrategyOption,
                   help="semantic: the threshold's parameter (defaults: percentile 95, "
                        "stddev 3, iqr 1.5, gradient 95)")
    g.add_argument("--semantic-window", type=int, metavar="N", action=StrategyOption,
                   help="semantic: sentences per window on each side of a boundary (default 3)")
    g.add_argument("--llm", metavar="MODULE:ATTR", action=StrategyOption,
                   help="a LlamaIndex LLM (instance, class or factory) for --strategy llm "
                        "and --contextualize")
    g.add_argument("--llm-timeout", type=float, metavar="SECONDS", action=StrategyOption,
                   help="give up an LLM call after this long (default 60)")
    g.add_argument("--contextualize", nargs=0, const=True, action=StrategyOption,
                   help="add an LLM-written sentence situating each chunk to its context")
    g.add_argument("--context-cache", metavar="DIR", action=StrategyOption,
                   help="--contextualize: cache those sentences in DIR/contexts.sqlite")
    g.add_argument("--context-tokens", type=int, metavar="N", action=StrategyOption,
                   help="--contextualize: budget reserved for the sentence (default 64)")
    g.add_argument("--views", default="default", metavar="SPEC",
                   help="what a chunk embeds in place of its text where the parser declares a "
                        "view: default (table rows as `column: value` lines; code inside a "
                        "documented definition names it and its first doc line), all, none (every "
                        "chunk embeds its text as it is), or names: table-row,code,…")
    g.add_argument("--table-rows", default="row", choices=("row", "grouped", "auto"),
                   help="how table rows are embedded: row (default: one row per chunk), "
                        "grouped (as many whole rows as fit the budget), auto (one per chunk "
                        "in a table of up to 100 rows, grouped above)")
    g.add_argument("--format", default=None, help="force the input format instead of detecting it")


def chunker_from(args: argparse.Namespace) -> Any:
    """The Chunker the chunking options ask for; then, once they are accepted (an error in them
    comes alone), the note that the strategy ignores structure, unless `--quiet`."""
    import sys

    from ..chunking.api import Chunker
    from ..chunking.strategies.cli_options import structure_note

    chunker = Chunker(max_tokens=args.max_tokens, tokenizer=args.tokenizer,
                      overlap=args.overlap, strategy=args.strategy,
                      views=args.views, table_rows=args.table_rows)
    note = structure_note(args.strategy)
    if note and not getattr(args, "quiet", False):
        print(note, file=sys.stderr)
    return chunker


def store_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("store")
    g.add_argument("--db", default=None, metavar="DIR",
                   help="embedded Chroma database directory (default ./chunkwise-db)")
    g.add_argument("--host", default=None, help="Chroma server host (`chroma run`)")
    g.add_argument("--port", type=int, default=None, help="Chroma server port (default 8000)")
    g.add_argument("--collection", default="chunkwise", metavar="NAME",
                   help="collection name (default chunkwise)")
    g.add_argument("--retries", type=int, default=5, metavar="N",
                   help="retries when the server is unreachable, with backoff from 0.5 s "
                        "doubling (default 5)")
    g.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="give up a server call that gets no answer after this long "
                        "(default 60)")
    g.add_argument("--lexical-index", default=None, metavar="FILE",
                   help="the collection's word index for hybrid search (default: inside "
                        "--db; with --host, the file to keep it in: a server cannot)")


def lexical_option(args: argparse.Namespace) -> Any:
    """`--lexical-index` as the `lexical` argument of the store: the file, else True (the
    embedded database's own)."""
    return args.lexical_index if args.lexical_index else True


def store_location(args: argparse.Namespace) -> dict[str, Any]:
    from ..chroma.store import check_server

    if args.db is not None and (args.host is not None or args.port is not None):
        raise ConfigError("use either --db or --host/--port, not both")
    if args.retries < 0:
        raise ConfigError("--retries must be >= 0")
    if not args.timeout > 0:
        raise ConfigError("--timeout must be a positive number of seconds")
    if args.host is not None or args.port is not None:
        check_server(args.host, args.port)
    return {"db_path": args.db, "host": args.host, "port": args.port,
            "collection": args.collection, "timeout": args.timeout,
            "retry_delays": tuple(0.5 * 2 ** i for i in range(args.retries))}
