"""Retrieval evaluation: metrics on hand-computed cases, questions-file validation, excerpt
location, source matching, and `chunkwise eval` end to end with the real model and a real
embedded Chroma on the bundled fixtures. Also checks the shared corpus question set."""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from chunkwise.cli.main import main
from chunkwise.errors import ConfigError
from chunkwise.evaluation.eval import (
    EvalReport, QuestionsError, QuestionSet, UnitCounter, count_units, dcg, load_questions,
    locate_excerpt, match_sources, merge_spans, ndcg, check_relevance, paired_difference,
    parse_ks, per_question, reciprocal_rank, span_scores, summarise, _score, RetrievedChunk,
    Question)

from conftest import CORPUS, FIXTURES
from pdftext import located_questions

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
CHUNKWISE = [sys.executable, "-m", "chunkwise.cli"]
FORMATS = ("markdown", "html", "pdf", "code", "csv", "text")


# -- metrics --------------------------------------------------------------------------------
def test_dcg_and_ndcg_hand_computed():
    rels = [False, True, False, True]
    assert dcg(rels, 4) == pytest.approx(1 / math.log2(3) + 1 / math.log2(5))
    assert dcg(rels, 1) == 0.0
    # two relevant items exist: ideal is ranks 1 and 2
    ideal = 1 + 1 / math.log2(3)
    assert ndcg(rels, 4, 2) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal)
    # at k=2 only one relevant item fits in the top 2 of the ideal ranking too
    assert ndcg(rels, 2, 2) == pytest.approx((1 / math.log2(3)) / ideal)
    assert ndcg([True, False], 2, 1) == 1.0
    assert ndcg([False, False], 2, 3) == 0.0
    assert ndcg([True], 5, 0) == 0.0  # nothing relevant exists: defined as 0


def test_reciprocal_rank():
    assert reciprocal_rank([False, False, True]) == pytest.approx(1 / 3)
    assert reciprocal_rank([True, True]) == 1.0
    assert reciprocal_rank([False] * 5) == 0.0
    assert reciprocal_rank([]) == 0.0


def test_merge_spans():
    assert merge_spans([(5, 8), (0, 3), (2, 4), (8, 9), (12, 12)]) == [(0, 4), (5, 9)]


def test_span_scores_hand_computed():
    # reference [10, 20); chunks [0, 15) and [18, 30): intersection 5 + 2 = 7
    s = span_scores((10, 20), [(0, 15), (18, 30)])
    assert s.recall == pytest.approx(7 / 10)
    assert s.precision == pytest.approx(7 / 27)
    assert s.iou == pytest.approx(7 / (10 + 27 - 7))
    # 10 more units retrieved from another source: precision and IoU drop, recall does not
    s = span_scores((10, 20), [(0, 15), (18, 30)], other=10)
    assert (s.recall, s.precision, s.iou) == pytest.approx((0.7, 7 / 37, 7 / 40))
    # overlapping chunks: the intersection is counted once, the retrieved units twice
    s = span_scores((0, 10), [(0, 10), (5, 10)])
    assert (s.recall, s.precision, s.iou) == pytest.approx((1.0, 10 / 15, 10 / 15))
    # exact retrieval
    s = span_scores((3, 9), [(3, 9)])
    assert (s.recall, s.precision, s.iou) == (1.0, 1.0, 1.0)
    # nothing of the source retrieved
    s = span_scores((3, 9), [], other=40)
    assert (s.recall, s.precision, s.iou) == (0.0, 0.0, 0.0)


def test_span_scores_count_non_whitespace():
    text = "ab  cd\n\n  ef gh"
    count = UnitCounter(text)
    assert count(0, len(text)) == 8 == count_units(text)
    assert count(2, 4) == 0 and count(4, 2) == 0
    # reference "cd\n\n  ef" (4 units); chunk "ab  cd" (4 units, 2 shared)
    ref = (text.index("cd"), text.index("ef") + 2)
    s = span_scores(ref, [(0, 6)], count=count)
    assert (s.recall, s.precision, s.iou) == pytest.approx((0.5, 0.5, 2 / 6))


def _q(line=1, start=None, end=None):
    return Question("q?", "a.md", Path("a.md"), line, start, end)


def test_score_and_summarise():
    chunks = [RetrievedChunk("other.md", 0, 10, 10, 0.1),
              RetrievedChunk("a.md", 0, 50, 40, 0.2),     # same source, misses the span
              RetrievedChunk("a.md", 50, 100, 50, 0.3)]   # holds the span
    stored = [(0, 50), (50, 100), (100, 150)]
    r = _score(_q(start=60, end=70), "a.md", chunks, stored, (1, 3), None)
    assert r.relevant == [False, False, True]
    assert (r.rank, r.source_rank, r.n_relevant) == (3, 2, 1)
    assert r.scores[1].recall == 0.0
    assert r.scores[3].recall == 1.0
    assert r.scores[3].precision == pytest.approx(10 / (10 + 50 + 50))
    # without a span any chunk of the source is relevant
    r2 = _score(_q(line=2), "a.md", chunks, stored, (1, 3), None)
    assert r2.relevant == [False, True, True] and (r2.rank, r2.n_relevant) == (2, 3)
    m = summarise([r, r2], (1, 3))
    assert m["hit@1"] == 0.0 and m["hit@3"] == 1.0 and m["source_hit@3"] == 1.0
    assert m["mrr"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert m["answerable"] == 1.0
    # a question whose span no stored chunk reaches: not answerable, whatever is retrieved
    r3 = _score(_q(line=3, start=200, end=210), "a.md", chunks, stored, (1, 3), None)
    assert r3.n_relevant == 0 and summarise([r, r3], (1, 3))["answerable"] == 0.5
    assert m["ndcg@3"] == pytest.approx(
        (0.5 + (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3) + 0.5)) / 2)
    assert m["recall@3"] == 1.0  # only the question with a span counts


def test_relevance_rules():
    # text with spaces: units are non-whitespace characters
    text = "abcd efgh ijkl mnop"
    count = UnitCounter(text)
    q = _q(start=5, end=14)                       # "efgh ijkl": 8 units
    chunks = [RetrievedChunk("a.md", 0, 6, 5, 0.1),    # "abcd e": 1 unit of it
              RetrievedChunk("a.md", 6, 12, 5, 0.2),   # "fgh ij": 5 units, more than half
              RetrievedChunk("a.md", 0, 19, 16, 0.3)]  # all of it
    stored = [(0, 6), (6, 12), (12, 19), (0, 19)]
    got = {rule: _score(q, "a.md", chunks, stored, (1, 3), count, rule)
           for rule in ("overlap", "most", "whole")}
    assert got["overlap"].relevant == [True, True, True] and got["overlap"].rank == 1
    assert got["most"].relevant == [False, True, True] and got["most"].rank == 2
    assert got["whole"].relevant == [False, False, True] and got["whole"].rank == 3
    # answerable follows the rule: only the whole-document chunk holds all of the span
    split = [(0, 6), (6, 12), (12, 19)]
    assert [_score(q, "a.md", chunks, split, (3,), count, rule).n_relevant > 0
            for rule in ("overlap", "most", "whole")] == [True, True, False]
    # relevant chunks in the collection, under the same rule: (12, 19) holds "kl" (2 units)
    assert [got[r].n_relevant for r in ("overlap", "most", "whole")] == [4, 2, 1]
    # exactly half is enough for `most`: "efgh" of "efgh ijkl"
    half = _score(q, "a.md", [RetrievedChunk("a.md", 5, 9, 4, 0.1)], [(5, 9)], (1,), count,
                  "most")
    assert half.relevant == [True]
    # the span scores do not depend on the rule
    assert got["overlap"].scores[3] == got["whole"].scores[3]
    # a question without a span: any chunk of its source, whatever the rule
    assert _score(_q(), "a.md", chunks, stored, (1,), count, "whole").relevant == [True] * 3
    with pytest.raises(ConfigError, match="unknown relevance rule 'some'.*overlap, most, whole"):
        check_relevance("some")


def test_paired_difference():
    a = [1.0, 0.5, 0.0, 1.0, 0.25, 0.0, 1.0, 0.5]
    assert paired_difference(a, a) == (0.0, 0.0, 0.0)
    shifted = [x - 0.1 for x in a]
    d, lo, hi = paired_difference(a, shifted)
    assert d == pytest.approx(0.1) and lo == pytest.approx(0.1) and hi == pytest.approx(0.1)
    b = [0.0, 0.5, 1.0, 0.5, 0.25, 0.5, 0.0, 0.5]
    d, lo, hi = paired_difference(a, b)
    diffs = [x - y for x, y in zip(a, b)]
    assert d == pytest.approx(sum(diffs) / len(diffs))
    assert min(diffs) <= lo < d < hi <= max(diffs)
    assert paired_difference(a, b) == (d, lo, hi)  # a fixed seed: repeatable
    # a wider level gives a wider interval
    _, lo99, hi99 = paired_difference(a, b, level=0.99)
    assert lo99 <= lo and hi <= hi99
    with pytest.raises(ValueError):
        paired_difference(a, b[:-1])


def test_per_question_values_follow_summarise():
    chunks = [RetrievedChunk("a.md", 0, 50, 40, 0.2), RetrievedChunk("a.md", 50, 100, 50, 0.3)]
    stored = [(0, 50), (50, 100)]
    results = [_score(_q(start=60, end=70), "a.md", chunks, stored, (1, 3), None),
               _score(_q(line=2), "a.md", chunks, stored, (1, 3), None)]
    report = EvalReport("c", (1, 3), summarise(results, (1, 3)), results, 2, 10.0)
    assert per_question(report, "mrr") == [0.5, 1.0]
    assert sum(per_question(report, "mrr")) / 2 == pytest.approx(report.metrics["mrr"])
    assert per_question(report, "iou@3") == [results[0].scores[3].iou]  # spanned only
    with pytest.raises(ConfigError):
        per_question(report, "ndcg@3")


def test_parse_ks():
    assert parse_ks("10,1,3,3") == (1, 3, 10)
    for bad in ("", "a,b", "0,3", "-1"):
        with pytest.raises(ConfigError):
            parse_ks(bad)


# -- excerpts -------------------------------------------------------------------------------
TEXT = "Title\n\nThe quick brown fox\njumps over   the lazy dog.\n\nThe end. The end."


def test_locate_excerpt_exact():
    s, e = locate_excerpt(TEXT, "quick brown fox")
    assert TEXT[s:e] == "quick brown fox"


def test_locate_excerpt_whitespace_normalised_maps_to_exact_offsets():
    s, e = locate_excerpt(TEXT, "  brown fox jumps over the\nlazy dog.  ")
    assert TEXT[s:e] == "brown fox\njumps over   the lazy dog."


def test_locate_excerpt_not_found_or_ambiguous():
    with pytest.raises(ValueError, match="not found"):
        locate_excerpt(TEXT, "purple fox")
    with pytest.raises(ValueError, match="found 2 times"):
        locate_excerpt(TEXT, "The end.")
    with pytest.raises(ValueError, match="2 times"):
        locate_excerpt("a  b c\na\tb", "a b")  # exactly nowhere, twice normalised


# -- questions file -------------------------------------------------------------------------
def write_lines(path: Path, lines: list) -> Path:
    path.write_text("".join((l if isinstance(l, str) else json.dumps(l)) + "\n" for l in lines),
                    encoding="utf-8")
    return path


@pytest.fixture
def docs(tmp_path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.md").write_text("# A\n\nAlpha beta gamma.\n\nDelta epsilon.\n", encoding="utf-8")
    (d / "sub").mkdir()
    (d / "sub" / "b.txt").write_text("one two three\nfour five\n", encoding="utf-8")
    return d


def test_load_questions_valid(docs):
    f = write_lines(docs / "q.jsonl", [
        {"question": "alpha?", "source": "a.md", "excerpt": "Alpha beta gamma.", "id": 7},
        "",
        {"question": "four?", "source": "sub/b.txt", "start": 14, "end": 23},
        {"question": "anything?", "source": "sub/b.txt", "sanity": True},
    ])
    qs = load_questions(f)  # root defaults to the file's directory
    assert [q.line for q in qs.questions] == [1, 3, 4]
    q1, q2, q3 = qs.questions
    text = (docs / "a.md").read_text()
    assert text[q1.start:q1.end] == "Alpha beta gamma." and q1.extra == {"id": 7}
    assert (q2.start, q2.end) == (14, 23) and q2.has_span
    assert not q3.has_span and q3.extra == {"sanity": True}


def test_load_questions_reports_every_bad_line(docs):
    f = write_lines(docs / "q.jsonl", [
        "{not json",
        "[1, 2]",
        {"source": "a.md"},
        {"question": "x?"},
        {"question": "x?", "source": "missing.md"},
        {"question": "x?", "source": "a.md", "excerpt": "not in the file"},
        {"question": "x?", "source": "a.md", "start": 3},
        {"question": "x?", "source": "a.md", "start": 9, "end": 2},
        {"question": "x?", "source": "a.md", "start": 0, "end": 10_000},
        {"question": "", "source": "a.md"},
        {"question": "ok?", "source": "a.md"},
    ])
    with pytest.raises(QuestionsError) as info:
        load_questions(f)
    problems = info.value.problems
    assert len(problems) == 10
    assert [p.split(":")[1] for p in problems] == [str(i) for i in range(1, 11)]
    joined = "\n".join(problems)
    for reason in ("invalid JSON", "expected a JSON object", "missing field: question",
                   "missing field: source", "unknown source 'missing.md'", "not found in a.md",
                   "give both 'start' and 'end'", "need 0 <= start < end", "past the end",
                   "'question' must be a non-empty string"):
        assert reason in joined
    assert all(p.startswith(f"{f}:") for p in problems)


def test_load_questions_excerpt_disagreeing_with_span(docs):
    f = write_lines(docs / "q.jsonl", [
        {"question": "x?", "source": "a.md", "excerpt": "Delta epsilon.", "start": 0, "end": 5}])
    with pytest.raises(QuestionsError, match="disagree"):
        load_questions(f)


def test_load_questions_root(docs, tmp_path):
    f = write_lines(tmp_path / "q.jsonl", [{"question": "x?", "source": "a.md"}])
    with pytest.raises(QuestionsError, match="unknown source"):
        load_questions(f)
    assert load_questions(f, root=docs).questions[0].path == docs / "a.md"


def test_cli_invalid_questions_file_exits_2_listing_each_line(docs, capsys):
    f = write_lines(docs / "q.jsonl", [
        {"question": "x?", "source": "nope.md"}, "oops", {"question": "ok?", "source": "a.md"},
        {"question": "y?", "source": "a.md", "excerpt": "zzz"}])
    code = main(["eval", str(f), "--db", str(docs / "db")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{f}:1: unknown source" in err
    assert f"{f}:2: invalid JSON" in err
    assert f"{f}:4: excerpt 'zzz' not found" in err
    assert "Traceback" not in err


def test_cli_bad_options_exit_2(docs, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = write_lines(docs / "q.jsonl", [{"question": "x?", "source": "a.md"}])
    assert main(["eval", str(f), "--k", "0"]) == 2
    assert main(["eval", str(f), "--compare", "structure"]) == 2  # no --corpus
    assert main(["eval", str(f), "--corpus", str(docs)]) == 2      # no --compare
    assert main(["eval", str(f), "--compare", "structure,nonsense", "--corpus", str(docs)]) == 2
    err = capsys.readouterr().err
    assert "unknown strategy 'nonsense'" in err and "known:" in err
    assert "Traceback" not in err
    assert not (tmp_path / "chunkwise-db").exists()  # refused before touching a store


# -- source matching ------------------------------------------------------------------------
def test_match_sources_absolute_then_suffix(docs, tmp_path):
    f = write_lines(docs / "q.jsonl", [{"question": "x?", "source": "a.md"},
                                       {"question": "y?", "source": "sub/b.txt"}])
    qs = load_questions(f)
    # stored relative to the current directory, as `chunkwise ingest docs` writes them
    assert match_sources(qs, ["docs/a.md", "docs/sub/b.txt"], cwd=tmp_path) == {
        0: "docs/a.md", 1: "docs/sub/b.txt"}
    # ingested elsewhere: the path suffix decides
    assert match_sources(qs, ["/srv/x/a.md", "/srv/x/sub/b.txt", "/srv/x/c.md"],
                         cwd=tmp_path) == {0: "/srv/x/a.md", 1: "/srv/x/sub/b.txt"}
    # exact path wins over another file with the same suffix
    both = [str(docs / "a.md"), "/srv/x/a.md", "/srv/x/sub/b.txt"]
    assert match_sources(qs, both, cwd=tmp_path)[0] == str(docs / "a.md")
    with pytest.raises(QuestionsError) as info:
        match_sources(qs, ["/srv/x/a.md", "/srv/y/a.md"], cwd=tmp_path)
    assert len(info.value.problems) == 2
    first, second = info.value.problems
    assert "ambiguous" in first and "not in the collection" in second
    # a suffix must be whole path components
    with pytest.raises(QuestionsError):
        match_sources(qs, ["/srv/xsub/b.txt", "/srv/x/a.md"], cwd=tmp_path)


# -- end to end: real model, real embedded Chroma -------------------------------------------
def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([*CHUNKWISE, *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=1800)


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory) -> Path:
    """`chunkwise ingest fixtures --db DB` run from the repository root, once per module."""
    db = tmp_path_factory.mktemp("evaldb") / "db"
    done = run("ingest", "fixtures", "--db", str(db), "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["chunks"] > 0
    return db


def test_eval_end_to_end_on_fixtures(fixture_db):
    qfile = DATA / "fixture_questions.jsonl"
    done = run("eval", str(qfile), "--db", str(fixture_db), "--root", "fixtures",
               "--k", "1,3,5", "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    n = sum(1 for line in qfile.read_text().splitlines() if line.strip())
    assert report["questions"] == n and report["with_spans"] == n - 1
    m = report["metrics"]
    for key in ("hit@1", "hit@5", "source_hit@5", "mrr", "ndcg@5", "recall@5",
                "precision@5", "iou@5"):
        assert 0.0 <= m[key] <= 1.0, key
    assert m["hit@1"] <= m["hit@3"] <= m["hit@5"]
    # clear, specific questions on eight small documents: the answer's file comes first
    assert m["source_hit@5"] == 1.0, [r for r in report["results"] if r["source_rank"] is None]
    assert m["mrr"] >= 0.6 and m["recall@5"] >= 0.6
    for r in report["results"]:
        assert r["stored_source"] == r["source"]  # both relative to the folder ingested
        assert len(r["retrieved"]) == 5
    # a stricter rule never finds a relevant chunk earlier, and changes no span score
    done = run("eval", str(qfile), "--db", str(fixture_db), "--root", "fixtures",
               "--k", "1,3,5", "--json", "--relevance", "whole", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    whole = json.loads(done.stdout)
    assert whole["relevance"] == "whole" and report["relevance"] == "overlap"
    for a, b in zip(report["results"], whole["results"]):
        assert a["retrieved"] == b["retrieved"] and a.get("scores") == b.get("scores")
        assert b["rank"] is None or (a["rank"] is not None and b["rank"] >= a["rank"])
        assert b["relevant_in_collection"] <= a["relevant_in_collection"]
    assert whole["metrics"]["mrr"] <= m["mrr"]
    # the human-readable report, from another directory: sources are matched by suffix
    done = run("eval", str(qfile), "--db", str(fixture_db), "--root", str(FIXTURES),
               "--details", cwd=fixture_db.parent)
    assert done.returncode == 0, done.stderr
    assert "MRR@10" in done.stdout and "recall" in done.stdout
    assert "What riddle does the Hatter ask Alice?" in done.stdout


def test_eval_question_source_missing_from_collection(fixture_db, tmp_path):
    (tmp_path / "extra.md").write_text("# Extra\n\nNot ingested.\n", encoding="utf-8")
    qfile = write_lines(tmp_path / "q.jsonl", [{"question": "x?", "source": "extra.md"}])
    done = run("eval", str(qfile), "--db", str(fixture_db), cwd=ROOT)
    assert done.returncode == 2
    assert f"{qfile}:1: source 'extra.md' is not in the collection" in done.stderr
    assert "Traceback" not in done.stderr


def assert_nearest_first(exact: list[tuple], approx: list[tuple]) -> None:
    """`exact` (key, distance) pairs are a true nearest-first list against the approximate
    `approx` of the same length: sorted, as near at every rank, the same distance for a key
    both hold, and holding every key `approx` ranks nearer than exact's last."""
    dist = [d for _, d in exact]
    assert dist == sorted(dist)
    assert all(e <= a + 1e-4 for e, a in zip(dist, (d for _, d in approx)))
    mine = dict(exact)
    for key, d in approx:
        if key in mine:
            assert mine[key] == pytest.approx(d, abs=1e-4), key
        else:
            assert d >= dist[-1] - 1e-4, (key, d, exact)


def test_search_exact_agrees_with_chroma_and_is_repeatable(fixture_db):
    """Brute force over the stored vectors gives the same cosine distances as Chroma's HNSW
    for the chunks both find, is at least as near at every rank, and never misses a chunk
    HNSW ranks nearer than its own k-th. (HNSW is approximate even on ~1,000 chunks: one
    ingest in four here left out a chunk brute force ranks 8th, so the two lists are not
    compared for equality.)"""
    from chunkwise.chroma.queries import query, search_exact

    questions = [json.loads(l)["question"]
                 for l in (DATA / "fixture_questions.jsonl").read_text().splitlines()][:4]
    exact = search_exact(questions, k=5, db_path=fixture_db)
    again = search_exact(questions, k=5, db_path=fixture_db)
    assert [[(h.id, h.distance) for h in hits] for hits in again] == \
        [[(h.id, h.distance) for h in hits] for hits in exact]
    shared = 0
    for q, hits in zip(questions, exact):
        approx = query(q, k=5, db_path=fixture_db)
        assert_nearest_first([(h.id, h.distance) for h in hits],
                             [(h.id, h.distance) for h in approx])
        shared += len({h.id for h in hits} & {h.id for h in approx})
        assert all(h.text and h.source for h in hits)
    assert shared >= 4 * 5 - 2  # the two searches mostly agree
    assert search_exact([], db_path=fixture_db) == []
    with pytest.raises(ConfigError, match="positive integer"):
        search_exact(questions, k=0, db_path=fixture_db)


def test_eval_exact_flag(fixture_db):
    qfile = DATA / "fixture_questions.jsonl"
    done = [run("eval", str(qfile), "--db", str(fixture_db), "--root", "fixtures",
                "--json", *flag, cwd=ROOT) for flag in (("--mode", "dense"), ("--exact",))]
    assert all(d.returncode == 0 for d in done), [d.stderr for d in done]
    approx, exact = (json.loads(d.stdout) for d in done)
    key = lambda r: (r["source"], r["start"], r["end"])  # noqa: E731
    for a, e in zip(approx["results"], exact["results"]):
        assert_nearest_first([(key(r), r["distance"]) for r in e["retrieved"]],
                             [(key(r), r["distance"]) for r in a["retrieved"]])
    if all(a["retrieved"] == e["retrieved"]
           for a, e in zip(approx["results"], exact["results"])):
        assert exact["metrics"] == approx["metrics"]
    done = run("eval", str(qfile), "--db", str(fixture_db), "--embed-cache", "x.sqlite",
               cwd=ROOT)
    assert done.returncode == 2 and "--embed-cache is only used with --compare" in done.stderr


def test_cached_embedder_embeds_each_text_once(tmp_path):
    """The cache does not care what the vectors mean: a counting stand-in model."""
    from chunkwise.embeddings.functions import Embedder, cached_embedder
    import numpy as np

    seen: list[str] = []

    def embed(texts):
        seen.extend(texts)
        return np.array([[len(t), t.count("a"), 1.0] for t in texts], dtype=np.float32)

    model = Embedder(identity="test:count", embed=embed)
    path = tmp_path / "cache.sqlite"
    first = cached_embedder(model, path).embed(["alpha", "beta", "alpha", "gamma"])
    assert seen == ["alpha", "beta", "gamma"]  # a duplicate in one batch: embedded once
    assert first.tolist() == [[5, 2, 1], [4, 1, 1], [5, 2, 1], [5, 2, 1]]
    again = cached_embedder(model, path)  # a later process: the file is the cache
    assert again.embed(["gamma", "beta", "delta"]).tolist() == [[5, 2, 1], [4, 1, 1],
                                                                  [5, 1, 1]]
    assert seen == ["alpha", "beta", "gamma", "delta"]
    assert again.identity == model.identity and again.embed_queries(["q"]).tolist() == [[1, 0, 1]]
    assert seen[-1] == "q"  # queries go to the model, uncached
    other = Embedder(identity="test:other", embed=embed)
    cached_embedder(other, path).embed(["alpha"])  # another model: its own vectors
    assert seen[-1] == "alpha"
    with pytest.raises(ConfigError, match="does not exist"):
        cached_embedder(model, tmp_path / "missing" / "cache.sqlite")


def test_eval_compare_on_small_corpus(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("fastapi__features.md", "fastapi__fastapi__concurrency.py",
                 "fastapi__fastapi__background.py", "mkdocs-material__reference__data-tables.md"):
        shutil.copy(FIXTURES / name, corpus / name)
    lines = [l for l in (DATA / "fixture_questions.jsonl").read_text().splitlines()
             if json.loads(l)["source"] in {p.name for p in corpus.iterdir()}]
    qfile = tmp_path / "q.jsonl"
    qfile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = run("eval", str(qfile), "--compare", "structure", "--corpus", str(corpus),
               "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["strategies"]
    assert row["strategy"] == "structure" and row["collection"] == "eval-structure"
    assert row["chunks"] > 0 and 0 < row["mean_tokens"] <= 256
    assert row["metrics"]["source_hit@5"] == 1.0
    assert not list(tmp_path.glob("chunkwise-db*"))  # a temporary database, removed
    done = run("eval", str(qfile), "--compare", "structure,fixed", "--corpus", str(corpus),
               "--db", str(tmp_path / "cmp"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].split()[:2] == ["strategy", "hit@1"] and "answerable" in out[0]
    assert {out[1].split()[0], out[2].split()[0]} == {"structure", "fixed"}
    # the first strategy listed against the other, question by question
    assert out[4].startswith("structure minus each other strategy")
    assert out[5].split()[:2] == ["fixed", "MRR"] and "IoU@5" in out[5]
    # vectors from the embedding cache rank exactly as freshly computed ones
    cache = tmp_path / "vectors.sqlite"
    for db in ("cmp2", "cmp3"):  # the first fills the cache, the second reads it
        done = run("eval", str(qfile), "--compare", "structure", "--corpus", str(corpus),
                   "--db", str(tmp_path / db), "--embed-cache", str(cache), "--json",
                   cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["strategies"][0]["metrics"] == row["metrics"]
    with sqlite3.connect(cache) as con:
        assert 0 < con.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] <= row["chunks"]


# -- the shared corpus question set ---------------------------------------------------------
def test_corpus_question_set_is_valid(tmp_path):
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present ({CORPUS})")
    qfile = DATA / "questions.jsonl"
    rows = [json.loads(l) for l in qfile.read_text(encoding="utf-8").splitlines() if l.strip()]
    assert len(rows) >= 60
    by_format = {f: [r for r in rows if r["source"].split("/")[0] == f] for f in FORMATS}
    assert all(len(v) >= 6 for v in by_format.values()), {f: len(v) for f, v in by_format.items()}
    assert all(r["source"].split("/")[0] in FORMATS for r in rows)
    sanity = [r for r in rows if r.get("sanity")]
    assert len(sanity) == 20
    assert len({r["source"].split("/")[0] for r in sanity}) == len(FORMATS)
    assert len({r["question"] for r in rows}) == len(rows)
    # every excerpt located exactly once (PDF text of pypdf < 7.1: tests/pdftext.py)
    qs, _ = located_questions(qfile, CORPUS, tmp_path)
    for q in qs.questions:
        text = qs.texts[q.path]
        assert text.count(q.excerpt) == 1, f"{qs.where(q)}: excerpt not exactly once verbatim"
        assert text[q.start:q.end] == q.excerpt
        assert 40 <= len(q.excerpt) <= 800, qs.where(q)
