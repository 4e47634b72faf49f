"""The table-rows policy (`Chunker(table_rows=...)`, `--table-rows`): how the `table-row` view
packs a table's rows. On the real fixtures (a CSV of 545 rows, a Markdown page of small
tables, a spreadsheet) and, where it is there, the shared corpus's largest Markdown table page,
with the real tokenizers: grouped chunks hold whole rows, as many as fit, each row labelled
with its columns, with exact offsets; `auto` chooses per table as documented; the policy is
part of the fingerprint (so stored files are chunked again) and of the CLI."""

from __future__ import annotations

import json

import pytest

from chunkwise.chunking.api import Chunker, parse_file
from chunkwise.chunking.structure import build_tree
from chunkwise.chunking.views import AUTO_ROWS, TABLE_ROWS, rows_policy
from chunkwise.errors import ConfigError
from chunkwise.pipeline.stages import options_fingerprint
from chunkwise.text.splitting import trim

from conftest import CORPUS, FIXTURES
from contract import check_contract
from test_cli_usage import cli

CSV = FIXTURES / "538__trump-poll-tweets.csv"
MARKDOWN = FIXTURES / "mkdocs-material__reference__data-tables.md"
XLSX = FIXTURES / "docling__xlsx_06_edge_cases_.xlsx"
PUBLIC_APIS = CORPUS / "markdown" / "public-apis__README.md"


def _tables(path):
    """The document and its tables: (table node, its rows' trimmed spans, header node)."""
    doc = parse_file(path)
    out = []

    def walk(node):
        if node.kind == "table":
            rows = [trim(doc.text, c.start, c.end) for c in node.children if c.kind == "row"]
            out.append((node, rows, next((c for c in node.children if c.kind == "header"),
                                         None)))
        for c in node.children:
            walk(c)

    walk(build_tree(doc))
    return doc, out


def _table_of(chunk, tables):
    return next((t for t in tables if t[0].start <= chunk.start and chunk.end <= t[0].end),
                None)


@pytest.mark.parametrize("path", [CSV, MARKDOWN, XLSX], ids=lambda p: p.suffix)
@pytest.mark.parametrize("policy", ["grouped", "auto"])
@pytest.mark.parametrize("budget", [64, 256])
def test_contract_holds_for_every_policy(path, policy, budget):
    chunks = check_contract(path.read_bytes(), path.name,
                            Chunker(max_tokens=budget, table_rows=policy))
    assert all(c.tokens <= budget for c in chunks)


@pytest.mark.parametrize("path,tokenizer,budget", [(CSV, "minilm", 256), (CSV, "cl100k_base", 512),
                                                   (MARKDOWN, "minilm", 48),
                                                   (XLSX, "minilm", 64),
                                                   (PUBLIC_APIS, "cl100k_base", 512)],
                         ids=["csv-256", "csv-cl512", "md-48", "xlsx-64", "public-apis-cl512"])
def test_grouped_chunks_hold_whole_rows_labelled_and_as_many_as_fit(path, tokenizer, budget):
    if not path.exists():
        pytest.skip(f"shared corpus not present ({path})")
    chunker = Chunker(max_tokens=budget, tokenizer=tokenizer, table_rows="grouped")
    doc, tables = _tables(path)
    chunks = chunker.chunk_document(doc)
    count = chunker.sizer.count
    viewed = [c for c in chunks if c.view and _table_of(c, tables)]
    assert viewed
    several = 0
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text  # exact offsets
        table = _table_of(c, tables)
        if table is None or not c.view:
            continue
        node, rows, header = table
        starts = {a for a, _ in rows} | {trim(doc.text, node.start, node.end)[0]}
        if header is not None:
            starts.add(trim(doc.text, header.start, header.end)[0])
        assert c.start in starts and c.end in {b for _, b in rows}  # never a row cut
        held = [r for r in rows if c.start <= r[0] and r[1] <= c.end]
        blocks = c.view.split("\n\n")
        assert len(blocks) <= len(held)  # a row whose cells are all usual shows nothing
        several += len(held) > 1
        for block in blocks:  # every row labelled with its columns
            assert all(": " in line for line in block.split("\n"))
        assert count(c.embed_text) == c.tokens <= budget
    assert several  # rows are grouped
    # as many as fit: the next chunk's first row added to a chunk would not fit
    for a, b in zip(viewed, viewed[1:]):
        if _table_of(a, tables) is _table_of(b, tables) and \
                not doc.text[a.end:b.start].strip():
            merged = f"{a.embed_text}\n\n{b.view.split(chr(10) * 2)[0]}"
            assert count(merged) > budget


def test_grouped_embeds_fewer_texts_than_one_row_each_and_row_is_todays_default():
    row = Chunker().chunk_file(CSV)
    assert [(c.start, c.end, c.view, c.context, c.tokens) for c in row] == \
        [(c.start, c.end, c.view, c.context, c.tokens)
         for c in Chunker(table_rows="row").chunk_file(CSV)]
    grouped = Chunker(table_rows="grouped").chunk_file(CSV)
    assert len(grouped) < len(row) / 2
    # the same rows, viewed the same way: grouped views are row views joined
    assert "\n\n".join(c.view for c in grouped if c.view) == \
        "\n\n".join(c.view for c in row if c.view)


def test_auto_picks_one_row_per_chunk_up_to_auto_rows_and_groups_above():
    assert rows_policy(AUTO_ROWS) == "row" and rows_policy(AUTO_ROWS + 1) == "grouped"
    paths = [CSV, MARKDOWN, XLSX] + ([PUBLIC_APIS] if PUBLIC_APIS.exists() else [])
    seen = set()
    for path in paths:
        doc, tables = _tables(path)
        chunks = Chunker(table_rows="auto").chunk_document(doc)
        for node, rows, _ in tables:
            inside = [c for c in chunks if node.start <= c.start and c.end <= node.end and c.view]
            if not inside:
                continue
            held = [sum(1 for r in rows if c.start <= r[0] and r[1] <= c.end) for c in inside]
            policy = rows_policy(len(rows))
            seen.add(policy)
            if policy == "row":
                assert max(held) == 1, (path.name, len(rows))
            else:
                assert max(held) > 1, (path.name, len(rows))
    assert seen == {"row", "grouped"}  # the CSV (545 rows) is grouped, the small tables not


def test_the_policy_is_in_the_fingerprint_so_stored_files_are_chunked_again():
    prints = {p: Chunker(table_rows=p).fingerprint for p in TABLE_ROWS}
    assert len(set(prints.values())) == len(TABLE_ROWS)
    assert Chunker().fingerprint == prints[Chunker().table_rows]
    stored = {p: options_fingerprint(Chunker(table_rows=p), None, "hash") for p in TABLE_ROWS}
    assert len(set(stored.values())) == len(TABLE_ROWS)
    # and a pickled chunker (the workers') keeps it
    import pickle

    assert pickle.loads(pickle.dumps(Chunker(table_rows="grouped"))).fingerprint == \
        prints["grouped"]


def test_an_unknown_policy_is_a_config_error():
    with pytest.raises(ConfigError, match="table_rows"):
        Chunker(table_rows="rows")


def test_cli_table_rows(tmp_path):
    out = {}
    for policy in TABLE_ROWS:
        p = cli("chunk", CSV, "--jsonl", "--table-rows", policy)
        assert p.returncode == 0, p.stderr
        out[policy] = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(out["grouped"]) < len(out["row"])
    assert len(out["auto"]) == len(out["grouped"])  # 545 rows > AUTO_ROWS
    bad = cli("chunk", CSV, "--table-rows", "rows")
    assert bad.returncode == 2 and "--table-rows" in bad.stderr
    for command in ("chunk", "ingest", "inspect"):
        assert "--table-rows" in cli(command, "--help").stdout
    # the dry run says what each policy would embed
    dry = {}
    for policy in ("row", "grouped"):
        p = cli("ingest", CSV, "--db", tmp_path / "db", "--dry-run", "--json", "--no-progress",
                "--table-rows", policy)
        assert p.returncode == 0, p.stderr
        dry[policy] = json.loads(p.stdout)["formats"]["csv"]["texts"]
    assert dry == {"row": len(out["row"]), "grouped": len(out["grouped"])}
