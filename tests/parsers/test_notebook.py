"""Jupyter notebooks: the documented canonical text, Markdown cells parsed as Markdown and code
cells as code, headings across cells, cell numbers in meta, outputs behind an option, and
broken notebooks."""

from __future__ import annotations

import copy
import json

import pytest

from chunkwise import Chunker, ParseError
from chunkwise.parsers import get_parser
from chunkwise.parsers.notebook import reader as notebook

from conftest import FIXTURES, corpus_files
from contract import check_contract

NB = FIXTURES / "jupyter__notebook__importing-notebooks.ipynb"


def _layout(nb: dict, outputs: bool = False) -> tuple[str, dict[int, tuple[int, int]]]:
    """The canonical text as the module docstring defines it, built here from `json.loads`
    (cells' sources without trailing whitespace, joined by a blank line), and where each
    cell (numbered from 1) lies in it."""
    parts, where, pos = [], {}, 0
    for n, cell in enumerate(nb["cells"], 1):
        src = "".join(cell["source"]).rstrip()
        out = ""
        if outputs and cell["cell_type"] == "code":
            texts = []
            for o in cell.get("outputs", []):
                if o["output_type"] == "stream":
                    texts.append("".join(o["text"]).rstrip("\n"))
                elif "text/plain" in o.get("data", {}):
                    texts.append("".join(o["data"]["text/plain"]).rstrip("\n"))
                elif o["output_type"] == "error":
                    texts.append(f"{o['ename']}: {o['evalue']}")
            joined = "\n".join(texts).rstrip()
            out = f"\n\nOutput:\n{joined}" if joined else ""
        if not (src or out):
            continue
        if parts:
            pos += 2
        parts.append(src + out)
        where[n] = (pos, pos + len(src) + len(out))
        pos += len(src) + len(out)
    return "\n\n".join(parts), where


def _headings_only(cell: dict) -> bool:
    lines = [ln for ln in "".join(cell["source"]).splitlines() if ln.strip()]
    return cell["cell_type"] == "markdown" and all(ln.startswith("#") for ln in lines)


def _cells_of(where: dict[int, tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    inside = [n for n, (a, b) in where.items() if a < end and b > start]
    return min(inside), max(inside)


def _first_counted(nb: dict, first: int, last: int) -> int:
    """The first cell a chunk holding cells first..last counts: Markdown cells of headings
    alone count with the cell after them."""
    while first < last and _headings_only(nb["cells"][first - 1]):
        first += 1
    return first


def test_canonical_text_is_the_cells_joined_by_blank_lines():
    nb = json.loads(NB.read_text())
    doc = notebook.parse(NB.read_bytes(), source=NB.name)
    text, _ = _layout(nb)
    assert doc.format == "notebook" and doc.text == text
    assert dict(doc.meta) == {"language": "python", "cells": 40, "outputs": False}
    assert not doc.line_numbers


@pytest.mark.parametrize("chunker", [Chunker(), Chunker(max_tokens=64),
                                     Chunker(tokenizer="cl100k_base", max_tokens=512)],
                         ids=["minilm-256", "minilm-64", "cl100k-512"])
def test_fixture_contract_and_cell_numbers(chunker):
    nb = json.loads(NB.read_text())
    _, where = _layout(nb)
    chunks = check_contract(NB.read_bytes(), NB.name, chunker)
    for c in chunks:
        first, last = _cells_of(where, c.start, c.end)
        assert c.section_path[0] == NB.name
        assert c.meta["cell_end"] == last, c.text[:60]
        assert c.meta["cell_start"] in (first, _first_counted(nb, first, last)), c.text[:60]


def test_markdown_cells_are_markdown_and_code_cells_are_python():
    doc = notebook.parse(NB.read_bytes(), source=NB.name)
    nb = json.loads(NB.read_text())
    _, where = _layout(nb)
    by_cell: dict[int, set[str]] = {}
    for s in doc.sections:
        cells = dict(s.meta)
        if "cell_start" in cells and s.kind != "section":
            by_cell.setdefault(cells["cell_start"], set()).add(s.kind)
    for n, cell in enumerate(nb["cells"], 1):
        if _headings_only(cell):
            assert n not in by_cell  # glued to the cell after it
            continue
        kinds = by_cell[n]
        if cell["cell_type"] == "code":
            assert "code" in kinds and not kinds & {"paragraph", "markdown"}
        else:
            assert "markdown" in kinds and "paragraph" in kinds
            assert not kinds & {"function", "class", "imports", "statement"}
    # a code cell has exactly the sections the Python parser finds in its source, shifted
    start, end = where[9]
    src = "".join(nb["cells"][8]["source"]).rstrip()
    alone = get_parser("python")(src.encode(), source="c.py")
    inside = sorted((s.start - start, s.end - start, s.kind) for s in doc.sections
                    if start <= s.start and s.end <= end and s.kind != "code")
    assert inside == sorted((s.start, s.end, s.kind) for s in alone.sections)
    loader = next(s for s in doc.sections if s.kind == "class")
    assert loader.path == (NB.name, "Importing Jupyter Notebooks as Modules", "Notebook Loader",
                           "NotebookLoader")
    assert dict(loader.meta)["symbol"] == "NotebookLoader"
    assert dict(loader.meta)["cell_line_start"] == 1


def test_headings_give_the_path_of_the_code_cells_after_them():
    chunks = Chunker(max_tokens=128).chunk_bytes(NB.read_bytes(), source=NB.name)
    finder = [c for c in chunks if "class NotebookFinder" in c.text]
    assert finder and finder[0].section_path[:3] == (
        NB.name, "Importing Jupyter Notebooks as Modules", "The Module Finder")
    assert "The Module Finder" in finder[0].context
    aside = [c for c in chunks if "def show_notebook" in c.text]
    assert aside[0].section_path[2:4] == ("Register the hook", "Aside: displaying notebooks")
    # a heading never ends a chunk: it travels with the cells after it
    for c in chunks:
        assert not c.text.rstrip().split("\n")[-1].startswith("#"), c.text[-80:]


def _with_outputs() -> dict:
    nb = json.loads(NB.read_text())
    nb["cells"][16]["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": ["__init__.py\n", "mynotebook.ipynb\n"]}]
    nb["cells"][26]["outputs"] = [
        {"output_type": "execute_result", "execution_count": 3, "metadata": {},
         "data": {"text/plain": ["'foo'"], "image/png": "iVBORw0KGgo="}},
        {"output_type": "error", "ename": "NameError", "evalue": "name 'x' is not defined",
         "traceback": ["\x1b[0;31mNameError\x1b[0m"]}]
    return nb


def test_outputs_are_left_out_by_default_and_kept_as_text_on_request():
    nb = _with_outputs()
    data = json.dumps(nb).encode()
    plain = notebook.parse(data, source="o.ipynb")
    assert plain.text == _layout(nb)[0] and "Output:" not in plain.text
    kept = notebook.parse(data, source="o.ipynb", outputs=True)
    text, where = _layout(nb, outputs=True)
    assert kept.text == text and dict(kept.meta)["outputs"] is True
    assert "Output:\n__init__.py\nmynotebook.ipynb" in text
    assert "Output:\n'foo'\nNameError: name 'x' is not defined" in text
    assert "iVBOR" not in text and "\x1b" not in text
    outs = [s for s in kept.sections if s.kind == "output"]
    assert [(dict(s.meta)["cell_start"], text[s.start:s.end].split("\n")[0]) for s in outs] == \
        [(17, "Output:"), (27, "Output:")]
    assert all(where[dict(s.meta)["cell_start"]][1] == s.end for s in outs)
    # the same through the format name, as the CLI's --format gives it
    chunks = check_contract(data, "o.ipynb", Chunker(max_tokens=64), fmt="notebook-outputs")
    assert any("NameError" in c.text for c in chunks)
    assert {c.format for c in chunks} == {"notebook"}


def test_lone_surrogates_become_replacement_characters_with_a_warning():
    """A `\\udXXX` escape that pairs with nothing decodes to a lone surrogate, which no
    tokenizer or model takes (the default sizer raised TypeError on it, found by the fuzz
    test): it becomes U+FFFD, one character for one, in sources and outputs alike, and the
    warning names the cells; a pair stays the character it encodes."""
    nb = _with_outputs()
    cells = nb["cells"]
    md = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown")
    code = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and c.get("outputs"))
    cells[md]["source"] = ["Lone \udaef here, a pair \ud83d\ude00 there.\n"]
    cells[code]["outputs"] = [{"output_type": "stream", "name": "stdout",
                               "text": ["bad \udc80 byte\n"]}]
    data = json.dumps(nb).encode()  # json.dumps writes them as \\u escapes
    assert b"\\udaef" in data and b"\\udc80" in data
    doc = notebook.parse(data, source="s.ipynb", outputs=True)
    assert not any("\ud800" <= ch <= "\udfff" for ch in doc.text)
    assert "Lone \ufffd here, a pair \U0001f600 there." in doc.text
    assert "bad \ufffd byte" in doc.text
    notes = [w for w in doc.warnings if "lone surrogates" in w]
    assert notes == [f"cells {md + 1}, {code + 1}: lone surrogates (`\\udXXX` escapes that "
                     "pair with nothing) replaced by U+FFFD: no tokenizer or embedding model "
                     "reads them"]
    for fmt in ("notebook", "notebook-outputs"):  # the default sizer (minilm) and cl100k
        check_contract(data, "s.ipynb", Chunker(), fmt=fmt)
        check_contract(data, "s.ipynb", Chunker(max_tokens=64, tokenizer="cl100k_base"),
                       fmt=fmt)


def test_language_without_a_parser_cuts_code_cells_by_lines():
    nb = json.loads(NB.read_text())
    nb["metadata"]["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    doc = notebook.parse(json.dumps(nb).encode(), source="r.ipynb")
    assert dict(doc.meta)["language"] == "r"
    assert any("no parser for the notebook's language 'r'" in w for w in doc.warnings)
    assert not any(s.kind in ("class", "function") for s in doc.sections)
    check_contract(json.dumps(nb).encode(), "r.ipynb", Chunker(max_tokens=64))


def test_a_literal_table_in_a_code_cell_is_cut_as_in_a_code_file():
    """A code cell's table is cut four entries at a time, as in a `.py` file."""
    nb = json.loads(NB.read_text())
    table = "CODES = {\n" + "".join(f'    "entry{i}": {i},\n' for i in range(30)) + "}\n"
    nb["cells"].append({"cell_type": "code", "execution_count": None, "metadata": {},
                        "outputs": [], "source": table.splitlines(keepends=True)})
    chunks = check_contract(json.dumps(nb).encode(), "t.ipynb", Chunker(max_tokens=128))
    held = [c for c in chunks if "entry" in c.text]
    assert [c.text.count("entry") for c in held] == [4] * 7 + [2]
    assert all("CODES = {" in c.context for c in held[1:])


def test_a_syntax_error_in_a_code_cell_is_a_warning_not_an_error():
    doc = notebook.parse(_notebook("x = 1\n", "ls data\ndef broken(:\n    pass\n"),
                         source="b.ipynb")
    assert any(w.startswith("cell 2:") and "syntax errors" in w for w in doc.warnings)


@pytest.mark.parametrize("mutate, reason", [
    (lambda nb: "not json {", "invalid JSON"),
    (lambda nb: [nb], "not an object"),
    (lambda nb: {k: v for k, v in nb.items() if k != "cells"}, "no `cells` list"),
    (lambda nb: {**nb, "nbformat": 3, "worksheets": [{"cells": nb["cells"]}]}, "nbformat 3"),
    (lambda nb: {**nb, "nbformat": "4"}, "nbformat is '4'"),
    (lambda nb: {**nb, "cells": [*nb["cells"][:2], {"cell_type": "code", "source": 7}]},
     "cell 3: `source` is not a string"),
    (lambda nb: {**nb, "cells": [{"cell_type": "widget", "source": ""}]}, "unknown cell_type"),
    (lambda nb: {**nb, "cells": ["x"]}, "cell 1 is not an object"),
    (lambda nb: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
])
def test_broken_notebooks_are_parse_errors(mutate, reason):
    nb = json.loads(NB.read_text())
    bad = mutate(copy.deepcopy(nb))
    data = (bad if isinstance(bad, str) else json.dumps(bad)).encode()
    with pytest.raises(ParseError) as e:
        notebook.parse(data, source="broken.ipynb")
    assert e.value.source == "broken.ipynb" and reason in e.value.reason


def test_empty_cells_keep_their_numbers():
    nb = json.loads(NB.read_text())
    nb["cells"].insert(0, {"cell_type": "code", "source": [], "outputs": [], "metadata": {},
                           "execution_count": None})
    doc = notebook.parse(json.dumps(nb).encode(), source="e.ipynb")
    firsts = sorted(dict(s.meta)["cell_start"] for s in doc.sections if s.kind == "markdown")
    assert firsts[0] == 3 and dict(doc.meta)["cells"] == 41  # (cell 2: a heading alone)


@pytest.mark.corpus
@pytest.mark.parametrize("fmt", ["notebook", "notebook-outputs"])
def test_corpus_notebooks_contract(fmt):
    for path in corpus_files("notebooks"):
        check_contract(path.read_bytes(), path.name, Chunker(max_tokens=128), fmt=fmt)


def test_a_markdown_cell_the_markdown_parser_refuses_keeps_its_cell_section():
    nb = json.loads(NB.read_text())
    nb["cells"][1]["source"] = ["plain words\x00 then a NUL"]  # decode() refuses NUL bytes
    doc = notebook.parse(json.dumps(nb).encode(), source="n.ipynb")
    cell2 = [s for s in doc.sections if s.kind == "markdown" and dict(s.meta)["cell_start"] == 2]
    assert len(cell2) == 1 and doc.text[cell2[0].start:cell2[0].end].startswith("plain words")
    assert any(w.startswith("cell 2: not parsed") for w in doc.warnings)


def _notebook(*codes: str) -> bytes:
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": code} for code in codes]
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": cells,
                       "metadata": {"kernelspec": {"language": "python", "name": "python3"}}
                       }).encode()


def test_ipython_lines_are_no_syntax_error():
    """A Python notebook's cells are IPython: the fixture's `ls nbpackage` (automagic, cells
    17 and 32) said `syntax errors` on every ingest. Magics, shell lines and cell magics are
    statements of their own; the text stays exact; a real error is still said."""
    doc = notebook.parse(NB.read_bytes(), source=NB.name)
    assert doc.warnings == ()
    assert "ls nbpackage" in doc.text
    cells = ("import os\n%matplotlib inline\nls data/raw\n!pip install x\n"
             "def f(x):\n    %time y = x\n    return y\n",
             "%%bash\nls -la | wc -l\necho done",
             "ls = [1, 2]\nls\n")
    doc = notebook.parse(_notebook(*cells), source="magic.ipynb")
    assert doc.warnings == ()
    assert doc.text == "\n\n".join(c.rstrip() for c in cells)
    f = next(s for s in doc.sections if s.kind == "function")
    assert doc.text[f.start:f.end].startswith("def f(x):\n    %time y = x")
    statements = {doc.text[s.start:s.end] for s in doc.sections if s.kind == "statement"}
    assert {"%matplotlib inline", "ls data/raw", "!pip install x", "ls = [1, 2]"} <= statements
    check_contract(_notebook(*cells), "magic.ipynb", Chunker(max_tokens=32), fmt="notebook")
