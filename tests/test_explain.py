"""The retrieval debugger (`chunkwise.explain`, `chunkwise why`, `eval --explain`): one test
per cause on real documents, with the default MiniLM model, real Chroma and the lexical
index; bad input gets one line and an exit code.

The collections (built once for the module, ~200 chunks):
- `plain`: two real Apache-licensed sources of the shared corpus with the same licence
  header (near-duplicate boilerplate) and fastapi's feature page;
- `wide`: cJSON's fuzzer at a 512-token budget, so its `main` is one chunk past the model's
  256-token window;
- `narrow`: mkdocs-material's data-tables page at 64 tokens (one table row per chunk);
- `nolex`: fastapi's feature page at 48 tokens, without a lexical index.
"""

from __future__ import annotations

import json
import shutil
import time

import pytest

from chunkwise.errors import ConfigError
from conftest import CORPUS, FIXTURES

pytest.importorskip("chromadb")

BOILER = [CORPUS / "code-multi" / "square__okhttp__Cookie.kt",
          CORPUS / "code-multi" / "square__javapoet__TypeSpec.java"]
#: a document whose text is markup: the page of `eval --explain-html` must show it, not run it
HOSTILE = ("# Hostile page\n\nThe payload <img src=x onerror=alert(1)> sits here, and "
           "<script>alert(2)</script> too.\n")
SCAN = CORPUS / "pdf-tables" / "docling__scanned__sample_with_rotation_mismatch.pdf"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    from chunkwise import Chunker
    from chunkwise.pipeline.runner import ingest

    root = tmp_path_factory.mktemp("docs")
    for f in [FIXTURES / "fastapi__features.md", FIXTURES / "cJSON__fuzzing__afl.c",
              FIXTURES / "mkdocs-material__reference__data-tables.md",
              *[p for p in BOILER if p.exists()]]:
        shutil.copy(f, root / f.name)
    (root / "hostile.md").write_text(HOSTILE, encoding="utf-8")
    path = tmp_path_factory.mktemp("db") / "db"
    plain = [root / "fastapi__features.md", root / "hostile.md", *[root / p.name for p in BOILER if p.exists()]]
    ingest(plain, db_path=path, collection="plain", root=root, workers=1)
    ingest([root / "cJSON__fuzzing__afl.c"], db_path=path, collection="wide", root=root,
           workers=1, chunker=Chunker(max_tokens=512))
    ingest([root / "mkdocs-material__reference__data-tables.md"], db_path=path,
           collection="narrow", root=root, workers=1, chunker=Chunker(max_tokens=64))
    ingest([root / "fastapi__features.md"], db_path=path, collection="nolex", root=root,
           workers=1, lexical=False, chunker=Chunker(max_tokens=48))
    return path


def why(db, collection, question, expected, **kw):
    from chunkwise import explain

    mode = kw.pop("mode", None)
    return explain(question, expected, db_path=db, collection=collection, mode=mode, **kw)


# -- one test per cause --------------------------------------------------------------------
def test_found(db):
    e = why(db, "plain", "What editor support does FastAPI give?",
            "Autocompletion works everywhere")
    assert e.verdict == "found"
    assert e.location.match == "exact" and e.location.source == "fastapi__features.md"
    assert e.modes == ("dense", "lexical", "hybrid") and e.mode == "hybrid"
    best = e.best
    assert best.share == 1.0 and best.ranks["hybrid"] <= 5
    text = (FIXTURES / "fastapi__features.md").read_text()
    assert text[e.location.start:e.location.end] == "Autocompletion works everywhere"
    assert best.start <= e.location.start < e.location.end <= best.end
    assert best.window_end is None and best.tokens <= 256


def test_not_extracted_scan_with_ocr_errors(tmp_path):
    """The Slerexe fax letter, scanned: the OCR reads TELEPHONE BOOLE as TELEPH0NE B00LE,
    so the letter's real header line is not in the canonical text; its nearest text is."""
    if not SCAN.exists():
        pytest.skip(f"shared corpus not present ({SCAN})")
    from chunkwise import parse_file
    from chunkwise.pipeline.runner import ingest

    if "TELEPH0NE" not in parse_file(SCAN).text:
        pytest.skip("no OCR engine here: the scan has no text to misread")
    ingest([SCAN], db_path=tmp_path / "db", root=SCAN.parent, workers=1)
    e = why(tmp_path / "db", "chunkwise", "What is the Slerexe Company's telephone number?",
            "TELEPHONE BOOLE (945 13) 51617")
    assert e.verdict == "not extracted"
    assert e.location.match == "fuzzy" and 0.8 <= e.location.similarity < 1
    assert "TELEPH0NE B00LE (945 13) 51617" in e.location.text
    assert "TELEPH0NE" in e.reason


def test_not_extracted_nothing_like_it(db):
    e = why(db, "plain", "What is the airspeed of an unladen swallow?",
            "African or European swallow velocity table")
    assert e.verdict == "not extracted" and e.location is None and not e.holders


def test_split_a_paragraph_across_small_chunks(db):
    """At 48 tokens fastapi's "Editor support" paragraphs fall into four chunks, cut inside a
    sentence: none holds half of them, so under `most` no chunk counts."""
    text = (FIXTURES / "fastapi__features.md").read_text()
    start = text.index("The whole framework was designed")
    end = text.index("tools-and-features)", start) + len("tools-and-features).")
    e = why(db, "nolex", "Why does FastAPI care about autocompletion in editors?",
            text[start:end], relevance="most")
    assert e.verdict == "split" and e.mode == "dense"
    assert len(e.holders) >= 3 and max(h.share for h in e.holders) < 0.5
    assert abs(sum(h.share for h in e.holders) - 1) < 0.01
    cuts = dict(e.cuts)
    assert cuts and all(start < o < end for o in cuts)
    assert any(r == "a line or word break" for r in cuts.values())  # "intuitive to | use"
    # under eval's default rule (any of it) a chunk in the top k is a hit
    assert why(db, "nolex", "Why does FastAPI care about autocompletion in editors?",
               text[start:end]).verdict == "found"


def test_beyond_window_a_long_function(db):
    """cJSON's fuzzer `main` is one 450-token chunk at a 512 budget; its cleanup code lies
    past the model's 256 tokens, so the vector never saw it (dense ranks it second)."""
    e = why(db, "wide", "At cleanup, how does the fuzzer free the printed JSON string?",
            "free(printed_json);\n        printed_json = NULL;", mode="dense", k=1)
    assert e.verdict == "beyond window"
    best = e.best
    assert best.tokens > 256 and best.answer_token > 256
    assert best.window_end is not None and best.window_end <= e.location.start
    assert best.ranks["dense"] > 1
    # the word index sees the whole chunk
    assert best.ranks["lexical"] is not None and best.ranks["lexical"] <= 3


def test_context_missing_table_header(db):
    """A row chunk of a table without its header: the question names the header's
    `Method`, which other row chunks carry in their context and rank above it."""
    e = why(db, "narrow", "Which Method deletes a resource?",
            "| `DELETE`    | :material-close:     Delete resource |", k=3)
    assert e.verdict == "context missing"
    assert "method" in e.missing
    assert "method" not in (e.best.context + e.best.section_path).lower()


def test_outranked_by_near_duplicate_boilerplate(db):
    """okhttp's and javapoet's sources open with the same Apache licence header: javapoet's
    header chunk ranks above okhttp's for a question about okhttp's copyright line."""
    if not all(p.exists() for p in BOILER):
        pytest.skip("shared corpus not present")
    e = why(db, "plain", "Who holds the copyright of this code, Square in 2015?",
            "Copyright (C) 2015 Square, Inc.", source="square__okhttp__Cookie.kt", k=1)
    assert e.verdict == "outranked"
    assert e.location.source == "square__okhttp__Cookie.kt"
    assert e.above and e.above[0].source == "square__javapoet__TypeSpec.java"
    assert e.above[0].why == "near duplicate"


# -- the API's shape -----------------------------------------------------------------------
def test_result_is_frozen_and_serialises(db):
    import dataclasses

    e = why(db, "plain", "What editor support does FastAPI give?", "Autocompletion")
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.verdict = "x"  # type: ignore[misc]
    d = json.loads(json.dumps(e.to_dict()))
    assert d["verdict"] == e.verdict and d["holders"][0]["ranks"]["hybrid"] is not None
    assert set(d["causes"]) == {"not extracted", "found", "split", "beyond window",
                                "context missing", "outranked"}


def test_tolerant_match_across_whitespace_and_hyphenation(db):
    e = why(db, "plain", "What editor support does FastAPI give?",
            "Autocom-\n pletion   works\n\neverywhere")
    assert e.location.match == "tolerant"
    assert e.location.text == "Autocompletion works everywhere"


def test_why_answers_quickly_after_the_model_is_loaded(db):
    from chunkwise.evaluation.explain import Explainer

    ex = Explainer(db_path=db, collection="plain")
    ex.explain("What editor support does FastAPI give?", "Autocompletion")  # warm
    t0 = time.process_time()
    ex.explain("How does FastAPI validate data?", "validation")
    assert time.process_time() - t0 < 5


# -- bad input -----------------------------------------------------------------------------
@pytest.mark.parametrize("question,expected,why_", [
    ("", "Autocompletion", "non-empty"),
    ("   ", "Autocompletion", "non-empty"),
    ("a question", "", "non-empty"),
    ("a question", "e", "occurs"),
])
def test_bad_input_is_a_config_error(db, question, expected, why_):
    with pytest.raises(ConfigError, match=why_):
        why(db, "plain", question, expected)


def cli(capsys, *args):
    from chunkwise.cli.main import main

    rc = main(["why", *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def test_cli_bad_inputs_one_line(db, capsys, tmp_path):
    for args, code, said in [
            (("", "--expect", "Autocompletion", "--db", db, "--collection", "plain"), 2,
             "non-empty"),
            (("q", "--expect", "e", "--db", db, "--collection", "plain"), 2, "occurs"),
            (("q", "--expect", "x", "--db", tmp_path / "nowhere"), 1, "no Chroma database"),
            (("q", "--expect", "x", "--db", db, "--collection", "nolex", "--mode", "lexical"),
             1, "no lexical index"),
            (("q", "--expect", "x", "--db", db, "--collection", "plain", "--source",
              "no-such.md"), 2, "no stored document"),
            (("q", "--expect", "x", "--db", db, "--collection", "nosuch"), 1,
             "no collection")]:
        rc, out, err = cli(capsys, *args)
        lines = err.strip().splitlines()
        assert rc == code and len(lines) == 1 and said in lines[0], (args, err)


def test_cli_text_fits_a_screen_and_json(db, capsys):
    rc, out, err = cli(capsys, "What editor support does FastAPI give?", "--expect",
                       "Autocompletion works everywhere", "--db", db, "--collection", "plain")
    assert rc == 0 and out.startswith("verdict: FOUND")
    assert len(out.splitlines()) <= 24
    rc, out, err = cli(capsys, "Which Method deletes a resource?", "--expect", "Delete resource",
                       "--db", db, "--collection", "narrow", "-k", "3", "--json")
    assert rc == 0 and json.loads(out)["verdict"] in {"found", "context missing", "outranked"}


def test_cli_without_lexical_index_says_so_and_ranks_dense(db, capsys):
    rc, out, err = cli(capsys, "What editor support does FastAPI give?", "--expect",
                       "Autocompletion works everywhere", "--db", db, "--collection", "nolex")
    assert rc == 0 and "no lexical index" in err and len(err.strip().splitlines()) == 1
    assert "(dense" in out and "hybrid" not in out and "lexical" not in out


def test_explain_html_page_runs_no_script_from_content(db):
    """Document text, question and passage are escaped; the page has no script at all and a
    policy that forbids one."""
    from chunkwise.evaluation.explain import Miss
    from chunkwise.evaluation.whypage import page

    e = why(db, "plain", "<script>alert(3)</script> where is the payload?",
            "<img src=x onerror=alert(1)>", k=1)
    assert e.location.source == "hostile.md" and e.location.match == "exact"
    html = page([Miss(1, None, "markdown", e)], title="<b>t</b>", questions=1)
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html
    assert "default-src 'none'" in html


def test_explain_html_page_in_chromium_runs_nothing(db, tmp_path):
    """The page opened in a real headless Chromium: markup from a document and a question
    sets no global, fetches nothing, and the passage is drawn (skips without Chromium)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("no Chromium on PATH (Debian: apt-get install chromium)")
    from chunkwise.evaluation.explain import Miss
    from chunkwise.evaluation.whypage import page

    e = why(db, "plain", "<img src=x onerror=\"window.__pwned=1\"> where is the payload?",
            "<script>alert(2)</script>", k=1)
    path = tmp_path / "why.html"
    path.write_text(page([Miss(1, None, "markdown", e)], title="t", questions=1), "utf-8")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        pg = b.new_page(viewport={"width": 1400, "height": 1000})
        requests, dialogs = [], []
        pg.on("request", lambda r: requests.append(r.url))
        pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        pg.goto(path.as_uri())
        assert pg.evaluate("window.__pwned") is None and not dialogs
        assert requests == [path.as_uri()]
        assert "<script>alert(2)</script>" in pg.inner_text(".ans")
        b.close()


def test_eval_explain_gives_each_miss_a_cause(db, capsys, tmp_path):
    """`eval --explain` over a real question: at k = 1, dense, cJSON's cleanup question
    misses, and its cause is the window; the table names the format; --json has it all."""
    from chunkwise.cli.main import main

    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({
        "question": "At cleanup, how does the fuzzer free the printed JSON string?",
        "source": "cJSON__fuzzing__afl.c",
        "excerpt": "free(printed_json);\n        printed_json = NULL;"}) + "\n")
    args = ["eval", str(q), "--db", str(db), "--collection", "wide", "--root", str(FIXTURES),
            "--mode", "dense", "--explain", "--explain-k", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 questions missed the top 1" in out
    row = next(line for line in out.splitlines() if line.startswith("c "))
    assert row.split()[1:] == ["1", "1"]  # beyond window 1, misses 1
    assert main(args + ["--json"]) == 0
    got = json.loads(capsys.readouterr().out)["explain"]
    assert [m["verdict"] for m in got] == ["beyond window"] and got[0]["line"] == 1
    assert main(["eval", str(q), "--explain", "--compare", "structure", "--corpus",
                 str(FIXTURES)]) == 2
