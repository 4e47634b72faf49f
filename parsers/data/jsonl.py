"""JSON Lines (`.jsonl`, `.ndjson`): one JSON value a line, each a `record` section.

The canonical text is the decoded file. Every non-blank line is read by the JSON scanner of
`chunkwise.parsers.data.json`; its value is a `record` (path: the file name, then `line N`, with
`record_start`/`record_end` = N in its meta), with the value's members and items as entries
under it, as in a JSON file. The fitter packs whole consecutive records while they fit and
splits a record that does not at its members. A line that is not JSON is a `ParseError`
naming the line. Past `MAX_SECTIONS`, records have no sections: they are cut between lines.
"""

from __future__ import annotations

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument
from chunkwise.text.textio import decode

from .json import Builder, file_label, scan_json

_SPACE = " \t\r"


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse JSON Lines into one `record` section per line."""
    text, warnings = decode(data, source)
    name = file_label(source)
    builder = Builder(source, text, name)
    pos, line, n = 0, 0, len(text)
    last = 0  # where the sections of the last record with a section begin
    records = 0
    while pos < n:
        line += 1
        end = text.find("\n", pos)
        if end == -1:
            end = n
        start = pos
        while start < end and text[start] in _SPACE:
            start += 1
        if start < end:
            label = f"line {line}"
            mark = len(builder.sections)
            try:
                stop = scan_json(text, start, end, builder, (name, label), root_kind="record",
                                 root_meta=(("record_start", line), ("record_end", line)))
            except ParseError as e:
                raise ParseError(source, f"line {line}: {e.reason}", position=e.position) from e
            if len(builder.sections) > mark and builder.sections[-1].kind != "record":
                del builder.sections[mark:]  # MAX_SECTIONS ran out inside this record
            elif len(builder.sections) > mark:
                last = mark
            rest = stop
            while rest < end and text[rest] in _SPACE:
                rest += 1
            if rest < end:
                raise ParseError(source, f"line {line}: extra data after the JSON value",
                                 position=rest)
            records += 1
        pos = end + 1
    if builder.too_many:
        # the records past MAX_SECTIONS join the last one with a section: it keeps none of
        # its entries, so that they are all cut between lines
        builder.sections[last:-1] = []
    return builder.document("jsonl", warnings, (("records", records),), lines_first=True)
