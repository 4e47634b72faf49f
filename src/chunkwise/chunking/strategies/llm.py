"""The `llm` (agentic) strategy: a LlamaIndex LLM proposes where each section splits.

The document is first planned by the structure fitter. Consecutive structure chunks under the
same heading form a *section* (bounded in size so that a prompt stays small). The section is
cut into numbered pieces (sentences; lines in code and tables; a piece longer than the budget
is cut at words), and the LLM is asked which pieces start a new chunk. The answer is accepted
only if it is a list of piece numbers in increasing order and every resulting chunk fits the
budget, counted exactly; otherwise (garbage, wrong order, over budget, an exception, a
timeout) the section keeps its structure chunks. Either way every piece is in exactly one
chunk, so no content is ever lost.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from typing import Any

from ...errors import ConfigError
from ..fitter import Budget, Candidate, Fitter, Piece
from ..llms import complete, llm_identity
from ...model import ParsedDocument
from ...sizing.sizers import Sizer
from ...text.splitting import LINES, SENTENCES, WORDS, is_prose, trim
from .spec import NoOptions, Setup
from .base import SectionIndex, pack_span
from ..structure import Node

log = logging.getLogger(__name__)

#: a prompt shows at most this many pieces and this many budgets' worth of tokens
MAX_PIECES = 80
MAX_BUDGETS = 8
_LABEL = re.compile(r"^\s*(?:[A-Za-z][A-Za-z ]{0,30}:)?\s*")
_ANSWER = re.compile(r"\[?\s*(none|\d+(?:\s*,\s*\d+)*)?\s*\]?\s*\.?", re.I)
_FENCE = re.compile(r"^```[a-z]*\s*|\s*```$")

PROMPT = """\
You are splitting one section of a document into chunks for a retrieval index.
Document: {document}
Section: {section}

The section is given below as {count} numbered pieces, each with its size in tokens. A chunk is
a run of consecutive pieces, and each chunk must total at most {budget} tokens. Start a new
chunk where the topic changes, so that each chunk is about one thing.

Answer with the numbers of the pieces that start a new chunk, in increasing order, separated
by commas, for example: 4, 9. Piece 1 always starts the first chunk. Answer none to keep the
section as one chunk. Answer with the numbers only.

{pieces}
"""


def parse_answer(answer: str, count: int) -> list[int] | str:
    """The 0-based indices of the pieces that start a chunk (always beginning with 0), or the
    reason the answer is refused: `malformed` or `out of order`."""
    text = _FENCE.sub("", answer.strip())
    text = _LABEL.sub("", text, count=1).strip()
    m = _ANSWER.fullmatch(text)
    if not m or not m.group(1):
        return "malformed"
    if m.group(1).lower() == "none":
        return [0]
    numbers = [int(x) for x in re.findall(r"\d+", m.group(1))]
    if numbers and numbers[0] == 1:
        numbers = numbers[1:]
    if any(not 2 <= x <= count for x in numbers):
        return "malformed"
    if any(b <= a for a, b in zip(numbers, numbers[1:])):
        return "out of order"
    return [0, *(x - 1 for x in numbers)]


def make(setup: Setup, options: NoOptions) -> LLMStrategy:
    if setup.llm is None:
        raise ConfigError("strategy='llm' needs an llm (a LlamaIndex LLM or module:attr)")
    return LLMStrategy(setup.sizer, llm=setup.llm, timeout=setup.timeout)


class LLMStrategy:
    """The `llm` strategy; `plan` is safe to call from several threads."""

    overlaps = False

    def __init__(self, sizer: Sizer, *, llm: Any, timeout: float) -> None:
        self.sizer, self.llm, self.timeout = sizer, llm, timeout
        self.identity = f"|llm={llm_identity(llm)}"
        self._lock = threading.Lock()
        #: cumulative: sections, calls (sections of one piece need none), accepted, and one
        #: `fallback: <reason>` count per refused answer
        self.stats: Counter = Counter()

    def plan(self, doc: ParsedDocument, budget: Budget, root: Node) -> list[Piece]:
        fallback = Fitter(self.sizer, budget).fit(doc, root)
        index = SectionIndex(doc, self.sizer, budget, root=root)
        limit = budget.tokens
        out: list[Piece] = []
        stats: Counter = Counter()
        for group, pieces in self._sections(index, fallback, limit):
            stats["sections"] += 1
            if len(pieces) < 2:  # nothing to decide
                out.extend(group)
                continue
            stats["calls"] += 1
            chunks, reason = self._ask(index, doc, group, pieces, limit)
            stats["accepted" if chunks is not None else f"fallback: {reason.split(':')[0]}"] += 1
            out.extend(chunks if chunks is not None else group)
        fell = sum(v for k, v in stats.items() if k.startswith("fallback"))
        if fell:
            log.warning("%s: llm: %d of %d sections kept their structure chunks (%s)",
                        doc.source, fell, stats["sections"],
                        ", ".join(f"{k[10:]} {v}" for k, v in sorted(stats.items())
                                  if k.startswith("fallback")))
        with self._lock:
            self.stats.update(stats)
        return out

    def _sections(self, index: SectionIndex, fallback: list[Piece], budget: int):
        """Runs of consecutive structure chunks under one heading, with their pieces."""
        group: list[Piece] = []
        pieces: list[tuple[int, int]] = []
        tokens = 0
        for p in fallback:
            mine = self._pieces(index, p, budget)
            if group and (p.owner.path != group[-1].owner.path
                          or len(pieces) + len(mine) > MAX_PIECES
                          or tokens + p.tokens > MAX_BUDGETS * budget):
                yield group, pieces
                group, pieces, tokens = [], [], 0
            group.append(p)
            pieces += mine
            tokens += p.tokens
        if group:
            yield group, pieces

    def _pieces(self, index: SectionIndex, p: Piece, budget: int) -> list[tuple[int, int]]:
        """Sentences of a structure chunk (lines in code and tables), each small enough to
        be a chunk on its own."""
        text = index.text
        if not is_prose(index.doc, p.kinds):
            bounds = [p.start, *LINES(text, p.start, p.end), p.end]
            spans = [trim(text, a, b) for a, b in zip(bounds, bounds[1:])]
            spans = [(a, b) for a, b in spans if a < b]
        else:  # sentences; a heading glued to a section's content stays with it
            cuts = [c for c in SENTENCES(text, p.start, p.end)
                    if c > index.chain_at(c - 1)[-1].own_start]
            bounds = [p.start, *cuts, p.end]
            spans = [trim(text, a, b) for a, b in zip(bounds, bounds[1:])]
            spans = [(a, b) for a, b in spans if a < b]
        out = []
        for a, b in spans:
            ctx, _ = index.context_at(a)
            if index.count(ctx, a, b) <= budget:
                out.append((a, b))
            else:
                out += [(q.start, q.end) for q in pack_span(index, [WORDS], a, b)]
        return out

    def _ask(self, index: SectionIndex, doc: ParsedDocument, group: list[Piece],
             pieces: list[tuple[int, int]], budget: int) -> tuple[list[Piece] | None, str]:
        text, count = index.text, self.sizer.count
        listing = "\n".join(
            f"[{i}] ({count(text[a:b]) - self.sizer.overhead} tokens) {' '.join(text[a:b].split())}"
            for i, (a, b) in enumerate(pieces, 1))
        prompt = PROMPT.format(document=doc.title or doc.source,
                               section=" > ".join(group[0].owner.path) or "(top level)",
                               count=len(pieces), budget=budget, pieces=listing)
        answer, reason = complete(self.llm, prompt, self.timeout)
        if answer is None:
            return None, reason
        starts = parse_answer(answer, len(pieces))
        if isinstance(starts, str):
            return None, starts
        chunks = []
        for s, e in zip(starts, [*starts[1:], len(pieces)]):
            a, b = pieces[s][0], pieces[e - 1][1]
            ctx, _ = index.context_at(a)
            tokens = index.count(ctx, a, b)
            if tokens > budget or b - a > index.budget.max_chars:
                return None, "over budget"
            chunks.append(index.piece(Candidate(a, b, ctx, tokens, ()), []))
        return chunks, ""
