"""The ingest pipeline's stages, each alone (`chunkwise.pipeline`): stage 2 on real fixture
files (unchanged files not parsed, bad files failed with a reason), stage 4's planning of
changed, unchanged and removed chunks against a real Chroma collection, the process pool's
order and crash recovery, and the choice of the root.

Vectors come from a hash of the text (`hashembed`): what is tested is the pipeline's logic,
not retrieval."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chunkwise import Chunker
from chunkwise.chroma.store import SourceState, Store, StoreError, connect
from chunkwise.errors import ConfigError
from chunkwise.pipeline import IngestOptions, ingest
from chunkwise.pipeline.collection import choose_root
from chunkwise.pipeline.discover import discover
from chunkwise.pipeline.options import IngestReport, worker_count
from chunkwise.pipeline.pool import prepared_in_order
from chunkwise.pipeline.stages import (Planner, PrepareOptions, options_fingerprint, plan_file,
                                       prepare, write_window)

from conftest import FIXTURES
from hashembed import HASH
from killing import KillingChunker

ROOT = Path(__file__).resolve().parents[1]
TEXTS = ("fastapi__features.md", "alice-in-wonderland.txt", "fastapi__fastapi__background.py",
         "538__trump-poll-tweets.csv")


@pytest.fixture(scope="module")
def chunker() -> Chunker:
    return Chunker(max_tokens=128, tokenizer="minilm")


@pytest.fixture
def folder(tmp_path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in TEXTS:
        shutil.copy(FIXTURES / name, docs / name)
    return docs


def stage2_options(chunker, **kw) -> PrepareOptions:
    return PrepareOptions(chunker, None, options_fingerprint(chunker, None, HASH.identity), **kw)


# -- stage 2: prepare -----------------------------------------------------------------------
def test_prepare_chunks_a_new_file_and_skips_an_unchanged_one(folder, chunker):
    opts = stage2_options(chunker)
    (task,) = [t for t in discover([folder]).files if t.source == "fastapi__features.md"]
    new = prepare(task, None, opts)
    assert new.status == "chunked" and new.chunks and new.reason == ""
    text = (folder / task.source).read_text(encoding="utf-8")
    assert all(c.text == text[c.start:c.end] for c in new.chunks)
    stored = SourceState(new.content_hash, opts.options, len(new.chunks), len(new.chunks))
    again = prepare(task, stored, opts)
    assert again.status == "unchanged" and again.chunks == ()
    assert again.content_hash == new.content_hash
    # other options, or a record missing, and the file is chunked again
    other = PrepareOptions(chunker, "text", options_fingerprint(chunker, "text", HASH.identity))
    assert prepare(task, stored, other).status == "chunked"
    short = SourceState(new.content_hash, opts.options, len(new.chunks), len(new.chunks) - 1)
    assert prepare(task, short, opts).status == "chunked"


def test_prepare_fails_a_bad_file_with_its_reason(folder, chunker, tmp_path):
    tasks = {t.source: t for t in discover([folder]).files}
    small = stage2_options(chunker, max_file_size=100)
    too_big = prepare(tasks["alice-in-wonderland.txt"], None, small)
    assert too_big.status == "failed" and "limit" in too_big.reason
    os.remove(folder / "fastapi__features.md")
    gone = prepare(tasks["fastapi__features.md"], None, stage2_options(chunker))
    assert gone.status == "failed" and gone.reason.startswith("cannot read")
    (folder / "broken.json").write_text('{"a": [1, 2', encoding="utf-8")
    (bad,) = [t for t in discover([folder / "broken.json"]).files]
    failed = prepare(bad, None, stage2_options(chunker))
    assert failed.status == "failed" and failed.reason and "broken.json: " not in failed.reason


# -- stage 4: plan and write ----------------------------------------------------------------
def stored_of(store: Store, source: str) -> dict:
    return store.chunks_of(source)


def test_plan_against_the_store_upserts_new_refreshes_kept_deletes_stale(folder, chunker,
                                                                         tmp_path):
    opts = stage2_options(chunker)
    store = Store(connect(db_path=tmp_path / "db"), "plans", HASH, create=True)
    (task,) = [t for t in discover([folder]).files if t.source == "fastapi__features.md"]
    first = prepare(task, None, opts)
    plan = plan_file(task.source, first.chunks, {}, first.content_hash, opts.options)
    assert len(plan.embed) == len({c.embed_text for c in first.chunks}) and not plan.stale
    plan.vectors = list(HASH.embed([c.embed_text for c, _ in plan.embed]))
    write_window(store, [plan])
    stored = stored_of(store, task.source)
    assert set(stored) == {c.id for c, _ in plan.embed}

    same = plan_file(task.source, first.chunks, stored, first.content_hash, opts.options)
    assert not (same.embed or same.refresh or same.stale)

    # an edit in the middle: the chunks after it move (new spans, new ids), the first stay
    text = (folder / task.source).read_text(encoding="utf-8")
    middle = text.index("\n## ", len(text) // 2)
    (folder / task.source).write_text(text[:middle] + "\n\nA new paragraph.\n" + text[middle:],
                                      encoding="utf-8")
    edited = prepare(task, SourceState(first.content_hash, opts.options, len(first.chunks),
                                       len(stored)), opts)
    assert edited.status == "chunked" and edited.content_hash != first.content_hash
    change = plan_file(task.source, edited.chunks, stored, edited.content_hash, opts.options)
    new_ids = {c.id for c in edited.chunks}
    assert {c.id for c, _ in change.embed} == new_ids - set(stored)
    assert set(change.stale) == set(stored) - new_ids and change.stale
    # kept chunks carry the new content hash: a metadata refresh, no embedding
    assert {i for i, _ in change.refresh} == new_ids & set(stored)
    assert all(m["content_hash"] == edited.content_hash for _, m in change.refresh)
    change.vectors = list(HASH.embed([c.embed_text for c, _ in change.embed]))
    write_window(store, [change])
    assert set(stored_of(store, task.source)) == new_ids


def test_planner_counts_unchanged_changed_failed_and_reuses_stored_vectors(folder, chunker,
                                                                           tmp_path):
    db = tmp_path / "db"
    ingest([folder], db_path=db, embedder=HASH, workers=1, chunker=chunker)
    (folder / "alice-in-wonderland.txt").write_text("A changed book.\n", encoding="utf-8")
    os.remove(folder / "538__trump-poll-tweets.csv")
    store = Store(connect(db_path=db), "chunkwise", HASH, create=False)
    states = store.summary()
    opts = stage2_options(chunker)
    report = IngestReport()
    told = []
    found = discover([folder]).files
    planner = Planner(store, report, states, opts.options, len(found), told.append)
    plans = []
    for task in found:
        plan = planner.take(prepare(task, states.get(task.source), opts))
        planner.tell(task.source)
        if plan is not None:
            plans.append(plan)
    assert [p.source for p in plans] == ["alice-in-wonderland.txt"]
    assert report.files == 3 and report.skipped == 2 and report.changed == 1
    assert [t.files_done for t in told] == [1, 2, 3] and told[-1].files_total == 3
    # the removed file is still stored: planning never deletes what it was not shown
    assert "538__trump-poll-tweets.csv" in states
    # a vector stored for another file is found by its embed text's hash
    md = store.chunks_of("fastapi__features.md")
    some = next(iter(md.values()))["embed_hash"]
    assert set(planner.known([some, "0" * 64])) == {some}


# -- the process pool -----------------------------------------------------------------------
def test_pool_gives_discovery_order_and_a_crash_fails_one_file(folder):
    (folder / "poison.txt").write_text("KILL-THE-WORKER\n", encoding="utf-8")
    opts = stage2_options(KillingChunker(max_tokens=128))
    tasks = discover([folder]).files
    pooled = list(prepared_in_order(tasks, {}, opts, 2))
    assert [p.source for p in pooled] == [t.source for t in tasks]
    by = {p.source: p for p in pooled}
    assert by["poison.txt"].status == "failed" and "worker process" in by["poison.txt"].reason
    inline = {p.source: p for p in prepared_in_order(
        [t for t in tasks if t.source != "poison.txt"], {}, stage2_options(opts.chunker.chunker),
        1)}
    for source, p in inline.items():
        assert by[source].status == "chunked" and by[source].chunks == p.chunks


def test_worker_count():
    assert worker_count(None) == max(1, os.cpu_count() or 1)
    assert worker_count(3) == 3
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ConfigError):
            worker_count(bad)


# -- roots ----------------------------------------------------------------------------------
def test_root_is_given_then_recorded_then_the_folder(folder, tmp_path):
    sub = folder / "sub"
    sub.mkdir()
    assert choose_root([folder], None, None, "c") == folder.resolve()
    assert choose_root([sub], tmp_path, None, "c") == tmp_path.resolve()
    # a folder inside the recorded root keeps it: names stay those of the first run
    assert choose_root([sub], None, str(folder.resolve()), "c") == folder.resolve()
    with pytest.raises(StoreError, match="relative to"):
        choose_root([tmp_path], None, str(folder.resolve()), "c")
    with pytest.raises(ConfigError):
        choose_root([folder], folder / "nope", None, "c")


def test_one_options_object_or_keywords(folder, tmp_path):
    opts = IngestOptions(embedder=HASH, workers=1, db_path=tmp_path / "a")
    by_object = ingest([folder], opts)
    by_keywords = ingest([folder], embedder=HASH, workers=1, db_path=tmp_path / "b")
    assert by_object.to_dict()["written"] == by_keywords.to_dict()["written"] > 0
    over = ingest([folder], opts, db_path=tmp_path / "c", prune=True)
    assert over.written == by_object.written
    with pytest.raises(TypeError):
        ingest([folder], opts, no_such_option=1)


# -- from any program: a script without a guard, python -c, standard input ----------------

PIDS = '''\
import os
from chunkwise import Chunker


class PidChunker:
    """The real chunker, writing down the process that parses each file."""

    def __init__(self, log):
        self.chunker, self.log = Chunker(max_tokens=128, tokenizer="minilm"), log
        self.fingerprint = self.chunker.fingerprint

    def parse_bytes(self, data, **kwargs):
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()}\\n")
        return self.chunker.parse_bytes(data, **kwargs)

    def chunk_document(self, doc):
        return self.chunker.chunk_document(doc)
'''


def run_python(args: list[str], cwd: Path, stdin: str | None = None,
               timeout: float = 600) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(cwd)])}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=env)
    return done, time.perf_counter() - t0


@pytest.mark.parametrize("how", ["script", "-c", "stdin"])
def test_workers_never_run_the_callers_program_again(folder, tmp_path, how):
    """A program without an `if __name__ == "__main__":` guard: its module-level code runs
    once, the files are parsed in worker processes all the same."""
    (tmp_path / "pidchunker.py").write_text(PIDS, encoding="utf-8")
    program = ("import os\n"
               "print('module level', os.getpid())\n"
               "from chunkwise.pipeline import ingest\n"
               "from hashembed import HASH\n"
               "from pidchunker import PidChunker\n"
               f"r = ingest([{str(folder)!r}], db_path='db', embedder=HASH, workers=2,\n"
               "           chunker=PidChunker('pids.txt'))\n"
               "print('report', r.files, len(r.failed), r.workers)\n")
    if how == "script":
        (tmp_path / "unguarded.py").write_text(program, encoding="utf-8")
        done, _ = run_python(["unguarded.py"], tmp_path)
    elif how == "-c":
        done, _ = run_python(["-c", program], tmp_path)
    else:
        done, _ = run_python(["-"], tmp_path, stdin=program)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    assert [l.split()[0] for l in lines] == ["module", "report"], done.stdout
    parent = lines[0].split()[-1]
    assert lines[1].split()[1:] == [str(len(TEXTS)), "0", "2"]
    pids = (tmp_path / "pids.txt").read_text().split()
    assert len(pids) == len(TEXTS) and parent not in pids  # parsed in the workers
    assert "standard input" not in done.stderr and "in this process" not in done.stderr


def test_a_chunker_defined_in_the_script_is_parsed_in_process(folder, tmp_path):
    program = ("from chunkwise import Chunker\n"
               "from chunkwise.pipeline import ingest\n"
               "from hashembed import HASH\n"
               "class Mine:\n"
               "    def __init__(self):\n"
               "        self.chunker = Chunker(max_tokens=128)\n"
               "        self.fingerprint = self.chunker.fingerprint\n"
               "    def parse_bytes(self, data, **kw):\n"
               "        return self.chunker.parse_bytes(data, **kw)\n"
               "    def chunk_document(self, doc):\n"
               "        return self.chunker.chunk_document(doc)\n"
               "print('module level')\n"
               f"r = ingest([{str(folder)!r}], db_path='db', embedder=HASH, workers=2,\n"
               "           chunker=Mine())\n"
               "print('report', r.files, len(r.failed))\n")
    (tmp_path / "mine.py").write_text(program, encoding="utf-8")
    done, _ = run_python(["mine.py"], tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.split() == ["module", "level", "report", str(len(TEXTS)), "0"]
    assert "parsing in this process" in done.stderr


@pytest.mark.slow
def test_the_readme_api_block_as_a_plain_script(tmp_path):
    """The README's Python API block, saved as a script as a reader would (no guard), with
    the real model: once, no traceback, about as long as the CLI on the same folder."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert "ingest(" in block
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    (tmp_path / "readme_api.py").write_text("print('module level')\n" + block, encoding="utf-8")
    done, script = run_python(["readme_api.py"], tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.count("module level") == 1
    cli, took = run_python(["-m", "chunkwise.cli", "ingest", "fixtures/", "--db", "cli-db",
                            "--quiet"], tmp_path)
    assert cli.returncode == 0, cli.stderr
    print(f"README API block as a script: {script:.1f} s; CLI ingest of fixtures/: {took:.1f} s")


# -- the root of a collection ---------------------------------------------------------------
def test_an_empty_or_failed_first_ingest_records_no_root(tmp_path):
    empty, broken, one, other = (tmp_path / n for n in ("empty", "broken", "one", "other"))
    for f in (empty, broken, one, other):
        f.mkdir()
    (broken / "bad.json").write_text('{"a": [1, 2', encoding="utf-8")
    shutil.copy(FIXTURES / "fastapi__features.md", one)
    shutil.copy(FIXTURES / "alice-in-wonderland.txt", other)
    db = tmp_path / "db"
    assert ingest([empty], db_path=db, embedder=HASH, workers=1).files == 0
    failed = ingest([broken], db_path=db, embedder=HASH, workers=1)
    assert failed.failed and failed.written == 0
    first = ingest([one], db_path=db, embedder=HASH, workers=1)
    assert first.written > 0 and first.root == str(one.resolve()) and not first.failed
    with pytest.raises(StoreError) as refused:  # now the collection holds documents of one/
        ingest([other], db_path=db, embedder=HASH, workers=1)
    message = str(refused.value)
    assert f"relative to {one.resolve()}" in message and "--rebuild" in message
    with pytest.raises(StoreError, match="without --root"):
        ingest([one], db_path=db, embedder=HASH, workers=1, root=tmp_path)
    rebuilt = ingest([other], db_path=db, embedder=HASH, workers=1, rebuild=True)
    assert rebuilt.written > 0 and rebuilt.root == str(other.resolve())


def test_the_cli_after_an_empty_first_ingest(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "one").mkdir()
    shutil.copy(FIXTURES / "fastapi__features.md", tmp_path / "one")
    (tmp_path / "hashvec.py").write_text("from hashembed import HASH\n")
    base = ["-m", "chunkwise.cli", "ingest", "--db", "X", "--embedder", "hashvec:HASH"]
    done, _ = run_python([*base[:3], "empty", *base[3:]], tmp_path)
    assert done.returncode == 0, done.stderr
    done, _ = run_python([*base[:3], "one", *base[3:]], tmp_path)
    assert done.returncode == 0 and "relative to" not in done.stderr, done.stderr


# -- progress -------------------------------------------------------------------------------
SLOW = '''\
import time
from hashembed import hash_vectors
from chunkwise.embeddings.functions import Embedder


def slow(texts):
    time.sleep(0.07 * len(texts))
    return hash_vectors(texts)


SLOW = Embedder(identity="test:slow-hash", embed=slow)
'''


def test_progress_follows_the_embedding(tmp_path):
    import importlib

    (tmp_path / "slowembed.py").write_text(SLOW, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        slow = importlib.import_module("slowembed").SLOW
    finally:
        sys.path.remove(str(tmp_path))
    one = tmp_path / "one"
    one.mkdir()
    shutil.copy(FIXTURES / "alice-in-wonderland.txt", one)
    seen = []
    report = ingest([one], db_path=tmp_path / "db", embedder=slow, workers=1,
                    progress=seen.append)
    assert report.embedded > 100
    embedding = [p for p in seen if p.files_done == p.files_total and
                 0 < p.texts_embedded < p.texts_to_embed]
    counts = [p.texts_embedded for p in embedding]
    # while the only file is done, the count moves between 0 and the total (how many steps
    # depends on the slices the embed thread chooses)
    assert counts and counts == sorted(counts)
    assert all(p.texts_to_embed == report.embedded for p in embedding)
    assert seen[-1].texts_embedded == report.embedded and seen[-1].embed_rate > 0


def test_progress_lines_in_a_log_from_the_first_seconds(tmp_path):
    (tmp_path / "slowembed.py").write_text(SLOW, encoding="utf-8")
    shutil.copy(FIXTURES / "alice-in-wonderland.txt", tmp_path / "book.txt")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(tmp_path)])}
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "chunkwise.cli", "ingest", "book.txt",
                             "--db", "db", "--embedder", "slowembed:SLOW", "--workers", "1"],
                            cwd=tmp_path, env=env, stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    lines = [(time.monotonic() - start, line) for line in proc.stderr]
    proc.wait(timeout=600)
    end = time.monotonic() - start
    assert proc.returncode == 0, lines
    shown = [(t, l) for t, l in lines if l.startswith("ingest: ")]
    embedding = [(t, l) for t, l in shown if "texts embedded" in l]
    assert len(embedding) >= 2, (end, lines)
    assert shown[0][0] < end / 2  # not at the end of the run
    assert any(" left" in l for _, l in embedding)  # once a rate is known
    done = [int(l.split("ingest: ")[1].split("/")[0]) for _, l in embedding]
    assert done == sorted(done) and done[0] < done[-1]
    print(f"run {end:.1f} s; progress lines at", [round(t, 1) for t, _ in shown])


# -- warnings -------------------------------------------------------------------------------
def test_missing_grammar_said_once_and_quiet_is_quiet(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(4):
        shutil.copy(FIXTURES / "Alamofire__RedirectHandler.swift", docs / f"f{n}.swift")
    (docs / "broken.py").write_text("def f(:\n    return 1\n", encoding="utf-8")
    shutil.copy(FIXTURES / "fastapi__features.md", docs)
    stub = tmp_path / "stub"
    stub.mkdir()  # the grammar "not installed", in this process and its workers alike
    (stub / "tree_sitter_swift.py").write_text("raise ImportError('not installed here')\n")
    (tmp_path / "hashvec.py").write_text("from hashembed import HASH\n")
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(stub), str(ROOT / "tests"), str(tmp_path)])}
    base = [sys.executable, "-m", "chunkwise.cli", "ingest", "docs", "--embedder",
            "hashvec:HASH", "--workers", "2"]
    loud = subprocess.run([*base, "--db", "a"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert loud.returncode == 0, loud.stderr
    said = loud.stdout + loud.stderr
    notes = [line for line in said.splitlines() if "tree-sitter-swift" in line]
    assert len(notes) == 1 and notes[0] in loud.stdout, said
    assert loud.stderr.count("broken.py: syntax errors") == 1, loud.stderr
    quiet = subprocess.run([*base, "--db", "b", "--quiet"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=600)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == "", quiet.stderr


def test_a_writer_gathers_the_windows_waiting_for_it_into_one_upsert():
    """Windows that queue while the store is busy are written together, up to
    `WRITE_BATCH` records; every record is written once, each file's deletes after its
    upserts, and the report counts them all."""
    import threading
    from types import SimpleNamespace

    from chunkwise.pipeline.stages import FilePlan
    from chunkwise.pipeline.threads import EMBED_WINDOW, WRITE_BATCH, WriteThread

    class Recorder:  # the store's write calls, in order; the first upsert waits
        def __init__(self) -> None:
            self.calls: list[tuple[str, list[str]]] = []
            self.release = threading.Event()

        def upsert(self, ids, documents, embeddings, metadatas) -> None:
            if not self.calls:
                self.release.wait(30)
            self.calls.append(("upsert", list(ids)))

        def update(self, ids, metadatas) -> None:
            self.calls.append(("update", list(ids)))

        def delete(self, ids) -> None:
            self.calls.append(("delete", list(ids)))

    def window(w: int) -> list[FilePlan]:
        chunks = [SimpleNamespace(id=f"w{w}-{i}", text="t") for i in range(EMBED_WINDOW)]
        return [FilePlan(f"f{w}", [(c, {}) for c in chunks], [], [f"old{w}"],
                         [[0.0, 1.0]] * EMBED_WINDOW)]

    store, report = Recorder(), IngestReport()
    writer = WriteThread(store, report, lambda: None)  # type: ignore[arg-type]
    n = 1 + WRITE_BATCH // EMBED_WINDOW + 1
    writer.submit(window(0))
    time.sleep(0.2)  # the writer holds window 0 in its first (waiting) upsert
    for w in range(1, n):
        writer.submit(window(w))
    store.release.set()
    writer.stop()
    upserts = [ids for kind, ids in store.calls if kind == "upsert"]
    assert [len(u) for u in upserts] == [EMBED_WINDOW, WRITE_BATCH, EMBED_WINDOW]
    assert sorted(i for u in upserts for i in u) == sorted(
        f"w{w}-{i}" for w in range(n) for i in range(EMBED_WINDOW))
    for w in range(n):  # a file's stale ids go after the upsert that wrote its chunks
        up = next(k for k, (kind, ids) in enumerate(store.calls)
                  if kind == "upsert" and f"w{w}-0" in ids)
        assert store.calls.index(("delete", [f"old{w}"])) > up
    assert (report.written, report.deleted) == (n * EMBED_WINDOW, n)
