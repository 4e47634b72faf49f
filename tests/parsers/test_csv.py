"""CSV parser and chunking: exact record spans (checked against `csv.reader`), the header as
context, row numbers, dialects, wide tables, and bad or hostile input."""

from __future__ import annotations

import csv
import io
import json
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from chunkwise import Chunker, ParseError
from chunkwise.parsers import csv as csv_parser

from conftest import CHUNKWISE_CLI, FIXTURES, corpus_files, run_measured
from contract import check_contract


def _parse(data: bytes | str, source: str = "t.csv"):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return csv_parser.parse(data, source=source)


def _rows(doc):
    return sorted((s for s in doc.sections if s.kind == "row"), key=lambda s: s.start)


def _reader_records(text: str, delimiter: str = ",") -> list[tuple[int, int]]:
    """(start, end) of each non-blank record as `csv.reader` reads the canonical text: its
    line counter says where every record ends."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=False)
    out, line = [], 0
    for row in reader:
        first, line = line, reader.line_num
        start = starts[first]
        end = starts[line] - 1 if line < len(starts) else len(text)
        if row and text[start:end].strip():
            out.append((start, end))
    return out


# -- records and sections ---------------------------------------------------------------------
def test_rows_header_context_and_meta():
    doc = _parse('id,text\n1,"hello, world"\n2,"two\nlines"\n\n3,plain\n', "notes.csv")
    assert doc.format == "csv" and doc.title == "notes.csv"
    (table,) = [s for s in doc.sections if s.kind == "table"]
    assert table.context == "id,text" and table.path == ("notes.csv",)
    (header,) = [s for s in doc.sections if s.kind == "header"]
    assert doc.text[header.start:header.end] == "id,text"
    rows = _rows(doc)
    assert [doc.text[r.start:r.end] for r in rows] == ['1,"hello, world"', '2,"two\nlines"',
                                                      "3,plain"]
    assert [dict(r.meta) for r in rows][1] == {"row": 2, "row_start": 2, "row_end": 2}
    assert dict(doc.meta) == {"header": "detected", "columns": 2, "delimiter": ","}


def test_synthesised_header_when_first_row_is_data():
    doc = _parse("1,2.5,3\n4,5.5,6\n7,8.5,9\n")
    (table,) = [s for s in doc.sections if s.kind == "table"]
    assert table.context == "column_1,column_2,column_3"
    assert dict(doc.meta)["header"] == "synthesised"
    assert len(_rows(doc)) == 3 and not [s for s in doc.sections if s.kind == "header"]


@pytest.mark.parametrize("data,source,delimiter", [
    ("name;value\nfoo;1,5\nbar;2,5\n", "s.csv", ";"),
    ("name\tvalue, with comma\nfoo\t1\nbar\t2\n", "s.tsv", "\t"),
    ("name\tvalue\nfoo\t1,2\nbar\t2,3\n", "s.csv", "\t"),
    ("a|b|c\n1|2|3\n4|5|6\n", "p.csv", "|"),
    ("sep=;\nname;value\nfoo;1\nbar;2\n", "x.csv", ";"),
])
def test_dialects(data, source, delimiter):
    doc = _parse(data, source)
    rows = _rows(doc)
    assert len(rows) == 2
    assert all(doc.text[r.start:r.end].count(delimiter) >= 1 for r in rows)
    assert dict(doc.meta)["columns"] >= 2


def test_bom_crlf_and_quoted_newlines_are_normalised():
    doc = _parse(b'\xef\xbb\xbfa,b\r\n1,"x\r\ny"\r\n2,z\r\n')
    assert doc.text == 'a,b\n1,"x\ny"\n2,z\n'
    assert [doc.text[r.start:r.end] for r in _rows(doc)] == ['1,"x\ny"', "2,z"]


_cell = st.text(st.one_of(st.characters(blacklist_categories=("Cs", "Cc")),
                          st.sampled_from(['"', ",", "\n", "\t", " ", "'"])), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_cell, min_size=2, max_size=5), min_size=1, max_size=12))
@example([["", "|", "\n"], ["", "", "", ""]])  # a quoted newline once made "|" look consistent
@example([["", "", "", "\n|"], ["", "", ""], ["", "", "", "", "\n|"]])  # and then again
@example([["", "'"], ["", "'"]])  # `'` once taken for the quote, two rows read as one
def test_records_agree_with_csv_reader(table):
    """Any table csv.writer writes (quotes, delimiters, newlines in cells) is read back with
    the same record spans and cell values as csv.reader."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([["head", "er"], *table])
    doc = _parse(out.getvalue())
    dialect = csv_parser._Dialect()
    spans = [(s.start, s.end) for s in _rows(doc)]
    records = list(csv_parser._records(doc.text, dialect))
    assert records == _reader_records(doc.text)
    assert spans == records[1:]
    assert not doc.warnings
    for (a, b) in records:
        cells = [doc.text[x:y] for x, y in csv_parser._cells(doc.text, a, b, dialect)]
        assert len(cells) == len(next(csv.reader([doc.text[a:b]])))


def test_wide_rows_list_cells_and_split_between_them():
    header = ",".join(f"column_name_{i}" for i in range(400))
    row = ",".join(f"value {i}" for i in range(400))
    data = f"{header}\n{row}\n{row}\n"
    doc = _parse(data, "wide.csv")
    cells = [s for s in doc.sections if s.kind == "cell"]
    assert len(cells) == 3 * 400
    assert doc.text[cells[0].start:cells[0].end] == "column_name_0,"  # delimiter included
    chunks = check_contract(data.encode(), "wide.csv", Chunker(max_tokens=64))
    assert all(not c.text.startswith(",") for c in chunks)
    assert all(c.text.endswith((",", "399")) for c in chunks)  # whole cells only
    assert {c.meta["row_start"] for c in chunks if "row_start" in c.meta} == {1, 2}


def _field_bounds(text: str, dialect=None) -> tuple[set[int], set[int]]:
    """(starts, ends) of every field of every record, as `_cells` reads them; an end is
    taken before and after the delimiter that follows the field."""
    dialect = dialect or csv_parser._Dialect()
    starts, ends = set(), set()
    for a, b in csv_parser._records(text, dialect):
        for x, y in csv_parser._cells(text, a, b, dialect):
            starts.add(x)
            ends.update((y, y + 1))
    return starts, ends


def _assert_cut_between_fields(text: str, chunks, dialect=None) -> None:
    starts, ends = _field_bounds(text, dialect)
    inside = [c for c in chunks if c.start not in starts or c.end not in ends]
    assert not inside, f"{len(inside)} chunks cut inside a field, first {inside[0].text!r}"


def test_a_row_that_does_not_fit_is_cut_between_fields():
    """Rows too short for cell sections are cut between fields too (the fitter once cut
    them at words), and a quoted delimiter or newline is not a field boundary."""
    header = ",".join(f"c{i}" for i in range(60))
    row = ",".join(f'"word {i}, more\nand {i}"' if i % 3 == 0 else f"word {i} more"
                   for i in range(60))
    assert len(row) < csv_parser._CELL_ROW
    data = f"{header}\n{row}\n{row}\n".encode()
    assert not [s for s in _parse(data).sections if s.kind == "cell"]
    chunks = check_contract(data, "t.csv", Chunker(max_tokens=48))
    assert len(chunks) > 6
    _assert_cut_between_fields(_parse(data).text, chunks)


def test_a_header_alone_is_cut_between_fields():
    """A one-line file of labels is a table with a header and no rows: its one section is
    cut between fields as a row is."""
    data = ",".join(f"label{i}" for i in range(3000)).encode()
    doc = _parse(data)
    assert [s.kind for s in doc.sections] == ["table"]
    chunks = check_contract(data, "t.csv", Chunker(max_tokens=64))
    assert len(chunks) > 10
    _assert_cut_between_fields(doc.text, chunks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(_cell, min_size=1, max_size=6), min_size=1, max_size=6))
def test_field_cuts_are_the_cells_ends(table):
    """The rows' splitter cuts after the delimiter that ends each field `_cells` finds
    (a quoted delimiter or newline ends nothing), one at a time or as a list."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(table)
    text = csv_parser.parse(out.getvalue().encode(), source="t.csv").text
    dialect = csv_parser._Dialect()
    cuts = csv_parser._FieldCuts(dialect)
    for a, b in csv_parser._records(text, dialect):
        cells = csv_parser._cells(text, a, b, dialect)
        expected = [y + 1 for _, y in cells[:-1] if y + 1 < b]
        assert list(cuts.iter(text, a, b)) == cuts(text, a, b) == expected


def test_field_cuts_go_on_past_a_line_attached_before_the_header():
    text = "sep=;\nname;value\n1;2\n"
    cuts = csv_parser._FieldCuts(csv_parser._Dialect(delimiter=";"))
    assert cuts(text, 0, 16) == [5, 6, 11]


def test_past_max_cells_rows_are_cut_where_cells_cut_them(monkeypatch):
    """A document with more cells in its long rows than `_MAX_CELLS` lists none (a section
    per field costs the fitter too much on a line of millions): its rows are cut between
    fields all the same, into the same chunks, only without the `cell` kind and columns."""
    header = ",".join(f"column_name_{i}" for i in range(400))
    row = ",".join(f"value {i}" for i in range(400))
    data = f"{header}\n{row}\n{row}\n".encode()
    chunker = Chunker(max_tokens=64)
    with_cells = chunker.chunk_document(_parse(data, "wide.csv"))
    monkeypatch.setattr(csv_parser, "_MAX_CELLS", 1000)  # the first two rows' worth
    doc = _parse(data, "wide.csv")
    assert not [s for s in doc.sections if s.kind == "cell"]
    without = check_contract(data, "wide.csv", chunker)
    assert [(c.start, c.end, c.tokens, c.context) for c in without] == \
        [(c.start, c.end, c.tokens, c.context) for c in with_cells]
    assert all("cell" not in c.kinds and "column_start" not in c.meta for c in without)


def test_an_overlong_header_is_no_context():
    """A header that could never fit beside a row is not the table's context (nor is a
    synthesised one): the fitter would drop it anyway, after counting it for every chunk."""
    wide = ",".join(f"name{i}" for i in range(csv_parser._MAX_CONTEXT // 5))
    doc = _parse(f"{wide}\n{wide.replace('name', 'x')}\n")
    (table,) = [s for s in doc.sections if s.kind == "table"]
    assert dict(doc.meta)["header"] == "detected" and table.context == ""
    numbers = ",".join(str(i) for i in range(csv_parser._MAX_CONTEXT // 4))
    doc = _parse(f"{numbers}\n{numbers}\n")
    (table,) = [s for s in doc.sections if s.kind == "table"]
    assert dict(doc.meta)["header"] == "synthesised" and table.context == ""
    assert _parse("1,2\n3,4\n").sections[0].context == "column_1,column_2"


@pytest.mark.slow
def test_a_row_of_300k_fields_is_cut_between_fields():
    """One row of 300,000 fields (1.9 MB, over the fitter's window for long leaves) after a
    header: fast, and every chunk starts and ends at a field."""
    row = ",".join(f'"{i}, a"' if i % 1000 == 0 else f"v{i % 977}" for i in range(300_000))
    data = f"id,name,value\n{row}".encode()
    chunker = Chunker()
    t = time.process_time()
    doc = _parse(data)
    chunks = chunker.chunk_document(doc)
    assert time.process_time() - t < 30  # CPU s: 3 on a quiet 2-core box; 60 before
    assert all(c.tokens <= 256 for c in chunks) and len(chunks) > 1000
    assert chunks[-1].end == len(doc.text)
    _assert_cut_between_fields(doc.text, chunks)


@pytest.mark.slow
def test_one_line_of_two_million_fields_in_bounded_time_and_memory(tmp_path):
    """A 12 MB CSV of one line and no newline (two million short fields) through the CLI:
    well under a minute and 1 GB (it took 554 s and 5 GB when every field was a section
    and the synthesised header, 25 MB, was the context), cut only between fields."""
    path = tmp_path / "one-line.csv"
    words = ("alpha", "7", "beta", "3.5", "gamma", "x")
    path.write_text(",".join(f"{words[i % 6]}{i % 97}" for i in range(2_000_000)))
    assert path.stat().st_size > 11_000_000
    run = run_measured([*CHUNKWISE_CLI, "chunk", str(path), "--jsonl"], tmp_path / "out.jsonl",
                       timeout=150)
    assert run.returncode == 0, run.stderr
    assert run.cpu_seconds < 120, run.cpu_seconds  # ~15 s on a quiet 2-core box
    assert run.peak_rss < 1 << 30, run.peak_rss
    text = path.read_text()
    ends = 0
    with open(tmp_path / "out.jsonl") as out:
        for line in out:
            c = json.loads(line)
            assert c["tokens"] <= 256
            assert c["start"] == 0 or text[c["start"] - 1] == ","
            assert c["end"] == len(text) or text[c["end"] - 1] == ","
            ends = c["end"]
    assert ends == len(text)


# -- chunks over real tables ----------------------------------------------------------------------
def _check_table_chunks(path, chunker: Chunker) -> list:
    data = path.read_bytes()
    chunks = check_contract(data, path.name, chunker)
    doc = csv_parser.parse(data, source=path.name)
    text = doc.text
    delimiter = csv_parser._sniff(text, path.name).delimiter
    records = _reader_records(text, delimiter)
    starts = {a: k for k, (a, _) in enumerate(records)}
    ends = {b: k for k, (_, b) in enumerate(records)}
    header = text[records[0][0]:records[0][1]]
    assert dict(doc.meta)["header"] == "detected"
    for c in chunks:
        if c.start in starts and c.end in ends:  # a run of whole records
            first, last = starts[c.start], ends[c.end]
            if last == 0:  # the header alone
                assert "row_start" not in c.meta
            else:
                assert c.meta["row_start"] == max(first, 1) and c.meta["row_end"] == last
        else:  # a piece of one record too big for the budget
            (k,) = [k for k, (a, b) in enumerate(records) if a <= c.start and c.end <= b]
            a, b = records[k]
            whole = f"{path.name}\n{header}\n\n{text[a:b]}" if k else text[a:b]
            assert chunker.sizer.count(whole) > chunker.max_tokens
            assert c.meta.get("row_start", 0) == k
        if c.view:  # column: value lines (chunkwise.chunking.views) name the columns themselves
            assert c.context == path.name
        elif c.start > records[0][0]:
            # the header, or as much of it as the context limit (half the budget) allows
            assert c.context.startswith(path.name)
            assert header.startswith(c.context[len(path.name) + 1:])
    return chunks


def test_fixture_rows_never_split_and_context_is_header():
    path = FIXTURES / "538__trump-poll-tweets.csv"
    plain = _check_table_chunks(path, Chunker(max_tokens=128, views="none"))
    assert all(c.context == "538__trump-poll-tweets.csv\nid,created_at,text"
               for c in plain[1:])
    chunks = _check_table_chunks(path, Chunker(max_tokens=128))
    assert all(c.context == "538__trump-poll-tweets.csv" and c.view.startswith("id: ")
               and c.meta["row_start"] == c.meta["row_end"] for c in chunks[1:])
    assert chunks[0].text.startswith("id,created_at,text\n")
    multi = [c for c in chunks if '"Great new poll - thank you!\n' in c.text]
    assert multi  # the embedded newline stayed inside its chunk


@pytest.mark.corpus
@pytest.mark.parametrize("tokenizer,budget", [("minilm", 256), ("cl100k_base", 512)])
def test_corpus_tables(tokenizer, budget):
    chunker = Chunker(tokenizer=tokenizer, max_tokens=budget)
    for path in corpus_files("csv"):
        if path.stat().st_size > 500_000 and tokenizer != "minilm":
            continue  # keep the file fast: the big ones are covered once
        _check_table_chunks(path, chunker)


# -- bad and hostile input ----------------------------------------------------------------------
def test_ragged_rows():
    doc = _parse("a,b,c\n1,2\n3,4,5,6\n7\n")
    assert len(_rows(doc)) == 3
    check_contract(b"a,b,c\n1,2\n3,4,5,6\n7\n", "r.csv", Chunker(max_tokens=16))


def test_nul_bytes():
    few = b"a,b\n" + b"1,2\n" * 5000 + b"x\x00y,3\n"
    doc = _parse(few)
    assert "\x00" not in doc.text and any("NUL" in w for w in doc.warnings)
    with pytest.raises(ParseError):
        _parse(b"a,b\n" + b"1,2\n" * 3000 + b"\x00" * 500)
    with pytest.raises(ParseError):
        _parse(b"a,\x00b\n1,2\n")


def test_mixed_encodings_decode_with_warning():
    data = "a,b\nnaïve,1\n".encode() + "café,2\n".encode("latin-1")
    doc = _parse(data)
    assert doc.warnings and "café" in doc.text and len(_rows(doc)) == 2


def test_unterminated_quote_runs_to_the_end_like_csv_reader():
    doc = _parse('a,b\n1,"abc\n2,3\n4,5\n')
    assert [doc.text[r.start:r.end] for r in _rows(doc)] == ['1,"abc\n2,3\n4,5\n']
    assert not doc.warnings


@pytest.mark.parametrize("data", [b"", b"\n\n  \n"])
def test_empty_files(data):
    doc = _parse(data)
    assert doc.sections == ()
    assert Chunker().chunk_document(doc) == []


def test_header_only():
    doc = _parse("a,b,c\n")
    assert [s.kind for s in doc.sections] == ["table"]


def test_huge_cell_and_many_quoted_lines_are_bounded():
    big = b'a,b\n1,"' + b"word " * 2_000_000 + b'"\n2,3\n'
    t = time.process_time()
    doc = _parse(big)
    assert time.process_time() - t < 5
    assert len(_rows(doc)) == 2 and not doc.warnings  # csv.reader's field limit is not fatal
    quoted = b'a,b,c\n' + b'x,"b""c""d",e\n' * 200_000
    t = time.process_time()
    doc = _parse(quoted)
    assert time.process_time() - t < 10 and len(_rows(doc)) == 200_000
    t = time.process_time()
    doc = _parse(b'"a' * 200_000)  # quotes everywhere, never closed
    assert time.process_time() - t < 5


def test_a_cell_over_the_field_limit_is_not_copied_for_the_header_vote(monkeypatch):
    """csv.Sniffer.has_header copies its sample whole (as a StringIO, four bytes a
    character) and would fail on a field over csv's limit: it is not asked then, and the
    header is still found (its labels are not data-like)."""
    samples: list[int] = []
    real = csv_parser._FixedSniffer.has_header

    def spy(self, sample):
        samples.append(len(sample))
        return real(self, sample)

    monkeypatch.setattr(csv_parser._FixedSniffer, "has_header", spy)
    doc = _parse("name,notes\n1," + "x" * (csv.field_size_limit() + 1) + "\n2,y\n")
    assert samples == []
    assert dict(doc.meta)["header"] == "detected" and len(_rows(doc)) == 2
    _parse("name,notes\n1,x\n2,y\n")
    assert len(samples) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(st.sampled_from('ab,"\n\r '), max_size=8), min_size=1, max_size=6),
       st.sampled_from(["", "\n", "\n\n"]))
def test_header_vote_reads_the_lines_a_stringio_of_the_sample_gives(rows, end):
    """`_readable` reads the records a line at a time: the lines of the sample as
    has_header reads them, so it fails exactly when has_header's reading would."""
    text = "\n".join(rows) + end
    dialect = csv_parser._Dialect()
    records = list(csv_parser._records(text, dialect))[:21]
    sample = "\n".join(text[s:e] for s, e in records)
    assert list(csv_parser._joined_lines(text, records)) == list(io.StringIO(sample))
