"""Contextual enrichment (Anthropic's "contextual retrieval"), orthogonal to the strategy.

An LLM writes one sentence that situates a chunk in its document; it is appended to the
chunk's context (title and heading path), so it is embedded with the chunk and counted in the
budget. The chunker reserves `context_tokens` of the budget for it; if the sentence still does
not fit, it is cut at a word, or dropped. Answers are cached by (document hash, chunk hash,
model) in `contexts.sqlite` inside a directory the caller chooses, so re-ingesting a corpus
does not pay twice. An LLM that fails or times out costs the chunk only its sentence (nothing
is cached, so a later run asks again); the chunk itself is never lost.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..model import ParsedDocument, embed_text
from .work import Piece
from ..sizing.sizers import Sizer
from .llms import complete, llm_identity, resolve_llm
from ..text.sentences import sentence_spans

log = logging.getLogger(__name__)

CACHE_FILE = "contexts.sqlite"
DEFAULT_RESERVE = 64
#: text a chunk keeps at least, beside the reserve
_MIN_TEXT = 8
#: documents longer than this are shown to the LLM as their start plus the chunk's neighbourhood
DOC_CHARS = 24_000

PROMPT = """\
<document>
{document}
</document>
Here is the chunk we want to situate within the whole document
<chunk>
{chunk}
</chunk>
Please give a short succinct context to situate this chunk within the overall document for \
the purposes of improving search retrieval of the chunk. Answer only with the succinct \
context and nothing else."""


def make_contextualizer(contextualize: Any, llm: Any, sizer: Sizer, *, room: int,
                        timeout: float, cache_dir: str | os.PathLike | None,
                        reserve: int | None) -> tuple[Contextualizer | None, int, str]:
    """From the Chunker's options (`contextualize`: None, True to use `llm`, or an LLM): the
    contextualizer, the tokens reserved for its sentence out of `room`, and what it adds to
    the chunk-id fingerprint. Raises `ConfigError` on bad options."""
    if contextualize is None:
        if cache_dir is not None or reserve is not None:
            raise ConfigError("context_cache, context_tokens: only with contextualize")
        return None, 0, ""
    writer = llm if contextualize is True else resolve_llm(contextualize)
    if writer is None:
        raise ConfigError("contextualize=True needs an llm (or pass the LLM itself)")
    reserve = DEFAULT_RESERVE if reserve is None else reserve
    if not isinstance(reserve, int) or isinstance(reserve, bool) or not (
            1 <= reserve <= room - _MIN_TEXT):
        raise ConfigError(f"context_tokens must be a positive integer leaving at least "
                          f"{_MIN_TEXT} tokens of text, got {reserve!r}")
    made = Contextualizer(writer, sizer, cache_dir=cache_dir, timeout=timeout)
    return made, reserve, f"|contextualize={made.model}|{reserve}"


class ContextCache:
    """Situating sentences on disk (SQLite), or in memory when `directory` is None."""

    def __init__(self, directory: str | os.PathLike | None) -> None:
        self.path = None
        self._memory: dict[tuple[str, str, str], str] = {}
        self._lock = threading.Lock()
        if directory is not None:
            folder = Path(directory).expanduser()
            try:
                folder.mkdir(parents=True, exist_ok=True)
                self.path = folder / CACHE_FILE
                with self._connect() as db:
                    db.execute("CREATE TABLE IF NOT EXISTS contexts (doc TEXT, chunk TEXT, "
                               "model TEXT, context TEXT, PRIMARY KEY (doc, chunk, model))")
            except (OSError, sqlite3.Error) as e:
                raise ConfigError(f"cannot use context cache {folder}: {e}") from e

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, key: tuple[str, str, str]) -> str | None:
        with self._lock:
            if self.path is None:
                return self._memory.get(key)
            db = self._connect()
            try:
                row = db.execute("SELECT context FROM contexts WHERE doc=? AND chunk=? AND "
                                 "model=?", key).fetchone()
            finally:
                db.close()
            return row[0] if row else None

    def put(self, key: tuple[str, str, str], context: str) -> None:
        with self._lock:
            if self.path is None:
                self._memory[key] = context
                return
            db = self._connect()
            try:
                with db:
                    db.execute("INSERT OR REPLACE INTO contexts VALUES (?, ?, ?, ?)",
                               (*key, context))
            finally:
                db.close()


class Contextualizer:
    """Adds an LLM's situating sentence to each planned chunk's context, within the budget."""

    def __init__(self, llm: Any, sizer: Sizer, *, cache_dir: str | os.PathLike | None,
                 timeout: float) -> None:
        self.llm, self.sizer, self.timeout = llm, sizer, timeout
        self.model = llm_identity(llm)
        self.cache = ContextCache(cache_dir)
        self._lock = threading.Lock()
        #: cumulative: calls, cached, errors, truncated, dropped
        self.stats: Counter = Counter()

    def apply(self, doc: ParsedDocument, pieces: list[Piece], max_tokens: int) -> list[Piece]:
        doc_hash = _hash(doc.text)
        stats: Counter = Counter()
        out = []
        for p in pieces:
            sentence = self._sentence(doc, p, doc_hash, stats)
            out.append(self._with_sentence(doc.text, p, sentence, max_tokens, stats))
        if stats["errors"]:
            log.warning("%s: contextualize: %d of %d chunks got no context (LLM failed)",
                        doc.source, stats["errors"], len(pieces))
        with self._lock:
            self.stats.update(stats)
        return out

    def _sentence(self, doc: ParsedDocument, p: Piece, doc_hash: str, stats: Counter) -> str:
        chunk = doc.text[p.start:p.end]
        key = (doc_hash, _hash(chunk), self.model)
        hit = self.cache.get(key)
        if hit is not None:
            stats["cached"] += 1
            return hit
        stats["calls"] += 1
        prompt = PROMPT.format(document=_excerpt(doc.text, p.start, p.end), chunk=chunk)
        answer, reason = complete(self.llm, prompt, self.timeout)
        if answer is None:
            stats["errors"] += 1
            log.info("%s: contextualize [%d:%d]: %s", doc.source, p.start, p.end, reason)
            return ""
        sentence = first_sentence(answer)
        self.cache.put(key, sentence)
        return sentence

    def _with_sentence(self, text: str, p: Piece, sentence: str, max_tokens: int,
                       stats: Counter) -> Piece:
        if not sentence:
            return p
        count, body = self.sizer.count, text[p.start:p.end]

        def tokens_with(s: str) -> int:
            ctx = f"{p.context}\n{s}" if p.context else s
            return count(embed_text(ctx, body))

        words = sentence.split(" ")
        n = len(words)
        if tokens_with(sentence) > max_tokens:  # longest word prefix that fits
            lo, hi = 0, n - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if tokens_with(" ".join(words[:mid])) <= max_tokens:
                    lo = mid
                else:
                    hi = mid - 1
            n = lo
            stats["truncated" if n else "dropped"] += 1
        if n == 0:
            return p
        s = " ".join(words[:n])
        ctx = f"{p.context}\n{s}" if p.context else s
        return replace(p, context=ctx, tokens=tokens_with(s))


def first_sentence(answer: str) -> str:
    """The first sentence of an answer, on one line."""
    flat = " ".join(answer.split())
    spans = sentence_spans(flat)
    return flat[spans[0][0]:spans[0][1]] if spans else ""


def _excerpt(text: str, start: int, end: int) -> str:
    if len(text) <= DOC_CHARS:
        return text
    head = text[:DOC_CHARS // 3]
    half = DOC_CHARS // 3
    lo, hi = max(len(head), start - half), min(len(text), end + half)
    return f"{head}\n[…]\n{text[lo:hi]}" if lo > len(head) else text[:hi]


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
