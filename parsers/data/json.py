"""JSON, and what every structured-data format shares (JSON Lines, YAML, TOML).

The canonical text is the decoded file (BOM removed, newlines normalised), so offsets index
the file itself. Sections, by level: the root value (`object`, `array`, or a YAML
`document`) > a TOML `table` > an `entry`: an object member (from its key to the end of its
value) or an array item whose value is an object or array. Entries nest as their values do,
so the fitter keeps an object or array whole when it fits and splits it between its members
or items when not. Array items that are scalars get no section of their own: a long array of
numbers is one leaf, cut between items by `MemberCuts` (after each comma outside a string).

`section_path` is the file name, then each key down to the entry (`servers`, `servers[2]`,
`name`); the document embeds the path in every chunk's context (`config.json > servers >
servers[2] > name`), so a piece from deep inside a file says where it is.

JSON is read by a scanner of its own (the `json` module gives no offsets): one loop with an
explicit stack (never recursion; 10,000-deep nesting is read like any other), strict RFC 8259
(what `json.loads` accepts, less NaN/Infinity), one regex match for a run of scalar array
items (a 50 MB one-line array of numbers is a few C-level matches). Bounded structure:
entries deeper than `MAX_DEPTH` or past `MAX_SECTIONS` in a document get no section (the
text is still validated, and cut at commas and lines), with a warning. Keys in the path are
cut to `MAX_KEY` characters. Invalid JSON is a `ParseError` naming the reason and position,
but for JSON with comments or trailing commas (`tsconfig.json`, editor settings): chunked as
text, by lines, with a warning.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Iterator

from chunkwise.errors import ParseError
from chunkwise.model import ParsedDocument, Section
from chunkwise.text.splitting import LINES, SENTENCES, WORDS
from chunkwise.text.textio import decode

LEVEL_ROOT, LEVEL_DOCUMENT, LEVEL_TABLE, LEVEL_ENTRY = 50, 40, 30, 20
#: entries nested deeper than this get no section (their text joins the entry above)
MAX_DEPTH = 64
#: sections in one document at most (each costs the fitter about half a kilobyte)
MAX_SECTIONS = 200_000
#: a key longer than this (in characters) is cut in the section path
MAX_KEY = 80
#: the kinds whose text, when no section is under it, is cut first at commas between items
#: and members, then at lines, sentences, words (`ParsedDocument.leaf_splitters`)
LEAF_KINDS = ("entry", "object", "array", "record", "value", "table", "document")

_WS = re.compile(r"[ \t\n\r]*")
_STR = r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
_NUM = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_SCALAR_PATTERN = rf"(?:{_STR}|{_NUM}|true|false|null)(?![A-Za-z0-9_.+\-])"
_SCALAR = re.compile(_SCALAR_PATTERN)
_STRING = re.compile(_STR)
_KEY = re.compile(rf"({_STR})[ \t\n\r]*:[ \t\n\r]*")
_W = r"[ \t\n\r]*"
#: an object or array of scalars (up to 256 of them): read in one match where no section
#: is wanted inside it
_FLAT_PATTERN = (rf"\{{{_W}(?:{_STR}{_W}:{_W}{_SCALAR_PATTERN}{_W}"
                 rf"(?:,{_W}{_STR}{_W}:{_W}{_SCALAR_PATTERN}{_W}){{0,255}})?\}}"
                 rf"|\[{_W}(?:{_SCALAR_PATTERN}{_W}(?:,{_W}{_SCALAR_PATTERN}{_W}){{0,255}})?\]")
_FLAT = re.compile(_FLAT_PATTERN)
#: runs of array items, each with the comma after it: scalars (items without sections), or
#: also flat objects and arrays (where no section is wanted). Bounded repeats: the regex
#: engine keeps state for every repeat of a group, 4.5 GB for a run of 6 million.
_SCALAR_RUN = re.compile(rf"(?:{_SCALAR_PATTERN}{_W},{_W}){{1,256}}")
_FLAT_RUN = re.compile(rf"(?:(?:{_SCALAR_PATTERN}|{_FLAT_PATTERN}){_W},{_W}){{1,256}}")
_LABEL_SPACE = re.compile(r"\s+")


def parse(data: bytes, *, source: str, jsonc: bool = True) -> ParsedDocument:
    """Parse a JSON document into object/array/entry sections. JSON with comments or
    trailing commas is one section, with a warning (`jsonc`), else a `ParseError` too."""
    text, warnings = decode(data, source)
    name = file_label(source)
    builder = Builder(source, text, name)
    pos = _WS.match(text).end()
    if pos < len(text):
        try:
            end = scan_json(text, pos, len(text), builder, (name,))
        except ParseError as e:
            if not (jsonc and _jsonc(text, e)):
                raise
            # JSON with comments or trailing commas (tsconfig.json, .vscode/settings.json):
            # not JSON, but what a folder of code holds; chunked as text, by lines
            line = text.count("\n", 0, e.position) + 1
            warnings.append(f"{e.reason} at line {line} (JSON with comments?): chunked as "
                            "text, by lines")
            builder.sections.clear()
            builder.add(0, len(text), LEVEL_DOCUMENT, "document", (name,))
            return builder.document("json", warnings, json_cuts=False)
        rest = _WS.match(text, end).end()
        if rest < len(text):
            hint = " (JSON Lines? name the file .jsonl)" if text.find("\n", end, rest) != -1 \
                else ""
            raise ParseError(source, f"extra data after the JSON value{hint}", position=rest)
    return builder.document("json", warnings)


def _jsonc(text: str, error: ParseError) -> bool:
    """Whether `error` stops at what JSON-with-comments allows: a `//` or `/*` comment, or
    a trailing comma."""
    at = error.position
    if at is None or at >= len(text):
        return False
    if text.startswith(("//", "/*"), at):
        return True
    before = at - 1
    while before >= 0 and text[before] in " \t\r\n":
        before -= 1
    return text[at] in "]}" and before >= 0 and text[before] == ","


# -- shared by the data formats -----------------------------------------------------------------
def file_label(source: str) -> str:
    """The first element of every section path: the file name (or the source as given)."""
    return PurePath(source).name or source


def key_label(key: str) -> str:
    """A key as a path element: on one line, at most `MAX_KEY` characters."""
    if len(key) > 4 * MAX_KEY:
        key = key[:4 * MAX_KEY]
    key = _LABEL_SPACE.sub(" ", key).strip()
    return key if len(key) <= MAX_KEY else key[:MAX_KEY - 1] + "…"


def item_label(parent: str, index: int) -> str:
    """The path element of item `index` of the array at path element `parent` (cut, as a
    key, when arrays nest deep: `a[0][0][0]…`)."""
    label = f"{parent}[{index}]"
    return label if len(label) <= MAX_KEY else key_label(label)


class Builder:
    """Collects the sections of one document, within `MAX_DEPTH` and `MAX_SECTIONS`."""

    def __init__(self, source: str, text: str, name: str) -> None:
        self.source, self.text, self.name = source, text, name
        self.sections: list[Section] = []
        self.left = MAX_SECTIONS
        self.too_deep = self.too_many = False

    def can_add(self, depth: int) -> bool:
        """Whether an entry at `depth` could get a section (without noting why not)."""
        return depth <= MAX_DEPTH and self.left > 0

    def wants(self, depth: int) -> bool:
        """Whether an entry at `depth` (the root's entries are at 1) gets a section."""
        if depth > MAX_DEPTH:
            self.too_deep = True
            return False
        if self.left <= 0:
            self.too_many = True
            return False
        return True

    def add(self, start: int, end: int, level: int, kind: str, path: tuple[str, ...],
            meta: tuple[tuple[str, Any], ...] = ()) -> None:
        self.left -= 1
        self.sections.append(Section(start, end, level, kind, path, "", meta))

    def document(self, fmt: str, warnings: list[str],
                 meta: tuple[tuple[str, Any], ...] = (), *,
                 json_cuts: bool = True, lines_first: bool = False) -> ParsedDocument:
        """The parsed document: data is not prose, and its path goes into every context.
        Leaves are cut at commas outside strings (`json_cuts`), then lines, sentences and
        words; `lines_first`: at lines before commas (JSON Lines: records past
        `MAX_SECTIONS` join the last record with a section, and are cut between them)."""
        if self.too_deep:
            warnings.append(f"nested deeper than {MAX_DEPTH} levels: deeper values are cut "
                            "as text")
        if self.too_many:
            warnings.append(f"more than {MAX_SECTIONS} entries: later ones are cut as text")
        levels = (MemberCuts(), LINES, SENTENCES, WORDS) if json_cuts else \
            (LINES, SENTENCES, WORDS)
        if lines_first and json_cuts:
            levels = (LINES, MemberCuts(), SENTENCES, WORDS)
        return ParsedDocument(source=self.source, format=fmt, text=self.text,
                              sections=tuple(self.sections), title=self.name,
                              warnings=tuple(warnings), meta=meta,
                              leaf_splitters=tuple((k, levels) for k in LEAF_KINDS))


@dataclass(frozen=True, slots=True)
class MemberCuts:
    """A splitter (see `chunkwise.text.splitting`): after each comma (and the whitespace after it)
    outside a JSON string, so that a piece of an array or object without sections of its
    own (scalar items, entries past the limits) starts at an item or member. The spans it
    is given start at a value or entry, outside any string; cuts are found as they are
    taken (a 50 MB array has millions)."""

    def __call__(self, text: str, a: int, b: int) -> list[int]:
        return list(self.iter(text, a, b))

    def iter(self, text: str, a: int, b: int) -> Iterator[int]:
        """The cuts strictly inside `(a, b)`, in order."""
        for m in _COMMA_OR_STRING.finditer(text, a, b):
            if m.lastindex == 1 and a < m.end() < b:
                yield m.end()


# an unterminated string takes the rest of the span: linear. (No group repeated once a
# character: the regex engine keeps state for each repeat, gigabytes for a 20 MB string.)
_COMMA_OR_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|(,[ \t\n\r]*)', re.S)


# -- the JSON scanner -----------------------------------------------------------------------------
class _Frame:
    """An open object or array: its path, the open entry (start, path, sectioned)."""

    __slots__ = ("is_object", "path", "label", "count", "entry_start", "entry_path",
                 "entry_section")

    def __init__(self, is_object: bool, path: tuple[str, ...], label: str) -> None:
        self.is_object, self.path, self.label = is_object, path, label
        self.count = 0
        self.entry_start, self.entry_path, self.entry_section = 0, path, False


def scan_json(text: str, pos: int, stop: int, builder: Builder, path: tuple[str, ...],
              *, root_kind: str | None = None,
              root_meta: tuple[tuple[str, Any], ...] = ()) -> int:
    """Read the JSON value at `pos` (no whitespace before it) in `text[:stop]`, adding its
    sections to `builder` under `path`; return where it ends. The root value is a section
    of kind `root_kind` (default: `object`, `array` or `value`) with `root_meta`.
    Raises `ParseError` at the first character that is not JSON."""
    source = builder.source
    stack: list[_Frame] = []
    root_start = pos
    while True:
        # -- a value starts at pos
        if pos >= stop:
            raise ParseError(source, "unexpected end of data", position=pos)
        c = text[pos]
        top = stack[-1] if stack else None
        if top is not None and not top.is_object:  # an array item
            depth = len(stack)
            if c != "{" and c != "[" or not builder.can_add(depth):
                pos, c = _skip_runs(text, pos, stop, top, builder.can_add(depth), source)
            top.entry_start = pos
            if depth <= MAX_DEPTH:
                top.entry_path = (*top.path, item_label(top.label, top.count))
            top.entry_section = (c == "{" or c == "[") and builder.wants(depth)
        if (c == "{" or c == "[") and not builder.can_add(len(stack) + 1):
            flat = _FLAT.match(text, pos, stop)  # nothing inside wants a section
            if flat is not None:
                c = "flat"
                pos = flat.end()
        if c == "flat":
            pass
        elif c == "{" or c == "[":
            label = top.entry_path[-1] if top is not None else ""
            frame = _Frame(c == "{", top.entry_path if top is not None else path, label)
            stack.append(frame)
            pos = _WS.match(text, pos + 1, stop).end()
            if pos < stop and text[pos] == ("}" if frame.is_object else "]"):
                pos += 1
                stack.pop()
            elif frame.is_object:
                pos = _key(text, pos, stop, frame, builder, len(stack))
                continue
            else:
                continue
        else:
            m = _SCALAR.match(text, pos, stop)
            if m is None:
                raise ParseError(source, _bad_value(text, pos, stop), position=pos)
            pos = m.end()
        # -- a value ended at pos: close entries and containers as far as it goes
        while True:
            if not stack:
                if (root_kind is not None or text[root_start] in "{[") and builder.wants(0):
                    kind = root_kind or ("object" if text[root_start] == "{" else "array")
                    builder.add(root_start, pos, LEVEL_ROOT, kind, path, root_meta)
                return pos
            top = stack[-1]
            after = _WS.match(text, pos, stop).end()
            if after >= stop:
                raise ParseError(source, "unexpected end of data (an unclosed "
                                 f"{'object' if top.is_object else 'array'})", position=after)
            c = text[after]
            if top.entry_section:  # with the comma after it: no piece starts with one
                builder.add(top.entry_start, after + 1 if c == "," else pos, LEVEL_ENTRY,
                            "entry", top.entry_path)
            top.count += 1
            pos = after
            if c == ",":
                pos = _WS.match(text, pos + 1, stop).end()
                if top.is_object:
                    pos = _key(text, pos, stop, top, builder, len(stack))
                break
            if c == ("}" if top.is_object else "]"):
                pos += 1
                stack.pop()
                continue
            want = "',' or '}'" if top.is_object else "',' or ']'"
            raise ParseError(source, f"expected {want}, found {text[pos:pos + 10]!r}",
                             position=pos)


def _key(text: str, pos: int, stop: int, frame: _Frame, builder: Builder, depth: int) -> int:
    """Read `"key": ` at pos for the next member of `frame`; return where its value starts."""
    m = _KEY.match(text, pos, stop)
    if m is None:
        if pos < stop and text[pos] == "}":
            raise ParseError(builder.source, "trailing comma in an object", position=pos)
        name = _STRING.match(text, pos, stop)
        if name is not None:
            raise ParseError(builder.source, "expected ':' after the member name",
                             position=_WS.match(text, name.end(), stop).end())
        raise ParseError(builder.source, "expected a member name in double quotes, found "
                         f"{text[pos:pos + 10]!r}" if pos < stop else "unexpected end of data",
                         position=pos)
    frame.entry_start = pos
    frame.entry_section = builder.wants(depth)
    # (an entry without a section has no section under it either: its path is not needed)
    if frame.entry_section:
        raw = m.group(1)
        key = json.loads(raw) if len(raw) <= 4 * MAX_KEY else raw[1:4 * MAX_KEY]
        frame.entry_path = (*frame.path, key_label(key))
    return m.end()


def _skip_runs(text: str, pos: int, stop: int, frame: _Frame, sectioned: bool,
               source: str) -> tuple[int, str]:
    """Past the runs of array items at `pos` that get no section: scalars, and also flat
    objects and arrays when not `sectioned`. Returns the position of the next item and its
    first character."""
    run_re = _SCALAR_RUN if sectioned else _FLAT_RUN
    while (run := run_re.match(text, pos, stop)) is not None:
        if sectioned:  # (else no later item gets a section: its label is not needed)
            frame.count += _count_items(text, pos, run.end())
        pos = run.end()
    if pos >= stop:
        raise ParseError(source, "unexpected end of data", position=pos)
    return pos, text[pos]


def _count_items(text: str, start: int, end: int) -> int:
    """Commas between items in `text[start:end]` (a run of scalars): those outside strings."""
    if text.find('"', start, end) == -1:
        return text.count(",", start, end)
    return sum(1 for m in _COMMA_OR_STRING.finditer(text, start, end) if m.lastindex == 1)


def _bad_value(text: str, pos: int, stop: int) -> str:
    c = text[pos]
    if c == '"':
        return "invalid string (unterminated, a raw control character or a bad escape)"
    if c in "]}":
        return "trailing comma, or a value missing"
    word = text[pos:min(stop, pos + 12)].split(None, 1)[0] if text[pos:pos + 1].strip() else c
    return f"expected a JSON value, found {word!r}"
