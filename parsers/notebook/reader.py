"""Jupyter notebooks (`.ipynb`, nbformat 4): Markdown cells as Markdown, code cells as code.

Canonical text: the sources of the non-empty cells, in order, each without its trailing
whitespace, joined by one blank line (`"\\n\\n"`); offsets index that string, not the
JSON file. With outputs kept (`parse(..., outputs=True)`, or the format `notebook-outputs`:
`chunkwise chunk --format notebook-outputs`), a code cell with text outputs is followed by a
blank line, a line `Output:`, and the outputs' text: streams, `text/plain` results, and
errors as `name: value` (terminal colour codes removed; images and HTML left out). Outputs
are left out by default: they are mostly data and noise, and they change on every run.

Sections: the notebook's headings (from every Markdown cell) run across cells to the next
heading of the same or a higher rank, as in one Markdown document, so the section path of a
code cell is the file name and the headings above it. Under them each cell is a section
(`markdown`, `code` or `raw`; a Markdown cell holding headings is cut at each, so cells nest
in headings), with `cell_start`/`cell_end` in its meta (cells are numbered from 1 in file
order, empty ones included); a heading section has those of the cells it spans. A Markdown
cell (or part) of headings alone is no section: as in Markdown, a heading is glued to what
follows it, and a chunk that holds it with only part of what follows counts from the cell
after it. Inside, a Markdown cell has the blocks `chunkwise.parsers.markdown.reader`
finds, and a code cell the sections of the parser of the notebook's language
(`metadata.kernelspec.language`, else `metadata.language_info.name`; `code.LANGUAGES`), with
that parser's line numbers as `cell_line_start`/`cell_line_end`. A language without a parser
is cut by lines, with a warning. Outputs are an `output` section of their cell.

A file that is not JSON, not a notebook, nbformat 3 or below, or with malformed cells is a
`ParseError` naming the reason.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import replace
from pathlib import PurePath
from typing import Any

from chunkwise.errors import ChunkwiseError, ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.text.splitting import LINES, SENTENCES, WORDS
from chunkwise.text.textio import decode, normalize_newlines

from ..code import languages as code_languages
from ..markdown import reader as markdown
from ..code.headers import HEADERS

_LEVEL_HEADING = 100  # h1 = 99 … h6 = 94, as Markdown's
_LEVEL_CELL, _LEVEL_OUTPUT = 70, 60
_SEPARATOR = "\n\n"
_OUTPUT_MARK = "Output:\n"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
#: a lone surrogate: a `\udXXX` escape of the JSON that pairs with nothing (a pair is one
#: code point once decoded); no tokenizer or model takes one
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_LONE_NOTE = ("lone surrogates (`\\udXXX` escapes that pair with nothing) replaced by "
              "U+FFFD: no tokenizer or embedding model reads them")
_LANGUAGE_ALIASES = {"python3": "python", "python2": "python", "ipython": "python",
                     "ipython3": "python", "py": "python",
                     # kernels' names for the languages of parsers/code/languages.py
                     "c++": "cpp", "c++11": "cpp", "c++14": "cpp", "c++17": "cpp",
                     "xcpp": "cpp", "c#": "csharp", "js": "javascript", "node": "javascript",
                     "nodejs": "javascript", "ts": "typescript", "sh": "bash", "shell": "bash"}
#: cut levels of an output's text (it is not prose, though the notebook is)
_OUTPUT_LEVELS = (LINES, SENTENCES, WORDS)


def parse(data: bytes, *, source: str, outputs: bool = False) -> ParsedDocument:
    """Parse a notebook into heading, cell, Markdown block and code sections."""
    nb, decoded = _load(data, source)
    language = _language(nb)
    fmt = _LANGUAGE_ALIASES.get(language, language)
    code_parser = (code_languages.parser_for(fmt) if fmt in code_languages.LANGUAGES
                   else None)
    if fmt == "python":
        code_parser = _ipython(code_parser)
    name = PurePath(source).name or source
    warnings: dict[str, list[int]] = {}
    if code_parser is None:
        warnings[f"no parser for the notebook's language {language!r}: code cells are "
                 "cut by lines"] = []
    cells = _cells(nb, source, outputs, warnings)
    text, spans = _layout(cells)
    parts, heads, splitters = _cell_structure(cells, spans, code_parser, source, warnings)
    heads.sort()
    head_sections, head_starts, head_paths = _headings(heads, len(text), (name,))

    def path_at(pos: int) -> tuple[str, ...]:
        k = bisect_right(head_starts, pos) - 1
        return head_paths[k] if k >= 0 else (name,)

    sections = _with_cells(head_sections, cells, spans)
    sections += _cell_sections(cells, spans, head_starts, parts, path_at)
    for number, shift, code, s in parts:
        meta = tuple((f"cell_{k}" if k in ("line_start", "line_end") else k, v)
                     for k, v in s.meta) + (("cell_start", number), ("cell_end", number))
        a = shift + s.start
        # (a Markdown block's own path is its cell's headings: the notebook's replace them)
        path = (*path_at(a), *s.path) if code else path_at(a)
        sections.append(Section(a, shift + s.end, s.level, s.kind, path, s.context, meta))
    return ParsedDocument(
        source=source, format="notebook", text=text, sections=tuple(sections), title=name,
        warnings=(*decoded, *_notes(warnings)), prose=True, line_numbers=False,
        leaf_splitters=tuple(splitters.items()), headers=HEADERS,
        chunk_starts=code_languages.CHUNK_STARTS,
        meta=(("language", language), ("cells", len(nb["cells"])), ("outputs", outputs)))


#: (cell number, where its text starts in the canonical text, whether it is code, section)
_Part = tuple[int, int, bool, Section]


def _cell_structure(cells: list[tuple[int, str, str, str]], spans: list[tuple[int, int, int]],
                    code_parser, source: str, warnings: dict[str, list[int]]
                    ) -> tuple[list[_Part], list[tuple[int, int, str]], dict[str, tuple]]:
    """The sections each cell's parser finds (cell-relative, with where to shift them), the
    headings of the Markdown cells (start, rank, title), and the parsers' leaf splitters."""
    parts: list[_Part] = []
    heads: list[tuple[int, int, str]] = []
    splitters: dict[str, tuple] = {"output": _OUTPUT_LEVELS}
    for (number, ctype, src, out), (start, src_end, end) in zip(cells, spans):
        parser = _markdown_parser() if ctype == "markdown" else \
            code_parser if ctype == "code" else None
        doc = _sub_parse(parser, src, source, number, warnings) if parser else None
        if doc is not None:
            for kind, levels in doc.leaf_splitters:
                splitters.setdefault(kind, levels)
            for s in doc.sections:
                if ctype == "markdown" and s.kind == "section":
                    heads.append((start + s.start, _LEVEL_HEADING - s.level, s.path[-1]))
                else:
                    parts.append((number, start, ctype == "code", s))
        if ctype == "code" and out:
            parts.append((number, src_end + len(_SEPARATOR), False, Section(
                0, end - src_end - len(_SEPARATOR), _LEVEL_OUTPUT, "output")))
    return parts, heads, splitters


def _with_cells(head_sections: list[Section], cells: list[tuple[int, str, str, str]],
                spans: list[tuple[int, int, int]]) -> list[Section]:
    """The heading sections with the numbers of the first and last cell each spans."""
    numbers, starts = [c[0] for c in cells], [sp[0] for sp in spans]

    def cell_at(pos: int) -> int:
        return numbers[max(0, bisect_right(starts, pos) - 1)]

    return [Section(h.start, h.end, h.level, h.kind, h.path, "", (
        ("cell_start", cell_at(h.start)), ("cell_end", cell_at(h.end - 1))))
        for h in head_sections]


def _cell_sections(cells: list[tuple[int, str, str, str]], spans: list[tuple[int, int, int]],
                   head_starts: list[int], parts: list[_Part], path_at) -> list[Section]:
    """A section per cell, a Markdown cell cut at each heading in it (so cells nest in
    headings); a part that starts at a heading and holds no block is left out, so that the
    heading is glued to what follows it."""
    out: list[Section] = []
    block_starts = sorted(shift + s.start for _, shift, _, s in parts)
    heading_set = set(head_starts)
    for (number, ctype, _, _), (start, _, end) in zip(cells, spans):
        meta = (("cell_start", number), ("cell_end", number))
        cuts = [start, *(h for h in head_starts if start < h < end), end] \
            if ctype == "markdown" else [start, end]
        for a, b in zip(cuts, cuts[1:]):
            k = bisect_right(block_starts, a - 1)
            if ctype == "markdown" and a in heading_set and (
                    k == len(block_starts) or block_starts[k] >= b):
                continue
            out.append(Section(a, b, _LEVEL_CELL, ctype, path_at(a), "", meta))
    return out


def _notes(warnings: dict[str, list[int]]) -> tuple[str, ...]:
    """The warnings, each once, with the cells it concerns (`cells 3, 5: …`)."""
    return tuple(w if not cells else f"cell{'s' if len(cells) > 1 else ''} "
                 f"{', '.join(map(str, cells[:10]))}{'…' if len(cells) > 10 else ''}: {w}"
                 for w, cells in warnings.items())


# -- reading the notebook --------------------------------------------------------------------------
def _load(data: bytes, source: str) -> tuple[dict[str, Any], list[str]]:
    """The notebook's JSON, checked to be nbformat 4, and the decoding's warnings."""
    text, warnings = decode(data, source)
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as e:
        raise ParseError(source, f"not a notebook: invalid JSON ({e.msg})", position=e.pos) from e
    except RecursionError as e:
        raise ParseError(source, "not a notebook: JSON nested too deeply") from e
    if not isinstance(nb, dict):
        raise ParseError(source, "not a notebook: the JSON is not an object")
    major = nb.get("nbformat")
    if isinstance(major, int) and major < 4:
        raise ParseError(source, f"nbformat {major} is not supported (only 4): convert it "
                         "with `jupyter nbconvert --to notebook --nbformat 4`")
    if "cells" not in nb or not isinstance(nb["cells"], list):
        raise ParseError(source, "not a notebook: no `cells` list")
    if major != 4:
        raise ParseError(source, f"not a notebook: nbformat is {major!r}, not 4")
    if not isinstance(nb.get("metadata", {}), dict):
        raise ParseError(source, "not a notebook: `metadata` is not an object")
    return nb, warnings


def _language(nb: dict[str, Any]) -> str:
    """The notebook's language, lower case (Python when it does not say)."""
    meta = nb.get("metadata") or {}
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        value = meta.get(key)
        if isinstance(value, dict) and isinstance(value.get(field), str) and value[field]:
            return value[field].strip().lower()
    return "python"


def _cells(nb: dict[str, Any], source: str, outputs: bool, warnings: dict[str, list[int]]
           ) -> list[tuple[int, str, str, str]]:
    """(number, type, source, outputs text) of every non-empty cell; a lone surrogate in
    either becomes U+FFFD (one character for one: offsets hold), noted in `warnings`."""
    out = []
    for number, cell in enumerate(nb["cells"], 1):
        if not isinstance(cell, dict):
            raise ParseError(source, f"cell {number} is not an object")
        ctype = cell.get("cell_type")
        if ctype not in ("markdown", "code", "raw"):
            raise ParseError(source, f"cell {number}: unknown cell_type {ctype!r}")
        src = _joined(cell.get("source"), source, f"cell {number}: `source`")
        src = normalize_newlines(src).rstrip()
        shown = _outputs(cell, source, number) if outputs and ctype == "code" else ""
        src, lone = _LONE_SURROGATE.subn("\ufffd", src)
        shown, lone_shown = _LONE_SURROGATE.subn("\ufffd", shown)
        if lone or lone_shown:
            warnings.setdefault(_LONE_NOTE, []).append(number)
        if src or shown:
            out.append((number, ctype, src, shown))
    return out


def _joined(value: Any, source: str, what: str) -> str:
    """A multi-line string of nbformat: a string, or a list of strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    raise ParseError(source, f"{what} is not a string or a list of strings")


def _outputs(cell: dict[str, Any], source: str, number: int) -> str:
    """The text of a code cell's outputs (see the module docstring)."""
    texts = []
    for out in cell.get("outputs") or ():
        if not isinstance(out, dict):
            raise ParseError(source, f"cell {number}: an output is not an object")
        kind = out.get("output_type")
        if kind == "stream":
            texts.append(_joined(out.get("text", ""), source, f"cell {number}: output text"))
        elif kind in ("execute_result", "display_data"):
            data = out.get("data") or {}
            if isinstance(data, dict) and "text/plain" in data:
                texts.append(_joined(data["text/plain"], source,
                                     f"cell {number}: output text/plain"))
        elif kind == "error":
            texts.append(f"{out.get('ename', 'Error')}: {out.get('evalue', '')}")
    text = _ANSI.sub("", "\n".join(t.rstrip("\n") for t in texts))
    return normalize_newlines(text).rstrip()


def _layout(cells: list[tuple[int, str, str, str]]) -> tuple[str, list[tuple[int, int, int]]]:
    """The canonical text, and (start, end of source, end) of each cell in it."""
    pieces, spans, pos = [], [], 0
    for k, (_, _, src, out) in enumerate(cells):
        if k:
            pieces.append(_SEPARATOR)
            pos += len(_SEPARATOR)
        start = pos
        pieces.append(src)
        pos += len(src)
        src_end = pos
        if out:
            block = f"{_SEPARATOR}{_OUTPUT_MARK}{out}"
            pieces.append(block)
            pos += len(block)
        spans.append((start, src_end, pos))
    return "".join(pieces), spans


# -- cells' own structure ----------------------------------------------------------------------------
def _markdown_parser():
    return markdown.parse


def _sub_parse(parser, src: str, source: str, number: int,
               warnings: dict[str, list[int]]) -> ParsedDocument | None:
    """A cell's source parsed by its format's parser; None (the cell is cut by lines) when
    the parser refuses it or reads a text other than the source (offsets would not match)."""
    if not src:
        return None
    try:
        doc = parser(src.encode("utf-8", "surrogatepass"), source=f"{source}#cell{number}")
    except ChunkwiseError as e:
        warnings.setdefault(f"not parsed ({getattr(e, 'reason', e)}): cut by lines",
                            []).append(number)
        return None
    if doc.text != src:
        warnings.setdefault("parsed text differs from the source: cut by lines",
                            []).append(number)
        return None
    for w in doc.warnings:
        warnings.setdefault(w, []).append(number)
    return doc


#: IPython's line magics that run without `%` (automagic, on by default) and its shell aliases
_AUTOMAGIC = frozenset(
    "alias cat cd clear conda cp env history less load load_ext ls lsmagic man matplotlib "
    "mkdir more mv pip popd pushd pwd reload_ext rm rmdir run set_env store time timeit who "
    "whos xmode".split())


def _ipython(parse_python):
    """The Python parser for a Python notebook's code cells, which are IPython: a cell that
    is Python but for IPython's own lines (`%magic`, `!shell`, an automagic `ls folder`, a
    `%%cell` magic) is parsed with those lines read as statements (masked in place, lengths
    kept, then the text put back), so they are no syntax error; any other error is kept."""
    def parse_cell(data: bytes, *, source: str) -> ParsedDocument:
        doc = parse_python(data, source=source)
        if code_languages.SYNTAX_ERRORS not in doc.warnings:
            return doc
        masked = _mask_ipython(doc.text)
        if masked == doc.text:
            return doc
        again = parse_python(masked.encode("utf-8", "surrogatepass"), source=source)
        if code_languages.SYNTAX_ERRORS in again.warnings:
            return doc
        return replace(again, text=doc.text)
    return parse_cell


def _mask_ipython(src: str) -> str:
    """`src` with each IPython line (all of them under a `%%` cell magic) made a Python
    statement of the same length: a name of underscores, at the line's own indentation."""
    lines = src.split("\n")
    whole = lines[0].startswith("%%")
    out = []
    for line in lines:
        body = line.lstrip()
        word = body.split(" ", 1)[0]
        if body and (whole or body[0] in "%!" or (word in _AUTOMAGIC and " " in body
                                                  and not _is_python(body))):
            pad = len(line) - len(body)
            line = line[:pad] + "_" * len(body)
        out.append(line)
    return "\n".join(out)


def _is_python(line: str) -> bool:
    try:
        compile(line, "<cell>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _headings(heads: list[tuple[int, int, str]], n: int, root: tuple[str, ...]
              ) -> tuple[list[Section], list[int], list[tuple[str, ...]]]:
    """Heading sections across the notebook (each to the next heading of the same or a
    higher rank), with the starts of the headings and the path at each."""
    sections: list[Section] = []
    starts, paths = [], []
    open_: list[tuple[int, int, tuple[str, ...]]] = []  # (rank, start, path)
    for start, rank, title in [*heads, (n, 0, "")]:
        while open_ and open_[-1][0] >= rank:
            r, s, p = open_.pop()
            sections.append(Section(s, start, _LEVEL_HEADING - r, "section", p))
        if rank:
            path = (*(open_[-1][2] if open_ else root), title)
            open_.append((rank, start, path))
            starts.append(start)
            paths.append(path)
    return sections, starts, paths
