"""The faster markdown-it rules (`chunkwise.parsers.markdown_rules`) give exactly the sections
that markdown-it-py's own rules give: on the fixtures, on the shared corpus, and on generated
documents built from the line shapes where block rules interact (paragraphs interrupted
without a blank line, setext underlines, lazy continuations, tabs, nested lists and quotes,
tables with escaped pipes or missing cells)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it.rules_block import StateBlock

from chunkwise.parsers import markdown
from chunkwise.parsers.markdown_rules import State

from conftest import CORPUS, FIXTURES

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


def sections(text: str, *, fast: bool):
    return markdown.parse(text.encode(), source="x.md", _fast=fast).sections


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=40), st.booleans())
@example(["| x \\| y | z |", "|---|---|", "| 1 | 2 |"], True)  # an escaped pipe is no cell
@example(["Some words here", "a | b", "--|--", "c | d", "> quote", "| x |"], False)
@example(["Title", "===", "text", "---", "- item", "Some words here", "# Heading"], True)
def test_generated_documents_parse_the_same(lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline else "")
    assert sections(text, fast=True) == sections(text, fast=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LINES), min_size=0, max_size=20), st.booleans())
def test_line_tables_are_markdown_its(lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline else "")
    md = markdown._markdown(False)
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


def test_unknown_rule_chains_keep_markdown_its_rules():
    from markdown_it import MarkdownIt

    from chunkwise.parsers.markdown_rules import install

    md = MarkdownIt("commonmark").enable("table")
    md.disable("hr")  # a chain the prefilter was not written for
    assert install(md) is False
    assert md.block.ruler.getRules("")[-1].__module__.startswith("markdown_it")
