"""Markdown (CommonMark + GFM tables) via markdown-it-py's block parser.

Sections: heading-led sections (ATX and setext) nesting by level, and under them the blocks:
paragraphs, lists (items as children), fenced and indented code, tables (rows as children,
the header row as context), block quotes, HTML blocks, and YAML/TOML front matter. Only the
block rules run: inline parsing is not needed for structure and is most of markdown-it's
time. Line ranges (`Token.map`) become `str` offsets through `LineIndex`.
"""

from __future__ import annotations

import re
from functools import lru_cache

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.textio import LineIndex, decode

_FRONT_MATTER = re.compile(r"(---|\+\+\+)[ \t]*\n(.*?\n)?(---|\.\.\.|\+\+\+)[ \t]*(\n|$)", re.S)
_FM_TITLE = re.compile(r"""^title\s*[:=]\s*["']?(.*?)["']?\s*$""", re.M)
# Inline markup to drop from heading text (the canonical text keeps it verbatim).
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|!?\[([^\]]*)\]\[[^\]]*\]")
_MARKUP = re.compile(r"[*_`]+|<[^>]+>|\{\s*[#.:][^}]*\}")
_LEVEL_HEADING = 100  # h1 = 99 … h6 = 94
_LEVEL_FRONT, _LEVEL_BLOCK, _LEVEL_ITEM = 60, 50, 10
_BLOCK_KINDS = {
    "paragraph_open": "paragraph", "bullet_list_open": "list", "ordered_list_open": "list",
    "fence": "code", "code_block": "code", "table_open": "table",
    "blockquote_open": "quote", "html_block": "html", "hr": "rule",
}


@lru_cache(maxsize=1)
def _markdown():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"maxNesting": 20}).enable("table")
    md.disable(["inline", "text_join"])
    return md


def parse(data: bytes, *, source: str) -> ParsedDocument:
    text, warnings = decode(data, source)
    lines = LineIndex(text)
    sections: list[Section] = []
    title = ""
    body_line = 0
    fm = _FRONT_MATTER.match(text)
    if fm:
        body_line = lines.line_of(fm.end() - 1) + (1 if fm.group(4) else 0)
        sections.append(Section(0, lines.offset(body_line), _LEVEL_FRONT, "front_matter"))
        t = _FM_TITLE.search(fm.group(2) or "")
        title = t.group(1).strip() if t else ""
    try:
        tokens = _markdown().parse(text[lines.offset(body_line):]) if body_line else _markdown().parse(text)
    except RecursionError as e:
        raise ParseError(source, "Markdown nested too deeply") from e
    root = (title,) if title else ()
    heads: list[tuple[int, int, tuple[str, ...]]] = []  # (level, start, path) open sections
    stack: list[tuple[int, str]] = []
    blocks: list[tuple[int, int, str, int]] = []  # (start, end, kind, token index)
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.nesting == -1 or tok.map is None:
            continue
        start = lines.offset(tok.map[0] + body_line)
        end = lines.offset(tok.map[1] + body_line)
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _heading_text(tokens[i + 1].content)))
            heads.append((level, start, root + tuple(h for _, h in stack)))
            continue
        kind = _BLOCK_KINDS.get(tok.type)
        if kind:
            blocks.append((start, end, kind, i))
    sections += _heading_sections(heads, len(text))
    starts = [h[1] for h in heads]
    for start, end, kind, i in blocks:
        path = _path_at(heads, starts, start) or root
        sections.append(Section(start, end, _LEVEL_BLOCK, kind, path,
                                _block_context(tokens[i], kind, text, start)))
        if kind in ("table", "list"):
            sections += _children(tokens, i, kind, lines, body_line, path)
    return ParsedDocument(source=source, format="markdown", text=text,
                          sections=tuple(sections), title=title, warnings=tuple(warnings))


def _heading_text(raw: str) -> str:
    text = _LINK.sub(lambda m: m.group(1) or m.group(2) or "", raw)
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


def _path_at(heads, starts, offset) -> tuple[str, ...]:
    from bisect import bisect_right

    i = bisect_right(starts, offset) - 1
    return heads[i][2] if i >= 0 else ()


def _block_context(tok, kind: str, text: str, start: int) -> str:
    """Repeated before later chunks of a split block: a table's header row and delimiter
    row, a code fence's opening line (so the language is known)."""
    if kind == "table":
        first = text.find("\n", start)
        second = text.find("\n", first + 1) if first != -1 else -1
        return text[start:second if second != -1 else len(text)].strip()
    if kind == "code" and tok.type == "fence":
        nl = text.find("\n", start)
        return text[start:nl if nl != -1 else len(text)].strip()
    return ""


def _children(tokens, i: int, kind: str, lines: LineIndex, body_line: int,
              path: tuple[str, ...]) -> list[Section]:
    """Table body rows, or top-level list items, as child sections."""
    want = "tr_open" if kind == "table" else "list_item_open"
    depth = 2 if kind == "table" else 1
    out = []
    for tok in tokens[i + 1:]:
        if tok.level == 0:
            break
        if tok.type == want and tok.level == depth and tok.map is not None:
            if kind == "table" and tok.map[0] == tokens[i].map[0]:
                continue  # the header row: context, and the gap before the first row
            s = lines.offset(tok.map[0] + body_line)
            e = lines.offset(tok.map[1] + body_line)
            out.append(Section(s, e, _LEVEL_ITEM, "row" if kind == "table" else "item", path))
    return out
