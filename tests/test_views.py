"""Views (chunkwise.chunking.views) and parent sections: what the embedder sees of code and table
chunks, on the real fixtures, with the chunk contract holding on the viewed embed text."""

from __future__ import annotations

import json

import pytest

from chunkwise.chunking.api import Chunker, parse_file
from chunkwise.errors import ConfigError
from chunkwise.chunking.views import split_identifiers, view_of_rows

from conftest import FIXTURES
from contract import check_contract


def test_split_identifiers():
    assert split_identifiers("get_max_batch_size(x)") == "get max batch size(x)"
    assert split_identifiers("class ReadingOrderModel:") == "class Reading Order Model:"
    # underscores only at the ends (dunder, private) are kept: nothing to split
    assert split_identifiers("HTTPException and _private and __init__") == \
        "HTTP Exception and _private and __init__"
    assert split_identifiers("_get_typed_signature") == "get typed signature"
    assert split_identifiers("plain words stay, x1 too") == "plain words stay, x1 too"


def test_view_of_rows_leaves_out_empty_and_usual_values():
    header = ["EPISODE", "TITLE", "CABIN", "LAKE_SHORE"]
    rows = [["S01E01", "A WALK", "0", "1"], ["S01E02", "", "1", "0"]]
    assert view_of_rows(rows, header, [None, None, "0", None]) == (
        "EPISODE: S01E01\nTITLE: A WALK\nLAKE SHORE: 1\n\n"
        "EPISODE: S01E02\nCABIN: 1\nLAKE SHORE: 0")


@pytest.mark.parametrize("name", ["538__trump-poll-tweets.csv", "fastapi__fastapi__background.py",
                                  "fastapi__fastapi__concurrency.py",
                                  "mkdocs-material__reference__data-tables.md"])
@pytest.mark.parametrize("views", ["default", "all", "table", "code-split", "code-name",
                                   "table-all", "code-doc"])
def test_contract_holds_with_views(name, views):
    chunker = Chunker(max_tokens=128, views=views)
    chunks = check_contract((FIXTURES / name).read_bytes(), name, chunker)
    for c in chunks:
        assert c.embed_text == (f"{c.context}\n\n{c.view or c.text}" if c.context
                                else c.view or c.text)
        assert "view" not in c.meta


def test_csv_rows_are_viewed_as_column_value_lines():
    path = FIXTURES / "538__trump-poll-tweets.csv"
    header = path.read_text(encoding="utf-8").split("\n", 1)[0]
    chunks = Chunker(views="table").chunk_file(path)  # rows grouped as they fit
    viewed = [c for c in chunks if c.view]
    assert len(viewed) >= 0.9 * len(chunks)
    for c in viewed:
        assert c.view.startswith("id: ") and "\ntext: " in c.view
        assert header not in c.context  # the labels carry the header
        rows = c.meta["row_end"] - c.meta["row_start"] + 1
        assert c.view.count("\n\nid: ") == rows - 1
    one = Chunker().chunk_file(path)  # the default: one row per chunk
    assert [(c.start, c.end) for c in one] == [
        (c.start, c.end) for c in Chunker(views="table-row").chunk_file(path)]
    assert all(c.meta["row_start"] == c.meta["row_end"] for c in one if c.view)
    assert len(one) > len(chunks)
    plain = Chunker(views="none").chunk_file(path)
    assert not any(c.view for c in plain)


def test_code_view_names_the_function_and_splits_identifiers():
    assert not any(c.view for c in Chunker().chunk_file(FIXTURES / "fastapi__fastapi__background.py"))
    chunks = Chunker(views="code").chunk_file(FIXTURES / "fastapi__fastapi__background.py")
    method = next(c for c in chunks if c.section_path[-1:] == ("add_task",))
    assert method.view.startswith("Background Tasks add task\n")
    assert "def add task(" in method.view and "def add_task(" in method.text
    assert method.tokens == Chunker(views="code").sizer.count(method.embed_text)


# a Python docstring after the header; doc comments above the header: Java's /** */, Go's
# //, Kotlin's KDoc, bash's #, C#'s /// <summary> (its tags left out)
@pytest.mark.parametrize("name", ["fastapi__fastapi__background.py",
                                  "gson__internal__LazilyParsedNumber.java", "cobra__args.go",
                                  "timber__Timber.kt", "nvm__install.sh",
                                  "Newtonsoft.Json__Linq__JRaw.cs"])
def test_code_doc_names_the_definition_a_chunk_starts_inside(name):
    """`code-doc`: a chunk that starts inside a documented definition has, after its
    context, a line with the definition's qualified name and the first line of its
    documentation; the text, the spans and every other chunk are as without it."""
    path = FIXTURES / name
    plain = Chunker(max_tokens=128, views="table-row").chunk_file(path)
    doc = Chunker(max_tokens=128).chunk_file(path)  # the default has it
    assert [(c.start, c.end) for c in doc] == [
        (c.start, c.end) for c in Chunker(max_tokens=128, views="table-row,code-doc").chunk_file(path)]
    assert [(c.start, c.end, c.text) for c in plain] == [(c.start, c.end, c.text) for c in doc]
    changed = [(a, b) for a, b in zip(plain, doc) if a.context != b.context]
    assert changed, name
    text = parse_file(path).text
    for a, b in changed:
        assert b.context.startswith(a.context + "\n") or not a.context
        added = b.context.split("\n")[-1]
        mark = b.context.split(" ", 1)[0]  # the line comment of the file's own line
        assert mark in ("#", "//") and added.startswith(mark + " ")
        symbol, _, first = added[len(mark) + 1:].partition(": ")
        # the doc line is the file's own words (C#'s tags left out)
        assert first and all(w in text for w in first.split()), (name, added)
        assert symbol.split(".")[-1] in text
        assert not b.view and b.tokens <= 128  # the text embeds as it is
        assert b.tokens == Chunker(max_tokens=128).sizer.count(b.embed_text)
        assert a.id != b.id  # the context is part of the chunk
    for a, b in zip(plain, doc):  # a chunk at a definition's start carries its doc itself
        if a.context == b.context:
            assert not b.view


def test_views_none_leaves_text_formats_as_they_were():
    """Only the embed text changes: spans are those of views=none except where table rows
    were cut to fit their view."""
    for name in ("fastapi__features.md", "alice-in-wonderland.txt", "httpd__mod__mod_dir.html"):
        a = Chunker().chunk_file(FIXTURES / name)
        b = Chunker(views="none").chunk_file(FIXTURES / name)
        assert [(c.start, c.end, c.context) for c in a] == [(c.start, c.end, c.context) for c in b]


def test_unknown_view_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown view"):
        Chunker(views="code,pictures")


def test_every_chunk_records_its_parent_section():
    for name in ("fastapi__features.md", "fastapi__fastapi__background.py",
                 "538__trump-poll-tweets.csv", "latex-two-column-sample.pdf"):
        doc = parse_file(FIXTURES / name)
        chunks = Chunker(max_tokens=64).chunk_document(doc)
        by_id: dict[str, tuple[int, int]] = {}
        for c in chunks:
            pid, start, end, path = c.parent
            assert start <= c.start and c.end <= end
            assert doc.text[start:c.start].strip() or doc.text[c.end:end].strip()
            assert by_id.setdefault(pid, (start, end)) == (start, end)
            d = c.to_dict()["parent"]
            assert d == {"id": pid, "start": start, "end": end, "section_path": list(path)}
            json.dumps(d)
        # small chunks share sections: a section holds several of them
        assert len(by_id) < len(chunks)


def test_expand_rule_and_parent_sections():
    from chunkwise.chroma.expand import Member, expand, parent_sections

    members = [Member(0, 10, 50, "a"), Member(11, 20, 60, "b"), Member(21, 30, 70, "c"),
               Member(31, 40, 80, "d")]
    e = expand(members, 1, 200)  # the hit, then next, then previous while they fit
    assert (e.start, e.end, e.tokens, e.text, e.chunks) == (0, 30, 180, "a\nb\nc", 3)
    assert expand(members, 3, 10).chunks == 1  # the hit alone when nothing else fits
    doc_chunks = Chunker(max_tokens=64).chunk_file(FIXTURES / "fastapi__features.md")
    sections = parent_sections(doc_chunks)
    assert sum(len(s.children) for s in sections) == len(doc_chunks)
    ids = {c.id: c for c in doc_chunks}
    for s in sections:
        assert all(s.start <= ids[k].start and ids[k].end <= s.end for k in s.children)


def test_query_expand_section_returns_the_section_around_the_hit(tmp_path):
    """Real Chroma; the embedder does not matter to expansion (a mock one)."""
    from llama_index.core.embeddings import MockEmbedding

    from chunkwise.chroma.queries import expand_hits, iter_collection, query
    from chunkwise.pipeline.runner import ingest

    src = tmp_path / "docs"
    src.mkdir()
    (src / "features.md").write_bytes((FIXTURES / "fastapi__features.md").read_bytes())
    emb = MockEmbedding(embed_dim=16)
    db = tmp_path / "db"
    ingest([src], db_path=db, max_tokens=64, embedder=emb)
    text = parse_file(src / "features.md").text
    stored = list(iter_collection(db_path=db))
    assert all({"parent_id", "parent_start", "parent_end", "parent_path"} <= set(m)
               for _, _, m in stored)
    hits = query("editor support and autocompletion", k=10, db_path=db, embedder=emb)
    wide = expand_hits(hits, tokens=200, db_path=db)
    grew = 0
    for h, w in zip(hits, wide):
        m, x = h.metadata, w.metadata
        assert m["parent_start"] <= x["start"] <= m["start"] and m["end"] <= x["end"] <= m["parent_end"]
        assert x["tokens"] <= max(200, m["tokens"])
        # the stored chunks of the section, joined: every chunk text is an exact slice
        assert "".join(w.text.split()) == "".join(text[x["start"]:x["end"]].split())
        grew += x["expanded"] > 1
    assert grew


# -- the views package: a registry of classes, the parsers' facts ---------------------------
def test_every_declared_view_is_registered_for_the_kind_declared():
    from chunkwise.chunking.api import parse_file as parse
    from chunkwise.chunking.views import DECLARED, VIEWS

    seen = set()
    for name in ["538__trump-poll-tweets.csv", "fastapi__fastapi__background.py",
                 "mkdocs-material__reference__data-tables.md"]:
        for kind, view in parse(FIXTURES / name).views:
            assert view in DECLARED and VIEWS[view].name == view
            assert kind == "*" or not VIEWS[view].kinds or kind in VIEWS[view].kinds
            seen.add(view)
    assert seen == set(DECLARED)
    for view in VIEWS.values():  # every variant renders a declared view
        assert view.stands_for in DECLARED


def test_a_new_view_is_one_class_and_one_row(monkeypatch):
    from chunkwise.chunking import views as views_module
    from chunkwise.chunking.views import BaseView

    class Shout(BaseView):
        name, stands_for, about = "code-shout", "code", "the text in capitals"

        def render(self, piece, doc, tree, within=None):
            return piece.context, doc.text[piece.start:piece.end].upper()

    monkeypatch.setitem(views_module.VIEWS, "code-shout", Shout())
    path = FIXTURES / "fastapi__fastapi__background.py"
    chunks = Chunker(views="code-shout").chunk_file(path)
    assert chunks and all(c.view == c.text.upper() for c in chunks if c.text != c.text.upper())
    assert all(c.tokens == Chunker().sizer.count(c.embed_text) for c in chunks)


def test_parsers_write_table_and_doc_line_facts_kept_out_of_chunks():
    from chunkwise.chunking.api import parse_file as parse
    from chunkwise.model import VIEW_FACTS

    csv_doc = parse(FIXTURES / "538__trump-poll-tweets.csv")
    table = next(s for s in csv_doc.sections if s.kind == "table")
    facts = dict(table.meta)
    assert facts["delimiter"] == ","
    assert facts["header_cells"] == ("id", "created_at", "text")
    md = parse(FIXTURES / "mkdocs-material__reference__data-tables.md")
    tables = [dict(s.meta) for s in md.sections if s.kind == "table"]
    assert tables and all(t["delimiter"] == "|" and t["header_cells"] for t in tables)
    py = parse(FIXTURES / "fastapi__fastapi__background.py")
    defs = [dict(s.meta) for s in py.sections if s.kind in ("class", "method", "function")]
    assert defs and all(d["line_comment"] == "#" and d["docstrings"] is True for d in defs)
    swift = parse(FIXTURES / "Alamofire__RedirectHandler.swift")  # `//` comments: nothing said
    assert not any(set(VIEW_FACTS) & set(dict(s.meta)) for s in swift.sections)
    for name in ["538__trump-poll-tweets.csv", "fastapi__fastapi__background.py",
                 "mkdocs-material__reference__data-tables.md"]:
        for c in Chunker().chunk_file(FIXTURES / name):
            assert not set(VIEW_FACTS) & (set(c.meta) - {"delimiter"})
            assert c.meta.get("delimiter") == dict(parse(FIXTURES / name).meta).get("delimiter")


def test_no_module_of_the_chunking_room_names_a_format():
    import re
    from pathlib import Path

    import chunkwise.chunking
    from chunkwise.parsers import MODULES

    room = Path(chunkwise.chunking.__file__).parent
    # ("text" is a word too: the API's `chunk_text` defaults to it, and an LLM answer's key)
    names = re.compile("|".join(f'"{re.escape(f)}"' for f in MODULES if f != "text"))
    found = [f"{p.relative_to(room)}:{n}" for p in sorted(room.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").split("\n"), 1)
             if names.search(line)]
    assert found == []
