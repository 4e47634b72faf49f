"""The span counter: counts from one document pass equal direct counts, always.

The anchor rules in `chunkwise.sizing.tokenindex` are a proof about the tokenizers' pre-token
regexes; these tests check the claim against the real tokenizers on real documents and on
strings built from the characters where the rules are delicate (newlines before `/`,
punctuation before newlines, Unicode spaces, special-token text, CJK, emoji).
"""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.chunking.structure import build_tree
from chunkwise.sizing.sizers import Sizer, get_sizer, minilm_tokenizer_path
from chunkwise.sizing.tokenindex import SpanCounter, embed_counter, span_counter

from conftest import FIXTURES

TOKENIZERS = ["cl100k_base", "o200k_base", "minilm"]
PIECES = ["a", "Zq", "9", "12345", " ", "  ", "\t", "\n", "\n\n", " \n", "\n ", ".", ",", "/",
          "'s", "'", "-", "|", "`", "#", "*", "é", "日本", "ς", "😀", "\u00a0", "\u2003",
          "\u2028", "\x0b", "\x0c", "\x1c", "<|endoftext|>", "[SEP]", "[UNK]", "word",
          "文", "。", "\u0301", "가", "ﬁ", "\U0002B820", "\U0002B920", "[", "]", "SEP]", "[MA",
          "+/", "_", "=="]
CONTEXTS = ["", "Guide > Install", "| a | b |\n|---|---|", "ends with slash /", "trailing ",
            "日本語"]
FILES = ["fastapi__features.md", "alice-in-wonderland.txt",
         "mkdocs-material__reference__data-tables.md"]


def _check_spans(name: str, text: str, rng: random.Random, n: int) -> None:
    sizer = get_sizer(name)
    counter = span_counter(sizer, text)
    assert counter.indexed
    for _ in range(n):
        a = rng.randrange(len(text) + 1)
        b = rng.randrange(a, min(len(text), a + rng.choice([4, 60, 600, 6000])) + 1)
        if rng.random() < 0.5:  # most spans the fitter asks about are whitespace-trimmed
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
        span = text[a:b]
        assert counter.span(a, b) == sizer.count(span), (name, a, b, span[:80])
        context = rng.choice(CONTEXTS)
        embed = f"{context}\n\n{span}" if context else span
        assert counter.embed(context, a, b) == sizer.count(embed), (name, context, span[:80])


@pytest.mark.parametrize("name", TOKENIZERS)
@pytest.mark.parametrize("fixture", FILES)
def test_spans_of_real_documents_count_exactly(name, fixture):
    text = (FIXTURES / fixture).read_text("utf-8").replace("\r\n", "\n")
    _check_spans(name, text, random.Random(fixture), 400)


@pytest.mark.parametrize("name", TOKENIZERS)
def test_spans_of_adversarial_strings_count_exactly(name):
    rng = random.Random(7)
    for _ in range(60):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 300)))
        _check_spans(name, text, rng, 60)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=80), st.data())
def test_any_span_counts_exactly(pieces, data):
    text = "".join(pieces)
    a = data.draw(st.integers(0, len(text)))
    b = data.draw(st.integers(a, len(text)))
    context = data.draw(st.sampled_from(CONTEXTS))
    for name in TOKENIZERS:
        sizer = get_sizer(name)
        counter = span_counter(sizer, text)
        assert counter.span(a, b) == sizer.count(text[a:b])
        embed = f"{context}\n\n{text[a:b]}" if context else text[a:b]
        assert counter.embed(context, a, b) == sizer.count(embed)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=40), min_size=1, max_size=6),
       st.data())
def test_embed_counter_counts_any_body_under_a_context_exactly(bodies, data):
    """`embed_counter` (the views' count: many bodies, few contexts) counts the context's
    share once and the body alone where the body's start is an anchor; either way exactly."""
    context = data.draw(st.sampled_from(CONTEXTS))
    for name in [*TOKENIZERS, "chars"]:
        sizer = get_sizer(name)
        embed = embed_counter(sizer)
        for pieces in bodies:
            body = "".join(pieces)
            whole = f"{context}\n\n{body}" if context else body
            assert embed(context, body) == sizer.count(whole), (name, context, body)


@pytest.mark.parametrize("name", TOKENIZERS)
def test_tile_estimates_are_close_to_stripped_counts(name):
    """Estimates only steer packing, but should be about the counts of the stripped tiles
    (they differ by the tokens the cuts split and the whitespace at a tile's end)."""
    text = (FIXTURES / "fastapi__features.md").read_text("utf-8")
    sizer = get_sizer(name)
    bounds = [0, *(m.end() for m in re.finditer(r"\n\s*\n", text)), len(text)]
    estimates = span_counter(sizer, text).estimates(bounds)
    exact = [sizer.count(text[a:b].strip()) for a, b in zip(bounds, bounds[1:])]
    assert all(type(e) is int for e in estimates)
    assert all(abs(e - x) <= 2 for e, x in zip(estimates, exact)), list(zip(estimates, exact))


def test_unproven_tokenizers_are_counted_directly(tmp_path):
    spec = json.loads(minilm_tokenizer_path().read_text("utf-8"))
    spec["pre_tokenizer"] = {"type": "Whitespace"}  # not the setup the anchors are proven for
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), "utf-8")
    sizer = get_sizer(str(path))
    counter = span_counter(sizer, "some text, here")
    assert not counter.indexed and type(counter) is SpanCounter
    assert counter.span(0, 9) == sizer.count("some text")
    # a custom sizer that reuses a built-in name is not trusted with the index either
    fake = Sizer("cl100k_base", len, lambda texts: [len(t) for t in texts])
    assert not span_counter(fake, "abc").indexed
    assert span_counter(get_sizer("chars"), "abc").span(0, 2) == 2


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("block", [64, 1000, 1 << 18])
def test_wordpiece_index_in_blocks_is_one_pass(name, block):
    """The minilm index encodes big texts in blocks cut at ASCII whitespace (bounded memory);
    the token ends are those of one encode of the whole text."""
    from tokenizers import Tokenizer

    from chunkwise.sizing.wordpiece_index import wordpiece_builder

    text = (FIXTURES / name).read_bytes().decode("utf-8", "replace")
    tok = Tokenizer.from_file(str(minilm_tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    whole = [e for _, e in tok.encode(text, add_special_tokens=False).offsets]
    ends = wordpiece_builder(str(minilm_tokenizer_path())).token_ends(text, block)
    assert ends.tolist() == whole


@pytest.mark.parametrize("name", TOKENIZERS)
@pytest.mark.parametrize("context", ["Guide > Tips", "ends with punctuation:", "ends with slash /"])
def test_a_span_whose_start_may_join_the_context_counts_exactly(name, context):
    """A span starting with `/` (a pymdownx `/// tip` block) may share a piece with the
    context's `\\n\\n` (o200k's punctuation runs take newlines and slashes): its first
    characters are encoded with the context, the rest is counted from the index."""
    text = "Intro words.\n\n/// tip | Note\n\nSome words here, then `code` and more.\n\n///\n" * 20
    sizer = get_sizer(name)
    counter = span_counter(sizer, text)
    for a in [m.start() for m in re.finditer("/", text)][:40]:
        for b in (a + 1, a + 3, a + 9, a + 40, len(text)):
            assert counter.embed(context, a, b) == sizer.count(f"{context}\n\n{text[a:b]}")


@pytest.fixture
def hf_encoded(monkeypatch):
    """Lengths of the texts that Hugging Face tokenizers loaded by the WordPiece index during
    the test are asked to encode."""
    import tokenizers

    from chunkwise.sizing.wordpiece_index import wordpiece_builder

    lengths: list[int] = []
    real = tokenizers.Tokenizer

    class Recording:
        def __init__(self, tok):
            self._tok = tok

        @classmethod
        def from_file(cls, path):
            return cls(real.from_file(path))

        def encode(self, text, *args, **kwargs):
            lengths.append(len(text))
            return self._tok.encode(text, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._tok, name)

    monkeypatch.setattr(tokenizers, "Tokenizer", Recording)
    wordpiece_builder.cache_clear()
    yield lengths
    monkeypatch.undo()
    wordpiece_builder.cache_clear()


def _one_pass_ends(text: str) -> list[int]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_tokenizer_path()))
    tok.no_truncation()
    tok.no_padding()
    return [e for _, e in tok.encode(text, add_special_tokens=False).offsets]


#: pieces of text without ASCII whitespace, where the index must cut inside words: runs of
#: letters longer than WordPiece's 100 characters, punctuation, added tokens' text (and their
#: parts), characters the normalizer drops, changes or isolates
UNSPACED = ["x" * 300, "Zq9" * 90, "a" * 50, "ab" * 80, "=", "+/", "[SEP]", "[UNK]", "[", "]",
            "SEP", "é", "\x01", "\u0301", "İ", "日本", "😀", "жё" * 70, "Ωμέγα" * 30,
            "가나" * 60, "ก" * 120, "ไทย", "﹏", "。", "\U0002B820", "\U0002B920", "_" * 3]


@pytest.mark.parametrize("block", [2, 8, 64, 1000])
def test_wordpiece_index_cut_inside_words_is_one_pass(block):
    """Without ASCII whitespace, blocks are cut after punctuation, or inside a run of letters
    and digits too long to be anything but one [UNK]: the token ends are still those of one
    encode of the whole text."""
    from chunkwise.sizing.wordpiece_index import wordpiece_builder

    rng = random.Random(block)
    build = wordpiece_builder(str(minilm_tokenizer_path()))
    for _ in range(150):
        text = "".join(rng.choice(UNSPACED + [" ", "\n"]) for _ in range(rng.randint(1, 60)))
        assert build.token_ends(text, block).tolist() == _one_pass_ends(text), text


@pytest.mark.parametrize("text", [
    "x" * 100_000,                                    # one word: a single [UNK]
    "=+" * 50_000,                                    # one token per character
    "".join(random.Random(1).choice("abcXYZ0129+/") for _ in range(100_000)),  # base64
    ("ab" * 60 + "[SEP]") * 800,                      # cuts next to added tokens' text
    "Zq9" * 30_000 + "[UNK]" + "é" * 5 + "y" * 20_000,
    "".join(random.Random(2).choice("абвгдеёжзий") for _ in range(100_000)),  # Cyrillic
    "日本語の文章" * 20_000,                           # ideographs: each a word of its own
    "가나다라" * 25_000 + "Ǆİß" * 5_000,               # letters the normalizer changes
])
def test_wordpiece_index_of_text_without_whitespace_encodes_bounded_blocks(text, hf_encoded):
    """A long text without ASCII whitespace is encoded in blocks of about the size asked
    for (at most 1.5 times it), not in one call: memory stays bounded."""
    from chunkwise.sizing.wordpiece_index import wordpiece_builder

    ends = wordpiece_builder(str(minilm_tokenizer_path())).token_ends(text, 1000)
    assert max(hf_encoded) <= 1500
    assert ends.tolist() == _one_pass_ends(text)


def test_wordpiece_cuts_keep_only_the_rules_the_tokenizer_keeps():
    """The rules of `_WordCuts` are probed on the tokenizer in use: a normalizer that does
    not isolate ideographs (as another `tokenizers` version might not) drops the cut after
    one, and the index is still one pass."""
    from tokenizers import Tokenizer, normalizers

    from chunkwise.sizing.wordpiece_index import _ASCII_PUNCT, _PUNCT_OR_CJK, _WordCuts

    tok = Tokenizer.from_file(str(minilm_tokenizer_path()))
    cuts = _WordCuts([], 100, True, False, cjk=True)
    assert cuts.checked(tok)._after is _PUNCT_OR_CJK
    tok.normalizer = normalizers.BertNormalizer(handle_chinese_chars=False)
    assert cuts.checked(tok)._after is _ASCII_PUNCT
    text = "日本語の文章" * 500
    assert cuts.first(text, 0, 10, 100) is None  # no punctuation, no long run of letters


#: pieces that make long tiktoken pieces (runs of letters, of punctuation, of spaces) or none
GAPPY = ["x" * 40, "ab" * 30, "Zq9", "=" * 60, "    " * 10, " ", "\n", "\n\n", ".", "/",
         "'s", "é", "日本", "😀", "word "]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tiktoken_index_with_gaps_counts_exactly(name, monkeypatch):
    """Stretches without anchors are left out of the tiktoken index (here from 16
    characters on): counts stay exact, and each estimate is the one of a full index or a
    lower bound of it over `enough`."""
    import chunkwise.sizing.tiktoken_index as ti

    rng = random.Random(name)
    sizer = get_sizer(name)
    gapped = 0
    for _ in range(120):
        text = "".join(rng.choice(GAPPY) for _ in range(rng.randint(1, 80)))
        full = span_counter(sizer, text)
        monkeypatch.setattr(ti, "_GAP", rng.choice([4, 16]))
        counter = span_counter(sizer, text)
        monkeypatch.undo()
        gapped += bool(counter._gaps)
        bounds = sorted({0, len(text), *(rng.randrange(len(text)) for _ in range(5))})
        enough = rng.choice([None, 3, 12])
        for got, want in zip(counter.estimates(bounds, enough=enough), full.estimates(bounds)):
            assert got == want or enough is not None and enough < got <= want
        for _ in range(20):
            a = rng.randrange(len(text) + 1)
            b = rng.randrange(a, len(text) + 1)
            assert counter.span(a, b) == sizer.count(text[a:b])
            assert counter.embed("Guide", a, b) == sizer.count(f"Guide\n\n{text[a:b]}")
    assert gapped > 60


def test_tiktoken_index_leaves_a_long_run_unencoded(monkeypatch, tiktoken_encoded):
    """A run of letters is one tiktoken piece, merged with work arrays of some 45 bytes a
    byte: the index leaves it out, the fitter splits it at characters counting only its
    pieces, and the chunks are those of a full index."""
    import chunkwise.sizing.tiktoken_index as ti
    from chunkwise.chunking.api import parse_bytes
    from chunkwise.chunking.fitter import Fitter

    doc = parse_bytes(b"Some words first.\n\n" + b"x" * 100_000 + b"\n\nAnd after.", source="r.txt")
    monkeypatch.setattr(ti, "_GAP", 4096)
    fitter = Fitter(get_sizer("cl100k_base"), 64)
    pieces = [(p.start, p.end, p.context, p.tokens) for p in fitter.fit(doc, build_tree(doc))]
    assert max(tiktoken_encoded) <= fitter.budget.max_chars and len(pieces) > 100
    monkeypatch.setattr(ti, "_GAP", 1 << 40)  # no gap: the whole run is encoded
    full = Fitter(get_sizer("cl100k_base"), 64).fit(doc, build_tree(doc))
    assert max(tiktoken_encoded) > 100_000
    assert pieces == [(p.start, p.end, p.context, p.tokens) for p in full]


@pytest.mark.parametrize("name", TOKENIZERS)
def test_token_starts_in_blocks_are_those_of_one_pass(name, monkeypatch):
    """`token_starts` (the `fixed` strategy's cut points) encodes a long text in blocks cut
    at anchors, here of 16 characters: the starts are those of one encode of the whole."""
    import chunkwise.sizing.boundaries as boundaries
    from chunkwise.sizing.sizers import tiktoken_encoding

    one_pass = boundaries._hf_starts(minilm_tokenizer_path()) if name == "minilm" \
        else boundaries._tiktoken_starts(tiktoken_encoding(name))
    monkeypatch.setattr(boundaries, "_STARTS_BLOCK", 16)
    starts = boundaries.token_starts(name)
    rng = random.Random(name)
    for _ in range(150):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 200)))
        assert list(starts(text)) == list(one_pass(text)), text


def test_token_starts_of_a_long_text_encode_bounded_blocks(hf_encoded):
    """A 2 MB text is not given to the tokenizer at once (it took 1.6 GB for 9 MB)."""
    from chunkwise.sizing.boundaries import _STARTS_BLOCK, token_starts

    text = "Some words, then more words.\n" * 70_000
    token_starts.cache_clear()  # a tokenizer loaded while `hf_encoded` records
    starts = token_starts("minilm")(text)
    token_starts.cache_clear()
    assert max(hf_encoded) < 2 * _STARTS_BLOCK < len(text)
    assert len(starts) == 7 * 70_000 and starts[-1] == len(text) - 2  # 7 tokens a line
