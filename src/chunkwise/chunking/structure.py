"""From a parser's flat list of sections to a tiled tree.

Parsers list sections in any order; here they become a tree by span containment, and each
node's children are stretched to *tile* it: text a parser left between children (a heading
line, a table's header row) joins the child that follows it, trailing text joins the last
child. So a heading always travels with its content, and the fitter only ever deals with
whole children. `chunkwise sections` prints these tiled spans, so what the fitter respects
is exactly what anyone can check.

A paragraph that ends with a colon ("Run the script from cron like this:") introduces the
block after it, the way a heading does: its last sentence (the lead-in) is attached to the
start of the next sibling (unless that is a heading-led section) and the fitter never cuts
between them. The rest of the paragraph stays a paragraph of its own; a one-sentence
paragraph moves whole. A "sentence" longer than `_MAX_LEAD_IN` characters (a table-like
paragraph with no full stops, a long wrapped sentence) gives way to its last line. A
`label` (a parser's kind for a line that titles the block after it, such as a Markdown
content tab's `=== "Linux"`) is attached the same way, and becomes the block's context, so
the later pieces of a split block still say which tab they are in.

A paragraph with no letter or digit at all ("#", "* * *", "---" in plain text) means
nothing alone: as a chunk of its own it would embed as its context only and match every
query about the document. It joins the sibling before it (the one after it when it is
first).

A `signature` (a parser's kind for a definition's header: decorators, name, parameters, up to
the colon) is glued to the sibling after it, the first statement of the body: that sibling
starts where the signature does, its `own_start` unchanged, so the fitter never cuts inside
or right after a header, and the header travels with the first piece of the body. The
signature's own children (parameters, decorators) are not sections any more: their starts,
then the header's end, are kept in the sibling's `lead_cuts`, the only places where a header
may be cut, and only when it must (where: the parser's `ParsedDocument.headers`, such as
`chunkwise.parsers.code.headers`; the fitter packs what it says). A header glued to a statement
glued to another header (a class's first method) makes a run of headers, each with its cuts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..model import ParsedDocument, Section
from ..text.splitting import MAX_MARK, SENTENCES, is_mark, trim

#: the kinds of a lead-in or a mark
_PARAGRAPH_KINDS = frozenset({"paragraph"})
_LEAD_IN_ENDS = (":", "：")
#: kinds of a line that titles the block after it (a parser's say: Markdown's `=== "Tab"`)
_LABEL_KINDS = frozenset({"label"})
#: the kinds that marks and lead-ins move
_PROSE_KINDS = _PARAGRAPH_KINDS | _LABEL_KINDS
#: kinds of a header glued to the sibling after it (a parser's say: Python's signatures)
_LEAD_KINDS = frozenset({"signature"})
#: what a lead-in never attaches to: a heading starts its own section
_NOT_INTRODUCED = frozenset({"section", "document"})
#: a lead-in longer than this (in characters) is cut back to its last line
_MAX_LEAD_IN = 400


@dataclass(slots=True, eq=False)  # eq=False: nodes are told apart by identity (`id(node)`)
class Node:
    """A section in the tree (mutable while the tree is built, read-only afterwards): the
    span, level, kind, path, context and meta of a `Section` (a stretched span), then what
    the tree adds."""

    start: int
    end: int
    #: where the parser said the section starts (`start` when built); text before it (a
    #: heading) is glued on
    own_start: int = field(init=False)
    level: int
    kind: str
    path: tuple[str, ...]
    context: str = ""
    meta: tuple[tuple[str, Any], ...] = ()
    children: list[Node] = field(default_factory=list, init=False)
    #: the headers glued before the start of its content, in order, each as where it
    #: starts, where it may be cut, then where it ends (see `_attach_leads`)
    lead_cuts: tuple[tuple[int, ...], ...] = field(default=(), init=False)

    def __init__(self, start: int, end: int, level: int, kind: str, path: tuple[str, ...],
                 context: str = "", meta: tuple[tuple[str, Any], ...] = ()) -> None:
        # Written out: the dataclass's own __init__ calls `__post_init__` and a default
        # factory for every node, and a tree has a node per section (hundreds a document).
        self.start, self.end, self.own_start, self.level, self.kind = start, end, start, level, kind
        self.path, self.context, self.meta = path, context, meta
        self.children, self.lead_cuts = [], ()

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Node({self.kind}, {self.start}:{self.end}, {len(self.children)} children)"


def build_tree(doc: ParsedDocument) -> Node:
    """The tiled section tree of a document; the root spans the whole text."""
    n = len(doc.text)
    root_path = (doc.title,) if doc.title else ()
    root = Node(0, n, 1 << 30, "document", root_path)
    # Parents before children: by start, then longest, then highest level (then input order).
    sections = doc.sections
    order = [(s.start, -s.end, -s.level, i) for i, s in enumerate(sections)
             if 0 <= s.start < s.end <= n]
    if len(order) < len(sections):  # spans outside the text: clipped (a parser bug)
        order = [(start, -end, -s.level, i) for i, s in enumerate(sections)
                 for start, end in [_clip(s, n)] if start < end]
    order.sort()
    stack = [root]
    # The nodes with children, each after its own parent (the order nodes get their first
    # child), those with a paragraph or label child (the only ones lead-ins change) and
    # those with a mark child: the steps below visit these, not every node (most are
    # leaves, list items and table rows).
    parents: list[Node] = []
    prose_parents: dict[int, Node] = {}
    mark_parents: dict[int, Node] = {}
    lead_parents: dict[int, Node] = {}
    text = doc.text
    for start, neg_end, _, i in order:
        s, end = sections[i], -neg_end
        while stack[-1].end <= start:  # never pops the root: start < end <= root.end
            stack.pop()
        top = stack[-1]
        if end > top.end:  # partial overlap (a parser bug): keep the tree well-formed
            end = top.end
        if start >= end:
            continue
        kind = s.kind
        node = Node(start, end, s.level, kind, s.path or top.path, s.context, s.meta)
        if not top.children:
            parents.append(top)
        top.children.append(node)
        if kind in _LEAD_KINDS:
            lead_parents[id(top)] = top
        if kind in _PROSE_KINDS:
            prose_parents[id(top)] = top
            # (the length first: most paragraphs are too long to be a mark, and no call)
            if kind in _PARAGRAPH_KINDS and end - start <= MAX_MARK and is_mark(text, start, end):
                mark_parents[id(top)] = top
        stack.append(node)
    if doc.prose:
        # Each step changes only the spans and list of a node's own children, so parents
        # can be taken in any order, and marks go before lead-ins before tiling.
        for node in mark_parents.values():
            node.children = _absorb_marks(node.children, text)
        for node in prose_parents.values():
            node.children = _attach_lead_ins(node.children, text)
    for node in lead_parents.values():
        node.children = _attach_leads(node.children)
    for node in parents:  # top-down: a node is tiled before its children are
        _tile(node)
    return root


def _absorb_marks(kids: list[Node], text: str) -> list[Node]:
    """Siblings `kids` with every leaf paragraph without a letter or digit merged into the
    sibling before it (the one after it when it comes first)."""
    if len(kids) < 2:
        return kids
    kept: list[Node] = []
    for i, kid in enumerate(kids):
        if _is_mark(text, kid):
            if kept:
                kept[-1].end = kid.end
                continue
            if i + 1 < len(kids):  # first: the next sibling starts here
                kids[i + 1].start = kid.start
                continue
        kept.append(kid)
    return kept


def _is_mark(text: str, node: Node) -> bool:
    """A leaf paragraph that is a mark (no letter or digit)."""
    return (node.kind in _PARAGRAPH_KINDS and not node.children
            and is_mark(text, node.start, node.end))


def _attach_lead_ins(kids: list[Node], text: str) -> list[Node]:
    """Siblings `kids` with the lead-in (last sentence) of every leaf paragraph ending with
    a colon moved into the sibling after it (unless that is a heading-led section): the
    sibling then starts where the lead-in does, its `own_start` unchanged, so the lead-in is
    glued to its start like a heading; the paragraph ends before its lead-in, or goes when
    it is all lead-in."""
    if len(kids) < 2:
        return kids
    kept: list[Node] = []
    for kid in reversed(kids):  # back to front: two lead-ins in a row both attach
        nxt = kept[-1] if kept else None
        if nxt is not None and not kid.children and nxt.kind not in _NOT_INTRODUCED:
            if kid.kind in _LABEL_KINDS:  # moves whole, and titles later pieces
                nxt.start = kid.start
                if not nxt.context:
                    nxt.context = " ".join(text[kid.start:kid.end].split())
                continue
            if kid.kind in _PARAGRAPH_KINDS \
                    and _last_char(text, kid.start, kid.end) in _LEAD_IN_ENDS:
                lead = nxt.start = _lead_in_start(text, kid.start, kid.end)
                if lead > kid.start:
                    kid.end = lead
                    kept.append(kid)
                continue
        kept.append(kid)
    kept.reverse()
    return kept


def _attach_leads(kids: list[Node]) -> list[Node]:
    """Siblings `kids` with every signature glued to the sibling after it: that sibling
    starts where the signature does and adds to its `lead_cuts` the signature's start, the
    starts of its children (but one starting with it), then its end (comments may follow it
    before the sibling's own start). A signature with nothing after it stays a section."""
    kept: list[Node] = []
    for kid in reversed(kids):
        nxt = kept[-1] if kept else None
        if nxt is not None and kid.kind in _LEAD_KINDS:
            nxt.start = kid.start
            nxt.lead_cuts = (*kid.lead_cuts,
                             (kid.start, *(c.start for c in kid.children if c.start > kid.start),
                              kid.end))
            continue
        kept.append(kid)
    kept.reverse()
    return kept


def _lead_in_start(text: str, a: int, b: int) -> int:
    """Where the lead-in of the paragraph `text[a:b]` starts: its last sentence, or its
    last line when that sentence is longer than `_MAX_LEAD_IN` characters; `a` when the
    lead-in is the whole paragraph."""
    first, b = trim(text, a, b)
    cuts = SENTENCES(text, a, b)
    start = cuts[-1] if cuts else a
    if b - start > _MAX_LEAD_IN:
        start = max(start, text.rfind("\n", a, b) + 1)
    start, _ = trim(text, start, b)
    return start if start > first else a


def _last_char(text: str, a: int, b: int) -> str:
    """The last non-whitespace character of `text[a:b]` ('' if none), without copying it."""
    while b > a and text[b - 1].isspace():  # (a paragraph ends with a newline or two)
        b -= 1
    return text[b - 1] if b > a else ""


def _clip(s: Section, n: int) -> tuple[int, int]:
    if 0 <= s.start and s.end <= n:  # the usual case: nothing to clip
        return s.start, s.end
    return max(0, min(s.start, n)), max(0, min(s.end, n))


def _tile(node: Node) -> None:
    """Stretch a node's children to cover it exactly."""
    kids = node.children
    kids[0].start = node.start
    if node.lead_cuts:  # the headers glued to the node's start are glued to its first child's
        kids[0].lead_cuts = (*node.lead_cuts, *kids[0].lead_cuts)
    for prev, cur in zip(kids, kids[1:]):
        cur.start = prev.end
    kids[-1].end = node.end


def walk(root: Node) -> Iterator[tuple[Node, int]]:
    """All nodes below the root in document order, with their depth (root children: 1)."""
    todo = [(c, 1) for c in reversed(root.children)]
    while todo:
        node, depth = todo.pop()
        yield node, depth
        todo.extend((c, depth + 1) for c in reversed(node.children))


def chain_of(root: Node, start: int, end: int,
             starts: dict[int, list[int]] | None = None) -> list[Node]:
    """The sections holding [start, end), from the document's root down (`build_tree`'s
    nodes: children sorted by start, not overlapping). `starts` caches each node's
    children's starts between calls (one dict per document)."""
    chain = [root]
    node = root
    while node.children:
        kids = node.children
        if starts is None:
            firsts = [c.start for c in kids]
        else:
            firsts = starts.get(id(node))
            if firsts is None:
                firsts = starts[id(node)] = [c.start for c in kids]
        i = bisect_right(firsts, start) - 1
        if i < 0 or not (kids[i].start <= start and end <= kids[i].end):
            break
        node = kids[i]
        chain.append(node)
    return chain


def parent_of(chain: Sequence[Node], start: int, end: int, text: str) -> Node:
    """The smallest section of `chain` that holds more than the chunk [start, end) (more
    than whitespace around it): the section to return for small-to-big retrieval."""
    for node in reversed(chain):
        # A search, not a slice: the root spans the whole document, and slicing it for
        # every chunk made a long document quadratic (a 25 MB JSON array: 136 s).
        if _NONSPACE.search(text, node.start, start) or _NONSPACE.search(text, end, node.end):
            return node
    return chain[0]


_NONSPACE = re.compile(r"\S")
