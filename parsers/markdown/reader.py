"""Markdown (CommonMark + GFM tables) via markdown-it-py's block parser.

Sections: heading-led sections (ATX and setext) nesting by level, and under them the blocks:
paragraphs, lists (items as children), fenced and indented code, tables (rows as children,
the header row as context), block quotes, HTML blocks, and YAML/TOML front matter. The title
line of an MkDocs content tab, admonition or collapsible block (`=== "Linux"`, `!!! note`,
`??? tip "Title"`) is a `label`: it opens the indented block after it, as a heading would,
and that block, indented code to CommonMark, is parsed again as the Markdown MkDocs reads
(a `container` of paragraphs, fences, tables, nested tabs).
A block of pymdownx's Blocks extension (`/// tip` … `///`, as in FastAPI's docs) is a
`container` section around the blocks it holds, its opening line a `label`.
Only the block rules that shape structure run (see `_markdown`): inline parsing is not
needed for structure and is most of markdown-it's time. Line ranges (`Token.map`) become
`str` offsets through the line starts markdown-it computes.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache, partial
from operator import attrgetter
from typing import Callable

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.text.tables import PIPE, first_pipe_line, table_facts
from chunkwise.text.textio import decode

_FRONT_MATTER = re.compile(r"(---|\+\+\+)[ \t]*\n(.*?\n)?(---|\.\.\.|\+\+\+)[ \t]*(\n|$)", re.S)
_FM_TITLE = re.compile(r"""^title\s*[:=]\s*["']?(.*?)["']?\s*$""", re.M)
# Inline markup to drop from heading text (the canonical text keeps it verbatim).
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|!?\[([^\]]*)\]\[[^\]]*\]")
_MARKUP = re.compile(r"[*_`]+|<[^>]+>|\{\s*[#.:][^}]*\}")
_MARKUP_START = re.compile(r"[\[*_`<{]")
_LEVEL_HEADING = 100  # h1 = 99 … h6 = 94
_LEVEL_FRONT, _LEVEL_BLOCK, _LEVEL_ITEM = 60, 50, 10
_TOKEN_LEVEL = attrgetter("level")
#: a one-line paragraph that titles the indented block after it: a content tab (`=== "Tab"`),
#: an admonition (`!!! note "Title"`) or a collapsible block (`??? tip`, `???+ tip`) of
#: Python-Markdown's extensions (MkDocs, Material for MkDocs)
_LABEL = re.compile(r"[ ]{0,3}(?:===[!+]?|!!!|\?\?\?\+?)[ \t]+\S[^\n]*\n?")
#: the first character of a line that is a label (or, indented, may hold one): a cheap test
_LABEL_FIRST = frozenset(" \t=!?")
#: the first line of a block of pymdownx's Blocks extension (FastAPI's docs: `/// tip`,
#: `/// note | Technical Details`, `//// tab | Linux`), closed by a line of as many slashes
_CONTAINER_OPEN = re.compile(r"[ ]{0,3}(/{3,})[ \t]+[A-Za-z][\w-]*(?:[ \t]*\|[^\n]*)?[ \t]*(?:\n|$)")
_CONTAINER_CLOSE = re.compile(r"[ ]{0,3}(/{3,})[ \t]*\n?")
#: a newline and a line that starts with `///` (a regex led by a literal: fast to search)
_SLASH_LINE = re.compile(r"\n[ \t]*///")
_FENCE_OPEN = re.compile(r"(`{3,}(?=[^`\n]*$)|~{3,})", re.M)
_SPACES = re.compile(" *")
#: the start of a line whose first character (after spaces) is not a letter, or a blank line
_NOT_LETTER_LINE = re.compile(r"^ *(?=[^ ])(?![^\W\d_])", re.M)
_LEVEL_CONTAINER = 55  # above the blocks it holds, below front matter and headings
#: admonitions in tabs in admonitions…: bodies deeper than this stay indented code (each
#: level parses its body again, so the work is at most this many passes over the text)
_MAX_BODY_DEPTH = 4
#: kinds of block with a context (`_block_context`), and with children (`_children`)
_CONTEXT_KINDS, _CHILD_KINDS = frozenset({"table", "code"}), frozenset({"table", "list"})
_BLOCK_KINDS = {
    "paragraph_open": "paragraph", "bullet_list_open": "list", "ordered_list_open": "list",
    "fence": "code", "code_block": "code", "table_open": "table",
    "blockquote_open": "quote", "html_block": "html", "hr": "rule",
}


@lru_cache(maxsize=2)
def _markdown(fast: bool = True):
    """The block parser, and a function making its block state for a text. `fast` swaps in the equivalent
    rules and state of `markdown_rules` where they apply (under the markdown-it-py release
    they follow, which `pyproject.toml` pins); elsewhere markdown-it's own run, slower."""
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import StateBlock

    md = MarkdownIt("commonmark", {"maxNesting": 20}).enable("table")
    # Only block structure is needed. Inline parsing (and text_join, which post-processes
    # it) would be most of markdown-it's time. Link reference definitions only serve
    # inline links: without their rule, definition lines are paragraph text, a section
    # like any other (before, they had none and were glued to the next block).
    # `normalize` rewrites every newline of the source: `decode` already normalised them,
    # and its other change (NUL -> U+FFFD) moves no line, so `Token.map` is the same.
    # `html_block` stays: an HTML block may span blank lines (a comment, <pre>) whose
    # inside must not be read as Markdown headings or lists.
    md.disable(["inline", "text_join", "reference", "normalize"])
    if fast:
        try:
            from . import rules as fast_rules
        except ImportError:  # a markdown-it-py without the internals they use
            fast_rules = None
        if fast_rules is not None and fast_rules.install(md):
            return md, partial(fast_rules.State, md=md)
    return md, lambda text: StateBlock(text, md, {}, [])


def parse(data: bytes, *, source: str, _fast: bool = True) -> ParsedDocument:
    text, warnings = decode(data, source)
    md, new_state = _markdown(_fast)
    # What `md.parse` does, minus the core rules (none needed, see `_markdown`), keeping the
    # line starts markdown-it computes anyway (they index `Token.map`; the fake line past
    # the end starts at len(text)), and starting after the front matter.
    state = new_state(text)
    starts = list(state.bMarks)
    title, body_line, sections = _front_matter(text, starts)
    try:
        md.block.tokenize(state, body_line, state.lineMax)
        sections += _sections(state.tokens, starts, text, (title,) if title else (),
                              parse_body=partial(_tokenize_body, md, state),
                              slash_lines=_slash_lines(text))
    except RecursionError as e:
        raise ParseError(source, "Markdown nested too deeply") from e
    return ParsedDocument(source=source, format="markdown", text=text,
                          sections=tuple(sections), title=title, warnings=tuple(warnings),
                          prose=True, views=(("row", "table"),))


def _tokenize_body(md, state, a: int, b: int, columns: int) -> list:
    """The tokens of lines [a, b) of `state` (an MkDocs body, see `_sections`) read as a
    document of their own, without their first `columns` columns of indentation: the
    tokens of a second parse of the dedented lines, without a dedented copy. markdown-it
    measures every indentation from `blkIndent`, and `columns` is a multiple of four, where
    tab stops fall; `lineMax` ends the body as the end of a text would (a paragraph reads
    on to `lineMax`); the rest is a fresh state's. Line numbers in the tokens' maps are the
    whole text's. Call it only once the whole text is tokenized (nothing is restored)."""
    state.tokens, state.level, state.line = [], 0, a
    state.blkIndent, state.lineMax = columns, b
    state.parentType, state.listIndent, state.ddIndent, state.tight = "root", -1, -1, False
    md.block.tokenize(state, a, b)
    return state.tokens


def _front_matter(text: str, starts: list[int]) -> tuple[str, int, list[Section]]:
    """YAML/TOML front matter: (its title, the first line after it, its section)."""
    fm = _FRONT_MATTER.match(text)
    if not fm:
        return "", 0, []
    body_line = bisect_right(starts, fm.end() - 1) - 1 + (1 if fm.group(4) else 0)
    t = _FM_TITLE.search(fm.group(2) or "")
    title = t.group(1).strip() if t else ""
    return title, body_line, [Section(0, starts[body_line], _LEVEL_FRONT, "front_matter")]


def _fold(title: str) -> str:
    """A title compared loosely: case and runs of whitespace do not count."""
    return " ".join(title.split()).casefold()


def _sections(tokens, offsets: list[int], text: str, root: tuple[str, ...], *,
              parse_body: Callable[[int, int, int], list] | None = None,
              depth: int = 0, slash_lines: frozenset[int] = frozenset()) -> list[Section]:
    """Heading sections, top-level blocks and their items or rows, in one walk over the
    top-level tokens. Those follow each other; an opening token's closing one is the next
    token at level 0, found with `list.index` (most tokens are nested ones).

    `offsets[i]`: where line i of `text` starts. The body of an MkDocs admonition or tab
    (the indented block after its `label`) is, to CommonMark, indented code: with
    `parse_body` (lines, columns -> tokens), its lines are parsed again without their
    indentation, down to `_MAX_BODY_DEPTH` levels, and it becomes a `container` of the
    blocks found (`depth`: the level of this call; headings in a body are paragraphs, they
    cannot end sections).
    `slash_lines`: the starts of the lines that may open or close a pymdownx block (see
    `_slash_lines`); `_containers` looks only at paragraphs that start there."""
    indent = 4 * depth  # spaces before the lines of this body in `text`
    levels = list(map(_TOKEN_LEVEL, tokens))
    heads: list[tuple[int, int, tuple[str, ...]]] = []  # (level, start, path) of headings
    stack: list[tuple[int, str]] = []  # the open headings: (level, text)
    path = root
    blocks: list[Section] = []
    tops: list[int] = []  # indices in `blocks` of the top-level blocks
    i, n = 0, len(tokens)
    while i < n:
        tok = tokens[i]
        close = levels.index(0, i + 1) if tok.nesting == 1 else i
        lines, ttype = tok.map, tok.type
        kind = _BLOCK_KINDS.get(ttype)
        if lines is None:
            pass
        elif ttype == "heading_open" and not depth:
            level = int(tok.tag[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _heading_text(tokens[i + 1].content)))
            path = root + tuple(h for _, h in stack)
            if root and len(path) > len(root) and _fold(stack[0][1]) == _fold(root[-1]):
                path = path[:len(root)] + path[len(root) + 1:]  # `# X` under `title: X`
            heads.append((level, offsets[lines[0]], path))
        elif kind or ttype == "heading_open":  # (a heading in a body)
            a, b = lines
            start, end = offsets[a], offsets[b]
            if kind is None or kind == "paragraph":
                kind = "paragraph"
                if b - a == 1 and text[start] in _LABEL_FIRST and _LABEL.fullmatch(
                        text, _skip_indent(text, start, indent) if indent else start, end):
                    kind = "label"
            elif ttype == "code_block" and parse_body is not None and tops \
                    and depth < _MAX_BODY_DEPTH and blocks[tops[-1]].kind == "label":
                body = _plain_body(text, start, end, path, indent + 4)
                if body is None:
                    body = _sections(parse_body(a, b, indent + 4), offsets, text, path,
                                     parse_body=parse_body, depth=depth + 1,
                                     slash_lines=slash_lines)
                tops.append(len(blocks))
                blocks.append(Section(start, end, _LEVEL_CONTAINER, "container", path))
                blocks += body
                i = close + 1
                continue
            tops.append(len(blocks))
            blocks.append(Section(start, end, _LEVEL_BLOCK, kind, path,
                                  _block_context(tok, kind, text, start)
                                  if kind in _CONTEXT_KINDS else "",
                                  table_facts(PIPE, first_pipe_line(text, start, end))
                                  if kind == "table" else ()))
            if kind in _CHILD_KINDS:
                blocks += _children(tokens, levels, i, close, offsets, path)
        i = close + 1
    if slash_lines:
        blocks += _containers(blocks, [k for k in tops if blocks[k].start in slash_lines],
                              text, [start for _, start, _ in heads], indent)
    return _heading_sections(heads, len(text)) + blocks


def _plain_body(text: str, start: int, end: int, path: tuple[str, ...],
                columns: int) -> list[Section] | None:
    """The sections of the body `text[start:end]` (indented by `columns` spaces) when it is
    one paragraph of lines that start with a letter, or one fenced code block: what
    markdown-it would find, found without parsing (most bodies are one or the other).
    None for anything else."""
    if text.find("\t", start, end) != -1:
        return None
    stop = end - 1 if text[end - 1] == "\n" else end  # without the last newline
    lead = _SPACES.match(text, start).end()  # every line has `columns` spaces at least
    if lead - start - columns > 3:  # four more: code inside the body
        return None
    if _NOT_LETTER_LINE.search(text, start, stop) is None:
        return [Section(start, end, _LEVEL_BLOCK, "paragraph", path)]
    fence = _FENCE_OPEN.match(text, lead, stop)
    nl = text.find("\n", lead, stop) if fence else -1
    if nl == -1:
        return None
    mark = fence.group(1)
    close = _fence_close(columns, mark[0], len(mark)).search(text, nl + 1, stop)
    if close is None or close.end() != stop:  # unclosed, or more blocks after it
        return None
    return [Section(start, end, _LEVEL_BLOCK, "code", path, text[start:nl].strip())]


@lru_cache(maxsize=None)
def _fence_close(columns: int, char: str, length: int) -> re.Pattern:
    """A line closing a fence of `length` `char`s in a body indented by `columns` spaces."""
    return re.compile("^ {%d,%d}%s{%d,}[ \t]*$" % (columns, columns + 3, re.escape(char),
                                                    length), re.M)


def _skip_indent(text: str, at: int, columns: int) -> int:
    """`at` moved past up to `columns` columns of spaces and tabs (a tab reaches the next
    multiple of four)."""
    col = 0
    while col < columns and at < len(text) and text[at] in " \t":
        col = col + 4 - col % 4 if text[at] == "\t" else col + 1
        at += 1
    return at


def _slash_lines(text: str) -> frozenset[int]:
    """Where the lines that start with `///` (after spaces and tabs) start: the only ones
    that can open or close a pymdownx block, at any depth."""
    if "///" not in text:  # most documents
        return frozenset()
    # with a newline before the first line, each match starts where its line does in `text`
    return frozenset(m.start() for m in _SLASH_LINE.finditer("\n" + text))


def _containers(blocks: list[Section], tops: list[int], text: str,
                heading_starts: list[int], indent: int = 0) -> list[Section]:
    """Blocks of pymdownx's Blocks extension: from a paragraph opening with `/// name` to the
    paragraph of as many slashes that closes it, among the top-level blocks `tops` (those
    that can be one or the other, at least: the others change nothing), holding no
    heading. Each becomes a `container` section around its blocks, so the fitter keeps it
    whole when it fits; a one-line opener becomes a `label`, glued to the block after it
    and repeated in the context of that block's later pieces. Unclosed ones are left as
    they are."""
    out: list[Section] = []
    stack: list[tuple[int, int, bool]] = []  # open containers: slashes, index, one-line opener
    for k in tops:
        b = blocks[k]
        if b.kind != "paragraph":
            continue
        at = _skip_indent(text, b.start, indent) if indent else b.start
        close = _CONTAINER_CLOSE.fullmatch(text, at, b.end)
        if close:
            slashes = len(close.group(1))
            while stack and stack[-1][0] != slashes:  # an opener never closed
                stack.pop()
            if stack:
                _, at, alone = stack.pop()
                opener = blocks[at]
                inner = bisect_right(heading_starts, b.end - 1) \
                    - bisect_right(heading_starts, opener.start)
                if not inner:
                    out.append(Section(opener.start, b.end, _LEVEL_CONTAINER, "container",
                                       opener.path))
                    if alone:
                        blocks[at] = Section(opener.start, opener.end, opener.level, "label",
                                             opener.path, opener.context)
            continue
        first = _CONTAINER_OPEN.match(text, at, b.end)
        if first:
            alone = first.end() >= b.end or not text[first.end():b.end].strip()
            stack.append((len(first.group(1)), k, alone))
    return out


def _heading_text(raw: str) -> str:
    text = raw
    if _MARKUP_START.search(raw):  # most headings are plain text
        if "[" in text:  # (many have only an anchor: `{ #install }`)
            text = _LINK.sub(lambda m: m.group(1) or m.group(2) or "", text)
        text = _MARKUP.sub("", text)
    return " ".join(text.split()).rstrip("#").strip() or raw.strip()


def _heading_sections(heads: list[tuple[int, int, tuple[str, ...]]], n: int) -> list[Section]:
    """Each heading runs to the next heading of the same or a higher rank."""
    out = []
    open_: list[tuple[int, int, tuple[str, ...]]] = []
    for level, start, path in [*heads, (0, n, ())]:
        while open_ and open_[-1][0] >= level:
            lv, st, pth = open_.pop()
            out.append(Section(st, start, _LEVEL_HEADING - lv, "section", pth))
        if level:
            open_.append((level, start, path))
    return out


def _block_context(tok, kind: str, text: str, start: int) -> str:
    """Repeated before later chunks of a split block: a table's header row and delimiter
    row, a code fence's opening line (so the language is known)."""
    if kind == "table":  # each line without its indentation (a table in a tab's body)
        first = text.find("\n", start)
        second = text.find("\n", first + 1) if first != -1 else -1
        head = text[start:second if second != -1 else len(text)]
        return "\n".join(line.strip() for line in head.split("\n")).strip()
    if kind == "code" and tok.type == "fence":
        nl = text.find("\n", start)
        return text[start:nl if nl != -1 else len(text)].strip()
    return ""


def _children(tokens, levels: list[int], i: int, close: int, offsets: list[int],
              path: tuple[str, ...]) -> list[Section]:
    """Table body rows, or top-level list items, as child sections of block `i`."""
    table = tokens[i].type == "table_open"
    want, depth = ("tr_open", 2) if table else ("list_item_open", 1)
    header_line = tokens[i].map[0]
    out = []
    # At this depth tokens come in pairs: an opening one, then (after deeper ones) its close.
    k = _find(levels, depth, i + 1, close)
    while k >= 0:
        tok = tokens[k]
        if tok.type == want and tok.map is not None and not (table and tok.map[0] == header_line):
            out.append(Section(offsets[tok.map[0]], offsets[tok.map[1]], _LEVEL_ITEM,
                               "row" if table else "item", path))
        k = _find(levels, depth, levels.index(depth, k + 1, close) + 1, close)
    return out


def _find(levels: list[int], level: int, lo: int, hi: int) -> int:
    """The first index in [lo, hi) of a token at `level`, or -1."""
    try:
        return levels.index(level, lo, hi)
    except ValueError:
        return -1
