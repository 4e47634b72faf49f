"""YAML (`.yaml`, `.yml`): mappings and sequences as sections, keys as the section path.

See `chunkwise.parsers.data.tree` (the walk, the fallback to text for files tree-sitter
cannot read) and `chunkwise.parsers.data.json` (the sections). A stream of several documents has
a `document` section each, `document 2` in the path.
"""

from __future__ import annotations

from chunkwise.model import ParsedDocument

from .tree import YAML, parse_tree


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse YAML into document/entry sections."""
    return parse_tree(data, source=source, grammar=YAML)
