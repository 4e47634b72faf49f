"""Peers in `eval --compare` (chunkwise.evaluation.peers): each runs on every fixture format, its chunks
are located in chunkwise's canonical text, and the spans hold what the peer's chunk holds."""

from __future__ import annotations

import json
import re
import sys

import pytest

from chunkwise.chunking.api import parse_file
from chunkwise.errors import ConfigError
from chunkwise.evaluation.eval import count_units
from chunkwise.parsers import detect_format
from chunkwise.evaluation.peers import PEERS, Locator, check_peer, corpus_files, is_peer, run_peer

from conftest import FIXTURES

AVAILABLE = []
for _name in PEERS:
    try:
        check_peer(_name)
        AVAILABLE.append(_name)
    except ImportError:
        pass


def test_locator_offsets_and_search():
    canonical = "Title\n\nFirst  paragraph here.\n\nSecond paragraph,\nwith a line break."
    loc = Locator(canonical)
    assert loc.at_offset("First  paragraph here.", 7) == (7, 29)
    assert loc.at_offset("First paragraph here.", 7) is None  # not the exact text there
    span, how = loc.search("Second paragraph, with a line break.")
    assert how == "search" and canonical[span[0]:span[1]] == canonical[31:]
    # glued words (HTML get_text) and a line that is not in the canonical text
    text = "x" * 40 + "Secondparagraph,withalinebreak."
    loc = Locator("y" * 50 + "\n" + "x" * 40 + "\nSecond paragraph,\nwith a line break.")
    span, how = loc.search("zzzz" * 10 + text)
    assert how == "search-anchors"
    assert loc.canonical[span[0]:span[1]].endswith("break.")
    assert Locator("abc").search("nothing like it") == (None, "none")


def test_unknown_peer_is_a_config_error():
    assert is_peer("langchain:recursive") and not is_peer("structure")
    with pytest.raises(ConfigError, match="unknown peer"):
        check_peer("langchain:nothing")


@pytest.mark.parametrize("name", AVAILABLE)
def test_peer_chunks_every_fixture_and_locates_them(name):
    # not the notebook: its canonical text is its cells, the peers read its JSON
    files = [(p, s) for p, s in corpus_files([FIXTURES]) if detect_format(p) != "notebook"]
    run = run_peer(name, files, max_tokens=128)
    assert not run.failed
    assert run.files == len(files)
    by_source = {s: parse_file(p).text for p, s in files}
    assert {c.source for c in run.chunks} == set(by_source)
    located = [c for c in run.chunks if c.located != "none"]
    assert len(located) >= 0.95 * len(run.chunks)
    for c in located:
        span = by_source[c.source][c.start:c.end]
        if c.located in ("offset", "search"):  # the same non-whitespace characters
            assert "".join(span.split()) == "".join(c.text.split())
        elif c.located == "search-words":  # a window of the canonical text's words that
            # holds at least 3 of the chunk's (a reader that rewrote a table keeps its cells)
            words = set(re.findall(r"\w+", c.text.lower()))
            assert len(words & set(re.findall(r"\w+", span.lower()))) >= 3
        else:  # anchored: most of it
            assert count_units(span) >= 0.3 * count_units(c.text)
    # text formats come with offsets that hold
    md = [c for c in run.chunks if c.source.endswith(".md")]
    assert md and all(c.located == "offset" for c in md)
    if name != "llamaindex:markdown":  # MarkdownNodeParser has no size limit
        assert max(c.tokens for c in run.chunks) <= 128 + 2


@pytest.mark.skipif("langchain:recursive" not in AVAILABLE, reason="langchain not installed")
def test_eval_compare_with_a_peer(tmp_path, capsys):
    """End to end with the real model: a peer and chunkwise on one fixture, both scored."""
    from chunkwise.cli.main import main

    src = FIXTURES / "fastapi__features.md"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / src.name).write_bytes(src.read_bytes())
    text = parse_file(src).text
    excerpt = next(p for p in text.split("\n\n") if len(p) > 200)
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"question": excerpt[:120], "source": src.name,
                             "excerpt": excerpt}) + "\n")
    rc = main(["eval", str(q), "--compare", "structure,langchain:recursive", "--corpus",
               str(corpus), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    names = {s["strategy"]: s for s in out["strategies"]}
    peer = names["langchain:recursive"]
    assert peer["located"] == {"offset": peer["chunks"]}
    assert peer["metrics"]["hit@10"] == 1.0  # the question is the answer's own first words
    assert "langchain:recursive" in out["differences"]["minus"]


HYBRID = [n for n in ("langchain:hybrid", "llamaindex:hybrid") if n in AVAILABLE]


def test_a_hybrid_peer_needs_the_hybrid_mode(tmp_path):
    from chunkwise.evaluation.eval import compare
    from chunkwise.evaluation.questions import QuestionSet

    with pytest.raises(ConfigError, match="--mode hybrid"):
        compare(QuestionSet(tmp_path / "q.jsonl", tmp_path, []), [str(FIXTURES)], ["structure", "langchain:hybrid"])


@pytest.mark.skipif(len(HYBRID) < 2, reason="the hybrid peers' packages are not installed")
def test_eval_compare_with_the_peers_hybrids(tmp_path, capsys):
    """End to end with the real model: LangChain's EnsembleRetriever and LlamaIndex's
    QueryFusionRetriever over their own chunks, beside chunkwise's hybrid, on two fixtures. The
    question names an identifier that only one passage holds, which BM25 finds."""
    from chunkwise.cli.main import main

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("fastapi__features.md", "alice-in-wonderland.txt"):
        (corpus / name).write_bytes((FIXTURES / name).read_bytes())
    text = parse_file(corpus / "fastapi__features.md").text
    passage = next(p for p in text.split("\n\n") if "OpenAPI" in p and len(p) > 80)
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"question": "OpenAPI", "source": "fastapi__features.md",
                             "excerpt": passage}) + "\n")
    rc = main(["eval", str(q), "--compare", "structure," + ",".join(HYBRID), "--corpus",
               str(corpus), "--mode", "hybrid", "--json", "--k", "1,5"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    names = {s["strategy"]: s for s in out["strategies"]}
    assert set(names) == {"structure", *HYBRID}
    for name in HYBRID:
        assert names[name]["located"].get("offset", 0) > 0
        assert names[name]["metrics"]["hit@5"] == 1.0, name
    assert names["structure"]["metrics"]["hit@5"] == 1.0


@pytest.mark.skipif(not HYBRID, reason="the hybrid peers' packages are not installed")
@pytest.mark.parametrize("name", HYBRID)
def test_a_hybrid_peer_ranks_by_both_legs(tmp_path, name):
    """A word only one chunk holds puts that chunk in the first two (first in the lexical
    leg), and the hits are the peer's own chunks with their spans."""
    from chunkwise.embeddings.functions import resolve_embedder
    from chunkwise.evaluation.peer_hybrid import hybrid_searcher
    from chunkwise.evaluation.peers import store_peer

    src = FIXTURES / "alice-in-wonderland.txt"
    base = {"langchain:hybrid": "langchain:recursive",
            "llamaindex:hybrid": "llamaindex:sentence"}[name]
    run = run_peer(base, [(src, src.name)], max_tokens=128)
    words = [w for c in run.chunks for w in c.text.split() if w.isalpha() and len(w) >= 8]
    rare = next(w for w in words if sum(w.lower() in c.text.lower() for c in run.chunks) == 1)
    embedder = resolve_embedder(None)
    records = store_peer(run, db_path=tmp_path / "db", collection="peer", embedder=embedder)
    search = hybrid_searcher(name, records, db_path=tmp_path / "db", collection="peer",
                             embedder=embedder)
    hits = search(rare, 5)
    assert 1 <= len(hits) <= 5
    # fused by reciprocal rank: the lexical leg's first ties with the dense leg's first
    assert any(rare in h.text.split() for h in hits[:2])
    for h in hits:
        assert h.text in {c.text for c in run.chunks}
        assert h.source == src.name and int(h.metadata["end"]) > int(h.metadata["start"])


def test_a_file_a_peer_cannot_read_makes_its_questions_misses(tmp_path):
    """A question on a file the peer gave no chunk of (a scan pypdf reads nothing from) is a
    miss for that peer, not an error that stops the comparison."""
    from chunkwise.embeddings.functions import resolve_embedder
    from chunkwise.evaluation.eval import evaluate, load_questions
    from chunkwise.evaluation.peers import store_peer
    from chunkwise.evaluation.questions import QuestionsError

    from pypdf import PdfWriter

    src = tmp_path / "alice-in-wonderland.txt"
    src.write_bytes((FIXTURES / src.name).read_bytes())
    blank = PdfWriter()
    blank.add_blank_page(width=612, height=792)  # no text at all: what a scan is to pypdf
    blank.write(tmp_path / "scan.pdf")
    run = run_peer("langchain:recursive", [(src, src.name), (tmp_path / "scan.pdf", "scan.pdf")],
                   max_tokens=128)
    assert {c.source for c in run.chunks} == {src.name}
    embedder = resolve_embedder(None)
    store_peer(run, db_path=tmp_path / "db", collection="peer", embedder=embedder)
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"question": "Who is the White Rabbit?", "source": src.name})
                 + "\n" + json.dumps({"question": "What does the scan say?",
                                      "source": "scan.pdf"}) + "\n")
    qset = load_questions(q, root=tmp_path)
    with pytest.raises(QuestionsError, match="scan.pdf"):
        evaluate(qset, db_path=tmp_path / "db", collection="peer", embedder=embedder,
                 exact=True, cwd=tmp_path)
    report = evaluate(qset, db_path=tmp_path / "db", collection="peer", embedder=embedder,
                      exact=True, cwd=tmp_path, sources=[src.name, "scan.pdf"])
    assert [r.rank for r in report.results][1] is None
    assert report.results[0].source_rank == 1
