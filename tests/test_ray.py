"""Ray ingestion (`chunkwise.ray`, `ingest --ray`) against the local runner.

A local Ray (2 CPUs), writing to an embedded database and to a real `chroma run` on
127.0.0.1; the same folder ingested by the local runner into an embedded database must give
the same ids, documents and metadata, and vectors within 1e-6, run after run (unchanged,
edited, pruned). Vectors come from a hash embedder where they do not matter
(tests/hashembed.py), from the real model in one test. Skipped when Ray is not installed
(`pip install 'chunkwise[ray]'`); the shared corpus test is skipped without ../shared/corpus.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from chunkwise.chroma.queries import iter_collection
from chunkwise.errors import ConfigError
from chunkwise.pipeline.runner import ingest

from conftest import CORPUS, FIXTURES, ChromaServer, free_port
from test_chroma import corpus, make_bulk, write_topic  # noqa: F401 - a fixture
from hashembed import HASH, hash_vectors

ray = pytest.importorskip("ray")
from chunkwise.pipeline.ray import ingest as ray_ingest  # noqa: E402

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


class HashEF:
    """HASH's vectors as a Chroma-style embedding function, for `--embedder test_ray:HashEF`."""

    def __call__(self, input):
        return list(hash_vectors(list(input)))

    @staticmethod
    def name() -> str:
        return "test-blake2b-16"


# -- fixtures -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_ray():
    """A local Ray whose workers can import this module (the hash embedder pickles by name)."""
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def chroma(tmp_path_factory):
    srv = ChromaServer(tmp_path_factory.mktemp("chroma") / "db", free_port())
    srv.start()
    yield srv
    srv.stop()


def remote(srv: ChromaServer, collection: str) -> dict:
    return {"host": "127.0.0.1", "port": srv.port, "collection": collection}


@pytest.fixture(params=["db", "server"])
def store(request, tmp_path) -> dict:
    """Where the Ray runs write: an embedded database, or the `chroma run` server."""
    if request.param == "db":
        return {"db_path": tmp_path / "ray-db"}
    return remote(request.getfixturevalue("chroma"), f"c{free_port()}")


def records(**where) -> dict[str, tuple[str, dict, np.ndarray]]:
    """id -> (document, metadata, vector) of a whole collection."""
    from chunkwise.chroma.store import connect

    collection = where.pop("collection", "chunkwise")
    got = connect(**where).get_collection(collection).get(include=["documents", "metadatas", "embeddings"])
    return {i: (d, m, np.asarray(v)) for i, d, m, v in
            zip(got["ids"], got["documents"], got["metadatas"], got["embeddings"])}


def assert_same(local: dict, other: dict) -> None:
    assert set(local) == set(other)
    for i, (doc, meta, vec) in local.items():
        assert other[i][0] == doc and other[i][1] == meta, i
        assert np.abs(other[i][2] - vec).max() <= 1e-6, i


COUNTS = ("files", "chunks", "skipped", "changed", "written", "embedded", "reused",
          "updated", "deleted", "pruned_files", "pruned_chunks", "truncated", "root")


def counts(report) -> dict:
    d = report.to_dict()
    return {k: d[k] for k in COUNTS} | {"failed": d["failed"]}


# -- options refused before Ray starts ------------------------------------------------------
def test_bad_options_are_refused(corpus, local_ray):
    for bad in ({"workers": 0}, {"embed_actors": -1}, {"batch_size": 1.5},
                {"ray_address": "auto", "num_cpus": 2}):
        with pytest.raises(ConfigError):
            ray_ingest(["docs"], db_path="db", embedder=HASH, **bad)
    with pytest.raises(ConfigError, match="root"):
        ray_ingest(ray.data.from_items([{"source": "a.md", "bytes": b"# A"}]),
                   db_path="db", embedder=HASH)


# -- the same collection as the local runner ------------------------------------------------
def test_ray_equals_local_run_after_run(corpus, local_ray, store):
    plans = []
    handler = logging.Handler()
    handler.emit = lambda record: plans.append(record.getMessage())
    executor = logging.getLogger("ray.data._internal.execution.streaming_executor")
    executor.addHandler(handler)  # not on ray.data: Ray Data resets its handlers on first use
    server = store
    try:
        first = ray_ingest(["docs"], embedder=HASH, batch_size=2, **server)
    finally:
        executor.removeHandler(handler)
    local = ingest(["docs"], db_path="db", embedder=HASH)
    assert counts(first) == counts(local) and first.written == first.chunks > 0
    assert_same(records(db_path="db"), records(**server))
    # parse+chunk runs in tasks of its own, not fused into the embedder actors
    plan = next(m for m in plans if "Execution plan" in m)
    assert "TaskPoolMapOperator[MapBatches(_prepare_batch)] -> " \
           "ActorPoolMapOperator[MapBatches(_Embed)]" in plan, plan

    again = ray_ingest(["docs"], embedder=HASH, **server)
    assert (again.written, again.updated, again.deleted, again.changed) == (0, 0, 0, 0)
    assert again.skipped == again.files == first.files

    # an edit: only the texts never embedded before are embedded, as locally
    write_topic(corpus, "bread.md", extra="Sourdough uses a starter instead of baker's yeast.")
    edited = ray_ingest(["docs"], embedder=HASH, **server)
    local = ingest(["docs"], db_path="db", embedder=HASH)
    assert counts(edited) == counts(local) and edited.changed == 1
    assert 0 < edited.embedded < edited.chunks
    assert_same(records(db_path="db"), records(**server))

    # a file gone: pruned alike
    (corpus / "sub" / "notes.txt").unlink()
    pruned = ray_ingest(["docs"], embedder=HASH, prune=True, **server)
    local = ingest(["docs"], db_path="db", embedder=HASH, prune=True)
    assert counts(pruned) == counts(local) and pruned.pruned_files == 1
    assert_same(records(db_path="db"), records(**server))


def test_ray_with_the_real_model(corpus, local_ray):
    paths = ["docs/volcanoes.md", "docs/bread.md"]
    report = ray_ingest(paths, db_path="ray-db")
    local = ingest(paths, db_path="db")
    assert counts(report) == counts(local) and report.embedded > 0
    assert_same(records(db_path="db"), records(db_path="ray-db"))


def test_every_fixture_file(tmp_path, local_ray):
    """All the formats of fixtures/ (PDF included), as the local runner stores them."""
    report = ray_ingest([FIXTURES], db_path=tmp_path / "ray", embedder=HASH, batch_size=3)
    local = ingest([FIXTURES], db_path=tmp_path / "local", embedder=HASH)
    assert counts(report) == counts(local) and not report.failed and report.files > 5
    assert_same(records(db_path=tmp_path / "local"), records(db_path=tmp_path / "ray"))


def test_a_one_word_edit_embeds_at_most_two_texts(tmp_path, local_ray):
    folder = tmp_path / "edit"
    folder.mkdir()
    dst = folder / "fastapi__features.md"
    shutil.copy(FIXTURES / dst.name, dst)
    first = ray_ingest([folder], db_path=tmp_path / "db", embedder=HASH, max_tokens=64)
    assert first.embedded == first.written >= 15
    text = dst.read_text(encoding="utf-8")
    i = text.index(" the ", len(text) // 2)
    dst.write_text(text[:i] + " a " + text[i + 5:], encoding="utf-8")
    second = ray_ingest([folder], db_path=tmp_path / "db", embedder=HASH, max_tokens=64)
    assert second.changed == 1 and second.embedded <= 2
    assert second.reused == second.written - second.embedded > 0
    local = ingest([folder], db_path=tmp_path / "local", embedder=HASH, max_tokens=64)
    assert_same(records(db_path=tmp_path / "local"), records(db_path=tmp_path / "db"))


@pytest.mark.corpus
@pytest.mark.slow
def test_shared_corpus_folders(tmp_path, local_ray):
    """The shared corpus's markdown, html, code and text folders in one run each way."""
    folders = [CORPUS / name for name in ("markdown", "html", "code", "text")]
    if not all(f.is_dir() for f in folders):
        pytest.skip(f"shared corpus not present ({CORPUS})")
    report = ray_ingest(folders, db_path=tmp_path / "ray", embedder=HASH)
    local = ingest(folders, db_path=tmp_path / "local", embedder=HASH)
    assert counts(report) == counts(local) and not report.failed and report.chunks > 1000
    assert_same(records(db_path=tmp_path / "local"), records(db_path=tmp_path / "ray"))


def test_a_dataset_with_bytes(corpus, local_ray):
    """Rows that carry their bytes (as `read_binary_files` gives them) and a source each."""
    from chunkwise.pipeline.discover import discover

    files = discover(["docs"]).files
    rows = [{"source": f.source, "bytes": Path(f.path).read_bytes()} for f in files]
    server = {"db_path": "ray-db"}
    report = ray_ingest(ray.data.from_items(rows), root="docs", embedder=HASH, **server)
    local = ingest(["docs"], db_path="db", embedder=HASH)
    assert counts(report) == counts(local)
    assert_same(records(db_path="db"), records(**server))
    # prune: a source neither in the dataset nor on disk goes; one still on disk stays
    (corpus / "bread.md").unlink()
    kept = ray.data.from_items([r for r in rows
                                if r["source"] not in ("volcanoes.md", "bread.md")])
    report = ray_ingest(kept, root="docs", embedder=HASH, prune=True, **server)
    assert report.pruned_files == 1 and report.skipped == report.files == len(rows) - 2
    stored = {m["source"] for _, _, m in iter_collection(db_path="ray-db")}
    assert "volcanoes.md" in stored and "bread.md" not in stored
    with pytest.raises(ConfigError, match="root"):
        ray_ingest(kept, embedder=HASH, **server)


# -- the CLI, and a run killed at random moments --------------------------------------------
def cli_env() -> dict:
    path = os.pathsep.join(p for p in (str(TESTS), str(ROOT / "src"),
                                       os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


CHUNKWISE = [sys.executable, "-m", "chunkwise.cli"]


@pytest.mark.slow
def test_cli_ray_killed_runs_converge(tmp_path, chroma):
    """`chunkwise ingest --ray` killed with SIGKILL at a random moment, then rerun: the server
    collection equals a clean local run, in each of two phases (first ingest; edits with
    prune). The moment is drawn within the time an uninterrupted Ray run takes here (most of
    it is Ray starting; the driver writes whole windows of files, so a kill lands before,
    between or after writes, and in phase 2 between a window's upserts and its deletes)."""
    seed = int(os.environ.get("CHUNKWISE_KILL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    env = cli_env()
    common = ["ingest", "docs", "--prune", "--max-tokens", "64", "--embedder",
              "test_ray:HashEF", "--json"]
    make_bulk(tmp_path / "docs", 1)
    t0 = time.monotonic()
    timing = subprocess.run([*CHUNKWISE, *common, "--ray", "--db", "timing"], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=600)
    assert timing.returncode == 0, timing.stderr
    whole = time.monotonic() - t0
    kills = []
    for phase, version in enumerate([1, 3]):
        make_bulk(tmp_path / "docs", version)
        clean = subprocess.run([*CHUNKWISE, *common, "--db", "clean"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=300)
        assert clean.returncode == 0, clean.stderr
        args = [*CHUNKWISE, *common, "--ray", "--host", "127.0.0.1", "--port",
                str(chroma.port), "--collection", "killed"]
        proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        delay = rng.uniform(0.3, 0.95) * whole
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills.append((phase, round(delay, 1), stored_count(chroma, "killed")))
            time.sleep(2)  # Ray's reaper stops the raylet; two of its agents outlive it
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the session this test started
            except ProcessLookupError:
                pass
        rerun = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=600)
        assert rerun.returncode == 0, rerun.stderr
        got = {i: (d, m) for i, d, m in iter_collection(**remote(chroma, "killed"))}
        want = {i: (d, m) for i, d, m in iter_collection(db_path=tmp_path / "clean")}
        assert got == want, f"phase {phase}, seed {seed}"
        report = json.loads(rerun.stdout)
        assert report["chunks"] == len(want) and not report["failed"]
        if phase == 0 and kills and kills[-1][2] < len(want):  # the rerun had work left
            assert report["changed"] > 0, (kills, report)
    assert kills, f"no run was killed (seed {seed}, a whole run {whole:.1f} s)"


def stored_count(srv: ChromaServer, collection: str) -> int:
    from chunkwise.chroma.store import connect

    try:
        return connect(host="127.0.0.1", port=srv.port).get_collection(collection).count()
    except Exception:  # noqa: BLE001 - not created yet
        return 0
