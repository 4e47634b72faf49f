"""Bytes to canonical text, and coordinate conversions (lines, UTF-8 bytes -> `str` indices).

Every parser decodes through `decode()` and converts foreign coordinates (markdown-it line
ranges, tree-sitter byte offsets) through the helpers here, so that the conversions live, and
are tested, in exactly one place.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
from bisect import bisect_right
from io import IncrementalNewlineDecoder
from itertools import accumulate

from ..errors import ParseError

# Control characters other than tab, newline, form feed and carriage return.
_CONTROL = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20)])
#: bytes looked at together by the binary check (the first window is also where a NUL alone
#: means binary)
_SNIFF = 8192
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
#: encodings that a declaration read from the bytes as ASCII cannot truly name (see `decode`)
_WIDE = frozenset({"utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"})
_NON_ASCII = bytes(range(0x80, 0x100))
_REPLACEMENT = "\ufffd"


def looks_binary(data: bytes) -> bool:
    """True when the bytes are clearly not text: a NUL byte in the first 8 KB, or more than
    1% control bytes (and more than 8) in any 8 KB of the file. Past the first 8 KB a stray
    NUL is left to the parser (CSV drops a few with a warning, Python refuses any), while
    binary data there (an archive or image appended to a log) is found: it has about 10%
    control bytes. One C-level pass per 8 KB, about as fast as decoding the file. UTF-16
    with a BOM is text."""
    if not data or data.startswith(_UTF16_BOMS):
        return False
    if b"\x00" in data[:_SNIFF]:
        return True
    return any(_mostly_control(data[i:i + _SNIFF]) for i in range(0, len(data), _SNIFF))


def _mostly_control(window: bytes) -> bool:
    # their count, as the length that deleting them takes off (one C-level pass; a regex
    # `findall` costs ~40 µs for 8 KB)
    return len(window) - len(window.translate(None, _CONTROL)) > max(8, len(window) // 100)


def decode(data: bytes, source: str, *, check_binary: bool = True,
           declared: str | None = None) -> tuple[str, list[str]]:
    """Decode file bytes to canonical text: BOM removed, newlines normalised to `\\n`.

    UTF-8 first (with or without BOM), UTF-16 when it has a BOM. Bytes that are not UTF-8
    are read in the encoding the document declares (`declared`: an HTML meta charset or XML
    declaration, a Python coding cookie; see `declared_encoding`), with a warning only for
    bytes invalid in it. A declared UTF-16 or UTF-32 is taken for UTF-8, as the HTML
    standard reads `<meta charset>`: the declaration was found by reading the bytes as
    ASCII, which UTF-16 and UTF-32 text is not.

    Without a usable declaration: when the valid multi-byte UTF-8 sequences outnumber the
    invalid bytes, the file is UTF-8 with a few bad bytes (a stray byte, a character cut at
    the end), and only those are replaced (U+FFFD), with a warning giving their count and
    the first one's offset. Otherwise it is 8-bit text: in cp1252 or latin-1 text a valid
    multi-byte sequence is an accident of two or three rare characters ("Ã©"), and a file
    with none, or with as many invalid bytes as sequences (text pasted from both), is read
    as cp1252, and failing that latin-1, with a warning naming the first invalid byte, so
    that no byte is lost. Raises `ParseError` for binary data.
    """
    warnings: list[str] = []
    if check_binary and looks_binary(data):
        raise ParseError(source, "binary data, not a text document")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    if data.startswith(_UTF16_BOMS):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as e:
            raise ParseError(source, f"invalid UTF-16: {e.reason}", position=e.start) from e
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            redone = _as_declared(data, declared) if declared else None
            if redone is None:
                redone = _undeclared(data, e.start)
            text, warning = redone
            warnings += [warning] if warning else []
    return normalize_newlines(text), warnings


def _undeclared(data: bytes, first: int) -> tuple[str, str]:
    """`data`, which is not UTF-8 from byte `first` on and declares no usable encoding, as
    mostly UTF-8 or as 8-bit text (see `decode`), and the warning. The counts come from
    C-level passes: replaced characters, less the U+FFFD the file itself holds; invalid
    bytes, as the bytes that re-encoding the text does not give back; sequences, as the
    non-ASCII characters that are not replacements."""
    text = data.decode("utf-8", "replace")
    replaced = text.count(_REPLACEMENT) - data.count(_REPLACEMENT.encode())
    invalid = len(data) - (len(text.encode("utf-8")) - 3 * replaced)
    ascii_chars = len(data.translate(None, _NON_ASCII))
    sequences = len(text) - ascii_chars - replaced
    if sequences > invalid:
        return text, (f"invalid UTF-8: {invalid} byte(s) replaced, the first at byte "
                      f"{first}")
    try:
        return data.decode("cp1252"), f"invalid UTF-8 at byte {first}; decoded as cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), f"invalid UTF-8 at byte {first}; decoded as latin-1"


def _as_declared(data: bytes, encoding: str) -> tuple[str, str] | None:
    """`data` in a declared encoding: (text, warning or ""); None when Python knows no text
    encoding of that name (or one that decodes nothing, like "undefined"), or when it is
    UTF-8, which `data` is not, or UTF-16 or UTF-32 (see `decode`)."""
    try:
        if codecs.lookup(encoding).name in _WIDE | {"utf-8"}:
            return None
        return data.decode(encoding), ""
    except LookupError:
        return None
    except UnicodeError as e:
        try:
            text = data.decode(encoding, errors="replace")
        except UnicodeError:
            return None
        where = f" at byte {e.start}" if isinstance(e, UnicodeDecodeError) else ""
        return text, f"invalid {encoding}{where}; undecodable bytes replaced"


#: where documents declare their encoding, in their first bytes: an HTML `<meta charset>`
#: or `http-equiv` content type, an XML declaration, a Python coding cookie (PEP 263: on
#: the first line, or on the second after a comment or blank line)
_DECLARATIONS = {
    "html": re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.-]+)"""
                       rb"""|\A\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_:.-]+)""", re.I),
    "python": re.compile(rb"\A(?:[ \t\f]*(?:#[^\n]*)?\r?\n)?[ \t\f]*#[^\n]*?coding[:=][ \t]*([-\w.]+)"),
}


def declared_encoding(data: bytes, kind: str) -> str | None:
    """The encoding a document of `kind` ("html", "python") declares in its first 4 KB,
    lower-cased, or None."""
    m = _DECLARATIONS[kind].search(data[:4096])
    if m is None:
        return None
    name = next(g for g in m.groups() if g is not None)
    return name.decode("ascii").lower()


def source_name(source: str | os.PathLike) -> str:
    """The name a file goes by in chunks, stores and reports: the path as a `str`, with the
    bytes of a file name that are not UTF-8 (which Python keeps as lone surrogates, and
    which no tokenizer, JSON encoder or database accepts) written as `\\xNN`."""
    name = os.fspath(source)
    if isinstance(name, bytes):
        return name.decode("utf-8", "backslashreplace")
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape" if _NOT_ESCAPED.search(name) is None
                           else "backslashreplace").decode("utf-8", "backslashreplace")


def file_source(path: str | os.PathLike) -> str:
    """The name a file found on disk goes by (its `source`): an injective function of the
    path's bytes, so two different files can never share a source (one would take the
    other's chunks as stale). A path that is valid UTF-8 and holds no backslash is itself;
    otherwise every backslash is doubled and every byte that is not UTF-8 written `\\xNN`
    (a C-style escape), so `bad\\xffname.md` (a real name with a backslash) and the name
    whose fourth byte is 0xFF stay apart. Callers' own document ids keep `source_name`."""
    name = os.fspath(path)
    if isinstance(name, bytes):
        name = name.decode("utf-8", "surrogateescape")
    if "\\" not in name:
        try:
            name.encode("utf-8")
            return name
        except UnicodeEncodeError:
            pass
    return source_name(name.replace("\\", "\\\\"))


#: a lone surrogate that `surrogateescape` did not make (so cannot turn back into a byte)
_NOT_ESCAPED = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def normalize_newlines(text: str) -> str:
    """`\\r\\n` and lone `\\r` become `\\n` (what markdown-it and most tools assume)."""
    if "\r" not in text:
        return text
    # One C loop over the text, that of universal-newline reading (without a decoder, the
    # newline decoder takes `str`): 40% faster than `replace("\r\n", "\n")`, which searches
    # the text twice (to count, then to copy), then `replace("\r", "\n")`; the same text
    # (tested) and, like `replace`, one allocation.
    return IncrementalNewlineDecoder(None, translate=True).decode(text, final=True)


class LineCounter:
    """0-based line of offsets asked mostly in increasing order (a document's chunks): each
    answer counts the newlines between the previous offset and this one, so a whole
    document costs about one C-level pass, with no index built."""

    __slots__ = ("text", "pos", "line")

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 0

    def line_of(self, offset: int) -> int:
        """0-based line holding `offset`."""
        if offset >= self.pos:
            self.line += self.text.count("\n", self.pos, offset)
        else:
            self.line -= self.text.count("\n", offset, self.pos)
        self.pos = offset
        return self.line


class ByteOffsets:
    """UTF-8 byte offsets -> `str` indices for one text (tree-sitter, tiktoken offsets)."""

    __slots__ = ("_cum", "_ascii")

    def __init__(self, text: str) -> None:
        self._ascii = text.isascii()
        # _cum[i] = byte offset of character i; only built for non-ASCII text.
        self._cum: list[int] = [] if self._ascii else [0, *accumulate(
            1 if c < "\x80" else 2 if c < "\u0800" else 3 if c < "\U00010000" else 4 for c in text
        )]

    def to_str(self, byte_offset: int) -> int:
        """The `str` index of the character starting at `byte_offset` (or the one containing it)."""
        if self._ascii:
            return byte_offset
        return bisect_right(self._cum, byte_offset) - 1


#: characters that must not reach a terminal raw: C0 controls (newline and tab included:
#: a name is one line), DEL, C1 controls (ESC sequences, OSC), line/paragraph separators
#: and the bidirectional overrides that reorder what is shown
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: the same, newline and tab allowed: document text shown as lines
_UNSAFE_IN_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e"
                             "\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    code = ord(m[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(s: str, *, lines: bool = False) -> str:
    """The one escaping function for what reaches a terminal: unsafe characters (see
    `_UNSAFE`) written as `\\xNN` or `\\uNNNN` escapes, so a file name or a document
    cannot forge an output line or send escape sequences (a title, a hyperlink, a cleared
    screen) to the terminal. `lines`: document text, whose newlines and tabs are kept.
    Machine-readable output (JSON) never goes through it: it keeps names as they are."""
    unsafe = _UNSAFE_IN_TEXT if lines else _UNSAFE
    return s if unsafe.search(s) is None else unsafe.sub(_escape, s)


def display_name(name: str) -> str:
    """`name` safe to print on one terminal line (`terminal_safe`)."""
    return terminal_safe(name)


class TerminalSafeFormatter(logging.Formatter):
    """Log lines for a terminal: the formatted message through `terminal_safe` (a warning
    names files and quotes documents), one record one line."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))
