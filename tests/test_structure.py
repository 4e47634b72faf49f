"""The tiled section tree: lead-in paragraphs travel with the block they introduce."""

from __future__ import annotations

from chunkwise.api import Chunker, parse_bytes
from chunkwise.structure import build_tree, walk

from conftest import FIXTURES

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
