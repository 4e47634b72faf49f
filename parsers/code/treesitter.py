"""The building blocks of the tree-sitter walk (`chunkwise.parsers.code.languages`, every language):
sections made from byte spans, a definition's header and its parts, import runs, the scope
and item records of the walk, and comments grouped into runs.

tree-sitter gives byte offsets into the UTF-8 source; sections index the canonical `str`.
`SectionBuilder.add` converts once, through `chunkwise.text.textio.ByteOffsets`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from chunkwise.model import Section
from chunkwise.text.textio import ByteOffsets

if TYPE_CHECKING:
    from tree_sitter import Node


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a list of statements lives: qualified path, enclosing definition kind, depth."""

    path: tuple[str, ...]
    owner: str  # "module", "class" or "function"
    depth: int
    broken: bool = False  # the statements are the children of an ERROR node


@dataclass(slots=True)
class Item:
    """A statement of a block, or a run of comment lines standing apart (`node` is None).

    `start` includes the comment lines (and attributes) directly above a statement; `end`
    includes a comment trailing its last line, so that neither is cut from the code it
    describes."""

    node: Node | None
    start: int
    row: int
    end: int
    end_row: int
    above: list[Node] = field(default_factory=list)  # the attributes attached above


#: section levels of code, a total order: class > function/method > compound statement (and
#: an import block) > simple statement > the parts of a header (decorators, parameters)
LEVEL_CLASS, LEVEL_FUNCTION, LEVEL_COMPOUND, LEVEL_SIMPLE = 40, 30, 20, 10
LEVEL_PART = 5


class SectionBuilder:
    """Collects the sections of one document from byte spans of its UTF-8 source."""

    def __init__(self, text: str, src: bytes) -> None:
        self.text = text
        self.src = src
        self.offsets = ByteOffsets(text)
        self.sections: list[Section] = []

    def add(self, start_byte: int, end_byte: int, level: int, kind: str, *,
            path: tuple[str, ...] = (), context: str = "",
            meta: tuple[tuple[str, Any], ...] = ()) -> None:
        """A section over the bytes [start_byte, end_byte) (none if it is empty)."""
        start, end = self.offsets.to_str(start_byte), self.offsets.to_str(end_byte)
        if start < end:
            self.sections.append(Section(start, end, level, kind, path, context, meta))

    def header(self, start: int, first: int, end: int, decorators: Sequence[Node], name: int,
               params: Sequence[Sequence[int]]) -> None:
        """A definition's header, bytes [first, end), as a `signature` (the core glues it to
        the first statement of the body), the comment lines above it, [start, first), a
        section before it. Its parts, the only places where a header too long for one chunk
        is cut: each decorator or attribute, then (when there are any) the keyword and name
        from `name` to the first parameter, and each parameter ([start, end, …] spans)."""
        if first > start:  # a header too long to share a chunk with them is cut from them
            self.add(start, first, LEVEL_SIMPLE, "comment")
        self.add(first, end, LEVEL_SIMPLE, "signature")
        if decorators:
            for d in decorators:
                self.add(d.start_byte, d.end_byte, LEVEL_PART, "decorator")
            self.add(name, params[0][0] if params else end, LEVEL_PART, "name")
        for a, b, *_ in params:
            self.add(a, b, LEVEL_PART, "parameter")

    def _item(self, item: Item, scope: Scope) -> None:
        """The sections of one statement or definition (each language's builder)."""
        raise NotImplementedError

    def module_items(self, items: list[Item], scope: Scope, imports: frozenset[str],
                     meta: tuple[tuple[str, Any], ...]) -> None:
        """Top-level items in order: a run of imports (comment lines between them allowed)
        is one `imports` section, with its imports as sections below it when it holds
        several; every other item goes to `_item`."""
        i = 0
        while i < len(items):
            j = last = i
            while j < len(items) and (items[j].node is None or items[j].node.type in imports):
                if items[j].node is not None:
                    last = j + 1
                j += 1
            if last == i:
                self._item(items[i], scope)
                i += 1
                continue
            run = items[i:last]
            level = LEVEL_SIMPLE if len(run) == 1 else LEVEL_COMPOUND
            self.add(run[0].start, run[-1].end, level, "imports", meta=meta)
            if len(run) > 1:
                for item in run:
                    self._item(item, scope)
            i = last

    def slice(self, start_byte: int, end_byte: int) -> str:
        return self.src[start_byte:end_byte].decode("utf-8", "surrogatepass")

    def node_text(self, node: Node) -> str:
        return self.slice(node.start_byte, node.end_byte)


def line_runs(nodes: list[Node]) -> list[list[Node]]:
    """Nodes (comments, attributes) grouped into runs on consecutive lines."""
    out: list[list[Node]] = []
    for node in nodes:
        if out and node.start_point.row <= out[-1][-1].end_point.row + 1:
            out[-1].append(node)
        else:
            out.append([node])
    return out
