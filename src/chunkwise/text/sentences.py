"""An offline sentence splitter that returns offsets, never copies.

Rules, in order (the usual heuristics of rule-based splitters such as pySBD and Punkt's
defaults, kept small):

- A blank line always ends a sentence; so does the end of a Markdown heading line, and a
  newline before a list item, heading, quote, table row or code fence.
- `.`, `!`, `?`, `…` (possibly repeated, possibly followed by closing quotes or brackets) end a
  sentence only when whitespace follows, so decimals (`3.14`), versions, URLs and e-mail
  addresses (`example.com/a.b`) never split. CJK `。！？` end a sentence without a space.
- A terminator never ends a sentence when the next word starts lower-case (`e.g. the`,
  `approx. five`, `"Wow!" he said`).
- A single `.` does not end a sentence after a known abbreviation (`Mr.`, `Dr.`, `e.g.`,
  `et al.`; `Fig.`, `No.`, `p.` only before a number), an acronym with inner dots (`U.S.`,
  `a.m.`), a single capital initial (`J. R. R. Tolkien`), or a list number at the start of a
  line (`1. First`).
"""

from __future__ import annotations

import re

#: a terminator run with its closing quotes or brackets: `[.!?…]+[closers]*` before whitespace,
#: or `[。！？]+[CJK closers]*`. Written to start with one character class (the regex engine
#: then skips ahead to the next terminator instead of trying both branches at every
#: character): five times faster, the same matches (tested against the plain pattern).
_END = re.compile(r"[.!?…。！？](?:(?<=[.!?…])[.!?…]*[\"'”’»)\]]*(?=\s)|(?<=[。！？])[。！？]*[」』”’)\]]*)")
#: `_END` on ASCII text, where it can only match runs of `[.!?]`: one pattern per terminator,
#: each starting with a literal, which the regex engine finds as `str.find` would, instead of
#: testing a class at every character (half the time on a book). A match starts a run of
#: terminators (the lookbehind), as `_END`'s do: its attempt at a run's first character
#: stands for the whole run (see `_terminators`).
_ASCII_ENDS = tuple(re.compile(rf"\{c}(?<![.!?]\{c})[.!?]*[\"')\]]*(?=\s)") for c in ".!?")
#: hard breaks: a blank line, the end of a Markdown heading line, a newline before a list
#: item, heading, quote, table row or code fence. One plain pattern would say it, but with
#: `^` tried at every character; three patterns that each start with a literal `\n` or are
#: anchored let the regex engine jump from newline to newline: six times faster on prose,
#: the same cuts (a test checks them against the plain pattern). A heading match never
#: holds a newline and never starts inside a blank-line match, so the three searches cannot
#: hide a match from each other. The first lookahead, which every match passes, turns away
#: a newline before a letter (most of them) with one class test, not eight alternatives:
#: half the time on verse.
_BREAK = re.compile(r"\n(?=[ \t]*[\n\-*+•\d#>|`~])"
                    r"(?:[ \t]*\n|(?=[ \t]*(?:[-*+•][ \t]|\d{1,3}[.)][ \t]|#{1,6}[ \t]|>|\||```|~~~)))")
_HEADING_AFTER_NEWLINE = re.compile(r"\n[ \t]{0,3}#{1,6}(?:[ \t][^\n]*)?$", re.M)
_HEADING_HERE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t][^\n]*)?$", re.M)
#: a character without which a span has no cut: a newline or a terminator (see `_END`)
_MAY_CUT = re.compile(r"[\n.!?…。！？]")
_ACRONYM = re.compile(r"(?:[A-Za-z]\.){2,}")
_OPENERS = "\"'“‘«([{"
#: lower-case, without the final dot; `.`-joined forms (e.g, i.e) are matched as written
ABBREVIATIONS = frozenset("""
mr mrs ms mx dr prof sr jr st mt ft rev hon gen col lt sgt capt cmdr adm gov pres sen rep
messrs mme mlle vs cf al approx ca dept univ assn bros inc ltd corp
jan feb apr jun jul aug sep sept oct nov dec
e.g i.e etc viz resp incl excl
""".split())
#: abbreviations that are also words: not an end only when a number or bracket follows
NUMBER_ABBREVIATIONS = frozenset("fig figs eq eqs no nos vol vols ch chap sec sect art ref refs "
                                 "p pp para app tab ex nr".split())


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Whitespace-trimmed `(start, end)` spans of the sentences of `text[start:end]`, in order;
    together they cover every non-whitespace character of the range."""
    end = len(text) if end is None else end
    bounds = [start, *sentence_cuts(text, start, end), end]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            out.append((a, b))
    return out


def sentence_cuts(text: str, start: int, end: int) -> list[int]:
    """Offsets strictly inside `(start, end)` where a new sentence may start (each is just
    after a sentence's terminator or hard break; leading whitespace is not skipped)."""
    if end <= len(text) and _MAY_CUT.search(text, start, end) is None:
        # One line without a terminator (a lead-in such as "Install it with:", a title)
        # has no cut: a hard break needs a newline, but for a heading line at `start`,
        # which ends at `end`. Half the paragraphs the tree asks about, at one search.
        return []
    return _cuts(text, start, end)


def _cuts(text: str, start: int, end: int) -> list[int]:
    """`sentence_cuts`, without its shortcut."""
    cuts = hard_breaks(text, start, end)
    add = cuts.add
    for t0, t1 in _terminators(text, start, end):
        if _ends_sentence(text, t0, t1, end):
            add(t1)
    # Every cut is past `start` (each match takes a character); only one can be `end`.
    out = sorted(cuts)
    if out and out[-1] >= end:
        out.pop()
    return out


def _terminators(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The spans of `_END`'s matches in `text[start:end]`, in any order."""
    if not text.isascii():  # a flag of the string: no pass over it
        return [m.span() for m in _END.finditer(text, start, end)]
    spans = []
    if 0 < start < end and text[start - 1] in ".!?" and text[start] in ".!?":
        # a run that `start` cuts: `_END` tries it from `start`; the lookbehind, which sees
        # the run's head before `start`, would not
        head = _END.match(text, start, end)
        if head is not None:
            spans.append(head.span())
    for pattern in _ASCII_ENDS:
        spans += [m.span() for m in pattern.finditer(text, start, end)]
    return spans


def hard_breaks(text: str, start: int, end: int) -> set[int]:
    """Offsets just after each hard break in `text[start:end]` (see `_BREAK`)."""
    cuts = {m.end() for m in _BREAK.finditer(text, start, end)}
    if text.find("#", start, end) < 0:
        return cuts  # no heading line without a `#` (one C-level scan, not a regex pass)
    cuts.update(m.end() for m in _HEADING_AFTER_NEWLINE.finditer(text, start, end))
    if start < min(end, len(text)) and (start == 0 or text[start - 1] == "\n"):
        # a heading line at `start` itself (where `^` would match)
        head = _HEADING_HERE.match(text, start, end)
        if head:
            cuts.add(head.end())
    return cuts


def _ends_sentence(text: str, t0: int, t1: int, end: int) -> bool:
    """Whether the terminator `text[t0:t1]` ends a sentence."""
    nxt = t1
    while nxt < end and text[nxt].isspace():
        nxt += 1
    if nxt >= end:
        return True
    following = text[nxt]
    if following in _OPENERS and nxt + 1 < end:
        following = text[nxt + 1]
    if following.islower():
        return False
    if text[t0] != "." or (t1 - t0 > 1 and text[t0 + 1] == "."):
        return True  # `!`, `?`, `…`, `...`: only the lower-case rule applies
    w0, w1 = _word_before(text, max(0, t0 - 40), t0)
    word = text[w0:w1].lstrip(_OPENERS)
    if not word:
        return True
    lower = word.lower()
    # an acronym has an inner dot: without one, `fullmatch` need not run
    if lower in ABBREVIATIONS or ("." in word and _ACRONYM.fullmatch(word + ".")):
        return False
    if lower in NUMBER_ABBREVIATIONS and (text[nxt].isdigit() or text[nxt] in "(["):
        return False
    if len(word) == 1 and word.isupper():
        return False  # an initial
    if word.isdigit() and len(word) <= 3:
        line_start = text.rfind("\n", 0, w0) + 1
        if not text[line_start:w0].strip():
            return False  # `1. First item`
    return True


def _word_before(text: str, lo: int, t0: int) -> tuple[int, int]:
    """The span of the word that ends `text[lo:t0]`: what `re.search(r"\\S+$")` matches
    there (`pattern.search(text, lo, t0)`), `(t0, t0)` where it matches nothing. The
    pattern is tried at every position of the window (1.4 µs a terminator, most of the
    splitter's time on a long text); this walks back from `t0` over the characters that are
    not whitespace, past one newline at the very end, before which `$` also matches (a test
    checks it against the pattern)."""
    b = t0
    if b > lo and text[b - 1].isspace():
        if text[b - 1] != "\n":
            return t0, t0
        b -= 1  # `$` matches before a newline that ends the window
    a = b
    while a > lo and not text[a - 1].isspace():
        a -= 1
    return (a, b) if a < b else (t0, t0)
