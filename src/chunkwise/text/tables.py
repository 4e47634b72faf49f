"""Table lines as cells: the one reading of a row line, shared by the parsers that write a
table's header cells (`VIEW_FACTS` in `chunkwise.model`) and the table views that label rows
with them (`chunkwise.chunking.views.table`).

A table's `delimiter` says how its lines hold cells: `|` for pipe rows (`| a | b |` or
`a | b`, a `\\|` inside a cell is not a delimiter), else a CSV delimiter (records may span
lines, quoted fields as `csv` reads them)."""

from __future__ import annotations

import csv
import io
import re

__all__ = ["PIPE", "cells", "first_pipe_line", "table_facts", "table_rows"]

#: the delimiter of pipe rows
PIPE = "|"
_PIPE_SPLIT = re.compile(r"(?<!\\)\|")


def cells(line: str, delimiter: str) -> list[str]:
    """The cells of one row line (pipe cells stripped, CSV fields as they are)."""
    if delimiter == PIPE:
        s = line.strip()
        if s.startswith("|"):
            s = s[1:]
        if s.endswith("|") and not s.endswith("\\|"):
            s = s[:-1]
        return [c.strip() for c in _PIPE_SPLIT.split(s)]
    try:
        return next(csv.reader(io.StringIO(line), delimiter=delimiter), [])
    except csv.Error:
        return line.split(delimiter)


def table_rows(text: str, delimiter: str) -> list[list[str]]:
    """The rows of a run of table lines (CSV records may span lines)."""
    if delimiter == PIPE:
        return [cells(line, PIPE) for line in text.split("\n") if line.strip()]
    try:
        return [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if r]
    except csv.Error:
        return [line.split(delimiter) for line in text.split("\n") if line.strip()]


def first_pipe_line(text: str, start: int, end: int) -> str | None:
    """The first line of `text[start:end]` that is a pipe row (starts with `|` after its
    indentation), or None."""
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl
        line = text[pos:stop]
        if line.lstrip().startswith("|"):
            return line
        pos = stop + 1
    return None


def table_facts(delimiter: str, header_line: str | None) -> tuple[tuple[str, object], ...]:
    """The section meta a parser writes on a table for the table views (`VIEW_FACTS`): its
    `delimiter`, and its `header_cells`, the cells of its header line (none without one:
    the rows are then not labelled)."""
    if header_line is None:
        return (("delimiter", delimiter),)
    return (("delimiter", delimiter), ("header_cells", tuple(cells(header_line, delimiter))))
