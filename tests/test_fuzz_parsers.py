"""Fuzzing every parser with structured hostile inputs (issue 30; how to run a longer
campaign, and what one found: docs/fuzzing.md).

For every format of `chunkwise.parsers.MODULES` a Hypothesis strategy builds inputs that a
hostile or broken file could hold: deep nesting, one huge token or line, mixed encodings and
BOMs, NULs and control characters, invalid UTF-8, truncation, CR/CRLF, huge tables, mutated
real PDFs, Office zip containers with hostile XML parts. The property, for every example:

- `parse_bytes` returns a `ParsedDocument` whose sections and pages lie inside its text, or
  raises `ParseError` (never another exception, never a hang: a hard alarm stops it);
- chunking it with `Chunker(max_tokens=64)` gives chunks with `text == doc.text[start:end]`,
  ordered, and `tokens <= 64` (recounted on the embed text);
- both within `DEADLINE` seconds (Hypothesis's deadline).

Environment (read once, at import):

- `CHUNKWISE_FUZZ_EXAMPLES`: examples per format (default 6: the file runs in about a
  minute on two cores); `CHUNKWISE_FUZZ_HUGE`: the largest huge token in characters
  (default 1,000,000); `CHUNKWISE_FUZZ_DEADLINE`: seconds per example (default 5);
- `CHUNKWISE_FUZZ_RANDOM=1`: a fresh random run (default: derandomized, so CI is
  deterministic); `CHUNKWISE_FUZZ_STRICT=1`: also fail on a `ParseError` that only wraps a
  parser's unexpected exception (`"<fmt> parser failed: IndexError: ..."`), a bug that
  `parse_bytes`'s safety net hides.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import tempfile
import time
import zipfile
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterator
from xml.sax.saxutils import escape, quoteattr

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from chunkwise.chunking.api import Chunker, parse_bytes
from chunkwise.errors import ParseError
from chunkwise.parsers import EXTENSIONS, MODULES

pytestmark = pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")  # zips built so

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

EXAMPLES = int(os.environ.get("CHUNKWISE_FUZZ_EXAMPLES", "6"))
HUGE = int(os.environ.get("CHUNKWISE_FUZZ_HUGE", "1000000"))
DEADLINE = float(os.environ.get("CHUNKWISE_FUZZ_DEADLINE", "5"))
RANDOM = os.environ.get("CHUNKWISE_FUZZ_RANDOM") == "1"
STRICT = os.environ.get("CHUNKWISE_FUZZ_STRICT") == "1"
#: a hard bound per example, past which the parser is taken to hang (the deadline, checked
#: only after an example returns, cannot stop a loop)
HANG = 4 * DEADLINE
#: where the smallest failing input of each (format, error) is written, to reproduce it
SAVE = Path(os.environ.get("CHUNKWISE_FUZZ_SAVE")
            or Path(tempfile.gettempdir()) / "chunkwise-fuzz")
SHRINK = os.environ.get("CHUNKWISE_FUZZ_SHRINK") == "1"
#: a file to which one JSON line per example is appended: format, bytes, seconds, outcome
STATS = os.environ.get("CHUNKWISE_FUZZ_STATS")
#: the most cells of one generated table (CSV, HTML, Markdown, XLSX), about 200 kB: a
#: 5,000-column CSV of 100,000 cells (740 kB) takes 6-8 s to chunk (docs/fuzzing.md)
MAX_CELLS = 30_000
#: how deep nesting goes: mostly shallow, sometimes past every recursion limit
DEPTH = st.one_of(st.integers(1, 40), st.sampled_from([100, 300, 1_000, 5_000]))

FUZZ = settings(max_examples=EXAMPLES, deadline=timedelta(seconds=DEADLINE),
                derandomize=not RANDOM, database=None, print_blob=True,
                phases=[p for p in Phase if SHRINK or p is not Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much,
                                       HealthCheck.large_base_example])

MAX_TOKENS = 64
CHUNKER = Chunker(max_tokens=MAX_TOKENS)


# -- the property -------------------------------------------------------------------------


class _Hang(BaseException):
    """Raised by the alarm; a BaseException, so `parse_bytes`'s net does not catch it."""


@contextmanager
def _hard_limit(seconds: float) -> Iterator[None]:
    if not hasattr(signal, "setitimer"):
        yield
        return

    def ring(signum, frame):
        raise _Hang()

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class Blob(bytes):
    """Generated input: bytes whose repr stays short when Hypothesis reports a failure (the
    input itself is saved under `SAVE`)."""

    def __repr__(self) -> str:
        return f"<{len(self):,} bytes: {bytes(self[:120])!r}...>"


_smallest: dict[tuple[str, str], int] = {}


def _save(data: bytes, fmt: str, error: BaseException) -> Path | None:
    """Write a failing input, when it is the smallest seen for its format and error type
    (the shrunk example is written last)."""
    key = (fmt, type(error).__name__)
    if len(data) >= _smallest.get(key, 1 << 62):
        return None
    _smallest[key] = len(data)
    SAVE.mkdir(parents=True, exist_ok=True)
    path = SAVE / f"{fmt}-{key[1]}.bin"
    path.write_bytes(data)
    return path


def check(data: bytes, fmt: str, source: str) -> None:
    """The fuzzing property for one input (see the module docstring)."""
    began = time.perf_counter()
    outcome = "ok"
    try:
        try:
            with _hard_limit(HANG):
                outcome = _check(data, fmt, source)
        except _Hang:
            raise AssertionError(f"{fmt}: no answer within {HANG:.0f} s on {len(data):,} "
                                 f"bytes") from None
    except Exception as e:
        outcome = f"FAIL {type(e).__name__}"
        path = _save(data, fmt, e)
        if path is not None and hasattr(e, "add_note"):
            e.add_note(f"input saved to {path} (reproduce: chunkwise.chunking.api.parse_bytes("
                       f"open(path, 'rb').read(), source={source!r}, format={fmt!r}))")
        raise
    finally:
        if STATS:
            with open(STATS, "a") as f:
                f.write(json.dumps({"format": fmt, "bytes": len(data), "outcome": outcome,
                                    "seconds": round(time.perf_counter() - began, 3)}) + "\n")


def _check(data: bytes, fmt: str, source: str) -> str:
    """The property; returns what happened (`ok`, `ParseError: <reason>`)."""
    try:
        doc = parse_bytes(data, source=source, format=fmt)
    except ParseError as e:
        if STRICT:
            assert " parser failed: " not in e.reason, f"a parser bug behind the net: {e}"
        return f"ParseError: {e.reason[:200]}"
    text = doc.text
    assert isinstance(text, str)
    n = len(text)
    for s in doc.sections:
        assert 0 <= s.start <= s.end <= n, f"section {s.kind} [{s.start}:{s.end}] of {n}"
    if doc.page_starts is not None:
        assert all(0 <= p <= n for p in doc.page_starts), f"page_starts {doc.page_starts[:9]}"
        assert list(doc.page_starts) == sorted(doc.page_starts), "page_starts out of order"
    prev = 0
    for c in CHUNKER.chunk_document(doc):
        assert 0 <= c.start <= c.end <= n
        assert c.text == text[c.start:c.end], f"chunk [{c.start}:{c.end}] text != slice"
        assert c.start >= prev, "chunks out of order or overlapping"
        prev = c.end
        assert c.tokens <= MAX_TOKENS, f"chunk [{c.start}:{c.end}] has {c.tokens} tokens"
        assert CHUNKER.sizer.count(c.embed_text) <= MAX_TOKENS, "recount over the budget"
    return "ok"


# -- hostile text and bytes, shared by the text formats ------------------------------------

#: characters a parser may trip on: controls, invisible and bidi marks, line separators,
#: BOMs, noncharacters, combining marks, astral characters
ODD = ["\t", "\x0b", "\x0c", "\x1b[31m", "\x7f", "\x85", "\xa0", "\u200b", "\u200d",
       "\u202e", "\u2028", "\u2029", "\ufeff", "\ufffd", "\ufffe", "\uffff", "e\u0301\u0301",
       "\U0001f600", "\U0010ffff", "\U0001d518", "\ufdfa", "İ", "ß", "ǅ", "\u0130\u0307"]
#: (NUL is left to `JUNK`: a NUL makes the text parsers call a file binary, as they should,
#: so it must be rare for the rest to be reached)
WORD = st.one_of(st.text(st.characters(exclude_characters="\x00"), min_size=1, max_size=10),
                 st.sampled_from(ODD),
                 st.sampled_from(["lorem", "ipsum", "dolor", "Fig.", "e.g.", "1.", "x" * 40,
                                  "http://a.b/c?d=e&f", "def", "class", "$$", "\\", "'", '"']))


def line(extra: list[str] | None = None, max_words: int = 12) -> st.SearchStrategy[str]:
    """A line of hostile words, with the format's own special tokens among them."""
    word = WORD if not extra else st.one_of(WORD, st.sampled_from(extra))
    return st.lists(word, min_size=1, max_size=max_words).map(" ".join)


#: what a huge token is made of: one character, or a pattern, repeated
HUGE_UNITS = ["A", "é", "\U0001d518", "\u200b", " ", "\t", "word ", "ab" * 3, "<", "{", "[",
              "(", "|", ",", "\\", "#", "*", "`", "\"", "-", "0", "\x00", "\r", "&amp;"]


@st.composite
def with_huge(draw, text: str) -> str:
    """`text` with one huge token or line inserted at a random place."""
    size = draw(st.sampled_from([HUGE // 100, HUGE // 10, HUGE // 2, HUGE]))
    unit = draw(st.sampled_from(HUGE_UNITS))
    at = draw(st.integers(0, len(text)))
    return text[:at] + unit * max(1, size // len(unit)) + text[at:]


ENCODINGS = ["utf-8", "utf-8", "utf-8", "utf-8", "utf-8-sig", "utf-16", "utf-16-le",
             "utf-16-be", "utf-32", "latin-1", "cp1252", "shift_jis", "gb18030", "mixed"]
#: byte sequences that are not UTF-8 (a lone continuation byte, a truncated sequence, an
#: encoded surrogate, an overlong form, past U+10FFFF), BOMs, a NUL
JUNK = [b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf",
        b"\xf4\x90\x80\x80", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\r", b"\x1a", b"\x85",
        b"\x81", b"\xa0", b"\xe9", b"\x00"]


def _encode(text: str, encoding: str) -> bytes:
    if encoding == "mixed":  # half UTF-8, half Windows-1252
        half = len(text) // 2
        return text[:half].encode("utf-8") + text[half:].encode("cp1252", "replace")
    return text.encode(encoding, "replace")


@st.composite
def hostile(draw, texts: st.SearchStrategy[str], *, huge: bool = True,
            rate: int = 3) -> bytes:
    """Bytes of a drawn structured text, each hostile change made with odds 1 in `rate`:
    a huge token, CR or CRLF newlines, another encoding, BOMs and invalid bytes inserted,
    truncation."""
    text = draw(texts)
    if huge and draw(st.integers(0, 3 * rate)) == 0:
        text = draw(with_huge(text))
    if draw(st.integers(0, rate)) == 0:
        newline = draw(st.sampled_from(["\r\n", "\r", "mixed"]))
        if newline == "mixed":  # LF, CRLF and CR in turn
            turn = iter(range(len(text) + 1))
            text = re.sub("\n", lambda m: ("\n", "\r\n", "\r")[next(turn) % 3], text)
        else:
            text = text.replace("\n", newline)
    encoding = draw(st.sampled_from(ENCODINGS)) if draw(st.integers(0, rate)) == 0 else "utf-8"
    data = _encode(text, encoding)
    if draw(st.integers(0, rate)) == 0:
        for _ in range(draw(st.integers(1, 6))):
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.sampled_from(JUNK)) + data[at:]
    if draw(st.integers(0, 2 * rate)) == 0 and data:
        data = data[:draw(st.integers(0, len(data) - 1))]
    return data


# -- Markdown and plain text -------------------------------------------------------------

MD_TOKENS = ["*", "**", "_", "`", "[", "]", "(", ")", "![", "<", ">", "|", "#", "\\", "&amp;",
             "&#0;", "&#x110000;", "<br>", "<!--", "-->", "$", "~~", "[^1]", "<http://x>"]


@st.composite
def markdown_text(draw) -> str:
    blocks = []
    ln = line(MD_TOKENS)
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["heading", "setext", "para", "list", "quote", "fence",
                                     "indented", "table", "html", "deep_list", "deep_quote",
                                     "deep_inline", "front", "refs", "hr"]))
        if kind == "heading":
            blocks.append("#" * draw(st.integers(1, 8)) + " " + draw(ln)
                          + draw(st.sampled_from(["", " #", " ###"])))
        elif kind == "setext":
            blocks.append(draw(ln) + "\n" + draw(st.sampled_from(["===", "---", "=", "- - -"])))
        elif kind == "para":
            blocks.append("\n".join(draw(st.lists(ln, min_size=1, max_size=6))))
        elif kind == "list":
            items = draw(st.lists(st.tuples(st.integers(0, 12), ln), min_size=1, max_size=12))
            marker = draw(st.sampled_from(["- ", "* ", "+ ", "1. ", "1) ", "99999999999. "]))
            blocks.append("\n".join(" " * i + marker + t for i, t in items))
        elif kind == "quote":
            blocks.append("\n".join(">" * draw(st.integers(1, 5)) + " " + draw(ln)
                                    for _ in range(draw(st.integers(1, 5)))))
        elif kind == "fence":
            fence = draw(st.sampled_from(["```", "~~~", "````", "``` python", "~~~~~~~~~~ {.x}"]))
            body = "\n".join(draw(st.lists(ln, max_size=6)))
            close = draw(st.sampled_from(["```", "~~~", "", "````"]))  # maybe unclosed
            blocks.append(f"{fence}\n{body}\n{close}")
        elif kind == "indented":
            blocks.append("\n".join("    " + draw(ln) for _ in range(draw(st.integers(1, 4)))))
        elif kind == "table":
            cols, rows = draw(st.integers(1, 300)), draw(st.integers(0, 200))
            cell = draw(st.sampled_from(["a", "é", "", "x\\|y", "`|`", "**b**"]))
            head = "|" + "|".join(f" h{i} " for i in range(cols)) + "|"
            sep = "|" + "|".join(draw(st.sampled_from(["---", ":-:", "--:", "-"]))
                                 for _ in range(cols)) + "|"
            ragged = draw(st.booleans())
            body = ["|" + "|".join([cell] * (cols + (r % 3 - 1 if ragged else 0))) + "|"
                    for r in range(rows)]
            blocks.append("\n".join([head, sep, *body]))
        elif kind == "html":
            blocks.append(draw(st.sampled_from(["<div>", "<pre>", "<!--", "<script>", "<?php",
                                                "<![CDATA[", "<table><tr><td>"])) + "\n"
                          + draw(ln))
        elif kind == "deep_list":
            n = draw(DEPTH)
            if draw(st.booleans()):  # (indentation is quadratic: at most 1 MB of it)
                blocks.append("\n".join("  " * i + "- " + str(i) for i in range(min(n, 1_000))))
            else:
                blocks.append("- " * n + "x")
        elif kind == "deep_quote":
            blocks.append("> " * draw(DEPTH) + draw(ln))
        elif kind == "deep_inline":
            n = draw(DEPTH)
            pair = draw(st.sampled_from([("*", "*"), ("[", "]"), ("[", "](x)"), ("`", ""),
                                         ("<a>", ""), ("_", "_"), ("![", "]"), ("(", ")")]))
            blocks.append(pair[0] * n + "x" + pair[1] * draw(st.integers(0, n)))
        elif kind == "front":
            blocks.insert(0, "---\ntitle: " + draw(ln) + "\n" + draw(st.sampled_from(["---", ""])))
        elif kind == "refs":
            blocks.append("\n".join(f"[{draw(ln)}]: http://x/{i} \"t\"" for i in range(5)))
        else:
            blocks.append(draw(st.sampled_from(["---", "***", "___", "- - -"])))
    return draw(st.sampled_from(["\n\n", "\n", "\n\n\n"])).join(blocks)


@st.composite
def plain_text(draw) -> str:
    paras = []
    for _ in range(draw(st.integers(0, 15))):
        kind = draw(st.sampled_from(["para", "para", "long", "indent", "rule", "numbered",
                                     "formfeed", "blank"]))
        if kind == "para":
            paras.append("\n".join(draw(st.lists(line(), min_size=1, max_size=6))))
        elif kind == "long":  # one long line of words, no newline
            paras.append(" ".join([draw(line())] * draw(st.integers(10, 2000))))
        elif kind == "indent":
            paras.append("\n".join(" " * draw(st.integers(0, 80)) + draw(line())
                                   for _ in range(draw(st.integers(1, 5)))))
        elif kind == "rule":
            paras.append(draw(st.sampled_from(["=", "-", "*", "~"])) * draw(st.integers(1, 200)))
        elif kind == "numbered":
            paras.append("\n".join(f"{i}. {draw(line())}" for i in range(draw(st.integers(1, 9)))))
        elif kind == "formfeed":
            paras.append("\x0c")
        else:
            paras.append(" \t " * draw(st.integers(0, 50)))
    return "\n\n".join(paras)


# -- HTML ----------------------------------------------------------------------------------

HTML_TAGS = ["div", "p", "span", "a", "b", "i", "ul", "ol", "li", "table", "tr", "td", "th",
             "thead", "tbody", "caption", "blockquote", "pre", "code", "h1", "h2", "h3", "h6",
             "section", "article", "main", "nav", "header", "footer", "aside", "script",
             "style", "noscript", "template", "iframe", "svg", "math", "form", "select",
             "option", "textarea", "details", "summary", "dl", "dt", "dd", "figure", "sup",
             "font", "center", "marquee", "button", "label", "title", "head", "body", "html"]
VOID = ["br", "hr", "img", "input", "meta", "link", "wbr", "col"]
ATTRS = ["class", "id", "role", "hidden", "style", "colspan", "rowspan", "aria-hidden", "lang",
         "dir", "href", "src", "data-x", "charset", "http-equiv", "content", "start", "value"]
ATTR_VALUES = ["", "0", "1", "-1", "2", "65534", "1000000", "99999999999999999999", "abc",
               "nav", "cookie-banner", "main-content", "display:none", "true", "utf-16",
               "text/html; charset=shift_jis", "rtl", "javascript:alert(1)", "\"'><", "é"]
HTML_TEXT = ["&amp;", "&nbsp;", "&nbsp", "&#0;", "&#x110000;", "&#xD800;", "&unknown;", "&",
             "<", ">", "</", "<!--", "-->", "<![CDATA[", "]]>", "<?xml?>", "<!DOCTYPE html>",
             "</p>", "</td>", "</table>", "</body>", "</html>"]


@st.composite
def html_attrs(draw) -> str:
    out = []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(ATTRS))
        value = draw(st.sampled_from(ATTR_VALUES))
        if draw(st.integers(0, 20)) == 0:
            value = "v" * draw(st.sampled_from([1_000, 100_000, HUGE // 4]))
        quote = draw(st.sampled_from(['"', "'", ""]))
        out.append(f" {name}={quote}{value}{quote}" if draw(st.integers(0, 5)) else f" {name}")
    return "".join(out)


@st.composite
def html_node(draw, depth: int) -> str:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 6)) == 0:
            return f"<{draw(st.sampled_from(VOID))}{draw(html_attrs())}>"
        return escape(draw(line(max_words=8))) if draw(st.booleans()) else draw(
            line(HTML_TEXT, max_words=8))
    tag = draw(st.sampled_from(HTML_TAGS))
    children = "".join(draw(st.lists(html_node(depth - 1), max_size=4)))
    close = draw(st.sampled_from([f"</{tag}>", f"</{tag}>", f"</{tag}>", "",
                                  f"</{draw(st.sampled_from(HTML_TAGS))}>"]))
    return f"<{tag}{draw(html_attrs())}>{children}{close}"


@st.composite
def html_text(draw) -> str:
    head = draw(st.sampled_from(["", "<!DOCTYPE html>", "<?xml version='1.0' encoding='utf-16'?>",
                                 "<html><head><meta charset='shift_jis'><title>t</title></head>",
                                 "<html lang=de><head><title>" + "T" * 500 + "</title></head>",
                                 "<html><head><meta http-equiv='Content-Type' "
                                 "content='text/html; charset=utf-16'>"]))
    parts = [head, "<body>"]
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["tree", "tree", "deep", "table", "spans", "text"]))
        if kind == "tree":
            parts.append(draw(html_node(4)))
        elif kind == "deep":
            n = draw(DEPTH)
            opener = draw(st.sampled_from(["<div>", "<ul><li>", "<table><tr><td>", "<b>",
                                           "<blockquote>", "<span>", "<a href=x>", "<p>",
                                           "<font>", "<section><h2>x</h2>", "<dl><dd>"]))
            closer = re.sub(r"<(\w+)[^>]*>", r"</\1>", opener)
            closer = "".join(reversed(re.findall(r"</\w+>", closer)))
            parts.append(opener * n + draw(line()) + closer * draw(st.integers(0, n)))
        elif kind == "table":
            cols, rows = draw(st.integers(1, 100)), draw(st.integers(0, 100))
            span = draw(st.sampled_from(["", " colspan=2", " rowspan=3", " colspan=1000",
                                         " rowspan=65534", " colspan=0", " colspan=-5",
                                         " rowspan=abc"]))
            head = "<tr>" + "".join(f"<th>h{i}</th>" for i in range(cols)) + "</tr>"
            body = "".join("<tr>" + f"<td{span}>v</td>" * cols + "</tr>" for _ in range(rows))
            parts.append(f"<table><thead>{head}</thead><tbody>{body}</tbody></table>")
        elif kind == "spans":
            parts.append("".join(f"<td colspan={draw(st.sampled_from(ATTR_VALUES))} rowspan="
                                 f"{draw(st.sampled_from(ATTR_VALUES))}>x</td>"
                                 for _ in range(draw(st.integers(1, 20)))))
        else:
            parts.append(draw(line(HTML_TEXT)))
    if draw(st.booleans()):
        parts.append("</body></html>")
    return "".join(parts)


# -- CSV -----------------------------------------------------------------------------------


@st.composite
def csv_text(draw) -> str:
    sep = draw(st.sampled_from([",", "\t", ";", "|", " ", ",;"]))
    cols = draw(st.one_of(st.integers(1, 12), st.sampled_from([100, 1_000, 5_000])))
    rows = draw(st.one_of(st.integers(0, 40), st.sampled_from([500, 3_000])))
    cells = draw(st.lists(st.one_of(
        WORD, st.sampled_from(['"', '""', '"a""b"', '"x\ny"', '"unclosed', "=1+1", "", " ",
                               "1,5", "NaN", "-0", "1e999", "2023-06-30", "\\N", "null"])),
        min_size=1, max_size=20))
    ragged = draw(st.booleans())
    rows = min(rows, MAX_CELLS // cols)  # a huge table, but bounded: at most MAX_CELLS cells
    out = [sep.join(f"h{i}" for i in range(cols))] if draw(st.booleans()) else []
    for r in range(rows):
        n = cols + ((r * 7) % 5 - 2 if ragged else 0)
        out.append(sep.join(cells[(r + c) % len(cells)] for c in range(max(0, n))))
    return "\n".join(out) + draw(st.sampled_from(["", "\n", "\n\n\n", sep]))


# -- source code ---------------------------------------------------------------------------

#: language -> (prologue, block openers with their closers, statement, comment, string forms)
CODE: dict[str, tuple[str, list[tuple[str, str]], str, list[str]]] = {
    "python": ("", [("def f{i}(x):", ""), ("class C{i}:", ""), ("if x:", ""),
                    ("async def g{i}(*a, **k) -> 'T':", ""), ("with a as b:", "")],
               "x = {s}", ["# ", '"""', "'''", "r'", "f'{"]),
    "javascript": ("", [("function f{i}(a) {", "}"), ("class C{i} {", "}"),
                        ("const g{i} = () => {", "};"), ("if (a) {", "}")],
                   "let x = {s};", ["// ", "/*", "`${", "'", "/re[/"]),
    "typescript": ("", [("function f{i}(a: number): void {", "}"), ("interface I{i} {", "}"),
                        ("class C{i}<T> {", "}"), ("namespace N{i} {", "}")],
                   "const x: string = {s};", ["// ", "/*", "`${", "'"]),
    "tsx": ("", [("function F{i}(p: P) {", "}"), ("const C{i} = () => (", ");"),
                 ("<div>", "</div>")],
            "return <div>{s}</div>;", ["// ", "/*", "{/*", "<"]),
    "go": ("package main\n", [("func f{i}(a int) {", "}"), ("type T{i} struct {", "}"),
                              ("func (t *T) M{i}() {", "}"), ("if a {", "}")],
           "x := {s}", ["// ", "/*", "`", "'"]),
    "rust": ("", [("fn f{i}(a: i32) {", "}"), ("impl T{i} {", "}"), ("mod m{i} {", "}"),
                  ("macro_rules! m{i} {", "}")],
             "let x = {s};", ["// ", "/*", "r#\"", "b'"]),
    "java": ("", [("class C{i} {", "}"), ("void f{i}(int a) {", "}"), ("interface I{i} {", "}"),
                  ("static {", "}")],
             "String x = {s};", ["// ", "/*", "\"\"\"", "'"]),
    "c": ("#include <stdio.h>\n", [("int f{i}(int a) {", "}"), ("struct S{i} {", "};"),
                                   ("#if X", "#endif"), ("do {", "} while (0);")],
          "char *x = {s};", ["// ", "/*", "'", "\\\n"]),
    "cpp": ("", [("class C{i} {", "};"), ("int f{i}(int a) {", "}"), ("namespace n{i} {", "}"),
                 ("template <typename T> struct S{i} {", "};")],
            "auto x = {s};", ["// ", "/*", "R\"(", "'"]),
    "csharp": ("", [("class C{i} {", "}"), ("void F{i}(int a) {", "}"),
                    ("namespace N{i} {", "}"), ("#region r", "#endregion")],
               "var x = {s};", ["// ", "/*", "@\"", "$\"{"]),
    "ruby": ("", [("def f{i}(a)", "end"), ("class C{i}", "end"), ("module M{i}", "end"),
                  ("if a", "end"), ("x.each do |y|", "end")],
             "x = {s}", ["# ", "=begin", "<<~EOS", "%w["]),
    "php": ("<?php\n", [("function f{i}($a) {", "}"), ("class C{i} {", "}"), ("if ($a) {", "}")],
            "$x = {s};", ["// ", "/*", "<<<EOT", "?>", "#"]),
    "bash": ("#!/bin/bash\n", [("f{i}() {", "}"), ("if true; then", "fi"), ("case $a in", "esac"),
                               ("while true; do", "done")],
             "x={s}", ["# ", "<<EOF", "$(", "`", "'"]),
    "kotlin": ("", [("fun f{i}(a: Int) {", "}"), ("class C{i} {", "}"), ("object O{i} {", "}")],
               "val x = {s}", ["// ", "/*", "\"\"\"", "\"${"]),
    "swift": ("", [("func f{i}(a: Int) {", "}"), ("class C{i} {", "}"), ("struct S{i} {", "}"),
                   ("extension E{i} {", "}")],
              "let x = {s}", ["// ", "/*", "\"\"\"", "#\""]),
    "scala": ("", [("def f{i}(a: Int) = {", "}"), ("object O{i} {", "}"), ("class C{i} {", "}"),
                   ("trait T{i} {", "}")],
              "val x = {s}", ["// ", "/*", "\"\"\"", "s\"${"]),
    "lua": ("", [("function f{i}(a)", "end"), ("local function g{i}()", "end"), ("do", "end"),
                 ("if a then", "end")],
            "local x = {s}", ["-- ", "--[[", "[[", "[==["]),
}


@st.composite
def code_block(draw, lang: str, depth: int, indent: int) -> list[str]:
    _, blocks, stmt, odd = CODE[lang]
    pad = " " * indent
    out = []
    for i in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["stmt", "stmt", "block", "comment", "odd", "blank"]))
        if kind == "block" and depth > 0:
            opener, closer = draw(st.sampled_from(blocks))
            out.append(pad + opener.replace("{i}", str(i)))
            inner = draw(code_block(lang, depth - 1, indent + 4))
            out.extend(inner or [" " * (indent + 4) + ("pass" if lang == "python" else "")])
            if closer:
                out.append(pad + closer)
        elif kind == "comment":
            out.append(pad + CODE[lang][3][0] + draw(line()))
        elif kind == "odd":  # an unterminated string or comment, a heredoc, ...
            out.append(pad + draw(st.sampled_from(odd)) + draw(line()))
        elif kind == "blank":
            out.append(draw(st.sampled_from(["", "   ", "\t"])))
        else:
            s = json.dumps(draw(line()), ensure_ascii=draw(st.booleans()))
            out.append(pad + stmt.replace("{s}", s))
    return out


@st.composite
def code_text(draw, lang: str) -> str:
    prologue, blocks, _, _ = CODE[lang]
    parts = [prologue]
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["tree", "tree", "deep", "unclosed", "brackets", "long"]))
        if kind == "tree":
            parts.extend(draw(code_block(lang, 4, 0)))
        elif kind == "deep":  # nested blocks, balanced, one level of indentation each
            n = min(draw(DEPTH), 1_000)  # (indentation is quadratic: at most 1 MB of it)
            opener, closer = draw(st.sampled_from(blocks))
            pad = [" " * (draw(st.sampled_from([1, 4])) * min(k, 250)) for k in range(n + 1)]
            parts.extend(pad[k] + opener.replace("{i}", str(k)) for k in range(n))
            parts.append(pad[n] + ("pass" if lang == "python" else "x"))
            parts.extend(pad[k] + closer for k in reversed(range(n)) if closer)
        elif kind == "unclosed":
            opener, _ = draw(st.sampled_from(blocks))
            parts.append((opener.replace("{i}", "0") + "\n") * draw(DEPTH))
        elif kind == "brackets":
            n = draw(DEPTH)
            b = draw(st.sampled_from(["(", "[", "{", "<", "(["]))
            parts.append("x = " + b * n + "1" + "".join(reversed(b)).translate(
                str.maketrans("([{<", ")]}>")) * draw(st.integers(0, n)))
        else:
            parts.append("y = " + "+".join(["1"] * draw(st.integers(100, 20_000))))
    return "\n".join(parts) + "\n"


# -- data formats --------------------------------------------------------------------------

JSON_SCALARS = ["0", "-0", "1e999", "-1e-999", "1" * 5_000, "NaN", "Infinity", "-Infinity",
                "0x1F", "01", "1.", ".5", "-", "true", "false", "null", "True", "None",
                '"\\ud800"', '"\\udc00\\ud800"', '"\\u0000"', '"\\x41"', '"\\u12"', '"\t"',
                '"unterminated', "'single'", "undefined"]


@st.composite
def json_value(draw, depth: int) -> str:
    kind = draw(st.sampled_from(["str", "scalar", "odd", "array", "object"]) if depth > 0
                else st.sampled_from(["str", "scalar", "odd"]))
    if kind == "str":
        return json.dumps(draw(line()), ensure_ascii=draw(st.booleans()))
    if kind == "scalar":
        return json.dumps(draw(st.one_of(st.integers(), st.floats(allow_nan=False),
                                         st.booleans(), st.none())))
    if kind == "odd":
        return draw(st.sampled_from(JSON_SCALARS))
    items = draw(st.lists(json_value(depth - 1), max_size=5))
    trailing = "," if draw(st.integers(0, 8)) == 0 else ""
    if kind == "array":
        return "[" + ", ".join(items) + trailing + "]"
    keys = draw(st.lists(st.one_of(line(max_words=2), st.sampled_from(["", "a", "a", "__proto__",
                                                                        "$ref", "\x00"])),
                         min_size=len(items), max_size=len(items)))
    return "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in zip(keys, items)) + trailing + "}"


@st.composite
def json_text(draw) -> str:
    kind = draw(st.sampled_from(["tree", "tree", "tree", "deep_array", "deep_object",
                                 "wide", "comments", "two"]))
    if kind == "tree":
        return draw(json_value(5))
    if kind in ("deep_array", "deep_object"):
        n = draw(DEPTH)
        closed = draw(st.integers(0, n)) if draw(st.booleans()) else n
        if kind == "deep_array":
            return "[" * n + draw(json_value(1)) + "]" * closed
        return '{"a": ' * n + draw(json_value(1)) + "}" * closed
    if kind == "wide":
        n = draw(st.sampled_from([100, 10_000, 30_000]))  # 100,000 keys: 8 s (docs)
        return "[" + ",".join(str(i) for i in range(n)) + "]" if draw(st.booleans()) else (
            "{" + ",".join(f'"k{i}": {i}' for i in range(n)) + "}")
    if kind == "comments":
        return "// c\n/* c */" + draw(json_value(3))
    return draw(json_value(2)) + "\n" + draw(json_value(2))


@st.composite
def jsonl_text(draw) -> str:
    lines = draw(st.lists(st.one_of(json_value(3), st.sampled_from(["", " ", "{", "]", "\x00",
                                                                   "// x", "[" * 1000])),
                          max_size=30))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


YAML_SCALARS = ["~", "null", "yes", "no", "on", "0o17", "0x1F", "1_000", ".inf", ".nan",
                "2001-12-14t21:59:43.10-05:00", "'single ''quoted'''", '"esc \\x00 \\u12"',
                '"unterminated', "'unterminated", "!!binary R0lGOD", "!!python/object:os.system",
                "!custom x", "*undefined_alias", "&anchor v", "|", ">-", "|+2", "? x", "- - x",
                "{a: [b, {c: d}]}", "[a, b", "{", "@reserved", "`reserved", "%x", "a: b: c",
                ": x", "#comment", "\t\tx"]


@st.composite
def yaml_lines(draw, depth: int, indent: int) -> list[str]:
    pad = " " * indent
    out = []
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["pair", "pair", "map", "seq", "seqmap", "block", "odd"]))
        key = draw(st.one_of(st.sampled_from([f"k{i}", "<<", "? complex", '"q: k"', "-", "k k"]),
                             line(max_words=2)))
        if kind in ("map", "seq", "seqmap") and depth > 0:
            out.append(f"{pad}{key}:" if kind == "map" else f"{pad}- " + ("" if kind == "seq"
                                                                           else f"{key}:"))
            out.extend(draw(yaml_lines(depth - 1, indent + draw(st.sampled_from([1, 2, 4])))))
        elif kind == "block":
            out.append(f"{pad}{key}: " + draw(st.sampled_from(["|", ">", "|-", ">+", "|2", "|9"])))
            out.extend(pad + " " * draw(st.integers(0, 6)) + draw(line())
                       for _ in range(draw(st.integers(0, 4))))
        elif kind == "odd":
            out.append(pad + draw(st.sampled_from(YAML_SCALARS)))
        else:
            value = draw(st.one_of(st.sampled_from(YAML_SCALARS), line(max_words=5)))
            out.append(f"{pad}{key}: {value}")
    return out


@st.composite
def yaml_text(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["tree", "tree", "deep_map", "deep_seq", "deep_flow",
                                     "laughs", "docs", "tabs"]))
        if kind == "tree":
            parts.extend(draw(yaml_lines(4, 0)))
        elif kind == "deep_map":
            n = min(draw(DEPTH), 1_400)  # (indentation is quadratic: at most 1 MB of it)
            parts.extend(" " * k + f"k{k}:" for k in range(n))
            parts.append(" " * n + "leaf")
        elif kind == "deep_seq":
            parts.append("- " * draw(DEPTH) + "x")
        elif kind == "deep_flow":
            n = draw(DEPTH)
            parts.append("a: " + draw(st.sampled_from(["[", "{a: ", "[{"])) * n + "x")
        elif kind == "laughs":  # alias expansion (a billion laughs, when expanded)
            parts.append('a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]')
            parts.extend(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]"
                         for i in range(1, draw(st.integers(2, 12))))
        elif kind == "docs":
            parts.append(draw(st.sampled_from(["---", "...", "%YAML 1.2\n---", "%TAG ! tag:x,1:",
                                               "--- !!map", "--- |"])))
        else:
            parts.append("a:\n\t- b\n \t c: d")
    return "\n".join(parts) + "\n"


TOML_VALUES = ['"s"', "'lit'", '"""multi\nline"""', "'''lit\nmulti'''", '"""unterminated',
               '"esc \\u0000 \\U0010FFFF \\x41"', "1_000", "0xDEADBEEF", "0o17", "0b11",
               "9" * 5_000, "+inf", "nan", "-0.0", "1979-05-27T07:32:00Z", "07:32:00",
               "1979-05-27", "true", "[]", "[1, 'a', [2]]", "{}", "{a = 1, b = {c = 2}}",
               "{a = 1,}", "[1,,2]", "", "tru", "1979-13-45"]


@st.composite
def toml_text(draw) -> str:
    parts = []
    for i in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["pair", "pair", "table", "array_table", "dotted", "deep_table",
                                     "deep_array", "deep_inline", "odd"]))
        key = draw(st.sampled_from([f"k{i}", '"quoted key"', "'lit key'", "a.b.c", '""', "k",
                                    "1234", "-_-"]))
        if kind == "pair":
            parts.append(f"{key} = " + draw(st.one_of(st.sampled_from(TOML_VALUES),
                                                      line().map(json.dumps))))
        elif kind == "table":
            parts.append(f"[{key}]")
        elif kind == "array_table":
            parts.append(f"[[{key}]]")
        elif kind == "dotted":
            parts.append(".".join(f"d{k}" for k in range(draw(st.integers(1, 50)))) + " = 1")
        elif kind == "deep_table":
            parts.append("[" + ".".join(f"t{k}" for k in range(draw(DEPTH))) + "]")
        elif kind == "deep_array":
            n = draw(DEPTH)
            parts.append(f"{key} = " + "[" * n + "1" + "]" * draw(st.integers(0, n)))
        elif kind == "deep_inline":
            n = draw(DEPTH)
            parts.append(f"{key} = " + "{a = " * n + "1" + "}" * draw(st.integers(0, n)))
        else:
            parts.append(draw(st.sampled_from(["[", "[[a]", "= 1", "a =", "[a]]", "a = 1 b = 2",
                                               "\ufeff[bom]", "# only a comment"])))
    return "\n".join(parts) + "\n"


# -- notebooks -----------------------------------------------------------------------------


@st.composite
def notebook_source(draw) -> Any:
    text = draw(st.one_of(markdown_text(), code_text("python"), line()))
    kind = draw(st.sampled_from(["lines"] * 10 + ["str"] * 8 + ["odd"]))
    if kind == "lines":
        return text.splitlines(keepends=True)
    if kind == "str":
        return text
    return draw(st.sampled_from([None, 5, {"a": 1}, [1, None, "x"], [], ""]))


@st.composite
def notebook_output(draw) -> Any:
    kind = draw(st.sampled_from(["stream", "execute_result", "display_data", "error"] * 4
                                + ["odd"]))
    if kind == "stream":
        return {"output_type": "stream", "name": draw(st.sampled_from(["stdout", "stderr", 7])),
                "text": draw(notebook_source())}
    if kind == "error":
        return {"output_type": "error", "ename": "E", "evalue": draw(line()),
                "traceback": ["\x1b[0;31m---\x1b[0m" + draw(line()) for _ in range(3)]}
    if kind == "odd":
        return draw(st.sampled_from([None, [], "x", {"output_type": None}, {"data": 5}]))
    data: dict[str, Any] = {"text/plain": draw(notebook_source())}
    for mime in draw(st.lists(st.sampled_from(["text/html", "text/markdown", "image/png",
                                               "application/json", "text/latex",
                                               "application/vnd.x+json"]), max_size=3)):
        data[mime] = ("iVBOR" * draw(st.sampled_from([1, 10_000])) if mime == "image/png"
                      else draw(notebook_source()) if mime.startswith("text")
                      else json.loads(draw(json_value(3).filter(_loads))))
    return {"output_type": kind, "data": data, "metadata": {}, "execution_count": 1}


def _loads(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


@st.composite
def notebook_text(draw) -> str:
    cells = []
    for _ in range(draw(st.integers(0, 10))):
        cell_type = draw(st.sampled_from(["markdown"] * 8 + ["code"] * 8 + ["raw", "heading",
                                                                        None, 3]))
        cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {},
                                "source": draw(notebook_source())}
        if cell_type == "code":
            cell["outputs"] = draw(st.lists(notebook_output(), max_size=3))
            cell["execution_count"] = draw(st.sampled_from([None, 1, -1, "x"]))
        if draw(st.integers(0, 30)) == 0:
            del cell["source"]
        cells.append(cell)
    nb: dict[str, Any] = {"cells": cells, "metadata": {
        "kernelspec": {"language": draw(st.sampled_from(["python", "julia", "R", "", None]))},
        "language_info": {"name": draw(st.sampled_from(["python", "c++", 5]))}},
        "nbformat": draw(st.sampled_from([4] * 12 + [3, 5, "4", None])), "nbformat_minor": 5}
    if nb["nbformat"] == 3 or draw(st.integers(0, 10)) == 0:
        nb["worksheets"] = [{"cells": nb.pop("cells")}]
    if draw(st.integers(0, 20)) == 0:
        nb = draw(st.sampled_from([[], "x", None, {"cells": "x"}, {"cells": [1, 2]}]))
    text = json.dumps(nb, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1])))
    if draw(st.integers(0, 8)) == 0:  # a whole notebook nested in a cell's metadata, deep
        n = draw(DEPTH)
        text = text.replace('"metadata": {}', '"metadata": ' + '{"a": ' * n + "1" + "}" * n, 1)
    return text


# -- PDF -----------------------------------------------------------------------------------

PDF_FIXTURES = [p.read_bytes() for p in sorted(FIXTURES.glob("*.pdf"))]


def _pdf_string(draw) -> bytes:
    raw = draw(line()).encode("latin-1", "replace")
    if draw(st.booleans()):
        return b"<" + raw.hex().encode() + draw(st.sampled_from([b">", b"f>", b""])) + b">"
    body = raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
    return b"(" + body + draw(st.sampled_from([b"", b"\\", b"\\0", b"\\777", b"(", b"\\)"])) + b")"


NUMBERS = [b"0", b"1", b"-1", b"12", b"0.001", b"1e6", b"99999999999", b"-99999", b"nan",
           b"3.4e38", b"", b".", b"--5", b"1.2.3"]


@st.composite
def pdf_content(draw) -> bytes:
    num = st.sampled_from(NUMBERS)
    ops = []
    for _ in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(["text", "text", "text", "tj", "matrix", "q", "lines",
                                     "grid", "junk", "inline_image", "xobject"]))
        if kind == "text":
            x, y = draw(st.integers(-100, 700)), draw(st.integers(-100, 900))
            size = draw(st.sampled_from([b"12", b"10", b"0", b"-5", b"1000", b"0.01"]))
            ops.append(b"BT /F1 %s Tf %d %d Td %s Tj ET" % (size, x, y, _pdf_string(draw)))
        elif kind == "tj":
            parts = b" ".join(_pdf_string(draw) + b" " + draw(num) for _ in range(5))
            ops.append(b"BT /F1 11 Tf 72 %d Td [%s] TJ T* (x) ' 1 2 (y) \" ET"
                       % (draw(st.integers(0, 800)), parts))
        elif kind == "matrix":
            ops.append(b"BT %s Tm /F1 9 Tf %s Tj ET" % (b" ".join(draw(num) for _ in range(6)),
                                                        _pdf_string(draw)))
        elif kind == "q":
            n = draw(DEPTH)
            ops.append(b"q " * n + b"1 0 0 1 5 5 cm " + b"Q " * draw(st.integers(0, n + 2)))
        elif kind == "lines":
            ops.append(b" ".join(b"%d %d m %d %d l S" % tuple(draw(st.integers(-50, 900))
                                                               for _ in range(4))
                                 for _ in range(draw(st.integers(1, 20)))))
        elif kind == "grid":  # a ruled table: rows x cols cells, text in each
            rows, cols = draw(st.integers(1, 60)), draw(st.integers(1, 30))
            w, h = max(1, 500 // cols), max(1, 700 // rows)
            cells = [b"%d %d %d %d re S BT /F1 6 Tf %d %d Td (c%d) Tj ET"
                     % (50 + c * w, 50 + r * h, w, h, 52 + c * w, 52 + r * h, r * cols + c)
                     for r in range(rows) for c in range(cols)]
            ops.append(b"0.5 w " + b" ".join(cells))
        elif kind == "junk":
            ops.append(draw(st.sampled_from([b"BT", b"ET ET", b"Tj", b"/F9 12 Tf", b"<<", b"[",
                                             b"(unterminated", b"\x00\xff", b"1 2 3 4 5 6 7 cm",
                                             b"BX foo EX", b"%comment"])))
        elif kind == "inline_image":
            ops.append(b"q 500 0 0 700 0 0 cm BI /W 2 /H 2 /CS /G /BPC 8 ID \x00\xff\x00\xff EI Q")
        else:
            ops.append(b"q 600 0 0 800 0 0 cm /Im1 Do Q")
    return b"\n".join(ops)


@st.composite
def built_pdf(draw) -> bytes:
    """A small PDF built object by object, with hostile content streams, metadata, page
    boxes and page trees; its cross-reference table right, or broken on purpose."""
    pages = draw(st.lists(pdf_content(), max_size=6))
    header = b"HEADER running title %d" if draw(st.booleans()) else b""
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>",
               3: draw(st.sampled_from([b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
                                        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                                        b"/ToUnicode 4 0 R >>",
                                        b"<< /Type /Font /Subtype /Type0 /BaseFont /X >>",
                                        b"<< >>", b"null"]))}
    cmap = (b"/CIDInit /ProcSet findresource begin begincmap 1 begincodespacerange <00> <FF> "
            b"endcodespacerange " + draw(st.sampled_from([
                b"1 beginbfrange <00> <FF> <0041> endbfrange",
                b"1 beginbfrange <0000> <FFFF> <D800> endbfrange",
                b"2 beginbfchar <41> <0000> <42> <FEFF00410042> endbfchar",
                b"1 beginbfrange <20> <7E> [<0041> <> <FFFFFFFFFF>] endbfrange",
                b"garbage"])) + b" endcmap end")
    objects[4] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(cmap), cmap)
    kids = []
    box = draw(st.sampled_from([b"[0 0 612 792]", b"[0 0 0 0]", b"[0 0 -612 792]",
                                b"[0 0 1e9 1e9]", b"[612 792 0 0]", b"[0 0]", b"null"]))
    for i, content in enumerate(pages):
        page_no, stream_no = 10 + 2 * i, 11 + 2 * i
        if header:
            content = b"BT /F1 8 Tf 72 770 Td (" + header % 1 + b") Tj ET\n" + content + (
                b"\nBT /F1 8 Tf 300 20 Td (%d) Tj ET" % (i + 1))
        length = len(content) + draw(st.sampled_from([0, 0, 0, 5, -5, 10**6]))
        objects[stream_no] = b"<< /Length %d >>\nstream\n%s\nendstream" % (length, content)
        rotate = draw(st.sampled_from([b"", b"/Rotate 90", b"/Rotate 45", b"/Rotate -270"]))
        objects[page_no] = (b"<< /Type /Page /Parent 2 0 R /MediaBox %s %s /Resources << /Font "
                            b"<< /F1 3 0 R >> /XObject << /Im1 5 0 R >> >> /Contents %d 0 R >>"
                            % (box, rotate, stream_no))
        kids.append(b"%d 0 R" % page_no)
    if draw(st.integers(0, 6)) == 0:
        kids.append(b"2 0 R")  # a page tree that contains itself
    count = draw(st.sampled_from([len(kids), len(kids), 0, 10**9, -1]))
    objects[2] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), count)
    objects[5] = b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace " \
                 b"/DeviceGray /BitsPerComponent 8 /Length 4 >>\nstream\n\x00\xff\x00\xff\nendstream"
    title = _pdf_string(draw)
    objects[6] = b"<< /Title %s /Author (\xfe\xff\xd8\x00) >>" % title
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for no in sorted(objects):
        offsets[no] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (no, objects[no])
    size = max(objects) + 1
    xref_at = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    shift = draw(st.sampled_from([0, 0, 0, 7, -3]))
    for no in range(1, size):
        out += b"%010d 00000 n \n" % max(0, offsets[no] + shift) if no in offsets else \
            b"0000000000 65535 f \n"
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        size, xref_at + draw(st.sampled_from([0, 0, 0, 1, -10, 10**6])))
    return bytes(out)


@st.composite
def mutated_pdf(draw) -> bytes:
    """A real PDF (fixtures/*.pdf) truncated, with bytes flipped, ranges deleted, duplicated
    or replaced, or its xref offset, stream lengths or header rewritten."""
    data = bytearray(draw(st.sampled_from(PDF_FIXTURES)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "flip", "junk", "delete", "dup",
                                   "startxref", "length", "header", "eof"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        span = draw(st.sampled_from([1, 16, 512, 8192]))
        if op == "truncate":
            del data[at:]
        elif op == "flip" and data:
            for k in range(draw(st.integers(1, 64))):
                data[(at + k * 997) % len(data)] ^= draw(st.sampled_from([1, 0x80, 0xff, 0x20]))
        elif op == "junk":
            data[at:at + span] = draw(st.sampled_from([b"\x00", b"(", b"<<", b">>", b"obj",
                                                       b"endstream", b"9999999999"])) * span
        elif op == "delete":
            del data[at:at + span]
        elif op == "dup":
            data[at:at] = data[at:at + span]
        elif op == "startxref":
            data = bytearray(re.sub(rb"startxref\s+\d+", b"startxref\n%d" % draw(
                st.integers(0, 10**7)), bytes(data)))
        elif op == "length":
            found = list(re.finditer(rb"/Length \d+", bytes(data)))
            if found:
                m = found[draw(st.integers(0, len(found) - 1))]
                data[m.start():m.end()] = b"/Length %d" % draw(st.integers(0, 10**6))
        elif op == "header":
            data[:8] = draw(st.sampled_from([b"%PDF-9.9", b"%PDF-", b"", b"\xef\xbb\xbf%PDF-1",
                                             b"%!PS-Ado"]))
        else:
            data = data.replace(b"%%EOF", b"")
    return bytes(data)


# -- Office containers ---------------------------------------------------------------------

W_NS = ('xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
        'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math" '
        'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"')
P_NS = ('xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" '
        'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"')
S_NS = ('xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"')
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
PROLOG = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
ODD_NUMBERS = ["0", "1", "-1", "2", "9", "255", "65536", "2147483648", "99999999999999999999",
               "1e400", "NaN", "", "abc", "0x10", "1.5", " 3 "]


def rels(entries: list[tuple[str, str, str]]) -> str:
    body = "".join(f'<Relationship Id="{i}" Type="{t if "/" in t else REL + t}" Target={quoteattr(x)}/>'
                   for i, t, x in entries)
    return (PROLOG + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
            f'relationships">{body}</Relationships>')


@st.composite
def xml_text(draw) -> str:
    """Text for an XML text node: escaped, sometimes with characters XML forbids."""
    text = escape(draw(line(max_words=6)))
    if draw(st.integers(0, 4)):
        text = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]", "", text)
    return text


def num(draw) -> str:
    return draw(st.sampled_from(ODD_NUMBERS))


@st.composite
def docx_blocks(draw, depth: int) -> str:
    out = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["p", "p", "p", "tbl", "sdt", "deep", "math", "box"]))
        if kind == "p" or depth <= 0:
            style = draw(st.sampled_from(["Heading1", "Heading9", "Heading0", "Title", "ListParagraph",
                                          "Normal", "", "nonexistent", "Heading1" * 100]))
            numpr = (f'<w:numPr><w:ilvl w:val="{num(draw)}"/><w:numId w:val="{num(draw)}"/>'
                     "</w:numPr>" if draw(st.booleans()) else "")
            outline = f'<w:outlineLvl w:val="{num(draw)}"/>' if draw(st.integers(0, 4)) == 0 else ""
            runs = "".join(draw(st.sampled_from([
                '<w:r><w:t xml:space="preserve">{t}</w:t></w:r>',
                "<w:r><w:rPr><w:vanish/></w:rPr><w:t>{t}</w:t></w:r>",
                "<w:r><w:tab/><w:br/><w:t>{t}</w:t><w:cr/></w:r>",
                '<w:hyperlink r:id="rId999"><w:r><w:t>{t}</w:t></w:r></w:hyperlink>',
                '<w:fldSimple w:instr="PAGE"><w:r><w:t>{t}</w:t></w:r></w:fldSimple>',
                '<w:ins><w:r><w:t>{t}</w:t></w:r></w:ins><w:del><w:r><w:delText>{t}</w:delText>'
                "</w:r></w:del>",
                '<w:r><w:footnoteReference w:id="{n}"/></w:r>', "<w:r><w:t/></w:r>",
                '<w:r><w:sym w:char="F0B7"/><w:noBreakHyphen/><w:softHyphen/></w:r>'])).replace(
                "{t}", draw(xml_text())).replace("{n}", num(draw))
                for _ in range(draw(st.integers(0, 5))))
            out.append(f'<w:p><w:pPr><w:pStyle w:val="{style}"/>{numpr}{outline}</w:pPr>{runs}</w:p>')
        elif kind == "tbl":
            rows, cols = draw(st.integers(0, 40)), draw(st.integers(0, 30))
            span = draw(st.sampled_from(["", '<w:gridSpan w:val="{n}"/>', '<w:vMerge w:val="restart"/>',
                                         "<w:vMerge/>", '<w:hMerge w:val="continue"/>'])).replace(
                "{n}", num(draw))
            inner = draw(docx_blocks(depth - 1)) or "<w:p/>"  # in the first cell only
            cell = f"<w:tc><w:tcPr>{span}</w:tcPr><w:p><w:r><w:t>{draw(xml_text())}</w:t></w:r></w:p></w:tc>"
            row = "<w:tr>" + cell * cols + "</w:tr>"
            first = f"<w:tr><w:tc><w:tcPr>{span}</w:tcPr>{inner}</w:tc>" + cell * (cols - 1) + "</w:tr>"
            out.append("<w:tbl><w:tblGrid>" + '<w:gridCol w:w="100"/>' * cols + "</w:tblGrid>"
                       + (first if rows else "") + row * max(0, rows - 1) + "</w:tbl>")
        elif kind == "sdt":
            out.append(f"<w:sdt><w:sdtContent>{draw(docx_blocks(depth - 1))}</w:sdtContent></w:sdt>")
        elif kind == "deep":
            n = draw(DEPTH)
            opener, closer = draw(st.sampled_from([
                ("<w:tbl><w:tr><w:tc>", "</w:tc></w:tr></w:tbl>"),
                ("<w:sdt><w:sdtContent>", "</w:sdtContent></w:sdt>"),
                ("<w:customXml>", "</w:customXml>"), ("<w:smartTag>", "</w:smartTag>")]))
            out.append(opener * n + "<w:p><w:r><w:t>deep</w:t></w:r></w:p>" + closer * n)
        elif kind == "math":
            out.append("<w:p><m:oMathPara><m:oMath><m:r><m:t>" + draw(xml_text())
                       + "</m:t></m:r></m:oMath></m:oMathPara></w:p>")
        else:
            out.append("<w:p><w:r><mc:AlternateContent><mc:Choice Requires=\"wps\"><w:drawing>"
                       "<w:txbxContent>" + draw(docx_blocks(depth - 1))
                       + "</w:txbxContent></w:drawing></mc:Choice><mc:Fallback/>"
                       "</mc:AlternateContent></w:r></w:p>")
    return "".join(out)


@st.composite
def docx_parts(draw) -> dict[str, str | bytes]:
    document = f"{PROLOG}<w:document {W_NS}><w:body>{draw(docx_blocks(3))}<w:sectPr/></w:body></w:document>"
    styles = (f'{PROLOG}<w:styles {W_NS}><w:style w:type="paragraph" w:styleId="Heading1">'
              '<w:name w:val="heading 1"/><w:basedOn w:val="Heading1"/><w:pPr><w:outlineLvl '
              f'w:val="{num(draw)}"/></w:pPr></w:style><w:style w:styleId="Title"><w:basedOn '
              'w:val="Heading9"/></w:style><w:style w:styleId="Heading9"><w:basedOn w:val="Title"/>'
              "</w:style></w:styles>")
    numbering = (f'{PROLOG}<w:numbering {W_NS}><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl='
                 f'"{num(draw)}"><w:start w:val="{num(draw)}"/><w:numFmt w:val='
                 f'"{draw(st.sampled_from(["decimal", "upperRoman", "lowerLetter", "bullet", "x"]))}"/>'
                 f'<w:lvlText w:val="%1.%2.%9.%0"/></w:lvl></w:abstractNum><w:num w:numId='
                 f'"{num(draw)}"><w:abstractNumId w:val="{num(draw)}"/></w:num></w:numbering>')
    footnotes = (f'{PROLOG}<w:footnotes {W_NS}><w:footnote w:id="{num(draw)}">'
                 f"{draw(docx_blocks(1))}</w:footnote></w:footnotes>")
    return {"_rels/.rels": rels([("rId1", "officeDocument", "word/document.xml"),
                                 ("rId2", "http://schemas.openxmlformats.org/package/2006/"
                                          "relationships/metadata/core-properties",
                                  draw(st.sampled_from(["docProps/core.xml", "../../etc/passwd",
                                                        "/docProps/core.xml", ""])))]),
            "word/document.xml": document,
            "word/_rels/document.xml.rels": rels([("rId1", "styles", "styles.xml"),
                                                  ("rId2", "numbering", "numbering.xml"),
                                                  ("rId3", "footnotes", "footnotes.xml"),
                                                  ("rId999", "hyperlink", "http://x")]),
            "word/styles.xml": styles, "word/numbering.xml": numbering,
            "word/footnotes.xml": footnotes, "docProps/core.xml": core_xml(draw)}


def core_xml(draw) -> str:
    return (PROLOG + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
            'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>'
            + draw(xml_text()) + "</dc:title></cp:coreProperties>")


@st.composite
def pptx_shapes(draw, depth: int) -> str:
    out = []
    for i in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["sp", "sp", "sp", "grp", "tbl", "deep", "alt"]))
        xfrm = (f'<a:xfrm rot="{num(draw)}"><a:off x="{num(draw)}" y="{num(draw)}"/><a:ext '
                f'cx="{num(draw)}" cy="{num(draw)}"/><a:chOff x="{num(draw)}" y="0"/><a:chExt '
                f'cx="{num(draw)}" cy="1"/></a:xfrm>')
        if kind == "sp" or depth <= 0:
            ph = draw(st.sampled_from(["", '<p:ph type="title"/>', '<p:ph type="ctrTitle"/>',
                                       '<p:ph type="body" idx="1"/>', '<p:ph type="sldNum"/>',
                                       '<p:ph type="ftr"/>', '<p:ph type="bogus" idx="-1"/>']))
            paras = "".join(
                f'<a:p><a:pPr lvl="{num(draw)}"><a:buChar char="•"/></a:pPr><a:r><a:t>'
                f"{draw(xml_text())}</a:t></a:r>" + draw(st.sampled_from(
                    ["", "<a:br/>", '<a:fld type="slidenum"><a:t>7</a:t></a:fld>']))
                + "</a:p>" for _ in range(draw(st.integers(0, 4))))
            out.append(f'<p:sp><p:nvSpPr><p:cNvPr id="{i}" name={quoteattr(draw(line(max_words=2)))}/>'
                       f"<p:cNvSpPr/><p:nvPr>{ph}</p:nvPr></p:nvSpPr><p:spPr>{xfrm}</p:spPr>"
                       f"<p:txBody><a:bodyPr/>{paras}</p:txBody></p:sp>")
        elif kind == "grp":
            out.append(f"<p:grpSp><p:nvGrpSpPr/><p:grpSpPr>{xfrm}</p:grpSpPr>"
                       f"{draw(pptx_shapes(depth - 1))}</p:grpSp>")
        elif kind == "tbl":
            rows, cols = draw(st.integers(0, 40)), draw(st.integers(0, 30))
            attrs = draw(st.sampled_from(["", ' gridSpan="{n}"', ' rowSpan="{n}"', ' hMerge="1"',
                                          ' vMerge="1"'])).replace("{n}", num(draw))
            cell = (f"<a:tc{attrs}><a:txBody><a:bodyPr/><a:p><a:r><a:t>{draw(xml_text())}"
                    "</a:t></a:r></a:p></a:txBody></a:tc>")
            out.append(f"<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id=\"{i}\" name=\"t\"/>"
                       f"</p:nvGraphicFramePr><p:xfrm><a:off x=\"{num(draw)}\" y=\"0\"/></p:xfrm>"
                       "<a:graphic><a:graphicData uri=\"http://schemas.openxmlformats.org/"
                       "drawingml/2006/table\"><a:tbl><a:tblGrid>" + '<a:gridCol w="9"/>' * cols
                       + "</a:tblGrid>" + ("<a:tr h=\"1\">" + cell * cols + "</a:tr>") * rows
                       + "</a:tbl></a:graphicData></a:graphic></p:graphicFrame>")
        elif kind == "deep":
            n = draw(DEPTH)
            out.append("<p:grpSp><p:nvGrpSpPr/><p:grpSpPr/>" * n + "<p:sp><p:txBody><a:p><a:r>"
                       "<a:t>deep</a:t></a:r></a:p></p:txBody></p:sp>" + "</p:grpSp>" * n)
        else:
            out.append('<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/'
                       'markup-compatibility/2006"><mc:Choice Requires="p14">'
                       + draw(pptx_shapes(depth - 1)) + "</mc:Choice><mc:Fallback>"
                       + draw(pptx_shapes(0)) + "</mc:Fallback></mc:AlternateContent>")
    return "".join(out)


@st.composite
def pptx_parts(draw) -> dict[str, str | bytes]:
    n = draw(st.integers(0, 5))
    ids = "".join(f'<p:sldId id="{256 + i}" r:id="rId{draw(st.sampled_from([i + 1, i + 1, 99]))}"/>'
                  for i in range(n))
    parts: dict[str, str | bytes] = {
        "_rels/.rels": rels([("rId1", "officeDocument", "ppt/presentation.xml")]),
        "ppt/presentation.xml": f"{PROLOG}<p:presentation {P_NS}><p:sldIdLst>{ids}</p:sldIdLst>"
                                '<p:sldSz cx="0" cy="0"/></p:presentation>',
        "ppt/_rels/presentation.xml.rels": rels([(f"rId{i + 1}", "slide", f"slides/slide{i + 1}.xml")
                                                 for i in range(n)]),
        "docProps/core.xml": core_xml(draw)}
    for i in range(n):
        parts[f"ppt/slides/slide{i + 1}.xml"] = (f"{PROLOG}<p:sld {P_NS}><p:cSld><p:spTree>"
                                                 f"{draw(pptx_shapes(3))}</p:spTree></p:cSld></p:sld>")
        parts[f"ppt/slides/_rels/slide{i + 1}.xml.rels"] = rels(
            [("rId1", "notesSlide", f"../notesSlides/notesSlide{i + 1}.xml")])
        parts[f"ppt/notesSlides/notesSlide{i + 1}.xml"] = (
            f"{PROLOG}<p:notes {P_NS}><p:cSld><p:spTree>{draw(pptx_shapes(1))}</p:spTree>"
            "</p:cSld></p:notes>")
    return parts


def _col(n: int) -> str:
    out = ""
    while n > 0:
        n, r = divmod(n - 1, 26)
        out = chr(65 + r) + out
    return out


@st.composite
def xlsx_sheet(draw) -> str:
    rows = []
    kind = draw(st.sampled_from(["table", "table", "scatter", "wide", "odd_refs"]))
    nrows = draw(st.one_of(st.integers(0, 30), st.sampled_from([300, 2_000])))
    ncols = draw(st.one_of(st.integers(1, 10), st.sampled_from([100, 700])))
    values = draw(st.lists(st.sampled_from([
        ('t="s"', "<v>{n}</v>"), ("", "<v>{n}</v>"), ("", "<v>1e308</v>"), ("", "<v>-0</v>"),
        ("", "<v>NaN</v>"), ("", "<v>2958466</v>"), ("", "<v>-1</v>"), ('t="b"', "<v>2</v>"),
        ('t="e"', "<v>#DIV/0!</v>"), ('t="str"', "<f>A1+1</f><v>{t}</v>"),
        ('t="inlineStr"', "<is><t>{t}</t></is>"), ('t="d"', "<v>2023-13-45T99:00</v>"),
        ('t="n"', "<v>{t}</v>"), ('t="weird"', "<v>{t}</v>"), ("", ""), ("", "<f>SUM(A:A)</f>"),
        ('s="{n}"', "<v>45000.5</v>"), ('s="1"', "<v>{n}</v>")]), min_size=1, max_size=8))
    ncols = min(ncols, MAX_CELLS // max(1, nrows))
    text = draw(xml_text())

    def cell(r: int, c: int) -> str:
        t, v = values[(r * 31 + c) % len(values)]
        ref = f"{_col(c)}{r}"
        if kind == "odd_refs":
            ref = draw(st.sampled_from([ref, "", "A", "1A", "$A$1", "XFE1", "A0", "A-1",
                                        "XFD1048577", "ZZZZZZ99999999999", "a1"]))
        return (f'<c r="{ref}" {t.replace("{n}", num(draw))}>'
                + v.replace("{n}", num(draw)).replace("{t}", text) + "</c>")

    if kind == "scatter":  # cells far apart: a sparse sheet whose dimension is huge
        rows = [f'<row r="{r}">{cell(r, c)}</row>' for r, c in
                draw(st.lists(st.tuples(st.integers(1, 1_048_576), st.integers(1, 16_384)),
                              max_size=30, unique_by=lambda x: x[0]).map(sorted))]
    else:
        cols = ncols if kind != "wide" else 16_384
        for r in range(1, nrows + 1):
            attrs = draw(st.sampled_from(["", ' hidden="1"', ' ht="1" customHeight="1"',
                                          ' spans="1:99999"'])) if r % 7 == 0 else ""
            cells = "".join(cell(r, c) for c in (range(1, cols + 1) if kind != "wide"
                                                 else (1, 5_000, 16_384)))
            rows.append(f'<row r="{r}"{attrs}>{cells}</row>')
    merges = "".join(f'<mergeCell ref="{draw(st.sampled_from(["A1:B2", "A1:XFD1048576", "B2:A1", "A1", "", "A1:A1", "C3:ZZ9999"]))}"/>'
                     for _ in range(draw(st.integers(0, 3))))
    col_defs = "".join(f'<col min="{num(draw)}" max="{num(draw)}" width="{num(draw)}" hidden="1"/>'
                       for _ in range(draw(st.integers(0, 3))))
    return (f"{PROLOG}<worksheet {S_NS}><dimension ref=\"A1:XFD1048576\"/>"
            + (f"<cols>{col_defs}</cols>" if col_defs else "")
            + f"<sheetData>{''.join(rows)}</sheetData>"
            + (f"<mergeCells>{merges}</mergeCells>" if merges else "") + "</worksheet>")


@st.composite
def xlsx_parts(draw) -> dict[str, str | bytes]:
    n = draw(st.integers(0, 3))
    sheets = "".join(f'<sheet name={quoteattr(draw(line(max_words=2)))} sheetId="{i + 1}" '
                     f'state="{draw(st.sampled_from(["visible", "visible", "hidden", "veryHidden"]))}" '
                     f'r:id="rId{i + 1}"/>' for i in range(n))
    strings = "".join(f"<si><t>{draw(xml_text())}</t></si>" if k % 3 else
                      f"<si><r><t>{draw(xml_text())}</t></r><rPh><t>ruby</t></rPh></si>"
                      for k in range(draw(st.integers(0, 12))))
    fmts = "".join(f'<numFmt numFmtId="{164 + k}" formatCode={quoteattr(code)}/>' for k, code in
                   enumerate(draw(st.lists(st.sampled_from(
                       ["yyyy-mm-dd", "[h]:mm:ss", "0.00%", '"d"0', "@", "mm:ss.000", "[Red]0",
                        "d" * 300, "0%%%%", "h", ""]), max_size=4))))
    xfs = "".join(f'<xf numFmtId="{draw(st.sampled_from(["14", "22", "46", "10", "164", "165", "9999", "x"]))}"/>'
                  for _ in range(draw(st.integers(0, 5))))
    parts: dict[str, str | bytes] = {
        "_rels/.rels": rels([("rId1", "officeDocument", "xl/workbook.xml")]),
        "xl/workbook.xml": f"{PROLOG}<workbook {S_NS}><workbookPr date1904="
                           f"\"{draw(st.sampled_from(['0', '1', 'true']))}\"/><sheets>{sheets}</sheets></workbook>",
        "xl/_rels/workbook.xml.rels": rels(
            [(f"rId{i + 1}", draw(st.sampled_from(["worksheet", "worksheet", "chartsheet"])),
              f"worksheets/sheet{i + 1}.xml") for i in range(n)]
            + [("rIdS", "sharedStrings", "sharedStrings.xml"), ("rIdT", "styles", "styles.xml")]),
        "xl/sharedStrings.xml": f"{PROLOG}<sst {S_NS}>{strings}</sst>",
        "xl/styles.xml": f"{PROLOG}<styleSheet {S_NS}><numFmts>{fmts}</numFmts>"
                         f"<cellXfs>{xfs}</cellXfs></styleSheet>",
        "docProps/core.xml": core_xml(draw)}
    for i in range(n):
        parts[f"xl/worksheets/sheet{i + 1}.xml"] = draw(xlsx_sheet())
    return parts


OFFICE_FIXTURES = {fmt: [dict((i.filename, z.read(i)) for i in z.infolist())
                         for z in (zipfile.ZipFile(p) for p in sorted(FIXTURES.glob(f"*.{fmt}")))]
                   for fmt in ("docx", "pptx", "xlsx")}
OFFICE_BUILT = {"docx": docx_parts(), "pptx": pptx_parts(), "xlsx": xlsx_parts()}
#: the namespaces a part may have instead of its own: Strict OOXML's, another format's, none
WRONG_NS = ["http://purl.oclc.org/ooxml/wordprocessingml/main",
            "http://purl.oclc.org/ooxml/spreadsheetml/main", "http://example.com/x", "",
            "http://schemas.openxmlformats.org/presentationml/2006/main"]


@st.composite
def hostile_xml(draw, xml: bytes) -> bytes:
    """One XML part made hostile: a DTD with entities (a billion laughs, an external file),
    a namespace swapped, a huge attribute, a wrong encoding declaration, a BOM, a long
    prolog before a DOCTYPE, truncation, bytes flipped, or nested elements past lxml's
    depth limit."""
    kind = draw(st.sampled_from(["laughs", "external", "namespace", "attribute", "encoding",
                                 "bom", "padding", "truncate", "flip", "deep", "utf16"]))
    body = re.sub(rb"^\s*<\?xml[^>]*\?>\s*", b"", xml)
    if kind == "laughs":
        ents = b"".join(b'<!ENTITY l%d "&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;&l%d;">' % ((i,) + (i - 1,) * 8)
                        for i in range(1, 10))
        return (b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY l0 "lol">' + ents + b"]>"
                + re.sub(rb"(<\w+:t>|<t>)", rb"\1&l9;", body, count=3))
    if kind == "external":
        return (b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                + re.sub(rb"(<\w+:t>|<t>)", rb"\1&x;", body, count=3))
    if kind == "namespace":
        found = re.findall(rb'xmlns(?::\w+)?="([^"]*)"', body)
        if found:
            old = found[draw(st.integers(0, len(found) - 1))]
            return xml.replace(old, draw(st.sampled_from(WRONG_NS)).encode())
        return xml
    if kind == "attribute":
        size = draw(st.sampled_from([1_000, 100_000, HUGE]))
        return re.sub(rb"<(\w+:?\w*)([ >/])", lambda m: b"<" + m.group(1) + b' huge="'
                      + b"v" * size + b'"' + m.group(2), xml, count=draw(st.integers(1, 3)))
    if kind == "encoding":
        return b'<?xml version="1.0" encoding="' + draw(st.sampled_from(
            [b"UTF-16", b"EBCDIC", b"bogus", b"ISO-8859-1", b"UTF-32"])) + b'"?>' + body
    if kind == "bom":
        return draw(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xef\xbb\xbf\xef\xbb\xbf"])) + xml
    if kind == "padding":  # a DOCTYPE past where a quick look for one stops
        return (b'<?xml version="1.0"?>' + b"<!--" + b"p" * 70_000 + b"-->"
                + b'<!DOCTYPE r [<!ENTITY x "' + b"y" * 1000 + b'">]>' + body.replace(b"<w:t>", b"<w:t>&x;", 1)
                .replace(b"<a:t>", b"<a:t>&x;", 1).replace(b"<t>", b"<t>&x;", 1))
    if kind == "truncate":
        return xml[:draw(st.integers(0, len(xml)))]
    if kind == "flip":
        data = bytearray(xml)
        for _ in range(draw(st.integers(1, 10))):
            if data:
                at = draw(st.integers(0, len(data) - 1))
                data[at] = draw(st.sampled_from(list(b'<>&"/=\x00\xff ')))
        return bytes(data)
    if kind == "utf16":
        return b'<?xml version="1.0" encoding="UTF-16"?>'.decode().encode("utf-16") + body.decode(
            "utf-8", "replace").encode("utf-16")
    n = draw(st.sampled_from([200, 300, 3_000, 100_000]))
    return re.sub(rb"(</\w+:?\w*>)$", lambda m: b"<x>" * n + b"</x>" * n + m.group(1),
                  body.rstrip(), count=1)


@st.composite
def office(draw, fmt: str) -> bytes:
    """An Office container: a fixture's parts or parts built from scratch, then some parts
    made hostile, dropped, renamed or added, written with any compression, and the zip
    itself sometimes truncated or damaged."""
    sources = OFFICE_FIXTURES[fmt]
    built = not sources or draw(st.booleans())
    parts = {k: v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v for k, v in (
        draw(OFFICE_BUILT[fmt]) if built else draw(st.sampled_from(sources))).items()}
    xml_names = sorted(k for k in parts if k.endswith((".xml", ".rels")))
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["hostile", "hostile", "hostile", "drop", "rename", "junk",
                                   "big"]))
        if not xml_names:
            break
        name = draw(st.sampled_from(xml_names))
        if name not in parts:
            continue
        if op == "hostile":
            parts[name] = draw(hostile_xml(parts[name]))
        elif op == "drop":
            del parts[name]
        elif op == "rename":
            parts[draw(st.sampled_from([name.upper(), "/" + name, name + " ", name.replace("/", "\\")]))] = parts.pop(name)
        elif op == "junk":
            parts[draw(st.sampled_from(["../../evil.xml", "/abs.xml", "a" * 300 + ".xml", "",
                                        "dir/", "word/document.xml/x"]))] = b"\x00junk"
        else:  # many elements, within CI bounds: a big but honest part
            parts[name] = parts[name].replace(b"</", b"<!-- pad -->" * draw(
                st.sampled_from([10, 1_000])) + b"</", 50)
    buf = io.BytesIO()
    method = draw(st.sampled_from([zipfile.ZIP_DEFLATED, zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED,
                                   zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]))
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in parts.items():
            if name:
                z.writestr(name, data)
        if draw(st.integers(0, 8)) == 0 and parts:  # the same name twice
            name = next(iter(parts))
            if name:
                z.writestr(zipfile.ZipInfo(name), b"<dup/>")
    data = buf.getvalue()
    damage = draw(st.sampled_from(["", "", "", "", "truncate", "flip", "prefix", "size"]))
    if damage == "truncate":
        data = data[:draw(st.integers(0, len(data)))]
    elif damage == "flip" and data:
        mutable = bytearray(data)
        for _ in range(draw(st.integers(1, 20))):
            mutable[draw(st.integers(0, len(data) - 1))] ^= 0xFF
        data = bytes(mutable)
    elif damage == "prefix":  # junk before the zip (a self-extractor, a sniffing trap)
        data = draw(st.sampled_from([b"\xef\xbb\xbf", b"<html>", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"])) + data
    elif damage == "size":  # a local header that lies about the inflated size
        data = re.sub(rb"PK\x03\x04(.{18})(.{4})", lambda m: b"PK\x03\x04" + m.group(1)
                      + b"\xff\xff\xff\x7f", data, count=1, flags=re.S)
    return data


# -- the table of strategies, and the tests -----------------------------------------------

STRATEGIES: dict[str, st.SearchStrategy[bytes]] = {
    "markdown": hostile(markdown_text()),
    "text": hostile(plain_text()),
    "html": hostile(html_text()),
    "csv": hostile(csv_text()),
    "pdf": st.one_of(mutated_pdf(), built_pdf()),
    **{lang: hostile(code_text(lang)) for lang in CODE},
    "json": hostile(json_text()),
    "jsonl": hostile(jsonl_text()),
    "yaml": hostile(yaml_text()),
    "toml": hostile(toml_text()),
    "notebook": hostile(notebook_text(), rate=12),  # mostly valid JSON: reach the cells
    "notebook-outputs": hostile(notebook_text(), rate=12),
    "docx": office("docx"),
    "pptx": office("pptx"),
    "xlsx": office("xlsx"),
}


def test_every_format_has_a_strategy():
    missing = sorted(set(MODULES) - set(STRATEGIES))
    assert not missing, f"formats without a fuzzing strategy: {missing}"


#: formats with a failure found and reported but not fixed yet (docs/fuzzing.md, "Findings"):
#: still run, expected to fail; remove the entry with the fix
#: format -> a finding still open (its test is an expected failure until it is fixed)
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("fmt", [pytest.param(f, marks=pytest.mark.xfail(reason=KNOWN[f]))
                                 if f in KNOWN else f for f in sorted(STRATEGIES)])
def test_parser_survives_hostile_input(fmt):
    if fmt not in MODULES:
        pytest.skip(f"{fmt} is not a registered format")
    pytest.importorskip(f"chunkwise.parsers.{MODULES[fmt]}")
    names = sorted(ext for ext, f in EXTENSIONS.items() if f == fmt) or [".bin"]

    @FUZZ
    @given(data=STRATEGIES[fmt].map(Blob), ext=st.sampled_from(names))
    def run(data: bytes, ext: str) -> None:
        check(data, fmt, f"fuzz{ext}")

    run()
