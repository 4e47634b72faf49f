"""The options of an ingest run and what it reports, the same for every runner (local and
Ray): `IngestOptions` (one object, or the same names as keyword arguments), `IngestReport`
(what a run did), `IngestProgress` (what the `progress` callback is told), and the checks of
the options that do not need a store (`check_limits`, `worker_count`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Protocol, Sequence

from ..chroma.locking import DEFAULT_WAIT
from ..chroma.store import DEFAULT_COLLECTION, DEFAULT_TIMEOUT, RETRY_DELAYS
from ..errors import ConfigError
from ..model import Chunk, ParsedDocument
from .discover import DEFAULT_MAX_FILE_SIZE

#: default limit on the parse and chunking of one file, in seconds
DEFAULT_FILE_TIMEOUT = 600.0


class ChunkerLike(Protocol):
    """What stage 2 needs of a chunker (`chunking.api.Chunker` is one)."""

    fingerprint: str

    def parse_bytes(self, data: bytes, *, source: str, format: str | None = None
                    ) -> ParsedDocument: ...

    def chunk_document(self, doc: ParsedDocument) -> list[Chunk]: ...


# -- results --------------------------------------------------------------------------------
@dataclass
class FormatBill:
    """The embedding bill of one format in a run: the files of that format parsed and
    chunked (unchanged ones are not), their bytes and chunks, and the texts sent (or, in a
    dry run, that would be sent) to the embedder for them, after the run's dedup and the
    vectors reused from the collection."""

    files: int = 0
    bytes: int = 0
    chunks: int = 0
    texts: int = 0

    @property
    def mb(self) -> float:
        return self.bytes / 1e6

    @property
    def texts_per_mb(self) -> float | None:
        """Texts embedded per MB (10**6 bytes) of files read; None for no bytes."""
        return self.texts / self.mb if self.bytes else None

    def to_dict(self) -> dict[str, Any]:
        per = self.texts_per_mb
        return {"files": self.files, "mb": round(self.mb, 6), "chunks": self.chunks,
                "texts": self.texts, "texts_per_mb": None if per is None else round(per, 1)}


@dataclass
class IngestReport:
    """What an `ingest` run did. Chunk counts are chunks, file counts are files."""

    files: int = 0
    """Files found under the paths given (and read or skipped as unchanged)."""
    chunks: int = 0
    """Chunks those files have now (stored or written)."""
    records: int = 0
    """Records those files have now (a record per distinct embed text of a file): the same
    figure on a first run and on a rerun that finds them unchanged."""
    skipped: int = 0
    """Files already up to date: not parsed, nothing written."""
    changed: int = 0
    """Files (re)written: new, edited, or chunked with other options."""
    written: int = 0
    """Chunks upserted (embedded now or with a reused vector)."""
    embedded: int = 0
    """Texts sent to the embedder."""
    reused: int = 0
    """Chunks written with a vector reused from the collection or this run (same embed text)."""
    updated: int = 0
    """Chunks kept as they were whose metadata was refreshed (no embedding)."""
    deleted: int = 0
    """Stale chunks of changed files removed."""
    pruned_files: int = 0
    """Sources removed by `prune` because their files are gone."""
    pruned_chunks: int = 0
    """Chunks of those sources."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(source, reason) of every file that could not be read or parsed."""
    ignored: list[tuple[str, str]] = field(default_factory=list)
    """(name, reason) of entries not read at all: FIFOs, devices, symlinks out of the root,
    files over the size limit."""
    unsupported: int = 0
    """Files in the folders walked that no parser reads (unknown extensions), not listed."""
    unsupported_note: str = ""
    """Those files in one line, their commonest extensions named (`unsupported_summary`)."""
    no_text: list[tuple[str, str]] = field(default_factory=list)
    """(source, why) of files read without error that hold no text to chunk: a scanned PDF
    without the OCR extra, an empty document. Nothing is stored for them; never silent."""
    missing_parts: list[str] = field(default_factory=list)
    """Warnings about optional parts not installed (a grammar, an extra), each once per run
    however many files met it: what `pip install` adds, and what was done without it."""
    repaired: int = 0
    """Stored records whose vectors were missing from the index at the start, re-embedded
    (see `chunkwise.chroma.health`)."""
    truncated: int = 0
    """Chunks embedded in this run that are longer than the embedding model's window (when
    the model says, see `Embedder.window`): only their start is in their vector."""
    window: int | None = None
    """That window, in the model's tokens."""
    root: str = ""
    """The folder every source is relative to."""
    workers: int = 1
    dry_run: bool = False
    """Nothing was embedded or written: `embedded`, `written`, `reused`, `updated` and
    `deleted` say what a real run would have done (see `IngestOptions.dry_run`)."""
    formats: dict[str, FormatBill] = field(default_factory=dict)
    """The embedding bill per format (see `FormatBill`), by format name."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per stage: `discover`, `read` and `parse_chunk` (summed over workers),
    `embed` (the embedder busy), `embed_idle` (the embedder waiting for work), `write`,
    `prune`, `total`."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files, "chunks": self.chunks, "records": self.records,
            "skipped": self.skipped,
            "changed": self.changed, "written": self.written, "embedded": self.embedded,
            "reused": self.reused, "updated": self.updated, "deleted": self.deleted,
            "pruned_files": self.pruned_files, "pruned_chunks": self.pruned_chunks,
            "failed": [{"source": s, "reason": r} for s, r in self.failed],
            "ignored": [{"source": s, "reason": r} for s, r in self.ignored],
            "unsupported": self.unsupported,
            "no_text": [{"source": s, "reason": r} for s, r in self.no_text],
            "missing_parts": list(self.missing_parts),
            "repaired": self.repaired, "truncated": self.truncated, "window": self.window,
            "root": self.root,
            "workers": self.workers, "dry_run": self.dry_run,
            "formats": {k: b.to_dict() for k, b in sorted(self.formats.items())},
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
        }

    def bill(self, fmt: str) -> FormatBill:
        """The `FormatBill` of `fmt`, added when first asked for."""
        return self.formats.setdefault(fmt or "unknown", FormatBill())


class IngestInterrupted(KeyboardInterrupt):
    """A Ctrl-C stopped an ingest after what it had embedded was written: its message is the
    one line the CLI prints (`interrupted after N of M texts; K kept, rerun to finish`);
    `report` is the run so far. A `KeyboardInterrupt`, so a caller's handler still sees it."""

    def __init__(self, embedded: int, known: int, kept: int, report: IngestReport) -> None:
        super().__init__(f"interrupted after {embedded} of {known} texts; {kept} kept, "
                         "rerun to finish")
        self.embedded, self.known, self.kept, self.report = embedded, known, kept, report


@dataclass(frozen=True)
class IngestProgress:
    """Passed to the `progress` callback after each file is prepared, each slice of texts
    embedded and each batch written (from the runner's threads: one call at a time)."""

    files_done: int
    files_total: int
    chunks_written: int
    embed_seconds: float
    """Seconds the embedder has worked so far."""
    source: str = ""
    texts_embedded: int = 0
    """Texts embedded so far."""
    texts_to_embed: int = 0
    """Texts known so far to need embedding (grows while files are read)."""
    chunks_made: int = 0
    """Chunks the files read so far have (made now, or stored for unchanged files)."""

    @property
    def rate(self) -> float:
        """Chunks written per second of embedding so far."""
        return self.chunks_written / self.embed_seconds if self.embed_seconds > 0 else 0.0

    @property
    def embed_rate(self) -> float:
        """Texts embedded per second of embedding so far."""
        return self.texts_embedded / self.embed_seconds if self.embed_seconds > 0 else 0.0


@dataclass(frozen=True)
class IngestOptions:
    """The options of an ingest run, the same for every runner: `ingest` here and
    `chunkwise.ray.ingest` take them as keyword arguments, or as one `IngestOptions`
    (keywords given as well override its fields).

    - store: a Chroma `client`, a server at `host`/`port`, or an embedded database at
      `db_path` (default `chunkwise-db`), locked for the run: another writer is waited for
      up to `wait` seconds (`on_wait` is told who holds it); `collection`; `timeout` and
      `retry_delays` bound the requests to the store; `lexical`: the collection's word
      index for hybrid search (`chunkwise.chroma.lexical`), written with the vectors: True
      (default) keeps it in an embedded database's folder, a path puts it there (the one way
      to have one for a server), False writes none.
    - chunking: `chunker`, or one built from `max_tokens`, `tokenizer` and `overlap`;
      `format` reads every file as that format.
    - embedding: `embedder` (a spec or an object; default `minilm`), on `device` (`auto`: a
      GPU when there is one; the minilm embedder only).
    - files: documents are named by their path relative to `root` (default: the folder
      given, or the collection's recorded root); `prune` deletes the documents under the
      paths given whose files are gone; `follow_symlinks`; `max_file_size` (bytes) and
      `file_timeout` (seconds of parsing and chunking) bound each file.
    - the run: `workers` parse and chunk (local: processes, default one per core, which
      never import the caller's `__main__`; Ray: the tasks at once); `writers` threads write
      windows of whole files at once (default 1; meant for a Chroma server that writes
      requests concurrently: an embedded database takes them in turn, and so did the
      `chroma run` measured in docs/ingest.md); `rebuild` empties the collection first;
      `dry_run` discovers, reads, parses and chunks as a run does and reports what it would
      embed and write, per format, without writing anything, creating a database or
      loading the embedding model; `progress` is called with an `IngestProgress` as files
      are read, texts embedded and chunks written.
    """

    client: Any = None
    db_path: str | os.PathLike | None = None
    host: str | None = None
    port: int | None = None
    collection: str = DEFAULT_COLLECTION
    max_tokens: int = 256
    tokenizer: str = "minilm"
    overlap: int = 0
    format: str | None = None
    chunker: ChunkerLike | None = None
    embedder: Any = None
    device: str = "auto"
    prune: bool = False
    root: str | os.PathLike | None = None
    workers: int | None = None
    writers: int = 1
    follow_symlinks: bool = False
    max_file_size: int = DEFAULT_MAX_FILE_SIZE
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT
    wait: float = DEFAULT_WAIT
    timeout: float | None = DEFAULT_TIMEOUT
    rebuild: bool = False
    dry_run: bool = False
    progress: Callable[[IngestProgress], None] | None = None
    on_wait: Callable[[str], None] | None = None
    retry_delays: Sequence[float] = RETRY_DELAYS
    lexical: str | os.PathLike | bool = True

    @classmethod
    def of(cls, options: IngestOptions | None, given: Mapping[str, Any]) -> IngestOptions:
        """`options` (default: all defaults) with the keyword arguments `given` over it; a
        name that is not an option is a `TypeError`, as for any function."""
        return replace(options if options is not None else cls(), **given)

    def make_chunker(self) -> ChunkerLike:
        """`chunker`, or the one `max_tokens`, `tokenizer` and `overlap` describe."""
        from ..chunking.api import Chunker

        return self.chunker or Chunker(max_tokens=self.max_tokens, tokenizer=self.tokenizer,
                                       overlap=self.overlap)


def check_limits(max_file_size: int, file_timeout: float | None) -> None:
    """`ConfigError` unless the per-file bounds are positive."""
    if max_file_size < 1:
        raise ConfigError(f"max_file_size must be a positive number of bytes, got {max_file_size!r}")
    if file_timeout is not None and not file_timeout > 0:
        raise ConfigError(f"file_timeout must be a positive number of seconds, got {file_timeout!r}")


def positive_int(name: str, value: Any) -> int:
    """`value`, checked: `ConfigError` naming the option `name` unless a positive integer
    (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    return value


def writer_count(writers: int) -> int:
    """`writers`, checked: `ConfigError` unless a positive integer."""
    return positive_int("writers", writers)


def worker_count(workers: int | None) -> int:
    """The processes of the local runner: `workers`, or one per core; `ConfigError` unless
    a positive integer."""
    if workers is None:
        return max(1, os.cpu_count() or 1)
    return positive_int("workers", workers)
