"""The Python API: `Chunker` holds options; `chunk_text`, `chunk_file`, `parse_file` are
one-call conveniences.

    >>> from chunkwise import Chunker
    >>> chunker = Chunker(max_tokens=512, tokenizer="cl100k_base")
    >>> chunks = chunker.chunk_file("docs/guide.md")
"""

from __future__ import annotations

import hashlib
import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ChunkwiseError, ConfigError, ParseError
from ..model import Chunk, ParsedDocument
from ..sizing.sizers import get_sizer
from ..text.textio import file_source, source_name
from .assemble import Assembly, Shares
from .headings import bound_document
from .strategies import REGISTRY, Registered, Setup, StrategySpec, registered
from .structure import build_tree

log = logging.getLogger(__name__)

_MIN_TOKENS = 16
#: bump whenever a change to parsing or fitting can change chunks: it is part of every id and
#: of the options stored with each chunk in Chroma, so an upgrade re-chunks stored files
CHUNKER_VERSION = 22  # 22: code: a short statement joins the definition below it that uses
# what it declares, a Python attribute docstring its assignment, a literal table of 8 entries or
# more is chunked 4 entries at a time under its name and doc line (issue 34); 21: code chunks
# inside a documented definition name it and its first doc line in their context (the `code-doc` view, default; issue 34); 20: Python parsed by the code table's walk (its chunks unchanged);
# Ruby, Lua, Kotlin methods with a body below the header no longer leaves; a comment after a
# block's `{` not glued to the next statement; 19: code headers cut from comments and compound
# lines around them, never inside (issue 24); 18: views (CSV and Markdown table rows), parent sections; kinds of whole
# sections; PDF bylines are not headings
_DEFAULT_LLM_TIMEOUT = 60.0


class Chunker:
    """Chunking options, validated once; reusable across documents and threads.

    Args:
        max_tokens: budget for every chunk's embed text (context + text).
        tokenizer: `minilm` (default, the embedder's), `cl100k_base`, `o200k_base`,
            `chars`, or a path to a Hugging Face `tokenizer.json`.
        overlap: tokens of the previous chunk repeated at the start of the next one
            (reserved inside the budget); must be less than half of `max_tokens` - `reserve`.
        reserve: tokens of `max_tokens` kept for metadata the caller embeds with every chunk
            (the LlamaIndex parser's metadata lines): chunks' embed texts are sized to
            `max_tokens - reserve`, which must leave at least 16.
        strategy: `structure` (default: sections first, recursive fallback), `fixed`,
            `sentence`, `recursive`, `semantic` or `llm`; see `chunkwise.chunking.strategies`. Only
            `structure` and `semantic` keep chunks inside sections (invariant 4). A
            `StrategySpec` (the CLI's) also carries keyword arguments of this Chunker.
        options: the strategy's options object (`chunkwise.chunking.strategies.REGISTRY[name].options`,
            e.g. `SemanticOptions(window=2)`); its keyword arguments below win over it.
        embedder: `semantic` only: a function from a list of texts to vectors (or a LlamaIndex
            embed model); default all-MiniLM-L6-v2, loaded on first use.
        semantic_threshold: `percentile` (default), `stddev`, `iqr` or `gradient`.
        semantic_amount: the threshold's parameter: percentile 95, stddev 3, iqr 1.5,
            gradient 95 (a percentile of the gradient) by default.
        semantic_window: sentences per embedded window on each side of a boundary (default 3).
        llm: a LlamaIndex LLM (or `module:attr`) for `strategy="llm"` and `contextualize`.
        llm_timeout: seconds an LLM call may take before its answer is given up (default 60).
        contextualize: True (use `llm`) or an LLM: add an LLM-written sentence situating each
            chunk in its document to its context, within the budget.
        context_cache: directory of the on-disk cache of those sentences (else in memory).
        context_tokens: budget share reserved for the sentence (default 64).
        views: which of the views parsers declare are applied (`chunkwise.chunking.views`):
            `default` (`table-row`: table rows as `column: value` lines, one row per chunk;
            `code-doc`: a code chunk inside a documented definition has its qualified name
            and first doc line added to its context; the code view measured worse and is
            opt-in), `all` (`code,table`), `none`
            (every chunk embeds its text as it is), or a comma-separated list of view names
            and variants (`code`, `table`, `table-row`, `code-split`, …). Not applied with
            `overlap`: an overlapping chunk embeds its text.
        table_rows: how the `table-row` view packs a table's rows (`TABLE_ROWS` in
            `chunkwise.chunking.views`): `row` (one row per chunk), `grouped` (as many whole
            rows as fit the budget, each row still `column: value` lines) or `auto` (one row
            per chunk in a table of up to `AUTO_ROWS` rows, grouped above).
    """

    def __init__(self, *, max_tokens: int = 256, tokenizer: str = "minilm", overlap: int = 0,
                 reserve: int = 0, strategy: str | StrategySpec = "structure",
                 options: Any = None,
                 embedder: Any = None, semantic_threshold: str | None = None,
                 semantic_amount: float | None = None, semantic_window: int | None = None,
                 llm: Any = None, llm_timeout: float | None = None, contextualize: Any = False,
                 context_cache: str | os.PathLike | None = None,
                 context_tokens: int | None = None, views: str = "default",
                 table_rows: str = "row") -> None:
        keywords = dict(strategy.keywords) if isinstance(strategy, StrategySpec) else {}
        given = dict(embedder=embedder, semantic_threshold=semantic_threshold,
                     semantic_amount=semantic_amount, semantic_window=semantic_window, llm=llm,
                     llm_timeout=llm_timeout,
                     contextualize=None if contextualize is False else contextualize,
                     context_cache=context_cache, context_tokens=context_tokens)
        keywords.update({k: v for k, v in given.items() if v is not None})
        name = strategy.name if isinstance(strategy, StrategySpec) else strategy
        if not isinstance(max_tokens, int) or max_tokens < _MIN_TOKENS:
            raise ConfigError(f"max_tokens must be an integer >= {_MIN_TOKENS}, got {max_tokens!r}")
        if not isinstance(overlap, int) or overlap < 0:
            raise ConfigError(f"overlap must be a non-negative integer, got {overlap!r}")
        if (not isinstance(reserve, int) or isinstance(reserve, bool) or reserve < 0
                or max_tokens - reserve < _MIN_TOKENS):
            raise ConfigError(f"reserve must be an integer from 0 to max_tokens - {_MIN_TOKENS} "
                              f"({max_tokens - _MIN_TOKENS}), got {reserve!r}")
        room = max_tokens - reserve  # what a chunk's embed text may take
        if overlap * 2 >= room:
            raise ConfigError(f"overlap ({overlap}) must be less than half of max_tokens "
                              f"({max_tokens}{f' - reserve {reserve}' if reserve else ''})")
        row = registered(name)
        self.views = _check_views(views)
        self.table_rows = _check_table_rows(table_rows)
        self.max_tokens = max_tokens
        self.reserve = reserve
        self._room = room
        self.tokenizer = tokenizer
        self.overlap = overlap
        self.strategy = name
        # what rebuilds this Chunker in another process (see __reduce__)
        self._spec = {"max_tokens": max_tokens, "tokenizer": tokenizer, "overlap": overlap,
                      "reserve": reserve, "strategy": name, "options": options,
                      "views": views, "table_rows": table_rows, **keywords}
        self.sizer = get_sizer(tokenizer)
        extra = self._configure(row, options, keywords)
        # the room shared once: the planning budget is what the situating sentence and,
        # unless the strategy's chunks overlap by themselves, the overlap leave of it
        shares = Shares(room, self.context_tokens, 0 if self._strategy.overlaps else overlap)
        self._budget = shares.budget()
        if reserve:  # (none leaves every fingerprint, so every id, as it was)
            extra += f"|reserve={reserve}"
        if views != "default":
            extra += f"|views={','.join(sorted(self.views))}"
        if table_rows != "row":  # (`row` leaves every id as it was)
            extra += f"|table_rows={table_rows}"
        self.fingerprint = hashlib.blake2b(
            f"chunkwise-{CHUNKER_VERSION}|{tokenizer}|{max_tokens}|{overlap}|{name}{extra}".encode(),
            digest_size=8
        ).hexdigest()
        self._assembly = Assembly(self.sizer, shares, overlap=overlap,
                                  contextualizer=self.contextualizer, views=self.views,
                                  fingerprint=self.fingerprint, table_rows=self.table_rows)

    def _configure(self, row: Registered, options: Any, keywords: dict[str, Any]) -> str:
        """Validate the strategy's and the contextualizer's options and build them; returns
        what they add to the fingerprint (nothing for `structure` alone, so its ids never
        change)."""
        from .contextual import make_contextualizer
        from .llms import resolve_llm

        mine = {row.keywords[k]: keywords.pop(k) for k in list(keywords) if k in row.keywords}
        for other in REGISTRY.values():
            theirs = sorted(k for k in keywords if k in other.keywords)
            if theirs:
                raise ConfigError(f"{', '.join(theirs)}: only for strategy={other.name!r}")
        if options is None:
            options = row.options(**mine)
        elif not isinstance(options, row.options):
            raise ConfigError(f"options of strategy={row.name!r} must be a "
                              f"{row.options.__name__}, got {options!r}")
        elif mine:
            options = replace(options, **mine)
        contextualize = keywords.pop("contextualize", None)
        llm = resolve_llm(keywords.pop("llm", None))
        timeout = keywords.pop("llm_timeout", _DEFAULT_LLM_TIMEOUT)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ConfigError(f"llm_timeout must be a positive number of seconds, got {timeout!r}")
        if llm is not None and not row.uses_llm and contextualize is not True:
            raise ConfigError("llm: only for strategy='llm' or contextualize=True")
        self._strategy = row.factory(Setup(self.sizer, self.tokenizer, self.overlap, llm,
                                           float(timeout)), options)
        self.contextualizer, self.context_tokens, more = make_contextualizer(
            contextualize, llm, self.sizer, room=self._room - self.overlap,
            timeout=float(timeout), cache_dir=keywords.pop("context_cache", None),
            reserve=keywords.pop("context_tokens", None))
        if keywords:
            raise ConfigError(f"unknown options: {', '.join(sorted(keywords))}")
        return self._strategy.identity + more

    @property
    def stats(self) -> dict[str, int]:
        """Cumulative counters of the strategy and the contextualizer (LLM and embedding calls,
        fallbacks, cache hits), e.g. `{"embed_calls": 12, "embedded": 1500, ...}`."""
        out: dict[str, int] = {}
        for part in (self._strategy, self.contextualizer):
            if part is not None:
                out.update(part.stats)
        return out

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickled as its options, rebuilt on arrival (tokenizers hold closures that do not
        pickle): a process pool's workers chunk exactly as this Chunker does."""
        return (_rebuild_chunker, (self._spec,))

    def __repr__(self) -> str:
        reserve = f", reserve={self.reserve}" if self.reserve else ""
        return (f"Chunker(max_tokens={self.max_tokens}, tokenizer={self.tokenizer!r}, "
                f"overlap={self.overlap}{reserve}, strategy={self.strategy!r})")

    # -- parsing ------------------------------------------------------------------------
    def parse_bytes(self, data: bytes, *, source: str, format: str | None = None) -> ParsedDocument:
        return parse_bytes(data, source=source, format=format)

    # -- chunking -----------------------------------------------------------------------
    def chunk_document(self, doc: ParsedDocument) -> list[Chunk]:
        """Chunks of an already parsed document: its section tree built once, planned by
        the strategy, then assembled (overlap, situating sentence, views, ids: see
        `chunkwise.chunking.assemble`)."""
        if not doc.text.strip():
            return []
        root = build_tree(doc)
        return self._assembly.chunks(doc, root, self._strategy.plan(doc, self._budget, root))

    def chunk_bytes(self, data: bytes, *, source: str, format: str | None = None) -> list[Chunk]:
        return self.chunk_document(parse_bytes(data, source=source, format=format))

    def chunk_text(self, text: str, *, format: str = "text", source: str = "<text>") -> list[Chunk]:
        return self.chunk_bytes(text.encode("utf-8"), source=source, format=format)

    def chunk_file(self, path: str | os.PathLike, *, format: str | None = None,
                   source: str | None = None) -> list[Chunk]:
        return self.chunk_document(parse_file(path, format=format, source=source))


def _check_views(views: str) -> frozenset[str]:
    from .views import DECLARED, DEFAULT_VIEWS, VIEWS

    if not isinstance(views, str):
        raise ConfigError(f"views must be a string, got {views!r}")
    if views == "default":
        return frozenset(DEFAULT_VIEWS)
    if views == "all":
        return frozenset(DECLARED)
    if views == "none":
        return frozenset()
    names = {v.strip() for v in views.split(",") if v.strip()}
    unknown = sorted(names - set(VIEWS))
    if unknown:
        raise ConfigError(f"unknown view(s) {', '.join(unknown)}; known: default, all, none, "
                          f"{', '.join(DECLARED)}")
    return frozenset(names)


def _check_table_rows(table_rows: str) -> str:
    from .views import TABLE_ROWS

    if table_rows not in TABLE_ROWS:
        raise ConfigError(f"table_rows must be one of {', '.join(TABLE_ROWS)}, "
                          f"got {table_rows!r}")
    return table_rows


def _rebuild_chunker(spec: dict[str, Any]) -> Chunker:
    return Chunker(**spec)


def parse_bytes(data: bytes, *, source: str, format: str | None = None) -> ParsedDocument:
    """Parse bytes with the parser of `format` (detected from `source` and content if None).

    Any failure is a `ParseError` naming the source, so a corpus run can continue.
    """
    from chunkwise.parsers import detect_format, get_parser

    source = source_name(source)
    fmt = format or detect_format(source, data)
    parse = get_parser(fmt)
    try:
        doc = parse(data, source=source)
    except ChunkwiseError:
        raise
    except RecursionError as e:
        raise ParseError(source, "document nested too deeply") from e
    except MemoryError as e:
        raise ParseError(source, "document too large for memory") from e
    except Exception as e:  # a parser bug must not stop a corpus run
        log.debug("parser %s failed on %s", fmt, source, exc_info=True)
        raise ParseError(source, f"{fmt} parser failed: {type(e).__name__}: {e}") from e
    for warning in doc.warnings:
        log.warning("%s: %s", source, warning)
    return bound_document(doc)


def parse_file(path: str | os.PathLike, *, format: str | None = None,
               source: str | None = None) -> ParsedDocument:
    """Read and parse one file; `ParseError` if it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ParseError(file_source(path), f"cannot read: {e.strerror or e}") from e
    return parse_bytes(data, source=source or file_source(path), format=format)


def chunk_text(text: str, *, format: str = "text", source: str = "<text>", **options) -> list[Chunk]:
    """Chunk a string (`format`: markdown, text, html, python, csv, …)."""
    return Chunker(**options).chunk_text(text, format=format, source=source)


def chunk_file(path: str | os.PathLike, *, format: str | None = None, **options) -> list[Chunk]:
    """Chunk one file; the format comes from its extension, else its content."""
    return Chunker(**options).chunk_file(path, format=format)
