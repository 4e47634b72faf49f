"""The CLI's strategy flags. The `chunk` and `ingest` commands build their Chunker from
`args.strategy` alone, so every strategy flag is folded into it as a `StrategySpec`."""

from __future__ import annotations

import argparse

from . import IGNORE_STRUCTURE, StrategySpec


class StrategyOption(argparse.Action):
    """Stores a strategy flag and folds it, with the others given so far, into
    `namespace.strategy` as a `StrategySpec`. The commands print `structure_note` once their
    Chunker is built (after any error in the options, not before it)."""

    #: the flags' dests, which are also the Chunker's keyword arguments
    OPTIONS = ("semantic_threshold", "semantic_amount", "semantic_window", "llm", "llm_timeout",
               "contextualize", "context_cache", "context_tokens")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        value = self.const if self.nargs == 0 else values
        setattr(namespace, self.dest, value)
        name = str(namespace.strategy)
        options = {k: getattr(namespace, k) for k in self.OPTIONS
                   if getattr(namespace, k, None) is not None}
        namespace.strategy = StrategySpec(name, options)


def structure_note(strategy: object) -> str | None:
    """The note a command prints when the strategy ignores document structure, else None."""
    name = str(strategy)
    if name in IGNORE_STRUCTURE:
        return (f"chunkwise: note: --strategy {name} ignores document structure; chunks may "
                "cross section boundaries")
    return None
