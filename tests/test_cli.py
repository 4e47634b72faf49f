"""The CLI: the contract's JSON fields, failures, exit codes, folder walks."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import FIXTURES

CLI = [sys.executable, "-m", "chunkwise.cli"]
FIELDS = {"id", "source", "format", "text", "start", "end", "context", "section_path",
          "page_start", "page_end", "kinds", "tokens"}


def run(*args, cwd=None):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=cwd)


def test_chunk_jsonl_has_the_contract_fields(tmp_path):
    p = run("chunk", FIXTURES / "fastapi__features.md", "--jsonl", "--max-tokens", "128")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert rows and all(FIELDS <= set(r) for r in rows)
    assert all(r["tokens"] <= 128 for r in rows)


def test_failures_print_one_line_and_the_rest_continue(tmp_path):
    (tmp_path / "good.md").write_text("# Hi\n\nText.\n")
    (tmp_path / "bad.md").write_bytes(bytes(range(256)) * 10)
    (tmp_path / "empty.txt").write_text("")
    p = run("chunk", tmp_path, "--jsonl")
    assert p.returncode == 1
    assert p.stderr.strip().count("\n") == 0 and "bad.md" in p.stderr and "binary" in p.stderr
    assert "Traceback" not in p.stderr
    assert [json.loads(x)["source"].endswith("good.md") for x in p.stdout.splitlines()] == [True]


def test_empty_file_exits_zero(tmp_path):
    (tmp_path / "e.md").write_text("")
    p = run("chunk", tmp_path / "e.md", "--jsonl")
    assert p.returncode == 0 and p.stdout == ""


def test_bad_options_exit_2():
    p = run("chunk", FIXTURES, "--overlap", "500")
    assert p.returncode == 2 and "overlap" in p.stderr
    p = run("chunk", FIXTURES, "--tokenizer", "nope")
    assert p.returncode == 2 and "unknown tokenizer" in p.stderr


def test_text_and_sections_agree_with_chunks():
    path = FIXTURES / "fastapi__features.md"
    text = run("text", path).stdout
    sections = [json.loads(x) for x in run("sections", path, "--jsonl").stdout.splitlines()]
    assert sections and all(0 <= s["start"] < s["end"] <= len(text) for s in sections)
    rows = [json.loads(x) for x in run("chunk", path, "--jsonl").stdout.splitlines()]
    assert all(text[r["start"]:r["end"]] == r["text"] for r in rows)


def test_help_has_examples():
    p = run("chunk", "--help")
    assert p.returncode == 0 and "Example" in p.stdout


# -- the usual manners ----------------------------------------------------------------------
def test_version():
    from importlib.metadata import version

    p = run("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"chunkwise {version('chunkwise')}"


def test_dash_reads_standard_input_with_format():
    path = FIXTURES / "fastapi__features.md"
    args = [*CLI, "chunk", "-", "--format", "markdown", "--jsonl"]
    p = subprocess.run(args, input=path.read_bytes(), capture_output=True)
    assert p.returncode == 0, p.stderr
    piped = [json.loads(x) for x in p.stdout.splitlines()]
    direct = [json.loads(x) for x in run("chunk", path, "--jsonl").stdout.splitlines()]
    assert [r["text"] for r in piped] == [r["text"] for r in direct]
    assert {r["source"] for r in piped} == {"<stdin>"}
    text = subprocess.run([*CLI, "text", "-", "--format", "markdown"], input=path.read_bytes(),
                          capture_output=True)
    assert text.returncode == 0 and text.stdout == run("text", path).stdout.encode()
    # without --format: bad usage, one line
    p = subprocess.run([*CLI, "chunk", "-"], input="# x\n", capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--format" in p.stderr


def test_text_and_sections_accept_folders():
    chunked = {json.loads(x)["source"] for x in run("chunk", FIXTURES, "--jsonl").stdout.splitlines()}
    p = run("text", FIXTURES)
    assert p.returncode == 0, p.stderr
    heads = {line[4:-4] for line in p.stdout.splitlines() if line.startswith("==> ")}
    assert heads == chunked and len(heads) == sum(1 for f in FIXTURES.iterdir() if f.is_file())
    p = run("sections", FIXTURES, "--jsonl")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines()]
    assert {r["source"] for r in rows} == chunked
    assert all(isinstance(r["level"], int) and r["depth"] >= 1 for r in rows)
    assert "level" in run("sections", "--help").stdout  # the numbers are documented


def test_unknown_format_is_bad_usage_in_one_line():
    for command in ("chunk", "text", "sections"):
        p = run(command, FIXTURES, "--format", "odt")
        assert p.returncode == 2, (command, p.stderr)
        assert p.stderr.count("\n") == 1 and "unknown --format 'odt'" in p.stderr
        assert p.stdout == ""


def test_unsupported_files_are_counted_in_one_line(tmp_path):
    (tmp_path / "good.md").write_text("# Hi\n\nText.\n")
    (tmp_path / "a.odt").write_bytes(b"PK\x03\x04")
    (tmp_path / "b.png").write_bytes(b"\x89PNG")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.png").write_bytes(b"\x89PNG")
    p = run("chunk", tmp_path, "--jsonl")
    assert p.returncode == 0
    assert p.stderr == "chunkwise: 3 files of no supported format not read (.png: 2, .odt: 1)\n"
    assert run("chunk", tmp_path, "--jsonl", "--quiet").stderr == ""


def test_llm_strategy_without_llm_prints_the_error_first():
    p = run("chunk", FIXTURES / "fastapi__features.md", "--strategy", "llm")
    assert p.returncode == 2
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "needs an llm" in lines[0], p.stderr


def _on_a_terminal(*args):
    """Run the CLI with stderr on a pseudo-terminal; (exit status, what the terminal got)."""
    import os
    import pty
    import threading

    master, slave = pty.openpty()
    got: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal is gone
                return
            if not data:
                return
            got.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    proc = subprocess.Popen([*CLI, *map(str, args)], stdout=subprocess.DEVNULL, stderr=slave)
    rc = proc.wait(timeout=300)
    os.close(slave)  # held until now: a pty whose last slave closes may drop what it holds
    reader.join(timeout=10)
    os.close(master)
    return rc, b"".join(got).decode("utf-8", "replace")


def test_progress_bar_on_a_terminal_and_quiet():
    files = len(list(FIXTURES.iterdir()))
    rc, shown = _on_a_terminal("chunk", FIXTURES, "--jsonl")
    assert rc == 0
    # the count and the bar; a rate only once a second has measured it (the fixtures may
    # chunk in less: the rate rule has its own tests, test_ingest_progress_rates_are_per_second_of_the_run)
    assert f"{files}/{files}" in shown and f"{files} files" in shown and "chunk:" in shown
    rc, shown = _on_a_terminal("chunk", FIXTURES, "--jsonl", "--quiet")
    assert rc == 0 and shown == ""


def test_progress_lines_when_not_a_terminal():
    import io

    from chunkwise.cli.progress import Progress

    out = io.StringIO()
    bar = Progress("ingest", total=4, stream=out, tty=False, every=0.0)
    bar.update(files=1, chunks=30, rate=12.5)
    bar.update(files=4, chunks=100, rate=20.0)
    bar.close()
    lines = out.getvalue().splitlines()
    # no time left before a rate is measured (issue 45: the first line read `about 0:00 left`)
    assert lines[0] == "ingest: 1/4 files, 30 chunks, 12.5 chunks/s"
    assert lines[1] == "ingest: 4/4 files, 100 chunks, 20.0 chunks/s"
    timed = io.StringIO()
    bar = Progress("ingest", total=4, stream=timed, tty=False)  # at once, then every 5 s
    bar.update(files=1, chunks=30)
    bar.update(files=2, chunks=60)
    bar.close()
    assert timed.getvalue().startswith("ingest: 1/4 files, 30 chunks")
    assert len(timed.getvalue().splitlines()) == 1
    embedding = io.StringIO()  # the phase that takes the time: texts embedded, rate, time left
    bar = Progress("ingest", total=4, stream=embedding, tty=False, every=0.0)
    bar.update(files=4, chunks=0, texts=300, texts_total=1200, texts_rate=50.0)
    bar.update(files=2, chunks=0, texts=300, texts_total=600, texts_rate=50.0)
    bar.close()
    first, second = embedding.getvalue().splitlines()
    assert first == ("ingest: 300/1200 texts embedded, 50.0/s, about 0:18 left, 4/4 files, "
                     "0 chunks written")
    assert second.startswith("ingest: 300/1200 texts embedded")  # 2 files of 4 read


def test_query_labels_the_distance_keeps_code_and_escapes_control_characters(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tasks.py").write_text(
        "def schedule(job):\n    \"\"\"Run a background job later.\"\"\"\n"
        "    if job.ready:\n        return queue.put(job)\n    return None\n")
    (docs / "note.md").write_text("# Note\n\nA terminal \x1b[31mred\x1b[0m escape in a note "
                                  "about background jobs.\n")
    db = tmp_path / "db"
    p = run("ingest", docs, "--db", db, "--quiet")
    assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stderr
    p = run("query", "schedule a background job", "--db", db, "-k", "2")
    assert p.returncode == 0, p.stderr
    assert "(score 0." in p.stdout and "; distance 0." in p.stdout and ", cosine)" in p.stdout
    assert "\n           return queue.put(job)\n" in p.stdout  # indentation kept
    p = run("query", "schedule a background job", "--db", db, "-k", "2", "--mode", "dense")
    assert p.returncode == 0 and "(distance 0." in p.stdout and ", cosine)" in p.stdout
    assert "\x1b" not in p.stdout and "\\x1b[31mred" in p.stdout


def test_ingest_counts_unsupported_files_and_quiet_prints_nothing(tmp_path):
    # a deterministic fake embedder (hashed words): this test is about the summary, not vectors
    import os
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    (tmp_path / "hashvec.py").write_text("from test_corpus_ingest import HASH\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tmp_path)])}
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nSome text about apples.\n")
    (docs / "slides.key").write_bytes(b"PK\x03\x04")
    (docs / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    args = [*CLI, "ingest", str(docs), "--db", str(tmp_path / "db"), "--embedder", "hashvec:HASH"]
    p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("1 files (0 unchanged, 1 written, 0 failed, 2 unsupported)")
    p = subprocess.run([*args, "--json"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert json.loads(p.stdout)["unsupported"] == 2
    p = subprocess.run([*args, "--quiet"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == "" and p.stderr == ""


def test_views_option_chooses_what_table_rows_embed():
    """`--views none`: every chunk embeds context + text, as tools that recount tokens on the
    text expect; the default embeds CSV rows as `column: value` lines."""
    from chunkwise.sizing.sizers import get_sizer

    csv = FIXTURES / "538__trump-poll-tweets.csv"
    count = get_sizer("minilm").count
    rows = {}
    for views in ("default", "none"):
        out = run("chunk", str(csv), "--jsonl", "--views", views)
        assert out.returncode == 0, out.stderr
        rows[views] = [json.loads(line) for line in out.stdout.splitlines()]
    assert any(r.get("view") for r in rows["default"])
    assert not any(r.get("view") for r in rows["none"])
    for r in rows["none"]:
        embed = f"{r['context']}\n\n{r['text']}" if r["context"] else r["text"]
        assert r["tokens"] == count(embed) <= 256
    assert run("chunk", str(csv), "--views", "bogus").returncode == 2


def test_ingest_progress_rates_are_per_second_of_the_run():
    """The ingest line's chunks/s and texts/s are over the run's wall time: with an
    embedder that took 0.01 s (a hash, a GPU) while the store wrote for the rest, a rate
    over embedding time would show 100,000 chunks/s for 1,000 chunks."""
    import io
    import time

    from chunkwise.cli.progress import Progress
    from chunkwise.cli.store import show_ingest
    from chunkwise.pipeline.options import IngestProgress

    out = io.StringIO()
    bar = Progress("ingest", total=4, stream=out, tty=False, every=0.0)
    time.sleep(1.1)  # a rate is shown once a second measures it (MEASURED_SECONDS)
    show_ingest(bar, IngestProgress(4, 4, 1000, 0.01, "", 1000, 1000, chunks_made=1000))
    embedding = IngestProgress(2, 4, 0, 0.01, "", 100, 400)
    show_ingest(bar, embedding)
    bar.close()
    done, texts = out.getvalue().splitlines()
    rate = float(done.split(" chunks, ")[1].split(" chunks/s")[0])
    assert 0 < rate <= 1000 / 1.0, done  # over 1 s or more, not over 0.01 s
    speed = float(texts.split("texts embedded, ")[1].split("/s")[0])
    assert 0 < speed <= 100 / 1.0, texts
    assert embedding.rate == 0.0 and embedding.embed_rate == 100 / 0.01  # the API's own rates


def test_the_summary_says_when_the_store_set_the_pace(tmp_path):
    """A run whose writes took most of its time, far more than the embedder's (a GPU, a fast
    embedder), ends with a note naming the store and `--table-rows grouped`; a run paced by
    the model does not. The note follows the run's own figures: a real ingest of a
    3,000-row CSV with a hash embedder, then the same rule on a model-bound report."""
    import os
    import re
    from pathlib import Path

    from chunkwise.cli.store import STORE_BOUND, STORE_OVER_EMBED, _summary
    from chunkwise.pipeline.options import IngestReport

    tests = Path(__file__).resolve().parent
    (tmp_path / "hashvec.py").write_text("from test_corpus_ingest import HASH\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), str(tmp_path)])}
    docs = tmp_path / "docs"
    docs.mkdir()
    rows = [f"{i},item {i},{i * 7 % 101},note on row {i}" for i in range(3000)]
    (docs / "t.csv").write_text("id,name,score,note\n" + "\n".join(rows) + "\n")
    p = subprocess.run([*CLI, "ingest", str(docs), "--db", str(tmp_path / "db"),
                        "--embedder", "hashvec:HASH", "--workers", "1"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    total, embed, store = map(float, re.search(
        r"time ([\d.]+)s .*, embed ([\d.]+)s, .*, store ([\d.]+)s\)", p.stdout).groups())
    paced = store >= STORE_BOUND * total and store >= STORE_OVER_EMBED * embed
    assert ("note: the store set this run's pace: it wrote 3000 chunks" in p.stdout) == paced
    assert paced, p.stdout  # a hash embedder and 3,000 records: the write is most of the run
    model_bound = IngestReport(written=3000, seconds={"total": 100.0, "embed": 95.0,
                                                     "embed_idle": 1.0, "write": 4.0})
    assert "note: the store" not in _summary(model_bound)
    store_bound = IngestReport(written=3000, seconds={"total": 10.0, "embed": 0.5,
                                                     "embed_idle": 7.0, "write": 8.0})
    assert "--table-rows grouped" in _summary(store_bound).splitlines()[-1]
