"""JSON, JSON Lines, YAML and TOML: exact entry spans (checked against `json.loads` and
`tomllib`), keys as the section path, objects and arrays whole when they fit, one record a
unit in JSON Lines, and bad or hostile input."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chunkwise import Chunker, ParseError
from chunkwise.parsers.data import json as json_parser
from chunkwise.parsers import detect_format
from chunkwise.parsers.data import jsonl
from chunkwise.parsers.data import toml
from chunkwise.parsers.data import yaml

from conftest import CHUNKWISE_CLI, FIXTURES, corpus_files, run_measured
from contract import check_contract

PACKAGE_JSON = FIXTURES / "expressjs__express__package.json"
PYPROJECT = FIXTURES / "pallets__flask__pyproject.toml"
WORKFLOW = FIXTURES / "pallets__flask__workflows-tests.yaml"
GSM8K = FIXTURES / "openai__gsm8k__test-first25.jsonl"
DATA_FIXTURES = (PACKAGE_JSON, PYPROJECT, WORKFLOW, GSM8K)
_ITEM = re.compile(r"(.*)\[(\d+)\]")



def _entries(doc):
    return sorted((s for s in doc.sections if s.kind == "entry"), key=lambda s: (s.start, -s.end))


def _resolve(value, path: tuple[str, ...]):
    """The value at a section path (file name first, then keys and `label[i]` items)."""
    for part in path[1:]:
        m = _ITEM.fullmatch(part)
        if isinstance(value, list) and m:
            value = value[int(m.group(2))]
        else:
            value = value[part]
    return value


def _entry_value(text: str, item: bool):
    """The value of an entry's text: an item `value[,]` or a member `"key": value[,]`."""
    body = text.rstrip().removesuffix(",")
    return json.loads(body) if item else next(iter(json.loads("{" + body + "}").values()))


def _check_entry(whole, doc, s) -> None:
    item = isinstance(_resolve(whole, s.path[:-1]), list)
    assert _entry_value(doc.text[s.start:s.end], item) == _resolve(whole, s.path), s.path


# -- JSON: spans and paths ---------------------------------------------------------------------
def test_json_entries_are_exact_members_and_items_with_key_paths():
    src = ('{"servers": [{"name": "a", "port": 1}, {"name": "b,\\"c", "tags": [1, 2]},'
           ' [1, [2]]], "x": null, "e": {}}')
    doc = json_parser.parse(src.encode(), source="conf/cfg.json")
    assert doc.format == "json" and doc.text == src
    paths = [s.path for s in _entries(doc)]
    assert ("cfg.json", "servers", "servers[1]", "name") in paths
    assert ("cfg.json", "servers", "servers[2]", "servers[2][1]") in paths
    # scalar items have no section: an array of numbers is one leaf
    assert ("cfg.json", "servers", "servers[1]", "tags", "tags[0]") not in paths
    whole = json.loads(src)
    for s in _entries(doc):
        _check_entry(whole, doc, s)
    root = [s for s in doc.sections if s.kind == "object"]
    assert [(r.start, r.end) for r in root] == [(0, len(src))]


def _count_entries(value) -> int:
    if isinstance(value, dict):
        return sum(1 + _count_entries(v) for v in value.values())
    if isinstance(value, list):
        return sum((1 if isinstance(v, (dict, list)) else 0) + _count_entries(v) for v in value)
    return 0


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(alphabet="abcxyz é,:[]\"\\", max_size=5).filter(
        lambda k: k == " ".join(k.split()) and not re.fullmatch(r".*\[\d+\]", k)), inner, max_size=4),
    max_leaves=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_JSON, indent=st.sampled_from([None, 1, 2]), ascii_only=st.booleans())
def test_json_entry_spans_hold_the_value_at_their_path(value, indent, ascii_only):
    src = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    doc = json_parser.parse(src.encode(), source="v.json")
    assert doc.text == src
    entries = _entries(doc)
    for s in entries:
        _check_entry(value, doc, s)
    # every member and every array item holding an object or array has its entry
    assert len(entries) == _count_entries(value)


@settings(max_examples=200, deadline=None)
@given(value=_JSON, at=st.integers(min_value=0), char=st.sampled_from(list('{}[]:,"\\ 0.-etn')))
def test_json_scanner_accepts_what_json_loads_accepts(value, at, char):
    """A mutated document: the scanner refuses it exactly when `json.loads` does."""
    src = json.dumps(value)
    k = at % (len(src) + 1)
    src = src[:k] + char + src[k + 1:]
    if not src.strip() or re.search(r"NaN|Infinity", src):
        return
    try:
        json.loads(src)
        valid = True
    except ValueError:
        valid = False
    try:
        json_parser.parse(src.encode(), source="m.json", jsonc=False)
        parsed = True
    except ParseError as e:
        parsed = False
        assert e.source == "m.json" and e.position is not None
    assert parsed == valid, src


@pytest.mark.parametrize("src, reason", [
    ('{"a": 1,}', "trailing comma"),
    ("[1, 2,]", "trailing comma"),
    ('{"a" 1}', "expected ':'"),
    ("[01]", "expected a JSON value, found '01]'"),
    ('{"a": tru}', "expected a JSON value"),
    ('[1]\n[2]', "JSON Lines?"),
    ('"abc', "invalid string"),
    ("{", "unexpected end"),
    ("NaN", "expected a JSON value"),
    ('{"a": "\x01"}', "invalid string"),
    ("// comment\n{}", "expected a JSON value"),
])
def test_invalid_json_is_a_parse_error_naming_file_reason_and_position(src, reason):
    with pytest.raises(ParseError) as e:
        json_parser.parse(src.encode(), source="bad.json", jsonc=False)
    assert e.value.source == "bad.json" and reason in e.value.reason
    assert e.value.position is not None
    jsonc = "trailing comma" in reason or src.startswith("//")
    if not jsonc:  # what a .json file gets: the same error
        with pytest.raises(ParseError):
            json_parser.parse(src.encode(), source="bad.json")


def test_json_with_comments_and_trailing_commas_is_chunked_as_text_with_a_warning():
    src = ('{\n  // compiler options\n  "compilerOptions": {\n    "strict": true, /* yes */\n'
           '    "target": "es2022",\n  },\n}\n')
    doc = json_parser.parse(src.encode(), source="tsconfig.json")
    assert [w for w in doc.warnings if "line 2" in w and "chunked as text" in w]
    assert len(doc.sections) == 1 and doc.text == src
    chunks = check_contract(src.encode(), "tsconfig.json", Chunker(max_tokens=64))
    assert "".join(c.text for c in chunks).replace("\n", "") == src.replace("\n", "")
    doc = json_parser.parse(b'{"a": [1, 2,\n ]}', source="t.json")
    assert "at line 2" in doc.warnings[-1]
    for bad in (b'{"a": 1, "b": }', b'{"a": 1 "b": 2}'):  # invalid, not JSONC
        with pytest.raises(ParseError):
            json_parser.parse(bad, source="bad.json")


# -- JSON Lines ------------------------------------------------------------------------------
def test_jsonl_one_record_a_line_with_line_numbers():
    src = '{"a": 1}\n\n[1, 2]\n{"b": {"c": 2}}\n'
    doc = jsonl.parse(src.encode(), source="x.jsonl")
    records = sorted((s for s in doc.sections if s.kind == "record"), key=lambda s: s.start)
    assert [(doc.text[s.start:s.end], s.path) for s in records] == [
        ('{"a": 1}', ("x.jsonl", "line 1")), ("[1, 2]", ("x.jsonl", "line 3")),
        ('{"b": {"c": 2}}', ("x.jsonl", "line 4"))]
    assert dict(records[2].meta) == {"record_start": 4, "record_end": 4}
    assert ("x.jsonl", "line 4", "b", "c") in [s.path for s in doc.sections]
    assert dict(doc.meta)["records"] == 3


def test_jsonl_bad_line_names_the_line():
    with pytest.raises(ParseError) as e:
        jsonl.parse(b'{"a": 1}\n{"a": }\n', source="x.jsonl")
    assert "line 2" in e.value.reason and e.value.position == 15
    with pytest.raises(ParseError, match="line 1: extra data"):
        jsonl.parse(b'{"a": 1} {"b": 2}\n', source="x.jsonl")


def test_jsonl_fixture_records_never_share_a_chunk_with_a_split_record():
    """GSM8K lines: each record that fits is whole in one chunk; every chunk is inside one
    record or a run of whole records, and says which (record_start/record_end)."""
    chunker = Chunker(max_tokens=256)
    chunks = check_contract(GSM8K.read_bytes(), GSM8K.name, chunker)
    doc = jsonl.parse(GSM8K.read_bytes(), source=GSM8K.name)
    lines = doc.text.split("\n")
    starts = [sum(len(x) + 1 for x in lines[:i]) for i in range(len(lines))]
    for c in chunks:
        first = doc.text.count("\n", 0, c.start) + 1
        last = doc.text.count("\n", 0, c.end - 1) + 1
        assert (c.meta["record_start"], c.meta["record_end"]) == (first, last)
    for n, line in enumerate(lines, 1):
        if not line:
            continue
        holding = [c for c in chunks if c.start <= starts[n - 1] + len(line) - 1
                   and c.end > starts[n - 1]]
        fits = chunker.sizer.count(f"{GSM8K.name} > line {n}\n\n{line}") <= 256
        if fits:
            assert len(holding) == 1, n
        else:
            assert all(c.meta["record_start"] == c.meta["record_end"] == n for c in holding)


# -- YAML and TOML --------------------------------------------------------------------------
def test_yaml_mappings_sequences_and_documents():
    src = ("a: 1\nservers:\n  - name: x\n    port: 2\n  - [1, 2]\n  - plain\n"
           "m: {k: v, \"q\": 3}\nb: &A\n  c: |\n    text\nd: *A\n---\n- x\n")
    doc = yaml.parse(src.encode(), source="c.yaml")
    assert doc.format == "yaml" and doc.text == src and not doc.warnings
    spans = {s.path: src[s.start:s.end] for s in doc.sections}
    assert spans[("c.yaml", "document 1", "servers", "servers[0]")] == "- name: x\n    port: 2"
    assert spans[("c.yaml", "document 1", "servers", "servers[0]", "port")] == "port: 2"
    assert spans[("c.yaml", "document 1", "m", "q")] == '"q": 3'
    assert spans[("c.yaml", "document 1", "b", "c")] == "c: |\n    text"
    assert spans[("c.yaml", "document 2")].startswith("---")
    # scalar items ("- plain") get no section of their own
    assert ("c.yaml", "document 1", "servers", "servers[2]") not in spans


def test_toml_tables_array_tables_and_dotted_keys_match_tomllib():
    tomllib = pytest.importorskip("tomllib")
    src = ('title = "x"\na.b = 1\n[server]\nip = "1"\narr = [1,\n  2, {z = 1}]\n'
           '[[products]]\nname = "h"\n[[products]]\nname = "n"\ninl = {x = 1, y.z = 2}\n')
    doc = toml.parse(src.encode(), source="p.toml")
    spans = {s.path: src[s.start:s.end] for s in doc.sections}
    assert spans[("p.toml", "a", "b")] == "a.b = 1"
    assert spans[("p.toml", "products", "products[1]")].startswith("[[products]]\nname = \"n\"")
    assert spans[("p.toml", "products", "products[1]", "inl", "y", "z")] == "y.z = 2"
    assert spans[("p.toml", "server", "arr", "arr[2]")] == "{z = 1}"
    # every key/value entry parses, alone, to the value tomllib finds at its path
    whole = tomllib.loads(src)
    for s in doc.sections:
        text = src[s.start:s.end]
        if s.kind == "entry" and "=" in text and not text.startswith("{"):
            key, _, value = text.partition("=")
            got = tomllib.loads(f"v = {value.strip()}")["v"]
            assert got == _resolve(whole, s.path), s.path


def test_toml_fixture_paths_follow_the_tables():
    doc = toml.parse(PYPROJECT.read_bytes(), source=PYPROJECT.name)
    paths = {s.path for s in doc.sections}
    assert (PYPROJECT.name, "project", "dependencies") in paths
    assert (PYPROJECT.name, "project", "optional-dependencies") in paths
    assert any(p[:3] == (PYPROJECT.name, "tool", "pytest") for p in paths)


def test_yaml_workflow_paths():
    doc = yaml.parse(WORKFLOW.read_bytes(), source=WORKFLOW.name)
    paths = {s.path for s in doc.sections}
    assert (WORKFLOW.name, "jobs", "tests", "steps") in paths
    assert (WORKFLOW.name, "jobs", "tests", "steps", "steps[0]") in paths


@pytest.mark.parametrize("mod, src, why", [
    (yaml, "a: {{ .Values.x }}\nb: [1, 2\n", "syntax error at line"),
    (toml, "a = = 1\n", "not valid TOML: Invalid value (at line 1, column 5)"),
    (toml, "[a]\nx = 1\n[a]\ny = 2\n", "not valid TOML"),
])
def test_invalid_yaml_and_toml_are_chunked_as_text_with_a_warning(mod, src, why):
    doc = mod.parse(src.encode(), source="bad.conf")
    assert len(doc.warnings) == 1 and why in doc.warnings[0]
    assert "chunked as text" in doc.warnings[0]
    assert [(s.start, s.end, s.kind) for s in doc.sections] == [(0, len(src), "document")]
    chunks = Chunker(max_tokens=64).chunk_document(doc)
    assert "".join(c.text for c in chunks).replace("\n", "") == src.replace("\n", "")


def test_missing_grammar_is_text_with_a_warning_naming_the_package(monkeypatch):
    from chunkwise.parsers.data import tree as data_tree

    monkeypatch.setattr(data_tree, "_parser", lambda module: None)
    doc = yaml.parse(WORKFLOW.read_bytes(), source=WORKFLOW.name)
    assert doc.warnings == ("the YAML grammar is not installed (pip install tree-sitter-yaml): "
                            "chunked as text, by lines",)
    check_contract(WORKFLOW.read_bytes(), WORKFLOW.name, Chunker(max_tokens=64))


# -- chunks: contract, whole objects, context ---------------------------------------------------
@pytest.mark.parametrize("path", DATA_FIXTURES, ids=lambda p: p.name)
@pytest.mark.parametrize("chunker", [Chunker(), Chunker(max_tokens=64),
                                     Chunker(tokenizer="cl100k_base", max_tokens=512)],
                         ids=["minilm-256", "minilm-64", "cl100k-512"])
def test_fixture_contract(path, chunker):
    chunks = check_contract(path.read_bytes(), path.name, chunker)
    assert chunks and all(c.section_path[0] == path.name for c in chunks)
    assert all(c.context.startswith(path.name) for c in chunks)


@pytest.mark.parametrize("path", DATA_FIXTURES, ids=lambda p: p.name)
def test_entries_that_fit_are_whole_in_one_chunk(path):
    """Every entry (object member, array item holding an object or array) whose embed text
    fits the budget is in exactly one chunk; a split one is split between its entries."""
    chunker = Chunker(max_tokens=128)
    chunks = check_contract(path.read_bytes(), path.name, chunker)
    doc = chunker.parse_bytes(path.read_bytes(), source=path.name)
    count = chunker.sizer.count
    whole = 0
    for s in doc.sections:
        if s.kind != "entry":
            continue
        body = doc.text[s.start:s.end].strip()
        if count(" > ".join(s.path) + "\n\n" + body) > 100:  # room for the parent's path
            continue
        a = s.start + doc.text[s.start:s.end].index(body[0])
        holding = [c for c in chunks if c.start < a + len(body) and c.end > a]
        assert len(holding) == 1, (s.path, [(c.start, c.end) for c in holding])
        whole += 1
    assert whole > 5


def test_deep_piece_embeds_its_key_path():
    chunker = Chunker(max_tokens=64)
    chunks = chunker.chunk_bytes(PACKAGE_JSON.read_bytes(), source=PACKAGE_JSON.name)
    dev = [c for c in chunks if c.section_path[:2] == (PACKAGE_JSON.name, "devDependencies")]
    assert len(dev) >= 2  # split between its members
    assert all(c.context.startswith(f"{PACKAGE_JSON.name} > devDependencies") for c in dev)
    assert all(not c.text.lstrip().startswith(",") for c in chunks)


# -- hostile input ---------------------------------------------------------------------------
def test_deep_nesting_is_read_without_recursion():
    for src in ("[" * 10_000 + "]" * 10_000, '{"a":' * 10_000 + "1" + "}" * 10_000):
        t = time.process_time()
        doc = json_parser.parse(src.encode(), source="deep.json")
        chunks = Chunker(max_tokens=64).chunk_document(doc)
        assert time.process_time() - t < 60  # about 1 s
        assert len(doc.sections) == json_parser.MAX_DEPTH + 1
        assert any("nested deeper" in w for w in doc.warnings)
        assert chunks[0].start == 0 and chunks[-1].end == len(src)
    with pytest.raises(ParseError, match="unexpected end"):
        json_parser.parse(b"[" * 10_000, source="deep.json")
    flow = yaml.parse(("[" * 10_000 + "]" * 10_000).encode(), source="deep.yaml")
    assert len(flow.sections) == json_parser.MAX_DEPTH + 1
    assert max(len(p) for s in flow.sections for p in s.path) <= json_parser.MAX_KEY


@pytest.mark.parametrize("src", [
    "".join(" " * i + "a:\n" for i in range(3000)) + " " * 3000 + "a: 1\n",
    "- " * 300 + "a\n",
    "? " * 300 + "a\n",
], ids=["indented-mappings", "compact-sequences", "explicit-keys"])
def test_yaml_indented_past_the_scanner_stack_is_text_not_a_crash(src):
    """tree-sitter-yaml's scanner crashes the process (SIGSEGV) on 300 levels of block
    indentation: such a file never reaches it."""
    doc = yaml.parse(src.encode(), source="deep.yaml")
    assert doc.warnings == ("indented deeper than 120 columns: chunked as text, by lines",)
    chunks = Chunker(max_tokens=64).chunk_document(doc)
    assert chunks[-1].end == len(src.rstrip())


def test_yaml_alias_bomb_is_not_expanded():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for k in range(1, 12):  # 9**12 strings if expanded
        prev, name = chr(ord("a") + k - 1), chr(ord("a") + k)
        lines.append(f"{name}: &{name} [{','.join(['*' + prev] * 9)}]")
    src = "\n".join(lines) + "\n"
    t = time.process_time()
    doc = yaml.parse(src.encode(), source="bomb.yaml")
    chunks = Chunker(max_tokens=64).chunk_document(doc)
    assert time.process_time() - t < 30  # milliseconds
    assert sum(len(c.text) for c in chunks) <= len(src)


def test_huge_key_is_cut_in_the_path():
    src = '{"' + "k" * 200_000 + '": {"inner": 1}}'
    doc = json_parser.parse(src.encode(), source="key.json")
    assert max(len(p) for s in doc.sections for p in s.path) <= json_parser.MAX_KEY
    chunks = Chunker(max_tokens=64).chunk_document(doc)
    assert chunks[-1].end == len(src) and all(c.tokens <= 64 for c in chunks)


def test_many_entries_past_the_limit_are_cut_as_text(monkeypatch):
    monkeypatch.setattr(json_parser, "MAX_SECTIONS", 1000)
    src = json.dumps([{"id": i, "tags": ["a", "b"], "n": {"x": i}} for i in range(3000)])
    doc = json_parser.parse(src.encode(), source="many.json")
    assert len(doc.sections) == 1000
    assert any("more than 1000 entries" in w for w in doc.warnings)
    chunks = check_contract(src.encode(), "many.json", Chunker(max_tokens=128))
    assert chunks[-1].end == len(src)


def test_jsonl_records_past_the_limit_are_cut_between_lines(monkeypatch):
    monkeypatch.setattr(json_parser, "MAX_SECTIONS", 50)
    src = "".join(json.dumps({"id": i, "tags": ["a", "b"], "text": f"record {i}"}) + "\n"
                  for i in range(400))
    doc = jsonl.parse(src.encode(), source="many.jsonl")
    assert any("more than 50 entries" in w for w in doc.warnings)
    chunks = check_contract(src.encode(), "many.jsonl", Chunker(max_tokens=128))
    assert all(c.start == 0 or src[c.start - 1] == "\n" for c in chunks)


@pytest.mark.slow
def test_50_mb_one_line_json_array_in_bounded_time_and_memory(tmp_path):
    """A 50 MB one-line array of small objects through the CLI: sections stop at
    MAX_SECTIONS, the rest is validated by whole-run regex matches and cut at commas."""
    path = tmp_path / "big.json"
    path.write_text(json.dumps([{"id": i, "name": f"item {i}", "ok": i % 2 == 0}
                                for i in range(1_300_000)], separators=(",", ":")))
    assert path.stat().st_size > 50_000_000
    run = run_measured([*CHUNKWISE_CLI, "chunk", str(path), "--jsonl"], tmp_path / "out.jsonl",
                       timeout=590)
    assert run.returncode == 0, run.stderr
    assert run.peak_rss < 4 << 30, run.peak_rss
    last = None
    with open(tmp_path / "out.jsonl") as out:
        for line in out:
            last = json.loads(line)
            assert last["tokens"] <= 256
    assert last["end"] == path.stat().st_size


# -- registry and routing -------------------------------------------------------------------
def test_extensions_route_to_the_new_formats():
    assert [detect_format(n) for n in ("a.json", "a.JSONL", "a.ndjson", "a.yml", "a.yaml",
                                       "a.toml", "a.ipynb")] == \
        ["json", "jsonl", "jsonl", "yaml", "yaml", "toml", "notebook"]


def test_cli_chunks_a_folder_of_data_files(tmp_path):
    for p in (*DATA_FIXTURES, FIXTURES / "jupyter__notebook__importing-notebooks.ipynb"):
        shutil.copy(p, tmp_path / p.name)
    out = subprocess.run([*CHUNKWISE_CLI, "chunk", str(tmp_path), "--jsonl"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    formats = {r["source"]: r["format"] for r in rows}
    assert formats == {PACKAGE_JSON.name: "json", PYPROJECT.name: "toml", WORKFLOW.name: "yaml",
                       GSM8K.name: "jsonl",
                       "jupyter__notebook__importing-notebooks.ipynb": "notebook"}


def test_llama_index_parser_routes_by_file_name():
    from llama_index.core import Document

    from chunkwise.llama_index import ChunkwiseNodeParser

    parser = ChunkwiseNodeParser.from_defaults(max_tokens=128)
    doc = Document(text=PYPROJECT.read_text(), metadata={"file_path": str(PYPROJECT)})
    nodes = parser.get_nodes_from_documents([doc])
    assert nodes and {n.metadata["format"] for n in nodes} == {"toml"}
    text = PYPROJECT.read_text()
    assert all(text[n.start_char_idx:n.end_char_idx] == n.text for n in nodes)


@pytest.mark.corpus
@pytest.mark.parametrize("chunker", [Chunker(), Chunker(max_tokens=64)], ids=["256", "64"])
def test_corpus_data_files_contract(chunker):
    for path in corpus_files("data"):
        check_contract(path.read_bytes(), path.name, chunker)
