"""The collection a run writes, every runner alike: opened for writing under the database's
lock (`open_for_writing`), its root chosen and recorded (`choose_root`), a damaged index healed,
the files discovered and what is stored read (`start_run`, giving a `Run`), and at the end the
documents whose files are gone pruned (`prune_gone`). `Session` is a run with its `Planner`:
what a runner opens, drives and finishes.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..chroma.locking import WriteLock
from ..chroma.store import (DEFAULT_DB, SourceState, Store, StoreError, connect,
                            persist_directory)
from .discover import (Discovery, default_root, discover, inside, read_bounded, resolve_root,
                       still_a_document, unsupported_summary)
from .options import IngestOptions, IngestReport, check_limits, writer_count
from .stages import Planner, PrepareOptions, content_hash, options_fingerprint

if TYPE_CHECKING:
    from chromadb.api import ClientAPI

    from ..embeddings.functions import Embedder
    from .options import ChunkerLike

log = logging.getLogger(__name__)


# -- roots ----------------------------------------------------------------------------------
def choose_root(paths: Sequence[str | os.PathLike], root: str | os.PathLike | None,
                recorded: str | None, collection: str,
                moved_here: Callable[[Path], bool] = lambda root: False) -> Path:
    """The root of this run: `root` if given; else the collection's own root when every path
    lies inside it; else the folder given (see `discover.default_root`). A collection keeps
    the root it was first written from: another one is refused, since its sources would name
    the same files differently; the error says what gets out (`--rebuild`, `--root`, or the
    recorded root). Unless `moved_here(root)`: the folder was moved or copied there (see
    `recognised`), and the run names documents from it, as the collection did before."""
    if root is not None:
        chosen = resolve_root(root)
    else:
        chosen = default_root(paths)
        if recorded is not None:
            rec = Path(recorded)
            if all(inside(Path(os.path.abspath(os.fspath(p))).resolve(), rec) for p in paths):
                chosen = rec
    if recorded is not None and Path(recorded) != chosen and moved_here(chosen):
        log.warning("collection %r was written from %s; its documents are in %s now (moved "
                    "or copied): named from there on", collection, recorded, chosen)
        return chosen
    if recorded is not None and Path(recorded) != chosen:
        given = [Path(os.path.abspath(os.fspath(p))).resolve() for p in paths]
        if root is not None and all(inside(p, Path(recorded)) for p in given):
            fix = f"ingest them without --root (API: root=None), or with --root {recorded}"
        else:
            fix = (f"--rebuild empties it and names documents relative to {chosen} "
                   f"(API: rebuild=True), --root names the folder that now holds the "
                   f"documents of {recorded} (moved or copied), or use another --collection")
        raise StoreError(f"collection {collection!r} holds documents named relative to "
                         f"{recorded}, not {chosen}: {fix}")
    return chosen


#: stored documents whose bytes are read to recognise a moved root (`recognised`)
RECOGNISE_SAMPLE = 64


def recognised(states: dict[str, SourceState], root: Path, max_file_size: int) -> bool:
    """Whether `root` holds the documents a collection names relative to another root (the
    folder moved or copied there): at least half of the stored sources are files under
    `root` by the same names, and of up to `RECOGNISE_SAMPLE` of those (spread over the
    names) more than half have the bytes whose content hash is stored, so a few files edited
    or deleted since do not stop it, and another folder with some names alike does."""
    names = sorted(s for s in states if s)
    present = [s for s in names if still_a_document(root / s, root)]
    if not names or 2 * len(present) < len(names):
        return False
    sample = present[::max(1, len(present) // RECOGNISE_SAMPLE)][:RECOGNISE_SAMPLE]
    same = 0
    for source in sample:
        try:
            same += content_hash(read_bounded(root / source, max_file_size)) == \
                states[source].content_hash
        except OSError:
            continue
    return 2 * same > len(sample)


@contextmanager
def open_for_writing(opts: IngestOptions) -> Iterator[ClientAPI]:
    """The Chroma client of a run that writes, every runner alike: a server's, the `client`
    given, or an embedded database's, which is locked for the run (`WriteLock`) and opened
    only once the lock is held."""
    client, db_path, host, port = opts.client, opts.db_path, opts.host, opts.port
    retry_delays, timeout = opts.retry_delays, opts.timeout
    server = client is None and (host is not None or port is not None)
    if client is not None or server:
        c = connect(client=client, db_path=db_path, host=host, port=port,
                    retry_delays=retry_delays, timeout=timeout)
        folder = persist_directory(c) if client is not None else None
    else:
        c, folder = None, Path(db_path if db_path is not None else DEFAULT_DB)
    lock = WriteLock(folder, wait=opts.wait, on_wait=opts.on_wait) if folder is not None else None
    if lock is not None:
        lock.__enter__()
    try:
        if c is None:
            # Opened under the lock: two processes creating one new database at once race
            # on its tables ("table collections already exists").
            c = connect(db_path=folder, retry_delays=retry_delays, timeout=timeout)
        yield c
    finally:
        if lock is not None:
            lock.__exit__(None, None, None)


@dataclass
class Run:
    """What every runner starts from: the store, the files found, what is stored for each
    source, the report so far, and the options of stage 2."""

    store: Store
    found: Discovery
    states: dict[str, SourceState]
    report: IngestReport
    opts: PrepareOptions
    discover_seconds: float
    unrecorded_root: str | None = None
    """The root to record before the first write; None when the collection has it."""


def start_run(c: ClientAPI, paths: list[str] | None, opts: IngestOptions, chunker: ChunkerLike,
              emb: Embedder, *, workers: int, hashes: set[str] | None = None,
              found: Discovery | None = None) -> Run:
    """Open (or `rebuild`) the collection, choose the root (recorded by the planner before
    the first write, so a run that writes nothing pins nothing), repair a damaged
    index, discover the files under `paths` and read what is stored (one paged pass;
    `hashes`, when given, gets every stored embed hash on the way). `paths=None` discovers
    nothing: the caller brings its own files, named relative to `root`, and adds them to
    `run.found.files` as it reads them (what `prune_gone` keeps). `found`: the discovery
    of `paths` already made (`nothing_to_ingest`), used when its root is the run's."""
    collection, root = opts.collection, opts.root
    if opts.rebuild:
        _drop(c, collection, opts.retry_delays)
    store = Store(c, collection, emb, create=True, retry_delays=opts.retry_delays,
                  lexical=opts.lexical)
    held = store.count()
    # a collection that holds nothing is named from no root, whatever an earlier run recorded
    recorded = store.root if held else None
    if recorded is None and held > 0:
        raise StoreError(
            f"collection {collection!r} was written by an earlier chunkwise, which named "
            "documents by the path as typed (so one folder could be stored several times); "
            "rebuild it once with --rebuild (API: rebuild=True), or use another --collection")
    the_root = choose_root(paths if paths is not None else [root], root, recorded, collection,
                           lambda r: recognised(store.summary(), r, opts.max_file_size))
    if recorded is not None and Path(recorded) != the_root:  # recognised: moved or copied
        store.set_root(str(the_root))
        recorded = str(the_root)
    repaired = _heal_if_damaged(store, emb)
    store.sync_lexical()  # both legs hold the same ids before anything is called unchanged
    t0 = time.perf_counter()
    if paths is not None:
        if found is None or found.root != the_root:
            found = discover(paths, root=the_root, follow_symlinks=opts.follow_symlinks,
                             max_file_size=opts.max_file_size)
    else:
        found = Discovery(root=the_root, scopes=[""])
    report = discovered(found, opts.prune, IngestReport(
        window=emb.window, root=str(the_root), workers=workers, repaired=repaired))
    states = store.summary(hashes)
    return Run(store, found, states, report, prepare_options(opts, chunker, emb),
               time.perf_counter() - t0, None if recorded is not None else str(the_root))


def nothing_to_ingest(paths: list[str], opts: IngestOptions, *, workers: int
                      ) -> tuple[Discovery, IngestReport | None]:
    """Discover `paths` before any store is opened or model loaded: the discovery, and the
    run's whole report when there is nothing to write (no document under the paths: they do
    not exist, are empty or hold only files of no supported format), else None. A run that
    prunes or rebuilds always opens its collection (it may delete), so it gets None. In the
    report nothing is logged: `unsupported` and `failed` say it, once (the CLI's one line)."""
    root = resolve_root(opts.root) if opts.root is not None else default_root(paths)
    found = discover(paths, root=root, follow_symlinks=opts.follow_symlinks,
                     max_file_size=opts.max_file_size)
    if found.files or opts.prune or opts.rebuild:
        return found, None
    report = IngestReport(root=str(root), workers=workers)
    return found, discovered(found, False, report, warn=False)


def discovered(found: Discovery, prune: bool, report: IngestReport, *,
               warn: bool = True) -> IngestReport:
    """`report` with what discovery passed over: the paths skipped, the files of no supported
    format (one warning, with `warn`), and the paths that do not exist (failures, unless
    pruning)."""
    report.ignored.extend(found.skipped)
    if found.unsupported and warn:
        log.warning("%s", unsupported_summary(found.unsupported))
    report.unsupported = len(found.unsupported)
    report.unsupported_note = unsupported_summary(found.unsupported) if found.unsupported else ""
    if found.missing and not prune:
        report.failed.extend((m, "no such file or directory") for m in found.missing)
    return report


def prepare_options(opts: IngestOptions, chunker: ChunkerLike, emb: Embedder) -> PrepareOptions:
    """What each file's preparation needs: the chunker, the format, the fingerprint of both
    with the embedder's identity (stored chunks made otherwise are not current), the bounds."""
    return PrepareOptions(chunker, opts.format,
                          options_fingerprint(chunker, opts.format, emb.identity),
                          opts.max_file_size, opts.file_timeout)


def _heal_if_damaged(store: Store, emb: Embedder) -> int:
    """A damaged index (vectors lost, a graph that no longer answers) is repaired before
    anything is called unchanged; returns the records re-embedded."""
    from ..chroma.health import heal, quick_check

    if quick_check(store):
        return 0
    found, after = heal(store, emb)
    if found.ok:
        return 0
    if after.ok:
        log.warning("collection %r was damaged (%s); repaired", store.name, found.summary())
    else:
        log.warning("collection %r is damaged (%s) and could not be repaired (%s); "
                    "`chunkwise check` tells more", store.name, found.summary(), after.summary())
    return max(len(found.missing), 1)


def _drop(c: ClientAPI, name: str, delays: Sequence[float]) -> None:
    from chromadb.errors import NotFoundError

    from ..chroma.store import with_retries

    try:
        with_retries(lambda: c.delete_collection(name), f"delete collection {name!r}", delays)
    except NotFoundError:
        pass
    except ValueError as e:  # older Chroma: "does not exist"
        if "does not exist" not in str(e):
            raise


def prune_gone(run: Run) -> None:
    """Delete the documents under the paths given whose files are really gone: not found,
    skipped or failed in this run, and not on disk under the root."""
    store, report = run.store, run.report
    t0 = time.perf_counter()
    gone = gone_sources(run.found, run.states, report)
    for source, ids in sorted(store.ids_of_sources(gone).items()):
        store.delete(ids)
        report.pruned_files += 1
        report.pruned_chunks += len(ids)
        log.info("pruned %s (%d chunks)", source, len(ids))
    report.seconds["prune"] = time.perf_counter() - t0


def gone_sources(found: Discovery, states: dict[str, SourceState], report: IngestReport
                 ) -> set[str]:
    """The stored sources under the paths given that are no longer a document (what `prune`
    deletes): not read in this run, and not a regular file by that name on disk
    (`discover.still_a_document`): gone, replaced by a folder, a FIFO or a dangling link, or
    now a link to another file of the root (whose own name holds its chunks). A file there
    but skipped or failed in this run (too large, no permission) keeps its chunks."""
    del report  # what failed is judged on disk as the rest is (a failed read is no proof)
    present = {f.source for f in found.files}
    gone = set()
    for source in states:
        if source in present or not any(_under(source, scope) for scope in found.scopes):
            continue
        if still_a_document(found.root / source, found.root):
            continue
        gone.add(source)
    return gone


def _under(source: str, scope: str) -> bool:
    return scope == "" or source == scope or source.startswith(scope.rstrip("/") + "/")


# -- a run with its planner, for every runner -----------------------------------------------
@dataclass
class Session:
    """What a runner drives: the `Run`, its `Planner`, and the chunker and embedder the
    options name."""

    run: Run
    planner: Planner
    chunker: ChunkerLike
    embedder: Embedder
    opts: IngestOptions
    started: float

    def finish(self, embed: float, idle: float) -> IngestReport:
        """Prune (with `prune`) and time the run; its report. `embed` and `idle`: the seconds
        the embedder worked and waited."""
        if self.opts.prune:
            prune_gone(self.run)
        self.run.report.seconds = self.planner.seconds(self.run.discover_seconds, embed, idle,
                                                       self.started)
        return self.run.report


@contextmanager
def open_session(paths: list[str] | None, opts: IngestOptions, *, workers: int,
                 hashes: set[str] | None = None, trust_empty: bool = True,
                 found: Discovery | None = None) -> Iterator[Session]:
    """A run of `opts` under its store's lock (see `open_for_writing` and `start_run`;
    `found`: `paths` discovered already). A collection empty at the start has no vectors to
    lend, so the planner never asks it for any; `trust_empty=False` asks all the same (the
    Ray runner, as before the split)."""
    from ..embeddings.functions import resolve_embedder

    started = time.perf_counter()
    check_limits(opts.max_file_size, opts.file_timeout)
    writer_count(opts.writers)
    chunker = opts.make_chunker()
    emb = resolve_embedder(opts.embedder, device=opts.device)
    with open_for_writing(opts) as c:
        run = start_run(c, paths, opts, chunker, emb, workers=workers, hashes=hashes,
                        found=found)
        # an empty collection at the start has nothing to lend: only this run's vectors
        fresh = trust_empty and not run.states and run.store.count() == 0
        planner = Planner(run.store, run.report, run.states, run.opts.options,
                          len(run.found.files), opts.progress, fresh=fresh,
                          root=run.unrecorded_root)
        yield Session(run, planner, chunker, emb, opts, started)
