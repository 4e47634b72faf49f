"""The dry run of an ingest (`IngestOptions.dry_run`): the bill before it is paid.

It discovers, reads, parses and chunks as the local runner does (the same worker processes,
the same unchanged-file test against the collection when there is one) and counts what the
run would embed and write, per format (`IngestReport.formats`), after the same dedup: a text
repeated in the run is embedded once, a text whose vector the collection holds is reused.
It only reads: no database or collection is created, no lock taken, nothing written, and
the embedding model is never loaded (the embedder is resolved for its identity only, which
decides whether stored chunks are current).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..chroma.store import DEFAULT_DB, Store, StoreError, connect
from .collection import choose_root, discovered, gone_sources, prepare_options
from .discover import discover
from .options import IngestOptions, IngestProgress, IngestReport, check_limits
from .pool import prepared_in_order
from .stages import Planner

if TYPE_CHECKING:
    from ..embeddings.functions import Embedder


def dry_run(paths: list[str], opts: IngestOptions, *, workers: int) -> IngestReport:
    """What `ingest(paths, opts)` would embed and write, without embedding or writing."""
    from ..embeddings.functions import resolve_embedder

    started = time.perf_counter()
    check_limits(opts.max_file_size, opts.file_timeout)
    chunker = opts.make_chunker()
    emb = resolve_embedder(opts.embedder, device=opts.device)
    store = None if opts.rebuild else existing_store(opts, emb)
    recorded = store.root if store is not None else None
    root = choose_root(paths, opts.root, recorded, opts.collection)
    t0 = time.perf_counter()
    found = discover(paths, root=root, follow_symlinks=opts.follow_symlinks,
                     max_file_size=opts.max_file_size)
    report = discovered(found, opts.prune, IngestReport(
        window=emb.window, root=str(root), workers=workers, dry_run=True))
    states = store.summary() if store is not None else {}
    prep = prepare_options(opts, chunker, emb)
    discover_seconds = time.perf_counter() - t0
    # `fresh`: without a collection there is nothing to lend, and nothing is asked of it
    planner = Planner(store, report, states, prep.options, len(found.files), opts.progress,  # type: ignore[arg-type]
                      fresh=store is None)
    seen: set[str] = set()  # the texts this run would embed (the runner's memo and windows)
    for prepared in prepared_in_order(found.files, states, prep, workers):
        plan = planner.take(prepared)
        if plan is not None:
            hashes = [meta["embed_hash"] for _, meta in plan.embed]
            known = planner.known(sorted({h for h in hashes if h not in seen}))
            for (chunk, _), h in zip(plan.embed, hashes):
                if h in known or h in seen:  # a vector stored, or embedded earlier in the run
                    report.reused += 1
                    continue
                seen.add(h)
                report.embedded += 1
                report.bill(chunk.format).texts += 1
            report.written += len(plan.embed)
            report.updated += len(plan.refresh)
            report.deleted += len(plan.stale)
        if opts.progress is not None:  # files read and chunks made: nothing is embedded
            opts.progress(IngestProgress(report.files, len(found.files), report.chunks, 0.0,
                                         prepared.source))
    if opts.prune and store is not None:
        for ids in store.ids_of_sources(gone_sources(found, states, report)).values():
            report.pruned_files += 1
            report.pruned_chunks += len(ids)
    report.seconds = planner.seconds(discover_seconds, 0.0, 0.0, started)
    return report


def existing_store(opts: IngestOptions, emb: Embedder) -> Store | None:
    """The collection the run would write, opened to read, if it exists and holds records;
    else None. An embedded database that does not exist is not created."""
    if opts.client is None and opts.host is None and opts.port is None:
        folder = Path(opts.db_path if opts.db_path is not None else DEFAULT_DB)
        if not (folder / "chroma.sqlite3").is_file():
            return None
    c = connect(client=opts.client, db_path=opts.db_path, host=opts.host, port=opts.port,
                retry_delays=opts.retry_delays, timeout=opts.timeout)
    from chromadb.errors import NotFoundError

    try:
        col = c.get_collection(opts.collection)
    except NotFoundError:
        return None
    except ValueError as e:  # older Chroma: "does not exist"
        if "does not exist" in str(e):
            return None
        raise StoreError(f"cannot open collection {opts.collection!r}: {e}") from e
    if col.count() == 0:  # an empty one lends nothing and is named from no root
        return None
    # stored by another embedder, or not by chunkwise: the same error as a real run's
    return Store(c, opts.collection, emb, create=False, retry_delays=opts.retry_delays)
