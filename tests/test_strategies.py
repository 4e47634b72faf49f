"""Chunking strategies: the sentence splitter, each strategy's contract (invariants 1, 2, 3, 5
for all; 4 too for `structure` and `semantic`) on fixtures and generated text, and the
behaviour specific to each (token windows, semantic breakpoints, LLM answers and fallbacks)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

from chunkwise import ConfigError
from chunkwise.chunking.api import CHUNKER_VERSION, Chunker, parse_bytes
from chunkwise.sizing.boundaries import token_starts
from chunkwise.text.sentences import sentence_spans
from chunkwise.sizing.sizers import MAX_CHARS_PER_TOKEN
from chunkwise.chunking.strategies import SemanticOptions
from chunkwise.chunking.strategies import semantic as semantic_module
from chunkwise.chunking.strategies.llm import parse_answer

from conftest import FIXTURES
from contract import check_contract
from test_contract_properties import PARA, markdown_docs
from test_fitter import _words

FIXTURE_FILES = sorted(p for p in FIXTURES.iterdir() if p.name != "SOURCES.md")


# -- fakes ----------------------------------------------------------------------------------
def bag_of_words(texts):
    """A deterministic embedder: hashed word counts (texts sharing words are close)."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1
        out[i, 0] += 0.01  # never the zero vector
    return out


class CountingEmbedder:
    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return bag_of_words(texts)


class ScriptedLLM(CustomLLM):
    """Answers from a script (a function of the prompt); counts its calls."""

    script: Any = None
    delay: float = 0.0
    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        answer = self.script(prompt) if callable(self.script) else self.script
        if isinstance(answer, BaseException):
            raise answer
        return CompletionResponse(text=answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any):
        yield self.complete(prompt)


def planner(prompt: str) -> str:
    """A valid answer: a new chunk whenever ~70% of the budget is used (from the sizes the
    prompt lists)."""
    import re

    budget = int(re.search(r"at most (\d+) tokens", prompt).group(1))
    sizes = [int(m) for m in re.findall(r"^\[\d+\] \((\d+) tokens\)", prompt, re.M)]
    starts, total = [], 0
    for i, n in enumerate(sizes, 1):
        if total and total + n > budget * 0.7:
            starts.append(i)
            total = 0
        total += n
    return ", ".join(map(str, starts)) or "none"


class Planner(ScriptedLLM):
    """For the CLI (`--llm test_strategies:Planner`)."""

    script: Any = planner


# -- helpers --------------------------------------------------------------------------------
def check_1235(data: bytes, source: str, chunker: Chunker, fmt: str | None = None) -> list:
    """Invariants 1, 2, 3 and 5 (strategies that ignore structure are exempt from 4)."""
    doc = parse_bytes(data, source=source, format=fmt)
    chunks = chunker.chunk_document(doc)
    again = chunker.chunk_document(parse_bytes(data, source=source, format=fmt))
    assert [c.to_dict() for c in chunks] == [c.to_dict() for c in again], "5: not deterministic"
    assert len({c.id for c in chunks}) == len(chunks), "5: duplicate ids"
    text, covered, prev_end, prev_start = doc.text, bytearray(len(doc.text)), 0, -1
    for c in chunks:
        assert c.text == text[c.start:c.end] and c.text.strip(), "1: not exact"
        assert c.start >= prev_start, "1: out of order"
        if chunker.overlap == 0:
            assert c.start >= prev_end, "1: overlap"
        prev_start, prev_end = c.start, c.end
        assert c.tokens == chunker.sizer.count(c.embed_text) <= chunker.max_tokens, "2: budget"
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    lost = [i for i, ch in enumerate(text) if not covered[i] and not ch.isspace()]
    assert not lost, f"3: {len(lost)} characters lost, first at {lost[0]}"
    return chunks


def chunkers(strategy: str, **extra) -> list[Chunker]:
    return [Chunker(max_tokens=64, strategy=strategy, **extra),
            Chunker(max_tokens=128, tokenizer="cl100k_base", strategy=strategy, **extra),
            Chunker(max_tokens=40, tokenizer="chars", strategy=strategy, **extra),
            Chunker(max_tokens=96, overlap=16, strategy=strategy, **extra)]


def spans(chunks) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunks]


# -- the sentence splitter ------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("Mr. Smith paid $3.50 at 5 p.m. yesterday. He left! Did he? Yes... I think so.",
     ["Mr. Smith paid $3.50 at 5 p.m. yesterday.", "He left!", "Did he?", "Yes...",
      "I think so."]),
    ("See https://example.com/a.b?x=1. Then e.g. the next one. J. R. R. Tolkien wrote it.",
     ["See https://example.com/a.b?x=1.", "Then e.g. the next one.",
      "J. R. R. Tolkien wrote it."]),
    ("The U.S. Army uses v2.0 (see Fig. 3). Smith et al. agree. Pi is 3.14159. Done.",
     ["The U.S. Army uses v2.0 (see Fig. 3).", "Smith et al. agree.", "Pi is 3.14159.",
      "Done."]),
    ('He said "Stop." Then he left. "Wow!" she said. 日本語です。次の文。',
     ['He said "Stop."', "Then he left.", '"Wow!" she said.', "日本語です。", "次の文。"]),
    ("# Title\nSome text\n- item one\n- item two\n\n1. First item\n2. Second item",
     ["# Title", "Some text", "- item one", "- item two", "1. First item", "2. Second item"]),
    ("In 1999. Then came 2000. I said no. Then he did.",
     ["In 1999.", "Then came 2000.", "I said no.", "Then he did."]),
])
def test_sentence_splitter(text, expected):
    assert [text[a:b] for a, b in sentence_spans(text)] == expected


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?…\n\t\"')。e.g1U.SMr")), max_size=300),
       st.integers(0, 20), st.integers(0, 20))
def test_sentence_spans_tile_the_range(text, lo, cut):
    end = max(lo, len(text) - cut)
    got = sentence_spans(text, lo, end)
    prev = lo
    for a, b in got:
        assert prev <= a < b <= end and text[a:b] == text[a:b].strip()
        assert not text[prev:a].strip()
        prev = b
    assert not text[prev:end].strip()


# -- options, ids ---------------------------------------------------------------------------
def test_structure_fingerprint_is_unchanged():
    """`structure` keeps the ids it had before strategies existed."""
    for kw, spec in [({}, "minilm|256|0"), ({"max_tokens": 512, "tokenizer": "cl100k_base",
                                               "overlap": 10}, "cl100k_base|512|10")]:
        want = hashlib.blake2b(f"chunkwise-{CHUNKER_VERSION}|{spec}|structure".encode(),
                               digest_size=8)
        assert Chunker(**kw).fingerprint == want.hexdigest()


def test_chunker_pickles_with_its_strategy_and_options():
    """A process pool's workers get the Chunker rebuilt from its options (`__reduce__`): the
    same strategy, options and fingerprint, so the same chunks."""
    import pickle

    from chunkwise.chunking.strategies import StrategySpec

    data = (FIXTURES / "fastapi__features.md").read_bytes()
    for chunker in [Chunker(max_tokens=128, tokenizer="cl100k_base", overlap=16),
                    Chunker(strategy="fixed", overlap=8),
                    Chunker(strategy=StrategySpec("semantic", {"semantic_threshold": "stddev"}),
                            options=SemanticOptions(window=2), semantic_amount=2.0)]:
        copy = pickle.loads(pickle.dumps(chunker))
        assert (copy.strategy, copy.fingerprint) == (chunker.strategy, chunker.fingerprint)
        if chunker.strategy != "semantic":  # (that one would load the embedding model)
            assert copy.chunk_bytes(data, source="f.md") == chunker.chunk_bytes(data, source="f.md")


def test_reserve_sizes_chunks_to_what_is_left_and_is_part_of_the_id():
    """`reserve` tokens are kept for metadata the caller embeds: the spans are those of the
    smaller budget, the ids (fingerprint) say the options differ."""
    data = (FIXTURES / "fastapi__features.md").read_bytes()
    for kw in ({}, {"tokenizer": "cl100k_base", "overlap": 8}, {"strategy": "sentence"}):
        reserved = Chunker(max_tokens=128, reserve=40, **kw)
        smaller = Chunker(max_tokens=88, **kw)
        got, want = (c.chunk_bytes(data, source="f.md") for c in (reserved, smaller))
        assert [(c.start, c.end, c.context, c.tokens) for c in got] == [
            (c.start, c.end, c.context, c.tokens) for c in want]
        assert max(c.tokens for c in got) <= 88
        assert reserved.fingerprint not in (smaller.fingerprint,
                                            Chunker(max_tokens=128, **kw).fingerprint)
        assert not {c.id for c in got} & {c.id for c in want}
    assert Chunker(reserve=0).fingerprint == Chunker().fingerprint
    assert Chunker(max_tokens=32, reserve=16).max_tokens == 32


@pytest.mark.parametrize("kw", [{"reserve": -1}, {"reserve": 241}, {"reserve": 1.5},
                                {"reserve": True}, {"max_tokens": 64, "reserve": 40,
                                                    "overlap": 12}])
def test_reserve_is_validated(kw):
    with pytest.raises(ConfigError, match="reserve"):
        Chunker(**kw)


def test_ids_are_deterministic_and_differ_between_strategies():
    data = (FIXTURES / "fastapi__features.md").read_bytes()
    llm = ScriptedLLM(script=planner)
    ids = {}
    for strategy, extra in [("structure", {}), ("fixed", {}), ("sentence", {}),
                            ("recursive", {}), ("semantic", {"embedder": bag_of_words}),
                            ("llm", {"llm": llm})]:
        first = Chunker(strategy=strategy, **extra).chunk_bytes(data, source="f.md")
        again = Chunker(strategy=strategy, **extra).chunk_bytes(data, source="f.md")
        assert [c.id for c in first] == [c.id for c in again]
        ids[strategy] = {c.id for c in first}
    for a in ids:
        for b in ids:
            assert a == b or not ids[a] & ids[b], (a, b)
    other = Chunker(strategy="semantic", embedder=bag_of_words, semantic_window=2)
    assert other.fingerprint != Chunker(strategy="semantic", embedder=bag_of_words).fingerprint


@pytest.mark.parametrize("kw, match", [
    ({"strategy": "nope"}, "unknown strategy"),
    ({"strategy": "semantic", "semantic_threshold": "median"}, "semantic_threshold"),
    ({"strategy": "semantic", "semantic_amount": 120}, "semantic_amount"),
    ({"strategy": "semantic", "semantic_threshold": "stddev", "semantic_amount": -1},
     "semantic_amount"),
    ({"strategy": "semantic", "semantic_window": 0}, "semantic_window"),
    ({"strategy": "semantic", "semantic_window": 2.5}, "semantic_window"),
    ({"strategy": "semantic", "embedder": 42}, "embedder"),
    ({"strategy": "fixed", "semantic_window": 2}, "only for strategy='semantic'"),
    ({"strategy": "llm"}, "needs an llm"),
    ({"strategy": "llm", "llm": "no_such_module:LLM"}, "cannot load LLM"),
    ({"strategy": "llm", "llm": object()}, "not an LLM"),
    ({"strategy": "fixed", "llm": ScriptedLLM(script="1")}, "only for strategy='llm'"),
    ({"strategy": "llm", "llm": ScriptedLLM(script="1"), "llm_timeout": 0}, "llm_timeout"),
])
def test_bad_options_raise_config_error(kw, match):
    with pytest.raises(ConfigError, match=match):
        Chunker(**kw)


# -- every strategy on every fixture ---------------------------------------------------------
@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("strategy", ["fixed", "sentence", "recursive"])
def test_baselines_on_fixtures(path, strategy):
    for chunker in chunkers(strategy):
        chunks = check_1235(path.read_bytes(), str(path), chunker)
        assert chunks


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_semantic_on_fixtures_respects_structure(path):
    for chunker in chunkers("semantic", embedder=bag_of_words)[:3]:
        check_contract(path.read_bytes(), str(path), chunker)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_llm_on_fixtures(path):
    for chunker in chunkers("llm", llm=ScriptedLLM(script=planner))[:2]:
        check_1235(path.read_bytes(), str(path), chunker)
        stats = chunker.stats
        if path.suffix in (".json", ".jsonl", ".yaml", ".toml", ".ipynb"):
            # `planner` fills 70% of the budget and counts no context: a key or heading path
            # (file name first) can take more than the rest at 64 tokens; the strategy then
            # keeps the structure chunks, as it should
            assert stats["accepted"] + stats.get("fallback: over budget", 0) == stats["calls"]
            assert stats["accepted"] > 0
        else:
            assert stats["accepted"] == stats["calls"] > 0


# -- Hypothesis: invariants 1, 2, 3, 5 for each strategy on generated text ------------------
PROPS = settings(max_examples=25, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
STRATEGY_CHUNKERS = {
    "fixed": chunkers("fixed"),
    "sentence": chunkers("sentence"),
    "recursive": chunkers("recursive"),
    "semantic": chunkers("semantic", embedder=bag_of_words),
    "llm": chunkers("llm", llm=ScriptedLLM(script=planner)),
    "llm-garbage": chunkers("llm", llm=ScriptedLLM(script="Split it after the intro, I think.")),
}


@PROPS
@given(doc=markdown_docs(), name=st.sampled_from(sorted(STRATEGY_CHUNKERS)),
       which=st.integers(0, 3))
def test_markdown_invariants(doc, name, which):
    chunker = STRATEGY_CHUNKERS[name][which]
    check_1235(doc.encode("utf-8"), "gen.md", chunker, "markdown")
    if name == "semantic" and chunker.overlap == 0:
        check_contract(doc.encode("utf-8"), "gen.md", chunker, "markdown")  # and 4


@PROPS
@given(paras=st.lists(PARA, min_size=1, max_size=20), name=st.sampled_from(sorted(STRATEGY_CHUNKERS)),
       which=st.integers(0, 3))
def test_text_invariants(paras, name, which):
    chunker = STRATEGY_CHUNKERS[name][which]
    check_1235("\n\n".join(paras).encode("utf-8"), "gen.txt", chunker, "text")


# -- fixed ----------------------------------------------------------------------------------
def test_fixed_windows_are_full_and_overlap_by_tokens():
    text = "abcdefghij" * 50  # no whitespace: chunks are exact character windows
    chunks = Chunker(strategy="fixed", tokenizer="chars", max_tokens=40).chunk_text(text)
    assert [len(c.text) for c in chunks] == [40] * 12 + [20]
    chunks = Chunker(strategy="fixed", tokenizer="chars", max_tokens=40,
                     overlap=10).chunk_text(text)
    assert all(b.start == a.end - 10 for a, b in zip(chunks, chunks[1:]))
    assert all(c.tokens == 40 for c in chunks[:-1])


@pytest.mark.parametrize("tokenizer", ["cl100k_base", "o200k_base", "minilm"])
def test_fixed_cuts_at_token_boundaries_never_inside_a_character(tokenizer):
    text = "日本語のテキスト😀🇫🇷éè" * 300 + "naïve café " * 200
    chunker = Chunker(strategy="fixed", tokenizer=tokenizer, max_tokens=32)
    chunks = check_1235(text.encode(), "u.txt", chunker, "text")
    starts = set(token_starts(tokenizer)(text)) | {0, len(text)}
    for c in chunks:  # at a token start, or one trimmed of its whitespace
        c.text.encode("utf-8")  # whole characters (no lone surrogate)
        assert c.start in starts or text[c.start - 1].isspace(), c.start
        assert c.end in starts or text[c.end].isspace(), c.end
    # windows are nearly full: fixed size, not sentence packing
    assert sum(c.tokens for c in chunks[:-1]) / (len(chunks) - 1) > 32 * 0.85


# -- every strategy -------------------------------------------------------------------------
SPARSE_RUN = "x" * 30_000  # to WordPiece one [UNK] token: any budget holds it in tokens


@pytest.mark.parametrize("strategy, extra", [
    ("structure", {}), ("fixed", {}), ("sentence", {}), ("recursive", {}),
    ("semantic", {"embedder": bag_of_words}), ("llm", {"llm": ScriptedLLM(script=lambda p: "[1]")}),
    ("structure", {"overlap": 8}), ("fixed", {"overlap": 8}),
])
def test_text_sparse_in_tokens_is_still_cut(strategy, extra):
    """A chunk never holds more than MAX_CHARS_PER_TOKEN characters per budget token, even
    where the text costs almost no tokens (a 50 MB line without a space was one chunk)."""
    md = (f"# Sparse\n\nA sentence before it. {SPARSE_RUN}\n\nA short paragraph.\n\n"
          f"## Next\n\nWords, then {SPARSE_RUN[:9000]} and words.\n").encode()
    chunker = Chunker(max_tokens=64, strategy=strategy, **extra)
    check = check_contract if strategy in ("structure", "semantic") and not chunker.overlap \
        else check_1235
    chunks = check(md, "sparse.md", chunker, "markdown")
    cap = 64 * MAX_CHARS_PER_TOKEN
    assert max(len(c.text) for c in chunks) <= cap
    assert sum("x" * 100 in c.text for c in chunks) >= (30_000 + 9_000) // cap
    assert any(c.text.startswith("A short paragraph.") for c in chunks)


# -- sentence, recursive --------------------------------------------------------------------
def test_sentence_strategy_keeps_sentences_whole():
    sentences = [f"Sentence number {i} says e.g. that Mr. Smith paid $3.{i:02d} today." for i in
                 range(60)]
    text = " ".join(sentences)
    chunks = Chunker(strategy="sentence", max_tokens=64).chunk_text(text)
    for c in chunks:
        assert c.text.startswith("Sentence number") and c.text.endswith("today.")
    assert sum(c.text.count("Sentence number") for c in chunks) == 60


def test_sentence_longer_than_budget_falls_back_to_words():
    text = "Short one. " + " ".join(f"word{i}" for i in range(400)) + ". Another short one."
    chunks = check_1235(text.encode(), "s.txt", Chunker(strategy="sentence", max_tokens=32), "text")
    assert chunks[0].text.startswith("Short one.")
    assert all(c.text.split()[0].startswith(("word", "Short", "Another")) for c in chunks)
    assert chunks[-1].text.endswith("Another short one.")


def test_recursive_ignores_structure_but_prefers_paragraphs():
    md = "\n\n".join(f"## Heading {i}\n\nParagraph {i} has a few words." for i in range(20))
    structure = Chunker(max_tokens=64).chunk_text(md, format="markdown")
    recursive = Chunker(strategy="recursive", max_tokens=64).chunk_text(md, format="markdown")
    assert len(recursive) < len(structure) or spans(recursive) != spans(structure)
    for c in recursive:  # cuts fall between paragraphs
        assert c.text.startswith("## Heading") or c.text.startswith("Paragraph")
    assert recursive[1].context.startswith("Heading")  # the path of the section it starts in


# -- semantic -------------------------------------------------------------------------------
TOPIC_A = [f"Cats purr and cats nap and cats chase mice number {i}." for i in range(12)]
TOPIC_B = [f"Rockets burn fuel and rockets reach orbit on flight {i}." for i in range(12)]


def test_semantic_cuts_at_the_topic_change():
    text = " ".join(TOPIC_A + TOPIC_B)  # one paragraph: structure cuts only at the budget
    chunker = Chunker(strategy="semantic", embedder=bag_of_words, max_tokens=256)
    chunks = check_contract(text.encode(), "t.txt", chunker, "text")
    boundary = text.index("Rockets")
    assert any(c.start == boundary for c in chunks)
    assert all(c.end <= boundary or c.start >= boundary for c in chunks)
    structure = Chunker(max_tokens=256).chunk_text(text)
    assert not any(c.start == boundary for c in structure)  # so this is the embedder's doing


@pytest.mark.parametrize("threshold, amount", [("percentile", 80), ("stddev", 1), ("iqr", 1),
                                               ("gradient", 80)])
def test_semantic_thresholds(threshold, amount):
    """Three topic changes in 24 sentences that would fit one chunk: each method finds them."""
    text = "\n\n".join([" ".join(TOPIC_A[:6]), " ".join(TOPIC_B[:6]), " ".join(TOPIC_A[6:]),
                        " ".join(TOPIC_B[6:])])
    chunker = Chunker(strategy="semantic", embedder=bag_of_words, semantic_threshold=threshold,
                      semantic_amount=amount, max_tokens=512)
    chunks = check_contract(text.encode(), "t.txt", chunker, "text")
    for c in chunks:  # never a chunk mixing the topics
        assert not ("Cats" in c.text and "Rockets" in c.text), threshold
    assert len(chunks) == 4
    assert len(Chunker(max_tokens=512).chunk_text(text)) == 1  # structure alone: one chunk


def test_semantic_breakpoint_functions():
    d = np.array([0.1, 0.12, 0.11] * 10)
    d[17] = 0.9
    for method, amount in SemanticOptions.THRESHOLDS.items():
        assert list(np.flatnonzero(semantic_module.breakpoints(d, method, amount))) == [17], method
    assert not semantic_module.breakpoints(d, "percentile", 100).any()
    assert semantic_module.breakpoints(d, "percentile", 0).sum() == 20  # all above the minimum
    assert not semantic_module.breakpoints(np.array([0.5]), "percentile", 50).any()


def test_semantic_embeds_each_sentence_once_in_bounded_calls():
    sentences = [f"Sentence {i} talks about {'cats' if i // 40 % 2 else 'rockets'} {i}." for i
                 in range(1000)]
    text = "\n\n".join(" ".join(sentences[i:i + 25]) for i in range(0, 1000, 25))
    embed = CountingEmbedder()
    chunker = Chunker(strategy="semantic", embedder=embed, semantic_window=3)
    check_contract(text.encode(), "t.txt", chunker, "text")
    first_run = [t for call in embed.calls[:len(embed.calls) // 2] for t in call]
    assert len(first_run) == len(set(first_run))  # no sentence embedded twice
    stats = chunker.stats
    assert stats["documents"] == 2 and stats["embed_calls"] == len(embed.calls)
    assert stats["embedded"] == sum(map(len, embed.calls)) <= stats["sentences"]
    assert max(map(len, embed.calls)) <= semantic_module.MAX_CALL


def test_semantic_on_a_megabyte_stays_in_bounded_memory():
    para = " ".join(f"Line {i} of the poem speaks of {w} and more {w}." for i, w in
                    enumerate(["angels", "fire", "gardens", "serpents"] * 4))
    text = "\n\n".join(f"{para} Stanza {k}." for k in range(1_000_000 // len(para)))
    embed = CountingEmbedder()
    chunker = Chunker(strategy="semantic", embedder=embed)
    doc = parse_bytes(text.encode(), source="big.txt", format="text")
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    chunks = chunker.chunk_document(doc)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    assert len(text) >= 990_000 and chunks
    assert peak < 150 * 2**20, f"peak {peak / 2**20:.0f} MB"
    assert max(map(len, embed.calls)) <= semantic_module.MAX_CALL
    assert chunker.stats["embedded"] <= chunker.stats["sentences"]


def test_semantic_with_the_real_model():
    path = FIXTURES / "fastapi__features.md"
    chunker = Chunker(strategy="semantic", max_tokens=128)
    chunks = check_contract(path.read_bytes(), str(path), chunker)
    stats = chunker.stats
    assert stats["embed_calls"] >= 2 and 0 < stats["embedded"] <= stats["sentences"]
    structure = Chunker(max_tokens=128).chunk_file(path)
    assert spans(chunks) != spans(structure)


# -- llm ------------------------------------------------------------------------------------
SECTION = "# Guide\n\n" + " ".join(TOPIC_A[:4] + TOPIC_B[:4])


def llm_chunks(script, **kw):
    llm = ScriptedLLM(script=script, **{k: kw.pop(k) for k in ("delay",) if k in kw})
    chunker = Chunker(strategy="llm", llm=llm, **{"max_tokens": 256, **kw})
    return check_1235(SECTION.encode(), "g.md", chunker, "markdown"), chunker, llm


def test_llm_split_points_are_followed():
    """Pieces: the heading with the first sentence, then one sentence each."""
    chunks, chunker, llm = llm_chunks("5")
    assert llm.calls == 2 and chunker.stats["accepted"] == 2  # two runs (determinism check)
    assert [c.text for c in chunks] == ["# Guide\n\n" + " ".join(TOPIC_A[:4]), " ".join(TOPIC_B[:4])]
    chunks, _, _ = llm_chunks("Answer: [3, 5, 8]")
    assert [c.text for c in chunks] == ["# Guide\n\n" + " ".join(TOPIC_A[:2]), " ".join(TOPIC_A[2:4]),
                                        " ".join(TOPIC_B[:3]), TOPIC_B[3]]


@pytest.mark.parametrize("answer, reason", [
    ("I would split after the cats.", "malformed"),
    ("", "malformed"),
    ("5, 3", "out of order"),
    ("3, 3", "out of order"),
    ("9", "malformed"),  # no such piece
    (RuntimeError("rate limited"), "error"),
])
def test_llm_bad_answers_fall_back_to_structure(answer, reason):
    chunks, chunker, _ = llm_chunks(answer)
    structure = Chunker(max_tokens=256).chunk_text(SECTION, format="markdown")
    assert spans(chunks) == spans(structure)
    assert chunker.stats[f"fallback: {reason}"] == 2


def test_llm_over_budget_answer_falls_back():
    chunks, chunker, _ = llm_chunks("none", max_tokens=64)  # one chunk would not fit 64
    structure = Chunker(max_tokens=64).chunk_text(SECTION, format="markdown")
    assert spans(chunks) == spans(structure)
    assert chunker.stats["fallback: over budget"] > 0


def test_llm_timeout_falls_back_quickly():
    t = time.monotonic()
    chunks, chunker, _ = llm_chunks("5", delay=3.0, llm_timeout=0.2)
    assert time.monotonic() - t < 2.5
    assert chunker.stats["fallback: timeout"] == 2
    assert spans(chunks) == spans(Chunker(max_tokens=256).chunk_text(SECTION, format="markdown"))


def test_parse_answer():
    assert parse_answer("3, 7", 9) == [0, 2, 6]
    assert parse_answer("```\n1, 4\n```", 5) == [0, 3]
    assert parse_answer("None.", 5) == [0]
    assert parse_answer("Splits: [2]", 2) == [0, 1]
    assert parse_answer("2 and 4", 5) == "malformed"
    assert parse_answer("4, 2", 5) == "out of order"
    assert parse_answer("0, 2", 5) == "malformed"


# -- CLI ------------------------------------------------------------------------------------
def run_cli(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FIXTURES.parent / "tests"),
                                                        os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "chunkwise.cli", *map(str, args)],
                          capture_output=True, text=True, env=env)


def test_cli_strategy_prints_one_note_and_clean_jsonl():
    path = FIXTURES / "fastapi__features.md"
    p = run_cli("chunk", path, "--jsonl", "--strategy", "fixed", "--max-tokens", "64")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("\n") == 1 and "ignores document structure" in p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert rows and all(r["tokens"] <= 64 for r in rows)
    p = run_cli("chunk", path, "--jsonl", "--strategy", "structure")
    assert p.returncode == 0 and p.stderr == ""


def test_cli_semantic_and_llm_flags():
    path = FIXTURES / "fastapi__features.md"
    p = run_cli("chunk", path, "--jsonl", "--strategy", "semantic", "--semantic-threshold",
                "iqr", "--semantic-amount", "1", "--semantic-window", "2", "--max-tokens", "128")
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert all(json.loads(x)["tokens"] <= 128 for x in p.stdout.splitlines())
    p = run_cli("chunk", path, "--strategy", "semantic", "--semantic-window", "0")
    assert p.returncode == 2 and "semantic_window" in p.stderr
    p = run_cli("chunk", path, "--jsonl", "--strategy", "llm", "--llm", "test_strategies:Planner")
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("\n") == 1  # the note; every answer was accepted
    assert json.loads(p.stdout.splitlines()[0])["text"]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=".!?…。！？\"'”’»)]」』 \nabAB1", max_size=40))
def test_sentence_terminator_pattern_matches_the_plain_one(text):
    """The terminator regex is written for speed; it finds exactly what the plain pattern
    `[.!?…]+[closers]*(?=\\s)|[。！？]+[CJK closers]*` finds."""
    import re

    from chunkwise.text import sentences

    plain = re.compile(r"(?:[.!?…]+[\"'”’»)\]]*(?=\s)|[。！？]+[」』”’)\]]*)")
    assert ([m.span() for m in sentences._END.finditer(text)]
            == [m.span() for m in plain.finditer(text)])



@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="# \t\n-*+•>|`~1.!?…。)\"'abA", max_size=50), st.data())
def test_sentence_cuts_shortcut_changes_nothing(text, data):
    """`sentence_cuts` answers at once for a span with no newline and no terminator; on
    any range of any text that answer is the full computation's."""
    from chunkwise.text import sentences

    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert sentences.sentence_cuts(text, start, end) == sentences._cuts(text, start, end)


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="# \t\n-*+•>|`~1.)ab", max_size=50), st.data())
def test_hard_breaks_match_the_plain_pattern(text, data):
    """`hard_breaks` uses three fast patterns; on any range of any text it finds exactly
    the match ends of the single plain pattern."""
    import re

    from chunkwise.text import sentences

    plain_hard = re.compile(
        r"\n[ \t]*\n"  # blank line
        r"|^[ \t]{0,3}#{1,6}(?:[ \t][^\n]*)?$"  # a Markdown heading line: its end
        r"|\n(?=[ \t]*(?:[-*+•][ \t]|\d{1,3}[.)][ \t]|#{1,6}[ \t]|>|\||```|~~~))",
        re.M,
    )
    start = data.draw(st.integers(0, len(text) + 2))
    end = data.draw(st.integers(start, len(text) + 2))
    plain = {m.end() for m in plain_hard.finditer(text, start, end)}
    assert sentences.hard_breaks(text, start, end) == plain


#: what the splitter's fast paths must agree with: letters (an abbreviation, an acronym, an
#: initial, lower case), digits, terminators, closers and openers, `#` (heading lines), and
#: whitespace of every kind `\s` and `str.isspace` know (newline, tab, U+00A0, U+2003, U+001C)
_SPLITTER_ALPHABET = "aeAE.!?…。\"'”)(« \n\t\u00a0\u2003\x1c#-19"


def test_regex_whitespace_is_str_isspace():
    """The splitter's hand-written walks test `str.isspace` where its patterns say `\\s`:
    the two agree on every code point."""
    import re

    space = re.compile(r"\s")
    assert [c for c in range(0x110000) if bool(space.match(chr(c))) != chr(c).isspace()] == []


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=_SPLITTER_ALPHABET, max_size=30), st.data())
def test_word_before_matches_the_plain_pattern(text, data):
    """`_word_before` walks back where the splitter used to search `\\S+$` (at every
    position of the window): on any window of any text, the same span."""
    import re

    from chunkwise.text import sentences

    plain = re.compile(r"\S+$")
    t0 = data.draw(st.integers(0, len(text)))
    lo = data.draw(st.integers(0, t0))
    m = plain.search(text, lo, t0)
    assert sentences._word_before(text, lo, t0) == (m.span() if m else (t0, t0))


def _plain_cuts(text: str, start: int, end: int) -> list[int]:
    """The sentence splitter's cuts as it computed them before its fast paths (a regex search
    for the word before a dot, every heading pattern run, a filtered sort): the reference."""
    import re

    from chunkwise.text import sentences as s

    word_before = re.compile(r"\S+$")

    def ends_sentence(t0: int, t1: int) -> bool:
        nxt = t1
        while nxt < end and text[nxt].isspace():
            nxt += 1
        if nxt >= end:
            return True
        following = text[nxt]
        if following in s._OPENERS and nxt + 1 < end:
            following = text[nxt + 1]
        if following.islower():
            return False
        if text[t0] != "." or (t1 - t0 > 1 and text[t0 + 1] == "."):
            return True
        m = word_before.search(text, max(0, t0 - 40), t0)
        word = m.group().lstrip(s._OPENERS) if m else ""
        if not word:
            return True
        if word.lower() in s.ABBREVIATIONS or s._ACRONYM.fullmatch(word + "."):
            return False
        if word.lower() in s.NUMBER_ABBREVIATIONS and (text[nxt].isdigit()
                                                        or text[nxt] in "(["):
            return False
        if len(word) == 1 and word.isupper():
            return False
        if word.isdigit() and len(word) <= 3:
            line_start = text.rfind("\n", 0, m.start()) + 1
            if not text[line_start:m.start()].strip():
                return False
        return True

    cuts = {m.end() for m in s._BREAK.finditer(text, start, end)}
    cuts.update(m.end() for m in s._HEADING_AFTER_NEWLINE.finditer(text, start, end))
    if start < min(end, len(text)) and (start == 0 or text[start - 1] == "\n"):
        head = s._HEADING_HERE.match(text, start, end)
        if head:
            cuts.add(head.end())
    cuts.update(m.end() for m in s._END.finditer(text, start, end)
                if ends_sentence(m.start(), m.end()))
    return sorted(c for c in cuts if start < c < end)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=".!?\"')]…。 \n\tab", max_size=40), st.data())
def test_ascii_terminator_patterns_find_the_matches_of_the_one_pattern(text, data):
    """On ASCII text the splitter finds terminators with one literal-led pattern per
    terminator; on any range of any text, `_terminators` gives the spans `_END` gives."""
    from chunkwise.text import sentences

    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert (sorted(sentences._terminators(text, start, end))
            == [m.span() for m in sentences._END.finditer(text, start, end)])


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.text(alphabet=_SPLITTER_ALPHABET, max_size=60),
                 st.text(alphabet=_SPLITTER_ALPHABET.encode("ascii", "ignore").decode(),
                         max_size=60)),
       st.data())
def test_sentence_cuts_match_the_plain_splitter(text, data):
    """The splitter's fast paths (the walk back for the word before a dot, no heading
    pattern without a `#`, the patterns for ASCII text, one sort) change no cut: on any
    range of any text (ASCII or not), the cuts of the plain splitter."""
    from chunkwise.text import sentences

    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    assert sentences._cuts(text, start, end) == _plain_cuts(text, start, end)


@pytest.mark.parametrize("words", [
    "Mr. Smith met Dr. Jones at 5 p.m. Then the U.S. Army came. J. R. R. Tolkien wrote it.",
    "See Fig. 3 and No. 4 here. It was approx. five. 1. First\n2. Second. End of it.",
    "\"Wow!\" he said. She left... Then? Yes. e.g. This one. word\n. Next",
])
def test_sentence_cuts_match_the_plain_splitter_on_prose(words):
    """The same on sentences written to reach every rule."""
    from chunkwise.text import sentences

    assert sentences._cuts(words, 0, len(words)) == _plain_cuts(words, 0, len(words))


def _assert_sentence_cuts_match(paths) -> None:
    from chunkwise.text import sentences
    from chunkwise.text.textio import decode

    for path in paths:
        text, _ = decode(path.read_bytes(), str(path))
        cuts = sentences._cuts(text, 0, len(text))
        assert cuts == _plain_cuts(text, 0, len(text)), path.name
        assert len(cuts) > 5, path.name


def test_sentence_cuts_match_the_plain_splitter_on_real_documents():
    """The same on whole real documents: the prose fixtures (and the corpus's books below)."""
    paths = [p for p in FIXTURE_FILES if p.suffix in (".md", ".txt", ".rst")]
    assert len(paths) >= 3
    _assert_sentence_cuts_match(paths)


def test_sentence_cuts_match_the_plain_splitter_on_the_corpus_books():
    from conftest import corpus_files

    _assert_sentence_cuts_match([p for p in corpus_files("text") if p.suffix == ".txt"])


# -- long spans: packed a window at a time --------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["minilm", "cl100k_base", "chars"]),
       st.sampled_from([16, 100]), st.sampled_from(["sentence", "recursive"]))
def test_baselines_pack_a_long_span_a_window_at_a_time_as_all_at_once(seed, name, budget,
                                                                      strategy):
    """Every span split through the windows, the smallest a budget allows (`_WINDOW` 1):
    the same chunks as its units packed all at once."""
    import random

    import chunkwise.chunking.fitter as fitter

    rng = random.Random(seed)
    text = _words(rng, rng.choice([500, 5000, 20000]))
    chunks = []
    with pytest.MonkeyPatch.context() as mp:
        for window in (1 << 60, 1):
            mp.setattr(fitter, "_WINDOW", window)
            chunker = Chunker(tokenizer=name, max_tokens=budget, strategy=strategy)
            chunks.append(chunker.chunk_text(text))
    assert chunks[0] == chunks[1]


@pytest.mark.parametrize("strategy", ["sentence", "recursive"])
def test_baselines_never_count_all_the_words_of_a_long_line_at_once(strategy):
    """A line of 100,000 words (no sentence end, no line break: the words are the units)
    is counted a window at a time (a 50 MB line took some 14 GB counted in one batch)."""
    import random

    from chunkwise.chunking.fitter import Budget
    from chunkwise.sizing.sizers import Sizer, get_sizer
    from chunkwise.chunking.strategies import NoOptions, Setup, simple
    from chunkwise.chunking.structure import build_tree

    rng = random.Random(5)
    vocabulary = ["".join(rng.choices("abcdefghij", k=rng.randint(1, 9))) for _ in range(999)]
    text = " ".join(rng.choices(vocabulary, k=100_000))
    real, batches = get_sizer("cl100k_base"), []

    def count_many(texts):
        batches.append(len(texts))
        return real.count_many(texts)

    spy = Sizer("spy", real.count, count_many, real.overhead)
    doc = parse_bytes(text.encode(), source="line.txt")
    setup = Setup(spy, "cl100k_base", 0)
    plan = getattr(simple, strategy)(setup, NoOptions()).plan(doc, Budget.of(512),
                                                              build_tree(doc))
    assert max(batches) < 50_000
    assert plan[0].start == 0 and plan[-1].end == len(text)
    assert all(p.end < q.start for p, q in zip(plan, plan[1:]))


@pytest.mark.parametrize("strategy", ["structure", "fixed", "sentence", "recursive", "semantic"])
def test_a_documents_section_tree_is_built_once(strategy, monkeypatch):
    """The chunker builds a document's tree once and hands it to the strategy and to
    assembly (views, parent sections): no strategy builds its own."""
    from chunkwise.chunking import api, fitter, structure
    from chunkwise.chunking.strategies import base, semantic

    built = []

    def counted(doc):
        built.append(doc.source)
        return structure.build_tree(doc)

    def refused(doc):
        raise AssertionError("a second tree")

    monkeypatch.setattr(api, "build_tree", counted)
    # the fitter and the section index take the root, required: they have no tree to build
    assert not hasattr(fitter, "build_tree") and not hasattr(base, "build_tree")
    monkeypatch.setattr(semantic, "build_tree", refused)  # (its `trace` of a document only)
    extra = {"embedder": bag_of_words} if strategy == "semantic" else {}
    chunker = Chunker(strategy=strategy, max_tokens=64, **extra)
    paths = [FIXTURES / name for name in ("fastapi__fastapi__concurrency.py",
                                          "jupyter__notebook__importing-notebooks.ipynb",
                                          "mkdocs-material__reference__data-tables.md")]
    chunks = [c for path in paths for c in chunker.chunk_file(path)]
    assert len(built) == len(paths)  # one tree a document
    assert chunks and all(c.parent is not None for c in chunks)
