"""The lexical leg's parts: the terms (`chunkwise.text.terms`), the FTS5 index
(`chunkwise.chroma.lexical`) and reciprocal rank fusion (`chunkwise.chroma.search.fuse`),
on real text and a real SQLite file."""

from __future__ import annotations

import sqlite3
import time

import pytest

from chunkwise.chroma.lexical import LexicalIndex, differences, record_terms, sync
from chunkwise.chroma.search import check_weights, fuse
from chunkwise.errors import ConfigError
from chunkwise.text.terms import MAX_QUERY_TERMS, query_terms, terms

from conftest import FIXTURES


# -- terms ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("CHUNKWISE_MAX_BYTES", ["chunkwise", "max", "bytes", "chunkwisemaxbytes"]),
    ("DirectorySlash", ["directory", "slash", "directoryslash"]),
    ("HTTPServer", ["http", "server", "httpserver"]),
    ("os.path.join", ["os", "path", "join", "ospathjoin"]),
    ("--max-file-size", ["max", "file", "size", "maxfilesize"]),
    ("21,550", ["21", "550", "21550"]),
    ("1,234,567.89", ["1", "234", "567", "89", "123456789"]),
    ("Café Straße", ["café", "straße"]),
])
def test_identifiers_and_numbers_are_split_and_kept_whole(text, expected):
    assert terms(text) == expected


def test_a_number_is_found_with_or_without_its_separators():
    assert "21550" in terms("Texas | 21,550 | 10,429") and "21550" in query_terms("21550")


def test_cjk_is_indexed_by_characters_and_pairs():
    got = terms("東京都の人口")
    assert got[:6] == list("東京都の人口")
    assert "東京" in got and "人口" in got and "京都" in got
    assert set(query_terms("人口")) <= set(got)


def test_every_term_is_letters_and_digits_so_no_query_is_syntax():
    text = 'NEAR("a" * b) -c AND OR NOT ^d {e} [f] : col:g \x00\x1b emoji 🎉 ✓'
    got = terms(text)
    assert got and all(t.isalnum() for t in got)


def test_query_terms_drop_stopwords_unless_nothing_else_is_left():
    assert query_terms("what is the timeout of a request") == ["timeout", "request"]
    assert query_terms("what is it") == ["what", "is", "it"]
    assert query_terms("!!! ... ???") == []


def test_a_huge_query_keeps_its_rarest_terms_in_bounded_time():
    words = [f"w{i}x{'y' * (i % 9)}" for i in range(20_000)]
    text = " ".join(words) * 5  # about 1 MB
    t0 = time.process_time()
    got = query_terms(text)
    assert time.process_time() - t0 < 20
    assert len(got) == MAX_QUERY_TERMS


def test_the_context_is_indexed_with_the_text():
    got = record_terms("The timeout is 30 s.", "Networking > Retries").split()
    assert got[:2] == ["networking", "retries"] and "timeout" in got


# -- the index ------------------------------------------------------------------------------
@pytest.fixture
def lex(tmp_path):
    index = LexicalIndex(tmp_path / "lex.sqlite3", "docs")
    yield index
    index.close()


def test_search_ranks_the_chunk_that_spells_the_identifier(lex):
    lex.upsert(["a", "b", "c"],
               ["The maximum number of bytes a file may have.",
                "Set CHUNKWISE_MAX_BYTES to raise the limit.",
                "Bytes and bits and the max of them."],
               ["Limits", "Environment", ""])
    assert [i for i, _ in lex.search("CHUNKWISE_MAX_BYTES", 3)][0] == "b"
    scores = [s for _, s in lex.search("max bytes", 3)]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)


def test_upsert_replaces_and_delete_removes(lex):
    lex.upsert(["a", "b"], ["old words here", "other text"], ["", ""])
    lex.upsert(["a"], ["new words here", ], [""])
    assert lex.count() == 2
    assert lex.search("old", 5) == []
    assert [i for i, _ in lex.search("new", 5)] == ["a"]
    lex.delete(["a", "missing"])
    assert lex.ids() == {"b"} and lex.search("new", 5) == []


def test_bad_queries_match_nothing_or_something_never_raise(lex):
    lex.upsert(["a"], ['He said "NEAR" the * mark - twice'], [""])
    for q in ['"', '*', 'NEAR', '-', 'a"b', 'NEAR(x y)', '"*NEAR -', "\x00\x01", "...", "🎉",
              "AND OR NOT", "col:x", "^x", "{x}"]:
        got = lex.search(q, 5)
        assert isinstance(got, list)
    assert [i for i, _ in lex.search('"NEAR"', 5)] == ["a"]
    assert lex.search("", 5) == [] and lex.search("ok", 0) == []


def test_collections_are_kept_apart_in_one_file(tmp_path):
    one = LexicalIndex(tmp_path / "lex.sqlite3", "one")
    two = LexicalIndex(tmp_path / "lex.sqlite3", "two")
    one.upsert(["x"], ["apples"], [""])
    two.upsert(["y"], ["pears"], [""])
    assert one.search("pears", 5) == [] and [i for i, _ in two.search("pears", 5)] == ["y"]
    two.drop()
    assert LexicalIndex(tmp_path / "lex.sqlite3", "one", readonly=True).count() == 1
    assert not LexicalIndex(tmp_path / "lex.sqlite3", "two", readonly=True).exists


def test_a_readonly_open_creates_nothing(tmp_path):
    path = tmp_path / "none.sqlite3"
    index = LexicalIndex(path, "docs", readonly=True)
    assert not index.exists and index.count() == 0 and index.search("x", 5) == []
    assert not path.exists()


def test_sync_makes_the_index_hold_exactly_the_collections_ids(lex):
    stored = {"a": ("alpha text", "A"), "b": ("beta text", "B"), "c": ("gamma text", "")}
    lex.upsert(["a", "zombie"], ["alpha text", "stale text"], ["A", ""])

    def read(ids):
        for i in ids:
            yield i, stored[i][0], stored[i][1]

    report = sync(lex, set(stored), read)
    assert (report.added, report.removed) == (2, 1)
    assert differences(lex, set(stored)) == ([], [])
    assert [i for i, _ in lex.search("gamma", 5)] == ["c"]
    assert not sync(lex, set(stored), read).changed
    assert sync(lex, set(), read).removed == 3 and lex.count() == 0


def test_an_index_of_an_earlier_terms_version_is_rebuilt(tmp_path):
    path = tmp_path / "lex.sqlite3"
    LexicalIndex(path, "docs").upsert(["a"], ["text"], [""])
    with sqlite3.connect(path) as con:
        con.execute("UPDATE collections SET terms_version = '0'")
    index = LexicalIndex(path, "docs")
    assert index.stale_version
    report = sync(index, {"a"}, lambda ids: iter([("a", "new text", "")]))
    assert report.rebuilt and not index.stale_version and index.count() == 1


def test_a_real_document_is_searchable_by_its_own_words(lex):
    text = (FIXTURES / "fastapi__features.md").read_text(encoding="utf-8")
    paras = [p for p in text.split("\n\n") if p.strip()]
    lex.upsert([str(n) for n in range(len(paras))], paras, [""] * len(paras))
    target = next(n for n, p in enumerate(paras) if "Swagger UI" in p)
    assert lex.search("Swagger UI", 3)[0][0] == str(target)


# -- fusion ---------------------------------------------------------------------------------
def test_rrf_rewards_agreement_and_is_deterministic():
    got = fuse({"dense": ["a", "b", "c"], "lexical": ["c", "d", "a"]})
    assert [i for i, _, _ in got][:2] == ["a", "c"]
    assert got[0][2] == {"dense": 1, "lexical": 3}
    assert abs(got[0][1] - (1 / 61 + 1 / 63)) < 1e-12
    assert fuse({"dense": ["x", "y"], "lexical": ["y", "x"]})[0][0] == "x"  # tie: the id


def test_weights_move_the_fusion_toward_one_leg():
    legs = {"dense": ["a", "b"], "lexical": ["b", "a"]}
    assert fuse(legs, weights={"dense": 2.0})[0][0] == "a"
    assert fuse(legs, weights={"lexical": 2.0})[0][0] == "b"
    assert [i for i, _, _ in fuse(legs, weights={"lexical": 0})] == ["a", "b"]


@pytest.mark.parametrize("weights", [{"sparse": 1}, {"dense": -1}, {"dense": "x"},
                                     {"dense": 0, "lexical": 0}])
def test_bad_weights_are_config_errors(weights):
    with pytest.raises(ConfigError):
        check_weights(weights)
