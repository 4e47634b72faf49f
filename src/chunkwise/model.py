"""The data model: what parsers produce (`Section`, `ParsedDocument`) and what chunkers emit
(`Chunk`). All offsets are Python `str` indices into the document's canonical text."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


def embed_text(context: str, body: str) -> str:
    """What is embedded and counted against the budget (DESIGN: the chunk contract): the
    context, a blank line, then the body (the text, or its view); the body alone without a
    context. `embed_text(context, "")` is the context's share of an embed text."""
    return f"{context}\n\n{body}" if context else body


#: section meta keys that are format facts for the chunker's views, written by the parser
#: that knows them and never copied into a chunk's meta (`merge_meta`): a table's
#: `delimiter` and `header_cells` (`chunkwise.text.tables.table_facts`), how a code
#: definition's documentation is written (`line_comment`, `docstrings`:
#: `chunkwise.text.doclines.doc_facts`)
VIEW_FACTS = ("delimiter", "header_cells", "line_comment", "docstrings")


@dataclass(frozen=True, slots=True)
class Section:
    """A structural unit of a document, as a parser reports it.

    Sections nest by containment of their spans; the fitter builds the tree itself, so a parser
    only lists them (any order). Text inside a section that no child covers (a heading line, a
    table's header row) is attached to the child that follows it (or the last one), so that a
    heading always stays with its content.
    """

    start: int
    """Index of the first character of the section in the canonical text."""
    end: int
    """Index one past the last character."""
    level: int
    """Boundary strength in a total order per format: a bigger unit has a higher level. Used
    to order sections with identical spans (the higher level is the parent)."""
    kind: str
    """What the section is: `section` (heading-led), `paragraph`, `list`, `item`, `code`,
    `table`, `row`, `quote`, `function`, `class`, `method`, `page`, `rows`, …"""
    path: tuple[str, ...] = ()
    """Heading path from the document title down to this section's own heading (code: the
    qualified name split at dots; CSV: the file name)."""
    context: str = ""
    """Text embedded before every chunk that starts inside this section but after its first
    character: a table's header row, the signatures enclosing a piece of a function."""
    meta: tuple[tuple[str, Any], ...] = ()
    """Format-specific metadata as (key, scalar) pairs, e.g. `(("symbol", "Parser.parse"),)`."""

    def __init__(self, start: int, end: int, level: int, kind: str, path: tuple[str, ...] = (),
                 context: str = "", meta: tuple[tuple[str, Any], ...] = ()) -> None:
        # The dataclass's own __init__ for a frozen class calls `object.__setattr__` once per
        # field; the slots' own setters are about twice as fast, and a parser makes one
        # Section per block (hundreds in a web page, a few percent of chunking it).
        _SET_START(self, start)
        _SET_END(self, end)
        _SET_LEVEL(self, level)
        _SET_KIND(self, kind)
        _SET_PATH(self, path)
        _SET_CONTEXT(self, context)
        _SET_META(self, meta)


_SET_START, _SET_END, _SET_LEVEL, _SET_KIND, _SET_PATH, _SET_CONTEXT, _SET_META = (
    Section.__dict__[name].__set__
    for name in ("start", "end", "level", "kind", "path", "context", "meta"))


@dataclass(frozen=True, slots=True)
class HeaderCuts:
    """Where a span that opens with definition headers is cut (`HeaderPlanner.cuts`)."""

    cuts: tuple[int, ...] = ()
    """Sorted offsets inside the span; none: the span is one chunk (it fits whole)."""
    alone: int = -1
    """A cut the packer must keep (-1: none): a chunk starts at the cut that stands for it."""


class HeaderPlanner(Protocol):
    """A parser's say on where the headers glued before a body (`signature` sections: the
    tree's `lead_cuts`) are cut from it when they do not fit with what follows. The code
    parsers provide one (`ParsedDocument.headers`); the fitter asks it and packs what it
    says, so that no format's header rules live in the format-agnostic engine."""

    def cuts(self, text: str, a: int, b: int, glue: int, heads: tuple[tuple[int, ...], ...],
             fits: Callable[[int, int], bool]) -> HeaderCuts | None:
        """The cuts of `text[a:b]` (trimmed), whose headers `heads` (each: where it starts,
        where it may be cut, where it ends) are glued before `glue`; `fits(s, e)` says
        whether `text[s:e]` fits as a chunk. None: split it as any text (cuts after `glue`)."""
        ...


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """A parser's whole output: the canonical text and its structure."""

    source: str
    """The path as given, or a caller-supplied document id."""
    format: str
    """`markdown`, `html`, `pdf`, `python`, `csv`, `text`, …"""
    text: str
    """The canonical text; every offset in the document and its chunks indexes this string."""
    sections: tuple[Section, ...] = ()
    """Structural units in any order; see `Section`."""
    title: str = ""
    """Document title where the format has one (front matter, `<title>`, PDF metadata)."""
    page_starts: tuple[int, ...] | None = None
    """For paged formats: the offset where each page begins (page 1 first), else None."""
    path_in_context: bool = True
    """Whether chunks embed their heading path (`A > B > C`) in `context`. Code sets it False:
    the enclosing signatures say more."""
    context: str = ""
    """Embedded first in every chunk's context. Code: the file name as a comment
    (`# sse.py`), which names the library and module that a chunk's text often does not."""
    warnings: tuple[str, ...] = ()
    """Non-fatal problems found while parsing (encoding fallback, no text layer, …)."""
    meta: tuple[tuple[str, Any], ...] = ()
    """Document-level metadata as (key, scalar) pairs, copied into every chunk's metadata."""
    leaf_splitters: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    """(kind, splitters): the cut levels, coarsest first, of the text of a section of that
    kind that has no child sections, in place of the format's own (`chunkwise.text.splitting`'s
    `LINED_LEVELS` or `PROSE_LEVELS`, as many of them). A CSV row is cut between its fields
    before inside one, without a section per field."""
    prose: bool = False
    """Whether the text outside non-prose sections (code, tables, …: `chunkwise.text.splitting`'s
    `NON_PROSE` kinds) is prose: cut at sentences before lines, marks and lead-ins kept with
    their neighbours. Parsers of prose formats (Markdown, HTML, PDF, plain text) set it;
    code and tables leave it False."""
    line_numbers: bool = True
    """Whether the canonical text is the file's text line for line, so chunks record
    `line_start`/`line_end`. Parsers that extract text (HTML, PDF) set it False."""
    views: tuple[tuple[str, str], ...] = ()
    """(section kind, view name): what the embedder sees of chunks holding sections of that
    kind (`chunkwise.chunking.views`: `code`, `table`); `"*"` for every kind. Empty: the text as is."""
    headers: HeaderPlanner | None = None
    """How headers glued before a body (`signature` sections) are cut when they do not fit
    with it (the code parsers': `chunkwise.parsers.code.headers`); None: a span holding
    them is split as any text, after them when it can."""
    chunk_starts: frozenset[str] = frozenset()
    """Section kinds a chunk always starts at: packing never merges one into the chunk of the
    sections before it (code's groups of entries of a literal table, `entries`)."""

    def pages_of(self, start: int, end: int) -> tuple[int | None, int | None]:
        """1-based first and last page of the span [start, end), or (None, None)."""
        if not self.page_starts:
            return None, None
        first = bisect_right(self.page_starts, start)
        last = bisect_right(self.page_starts, max(start, end - 1))
        return max(first, 1), max(last, 1)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One unit of output: a span of the canonical text sized to the token budget."""

    id: str
    """Deterministic: hash of (source, start, end, text, options that change output)."""
    source: str
    """The path as given, or a caller-supplied document id."""
    format: str
    """Format of the document the chunk comes from."""
    text: str
    """Exactly `canonical_text[start:end]`."""
    start: int
    """Index of the first character in the canonical text."""
    end: int
    """Index one past the last character."""
    context: str
    """What is embedded before the text: heading path, table header, enclosing signatures."""
    section_path: tuple[str, ...]
    """Headings from the document title down to the chunk's own heading."""
    page_start: int | None
    """First page (1-based) for paged formats, else None."""
    page_end: int | None
    """Last page (1-based) for paged formats, else None."""
    kinds: tuple[str, ...]
    """Kinds of the sections the chunk holds, in order of first appearance."""
    tokens: int
    """Token count of `embed_text` under the chosen tokenizer."""
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """Format metadata (symbol, line_start, row_start, …): flat scalars only."""
    view: str = ""
    """What is embedded in place of `text` when the parser declares a view for the chunk's
    kind (`chunkwise.chunking.views`), else "" (the text itself is embedded)."""
    parent: tuple[str, int, int, tuple[str, ...]] | None = None
    """The section enclosing the chunk: (id, start, end, heading path); id is the hash of
    (source, start, end), the same for every chunk of that section (small-to-big retrieval)."""

    def __init__(self, id: str, source: str, format: str, text: str, start: int, end: int,
                 context: str, section_path: tuple[str, ...], page_start: int | None,
                 page_end: int | None, kinds: tuple[str, ...], tokens: int,
                 meta: dict[str, Any] | None = None, view: str = "",
                 parent: tuple[str, int, int, tuple[str, ...]] | None = None) -> None:
        # Through the slots' own setters, as `Section.__init__`: 1.1 µs a chunk instead of
        # the generated frozen __init__'s 1.7 µs (about 1% of chunking Markdown at 512
        # tokens). `meta` defaults to a new dict, as the field's default factory does.
        _SET_ID(self, id)
        _SET_SOURCE(self, source)
        _SET_FORMAT(self, format)
        _SET_TEXT(self, text)
        _SET_CHUNK_START(self, start)
        _SET_CHUNK_END(self, end)
        _SET_CHUNK_CONTEXT(self, context)
        _SET_SECTION_PATH(self, section_path)
        _SET_PAGE_START(self, page_start)
        _SET_PAGE_END(self, page_end)
        _SET_KINDS(self, kinds)
        _SET_TOKENS(self, tokens)
        _SET_CHUNK_META(self, {} if meta is None else meta)
        _SET_VIEW(self, view)
        _SET_PARENT(self, parent)

    @property
    def embed_text(self) -> str:
        """The string that is embedded and counted against the budget: the context, then
        the view of the text (the text itself unless the parser declares a view)."""
        return embed_text(self.context, self.view or self.text)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of the contract (`chunkwise chunk --jsonl`)."""
        return {
            "id": self.id,
            "source": self.source,
            "format": self.format,
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "context": self.context,
            "section_path": list(self.section_path),
            "page_start": self.page_start,
            "page_end": self.page_end,
            "kinds": list(self.kinds),
            "tokens": self.tokens,
            "meta": dict(self.meta),
            **({"view": self.view} if self.view else {}),
            **({"parent": {"id": self.parent[0], "start": self.parent[1], "end": self.parent[2],
                           "section_path": list(self.parent[3])}} if self.parent else {}),
        }


(_SET_ID, _SET_SOURCE, _SET_FORMAT, _SET_TEXT, _SET_CHUNK_START, _SET_CHUNK_END,
 _SET_CHUNK_CONTEXT, _SET_SECTION_PATH, _SET_PAGE_START, _SET_PAGE_END, _SET_KINDS, _SET_TOKENS,
 _SET_CHUNK_META, _SET_VIEW, _SET_PARENT) = (Chunk.__dict__[name].__set__ for name in (
    "id", "source", "format", "text", "start", "end", "context", "section_path", "page_start",
    "page_end", "kinds", "tokens", "meta", "view", "parent"))
