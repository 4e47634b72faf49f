"""A definition's doc line: the first line of its documentation, for the `code-doc` view
(`chunkwise.chunking.views.code`), which names the definition a chunk lies in with it.

The doc line is the first line of words in the comment block at the top of the definition's
span (a doc comment above its header), else, in a language with docstrings, the first line
of the docstring after the header. Which lines are comments is the language's to say, and
its parser says it in the definition's meta (`doc_facts`, keys of `chunkwise.model.VIEW_FACTS`):
`line_comment` `#` where `#` starts a comment (elsewhere it starts `#define` or `#[attr]`),
`docstrings` where a string first in the body documents the definition."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable

from ..model import Section

__all__ = ["DEFINITIONS", "doc_line", "doc_facts"]

#: the section kinds that are definitions
DEFINITIONS = frozenset({"function", "method", "class", "type"})
#: a comment line's marker (`//`, `///`, `/**`, ` * `, `--`, `--[[`), stripped for its words
_COMMENT = re.compile(r"^(?:/\*+!?|//[/!]?|\*+/?|--+(?:\[=*\[)?)")
_HASH_COMMENT = re.compile(r"^#+(?![!\[])")
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_QUOTES = re.compile(r"^[rRbBuUfF]{0,2}(?:\"\"\"|\'\'\'|\"|\')")
_WORD = re.compile(r"[A-Za-z]{2}")
_DOC_LINE_CHARS = 160
_WINDOW = 8000  # characters of a definition read for its documentation


def _words_of_comment(line: str, marker: re.Pattern[str]) -> str:
    s = marker.sub("", line.strip()).strip()
    s = re.sub(r"\*+/$", "", s).strip()
    s = " ".join(_TAG.sub(" ", s).split())
    if s.startswith(("@", "{@inheritdoc")) or not _WORD.search(s):
        return ""
    return s


def doc_line(text: str, start: int, end: int, *, hash_comments: bool = False,
             docstrings: bool = False) -> str:
    """The first line of the documentation of the definition `text[start:end]`, or "".
    `hash_comments`: `#` starts a line comment; `docstrings`: a string first in the body
    documents the definition (Python)."""
    marker = _HASH_COMMENT if hash_comments else _COMMENT
    lines = text[start:min(end, start + _WINDOW)].split("\n")
    i = 0
    found = ""
    while i < len(lines):
        s = lines[i].strip()
        if not s:
            i += 1
            continue
        if not marker.match(s):
            break
        if not found:
            found = _words_of_comment(s, marker)
        i += 1
    if found or not docstrings:
        return found[:_DOC_LINE_CHARS]
    return _docstring_line(lines, i)


def _docstring_line(lines: list[str], i: int) -> str:
    """The first line of words of the docstring after the header that starts at `lines[i]`
    (past its decorators and its possibly multi-line parameters, to its `:`), or ""."""
    depth = 0
    while i < len(lines):
        s = lines[i].split("#")[0].rstrip() if "#" in lines[i] and '"' not in lines[i] \
            and "'" not in lines[i] else lines[i].rstrip()
        depth += sum(s.count(c) for c in "([{") - sum(s.count(c) for c in ")]}")
        i += 1
        if depth <= 0 and s.endswith(":") and not s.lstrip().startswith("@"):
            break
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not _QUOTES.match(lines[i].strip()):
        return ""
    first = _QUOTES.sub("", lines[i].strip())
    for s in [first, *lines[i + 1:i + 4]]:
        s = s.strip().rstrip("\"'").strip()
        if _WORD.search(s):
            return s[:_DOC_LINE_CHARS]
    return ""


def doc_facts(sections: Iterable[Section], *, line_comment: str,
              docstrings: bool) -> list[Section]:
    """`sections` with what `doc_line` needs to know of the language added to each
    definition's meta: `line_comment` when it is `#`, `docstrings` when the language has
    them (the other languages' comments are read without being told)."""
    facts = ((("line_comment", "#"),) if line_comment == "#" else ()) \
        + ((("docstrings", True),) if docstrings else ())
    if not facts:
        return list(sections)
    return [replace(s, meta=(*s.meta, *facts)) if s.kind in DEFINITIONS else s
            for s in sections]
