"""Markdown parser and chunking: heading paths, tables, code, front matter, bad input."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkwise import Chunker, ParseError, chunk_file, chunk_text
from chunkwise.chunking.api import parse_bytes

from conftest import FIXTURES, corpus_files


def _last_heading(chunk, text):
    """The nearest heading line above the chunk start (or at it), as markdown-it saw it."""
    return chunk.section_path[-1] if chunk.section_path else None


def test_heading_path_and_heading_with_content():
    body = "words " * 8
    md = f"# Guide\n\nIntro {body}\n\n## Install\n\nRun pip {body}\n\n## Use\n\nCall it {body}\n"
    chunks = chunk_text(md, format="markdown", max_tokens=24)
    assert [c.section_path for c in chunks] == [("Guide",), ("Guide", "Install"), ("Guide", "Use")]
    assert chunks[1].text.startswith("## Install") and "Run pip" in chunks[1].text
    assert chunks[1].context == "Guide > Install"


def test_front_matter_title_starts_the_path():
    md = "---\ntitle: My Doc\n---\n\n# Part\n\nBody text.\n"
    doc = parse_bytes(md.encode(), source="x.md")
    assert doc.title == "My Doc"
    assert {s.path for s in doc.sections if s.kind == "section"} == {("My Doc", "Part")}
    assert chunk_text(md, format="markdown")[0].section_path == ("My Doc",)


def test_heading_that_repeats_the_front_matter_title_is_not_doubled():
    # MkDocs pages often have `title: X` and then `# X`: the path says X once
    md = ("---\ntitle: Running  scripts\n---\n\n# Running scripts\n\nIntro.\n\n"
          "## With deps\n\nBody.\n\n# Running scripts again\n\nMore.\n")
    doc = parse_bytes(md.encode(), source="x.md")
    paths = sorted(s.path for s in doc.sections if s.kind == "section")
    assert paths == [("Running  scripts",), ("Running  scripts", "Running scripts again"),
                     ("Running  scripts", "With deps")]
    chunks = chunk_text(md, format="markdown", max_tokens=16)
    assert [c.context for c in chunks] == ["Running  scripts", "Running  scripts",
                                           "Running  scripts > Running scripts again"]
    assert chunks[1].text.startswith("# Running scripts\n") and "Body." in chunks[1].text
    # a different first heading stays under the title
    other = parse_bytes(b"---\ntitle: Guide\n---\n\n# Part\n\nText.\n", source="y.md")
    assert [s.path for s in other.sections if s.kind == "section"] == [("Guide", "Part")]


def test_pymdownx_blocks_are_containers_kept_whole():
    """FastAPI's docs write admonitions as `/// note | Title` ... `///` blocks (pymdownx
    Blocks). The block is a `container` section, its opening line a label glued to its
    first block; a container that fits is never cut, nor one nested in another."""
    filler = "Plain words about other matters. " * 14
    md = (f"# Guide\n\n{filler}\n\n/// note | Technical Details\n\nAny function valid with"
          " a context manager works here.\n\n* one item\n* two items\n\nIn fact it is used"
          f" internally.\n\n///\n\n{filler}\n\n//// tab | Linux\n\n/// tip\n\nNested tip.\n\n"
          "///\n\nAfter the tip.\n\n////\n\n/// warning\n\nNever closed.\n")
    doc = parse_bytes(md.encode(), source="x.md")
    text = doc.text
    containers = sorted((s.start, s.end) for s in doc.sections if s.kind == "container")
    opened = [text.index("/// note"), text.index("//// tab"), text.index("/// tip")]
    assert [a for a, _ in containers] == sorted(opened)  # the unclosed warning is not one
    note = next(s for s in doc.sections if s.kind == "container" and s.start == opened[0])
    assert text[note.start:note.end].rstrip().endswith("internally.\n\n///")
    tab = next(s for s in doc.sections if s.kind == "container" and s.start == opened[1])
    assert text[tab.start:tab.end].rstrip().endswith("After the tip.\n\n////")
    labels = sorted(s.start for s in doc.sections if s.kind == "label")
    assert labels == sorted(opened)
    # nested: the tip lies inside the tab
    assert tab.start < opened[2] and note.end < tab.start
    for budget in (48, 64, 96):
        chunks = chunk_text(md, format="markdown", max_tokens=budget)
        for a, b in containers:
            held = [c for c in chunks if c.start < b and c.end > a]
            inside = [c for c in held if a <= c.start and c.end <= b]
            if len(held) > 1:  # cut only when it does not fit, and then only inside
                assert held == inside, (budget, a, b)
                assert sum(c.tokens for c in held) > budget
            else:
                assert text[held[0].start:held[0].end].find(text[a:b].strip()) >= 0
        # the label never ends a chunk
        assert not any(c.text.rstrip().endswith(("Technical Details", "/// tip"))
                       for c in chunks)
    # a heading between opener and closer: no container (it would straddle the section)
    odd = parse_bytes(b"/// note\n\nText.\n\n## Head\n\nMore.\n\n///\n", source="y.md")
    assert not any(s.kind == "container" for s in odd.sections)


def test_mkdocs_admonition_and_tab_bodies_are_parsed_as_markdown():
    """To CommonMark the body of `!!! note` or `=== "Tab"` is indented code; MkDocs reads
    it as Markdown. It becomes a `container` of the blocks found in it (nested tabs too),
    with exact offsets into the original text, headings in it as paragraphs."""
    md = ("# Doc\n\n!!! note \"Install\"\n\n    Run the installer first.\n\n"
          "    ### Not a section\n\n    === \"Linux\"\n\n        ```sh\n        curl x | sh\n"
          "        ```\n\n\t=== \"Windows\"\n\n\t    Use the MSI.\n\nAfter the note.\n\n"
          "    plain indented code\n")
    doc = parse_bytes(md.encode(), source="x.md")
    text = doc.text
    kinds = {(text[s.start:s.end].strip()[:24], s.kind) for s in doc.sections}
    body = next(s for s in doc.sections if s.kind == "container"
                and text[s.start:s.end].lstrip().startswith("Run the installer"))
    inside = sorted((s.start, -s.end, -s.level, s.kind) for s in doc.sections
                    if body.start <= s.start and s.end <= body.end and s is not body)
    assert [k for *_, k in inside] == ["paragraph", "paragraph", "label", "container", "code",
                                      "label", "container", "paragraph"]
    assert ("### Not a section", "paragraph") in kinds
    assert not any(s.kind == "section" and "Not a section" in s.path for s in doc.sections)
    assert ("plain indented code", "code") in kinds  # no label before it: still code
    for s in doc.sections:  # offsets are the original text's, line-exact
        assert 0 <= s.start < s.end <= len(text)
        assert s.start == 0 or text[s.start - 1] == "\n"
    chunks = chunk_text(md, format="markdown", max_tokens=24)
    assert "".join("".join(c.text.split()) for c in chunks) == "".join(text.split())
    for budget in (24, 40, 64):
        (sh,) = [c for c in chunk_text(md, format="markdown", max_tokens=budget)
                 if "curl x | sh" in c.text]
        # its tab's title travels with it: in its text, or (room allowing) in its context
        assert '=== "Linux"' in sh.text or '=== "Linux"' in sh.context or budget < 40


def test_table_in_a_tab_repeats_its_header_without_the_indentation():
    rows = "\n".join(f"    | row {i} | value {i} |" for i in range(60))
    md = f'# T\n\n=== "Tab"\n\n    | name | value |\n    |------|-------|\n{rows}\n'
    chunks = chunk_text(md, format="markdown", max_tokens=96, views="none")
    later = chunks[1:]
    assert len(later) > 2
    for c in later:
        assert c.context.endswith('=== "Tab"\n| name | value |\n|------|-------|'), c.context
    # the default view labels each row instead (chunkwise.chunking.views): the header leaves the context
    viewed = [c for c in chunk_text(md, format="markdown", max_tokens=96) if c.view]
    assert len(viewed) >= 59
    for c in viewed:
        assert c.context == 'T\n=== "Tab"' and c.view.startswith("name: row ")


def test_mkdocs_bodies_nested_past_the_limit_stay_code():
    from chunkwise.parsers.markdown import reader as mdp

    depth = mdp._MAX_BODY_DEPTH + 3
    lines = []
    for d in range(depth):
        lines += ["    " * d + f"!!! note \"Level {d}\"", ""]
    lines += ["    " * depth + "Deepest words.", ""]
    doc = parse_bytes("\n".join(lines).encode(), source="x.md")
    containers = [s for s in doc.sections if s.kind == "container"]
    assert len(containers) == mdp._MAX_BODY_DEPTH
    deepest = max(containers, key=lambda s: s.start)
    assert any(s.kind == "code" and deepest.start <= s.start for s in doc.sections)


def test_table_split_repeats_header_and_never_splits_rows():
    rows = "\n".join(f"| row {i} | value number {i} |" for i in range(200))
    md = f"# T\n\n| name | value |\n|---|---|\n{rows}\n"
    chunks = chunk_text(md, format="markdown", max_tokens=64, views="none")
    assert len(chunks) > 5
    for c in chunks[1:]:
        assert "| name | value |" in c.context
        assert all(line.startswith("| row") and line.endswith("|") for line in c.text.split("\n"))
    assert "| name | value |" in chunks[0].text
    one = chunk_text(md, format="markdown", max_tokens=64)  # default: a row per chunk, labelled
    assert [c.view for c in one[1:4]] == [f"name: row {i}\nvalue: value number {i}"
                                         for i in (1, 2, 3)]


def test_code_fence_split_keeps_lines_and_language():
    code = "\n".join(f"x_{i} = compute({i}, {i + 1})" for i in range(300))
    md = f"## Code\n\n```python\n{code}\n```\n"
    chunks = chunk_text(md, format="markdown", max_tokens=64)
    assert len(chunks) > 3
    for c in chunks[1:]:
        assert "```python" in c.context
        assert all(line.startswith(("x_", "```")) for line in c.text.split("\n"))


def _headings(text):
    """(offset, text) of every heading, from an independent full markdown-it parse."""
    from markdown_it import MarkdownIt

    from lines import LineIndex

    lines = LineIndex(text)
    toks = MarkdownIt("commonmark").parse(text)
    return [(lines.offset(t.map[0]), "".join(c.content for c in toks[i + 1].children
                                              if c.type in ("text", "code_inline")))
            for i, t in enumerate(toks) if t.type == "heading_open" and t.level == 0]


def test_every_chunk_path_ends_with_the_heading_it_sits_under():
    for path in [FIXTURES / "fastapi__features.md", FIXTURES / "mkdocs-material__reference__data-tables.md"]:
        doc = parse_bytes(path.read_bytes(), source=str(path))
        heads = _headings(doc.text)
        chunks = chunk_file(path, max_tokens=96)
        assert len(chunks) > 5
        for c in chunks:
            above = [h for off, h in heads if off <= c.start]
            inside = [h for off, h in heads if c.start < off < c.end]
            if above and not inside:
                want = " ".join(above[-1].split()).split(" {")[0].strip()
                assert c.section_path[-1] == want, (c.section_path, c.text[:60])


def test_no_chunk_is_only_a_heading():
    for path in corpus_files("markdown")[:20]:
        for c in chunk_file(path, max_tokens=128):
            lines = [ln for ln in c.text.split("\n") if ln.strip()]
            assert not all(ln.lstrip().startswith("#") for ln in lines) or c.end == len(
                parse_bytes(path.read_bytes(), source=str(path)).text.rstrip()), (path, c.text)


def test_binary_data_as_markdown_is_a_parse_error():
    with pytest.raises(ParseError, match="binary"):
        parse_bytes(bytes(range(256)) * 100, source="x.md")


def test_invalid_utf8_decodes_with_a_warning():
    doc = parse_bytes(b"# Caf\xe9\n\nna\xefve text\n", source="x.md")
    assert doc.text.startswith("# Café")
    assert any("invalid UTF-8" in w for w in doc.warnings)


def test_empty_file_gives_no_chunks():
    assert Chunker().chunk_bytes(b"", source="e.md") == []
    assert Chunker().chunk_bytes(b"\n\n  \n", source="e.md") == []


def test_deeply_nested_quotes_and_lists_do_not_crash():
    md = ">" * 100_000 + " deep\n" + "\n".join("  " * i + "- x" for i in range(2000))
    chunks = chunk_text(md, format="markdown", max_tokens=128)
    assert chunks


def test_mkdocs_tab_titles_open_their_tab_and_title_its_later_pieces():
    """data-tables.md has content tabs (`=== "Left"` over an indented block): the title
    line starts the chunk holding the tab's first lines, never ends the chunk before it,
    and the later pieces of a tab split by the budget carry it in their context."""
    path = FIXTURES / "mkdocs-material__reference__data-tables.md"
    text = parse_bytes(path.read_bytes(), source=path.name).text
    labels = [m.start() for m in re.finditer(r"^=== ", text, re.M)]
    assert len(labels) == 5
    for budget in (64, 256):
        chunks = Chunker(max_tokens=budget).chunk_file(path)
        for at in labels:
            first_line = re.compile(r"\n\s*\n\s*(\S)").search(text, at).start(1)
            (holder,) = [c for c in chunks if c.start <= at < c.end]
            assert holder.end > first_line, (budget, holder.text[-80:])
    left = text.index('=== "Left"')
    later = [c for c in Chunker(max_tokens=64).chunk_file(path)
             if left < c.start < text.index('=== "Center"')]
    # the tab's body is Markdown (a code fence, a table): its title comes first in the
    # context, then what the block inside repeats (the table's header row)
    assert later and all('\n=== "Left"' in c.context for c in later)
    assert any(c.context.endswith("| Method      | Description                          |")
               for c in later if "row" in c.kinds)


_BODY_LINES = ["Some words here.", "more words", "`code` start", "* item", "1. first", "```",
               "```py", "````", "~~~", "", "    indented", "---", "===", "<div>", "> quote",
               "# head", '=== "Tab"', "\tTabbed", "  two spaces", "Word ``` inside"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_BODY_LINES), min_size=1, max_size=8),
       st.sampled_from(['!!! note', '=== "Tab"', "??? tip"]))
def test_plain_bodies_give_what_the_parser_gives(body, label):
    """Bodies that look like one paragraph or one fence skip markdown-it: the sections must
    be exactly those of the full parse."""
    from chunkwise.parsers.markdown import reader as mdp

    md = f"# T\n\n{label}\n\n" + "".join(f"    {line}\n" if line else "\n" for line in body) \
        + "\nAfter.\n"
    key = lambda d: sorted((s.start, s.end, s.level, s.kind, s.path, s.context)
                           for s in d.sections)
    fast = key(mdp.parse(md.encode(), source="x.md"))
    saved = mdp._plain_body
    mdp._plain_body = lambda *a: None
    try:
        slow = key(mdp.parse(md.encode(), source="x.md"))
    finally:
        mdp._plain_body = saved
    assert fast == slow


#: lines of an MkDocs body where block rules interact: lazy continuations, lists, quotes,
#: HTML blocks that run over blank lines, fences, tables, setext underlines, nested labels
_INNER_LINES = ["Para text", "lazy line", "- item", "  - sub", "1. one", "2) two", "-",
                "> quote", "> > deep", ">lazy", "```", "```py", "~~~", "<!-- c", "-->",
                "<div>", "</div>", "<pre>", "| a | b |", "|---|---|", "| 1 | 2 |", "# H",
                "===", "---", "***", "    code", "\tcode", " \tx", "  \t- tabbed", "-\ttab",
                "> - q item", '=== "T"', "!!! note", "", "", "  "]
#: what can follow a body: a line that would continue its last paragraph, a list, the end
_AFTER = ["", "After.\n", "\nAfter.\n", "- item\n", "> quote\n", "  two spaces\n", "\n  "]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["    ", "\t", "  \t", "   \t"]),
                          st.sampled_from(_INNER_LINES)), min_size=1, max_size=10),
       st.sampled_from([0, 4]), st.sampled_from(_AFTER), st.booleans())
def test_bodies_tokenized_in_place_are_the_dedented_lines_parsed(lines, outer, after, fast):
    """An MkDocs body is tokenized in place, in the state of the whole text: its tokens
    must be those of the dedented lines parsed as a text of their own (the line maps
    shifted to the body's first line), with markdown-it's own rules and with the fast ones.
    `outer`: the columns of the body's container (a body in a body)."""
    from markdown_it.rules_block import StateBlock

    from chunkwise.parsers.markdown import reader as mdp
    from chunkwise.parsers.markdown.rules import State

    pad = " " * outer
    body = [pad + indent + line if line.strip() else line for indent, line in lines]
    while body and not body[-1].strip():  # a body ends with its last non-blank line
        body.pop()
    if not body:
        return
    text = "Before.\n\n" + "\n".join(body) + "\n" + after
    md, _ = mdp._markdown(fast)
    new = (lambda src: State(src, md)) if fast else (lambda src: StateBlock(src, md, {}, []))
    state = new(text)
    md.block.tokenize(state, 0, state.lineMax)
    first = 2
    got = mdp._tokenize_body(md, state, first, first + len(body), outer + 4)
    alone = new("\n".join(line[mdp._skip_indent(line, 0, outer + 4):] for line in body) + "\n")
    md.block.tokenize(alone, 0, alone.lineMax)
    key = lambda tokens, shift: [(t.type, t.map and [m + shift for m in t.map], t.level,
                                  t.nesting) for t in tokens]
    assert key(got, 0) == key(alone.tokens, first)
