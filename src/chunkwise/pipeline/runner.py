"""Ingestion: files in, an up-to-date Chroma collection out, in four stages.

    >>> from chunkwise.pipeline import ingest
    >>> report = ingest(["docs/"], db_path="chunkwise-db", workers=2)

1. **discover** (`chunkwise.pipeline.discover`): the files under the paths given, each named by its
   path relative to the root; only regular files, within the size bound.
2. **prepare** (`stages.prepare`): read the bytes, hash them; a file whose stored chunks carry this
   hash and these options is *unchanged* and not parsed; otherwise parse and chunk it, under
   the per-file time limit. Runs inline (`workers=1`) or in a process pool (`workers=N`),
   results consumed in discovery order so the output never depends on N.
3. **embed**: the chunks to write are looked up by the sha256 of their embed text, in this
   run and in the collection; only texts never embedded before go to the embedder, in
   batches sorted by length across files, on a thread of their own fed through a bounded
   queue (backpressure: memory stays flat in corpus size).
4. **write** (`stages.write_window`): for each file, in order, upsert its new chunks, refresh the
   metadata of kept ones, then delete its stale ones. Any prefix of that sequence leaves a
   state that stage 2 sees as out of date, so a run killed at any moment is completed by the
   next one.

The same stage functions are driven by the Ray runner (`chunkwise.ray`). An embedded database
is written by one process at a time (`chunkwise.chroma.locking`).

The room: `options` (IngestOptions, IngestReport), `stages` (prepare, plan, write, Planner),
`threads` (the embed and write threads, `LocalRunner`), `pool` (worker processes),
`collection` (lock, root, start, prune; `Session`), and here `ingest`, the local runner.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from ..embeddings.process import EmbeddingProcess
from ..errors import ConfigError
from .collection import nothing_to_ingest, open_session
from .dryrun import dry_run
from .options import (IngestInterrupted, IngestOptions, IngestProgress, IngestReport,
                      worker_count)
from .pool import prepared_in_order
from .threads import LocalRunner

__all__ = ["IngestInterrupted", "IngestOptions", "IngestProgress", "IngestReport", "ingest"]


def ingest(paths: Iterable[str | os.PathLike], options: IngestOptions | None = None, /,
           **kwargs: Any) -> IngestReport:
    """Chunk, embed and write files (folders are walked) into a Chroma collection; the
    options are `IngestOptions`' (keyword arguments, or one `IngestOptions`).

    Documents are named by their path relative to `root` (default: the folder given, or the
    collection's recorded root). Unchanged files are skipped; changed files replace their
    chunks, reusing the vectors of texts already embedded; with `prune`, documents under the
    given paths whose files are gone are deleted. A file that cannot be read or parsed is
    recorded in `report.failed` and the rest is ingested. `workers` processes parse and
    chunk (default: one per core). An embedded database is locked for the run; another
    writer is waited for up to `wait` seconds. `rebuild` empties the collection first.
    `device` is where the default embedder runs (`auto`: a GPU when there is one).
    `dry_run` reads, parses and chunks only, and reports what would be embedded and written
    (per format: `report.formats`), creating and writing nothing (`pipeline.dryrun`).

    Paths that hold no document (they do not exist, are empty folders or hold only files of
    no supported format) are reported at once, without opening the store or loading the
    model (unless `prune` or `rebuild`, which may delete).

    A Ctrl-C (KeyboardInterrupt) writes what is embedded and raises `IngestInterrupted`
    (a KeyboardInterrupt) saying how much was kept: the next run reuses it.

    Raises `StoreError` when the store is unreachable after retries, refuses a write, or
    was built from another root; `LockedError` when another process keeps writing;
    `ConfigError` for invalid options.
    """
    opts = IngestOptions.of(options, kwargs)
    paths = [os.fspath(p) for p in paths]
    if not paths:
        raise ConfigError("no paths to ingest")
    workers = worker_count(opts.workers)
    if opts.dry_run:
        return dry_run(paths, opts, workers=workers)
    # nothing to write (missing paths, empty folders, no supported file): said at once,
    # with no model loaded and no database created
    found, nothing = nothing_to_ingest(paths, opts, workers=workers)
    if nothing is not None:
        return nothing
    with open_session(paths, opts, workers=workers, found=found) as session:
        run, emb = session.run, session.embedder
        # With worker processes, the model gets a process of its own too (see embedding_process)
        away = EmbeddingProcess(emb.spec, device=opts.device) if (
            workers > 1 and emb.spec is not None and not emb.local_only) else None
        runner = LocalRunner(session.planner, away.embedder(emb) if away else emb, opts.writers)
        try:
            for prepared in prepared_in_order(run.found.files, run.states, run.opts, workers):
                runner.take(prepared)
            runner.finish()
        except KeyboardInterrupt as e:  # Ctrl-C: write what is embedded, then say so
            if isinstance(e, IngestInterrupted):
                raise
            if away is not None:
                away.close(now=True)  # the slice it embeds is not waited for
            raise IngestInterrupted(*runner.interrupt(), run.report) from None
        finally:
            runner.close()
            if away is not None:
                away.close()
        return session.finish(runner.thread.busy, runner.thread.idle)
