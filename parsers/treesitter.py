"""What the tree-sitter parsers (`python`, `code`) share: sections made from byte spans, the
scope and item records of their walks, and comments grouped into runs.

tree-sitter gives byte offsets into the UTF-8 source; sections index the canonical `str`.
`SectionBuilder.add` converts once, through `chunkwise.textio.ByteOffsets`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chunkwise.model import Section
from chunkwise.textio import ByteOffsets

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
