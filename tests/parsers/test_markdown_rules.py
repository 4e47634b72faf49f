"""The faster markdown-it rules (`chunkwise.parsers.markdown.rules`) give exactly the sections
that markdown-it-py's own rules give, and the same block tokens (type, line map, level; but
those the fast rules do not build: inline content and table cells): on the fixtures, on the
shared corpus, and on generated documents built from the line shapes where block rules
interact (paragraphs interrupted without a blank line, setext underlines, lazy
continuations, tabs, nested lists and quotes, tables with escaped pipes or missing cells,
list markers of every kind, fences and thematic breaks)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it.rules_block import StateBlock
from markdown_it.token import Token

from chunkwise.parsers.markdown import reader as markdown
from chunkwise.parsers.markdown.rules import State

from conftest import CORPUS, FIXTURES, ROOT, corpus_files

LINES = [
    "Some words here", "another line of text", "  indented two", "    indented four",
    "\tTabbed line", " \tmixed indent", "- item", "* star item", "+ plus item", "-",
    "1. first", "2) second", "10. tenth", "1.no space", "> quote", "> > nested quote",
    ">lazy", "# Heading", "###### Six", "####### seven", "#no space", "---", "===", "***",
    "___", "- - -", "--", "```", "```python", "~~~", "````", "<div>", "</div>",
    "<!-- comment -->", "<p>inline</p>", "<pre>", "</pre>", "| a | b |", "|---|---|",
    "a | b", "--|--", ":-:|-:", "| x \\| y | z |", "| only |", "|:--|", "", "", "   ",
    "text ending #", "  - nested item", "    - deeper item", "   1. indented ordered",
    "  > quoted in list", "[ref]: http://example.com", "Title\twith tab", "\t", " \t ",
    "\t\t- tabbed item",
]
#: line shapes for lists: markers of every kind, indents, tabs, empty items, what can
#: interrupt or continue an item (and ATX headings, thematic breaks and fences)
LIST_LINES = [
    "- a", "* b", "+ c", "-", "-   ", "*", "1.", "1. one", "2. two", "3) three", "1) paren",
    "0. zero", "7. seven", "123456789. nine digits", "1234567890. ten digits", "1.x",
    "  - two", "   - three", "    - four", "     - five", "      - six", "\t- tab",
    "  \t- mixed", "-\ttab after", "1.\ttab after", "-     five after", "- \t tab and space",
    "  continued", "    continued four", "    2. four", "lazy text", "", "", "", "> - quoted item",
    "> 1. quoted", ">   - quoted nested", "> lazy", "    code", "```", "``` x`y", "~~~",
    "````", "   ```", "`` two", "~~ two", "# head", "#", "####### seven", "## closed ##", "# trailing #x", "# hash#", "# #",
    "#\ttab", "- # heading item", "- ```", "- > quote in item", "- - nested", "1. - mixed",
    "- 1. mixed", "---", "- - -", "* * *", "_ _ _", "***", "**", "-- -", "*\t*\t*", "--- x",
    "Para", "  1. indented", "2.no space", "-x", "<div>", "| a | b |", "|---|---|",
    "Setext", "===", "  ", "\t", " \t ", "- [ ] task",
]


def sections(text: str, *, fast: bool):
    return markdown.parse(text.encode(), source="x.md", _fast=fast).sections


def block_tokens(text: str, *, fast: bool) -> list[tuple]:
    """(type, map, level, nesting, heading text) of each block token, but inline content
    and table cells (the fast rules do not build them; a heading's text they do)."""
    md, _ = markdown._markdown(fast)
    state = State(text, md) if fast else StateBlock(text, md, {}, [])
    md.block.tokenize(state, 0, state.lineMax)
    out, prev = [], Token("", "", 0)
    for tok in state.tokens:
        if tok.type == "inline" and prev.type == "heading_open":
            out.append(("heading text", tok.content))
        elif tok.type not in ("inline", "th_open", "th_close", "td_open", "td_close"):
            out.append((tok.type, tok.map, tok.level, tok.nesting))
        prev = tok
    return out


def assert_same(text: str) -> None:
    assert block_tokens(text, fast=True) == block_tokens(text, fast=False)
    assert sections(text, fast=True) == sections(text, fast=False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=40), st.booleans())
@example(["| x \\| y | z |", "|---|---|", "| 1 | 2 |"], True)  # an escaped pipe is no cell
@example(["Some words here", "a | b", "--|--", "c | d", "> quote", "| x |"], False)
@example(["Title", "===", "text", "---", "- item", "Some words here", "# Heading"], True)
def test_generated_documents_parse_the_same(lines, final_newline):
    assert_same("\n".join(lines) + ("\n" if final_newline else ""))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LIST_LINES), min_size=1, max_size=30), st.booleans())
@example(["1. a", "", "3. b", "Para", "2. no", "1. yes"], True)  # start numbers
@example(["- a", "  - b", "   - c", "    - d", "     - e"], False)  # a continuation
@example(["-", "", "  foo"], True)  # an empty item then a blank line ends the list
@example(["> - a", "> - b", "lazy", "- c"], True)
@example(["123456789. a", "", "    2. b"], True)  # indented code, not the next item
def test_generated_lists_parse_the_same(lines, final_newline):
    assert_same("\n".join(lines) + ("\n" if final_newline else ""))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LIST_LINES), min_size=1, max_size=12),
       st.lists(st.sampled_from(["", "> ", "  ", "    ", "\t", "- ", "1. ", "> - "]),
                min_size=1, max_size=12))
def test_generated_nested_blocks_parse_the_same(lines, prefixes):
    """The same lines with prefixes that nest them (quotes, items, indents)."""
    assert_same("\n".join(p + line for p, line in zip(prefixes * len(lines), lines)))


#: what may follow a line: a newline, or blank lines (then the line is a paragraph of its
#: own, which the block loop makes without `text_block`'s scan)
BREAKS = ["\n", "\n\n", "\n\n", "\n   \n", "\n\t\n\n"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(LINES + LIST_LINES), st.sampled_from(BREAKS)),
                min_size=1, max_size=30),
       st.sampled_from(["", "> ", "- ", "  ", "    ", "1. ", "> - "]))
@example([("Setext", "\n\n"), ("===", "\n")], "")  # a blank line: no underline
@example([("text", "\n"), ("    indented four", "\n\n"), ("lazy text", "\n")], "> ")
def test_one_line_paragraphs_parse_the_same(lines, prefix):
    """Paragraphs of one line (a blank line or the end after them), made by the block loop
    itself rather than by `text_block`: at the top level, in quotes, items and indents."""
    text = "".join(line + brk for line, brk in lines)
    assert_same(text)
    assert_same("".join(prefix + line + brk for line, brk in lines))


def _scanned_and_paragraphs(monkeypatch, files) -> tuple[int, int]:
    """How many paragraphs of `files` went through `text_block`, and how many there are."""
    from chunkwise.parsers.markdown import rules as markdown_rules

    calls = []
    general = markdown_rules.text_block
    monkeypatch.setattr(markdown_rules, "text_block",
                        lambda *args: calls.append(args[1]) or general(*args))
    paragraphs = scanned = 0
    for path in files:
        calls.clear()
        tokens = block_tokens(path.read_bytes().decode("utf-8"), fast=True)
        paragraphs += sum(1 for t in tokens if t[0] == "paragraph_open")
        scanned += len(calls)
    return scanned, paragraphs


def test_one_line_paragraphs_skip_the_scan(monkeypatch):
    """On real documents many paragraphs are one line, made without `text_block` (about half
    of them in the fixtures and the corpus), and the others with it: the tests above compare
    both paths with markdown-it's own rules."""
    scanned, paragraphs = _scanned_and_paragraphs(monkeypatch, sorted(FIXTURES.glob("*.md")))
    assert 0 < scanned < 0.75 * paragraphs


def test_one_line_paragraphs_skip_the_scan_in_the_corpus(monkeypatch):
    files = [p for p in corpus_files("markdown") if p.suffix == ".md"]
    scanned, paragraphs = _scanned_and_paragraphs(monkeypatch, files)
    assert 0 < scanned < 0.75 * paragraphs


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LINES), min_size=0, max_size=20), st.booleans())
def test_line_tables_are_markdown_its(lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline else "")
    md, _ = markdown._markdown(False)
    fast, stock = State(text, md), StateBlock(text, md, {}, [])
    for name in ("bMarks", "eMarks", "tShift", "sCount", "bsCount", "lineMax"):
        assert getattr(fast, name) == getattr(stock, name), name


def _markdown_files():
    files = sorted(FIXTURES.glob("*.md"))
    if (CORPUS / "markdown").is_dir():
        files += sorted((CORPUS / "markdown").glob("*.md"))
    return files


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: p.name)
def test_real_documents_parse_the_same(path):
    text = path.read_bytes()
    fast = markdown.parse(text, source=str(path))
    assert fast.sections == markdown.parse(text, source=str(path), _fast=False).sections
    assert len(fast.sections) > 0
    decoded = fast.text
    assert block_tokens(decoded, fast=True) == block_tokens(decoded, fast=False)


def test_unknown_rule_chains_keep_markdown_its_rules():
    from markdown_it import MarkdownIt

    from chunkwise.parsers.markdown.rules import install

    md = MarkdownIt("commonmark").enable("table")
    md.disable("hr")  # a chain the prefilter was not written for
    assert install(md) is False
    assert md.block.ruler.getRules("")[-1].__module__.startswith("markdown_it")


def test_the_fast_rules_are_what_these_tests_compare():
    """Every comparison above is void if `install` declined (another markdown-it-py, other
    rule chains): then both sides run markdown-it's own rules."""
    md, new_state = markdown._markdown(True)
    assert md.block.tokenize.__func__.__qualname__.startswith("_make_tokenize")
    assert type(new_state("text\n")) is State


def test_markdown_it_py_is_the_release_the_fast_rules_follow():
    """The installed markdown-it-py is allowed by `pyproject.toml` (a fresh install, as in CI,
    takes the newest allowed release, so the tests above run against it), and the pinned
    range is the release series the fast rules follow."""
    packaging = pytest.importorskip("packaging.requirements")
    tomllib = pytest.importorskip("tomllib")
    import markdown_it

    from chunkwise.parsers.markdown.rules import FOLLOWS

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]
    spec = next(r.specifier for r in map(packaging.Requirement, deps) if r.name == "markdown-it-py")
    assert markdown_it.__version__ in spec
    assert FOLLOWS in spec
    assert not any(v in spec for v in ("3.0.0", "4.0.0", "4.2.9", "4.4.0", "5.0.0"))
