"""Python parser and chunking: sections, signatures as context, statement boundaries, pieces
that still parse, syntax errors, and inputs built to be slow."""

from __future__ import annotations

import ast
import time

import pytest

from chunkwise import Chunker, ParseError, chunk_text
from chunkwise.parsers.code import languages as code_parser
from chunkwise.parsers.code import walk as code_walk
from chunkwise.parsers.code.languages import parser_for
parse_python = parser_for("python")
from lines import LineIndex

from conftest import FIXTURES, corpus_files
from contract import check_contract
import headers

SAMPLE = '''"""Module doc."""
import os
# needed below
import sys

CONSTANT = 1


# about f
@decorator
def f(a, *, b: int = 1) -> int:
    x = 1  # trailing
    if x:
        y = 2
    else:
        y = 3
    return y


class Parser(Base):
    """Parses."""

    def parse(self, data):
        for item in data:
            yield item

    async def close(self):
        pass
'''


def _parse(src: str, source: str = "mod.py"):
    return parse_python(src.encode("utf-8"), source=source)


def _by_kind(doc, kind):
    return [s for s in doc.sections if s.kind == kind]


def _text(doc, s):
    return doc.text[s.start:s.end]


def _assert_nested(doc):
    """Sections nest properly: no two spans partially overlap."""
    spans = sorted({(s.start, s.end) for s in doc.sections}, key=lambda p: (p[0], -p[1]))
    stack: list[tuple[int, int]] = []
    for a, b in spans:
        while stack and stack[-1][1] <= a:
            stack.pop()
        assert not stack or b <= stack[-1][1], f"[{a}:{b}] overlaps {stack[-1]}"
        stack.append((a, b))


# -- sections ---------------------------------------------------------------------------------
def test_sections_kinds_paths_and_meta():
    doc = _parse(SAMPLE)
    assert doc.format == "python" and doc.title == "mod.py" and not doc.path_in_context
    assert [_text(doc, s) for s in _by_kind(doc, "module_docstring")] == ['"""Module doc."""']
    (imports,) = _by_kind(doc, "imports")
    assert _text(doc, imports) == "import os\n# needed below\nimport sys"
    (func,) = _by_kind(doc, "function")
    assert _text(doc, func).startswith("# about f\n@decorator\ndef f(")  # comment + decorator
    assert func.path == ("f",) and func.context == "def f(a, *, b: int = 1) -> int:"
    # (and how Python writes documentation, for the `code-doc` view: `VIEW_FACTS`)
    assert dict(func.meta) == {"symbol": "f", "kind": "function", "line_start": 9,
                               "line_end": 17, "line_comment": "#", "docstrings": True}
    (cls,) = _by_kind(doc, "class")
    assert cls.path == ("Parser",) and cls.context == "class Parser(Base):"
    methods = {s.path: s for s in _by_kind(doc, "method")}
    assert set(methods) == {("Parser", "parse"), ("Parser", "close")}
    assert methods[("Parser", "parse")].context == "    def parse(self, data):"
    assert methods[("Parser", "close")].context == "    async def close(self):"
    assert dict(methods[("Parser", "close")].meta)["symbol"] == "Parser.close"
    _assert_nested(doc)


def test_body_statements_and_compound_blocks_are_children():
    doc = _parse(SAMPLE)
    func = _by_kind(doc, "function")[0]
    inside = [s for s in doc.sections if func.start < s.start and s.end <= func.end]
    texts = [_text(doc, s) for s in inside]
    assert "x = 1  # trailing" in texts  # a trailing comment stays with its statement
    assert "return y" in texts and "y = 2" in texts and "y = 3" in texts
    (if_stmt,) = [s for s in inside if _text(doc, s).startswith("if x:")]
    # a statement with later clauses: `...` stands for the elided block
    assert if_stmt.context == "    if x:\n        ..."
    (else_clause,) = [s for s in inside if _text(doc, s).startswith("else:")]
    assert else_clause.context == "    else:"
    assert if_stmt.start <= else_clause.start and else_clause.end <= if_stmt.end


def test_levels_are_a_total_order():
    doc = _parse(SAMPLE)
    level = {s.kind: s.level for s in doc.sections if s.kind in ("class", "function",
                                                                  "method", "imports")}
    compound = max(s.level for s in doc.sections if s.kind == "statement")
    simple = min(s.level for s in doc.sections if s.kind == "statement")
    assert level["class"] > level["function"] == level["method"] > compound > simple


def test_detached_comment_block_is_its_own_section():
    src = "x = 1\n\n# -- banner --\n# more banner\n\n\ndef f():\n    return 1\n"
    doc = _parse(src)
    (comment,) = _by_kind(doc, "comment")
    assert _text(doc, comment) == "# -- banner --\n# more banner"
    assert _text(doc, _by_kind(doc, "function")[0]) == "def f():\n    return 1"


def test_non_ascii_source_offsets_are_str_indices():
    src = "s = 'héllo 😀 ü'\n\nclass Ünïcode:\n    def naïve(self):\n        return '日本語'\n"
    doc = _parse(src)
    (method,) = _by_kind(doc, "method")
    assert _text(doc, method) == "def naïve(self):\n        return '日本語'"
    assert method.path == ("Ünïcode", "naïve")


@pytest.mark.parametrize("cookie", ["# -*- coding: koi8-r -*-", "#!/usr/bin/env python\n# vim: set fileencoding=koi8-r :"])
def test_coding_cookie_decodes_a_legacy_source(cookie):
    # PEP 263: the encoding a module declares on its first or second line is its encoding
    src = f'{cookie}\ndef greet():\n    return "привет"\n'
    doc = parse_python(src.encode("koi8-r"), source="legacy.py")
    assert doc.text == src and not doc.warnings
    assert _text(doc, _by_kind(doc, "function")[0]).endswith('def greet():\n    return "привет"')


def test_unknown_or_useless_declared_encoding_falls_back_with_a_warning():
    for name in ("no-such-codec", "undefined", "rot13", "utf-8"):
        data = f"# coding: {name}\ns = 'café'\n".encode("latin-1")
        doc = parse_python(data, source="x.py")
        assert doc.text.endswith("s = 'café'\n"), name
        assert any("invalid UTF-8" in w for w in doc.warnings), name
    # a cookie on line 2 counts only after a comment or blank line (what CPython reads)
    doc = parse_python('s = 1\n# coding: koi8-r\nt = "é"\n'.encode("latin-1"), source="x.py")
    assert doc.text.endswith('t = "é"\n') and any("cp1252" in w for w in doc.warnings)


def test_long_signature_is_compacted_but_still_parses():
    params = ",\n".join(f"    parameter_{i}: Annotated[str, Doc('text {i}')] = 'x'"
                        for i in range(40))
    src = f"class A:\n    def build(\n        self,\n{params},\n    ) -> None:\n        pass\n"
    doc = _parse(src)
    (method,) = _by_kind(doc, "method")
    assert method.context.startswith("    def build(self, parameter_0, parameter_1")
    assert method.context.endswith("more parameters") and len(method.context) < 200
    ast.parse("class A:\n" + method.context + "\n        pass\n")
    # each parameter of a multi-line signature is a section, comma included, inside the
    # method's signature (which ends at the colon)
    params = _by_kind(doc, "parameter")
    assert len(params) == 41 and _text(doc, params[1]).endswith("= 'x',")
    assert [_text(doc, s)[:8] for s in _by_kind(doc, "signature")] == ["class A:", "def buil"]
    sig = _by_kind(doc, "signature")[1]
    assert _text(doc, sig).startswith("def build(") and _text(doc, sig).endswith(") -> None:")
    assert all(sig.start < p.start and p.end <= sig.end for p in params)


def test_match_and_try_clauses():
    src = ("def f(x):\n    match x:\n        case 1:\n            a = 1\n        case _:\n"
           "            a = 2\n    try:\n        g()\n    except ValueError as e:\n        h(e)\n"
           "    finally:\n        done()\n")
    doc = _parse(src)
    contexts = [s.context for s in doc.sections if s.context]
    assert "    match x:" in contexts and "            case 1:" not in contexts
    assert "        case 1:" in contexts and "    try:\n        ..." in contexts
    assert "    except ValueError as e:" in contexts and "    finally:" in contexts
    _assert_nested(doc)


# -- chunking ---------------------------------------------------------------------------------
def _def_spans(text: str) -> list[tuple[ast.AST, int, int, list[str]]]:
    """(node, start, end, enclosing headers) of every def/class, decorators included."""
    lines = LineIndex(text)
    out, todo = [], [(ast.parse(text), [])]
    while todo:
        node, heads = todo.pop()
        for child in ast.iter_child_nodes(node):
            inner = heads
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = child.decorator_list[0] if child.decorator_list else child
                start = lines.offset(first.lineno - 1) + first.col_offset - (
                    1 if child.decorator_list else 0)
                end = lines.offset(child.end_lineno - 1) + child.end_col_offset
                out.append((child, start, end, heads))
                body = lines.offset(child.body[0].lineno - 1)
                inner = [*heads, text[lines.offset(child.lineno - 1):body].rstrip()]
            todo.append((child, inner))
    return out


def _check_definitions(text: str, chunks, chunker: Chunker) -> None:
    """A def that fits the budget (with the file line and its enclosing headers) is inside
    exactly one chunk; every later chunk of a split def carries the def's signature in its
    context."""
    file_line = chunks[0].context.split("\n")[0] if chunks else ""
    assert file_line.startswith("# ") and all(c.context.startswith(file_line) for c in chunks)
    for node, start, end, heads in _def_spans(text):
        embed = "\n".join([file_line, *heads]) + "\n\n" + text[start:end]
        inside = [c for c in chunks if c.start <= start and end <= c.end]
        touching = [c for c in chunks if c.start < end and start < c.end]
        if chunker.sizer.count(embed) <= chunker.max_tokens:
            assert len(inside) == 1, f"{node.name} fits but is split"
        else:
            keyword = "class" if isinstance(node, ast.ClassDef) else "def"
            for c in touching[1:]:
                assert f"{keyword} {node.name}(" in c.context or \
                    f"{keyword} {node.name}:" in c.context, f"{node.name}: {c.context!r}"


def _piece_parses(text: str, chunk) -> bool:
    """Context + chunk text, the chunk's first line re-indented to its source column, is
    Python that tree-sitter parses without an ERROR node."""
    from tree_sitter import Parser

    col = chunk.start - (text.rfind("\n", 0, chunk.start) + 1)
    body = " " * col + chunk.text
    whole = f"{chunk.context}\n{body}" if chunk.context else body
    return not Parser(code_parser.grammar("python")).parse(whole.encode()).root_node.has_error


def _aligned(doc, chunk) -> bool:
    """The chunk starts at a section start and ends at a section end (whitespace-trimmed):
    it holds whole statements, not a piece of an oversized one or of a signature."""
    text = doc.text
    bounds_s, bounds_e = set(), set()
    for s in doc.sections:
        # parts of headers, and groups of a literal table's entries: not statements
        if s.kind in ("signature", "parameter", "decorator", "entries"):
            continue
        a, b = s.start, s.end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        bounds_s.add(a)
        bounds_e.add(b)
    return chunk.start in bounds_s and chunk.end in bounds_e


def test_fixture_chunks_keep_definitions_and_contract():
    data = (FIXTURES / "fastapi__fastapi__background.py").read_bytes()
    chunker = Chunker(max_tokens=128)
    chunks = check_contract(data, "fastapi__fastapi__background.py", chunker)
    text = parse_python(data, source="x.py").text
    _check_definitions(text, chunks, chunker)
    assert all(c.context.startswith("# fastapi__fastapi__background.py") for c in chunks)
    assert any(c.context.startswith("# fastapi__fastapi__background.py\n"
                                    "class BackgroundTasks(StarletteBackgroundTasks):\n"
                                    "    def add_task(") for c in chunks)
    method_chunks = [c for c in chunks if c.meta.get("symbol") == "BackgroundTasks.add_task"]
    assert method_chunks and all(c.section_path == ("BackgroundTasks", "add_task")
                                 for c in method_chunks)


# -- headers (issue 24) ------------------------------------------------------------------------
_LONG_SIGNATURE = '''class Loader(Base):
    """Loads."""

    @staticmethod
    @cache
    def load(
        source: str,
        *,
        encoding: str = "utf-8",
        retries: int = 3,
        timeout: float | None = None,
    ) -> Document:  # the parsed document
        """Load a document from a path or a URL, retrying on network errors."""
        text = read_source(source, encoding=encoding, retries=retries, timeout=timeout)
        return parse_document(text)
'''


@pytest.mark.parametrize("budget", [96, 128])
def test_split_definition_keeps_its_header_with_the_start_of_its_body(budget):
    """Parameters are not units of their own: the header, to the colon (and its comment),
    travels whole with the docstring; later pieces carry it as context."""
    chunks = chunk_text(_LONG_SIGNATURE, format="python", source="l.py", max_tokens=budget)
    report = headers.Report()
    headers.check(_LONG_SIGNATURE, chunks, Chunker(max_tokens=budget).sizer.count, budget,
                  report, "l.py")
    assert report.ok() and report.split_defs, str(report)
    (first,) = [c for c in chunks if "@staticmethod" in c.text]
    assert "-> Document:  # the parsed document" in first.text and '"""Load' in first.text
    assert all("def load(" in c.context for c in chunks if c.start > first.end)


def test_header_too_long_for_the_budget_is_cut_between_parameters_only():
    params = ",\n".join(f"        parameter_{i}: Annotated[str, Doc('text {i}')] = 'x'"
                         for i in range(30))
    src = f"class A:\n    def build(\n        self,\n{params},\n    ) -> None:\n        pass\n"
    chunks = chunk_text(src, format="python", source="a.py", max_tokens=64)
    report = headers.Report()
    headers.check(src, chunks, Chunker(max_tokens=64).sizer.count, 64, report, "a.py")
    assert report.too_long == 1 and report.ok(), str(report)
    inside = [c for c in chunks if src.index("def build") < c.start < src.index("-> None")]
    assert inside and all(c.text.startswith("parameter_") for c in inside)
    assert chunks[-1].text.endswith(") -> None:\n        pass")


@pytest.mark.parametrize("tokenizer,budget", [("minilm", 256), ("cl100k_base", 512),
                                              ("minilm", 128)])
def test_fixture_headers_are_never_cut(tokenizer, budget):
    chunker = Chunker(tokenizer=tokenizer, max_tokens=budget)
    report = headers.Report()
    for path in sorted(FIXTURES.glob("*.py")):
        doc = parse_python(path.read_bytes(), source=path.name)
        headers.check(doc.text, chunker.chunk_document(doc), chunker.sizer.count, budget,
                      report, path.name)
    assert report.headers >= 3 and report.ok(), str(report)


@pytest.mark.corpus
@pytest.mark.parametrize("tokenizer,budget", [("minilm", 256), ("cl100k_base", 512),
                                              ("minilm", 64)])
def test_corpus_headers_are_never_cut(tokenizer, budget):
    """On the shared corpus: no chunk starts or ends inside a header that fits, every split
    definition's first chunk holds its header and the start of its body, and a header longer
    than the budget is cut only between its parts (unless a part alone is too long)."""
    chunker = Chunker(tokenizer=tokenizer, max_tokens=budget)
    report = headers.Report()
    for path in corpus_files("code"):
        doc = parse_python(path.read_bytes(), source=path.name)
        headers.check(doc.text, chunker.chunk_document(doc), chunker.sizer.count, budget,
                      report, path.name)
    assert report.split_defs > 100 and report.ok(), str(report)


def test_method_piece_context_and_parse():
    body = "\n".join(f"        value_{i} = compute_something({i}, factor={i + 1})"
                     for i in range(60))
    src = f"class Parser:\n    def parse(self, data):\n{body}\n        return value_0\n"
    chunks = chunk_text(src, format="python", source="p.py", max_tokens=64)
    assert len(chunks) > 3
    for c in chunks[1:]:
        assert c.context == "# p.py\nclass Parser:\n    def parse(self, data):"
        assert c.meta["symbol"] == "Parser.parse" and c.meta["kind"] == "method"
        assert _piece_parses(src, c)
    lines = LineIndex(src)
    for c in chunks:
        assert c.meta["line_start"] == lines.line_of(c.start) + 1


def test_clause_pieces_parse():
    block = "\n".join(f"            total_{i} = handle_item(item, index={i})" for i in range(30))
    src = (f"def run(items):\n    for item in items:\n        if item.ok:\n{block}\n"
           f"        elif item.retry:\n{block}\n        else:\n{block}\n")
    chunks = chunk_text(src, format="python", source="r.py", max_tokens=96)
    assert any(c.text.startswith(("elif", "else")) for c in chunks)
    assert all(_piece_parses(src, c) for c in chunks)


@pytest.mark.corpus
def test_corpus_definitions_and_contract():
    chunker = Chunker()
    for path in corpus_files("code"):
        data = path.read_bytes()
        chunks = check_contract(data, path.name, chunker)
        _check_definitions(parse_python(data, source=path.name).text, chunks, chunker)


@pytest.mark.corpus
@pytest.mark.parametrize("tokenizer,budget,share", [("cl100k_base", 512, 1.0),
                                                    ("minilm", 256, 0.98)])
def test_corpus_whole_statement_chunks_parse(tokenizer, budget, share):
    """Chunks made of whole statements parse once their context is put before them. The few
    that do not at the small budget lost inner headers to the context limit (half the
    budget): deeply nested code whose signatures alone exceed it."""
    chunker = Chunker(tokenizer=tokenizer, max_tokens=budget)
    ok = total = 0
    for path in corpus_files("code"):
        doc = parse_python(path.read_bytes(), source=path.name)
        for c in chunker.chunk_document(doc):
            if _aligned(doc, c):
                total += 1
                ok += _piece_parses(doc.text, c)
    assert total > 500 and ok >= share * total, f"{ok}/{total} parse"


def test_attribute_docstring_joins_its_assignment_and_a_table_names_its_doc():
    """A string right after an assignment documents it (as a comment above a definition does):
    one statement. docling's chart table does not fit one chunk with its docstring, so it is cut
    four entries at a time, each chunk past the first under the table's name and doc line."""
    (path,) = [p for p in corpus_files("code")
               if p.name == "docling__docling__backend__msword_backend.py"]
    doc = parse_python(path.read_bytes(), source=path.name)
    text = doc.text
    (size,) = [s for s in doc.sections if s.kind == "statement"
               and text[s.start:s.end].startswith("_MAX_MEMBER_UNCOMPRESSED_SIZE")]
    assert text[size.start:size.end].rstrip().endswith('Strict-to-Transitional rewriting."""')
    chunks = check_contract(path.read_bytes(), path.name, Chunker())
    (chunk,) = [c for c in chunks if '"doughnutChart"' in c.text]
    assert chunk.context.split("\n")[1:] == [
        "# Maps a DrawingML chart plot element name to a docling picture-classification label.",
        "_CHART_TAGNAME_TO_CLASSIFICATION: Final[dict[str, PictureClassificationLabel]] = {"]
    assert chunk.text.count("PictureClassificationLabel.") == 4


# -- bad and hostile input ----------------------------------------------------------------------
def test_syntax_errors_keep_the_valid_definitions_around_them():
    src = "def ok():\n    return 1\n\ndef broken(:\n    x = = 2\n\nclass A:\n    pass\n"
    doc = _parse(src)
    assert any("syntax errors" in w for w in doc.warnings)
    errors = [s for s in doc.sections if dict(s.meta).get("syntax_error")]
    assert errors and all(s.kind == "statement" for s in errors)
    assert {s.path for s in doc.sections if s.kind in ("function", "class")} >= {("ok",)}
    _assert_nested(doc)
    check_contract(src.encode(), "broken.py", Chunker(max_tokens=32))


@pytest.mark.parametrize("data", [b"\x00\x01\x02\x03" * 50, b"x = 1\n" * 3000 + b"\x00\x00"])
def test_binary_is_a_parse_error(data):
    with pytest.raises(ParseError):
        parse_python(data, source="bin.py")


def test_deep_nesting_is_bounded():
    deep_if = "".join("    " * i + f"if x{i}:\n" for i in range(800)) + "    " * 800 + "pass\n"
    deep_def = "".join("    " * i + f"def f{i}():\n" for i in range(400)) + "    " * 400 + "y\n"
    parens = "x = " + "(" * 20000 + "1" + ")" * 20000 + "\n"
    for src in (deep_if, deep_def, parens):
        t = time.process_time()
        doc = _parse(src)
        assert time.process_time() - t < 5
        depth = max(len(s.path) for s in doc.sections)
        assert depth <= code_walk._MAX_DEPTH + 1
        check_contract(src.encode(), "deep.py", Chunker(max_tokens=64))


def test_big_module_is_parsed_in_slices_with_the_same_sections(monkeypatch):
    """Slicing a module (to bound tree-sitter's memory) changes nothing, even when a cut
    candidate sits inside a string or brackets."""
    tricky = ('x = """\n' + "line\n" * 400 + "def inside_string():\n    pass\n" + '"""\n'
              + "data = [\n" + "1,\n" * 400 + "def_,\n]\n")
    corpus = (FIXTURES / "fastapi__fastapi__background.py").read_text()
    src = "\n".join([tricky, corpus, tricky, corpus] * 3)
    whole = _parse(src)
    monkeypatch.setattr(code_parser, "_SLICE", 512)
    assert len(code_parser._slice_bounds(src.encode())) > 10
    sliced = _parse(src)
    key = lambda s: (s.start, -s.end, -s.level)  # noqa: E731
    assert sorted(sliced.sections, key=key) == sorted(whole.sections, key=key)
    assert not sliced.warnings


def test_generated_module_time_and_giant_statement():
    gen = "".join(f"def f{i}(a, b):\n    return a + b * {i}\n\n" for i in range(40000))
    t = time.process_time()
    doc = _parse(gen)
    assert time.process_time() - t < 15
    assert len(_by_kind(doc, "function")) == 40000
    giant = "D = {\n" + "".join(f"    'k{i}': {i},\n" for i in range(600000)) + "}\n"
    assert len(giant) > code_parser._MAX_TREE
    doc = _parse(giant)  # one statement over the tree limit: plain text, at once
    assert [s.kind for s in doc.sections] == ["statement"] and doc.warnings


# Shapes from the shared corpus that cut fitting headers at 64 tokens (fastapi/exceptions.py,
# docling/datamodel/base_models.py, fastapi/routing.py), reduced.
_SMALL_BUDGET_SHAPES = {
    "class_then_long_init": '''class RequestValidationError(ValidationException):
    def __init__(
        self,
        errors: Sequence[Any],
        *,
        body: Any = None,
        endpoint_ctx: EndpointContext | None = None,
    ) -> None:
        super().__init__(errors, endpoint_ctx=endpoint_ctx)
        self.body = body
''',
    "comment_above_decorators": '''class PageConfidenceScores(BaseModel):
    parse_score: ScoreValue = np.nan

    # Accept null/None or string "NaN" values on input and coerce to np.nan
    @field_validator(
        "parse_score", "layout_score", "table_score", "ocr_score", mode="before"
    )
    @classmethod
    def _coerce_none_or_nan_str(cls, v):
        if v is None:
            return np.nan
        return v
''',
    "comments_before_first_statement": '''async def run_endpoint_function(
    *, dependant: Dependant, values: dict[str, Any], is_coroutine: bool
) -> Any:
    # Only called by get_request_handler. Has been split into its own function to
    # facilitate profiling endpoints, since inner functions are harder to profile.
    assert dependant.call is not None, "dependant.call must be a function"
    if is_coroutine:
        return await dependant.call(**values)
''',
}


@pytest.mark.parametrize("shape", sorted(_SMALL_BUDGET_SHAPES))
def test_fitting_headers_stay_whole_at_a_small_budget(shape):
    """A header that fits its chunk is one unit even at 64 tokens: after a class header it
    starts its own chunk when it cannot share one; comments above decorators and comment
    lines before the first statement are cut from it, not it."""
    src = _SMALL_BUDGET_SHAPES[shape]
    source = "fastapi__fastapi__routing_and_exceptions.py"  # a corpus-sized context line
    chunks = chunk_text(src, format="python", source=source, max_tokens=64)
    report = headers.Report()
    headers.check(src, chunks, Chunker(max_tokens=64).sizer.count, 64, report, source)
    assert report.headers and report.ok(), str(report)


def test_where_a_header_is_cut_is_the_code_parsers_say():
    """The fitter packs; where a span that opens with definition headers may be cut is the
    code parsers' `HeaderPlanner`, handed over as `ParsedDocument.headers` (by the notebook
    parser too, for its code cells). The fixture's header is longer than 64 tokens: the
    planner cuts it between its parts only; the same document without it is split as any
    text, inside a part."""
    from dataclasses import replace

    from chunkwise.chunking.api import parse_file
    from chunkwise.parsers.code.headers import HEADERS

    path = FIXTURES / "fastapi__fastapi__concurrency.py"
    doc = parse_file(path)
    assert doc.headers is HEADERS
    assert parse_file(FIXTURES / "jupyter__notebook__importing-notebooks.ipynb").headers is HEADERS
    chunker = Chunker(max_tokens=64)
    reports = []
    for planned in (doc, replace(doc, headers=None)):
        report = headers.Report()
        headers.check(doc.text, chunker.chunk_document(planned), chunker.sizer.count, 64,
                      report, path.name)
        reports.append(report)
    assert reports[0].ok() and reports[0].too_long == 1, str(reports[0])
    assert not reports[1].ok(), str(reports[1])
