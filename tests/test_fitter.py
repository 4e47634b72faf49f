"""The fitter on real documents: exact counts within the budget, and about one tokenizer pass."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise.chunking.structure import build_tree
from chunkwise.chunking.api import Chunker, parse_bytes
from chunkwise.chunking.fitter import Fitter, Policy
from chunkwise.sizing.sizers import Sizer, get_sizer
from chunkwise.text.splitting import longest_fit
from chunkwise.sizing.tiktoken_index import tiktoken_builder

from conftest import FIXTURES

FILES = ["fastapi__features.md", "mkdocs-material__reference__data-tables.md",
         "alice-in-wonderland.txt"]


@pytest.mark.parametrize("name,budget", [("cl100k_base", 512), ("o200k_base", 96),
                                         ("minilm", 64), ("chars", 200)])
@pytest.mark.parametrize("fixture", FILES)
def test_pieces_count_exactly_within_the_budget(fixture, name, budget):
    doc = parse_bytes((FIXTURES / fixture).read_bytes(), source=fixture)
    sizer = get_sizer(name)
    pieces = Fitter(sizer, budget).fit(doc, build_tree(doc))
    assert pieces
    for p in pieces:
        text = doc.text[p.start:p.end]
        embed = f"{p.context}\n\n{text}" if p.context else text
        assert p.tokens == sizer.count(embed) <= budget
    assert [p.start for p in pieces] == sorted(p.start for p in pieces)


def test_fitting_encodes_the_document_about_once(monkeypatch, tiktoken_encoded):
    """The index encodes the whole text once; exact counts re-encode only a chunk's ends."""
    encoded = tiktoken_encoded
    tiktoken_builder.cache_clear()  # rebuild with the counting methods
    try:
        doc = parse_bytes((FIXTURES / "alice-in-wonderland.txt").read_bytes(), source="a.txt")
        pieces = Fitter(get_sizer("cl100k_base"), 256).fit(doc, build_tree(doc))
    finally:
        monkeypatch.undo()
        tiktoken_builder.cache_clear()
    assert len(pieces) > 100
    assert sum(encoded) < 1.2 * len(doc.text)


def test_a_split_paragraph_is_cut_into_even_pieces_not_a_small_tail():
    """Ten equal sentences, three to a chunk at most: 3+3+2+2, not 3+3+3+1 (a one-sentence
    tail embeds as a near-empty chunk that matches every query)."""
    sentence = "The quick brown fox jumps over the lazy dog near the river bank today. "
    doc = parse_bytes((sentence * 10).encode(), source="p.txt")
    sizer = get_sizer("cl100k_base")
    one = sizer.count(sentence.strip())
    pieces = Fitter(sizer, 3 * one + 2).fit(doc, build_tree(doc))
    counts = [doc.text[p.start:p.end].count("fox") for p in pieces]
    assert sum(counts) == 10 and max(counts) <= 3
    assert len(pieces) == 4 and max(counts) - min(counts) <= 1, counts


def _leaf_cuts(doc, pieces):
    """(leaf, piece) for every piece that ends strictly inside a leaf section, the next piece
    starting in the same leaf (a cut the fitter chose inside a leaf's text)."""
    from chunkwise.chunking.structure import build_tree, walk

    leaves = [(n, d) for n, d in walk(build_tree(doc)) if not n.children]
    out = []
    for p, nxt in zip(pieces, pieces[1:]):
        leaf = next((n for n, _ in leaves if n.start <= p.start and nxt.end <= n.end), None)
        if leaf is not None:
            out.append((leaf, p))
    return out


def test_wrapped_prose_is_cut_at_sentence_ends_not_at_line_ends():
    """Alice is hard-wrapped at 70 columns: a line end inside a paragraph is not a boundary.
    Every cut inside a paragraph falls after a whole sentence; only a sentence longer than
    the budget is cut inside (a piece then lies within that one sentence, or within the
    heading glued to it and it)."""
    from chunkwise.text.sentences import sentence_spans

    doc = parse_bytes((FIXTURES / "alice-in-wonderland.txt").read_bytes(), source="a.txt")
    pieces = Fitter(get_sizer("minilm"), 64).fit(doc, build_tree(doc))
    cuts = _leaf_cuts(doc, pieces)
    at_sentence = 0
    for leaf, p in cuts:
        spans = sentence_spans(doc.text, leaf.own_start, leaf.end)
        spans[0] = (leaf.start, spans[0][1])  # a heading stays with its first sentence
        if p.end in {e for _, e in spans}:
            at_sentence += 1
        else:  # inside an overlong sentence: the whole piece is in it
            assert any(s <= p.start and p.end <= e for s, e in spans), doc.text[p.start:p.end]
    assert at_sentence > 100, (at_sentence, len(cuts))


def test_code_is_still_cut_at_line_ends():
    """Code keeps lines before sentences: a cut inside a code block ends a line, even where
    a line holds `. ` (which would end a sentence in prose)."""
    lines = [f"    value_{i} = compute(item_{i}). Then store it in slot {i}. Done now." for i in range(40)]
    doc = parse_bytes(("# Code\n\n```python\n" + "\n".join(lines) + "\n```\n").encode(),
                      source="c.md")
    pieces = Fitter(get_sizer("minilm"), 64).fit(doc, build_tree(doc))
    cuts = _leaf_cuts(doc, pieces)
    assert len(cuts) > 5
    for _, p in cuts:
        assert doc.text[p.end] == "\n", repr(doc.text[p.end - 20:p.end + 5])


def test_a_heading_stays_with_indented_content_that_must_be_split():
    """A cut consumes the whitespace after it, so the cut just before an indented block
    lands past the block's own start: it must still count as a cut before the glue."""
    code = "\n".join(f"    result_{i} = compute(step={i}, retries=3)" for i in range(40))
    text = f"## Usage\n\n{code}\n"
    doc = parse_bytes(text.encode(), source="u.md")
    pieces = Fitter(get_sizer("minilm"), 64).fit(doc, build_tree(doc))
    assert len(pieces) > 2
    assert "result_0" in text[pieces[0].start:pieces[0].end]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 50), st.integers(0, 400), st.integers(0, 400), st.integers(-10, 500))
def test_longest_fit_finds_the_last_fitting_end(lo, span, limit, guess):
    """The galloping search gives what a scan gives, wherever its guess lands."""
    hi, last = lo + span, lo + min(span, limit)  # fits(end) for end <= last
    calls = []

    def fits(end):
        calls.append(end)
        assert lo <= end <= hi
        return end <= last

    assert longest_fit(fits, lo, hi, guess) == last
    assert len(calls) <= 4 * (span.bit_length() + 1)


def test_character_split_of_a_long_dense_line_counts_spans_near_its_pieces():
    """A line with no space to cut at is cut at characters, each piece searched from the
    length of the one before: a few counts of about a piece each, not a bisection over the
    whole character cap (a 2 MB one-line list literal took 33 s, now about a third)."""
    text = "x = [" + ",".join(str(i) for i in range(20_000)) + "]\n"
    real = get_sizer("minilm")
    counted = []

    def count(s):
        counted.append(len(s))
        return real.count(s)

    spy = Sizer("spy", count, lambda texts: [count(t) for t in texts], real.overhead)
    doc = parse_bytes(text.encode(), source="long.py")
    pieces = Fitter(spy, 256).fit(doc, build_tree(doc))
    assert all(p.tokens <= 256 for p in pieces) and len(pieces) > 50
    mean_piece = sum(p.end - p.start for p in pieces) / len(pieces)
    assert sum(counted) < 12 * mean_piece * len(pieces)


@pytest.mark.parametrize("name", ["minilm", "cl100k_base"])
def test_a_paragraph_too_long_for_the_character_cap_is_never_counted_whole(name, monkeypatch):
    """A unit longer than the cap (`MAX_CHARS_PER_TOKEN` a token) cannot be a chunk whatever
    its count: it is split without counting it (to WordPiece a run without a space is one
    [UNK], so its estimate fits, and it used to be encoded whole)."""
    import chunkwise.chunking.fitter as fitter_module

    counted: list[int] = []
    count = fitter_module._Tree.count

    def recording(self, context, a, b):
        counted.append(b - a)
        return count(self, context, a, b)

    monkeypatch.setattr(fitter_module._Tree, "count", recording)
    text = "intro words here\n\n" + "x" * 300_000 + "\n\nlast words"
    doc = parse_bytes(text.encode(), source="run.txt")
    fitter = Fitter(get_sizer(name), 64)
    pieces = fitter.fit(doc, build_tree(doc))
    assert max(counted) <= fitter.budget.max_chars
    assert all(p.end - p.start <= fitter.budget.max_chars for p in pieces)
    for p in pieces:
        embed = f"{p.context}\n\n" * bool(p.context) + doc.text[p.start:p.end]
        assert p.tokens == get_sizer(name).count(embed) <= 64


# -- long leaves: packed a window at a time ------------------------------------------------

_ALPHABETS = ["abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJ0123456789", "абвгдежзий", "日本語中文字",
              "éèàüöß😀", "e\u0301", ".,;:!?-#*()[]\"'/_~`@$%^&"]
_SEPARATORS = [" ", " ", "  ", "\t", " \n", "\n", "\n\n", ". ", "! ", " * * * ", " # ", " — "]


def _words(rng, size: int) -> str:
    """About `size` characters of words of varied lengths (a few longer than any budget
    below), letters from a few alphabets, and separators that may make marks and
    sentences, or (with one separator) a single line of words."""
    alphabets = rng.sample(_ALPHABETS, rng.randint(1, 4))
    separators = _SEPARATORS[:rng.choice([1, 3, 6, len(_SEPARATORS)])]
    out: list[str] = []
    while size > 0:
        length = rng.choice([1, 2, 3, 5, 8, 12]) if rng.random() < 0.97 else rng.randint(30, 900)
        out += ["".join(rng.choice(rng.choice(alphabets)) for _ in range(length)),
                rng.choice(separators)]
        size -= length + 1
    return "".join(out)


def _plan(doc, name, budget):
    return [(p.start, p.end, p.context, p.tokens, p.kinds, p.meta)
            for p in Fitter(get_sizer(name), budget).fit(doc, build_tree(doc))]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(["minilm", "cl100k_base", "o200k_base", "chars"]),
       st.sampled_from([16, 40, 100]), st.sampled_from(["t.txt", "t.md"]),
       st.sampled_from([1, 3, 1 << 14]), st.sampled_from([64, 1 << 19]))
def test_a_long_leaf_packed_a_window_at_a_time_gives_the_chunks_of_all_at_once(
        seed, name, budget, source, batch, gap):
    """Every leaf split through the windows, the smallest a budget allows (`_WINDOW` 1),
    cuts joined and estimated a few at a time, tiktoken indexes with gaps: the same chunks
    as the units packed all at once."""
    import random

    import chunkwise.chunking.fitter as fitter
    import chunkwise.sizing.tiktoken_index as tiktoken_index

    rng = random.Random(seed)
    doc = parse_bytes(_words(rng, rng.choice([500, 5000, 20000])).encode(), source=source)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tiktoken_index, "_GAP", gap)
        mp.setattr(fitter, "_WINDOW", 1 << 60)
        whole = _plan(doc, name, budget)
        mp.setattr(fitter, "_WINDOW", 1)
        mp.setattr(fitter, "_BATCH", batch)
        assert _plan(doc, name, budget) == whole


class _UnitsPolicy(Policy):
    """Records how many units each packing is given."""

    def __init__(self):
        super().__init__()
        self.packed: list[int] = []

    def cuts(self, units):
        self.packed.append(len(units))
        return super().cuts(units)


def test_a_long_line_of_words_is_never_all_units_at_once():
    """A line of 100,000 words (no sentence end, no line break: the words are the units) is
    made into units a window at a time (a 50 MB line took 2 GB as 8 million units)."""
    import random

    rng = random.Random(5)
    vocabulary = ["".join(rng.choices("abcdefghij", k=rng.randint(1, 9))) for _ in range(999)]
    text = " ".join(rng.choices(vocabulary, k=100_000))
    doc = parse_bytes(text.encode(), source="line.txt")
    policy = _UnitsPolicy()
    pieces = Fitter(get_sizer("cl100k_base"), 512, policy=policy).fit(doc, build_tree(doc))
    assert max(policy.packed) < 50_000
    assert pieces[0].start == 0 and pieces[-1].end == len(text.rstrip())
    assert all(p.end < q.start for p, q in zip(pieces, pieces[1:]))


def test_iter_cuts_gives_the_cuts_of_the_splitter():
    from chunkwise.text.splitting import LINED_LEVELS, iter_cuts

    text = "One. Two words\n\nthree  four\nfive! six\t\tseven\n \n"
    for split in LINED_LEVELS:
        for a, b in [(0, len(text)), (3, 30), (5, 6)]:
            assert list(iter_cuts(split, text, a, b)) == split(text, a, b)


# -- kinds ----------------------------------------------------------------------------------
def test_kinds_of_a_whole_heading_section_name_what_it_holds():
    # one chunk that is exactly one heading section: its kinds are those of its content
    (chunk,) = Chunker().chunk_text("# T\n\n```py\nx=1\n```", format="markdown")
    assert chunk.kinds == ("code",)
    (chunk,) = Chunker().chunk_text("# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", format="markdown")
    assert "table" in chunk.kinds
    for strategy in ("fixed", "sentence", "recursive"):
        chunks = Chunker(strategy=strategy).chunk_text("# T\n\n```py\nx=1\n```", format="markdown")
        assert [c.kinds for c in chunks] == [("code",)], strategy


def test_kinds_of_a_lone_heading_is_heading():
    text = "# One\n\n# Two is a heading long enough to stand alone\n\nBody text of two here."
    chunks = Chunker(max_tokens=16).chunk_text(text, format="markdown")
    assert chunks[0].text == "# One" and chunks[0].kinds == ("heading",)
    assert all(c.kinds for c in chunks)
