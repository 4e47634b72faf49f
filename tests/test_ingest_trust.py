"""Ingestion a user can trust: one identity per document whatever the spelling of the path,
one writer at a time, discovery that reads only regular files under the root, bounded server
calls, a damaged index found and repaired, names that cannot forge output lines.

Real Chroma (embedded, and `chroma run` where a server is needed) and the real CLI; the
vectors come from a hash of the text wherever they do not matter (the store logic is what is
tested), and from the real model in the test that ingests with it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunkwise.chroma.queries import iter_collection
from chunkwise.errors import StoreError
from chunkwise.pipeline.discover import discover
from chunkwise.errors import ConfigError
from chunkwise.chroma.locking import LockedError, WriteLock
from chunkwise.pipeline.runner import IngestOptions, ingest

from conftest import FIXTURES, ChromaServer, free_port
from hashembed import HASH
from killing import KillingChunker

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "chunkwise.cli"]
HASH_SPEC = ["--embedder", "hashvec:HASH"]


@pytest.fixture
def docs(tmp_path) -> Path:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    for p in sorted(FIXTURES.iterdir()):
        if p.suffix in (".md", ".py", ".csv", ".txt", ".html"):
            shutil.copy(p, (folder / "sub" if p.suffix == ".py" else folder) / p.name)
    return folder


#: runs the CLI as its only child and adds its peak RSS (children included) to stderr
MEASURE = ("import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
           "print('peak-rss-kb', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "
           "file=sys.stderr); sys.exit(rc)")


def cli(*args: str, cwd: Path, timeout: float = 300,
        measure: bool = False) -> subprocess.CompletedProcess:
    """The CLI in a fresh process, with `hashvec:HASH` importable as an embedder."""
    (cwd / "hashvec.py").write_text("from hashembed import HASH\n")
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"), str(cwd)])
    env = {**os.environ, "PYTHONPATH": path}
    command = [sys.executable, "-c", MEASURE, *CLI] if measure else CLI
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def records(db: Path) -> dict[str, tuple[str, dict]]:
    return {i: (d, m) for i, d, m in iter_collection(db_path=db)}


# -- identity -------------------------------------------------------------------------------
def test_one_copy_by_every_spelling_and_prune_from_inside(docs, tmp_path, monkeypatch):
    db = tmp_path / "db"
    monkeypatch.chdir(tmp_path)
    first = ingest(["docs"], db_path=db, embedder=HASH, workers=1)
    want = records(db)
    assert first.written == len(want) > 0 and first.root == str(docs.resolve())
    assert {m["source"] for _, m in want.values()} >= {"sub/fastapi__fastapi__background.py",
                                                      "fastapi__features.md"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for spelling in (str(docs), "../docs", "../docs/", f"{docs}/sub/.."):
        again = ingest([spelling], db_path=db, embedder=HASH, workers=1)
        assert (again.written, again.updated, again.deleted) == (0, 0, 0), spelling
    monkeypatch.chdir(docs)
    again = ingest(["."], db_path=db, embedder=HASH, workers=1, prune=True)
    assert (again.written, again.pruned_files) == (0, 0) and records(db) == want
    # a single file of the folder is the same document
    again = ingest(["sub/fastapi__fastapi__background.py"], db_path=db, embedder=HASH)
    assert again.skipped == 1 and again.written == 0
    # pruning from inside removes exactly the removed file's chunks
    gone = {i for i, (_, m) in want.items() if m["source"] == "fastapi__features.md"}
    (docs / "fastapi__features.md").unlink()
    pruned = ingest(["."], db_path=db, embedder=HASH, prune=True)
    assert (pruned.pruned_files, pruned.pruned_chunks) == (1, len(gone))
    assert set(records(db)) == set(want) - gone


def test_another_root_and_an_old_collection_are_refused(docs, tmp_path):
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("# A\n\nText.\n")
    with pytest.raises(StoreError, match="relative to"):
        ingest([other], db_path=db, embedder=HASH)
    with pytest.raises(StoreError, match="relative to"):
        ingest([docs / "sub"], db_path=db, embedder=HASH, root=docs / "sub")
    ingest([other], db_path=db, embedder=HASH, collection="other")  # its own collection
    # a collection written before roots were recorded: refused, then rebuilt on request
    from chunkwise.chroma.store import connect

    col = connect(db_path=db).get_collection("chunkwise")
    meta = {k: v for k, v in col.metadata.items() if k != "chunkwise_root"}
    meta["chunkwise_root"] = None
    col.modify(metadata=meta)
    with pytest.raises(StoreError, match="--rebuild"):
        ingest([docs], db_path=db, embedder=HASH)
    rebuilt = ingest([docs], db_path=db, embedder=HASH, rebuild=True)
    assert rebuilt.written == rebuilt.chunks > 0


def test_a_root_must_hold_every_path(docs, tmp_path):
    with pytest.raises(ConfigError, match="outside the root"):
        discover([tmp_path / "elsewhere.md"], root=docs)


# -- one writer at a time -------------------------------------------------------------------
def test_a_second_writer_waits_then_fails_with_one_line(docs, tmp_path):
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    with WriteLock(db):
        t0 = time.monotonic()
        out = cli("ingest", str(docs), "--db", str(db), "--wait", "1", *HASH_SPEC, cwd=tmp_path)
        waited = time.monotonic() - t0
        assert out.returncode == 1 and "Traceback" not in out.stderr
        assert "being written by another process (pid" in out.stderr.strip().splitlines()[-1]
        assert waited >= 1
        # readers take no lock
        q = cli("query", "background tasks", "--db", str(db), "--json", *HASH_SPEC, cwd=tmp_path)
        assert q.returncode == 0 and json.loads(q.stdout)
        with pytest.raises(LockedError):
            with WriteLock(db, wait=0):
                pass
    out = cli("ingest", str(docs), "--db", str(db), "--json", *HASH_SPEC, cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout)["written"] == 0


def _concurrent_trial(docs: Path, db: Path, cwd: Path, delay: float) -> None:
    (cwd / "hashvec.py").write_text("from hashembed import HASH\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"),
                                                        str(cwd)])}
    args = [*CLI, "ingest", str(docs), "--db", str(db), "--wait", "120", *HASH_SPEC]
    first = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    second = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    for p in (first, second):
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err


def _healthy_and_equal(db: Path, want: dict) -> None:
    from chunkwise.chroma.store import Store, connect
    from chunkwise.chroma.health import check

    assert records(db) == want
    health = check(Store(connect(db_path=db), "chunkwise", HASH, create=False))
    assert health.usable and not health.missing and health.searchable >= len(want) * 0.995


def test_two_concurrent_ingests_give_one_clean_collection(docs, tmp_path):
    ingest([docs], db_path=tmp_path / "ref", embedder=HASH, workers=1)
    want = records(tmp_path / "ref")
    _concurrent_trial(docs, tmp_path / "db", tmp_path, 0.3)
    _healthy_and_equal(tmp_path / "db", want)


@pytest.mark.slow
def test_ten_concurrent_trials_on_a_corpus_folder(tmp_path):
    from conftest import CORPUS

    src = CORPUS / "markdown"
    if not src.is_dir():
        pytest.skip("shared corpus not present")
    ingest([src], db_path=tmp_path / "ref", embedder=HASH, workers=1)
    want = records(tmp_path / "ref")
    for trial in range(10):
        db = tmp_path / f"c{trial}"
        _concurrent_trial(src, db, tmp_path, (0.0, 0.5, 1.5, 3.0, 6.0)[trial % 5])
        _healthy_and_equal(db, want)


# -- discovery ------------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX file system features")
def test_a_hostile_folder(tmp_path):
    folder = tmp_path / "hostile"
    folder.mkdir()
    good = []
    for n in range(20):
        p = folder / f"good{n:02}.md"
        p.write_text(f"# Note {n}\n\nThe lighthouse keeper logs storm number {n} at dawn.\n")
        good.append(p.name)
    secret = tmp_path / "secret.txt"
    secret.write_text("ZQXJ the content of a file outside the folder " * 10)
    os.mkfifo(folder / "pipe.md")
    os.symlink("/dev/zero", folder / "zero.txt")
    os.symlink(secret, folder / "escape.txt")
    with open(folder / "sparse.txt", "wb") as f:
        f.truncate(3 * 1024 ** 3)
    unreadable = folder / "locked.md"
    unreadable.write_text("# Locked\n\nNo one may read this.\n")
    unreadable.chmod(0)
    (folder / "name\nforged: line.md").write_text("# Forged\n\nA newline in a file name.\n")
    t0 = time.monotonic()
    out = cli("ingest", str(folder), "--db", str(tmp_path / "db"), "--json", *HASH_SPEC,
              cwd=tmp_path, timeout=120, measure=True)
    took = time.monotonic() - t0
    assert "Traceback" not in out.stderr and took < 120
    rss_kb = int(out.stderr.strip().splitlines()[-1].removeprefix("peak-rss-kb "))
    out.stderr = "\n".join(out.stderr.strip().splitlines()[:-1])
    assert rss_kb < 1024 ** 2  # peak RSS under 1 GB
    report = json.loads(out.stdout)
    stored = {m["source"] for _, m in records(tmp_path / "db").values()}
    assert set(good) <= stored and "name\nforged: line.md" in stored
    assert "escape.txt" not in stored and not any("ZQXJ" in d for d, _ in
                                                   records(tmp_path / "db").values())
    lines = out.stderr.strip().splitlines()
    ignored = {r["source"]: r["reason"] for r in report["ignored"]}
    assert "FIFO" in ignored["pipe.md"] and "out of the root" in ignored["zero.txt"]
    assert "out of the root" in ignored["escape.txt"] and "limit" in ignored["sparse.txt"]
    assert all(any(line.startswith(f"{name}: skipped: ") for line in lines) for name in ignored)
    if os.geteuid() != 0:  # root reads anything
        assert any(line.startswith("locked.md: ") and "denied" in line for line in lines)
        assert out.returncode == 1
    # the CLI's `chunk` does not hang on the FIFO either, and a forged name stays one line
    out = cli("chunk", str(folder), cwd=tmp_path, timeout=120)
    assert "name\\x0aforged: line.md" in out.stdout and "\nforged: line.md" not in out.stdout


def test_symlinks_inside_the_root_and_followed_ones(tmp_path):
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.md").write_text("# A\n\nText a.\n")
    os.symlink(root / "real", root / "alias")  # the same folder again: walked once
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "b.md").write_text("# B\n\nText b.\n")
    os.symlink(outside, root / "linked")
    found = discover([root])
    assert [f.source for f in found.files] == ["real/a.md"]
    assert [name for name, _ in found.skipped] == ["linked"]
    followed = discover([root], follow_symlinks=True)
    assert [f.source for f in followed.files] == ["linked/b.md", "real/a.md"]


def test_file_size_and_time_bounds(docs, tmp_path):
    report = ingest([docs], db_path=tmp_path / "db", embedder=HASH, workers=1,
                    max_file_size=2000)
    assert report.ignored and all("limit" in why for _, why in report.ignored)
    assert all((docs / s).stat().st_size <= 2000 or not (docs / s).exists()
               for s in {m["source"] for _, m in records(tmp_path / "db").values()})
    report = ingest([docs], db_path=tmp_path / "db2", embedder=HASH, workers=1,
                    file_timeout=1e-6)
    assert report.failed and all("--file-timeout" in why for _, why in report.failed)


# -- a server that stops answering ----------------------------------------------------------
def test_a_frozen_server_is_one_clear_line_within_the_timeout(docs, tmp_path):
    server = ChromaServer(tmp_path / "srv", free_port())
    server.start()
    try:
        out = cli("ingest", str(docs), "--port", str(server.port), "--host", "127.0.0.1",
                  *HASH_SPEC, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            for args in (["query", "background tasks"], ["ingest", str(docs), *HASH_SPEC]):
                t0 = time.monotonic()
                out = cli(*args, "--host", "127.0.0.1", "--port", str(server.port),
                          "--timeout", "3", cwd=tmp_path, timeout=120)
                took = time.monotonic() - t0
                assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
                assert "did not answer in time" in out.stderr.strip().splitlines()[-1]
                assert took < 3 + 20  # the limit, plus the start of Python and its imports
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
    finally:
        server.stop()


def test_an_impossible_port_or_host_is_a_bad_option(tmp_path):
    for args in (["--port", "99999"], ["--port", "0"], ["--host", "http://x/y"]):
        out = cli("query", "x", *args, cwd=tmp_path, timeout=60)
        assert out.returncode == 2 and "invalid Chroma server" in out.stderr, args


# -- a damaged index ------------------------------------------------------------------------
def test_a_deleted_index_is_found_checked_and_repaired(docs, tmp_path):
    # Chroma persists its HNSW index every 1,000 writes and keeps the later ones in its log:
    # small chunks make enough records for the index folder to hold vectors found nowhere else
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1, max_tokens=32)
    want = records(db)
    (segment,) = [p for p in db.iterdir() if p.is_dir()]
    shutil.rmtree(segment)
    out = cli("check", "--db", str(db), "--json", cwd=tmp_path)
    health = json.loads(out.stdout)
    assert out.returncode == 1 and health["missing"] > 0 and not health["ok"]
    # (in a fresh process: this one's Chroma client still holds the index in memory)
    out = cli("ingest", str(docs), "--db", str(db), "--max-tokens", "32", "--json",
              *HASH_SPEC, cwd=tmp_path)
    report = json.loads(out.stdout)
    assert report["repaired"] == health["missing"]  # not "unchanged" over a damaged index
    assert report["skipped"] == report["files"] and "damaged" in out.stderr
    out = cli("check", "--db", str(db), cwd=tmp_path)
    assert out.returncode == 0 and "no readable vector" not in out.stdout
    assert records(db) == want


def test_check_repair_rebuilds_a_truncated_index(docs, tmp_path):
    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1, max_tokens=32)
    want = records(db)
    (segment,) = [p for p in db.iterdir() if p.is_dir()]
    for name, size in (("data_level0.bin", 2000), ("link_lists.bin", 100)):
        if (segment / name).exists():
            os.truncate(segment / name, min(size, (segment / name).stat().st_size))
    out = cli("check", "--db", str(db), "--repair", *HASH_SPEC, cwd=tmp_path)
    assert out.returncode == 0 and "repaired" in out.stdout, out.stdout + out.stderr
    _healthy_and_equal(db, want)


def _chroma(db: Path, statement: str, *args: str) -> str:
    """`statement` run on `client` (a PersistentClient of `db`) in a fresh process (this
    one's client caches the index); its stdout. Chroma reads a collection's configuration
    only where chunkwise's embedding function is registered, hence the import."""
    code = ("import chromadb, json, sys, chunkwise.embeddings.functions; "
            "client = chromadb.PersistentClient(path=sys.argv[1]); " + statement)
    done = subprocess.run([sys.executable, "-c", code, str(db), *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _hnsw(db: Path) -> dict:
    """The collection's HNSW settings as a fresh process sees them."""
    out = _chroma(db, "print(json.dumps(client.get_collection('chunkwise')"
                      ".configuration['hnsw']))")
    return json.loads(out.splitlines()[-1])


SET_EF = ("client.get_collection('chunkwise').modify(configuration={'hnsw': "
          "{'ef_search': int(sys.argv[2])}})")


def test_the_index_searches_wide_and_an_earlier_collection_is_raised(docs, tmp_path):
    """New collections search with HNSW_EF_SEARCH candidates over a graph of
    HNSW_MAX_NEIGHBORS and HNSW_EF_CONSTRUCTION. One made with chunkwise's earlier 100 is
    reported by `check` and raised by `check --repair` or the next ingest (which writes
    nothing else for it); a value a user chose stays. A graph built with Chroma's defaults
    is reported and rebuilt by `check --repair`, nothing lost."""
    from chunkwise.chroma.store import HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_MAX_NEIGHBORS

    db = tmp_path / "db"
    ingest([docs], db_path=db, embedder=HASH, workers=1)
    want = records(db)
    wide = {"ef_search": HNSW_EF_SEARCH, "max_neighbors": HNSW_MAX_NEIGHBORS,
            "ef_construction": HNSW_EF_CONSTRUCTION}
    assert {k: _hnsw(db)[k] for k in wide} == wide and HNSW_EF_SEARCH > 100
    out = cli("check", "--db", str(db), "--json", cwd=tmp_path)
    assert {k: json.loads(out.stdout)[k] for k in wide} == wide
    out = cli("check", "--db", str(db), cwd=tmp_path).stdout
    assert "ef_search" not in out and "graph" not in out

    _chroma(db, SET_EF, "100")  # as chunkwise made collections before
    out = cli("check", "--db", str(db), cwd=tmp_path)
    assert out.returncode == 0 and "searches with ef_search 100" in out.stdout
    assert f"raises it to {HNSW_EF_SEARCH}" in out.stdout
    assert _hnsw(db)["ef_search"] == 100  # a plain check changes nothing
    out = cli("check", "--db", str(db), "--repair", *HASH_SPEC, cwd=tmp_path)
    assert out.returncode == 0 and f"raised to {HNSW_EF_SEARCH}" in out.stdout, out.stdout
    assert _hnsw(db)["ef_search"] == HNSW_EF_SEARCH and records(db) == want

    _chroma(db, SET_EF, "100")
    out = cli("ingest", str(docs), "--db", str(db), "--json", *HASH_SPEC, cwd=tmp_path)
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["written"] == 0 and report["skipped"] == report["files"]
    assert _hnsw(db)["ef_search"] == HNSW_EF_SEARCH and records(db) == want

    _chroma(db, SET_EF, "300")  # a user's own setting
    out = cli("ingest", str(docs), "--db", str(db), "--json", *HASH_SPEC, cwd=tmp_path)
    assert out.returncode == 0 and _hnsw(db)["ef_search"] == 300
    assert "ef_search" not in cli("check", "--db", str(db), "--repair", *HASH_SPEC,
                                  cwd=tmp_path).stdout
    assert _hnsw(db)["ef_search"] == 300

    # a collection as chunkwise made them before: Chroma's graph, search width 100
    old = tmp_path / "old"
    _chroma(old, "client.create_collection('chunkwise', configuration={'hnsw': "
                 "{'space': 'cosine', 'ef_search': 100}})")
    out = cli("ingest", str(docs), "--db", str(old), "--json", *HASH_SPEC, cwd=tmp_path)
    assert out.returncode == 0 and "check --repair` rebuilds it" in out.stderr, out.stderr
    assert _hnsw(old)["ef_search"] == HNSW_EF_SEARCH  # raised at once
    assert (_hnsw(old)["max_neighbors"], _hnsw(old)["ef_construction"]) == (16, 100)
    assert records(old) == want
    out = cli("check", "--db", str(old), cwd=tmp_path)
    assert out.returncode == 0 and "max_neighbors 16 and ef_construction 100" in out.stdout
    out = cli("check", "--db", str(old), "--repair", *HASH_SPEC, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"rebuilt with {HNSW_MAX_NEIGHBORS} and {HNSW_EF_CONSTRUCTION}" in out.stdout
    assert {k: _hnsw(old)[k] for k in wide} == wide and records(old) == want
    out = cli("ingest", str(docs), "--db", str(old), "--json", *HASH_SPEC, cwd=tmp_path)
    assert json.loads(out.stdout)["written"] == 0 and "rebuilds it" not in out.stderr


# -- workers and the embed stage ------------------------------------------------------------
def test_workers_give_the_collection_of_one_process(docs, tmp_path):
    serial = ingest([docs], db_path=tmp_path / "one", embedder=HASH, workers=1)
    pooled = ingest([docs], db_path=tmp_path / "two", embedder=HASH, workers=2)
    assert pooled.workers == 2 and serial.written == pooled.written
    assert records(tmp_path / "one") == records(tmp_path / "two")


def test_a_file_that_kills_its_worker_fails_alone(docs, tmp_path):
    (docs / "sub" / "poison.txt").write_text("KILL-THE-WORKER\n" * 3)
    serial = ingest([docs], db_path=tmp_path / "ref", embedder=HASH, workers=1)
    pooled = ingest([docs], db_path=tmp_path / "db", embedder=HASH, workers=2,
                    chunker=KillingChunker(max_tokens=256))
    assert [s for s, _ in pooled.failed] == ["sub/poison.txt"]
    assert "worker process" in pooled.failed[0][1]
    want = {i: r for i, r in records(tmp_path / "ref").items()
            if r[1]["source"] != "sub/poison.txt"}
    assert records(tmp_path / "db") == want


def test_workers_from_a_program_on_stdin(docs, tmp_path):
    program = (f"import sys; sys.path[:0] = {[str(ROOT / 'src'), str(ROOT / 'tests')]!r}\n"
               "from chunkwise.pipeline import ingest\n"
               "from hashembed import HASH\n"
               f"r = ingest([{str(docs)!r}], db_path={str(tmp_path / 'db')!r}, embedder=HASH, "
               "workers=2)\n"
               "print(r.files, len(r.failed))\n")
    done = subprocess.run([sys.executable, "-"], input=program, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(list(docs.rglob("*.*")))), "0"]
    assert "in this process" not in done.stderr  # the workers never import `<stdin>`


def _vectors(db: Path) -> dict[str, list[float]]:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(db), settings=Settings(anonymized_telemetry=False))
    got = client.get_collection("chunkwise").get(include=["embeddings"])
    return dict(zip(got["ids"], got["embeddings"]))


def test_the_real_model_in_its_own_process_gives_the_same_vectors(tmp_path):
    """With workers the model runs in a process of its own (Chroma's writes hold the GIL);
    the collection is the one a single process makes, vectors included."""
    import numpy as np

    folder = tmp_path / "few"
    folder.mkdir()
    for name in ("fastapi__features.md", "fastapi__fastapi__background.py"):
        shutil.copy(FIXTURES / name, folder / name)
    serial = ingest([folder], db_path=tmp_path / "one", workers=1)
    pooled = ingest([folder], db_path=tmp_path / "two", workers=2)
    assert serial.embedded == pooled.embedded > 10
    assert records(tmp_path / "one") == records(tmp_path / "two")
    one, two = _vectors(tmp_path / "one"), _vectors(tmp_path / "two")
    assert one.keys() == two.keys()
    worst = max(float(np.abs(np.asarray(one[k]) - np.asarray(two[k])).max()) for k in one)
    assert worst <= 1e-6, worst


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found.update(int(x) for x in task.read_text().split())
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_a_killed_ingest_leaves_no_process_behind(tmp_path):
    """kill -9 of `ingest --workers 2`: its parsing workers and the model's process leave
    with it (they would otherwise wait for work for ever)."""
    big = tmp_path / "big"
    big.mkdir()
    words = " ".join(f"word{i}" for i in range(400))
    for n in range(60):
        (big / f"doc{n:02}.md").write_text(
            "".join(f"# Part {i}\n\n{words} {n} {i}.\n\n" for i in range(40)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    proc = subprocess.Popen([*CLI, "ingest", str(big), "--db", str(tmp_path / "db"),
                             "--workers", "2"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    kids: set[int] = set()
    while time.monotonic() < deadline and len(kids) < 3 and proc.poll() is None:
        kids |= _children(proc.pid)  # the resource tracker, two workers, the model's process
        time.sleep(0.1)
    assert proc.poll() is None and len(kids) >= 3, (proc.returncode, kids)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.2)
    assert not [k for k in kids if _alive(k)]


def test_a_one_word_edit_embeds_at_most_two_texts(tmp_path):
    folder = tmp_path / "edit"
    folder.mkdir()
    src = FIXTURES / "fastapi__features.md"
    dst = folder / src.name
    shutil.copy(src, dst)
    first = ingest([folder], db_path=tmp_path / "db", workers=1)  # the real model
    assert first.embedded == first.written > 10
    text = dst.read_text(encoding="utf-8")
    i = text.index(" the ", len(text) // 2)
    dst.write_text(text[:i] + " a " + text[i + 5:], encoding="utf-8")
    second = ingest([folder], db_path=tmp_path / "db", workers=1)
    assert second.changed == 1 and second.embedded <= 2
    assert second.reused == second.written - second.embedded > 0


def test_two_concurrent_ingests_into_one_server_converge(docs, tmp_path):
    """A server has no lock: the same files written twice at once give the ids, documents
    and metadata of one run (deterministic ids, upserts, deletes only of stale ids)."""
    ingest([docs], db_path=tmp_path / "ref", embedder=HASH, workers=1)
    want = records(tmp_path / "ref")
    server = ChromaServer(tmp_path / "srv", free_port())
    server.start()
    try:
        (tmp_path / "hashvec.py").write_text("from hashembed import HASH\n")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "tests"), str(tmp_path)])}
        args = [*CLI, "ingest", str(docs), "--host", "127.0.0.1", "--port", str(server.port),
                *HASH_SPEC]
        procs = [subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for p in procs:
            _, err = p.communicate(timeout=600)
            assert p.returncode == 0, err
        got = {i: (d, m) for i, d, m in iter_collection(host="127.0.0.1", port=server.port)}
        assert got == want
    finally:
        server.stop()


def test_options_as_one_object_or_as_keywords_make_the_same_run(docs, tmp_path):
    """`IngestOptions` is what both runners take: one object, keywords, or both (keywords
    win); a misspelt option is refused like any unknown keyword argument."""
    opts = IngestOptions(embedder=HASH, max_tokens=64)
    one = ingest([docs], opts, db_path=tmp_path / "one")
    kw = ingest([docs], db_path=tmp_path / "kw", embedder=HASH, max_tokens=64)
    assert one.chunks > one.files > 0 and not one.failed
    assert records(tmp_path / "one") == records(tmp_path / "kw")
    assert (one.files, one.chunks, one.written) == (kw.files, kw.chunks, kw.written)
    again = ingest([docs], opts, db_path=tmp_path / "one", max_tokens=256)
    assert again.changed == again.files == one.files  # the keyword's budget, not the object's
    assert again.chunks < one.chunks
    with pytest.raises(TypeError, match="embeder"):
        ingest([docs], db_path=tmp_path / "x", embeder=HASH)


def test_several_writers_into_a_server_give_the_collection_of_one(docs, tmp_path):
    """`writers=4` writes windows at once into a `chroma run` server: the same ids,
    documents, metadata and vectors as one writer into an embedded database, on a first run
    and on a rerun that edits a file and prunes a deleted one."""
    from chunkwise.chroma.store import connect

    def vectors(client) -> dict[str, list[float]]:
        got = client.get_collection("chunkwise").get(include=["embeddings"])
        return dict(zip(got["ids"], got["embeddings"]))

    kw = dict(embedder=HASH, workers=1, max_tokens=48, prune=True)
    server = ChromaServer(tmp_path / "srv", free_port())
    server.start()
    try:
        for step in range(2):
            one = ingest([docs], db_path=tmp_path / "ref", **kw)
            many = ingest([docs], host="127.0.0.1", port=server.port, writers=4, **kw)
            assert many.written == one.written and many.deleted == one.deleted
            got = {i: (d, m) for i, d, m in iter_collection(host="127.0.0.1", port=server.port)}
            assert got == records(tmp_path / "ref")
            theirs = vectors(connect(db_path=tmp_path / "ref"))
            ours = vectors(connect(host="127.0.0.1", port=server.port))
            assert ours.keys() == theirs.keys()
            assert max(abs(ours[i] - theirs[i]).max() for i in ours) < 1e-6
            if step == 0:  # enough windows for the writers to overlap
                assert one.written > 4 * 512
                md = docs / "fastapi__features.md"
                md.write_text(md.read_text(encoding="utf-8").replace(" the ", " a ", 3),
                              encoding="utf-8")
                next(p for p in sorted(docs.iterdir()) if p.suffix == ".html").unlink()
        assert one.changed == 1 and one.deleted > 0
    finally:
        server.stop()
    with pytest.raises(ConfigError, match="writers"):
        ingest([docs], db_path=tmp_path / "x", embedder=HASH, writers=0)
