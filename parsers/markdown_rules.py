"""Faster drop-in versions of markdown-it-py's block loop and three of its rules:
`paragraph`, `lheading` and `table` (markdown-it-py is MIT-licensed; these follow its code
line for line, and `tests/parsers/test_markdown_rules.py` checks they give the same sections).

Most of markdown-it's block time goes into asking, for every line of every paragraph (twice:
once in `lheading`, once in `paragraph`) and every table row, whether one of the seven
"terminator" rules starts a block there. Each of those rules first looks at the first
non-blank character of the line (`table`: of the next line) and wants one of a few ASCII
characters. So for each line only the rules that want its first character are asked (none,
for most lines): the same answer, most of the cost gone. The block loop (`tokenize`) does the
same at each block start, in markdown-it's order. `lheading` and `paragraph` scan a
paragraph's lines once between them. `table` builds no per-cell tokens (inline content,
alignment) and paragraphs no inline token: chunkwise reads only the block tokens' line maps
(and the heading text).

`State` builds markdown-it's line tables with C-level `map`s over the lines instead of a
Python loop per line, and its tokens without the dataclass machinery of `Token`.

`install(md)` swaps these in only when the rule chains are exactly the ones this prefilter was
written for; otherwise markdown-it's own code runs.
"""

from __future__ import annotations

import re
import types
from itertools import accumulate, compress, repeat
from operator import add, sub

from markdown_it.common.utils import isStrSpace, mdTrim
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token
from markdown_it.rules_block.table import (MAX_AUTOCOMPLETED_CELLS, escapedSplit,
                                           headerLineRe)

#: the block rules in the order markdown-it tries them
_BLOCK_RULES = ["table", "code", "_fence_rule", "blockquote", "hr", "list_block", "html_block",
                "heading", "lheading", "paragraph"]
#: the rules that a line's first non-blank character decides, in that order, with the
#: characters they start with: fence, blockquote, hr, list (bullets and digits), HTML block,
#: ATX heading. They are also the terminator chains, with `table` first for paragraphs.
_STARTS = {"_fence_rule": "`~", "blockquote": ">", "hr": "*-_", "list_block": "*-+0123456789",
           "html_block": "<", "heading": "#"}
_BLOCK_START = frozenset("".join(_STARTS.values()))
#: the terminator chains the prefilter is proven for (rule function names, in order)
_CHAINS = {"paragraph": ["table", *_STARTS], "blockquote": [*_STARTS]}
#: first characters of a table's delimiter row
_DELIMITER = frozenset("|-:")
_DELIMITER_REST = re.compile(r"[-:| \t]*")

#: first character -> the rules of `_STARTS` that can start a block there (markdown-it's
#: functions, in its order): the rules a block start tries, and the terminators a paragraph
#: line or table row asks (with `table` first for a paragraph line before a delimiter row)
_BY_CHAR: dict[str, tuple] = {}


def install(md) -> bool:
    """Swap the faster block loop into `md` if its rule chains are the known ones. (The
    loop calls this module's `table` and `text_block` itself, and markdown-it's own rules
    ask no chain that holds them, so its ruler is left as it is.)"""
    ruler = md.block.ruler
    if [r.__name__ for r in ruler.getRules("")] != _BLOCK_RULES:
        return False
    for chain, names in _CHAINS.items():
        if [r.__name__ for r in ruler.getRules(chain)] != names:
            return False
    rules = dict(zip(_BLOCK_RULES, ruler.getRules("")))
    _BY_CHAR.update({c: tuple(rules[name] for name, chars in _STARTS.items() if c in chars)
                     for c in _BLOCK_START})
    md.block.tokenize = types.MethodType(_make_tokenize(rules["code"]), md.block)
    return True


def _make_tokenize(code_rule):
    def tokenize(self, state, startLine: int, endLine: int) -> None:
        """markdown-it's `ParserBlock.tokenize`, trying only the rules that can match."""
        line = startLine
        maxNesting = state.md.options.maxNesting
        hasEmptyLines = False
        src, bMarks, eMarks, tShift, sCount = (state.src, state.bMarks, state.eMarks,
                                               state.tShift, state.sCount)
        lineMax, by_char = state.lineMax, _BY_CHAR
        while line < endLine:
            while line < lineMax and bMarks[line] + tShift[line] >= eMarks[line]:
                line += 1  # skipEmptyLines
            state.line = line
            if line >= endLine:
                break
            if sCount[line] < state.blkIndent:
                break  # the end of a nested block (blockquote, list item)
            if state.level >= maxNesting:
                state.line = endLine
                break
            candidates = by_char.get(src[bMarks[line] + tShift[line]], ())
            if sCount[line] - state.blkIndent >= 4 and state.is_code_block(line):
                candidates = (code_rule, *candidates)
            if line + 2 <= endLine:
                pos = bMarks[line + 1] + tShift[line + 1]
                if pos < eMarks[line + 1] and src[pos] in _DELIMITER:
                    candidates = (table, *candidates)
            for rule in candidates:
                if rule(state, line, endLine, False):
                    break
            else:
                text_block(state, line, endLine, False)  # matches any line
            if state.line <= line:
                raise RuntimeError("block rule didn't increment state.line")
            state.tight = not hasEmptyLines
            line = state.line
            # paragraph might "eat" one newline after it in nested lists
            if (line - 1) < endLine and bMarks[line - 1] + tShift[line - 1] >= eMarks[line - 1]:
                hasEmptyLines = True
            if line < endLine and bMarks[line] + tShift[line] >= eMarks[line]:
                hasEmptyLines = True
                line += 1
                state.line = line

    return tokenize


def _first_char(state, line: int) -> str:
    pos = state.bMarks[line] + state.tShift[line]
    return state.src[pos] if pos < state.eMarks[line] else ""


def _terminates(state, line: int, end_line: int) -> bool:
    """Whether a rule of the `blockquote` terminator chain (a table row's) starts a block at
    `line`: only those of `_BY_CHAR` for its first character can."""
    for rule in _BY_CHAR.get(_first_char(state, line), ()):
        if rule(state, line, end_line, True):
            return True
    return False


def paragraph(state, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's `paragraph`, with the terminator prefilter."""
    oldParentType = state.parentType
    state.parentType = "paragraph"
    nextLine = _scan(state, startLine, state.lineMax, underline=False)[0]
    _push_paragraph(state, startLine, nextLine)
    state.parentType = oldParentType
    return True


def lheading(state, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's `lheading` (setext headings), with the terminator prefilter."""
    if state.is_code_block(startLine):
        return False
    oldParentType = state.parentType
    state.parentType = "paragraph"  # (and markdown-it leaves it so when there is no heading)
    nextLine, marker = _scan(state, startLine, endLine, underline=True)
    if not marker:
        return False
    _push_heading(state, startLine, nextLine, marker)
    state.parentType = oldParentType
    return True


def text_block(state, startLine: int, endLine: int, silent: bool) -> bool:
    """`lheading`, then `paragraph` if there is no heading, in one scan of the lines. (Both
    scan the same lines the same way when `endLine` is the last line; otherwise, and where
    `lheading` would stop at once, they are called one after the other.)"""
    if endLine != state.lineMax or state.is_code_block(startLine):
        return (lheading(state, startLine, endLine, silent)
                or paragraph(state, startLine, endLine, silent))
    oldParentType = state.parentType
    state.parentType = "paragraph"
    nextLine, marker = _scan(state, startLine, endLine, underline=True)
    if marker:
        _push_heading(state, startLine, nextLine, marker)
        state.parentType = oldParentType
    else:  # markdown-it's lheading left parentType as "paragraph", and paragraph restores that
        _push_paragraph(state, startLine, nextLine)
    return True


def _scan(state, startLine: int, endLine: int, *, underline: bool) -> tuple[int, str]:
    """The lines of a paragraph from `startLine`: (the line after it, "") or, with
    `underline`, (the setext underline's line, its marker) if one comes first. (The loop of
    markdown-it's `paragraph` and `lheading`, with `_terminates` inlined: it runs per line.)"""
    src, bMarks, eMarks, tShift, sCount = (state.src, state.bMarks, state.eMarks, state.tShift,
                                           state.sCount)
    blkIndent = state.blkIndent
    nextLine = startLine + 1
    while nextLine < endLine:
        pos, maximum = bMarks[nextLine] + tShift[nextLine], eMarks[nextLine]
        if pos >= maximum:  # an empty line
            break
        indent = sCount[nextLine]
        if indent - blkIndent > 3:  # a lazy continuation (would be a code block)
            nextLine += 1
            continue
        first = src[pos]
        if underline and indent >= blkIndent and first in ("-", "="):
            if state.skipSpaces(state.skipCharsStr(pos, first)) >= maximum:
                return nextLine, first
        if indent < 0:  # a blockquote quirk
            nextLine += 1
            continue
        rules = _BY_CHAR.get(first, ())
        if nextLine + 1 < endLine and _first_char(state, nextLine + 1) in _DELIMITER:
            rules = (table, *rules)
        for rule in rules:
            if rule(state, nextLine, endLine, True):
                return nextLine, ""
        nextLine += 1
    return nextLine, ""


def _push_paragraph(state, startLine: int, nextLine: int) -> None:
    # No inline token (the paragraph's text) between the two: chunkwise reads only the
    # paragraph's line map.
    state.line = nextLine
    state.push("paragraph_open", "p", 1).map = [startLine, nextLine]
    state.push("paragraph_close", "p", -1)


def _push_heading(state, startLine: int, nextLine: int, marker: str) -> None:
    level = 1 if marker == "=" else 2
    content = mdTrim(state.getLines(startLine, nextLine, state.blkIndent, False))
    state.line = nextLine + 1
    token = state.push("heading_open", "h" + str(level), 1)
    token.markup = marker
    token.map = [startLine, state.line]
    token = state.push("inline", "", 0)
    token.content = content
    token.map = [startLine, state.line - 1]
    token.children = []
    token = state.push("heading_close", "h" + str(level), -1)
    token.markup = marker


def _line(state, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]]


def _columns(line_text: str) -> list[str]:
    columns = escapedSplit(line_text) if "\\" in line_text else line_text.split("|")
    if columns and columns[0] == "":
        columns.pop(0)
    if columns and columns[-1] == "":
        columns.pop()
    return columns


def table(state, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's GFM `table`: the same tables, rows and line maps, without cell tokens."""
    if startLine + 2 > endLine:
        return False
    nextLine = startLine + 1
    if state.sCount[nextLine] < state.blkIndent or state.is_code_block(nextLine):
        return False
    delimiter = _line(state, nextLine)
    if len(delimiter) < 2 or delimiter[0] not in _DELIMITER:
        return False
    first_ch, second_ch = delimiter[0], delimiter[1]
    if second_ch not in _DELIMITER and not isStrSpace(second_ch):
        return False
    if first_ch == "-" and isStrSpace(second_ch):  # a list item, not a delimiter row
        return False
    if not _DELIMITER_REST.fullmatch(delimiter, 2):
        return False
    columns = delimiter.split("|")
    aligns = 0
    for i, column in enumerate(columns):
        t = mdTrim(column)
        if not t:
            # empty columns only before and after the table (` |---| `, not ` ---||--- `)
            if i == 0 or i == len(columns) - 1:
                continue
            return False
        if not headerLineRe.search(t):
            return False
        aligns += 1
    lineText = mdTrim(_line(state, startLine))
    if "|" not in lineText or state.is_code_block(startLine):
        return False
    columnCount = len(_columns(lineText))
    if columnCount == 0 or columnCount != aligns:
        return False
    if silent:
        return True

    oldParentType = state.parentType
    state.parentType = "table"
    token = state.push("table_open", "table", 1)
    token.map = tableLines = [startLine, 0]
    state.push("thead_open", "thead", 1).map = [startLine, startLine + 1]
    state.push("tr_open", "tr", 1).map = [startLine, startLine + 1]
    state.push("tr_close", "tr", -1)
    state.push("thead_close", "thead", -1)
    tbodyLines = None
    autocompleted_cells = 0
    nextLine = startLine + 2
    while nextLine < endLine:
        if state.sCount[nextLine] < state.blkIndent:
            break
        if _terminates(state, nextLine, endLine):
            break
        lineText = mdTrim(_line(state, nextLine))
        if not lineText or state.is_code_block(nextLine):
            break
        autocompleted_cells += columnCount - len(_columns(lineText))
        if autocompleted_cells > MAX_AUTOCOMPLETED_CELLS:
            break
        if nextLine == startLine + 2:
            token = state.push("tbody_open", "tbody", 1)
            token.map = tbodyLines = [startLine + 2, 0]
        state.push("tr_open", "tr", 1).map = [nextLine, nextLine + 1]
        state.push("tr_close", "tr", -1)
        nextLine += 1
    if tbodyLines:
        state.push("tbody_close", "tbody", -1)
        tbodyLines[1] = nextLine
    state.push("table_close", "table", -1)
    tableLines[1] = nextLine
    state.parentType = oldParentType
    state.line = nextLine
    return True


_EMPTY = types.MappingProxyType({})


class _Token(Token):
    """A `Token` built without the dataclass `__init__` (defaults set directly)."""

    __slots__ = ()

    def __init__(self, type: str, tag: str, nesting: int) -> None:
        self.type, self.tag, self.nesting = type, tag, nesting
        # one shared read-only mapping, not two dicts per token (a 50 MB document has
        # millions of tokens); the block rules assign attrs, and mutate them only behind
        # options chunkwise leaves off (alerts, tasklists), where this would raise
        self.attrs = self.meta = _EMPTY
        self.map, self.level, self.children = None, 0, None
        self.content = self.markup = self.info = ""
        self.block, self.hidden = True, False


class State(StateBlock):
    """markdown-it's `StateBlock` for `src`, with the same line tables, built faster."""

    def __init__(self, src: str, md) -> None:
        super().__init__("", md, {}, [])  # every other attribute as markdown-it sets it
        self.src = src
        self.bMarks, self.eMarks, self.tShift, self.sCount = _line_tables(src)
        self.lineMax = len(self.bMarks)
        self.bsCount = [0] * self.lineMax
        # the fake entry past the last line that markdown-it adds
        n = len(src)
        self.bMarks.append(n)
        self.eMarks.append(n)
        self.tShift.append(0)
        self.sCount.append(0)
        self.bsCount.append(0)

    def push(self, ttype: str, tag: str, nesting) -> Token:
        token = _Token(ttype, tag, nesting)
        if nesting < 0:
            self.level -= 1
        token.level = self.level
        if nesting > 0:
            self.level += 1
        self.tokens.append(token)
        return token


def _line_tables(src: str) -> tuple[list[int], list[int], list[int], list[int]]:
    """Per line: start, end (its newline), length of its leading spaces and tabs, and that
    indentation's width with tabs expanded; markdown-it's `StateBlock` tables, built with
    C-level `map`s over the lines (no Python code runs per line, but for tabbed indents).
    A last line of only spaces and tabs (or empty) is not a line, as in markdown-it."""
    lines = src.split("\n")
    if lines[-1].strip(" \t") == "":
        lines.pop()
    lens = list(map(len, lines))
    starts = [0, *accumulate(map(add, lens[:-1], repeat(1)))] if lines else []
    ends = list(map(add, starts, lens))
    shift = list(map(sub, lens, map(len, map(str.lstrip, lines, repeat(" \t")))))
    count = list(shift)
    if "\t" in src:  # lines with a tab in their indentation: expand it
        for i in compress(range(len(lines)), shift):
            if "\t" in lines[i][:shift[i]]:
                count[i] = _expanded(lines[i], shift[i])
    return starts, ends, shift, count


def _expanded(line: str, indent: int) -> int:
    """Width of a line's indentation with tabs expanded to multiples of 4."""
    offset = 0
    for ch in line[:indent]:
        offset += 4 - offset % 4 if ch == "\t" else 1
    return offset
