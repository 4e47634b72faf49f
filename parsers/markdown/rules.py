"""Faster drop-in versions of markdown-it-py's block loop and of its rules `paragraph`,
`lheading`, `table`, `list_block`, `heading`, `hr`, `fence` and `code` (markdown-it-py is
MIT-licensed; these follow its code line for line, and `tests/parsers/test_markdown_rules.py`
checks they give the same sections and block tokens).

Most of markdown-it's block time goes into asking, for every line of every paragraph (twice:
once in `lheading`, once in `paragraph`) and every table row, whether one of the seven
"terminator" rules starts a block there. Each of those rules first looks at the first
non-blank character of the line (`table`: of the next line) and wants one of a few ASCII
characters. So for each line only the rules that want its first character are asked (none,
for most lines): the same answer, most of the cost gone. The block loop (`tokenize`) does the
same at each block start, in markdown-it's order. `lheading` and `paragraph` scan a
paragraph's lines once between them. `list_block` asks its own terminators (fence,
blockquote, hr) the same way at each next item. The others lose markdown-it's per-call debug
logging and build only what chunkwise reads, the block tokens' line maps (and the heading
text): `table` no per-cell tokens (inline content, alignment), paragraphs no inline token,
lists no markers, start numbers or `hidden` marks on tight paragraphs, fences and code
blocks no content.

`State` builds markdown-it's line tables with C-level `map`s over the lines instead of a
Python loop per line, and its tokens without the dataclass machinery of `Token`.

`install(md)` swaps these in only when the rule chains are exactly the ones this prefilter was
written for, and markdown-it-py is the release series these follow (`FOLLOWS`); otherwise
markdown-it's own code runs (the same sections, slower). `pyproject.toml` pins that series;
moving the pin means re-reading upstream's changes to these rules and running
`tests/parsers/test_markdown_rules.py` against the new release.
"""

from __future__ import annotations

import re
import types
from itertools import accumulate, compress, repeat
from operator import add, sub

import markdown_it
from markdown_it.common.utils import isStrSpace, mdTrim
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token
from markdown_it.rules_block.table import (MAX_AUTOCOMPLETED_CELLS, escapedSplit,
                                           headerLineRe)

#: the markdown-it-py release whose block loop and rules these follow, line for line
FOLLOWS = "4.3.0"
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
_CHAINS = {"paragraph": ["table", *_STARTS], "blockquote": [*_STARTS],
           "list": ["_fence_rule", "blockquote", "hr"]}
#: first characters of a table's delimiter row
_DELIMITER = frozenset("|-:")
_DELIMITER_REST = re.compile(r"[-:| \t]*")

#: first character -> the rules of `_STARTS` that can start a block there (markdown-it's
#: functions, in its order): the rules a block start tries, and the terminators a paragraph
#: line or table row asks (with `table` first for a paragraph line before a delimiter row)
_BY_CHAR: dict[str, tuple] = {}
#: the same for the `list` terminator chain (fence, blockquote, hr), asked at each next item
_LIST_BY_CHAR: dict[str, tuple] = {}


def install(md) -> bool:
    """Swap the faster block loop into `md` if its rule chains are the known ones, under the
    markdown-it-py release series these follow (`FOLLOWS`). (The
    loop calls this module's `table` and `text_block` itself, and markdown-it's own rules
    ask no chain that holds them, so its ruler is left as it is.)"""
    ruler = md.block.ruler
    if markdown_it.__version__.split(".")[:2] != FOLLOWS.split(".")[:2]:
        return False
    if md.options.get("tasklists"):  # list items with checkboxes: `list_block` has none
        return False
    if [r.__name__ for r in ruler.getRules("")] != _BLOCK_RULES:
        return False
    for chain, names in _CHAINS.items():
        if [r.__name__ for r in ruler.getRules(chain)] != names:
            return False
    rules = dict(zip(_BLOCK_RULES, ruler.getRules("")))
    rules.update(code=code, _fence_rule=fence, hr=hr, list_block=list_block, heading=heading)
    _BY_CHAR.update({c: tuple(rules[name] for name, chars in _STARTS.items() if c in chars)
                     for c in _BLOCK_START})
    _LIST_BY_CHAR.update({c: tuple(rules[name] for name in _CHAINS["list"]
                                   if c in _STARTS[name]) for c in _BLOCK_START})
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
                nxt = line + 1
                if endLine == state.lineMax and (
                        nxt >= endLine or bMarks[nxt] + tShift[nxt] >= eMarks[nxt]):
                    # a paragraph of one line (most are): what `text_block` makes of it,
                    # without its scan (no line follows to underline or continue it)
                    state.parentType = "paragraph"
                    _push_paragraph(state, line, nxt)
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
        if nextLine + 1 < endLine:  # a table's delimiter row next: this line may head one
            pos = bMarks[nextLine + 1] + tShift[nextLine + 1]
            if pos < eMarks[nextLine + 1] and src[pos] in _DELIMITER:
                rules = (table, *rules)
        for rule in rules:
            if rule(state, nextLine, endLine, True):
                return nextLine, ""
        nextLine += 1
    return nextLine, ""


def _push_paragraph(state, startLine: int, nextLine: int) -> None:
    # No inline token (the paragraph's text) between the two: chunkwise reads only the
    # paragraph's line map. The two tokens are `push`'s, built here (most blocks are
    # paragraphs): both at the current level, which they leave as it was.
    state.line = nextLine
    level = state.level
    state.tokens += (_Token("paragraph_open", "p", 1, level, [startLine, nextLine]),
                     _Token("paragraph_close", "p", -1, level))


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
        level = state.level  # a row's two tokens as `push` makes them (one pair per row)
        state.tokens += (_Token("tr_open", "tr", 1, level, [nextLine, nextLine + 1]),
                         _Token("tr_close", "tr", -1, level))
        nextLine += 1
    if tbodyLines:
        state.push("tbody_close", "tbody", -1)
        tbodyLines[1] = nextLine
    state.push("table_close", "table", -1)
    tableLines[1] = nextLine
    state.parentType = oldParentType
    state.line = nextLine
    return True


#: an ordered list marker: up to nine digits, `.` or `)`, then a space, a tab or the line's end
_ORDERED_MARKER = re.compile(r"[0-9]{1,9}[.)](?=[ \t]|\Z)")


def _marker_end(src: str, pos: int, maximum: int, ordered: bool | None) -> int:
    """Where a list marker at `pos` ends (markdown-it's `skipOrderedListMarker`, then, if
    `ordered` is not True, `skipBulletListMarker`), or -1. `ordered=False`: bullets only."""
    if ordered is not False:
        m = _ORDERED_MARKER.match(src, pos, maximum)
        if m:
            return m.end()
        if ordered:
            return -1
    if pos < maximum and src[pos] in "*-+" and (pos + 1 == maximum or src[pos + 1] in " \t"):
        return pos + 1
    return -1


def list_block(state, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's `list_block`: the same lists, items and line maps, without what only
    rendering reads (markers, start numbers, the `hidden` marks of tight paragraphs) and with
    the `list` terminators asked by first character. (Installed only without `tasklists`.)"""
    src, bMarks, eMarks, tShift, sCount = (state.src, state.bMarks, state.eMarks, state.tShift,
                                           state.sCount)
    if sCount[startLine] - state.blkIndent >= 4:
        return False
    # Special case:
    #  - item 1
    #   - item 2
    #    - item 3
    #     - item 4
    #      - this one is a paragraph continuation
    if (state.listIndent >= 0 and sCount[startLine] - state.listIndent >= 4
            and sCount[startLine] < state.blkIndent):
        return False
    # limit conditions when list can interrupt a paragraph (validation mode only)
    isTerminatingParagraph = (silent and state.parentType == "paragraph"
                              and sCount[startLine] >= state.blkIndent)
    start = bMarks[startLine] + tShift[startLine]
    posAfterMarker = _marker_end(src, start, eMarks[startLine], None)
    if posAfterMarker < 0:
        return False
    markerChar = src[posAfterMarker - 1]
    isOrdered = markerChar in ".)"
    if isTerminatingParagraph:
        # an ordered list after a paragraph starts with 1, and no list there starts empty
        if isOrdered and int(src[start:posAfterMarker - 1]) != 1:
            return False
        if state.skipSpaces(posAfterMarker) >= eMarks[startLine]:
            return False
    if silent:
        return True

    token = state.push("ordered_list_open" if isOrdered else "bullet_list_open",
                       "ol" if isOrdered else "ul", 1)
    token.map = listLines = [startLine, 0]
    nextLine = startLine
    oldParentType = state.parentType
    state.parentType = "list"
    while nextLine < endLine:
        pos = posAfterMarker
        maximum = eMarks[nextLine]
        initial = offset = sCount[nextLine] + posAfterMarker - (bMarks[startLine]
                                                                + tShift[startLine])
        while pos < maximum:
            ch = src[pos]
            if ch == "\t":
                offset += 4 - (offset + state.bsCount[nextLine]) % 4
            elif ch == " ":
                offset += 1
            else:
                break
            pos += 1
        contentStart = pos
        # trimming space in "-    \n  3" case, indent is 1 here
        indentAfterMarker = 1 if contentStart >= maximum else offset - initial
        # If we have more than 4 spaces, the indent is 1 (the rest is indented code)
        if indentAfterMarker > 4:
            indentAfterMarker = 1
        indent = initial + indentAfterMarker

        # Run subparser & write tokens
        # (the item's two tokens as `push` makes them, without the call: one per item)
        itemLines = [startLine, 0]
        state.tokens.append(_Token("list_item_open", "li", 1, state.level, itemLines))
        state.level += 1
        oldTight = state.tight
        oldTShift = tShift[startLine]
        oldSCount = sCount[startLine]
        oldListIndent = state.listIndent
        state.listIndent = state.blkIndent
        state.blkIndent = indent
        state.tight = True
        tShift[startLine] = contentStart - bMarks[startLine]
        sCount[startLine] = offset
        if contentStart >= maximum and state.isEmpty(startLine + 1):
            # an empty item followed by an empty line ends the list
            state.line = min(state.line + 2, endLine)
        else:
            state.md.block.tokenize(state, startLine, endLine)
        state.blkIndent = state.listIndent
        state.listIndent = oldListIndent
        tShift[startLine] = oldTShift
        sCount[startLine] = oldSCount
        state.tight = oldTight
        state.level -= 1
        state.tokens.append(_Token("list_item_close", "li", -1, state.level))

        nextLine = startLine = state.line
        itemLines[1] = nextLine
        if nextLine >= endLine:
            break
        # Is the list terminated or continued?
        if sCount[nextLine] < state.blkIndent:
            break
        if sCount[nextLine] - state.blkIndent >= 4:
            break
        pos, maximum = bMarks[nextLine] + tShift[nextLine], eMarks[nextLine]
        if pos < maximum and _list_ends(state, nextLine, endLine, src[pos]):
            break
        # fail if the list has another type
        posAfterMarker = _marker_end(src, pos, maximum, isOrdered)
        if posAfterMarker < 0 or markerChar != src[posAfterMarker - 1]:
            break

    state.push("ordered_list_close" if isOrdered else "bullet_list_close",
               "ol" if isOrdered else "ul", -1)
    listLines[1] = nextLine
    state.line = nextLine
    state.parentType = oldParentType
    return True


def _list_ends(state, line: int, end_line: int, first: str) -> bool:
    """Whether a rule of the `list` terminator chain starts a block at `line` (whose first
    character is `first`). A loop, not `any()` over a generator: asked at every next item."""
    for rule in _LIST_BY_CHAR.get(first, ()):
        if rule(state, line, end_line, True):
            return True
    return False


#: a thematic break after its first marker: two more of it, among spaces and tabs
_HR_REST = {m: re.compile(rf"[ \t]*(?:{re.escape(m)}[ \t]*){{2,}}") for m in "*-_"}


def hr(state, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's `hr` (thematic break), the line matched by a regex."""
    if state.sCount[startLine] - state.blkIndent >= 4:
        return False
    pos = state.bMarks[startLine] + state.tShift[startLine]
    maximum = state.eMarks[startLine]
    if pos >= maximum:
        return False
    rest = _HR_REST.get(state.src[pos])
    if rest is None or not rest.fullmatch(state.src, pos + 1, maximum):
        return False
    if silent:
        return True
    state.line = startLine + 1
    state.push("hr", "hr", 0).map = [startLine, state.line]
    return True


#: an ATX heading's opening: one to six `#`, then a space, a tab or the line's end
_ATX = re.compile(r"#{1,6}(?=[ \t]|\Z)")


def heading(state, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's ATX `heading`: the same tokens, but for the markup string."""
    if state.sCount[startLine] - state.blkIndent >= 4:
        return False
    src = state.src
    m = _ATX.match(src, state.bMarks[startLine] + state.tShift[startLine],
                   state.eMarks[startLine])
    if not m:
        return False
    if silent:
        return True
    # Let's cut tails like '    ###  ' from the end of string
    content = src[m.end():state.eMarks[startLine]].rstrip(" \t")
    cut = content.rstrip("#")
    if cut and cut[-1] in " \t":
        content = cut
    level = m.end() - m.start()
    state.line = startLine + 1
    tag, depth = "h" + str(level), state.level  # the three tokens as `push` makes them
    inline = _Token("inline", "", 0, depth + 1, [startLine, state.line])
    inline.content, inline.children = mdTrim(content), []
    state.tokens += (_Token("heading_open", tag, 1, depth, [startLine, state.line]), inline,
                     _Token("heading_close", tag, -1, depth))
    return True


def code(state, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's indented `code` block: the same line map, without the content."""
    sCount, blkIndent = state.sCount, state.blkIndent
    if sCount[startLine] - blkIndent < 4:
        return False
    last = nextLine = startLine + 1
    while nextLine < endLine:
        if state.bMarks[nextLine] + state.tShift[nextLine] >= state.eMarks[nextLine]:
            nextLine += 1  # an empty line
        elif sCount[nextLine] - blkIndent >= 4:
            nextLine += 1
            last = nextLine
        else:
            break
    state.line = last
    state.push("code_block", "code", 0).map = [startLine, state.line]
    return True


def fence(state, startLine: int, endLine: int, silent: bool) -> bool:
    """markdown-it's `fence` (its default `make_fence_rule()`): the same line map, without
    the content and info string."""
    src, bMarks, eMarks, tShift, sCount = (state.src, state.bMarks, state.eMarks, state.tShift,
                                           state.sCount)
    if sCount[startLine] - state.blkIndent >= 4:
        return False
    pos = bMarks[startLine] + tShift[startLine]
    maximum = eMarks[startLine]
    if pos + 3 > maximum:
        return False
    marker = src[pos]
    if marker != "~" and marker != "`":
        return False
    mem = pos
    pos = state.skipCharsStr(pos, marker)
    length = pos - mem
    if length < 3:
        return False
    if marker == "`" and "`" in src[pos:maximum]:  # no backtick in a backtick fence's info
        return False
    if silent:
        return True
    haveEndMarker = False
    nextLine = startLine
    while True:
        nextLine += 1
        if nextLine >= endLine:
            # unclosed block should be autoclosed by end of document (or of its parent)
            break
        pos = mem = bMarks[nextLine] + tShift[nextLine]
        maximum = eMarks[nextLine]
        if pos < maximum and sCount[nextLine] < state.blkIndent:
            # non-empty line with negative indent should stop the list
            break
        if pos >= len(src):
            break
        if src[pos] != marker:
            continue
        if sCount[nextLine] - state.blkIndent >= 4:
            continue
        pos = state.skipCharsStr(pos, marker)
        if pos - mem < length:  # a closing fence is at least as long as the opening one
            continue
        if state.skipSpaces(pos) < maximum:  # only spaces after it
            continue
        haveEndMarker = True
        break
    state.line = nextLine + (1 if haveEndMarker else 0)
    state.push("fence", "code", 0).map = [startLine, state.line]
    return True


_EMPTY = types.MappingProxyType({})


class _Token(Token):
    """A `Token` that stores what block rules give every token (type, tag, nesting, level
    and line map) and whatever a rule assigns later; a field never assigned reads as its
    default (`__getattr__` runs only for those). Five stores, not the dataclass's fourteen:
    a document has a few hundred tokens, a 50 MB one millions."""

    __slots__ = ()

    def __init__(self, type: str, tag: str, nesting: int, level: int,
                 map: list[int] | None = None) -> None:
        self.type, self.tag, self.nesting, self.level, self.map = type, tag, nesting, level, map

    def __getattr__(self, name: str):
        try:
            return _TOKEN_DEFAULTS[name]
        except KeyError:
            raise AttributeError(name) from None


#: what an unassigned field of a `_Token` reads as: markdown-it's defaults for a block token
#: but for `attrs` and `meta`, one shared read-only mapping rather than two dicts per token;
#: the block rules assign attrs, and mutate them only behind options chunkwise leaves off
#: (alerts, tasklists), where this would raise
_TOKEN_DEFAULTS = {"attrs": _EMPTY, "meta": _EMPTY, "children": None, "content": "",
                   "markup": "", "info": "", "block": True, "hidden": False}


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
        if nesting < 0:
            self.level -= 1
        token = _Token(ttype, tag, nesting, self.level)
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
