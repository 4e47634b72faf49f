"""Ingestion on a Ray cluster: the stages of `chunkwise.pipeline` run by Ray Data.

    >>> from chunkwise.ray import ingest
    >>> report = ingest(["docs/"], host="chroma.internal", port=8000, ray_address="auto")

The driver (this process) does what the local runner does around the stages, with the same
functions: it opens the collection (`pipeline.open_for_writing`), chooses and records the root,
discovers the files and reads what is stored (`pipeline.start_run`), and prunes at the end
(`pipeline.prune_gone`). In between, Ray Data runs

    files ─► map_batches(prepare): CPU tasks ─► map_batches(embed): an actor pool, one GPU
    per actor where the cluster has GPUs ─► the driver, in discovery order ─► plan_file,
    then windows of files written by the local runner's `WriteThread` (`write_window`)

- **Order**: the dataset runs with `DataContext.execution_options.preserve_order`, so the
  driver receives files in discovery order, whatever finished first, and the collection
  never depends on the cluster.
- **Vectors reused by embed hash**: only the driver talks to Chroma (every node reaching
  the server is not required, and `--host localhost` means the same machine everywhere).
  The pass that summarises the collection also collects every stored embed hash; the
  actors get them as a sorted array of 64-bit prefixes (8 bytes a chunk) and embed only
  the texts whose hash is not there, each once per batch and once per actor (a memo). The
  driver fills the other vectors as the local runner does (`Planner.known`: this run's memo,
  then `Store.vectors_by_hash`) and embeds itself the rare text whose stored vector is gone
  by then (a stale chunk deleted earlier in the run). The hint can only make a run slower,
  never wrong: a prefix collision sends one text to the driver's fallback.
- **Writes**: only the driver writes, as the local runner does: windows of whole files,
  in order, on a `WriteThread` (`pipeline.write_window`: the window's upserts in as few calls
  as the store takes, then each file's refreshes and deletes); a run killed at any moment
  leaves files that the next run sees as out of date and completes.
- **Where**: a Chroma server (`host`/`port`), or an embedded database on the driver's disk
  (`db_path`), locked and opened as the local runner does (`pipeline.open_for_writing`):
  the cluster's tasks and actors never touch the store.

Every node must see the files at the paths discovered (shared storage), or the caller passes
a Ray dataset that carries the bytes (`ray.data.read_binary_files(..., include_paths=True)`
plus a `source` column).

`import ray` is done inside the functions: this module is `chunkwise.ray`, and with
absolute imports `ray` always names the top-level package.
"""

from __future__ import annotations

import logging
import os
import pickle
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import numpy as np

from .discover import FileTask
from ..errors import ChunkwiseError, ConfigError, MissingDependencyError
from .collection import open_session
from .options import IngestOptions, check_limits, positive_int
from .pool import picklable
from .stages import VectorMemo, prepare, prepare_bytes
from .threads import EMBED_WINDOW, WriteThread

if TYPE_CHECKING:  # the hand-offs' types
    from ..embeddings.functions import Embedder
    from .collection import Run, Session
    from .options import IngestReport
    from .stages import FilePlan, Planner, Prepared, Vector

log = logging.getLogger(__name__)

#: files per parse+chunk task and per call of an embedder actor
DEFAULT_BATCH_SIZE = 16
#: batches a parse+chunk worker process handles before Ray replaces it
PREPARE_MAX_CALLS = 256


def ingest(paths_or_dataset: Iterable[str | os.PathLike] | Any,
           options: IngestOptions | None = None, /, *, ray_address: str | None = None,
           num_cpus: int | None = None, embed_actors: int | None = None,
           batch_size: int = DEFAULT_BATCH_SIZE, **kwargs: Any) -> IngestReport:
    """`chunkwise.pipeline.ingest` on a Ray cluster, into the same store: the same
    documents, ids, metadata and vectors, the same incremental semantics, the same report,
    the same options (`IngestOptions`, as keyword arguments or one object), and these.

    `paths_or_dataset` is a list of files and folders (discovered by the driver), or a
    `ray.data.Dataset` with a `source` column (the document's name, relative to `root`,
    which is then required) and a `bytes` or a `path` column; its rows are ingested in
    the dataset's order and `prune` removes every stored source under `root` that is
    neither in it nor on disk.

    Ray: `ray_address` (e.g. `auto`, `ray://head:10001`) joins a cluster; without it an
    already initialised Ray is used, else a local one is started (`num_cpus`, default all)
    and shut down at the end. `workers` bounds the parse+chunk tasks running at once
    (default: as many as the cluster's CPUs allow); `embed_actors` is the size of the
    embedder pool (default: one per GPU, or one per node without GPUs; a CPU actor's
    onnxruntime uses all the cores of its node); `batch_size` files go to each task and
    each actor call. The embedder is rebuilt in each actor from its spec (`minilm`, a
    model directory, `module:attr`), or pickled when it was given as an object.

    The store is a server (`host`/`port`) or an embedded database on this machine
    (`db_path`, default `chunkwise-db`), locked for the run as `pipeline.ingest` locks it
    (`wait`, `on_wait`). `device` is where the actors' minilm runs (`auto`: the GPU Ray
    gives each actor, when the cluster has GPUs). Raises `ConfigError` for bad options,
    `StoreError` and `LockedError` as `pipeline.ingest` does, `MissingDependencyError`
    without Ray, and `ChunkwiseError` when the cluster fails.
    """
    opts = IngestOptions.of(options, kwargs)
    if opts.dry_run:
        raise ConfigError("dry_run is the local runner's (chunkwise.pipeline.ingest): it "
                          "chunks as Ray would and embeds nothing")
    if not available():
        raise MissingDependencyError("ray[data]", "ray")
    dataset = paths_or_dataset if _is_dataset(paths_or_dataset) else None
    paths = None if dataset is not None else [os.fspath(p) for p in paths_or_dataset]
    if paths is not None and not paths:
        raise ConfigError("no paths to ingest")
    if dataset is not None and opts.root is None:
        raise ConfigError("a dataset's sources are relative to a root: give root= (the "
                          "folder they are named from)")
    workers = opts.workers
    for name, value in (("workers", workers), ("embed_actors", embed_actors),
                        ("num_cpus", num_cpus), ("batch_size", batch_size)):
        if value is not None:
            positive_int(name, value)
    if ray_address is not None and num_cpus is not None:
        raise ConfigError("num_cpus sizes a local Ray; a cluster (ray_address) has its own")
    check_limits(opts.max_file_size, opts.file_timeout)
    chunker = opts.make_chunker()
    if not picklable(chunker):
        raise ConfigError("these chunking options cannot be sent to Ray workers (an object "
                          "that does not pickle); give them by name")
    hashes: set[str] = set()
    timing = {"embed": 0.0, "embed_idle": 0.0}
    with open_session(paths, replace(opts, chunker=chunker), workers=workers or 1,
                      hashes=hashes, trust_empty=False) as session:
        run, emb = session.run, session.embedder
        for_actors = emb.spec if emb.spec is not None else emb
        if dataset is not None or run.found.files:
            with _ray_session(ray_address, num_cpus) as ray:
                _check_sendable(ray, for_actors)
                run.report.workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
                rows = _results(ray, run, dataset, for_actors, opts.device,
                                _known_prefixes(hashes), workers=workers, actors=embed_actors,
                                batch_size=batch_size)
                _consume(rows, session, timing, listed=dataset is None)
        return session.finish(timing["embed"], timing["embed_idle"])


def available() -> bool:
    """Whether Ray Data can be imported here (without importing it: that takes seconds)."""
    from importlib.util import find_spec

    return all(find_spec(name) is not None for name in ("ray", "pyarrow"))


def _check_sendable(ray: Any, embedder: Any) -> None:
    try:
        ray.cloudpickle.dumps(embedder)
    except Exception as e:  # noqa: BLE001 - any object may refuse in its own way
        raise ConfigError("this embedder cannot be sent to Ray actors (it does not pickle: "
                          f"{type(e).__name__}); give it as a spec (minilm, a model "
                          "directory, or module:attr)") from e


def _is_dataset(obj: Any) -> bool:
    return hasattr(obj, "map_batches") and hasattr(obj, "iter_rows")


class _ray_session:
    """Ray for the length of a run: joined at `address`, the one already initialised, or
    a local one started here (and shut down on the way out)."""

    def __init__(self, address: str | None, num_cpus: int | None) -> None:
        self.address, self.num_cpus, self.started = address, num_cpus, False

    def __enter__(self) -> Any:
        try:
            import ray
            import ray.data
        except ImportError as e:
            raise MissingDependencyError("ray[data]", "ray") from e
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False,
                                      "logging_level": logging.WARNING}
            if self.address is None:
                kwargs["num_cpus"] = self.num_cpus
            try:
                ray.init(address=self.address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise ChunkwiseError(f"cannot start or join Ray"
                                     f"{f' at {self.address}' if self.address else ''}: "
                                     f"{e}") from e
            self.started = True
        ctx = ray.data.DataContext.get_current()
        self.saved = (ctx, ctx.execution_options.preserve_order, ctx.enable_progress_bars)
        ctx.execution_options.preserve_order = True  # the driver writes in discovery order
        ctx.enable_progress_bars = False  # the CLI has its own progress line
        self.ray = ray
        return ray

    def __exit__(self, *exc: Any) -> None:
        ctx, order, bars = self.saved
        ctx.execution_options.preserve_order = order
        ctx.enable_progress_bars = bars
        if self.started:
            self.ray.shutdown()


# -- the dataset ----------------------------------------------------------------------------
def _known_prefixes(hashes: set[str]) -> np.ndarray:
    """Stored embed hashes as sorted 64-bit prefixes: what the actors need not embed."""
    out = np.fromiter((int(h[:16], 16) for h in hashes), dtype=np.uint64, count=len(hashes))
    out.sort()
    return out


def _results(ray: Any, run: Run, dataset: Any, embedder: Any, device: str, known: np.ndarray, *,
             workers: int | None, actors: int | None, batch_size: int) -> Iterator[dict]:
    """The pipeline's output rows, in input order: one per file, with its stage-2 result and
    the vectors the actors computed for it."""
    from ray.data import ActorPoolStrategy, TaskPoolStrategy

    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    cpus = int(resources.get("CPU", 0))
    if actors is None:
        actors = gpus or max(1, sum(1 for n in ray.nodes() if n.get("Alive")))
    if not gpus and actors >= cpus:
        raise ConfigError(f"{actors} embedder actor(s) on a cluster of {cpus} CPU(s) leave "
                          "none to parse and chunk: use fewer embed_actors, or more CPUs")
    if dataset is None:
        ds = ray.data.from_items([{"seq": i, "path": f.path, "source": f.source}
                                  for i, f in enumerate(run.found.files)])
    else:
        columns = set(dataset.schema().names)
        if "source" not in columns or not columns & {"bytes", "path"}:
            raise ConfigError(f"a dataset to ingest needs a source column and a bytes or a "
                              f"path column; it has {', '.join(sorted(columns))}")
        ds = dataset
    shared = ray.put((run.opts, run.states))
    ds = ds.map_batches(
        _prepare_batch, fn_kwargs={"shared": [shared]}, batch_size=batch_size,
        batch_format="numpy", num_cpus=1,
        compute=TaskPoolStrategy(size=workers) if workers else None,
        # A worker is replaced after this many batches, so whatever memory the parsers
        # keep cannot grow over a long run. Ray Data fuses a task stage into the next
        # actor stage when their remote arguments are equal, as they are on a CPU cluster;
        # this one the actors cannot share, so parsing keeps tasks of its own beside the
        # embedders instead of running inside them (test_ray checks the plan).
        max_calls=PREPARE_MAX_CALLS)
    ds = ds.map_batches(
        _Embed, fn_constructor_kwargs={"embedder": embedder, "device": device,
                                       "known": [ray.put(known)]},
        batch_size=batch_size, batch_format="numpy", compute=ActorPoolStrategy(size=actors),
        num_cpus=1, num_gpus=1 if gpus else None)
    return ds.iter_rows()


_cache: dict[str, Any] = {}


def _shared(box: list) -> Any:
    """The object behind `box[0]`, fetched and unpickled once per worker process."""
    import ray

    key = box[0].hex()
    if key not in _cache:
        _cache.clear()
        _cache[key] = ray.get(box[0])
    return _cache[key]


def _prepare_batch(batch: dict[str, np.ndarray], *, shared: list) -> dict[str, Any]:
    """Stage 2 (`pipeline.prepare`) over a batch of rows, results pickled."""
    opts, states = _shared(shared)
    sources = batch["source"]
    datas = batch.get("bytes")
    paths = batch.get("path")
    out = []
    for k, source in enumerate(sources):
        source = str(source)
        if datas is not None and datas[k] is not None:
            p = prepare_bytes(source, bytes(datas[k]), states.get(source), opts)
        else:
            p = prepare(FileTask(str(paths[k]), source, 0), states.get(source), opts)
        out.append(pickle.dumps(p, protocol=pickle.HIGHEST_PROTOCOL))
    result = {"prepared": np.array(out, dtype=object)}
    if "seq" in batch:
        result["seq"] = batch["seq"]
    return result


class _Embed:
    """Stage 3 in an actor: the embedder built once, texts not stored yet embedded once per
    batch (sorted by length), vectors remembered for the actor's later batches."""

    def __init__(self, embedder: Any, device: str, known: list) -> None:
        import ray

        from ..embeddings.functions import resolve_embedder

        self.embedder = resolve_embedder(embedder, device=device)
        self.known = ray.get(known[0])
        self.memo = VectorMemo()
        self.last = time.perf_counter()

    def stored(self, hashes: list[str]) -> np.ndarray:
        if not len(self.known) or not hashes:
            return np.zeros(len(hashes), dtype=bool)
        keys = np.fromiter((int(h[:16], 16) for h in hashes), dtype=np.uint64,
                           count=len(hashes))
        at = np.minimum(np.searchsorted(self.known, keys), len(self.known) - 1)
        return self.known[at] == keys

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        from ..chroma.records import embed_hash

        t0 = time.perf_counter()
        idle = t0 - self.last
        files = [pickle.loads(b) for b in batch["prepared"]]
        per_file = [[(embed_hash(c.embed_text), c.embed_text) for c in p.chunks] for p in files]
        flat = [pair for pairs in per_file for pair in pairs]
        stored = dict(zip((h for h, _ in flat), self.stored([h for h, _ in flat])))
        todo: dict[str, str] = {}
        owner: dict[str, int] = {}
        for k, pairs in enumerate(per_file):
            for h, text in pairs:
                if not stored[h] and self.memo.get(h) is None and h not in todo:
                    todo[h] = text
                    owner[h] = k
        fresh: dict[str, np.ndarray] = {}
        truncated = 0
        if todo:
            order = sorted(todo, key=lambda h: len(todo[h]))
            texts = [todo[h] for h in order]
            vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
            if self.embedder.overflowing is not None:
                truncated = self.embedder.overflowing(texts)
            fresh = dict(zip(order, vectors))
        embedded = [0] * len(files)
        for h in todo:
            embedded[owner[h]] += 1
        vectors_out = []
        for pairs in per_file:
            mine = {"fresh": {}, "memo": {}}
            for h, _ in pairs:
                if h in fresh:
                    mine["fresh"][h] = fresh[h]
                elif not stored[h]:
                    mine["memo"][h] = self.memo.get(h)
            vectors_out.append(pickle.dumps(mine, protocol=pickle.HIGHEST_PROTOCOL))
        for h, v in fresh.items():
            self.memo.put(h, v)
        self.last = time.perf_counter()
        # the batch's own figures go with its first file
        first = np.zeros(len(files))
        busy, waited, over = first.copy(), first.copy(), first.astype(np.int64)
        if files:
            busy[0], waited[0], over[0] = self.last - t0, idle, truncated
        result = {"prepared": batch["prepared"], "vectors": np.array(vectors_out, dtype=object),
                  "embedded": np.array(embedded, dtype=np.int64), "truncated": over,
                  "busy": busy, "idle": waited}
        if "seq" in batch:
            result["seq"] = batch["seq"]
        return result


# -- the driver -----------------------------------------------------------------------------
def _consume(rows: Iterator[dict], session: Session, timing: dict[str, float], *,
             listed: bool) -> None:
    """Stage 4 in the driver: each file, in input order, planned against the store
    (`Planner.take`), its vectors completed, and written with the files before it in windows
    of about `EMBED_WINDOW` chunks on a `WriteThread`, as the local runner writes."""
    run, planner, emb = session.run, session.planner, session.embedder
    report = run.report
    writer = WriteThread(run.store, report, lambda: planner.tell("", timing["embed"]),
                         session.opts.writers)
    window: list[FilePlan] = []
    size = 0
    expected = 0
    try:
        for row in rows:
            if listed:  # preserve_order is what makes this hold; a broken order is a bug
                if int(row["seq"]) != expected:
                    raise ChunkwiseError(f"Ray returned file {row['seq']} where {expected} "
                                         "was due: the dataset's order was not preserved")
                expected += 1
            p: Prepared = pickle.loads(row["prepared"])
            vectors = pickle.loads(row["vectors"])
            report.embedded += int(row["embedded"])
            if int(row["embedded"]):
                report.bill(p.format).texts += int(row["embedded"])
            report.truncated += int(row["truncated"])
            timing["embed"] += float(row["busy"])
            timing["embed_idle"] += float(row["idle"])
            if not listed:
                run.found.files.append(FileTask("", p.source, 0))  # what prune keeps
            plan = planner.take(p)
            if plan is not None:
                _fill(plan, vectors, planner, emb)
                window.append(plan)
                size += len(plan.embed) + len(plan.refresh) + len(plan.stale)
                if size >= EMBED_WINDOW:
                    writer.submit(window)
                    window, size = [], 0
            planner.tell(p.source, timing["embed"])
        if window:
            writer.submit(window)
        writer.stop()
    except ChunkwiseError:
        raise
    except Exception as e:
        raise _cluster_error(e) from e
    finally:
        writer.close()  # after an error: what it holds is not written (the next run will)
        planner.timers["write"] += writer.busy


def _fill(plan: FilePlan, vectors: dict[str, dict[str, Vector]], planner: Planner,
          emb: Embedder) -> None:
    """The vectors of `plan.embed`: computed by the actor for this file, remembered by it
    (reused), else known to the driver (reused); the rest embedded here."""
    report = planner.report
    fresh, memo = vectors["fresh"], vectors["memo"]
    missing = []
    for j, (chunk, meta) in enumerate(plan.embed):
        h = meta["embed_hash"]
        if h in fresh:
            plan.vectors[j] = fresh[h]
        elif h in memo:
            plan.vectors[j] = memo[h]
            report.reused += 1
        else:
            missing.append((j, h, chunk.embed_text))
    if not missing:
        return
    known = planner.known([h for _, h, _ in missing])
    todo: dict[str, str] = {}
    for j, h, text in missing:
        if known.get(h) is not None:
            plan.vectors[j] = known[h]
            report.reused += 1
        else:
            todo.setdefault(h, text)
    if todo:  # stored when the run began, deleted since (a stale chunk of an earlier file)
        texts = list(todo.values())
        embedded = dict(zip(todo, np.asarray(emb.embed(texts), dtype=np.float32)))
        report.embedded += len(texts)
        if emb.overflowing is not None:
            report.truncated += emb.overflowing(texts)
        for h, v in embedded.items():
            planner.memo.put(h, v)
        for j, h, _ in missing:
            if plan.vectors[j] is None:
                plan.vectors[j] = embedded[h]


def _cluster_error(e: BaseException) -> ChunkwiseError:
    """A failure inside Ray as one `ChunkwiseError`, naming the first chunkwise error among
    its causes when there is one."""
    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, ChunkwiseError):
            return ChunkwiseError(f"Ray ingest failed on the cluster: {seen}")
        seen = getattr(seen, "cause", None) or seen.__cause__
    first = (str(e).strip().splitlines() or [""])[0]
    return ChunkwiseError(f"Ray ingest failed on the cluster: {type(e).__name__}: {first}")
