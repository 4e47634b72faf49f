"""Contextual enrichment: an LLM's situating sentence in each chunk's context, within the budget,
cached on disk by (document hash, chunk hash, model), never at the cost of content."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

from chunkwise import ConfigError
from chunkwise.chunking.api import Chunker
from chunkwise.chunking.contextual import CACHE_FILE, first_sentence

from conftest import FIXTURES
from test_contract_properties import PARA
from test_strategies import check_1235

DOC = FIXTURES / "fastapi__features.md"


class Writer(CustomLLM):
    """Answers `answer` (a string, or an exception to raise); counts its calls."""

    answer: Any = "This chunk lists FastAPI features.\nIt has more lines."
    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="writer")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        self.calls += 1
        assert "<document>" in prompt and "<chunk>" in prompt
        if isinstance(self.answer, BaseException):
            raise self.answer
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):
        yield self.complete(prompt)


def test_sentence_is_added_to_the_context_and_counted():
    llm = Writer()
    chunker = Chunker(max_tokens=128, contextualize=llm)
    chunks = check_1235(DOC.read_bytes(), str(DOC), chunker)
    plain = Chunker(max_tokens=128 - 64).chunk_file(DOC)  # the reserve shrinks the text
    assert [(c.start, c.end) for c in chunks] == [(p.start, p.end) for p in plain]
    for c, p in zip(chunks, plain):
        assert c.context == f"{p.context}\nThis chunk lists FastAPI features."
        assert c.tokens == chunker.sizer.count(c.embed_text) <= 128
    assert llm.calls == len(chunks)  # two runs of check_1235: the second from the memory cache
    assert {c.id for c in chunks}.isdisjoint(c.id for c in Chunker(max_tokens=128).chunk_file(DOC))


def test_cache_means_reingesting_costs_nothing(tmp_path):
    llm = Writer()
    first = Chunker(contextualize=llm, context_cache=tmp_path).chunk_file(DOC)
    calls = llm.calls
    assert calls == len(first) and (tmp_path / CACHE_FILE).is_file()
    again = Chunker(contextualize=llm, context_cache=tmp_path).chunk_file(DOC)
    assert llm.calls == calls and [c.to_dict() for c in again] == [c.to_dict() for c in first]
    rows = sqlite3.connect(tmp_path / CACHE_FILE).execute("SELECT COUNT(*) FROM contexts").fetchone()
    assert rows[0] == len({c.text for c in first})
    # another document (or a changed one) is asked again; unchanged chunks of it are not
    changed = DOC.read_text() + "\n\nA new closing paragraph.\n"
    Chunker(contextualize=llm, context_cache=tmp_path).chunk_text(changed, format="markdown")
    assert llm.calls > calls


def test_sentence_is_cut_at_a_word_or_dropped_to_fit():
    words = " ".join(f"word{i}" for i in range(200)) + "."
    chunker = Chunker(max_tokens=64, contextualize=Writer(answer=words), context_tokens=8)
    chunks = check_1235(DOC.read_bytes(), str(DOC), chunker)
    for c in chunks:
        assert c.tokens <= 64
        extra = c.context.split("\n")[-1]
        assert extra.startswith("word0") or "word0" not in c.context
        assert extra == words[:len(extra)] and (len(extra) == len(words) or words[len(extra)] == " ")
    assert chunker.stats["truncated"] > 0


def test_failing_llm_loses_no_content_and_caches_nothing(tmp_path):
    broken = Writer(answer=TimeoutError("slow"))
    chunker = Chunker(contextualize=broken, context_cache=tmp_path)
    chunks = check_1235(DOC.read_bytes(), str(DOC), chunker)
    plain = Chunker(max_tokens=256 - 64).chunk_file(DOC)
    assert [(c.start, c.end, c.context) for c in chunks] == [(p.start, p.end, p.context)
                                                            for p in plain]
    assert chunker.stats["errors"] == chunker.stats["calls"] > 0
    llm = Writer()
    Chunker(contextualize=llm, context_cache=tmp_path).chunk_file(DOC)
    assert llm.calls == len(chunks)  # nothing was cached by the failed run


def test_llm_option_shared_with_the_llm_strategy():
    chunker = Chunker(strategy="structure", llm=Writer(), contextualize=True)
    assert chunker.contextualizer is not None


@pytest.mark.parametrize("kw, match", [
    ({"contextualize": True}, "needs an llm"),
    ({"context_cache": "x"}, "only with contextualize"),
    ({"contextualize": Writer(), "context_tokens": 0}, "context_tokens"),
    ({"contextualize": Writer(), "max_tokens": 32, "context_tokens": 30}, "context_tokens"),
    ({"contextualize": "nope"}, "not an LLM"),
])
def test_bad_options(kw, match):
    with pytest.raises(ConfigError, match=match):
        Chunker(**kw)


def test_first_sentence():
    assert first_sentence("  This is it.\nMore text. ") == "This is it."
    assert first_sentence("No full stop\nat all") == "No full stop at all"
    assert first_sentence("   ") == ""


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(paras=st.lists(PARA, min_size=1, max_size=10), answer=st.text(max_size=400),
       strategy=st.sampled_from(["structure", "sentence", "fixed"]))
def test_invariants_hold_with_any_answer(paras, answer, strategy):
    chunker = Chunker(max_tokens=48, strategy=strategy, contextualize=Writer(answer=answer),
                      context_tokens=16)
    check_1235("\n\n".join(paras).encode(), "gen.txt", chunker, "text")
