"""The tiled section tree: lead-ins travel with the block they introduce, marks with their
neighbour."""

from __future__ import annotations

from chunkwise.chunking.api import Chunker, parse_bytes, parse_file
from chunkwise.chunking.structure import build_tree, walk

from conftest import FIXTURES, corpus_files

CODE = "\n".join(f"    step_{i} = run(stage={i}, retries=3, timeout=30)" for i in range(12))
DOC = f"""# Deploying

{"The service starts from a container image built in CI. " * 4}

{"Each stage of the pipeline checks what the previous one produced. " * 4}

Run the pipeline from cron like this:

```python
{CODE}
```

## Afterwards

The results are stored as follows:

## Storage

Results go to the bucket.
"""


def test_a_lead_in_paragraph_starts_the_block_it_introduces():
    doc = parse_bytes(DOC.encode(), source="d.md")
    lead = DOC.index("Run the pipeline")
    nodes = [n for n, _ in walk(build_tree(doc))]
    (code,) = [n for n in nodes if n.kind == "code"]
    assert code.start <= lead and code.own_start == DOC.index("```python")
    assert not [n for n in nodes if n.kind == "paragraph" and n.start == lead]
    # the code does not fit beside the paragraphs before it: the lead-in goes with the code
    chunks = Chunker(max_tokens=160).chunk_text(DOC, format="markdown", source="d.md")
    (holder,) = [c for c in chunks if c.start <= lead < c.end]
    assert holder.text.startswith("Run the pipeline") and "step_0" in holder.text


def test_a_lead_in_never_joins_a_heading_section():
    doc = parse_bytes(DOC.encode(), source="d.md")
    lead = DOC.index("The results are stored")
    nodes = [n for n, _ in walk(build_tree(doc))]
    assert [n for n in nodes if n.kind == "paragraph" and n.start <= lead < n.end]
    storage = next(n for n in nodes if n.kind == "section" and n.path[-1] == "Storage")
    assert storage.start == DOC.index("## Storage")


def test_lead_ins_on_a_real_document():
    """fastapi__features.md: "You write standard Python with types:" opens the code block
    after it; "**FastAPI** gives you the following:" is followed by a heading and stays a
    paragraph; no leaf paragraph ends with a colon before a non-heading sibling."""
    data = (FIXTURES / "fastapi__features.md").read_bytes()
    doc = parse_bytes(data, source="features.md")
    root = build_tree(doc)
    lead = doc.text.index("You write standard Python with types:")
    (code,) = [n for n, _ in walk(root) if n.start <= lead < n.own_start and not n.children]
    assert code.kind == "code" and doc.text[code.own_start:].startswith("```")
    before_heading = doc.text.index("**FastAPI** gives you the following:")
    assert [n for n, _ in walk(root) if n.kind == "paragraph" and n.start <= before_heading < n.end]
    for node, _ in walk(root):
        for kid, nxt in zip(node.children, node.children[1:]):
            if kid.kind == "paragraph" and not kid.children and nxt.kind != "section":
                assert not doc.text[kid.start:kid.end].rstrip().endswith(":")


def test_only_the_last_sentence_of_a_lead_in_paragraph_moves():
    text = ("# Setup\n\nThe installer needs a recent Python. It checks the version first. "
            "Then, to finish, run it like this:\n\n```\ninstall --all\n```\n")
    doc = parse_bytes(text.encode(), source="s.md")
    nodes = [n for n, _ in walk(build_tree(doc))]
    (code,) = [n for n in nodes if n.kind == "code"]
    assert code.start == text.index("Then, to finish") and code.own_start == text.index("```")
    (para,) = [n for n in nodes if n.kind == "paragraph"]
    assert text[para.start:para.end].strip().endswith("It checks the version first.")


def test_a_lead_in_too_long_for_one_chunk_is_cut_between_words_not_inside_them():
    words = ("configure", "replicate", "authorise", "throttle", "partition", "serialise",
             "checkpoint", "rebalance")
    lead = " ".join(words[i % len(words)] + str(i) for i in range(120)) + " as follows:"
    text = f"# Steps\n\n{lead}\n\n```\nrun --all\n```\n"
    chunks = Chunker(max_tokens=48).chunk_text(text, format="markdown", source="s.md")
    assert [c.text for c in chunks if "run --all" in c.text]
    for c in chunks:
        assert c.tokens <= 48
        assert c.end == len(text.rstrip()) or text[c.end].isspace(), text[c.end - 20:c.end + 5]


def test_a_paragraph_with_no_letter_or_digit_joins_its_neighbour():
    verse = "\n".join(f"Line {i} of the first canto, where the hero sets out." for i in range(30))
    text = f"{verse}\n\n* * *\n\n{verse.replace('first', 'second')}\n\n#\n"
    doc = parse_bytes(text.encode(), source="poem.txt")
    leaves = [n for n, _ in walk(build_tree(doc)) if not n.children]
    assert len(leaves) == 2
    assert leaves[0].end > text.index("* * *") and leaves[1].end == len(text)
    chunks = Chunker(max_tokens=64).chunk_text(text, source="poem.txt")
    assert all(any(ch.isalnum() for ch in c.text) for c in chunks)
    assert "".join(c.text for c in chunks).count("*") == 3  # nothing lost


def test_marks_on_a_real_document():
    """The IRS manual in the shared corpus ends most pages with a lone "#" (110 of them):
    none becomes a chunk of its own."""
    (path,) = [p for p in corpus_files("pdf") if p.name.startswith("irs-irm-2.3.59")]
    doc = parse_file(path)
    assert doc.text.count("\n#\n") > 100
    chunks = Chunker().chunk_document(doc)
    assert sum(c.text.strip() == "#" for c in chunks) == 0
