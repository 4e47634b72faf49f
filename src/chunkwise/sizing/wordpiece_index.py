"""The WordPiece token index (`minilm`, or any BERT-style `tokenizer.json`): where each token
of a text ends, and the anchors that let any span be counted from it.

The BERT pre-tokenizer cuts at whitespace and punctuation, after a normalizer that works
character by character, and WordPiece never joins two words: so any position next to ASCII
whitespace is an anchor, and for most tokenizers each side of punctuation and of an
isolated ideograph too (`_wordpiece_anchor`). A tokenizer given a 50 MB text at once takes
gigabytes, so the index encodes its text in blocks of about `_WORDPIECE_BLOCK` characters
(`_blocks`), cut inside words where a stretch has no whitespace (`_WordCuts`); only a long
stretch with neither whitespace, ASCII punctuation, an ideograph nor a long run of letters
and digits (unspaced Thai, whose vowel marks break runs) is still encoded whole.
"""

from __future__ import annotations

import json
import logging
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from .counters import AnchoredCounter, SpanCounter
from .sizers import Sizer, hf_tokenizer

log = logging.getLogger(__name__)

# WordPiece after the BERT pre-tokenizer: every word ends at whitespace, and the normalizer
# works character by character, so any position next to ASCII whitespace is an anchor.
# (Punctuation and ideographs split too: see `_wordpiece_anchor`.)
_WORDPIECE_ANCHOR = re.compile(r"[^ \t\n](?=[ \t\n])|[ \t\n]")
_ASCII_SPACE = re.compile(r"[ \t\n]")
_ASCII_PUNCT = re.compile(r"[!-/:-@\[-`{-~]")
#: the ideographs the BERT normalizer isolates (`handle_chinese_chars`; checked against the
#: tokenizer in use, see `_WordCuts.checked`)
_CJK = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2A6DF),
        (0x2A700, 0x2B81F), (0x2B920, 0x2CEAF), (0x2F800, 0x2FA1F)]
_CJK_CLASS = "".join(f"{chr(a)}-{chr(b)}" for a, b in _CJK)
_PUNCT_OR_CJK = re.compile(r"[!-/:-@\[-`{-~%s]" % _CJK_CLASS)
#: a word character for WordPiece: a letter or digit in any script (`str.isalnum`), but not
#: `_` (ASCII punctuation) nor an ideograph (isolated, or in the gap of `_CJK` that a
#: tokenizer version may isolate too)
_WORD_CHAR = r"[^\W_%s\U0002B820-\U0002B91F]" % _CJK_CLASS
_WORD_RUN = re.compile(_WORD_CHAR + "*")
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
#: letters and digits whose normalizing may change them (accents, case, ligatures, Hangul
#: syllables into jamo), checked to stay inside a word (`_WordCuts.checked`)
_LETTER_PROBES = "xZ9éİßǅﬁжΩ가٣ก"
#: characters encoded at once when indexing a text with a WordPiece tokenizer
_WORDPIECE_BLOCK = 1 << 18


@lru_cache(maxsize=4)
def wordpiece_builder(path: str) -> Callable[[Sizer, str], SpanCounter] | None:
    spec = _bert_wordpiece_spec(Path(path))
    if spec is None:
        return None
    import numpy as np

    tok = hf_tokenizer(path)
    cuts = _WordCuts.for_spec(spec)
    if cuts is not None:
        cuts = cuts.checked(tok)
    unk = tok.token_to_id(spec["model"].get("unk_token", "[UNK]"))

    def inner(s: str) -> int:
        return len(tok.encode(s, add_special_tokens=False).ids) if s else 0

    def token_ends(text: str, block: int = _WORDPIECE_BLOCK) -> np.ndarray:
        """End (`str` index) of every token of `text`, encoding it in blocks of about `block`
        characters so that memory stays bounded (the tokenizer's per-token objects for a
        50 MB text take gigabytes): cut at ASCII whitespace (an anchor: the same tokens as
        one pass), or where there is none, at the cuts of `_WordCuts`."""
        try:
            return _ends(text, block, cuts)
        except _NotOnePass:  # never seen: the tokenizer breaks a rule `_WordCuts` relies on
            log.warning("%s: a cut inside a word did not give the tokens of one pass; "
                        "indexing with cuts at whitespace only", path)
            return _ends(text, block, None)

    def _ends(text: str, block: int, cuts: _WordCuts | None) -> np.ndarray:
        parts = [np.zeros(0, dtype=np.int64)]
        for a, b, inside in _blocks(text, block, cuts):
            encoding = tok.encode(text[a:b], add_special_tokens=False)
            offsets = encoding.offsets
            if inside:  # the block's last token is the long word's [UNK] cut short: the
                # next block starts with the real one, which ends where the word ends
                if not offsets or offsets[-1][1] != b - a or encoding.ids[-1] != unk:
                    raise _NotOnePass
                offsets = offsets[:-1]
            if offsets:
                parts.append(np.array(offsets, dtype=np.int64)[:, 1] + a)
        return np.concatenate(parts)

    anchor = _wordpiece_anchor(spec.get("added_tokens") or [], cuts)

    def build(sizer: Sizer, text: str) -> SpanCounter:
        return AnchoredCounter(sizer, text, token_ends(text), anchor, inner)

    build.token_ends = token_ends  # type: ignore[attr-defined]  (tests compare it to one pass)
    build.anchor = anchor  # type: ignore[attr-defined]
    return build


def _wordpiece_anchor(added: list[dict], cuts: _WordCuts | None) -> re.Pattern:
    """The anchors of a WordPiece index: each side of ASCII whitespace and, when no added
    token is matched on normalized text (`cuts` is not None), each side of a character the
    pre-tokenizer makes a word of its own and no added token can span: ASCII punctuation
    that none holds (not the brackets of `[SEP]`), and an isolated ideograph unless one
    holds an ideograph or is matched only as a whole word (`single_word`: an ideograph is
    a word character, punctuation is not). So spans of base64, minified code or unspaced
    Chinese count from the index instead of being encoded."""
    if cuts is None:
        return _WORDPIECE_ANCHOR
    held = set().union(*(t.get("content", "") for t in added))
    breaks = re.escape(" \t\n" + "".join(
        c for c in map(chr, range(0x21, 0x7F)) if _ASCII_PUNCT.match(c) and c not in held))
    if cuts.isolates_cjk and not any(
            t.get("single_word") or _CJK_CHAR.search(t.get("content", "")) for t in added):
        breaks += _CJK_CLASS
    return re.compile(f"[{breaks}]|[\\s\\S](?=[{breaks}])")


class _NotOnePass(Exception):
    """A block's tokens are not those `_WordCuts` promised."""


class _WordCuts:
    """Where a WordPiece text may be cut inside a stretch without ASCII whitespace (a 50 MB
    run of letters, minified code, base64, a line of unspaced CJK), so that blocks stay
    bounded there too:

    - after ASCII punctuation, or an ideograph when the normalizer isolates them
      (`handle_chinese_chars`): the BERT pre-tokenizer makes each such character a word of
      its own, so a word ends there, unless an added token such as `[SEP]` spans the cut
      (or, for a `single_word` one, ends or starts there);
    - inside a run of letters and digits of any script (`_WORD_CHAR`), `margin` of them on
      each side: whatever the cut, the word around it is longer than
      `max_input_chars_per_word`, so WordPiece makes it one `[UNK]` that ends where the word
      ends. The block before the cut ends with an `[UNK]` of its own, cut short (dropped:
      the cut is *inside* a word); the block after it starts with the real one.

    Both hold for the BERT normalizer too: it maps punctuation to itself, and a letter or
    digit to one or more letters or digits (accents stripped, lowercased), never to
    whitespace, punctuation or nothing, so a run's word only grows. Added tokens are matched
    on the raw text before that, so the rules are kept only when none is matched on
    normalized text, and the second only when each one holds a character that is not a
    letter or digit (none fits inside a run). Each cut inside a word is checked as it is
    used (`token_ends`).
    """

    def __init__(self, added: list[str], max_word: int, runs: bool, touch: bool,
                 cjk: bool = False) -> None:
        #: (content, characters before and after a cut where it may not occur)
        self.added = [(t, len(t) - 1 + touch) for t in added if t]
        self.margin = max_word + max((len(t) for t in added), default=0) + 1
        self._after = _PUNCT_OR_CJK if cjk else _ASCII_PUNCT
        self._run: re.Pattern | None = None
        if runs:
            self._runs_of(_WORD_CHAR)

    def _runs_of(self, char: str) -> None:
        """Cut inside runs of `char` (a character class)."""
        self._run = re.compile(r"(?<!%s)%s{%d}" % (char, char, 2 * self.margin))
        self._in_word = re.compile(char + "*")

    @classmethod
    def for_spec(cls, spec: dict) -> _WordCuts | None:
        added = spec.get("added_tokens") or []
        if any(t.get("normalized") for t in added):
            return None
        contents = [t.get("content", "") for t in added]
        runs = all(not _WORD_RUN.fullmatch(c) for c in contents)
        norm = spec.get("normalizer") or {}
        return cls(contents, int(spec["model"].get("max_input_chars_per_word", 100)), runs,
                   any(t.get("single_word") for t in added),
                   norm.get("type") == "BertNormalizer" and norm.get("handle_chinese_chars", True))

    def checked(self, tok) -> _WordCuts:
        """These cuts, without the rules that the tokenizer in use breaks on probes: the
        first and last ideograph of each range in `_CJK` (isolated by the Rust code of the
        `tokenizers` version installed, not by `tokenizer.json`), and letters of several
        scripts (each stays in the word around it)."""
        def words(s: str) -> list[str]:
            if tok.normalizer is not None:
                s = tok.normalizer.normalize_str(s)
            return [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(s)]

        if self._after is _PUNCT_OR_CJK and not all(
                len(words(f"a{chr(c)}b")) == 3 for r in _CJK for c in r):
            self._after = _ASCII_PUNCT
        if self._run is not None and not all(
                len(words(f"a{c}b")) == 1 for c in _LETTER_PROBES):
            self._runs_of("[0-9A-Za-z]")
        return self

    @property
    def isolates_cjk(self) -> bool:
        """Whether the tokenizer makes each ideograph of `_CJK` a word of its own."""
        return self._after is _PUNCT_OR_CJK

    def first(self, text: str, start: int, lo: int, hi: int) -> tuple[int, bool] | None:
        """The first cut in `[lo, hi]` of a block that starts at `start` (< `lo`), and
        whether it is inside a word (then at least `margin` after `start`, so that the
        block's part of the word is a long word too)."""
        after = self._after_punctuation(text, lo, hi)
        if self._run is not None:
            run = self._in_run(text, max(lo, start + self.margin),
                               hi if after is None else after - 1)
            if run is not None:
                return run, True
        return None if after is None else (after, False)

    def _after_punctuation(self, text: str, lo: int, hi: int) -> int | None:
        for m in self._after.finditer(text, lo - 1, hi):
            p = m.end()
            if not any(t in text[max(0, p - k):p + k] for t, k in self.added):
                return p
        return None

    def _in_run(self, text: str, lo: int, hi: int) -> int | None:
        """The first position in `[lo, hi]` with `margin` letters or digits on either
        side."""
        k = self.margin
        if lo > hi:
            return None
        if k <= lo <= len(text) - k and self._in_word.fullmatch(text, lo - k, lo + k):
            return lo  # inside a run that starts before the runs searched for below
        m = self._run.search(text, max(lo - k, 0), hi + k)  # type: ignore[union-attr]
        return m.start() + k if m is not None else None


def _blocks(text: str, size: int, cuts: _WordCuts | None = None
            ) -> Iterator[tuple[int, int, bool]]:
    """Consecutive spans `(a, b, inside)` of about `size` characters tiling `text`, each cut
    just before an ASCII whitespace character (searched back to half the size, then
    forwards), or where there is none, at the first of `cuts` (`inside`: inside a word)."""
    a, n = 0, len(text)
    while a < n:
        b = a + size
        if b >= n:
            yield a, n, False
            return
        lo = a + max(1, size // 2)
        cut = max(text.rfind(" ", lo, b), text.rfind("\n", lo, b), text.rfind("\t", lo, b))
        inside = False
        if cut <= a:
            cut, inside = _next_cut(text, a, lo, size, cuts)
        yield a, cut, inside
        a = cut


def _next_cut(text: str, start: int, lo: int, size: int, cuts: _WordCuts | None
              ) -> tuple[int, bool]:
    """The first cut at or after `lo` of the block that starts at `start`: before ASCII
    whitespace or one of `cuts`, searched in windows of `size` (a search to the end of a
    long text at every block would be quadratic)."""
    n = len(text)
    while lo < n:
        hi = min(lo + size, n)
        m = _ASCII_SPACE.search(text, lo, hi)
        found = (m.start(), False) if m is not None else None
        if cuts is not None:
            other = cuts.first(text, start, lo, m.start() - 1 if m is not None else hi)
            found = other or found
        if found is not None:
            return found
        lo = hi
    return n, False


def _bert_wordpiece_spec(path: Path) -> dict | None:
    """The parsed `tokenizer.json` if it is a BERT normalizer (or none), BERT pre-tokenizer,
    WordPiece, and added tokens that neither hold nor strip whitespace: the setup the
    WordPiece anchors are proven for; else None."""
    try:
        spec = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    norm, pre, model = spec.get("normalizer"), spec.get("pre_tokenizer"), spec.get("model")
    added = spec.get("added_tokens") or []
    ok = ((norm is None or norm.get("type") == "BertNormalizer")
          and (pre or {}).get("type") == "BertPreTokenizer"
          and (model or {}).get("type") == "WordPiece"
          and all(not any(c.isspace() for c in t.get("content", " "))
                  and not t.get("lstrip") and not t.get("rstrip") for t in added))
    return spec if ok else None
