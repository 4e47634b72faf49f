"""The terms of lexical search: what a chunk is indexed under and what a query looks for.

A word search over code, tables and prose finds what an embedding misses (an identifier, a
figure, an error code, a name) only if both sides are cut into the same terms, and cut the way
people type them:

- **identifiers split and kept whole**: `CHUNKWISE_MAX_BYTES` gives `chunkwise`, `max`,
  `bytes` and `chunkwisemaxbytes`; `DirectorySlash` gives `directory`, `slash` and
  `directoryslash`; `os.path.join`, `--max-file-size`, `utf-8`, `HTTP2` alike. A query for
  the whole name then ranks the chunk that spells it exactly above one that only holds its
  parts, and a query for one part still finds it.
- **numbers whole and without separators**: `21,550` gives `21`, `550` and `21550`, so a
  query `21550` finds the table cell `21,550` and the other way round.
- **case folded, no stemming** (code and identifiers must not be stemmed; a stemmer for
  prose was measured, docs/retrieval.md).
- **CJK by characters and pairs**: Chinese and Japanese are written without spaces, so each
  Han, kana or Hangul character is a term and so is each pair of neighbours; a query in those
  scripts then finds its passage (its pairs match where its characters are adjacent).

Every term is letters and digits only: the index (SQLite FTS5's `unicode61`) and any query
syntax see nothing else, so no text can be read as an operator. No I/O here; the index is
`chunkwise.chroma.lexical`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable, Iterator

#: bump when `terms` changes: every lexical index is then rebuilt from its stored records
VERSION = "1"

# CJK ideographs, kana, Hangul (syllables and jamo), CJK compatibility ideographs
_CJK = ("\u2e80-\u2fdf\u3005\u3007\u3021-\u3029\u3038-\u303c\u3040-\u30ff\u3100-\u312f"
        "\u3130-\u318f\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
        "\U00020000-\U0003134f")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
#: a number with thousands separators, or a compound of word characters joined by the
#: punctuation identifiers, paths and flags are written with (CJK runs are cut out after)
_TOKEN = re.compile(r"(?P<num>\d{1,3}(?:[,'\u2019\u202f\u00a0_]\d{3})+(?:[.,]\d+)?(?!\w))"
                    r"|(?P<word>\w+(?:[.\-/:@#+'\u2019]\w+)*)")
#: where a compound's parts meet: a run of letters, of digits, or a capitalised word
_PART = re.compile(r"[^\W\d_]+|\d+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\W\d_]+")
#: a compound's parts at most: longer ones (URLs, base64) are indexed by their parts only
_MAX_PARTS = 8
#: longest term kept: longer runs are data, not words anyone types
_MAX_TERM = 64


def terms(text: str) -> list[str]:
    """The terms of `text`, in order, repeats kept (their count is the term frequency)."""
    return list(iter_terms(text))


def iter_terms(text: str) -> Iterator[str]:
    for m in _TOKEN.finditer(text):
        token = m.group()
        if m.lastgroup == "num":
            parts = _PART.findall(token)
            yield from parts
            yield "".join(parts)
        elif token.isascii() or not _CJK_RUN.search(token):
            yield from _compound(token)
        else:  # CJK inside: its runs by characters and pairs, the rest as compounds
            at = 0
            for run in _CJK_RUN.finditer(token):
                if run.start() > at:
                    yield from _compound(token[at:run.start()])
                yield from _cjk(run.group())
                at = run.end()
            if at < len(token):
                yield from _compound(token[at:])


@lru_cache(maxsize=1 << 16)
def _compound(token: str) -> tuple[str, ...]:
    """The terms of one compound (tokens repeat: cached)."""
    if token.isalpha() and (token.islower() or token.isupper() or not token.isascii()):
        return (token.lower(),) if len(token) <= _MAX_TERM else ()  # a plain word
    parts = [p.lower() for chunk in _PART.findall(token) for p in _camel(chunk)]
    parts = [p for p in parts if len(p) <= _MAX_TERM]
    whole = "".join(parts)
    if 1 < len(parts) <= _MAX_PARTS and len(whole) <= _MAX_TERM:
        parts.append(whole)
    return tuple(parts)


def _camel(chunk: str) -> list[str]:
    """`chunk` (letters or digits) cut at its capitals: `DirectorySlash`, `HTTPServer`;
    only ASCII words are cut (the rule for other scripts' cases is not this one)."""
    if chunk.islower() or chunk.isupper() or chunk.isdigit() or not chunk.isascii():
        return [chunk]
    return _CAMEL.findall(chunk)


def _cjk(run: str) -> Iterator[str]:
    yield from run
    for i in range(len(run) - 1):
        yield run[i:i + 2]


#: English function words left out of a query (never out of the index) when the query has
#: other terms: they match most chunks, cost time and rank nothing
STOPWORDS = frozenset("""
a an and are as at be been but by can could did do does for from had has have how i if in
into is it its may me my no not of on or our should so than that the their them then there
these they this those to was we were what when where which while who whom why will with
would you your
""".split())
#: terms of a query used at most: a pasted page finds what its rarest words find
MAX_QUERY_TERMS = 64


def query_terms(text: str, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct terms of a query, in order, stopwords dropped when others remain, at most
    `limit` (the longest first: they are the rarest)."""
    seen = _distinct(iter_terms(text))
    kept = [t for t in seen if t not in STOPWORDS] or seen
    if len(kept) > limit:
        order = sorted(range(len(kept)), key=lambda i: (-len(kept[i]), i))[:limit]
        longest = {kept[i] for i in order}
        kept = [t for t in kept if t in longest]
    return kept


def _distinct(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
