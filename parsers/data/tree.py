"""YAML and TOML from a tree-sitter parse, through one walk driven by a per-grammar table.

The sections are those of `chunkwise.parsers.data.json` (see there): a `document` per YAML
document (a TOML file is one), a `table` per TOML `[table]` or `[[array.element]]`, an
`entry` per key/value pair and per sequence item that is a mapping or sequence; keys
(dotted ones split) make the section path (`servers`, `servers[2]`, `name`). The canonical
text is the decoded file; tree-sitter's byte offsets become `str` indices through
`chunkwise.text.textio.ByteOffsets`.

The grammars are dependencies of chunkwise (`tree-sitter-yaml`, `tree-sitter-toml`). Without
one (an install that lost it), or for a file tree-sitter cannot read (a Helm chart's
`{{ .Values.x }}` templates are not YAML; a templated TOML is not TOML), the file is chunked
as text, by lines, with one warning that says why: a broken configuration file stays
searchable. TOML is first checked with `tomllib` (Python 3.11+), whose reason the warning
gives. Aliases (`*a`) are never expanded: a YAML "billion laughs" file is read in time
linear in its size. The walk is an explicit stack; sections stop at `MAX_DEPTH` levels and
`MAX_SECTIONS` entries; files over `_MAX_TREE` characters, and YAML indented deeper than
`_MAX_INDENT` columns (which crashes tree-sitter-yaml's scanner), are not given to
tree-sitter (chunked by lines, with a warning).
"""

from __future__ import annotations

import importlib
import logging
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from chunkwise.model import ParsedDocument
from chunkwise.text.textio import ByteOffsets, decode

from .json import (LEVEL_DOCUMENT, LEVEL_ENTRY, LEVEL_TABLE, MAX_DEPTH, Builder, file_label,
                   item_label, key_label)

log = logging.getLogger(__name__)

#: a file longer than this (in characters) is chunked by lines, without a syntax tree
_MAX_TREE = 1 << 23
#: a line whose block indentation (spaces, and the `- `/`? ` of compact nested sequences
#: and keys) is longer than this is not given to tree-sitter-yaml: its scanner keeps a
#: stack of indentations that overflows (a segmentation fault) between 200 and 300 levels
_MAX_INDENT = 120
_DEEP_INDENT = re.compile(r"^[ \t?-]{%d}" % (_MAX_INDENT + 1), re.M)
_CONTAINERS = frozenset({"block_mapping", "block_sequence", "flow_mapping", "flow_sequence",
                         "array", "inline_table"})
#: nodes that wrap a value (and, in YAML, its anchor and tag)
_WRAPPERS = frozenset({"block_node", "flow_node"})
_NOT_VALUES = frozenset({"anchor", "tag", "comment"})


@dataclass(frozen=True, slots=True)
class Grammar:
    """What the walk needs to know of a grammar's node types."""

    format: str
    module: str
    """The Python module of the grammar wheel."""
    pairs: frozenset[str]
    """Key/value pairs: the key is the `key` field, else the first named child."""
    sequences: frozenset[str]
    """Nodes whose named children (but comments) are the items of a sequence."""
    tables: frozenset[str] = frozenset()
    """TOML tables (`[a.b]`) and array-of-tables elements (`[[a]]`, in `array_tables`)."""
    array_tables: frozenset[str] = frozenset()
    documents: frozenset[str] = frozenset()
    """YAML documents: one section each when a stream holds several."""
    indented: bool = False
    """Whether the grammar's scanner keeps a stack of indentations (see `_MAX_INDENT`)."""


YAML = Grammar("yaml", "tree_sitter_yaml",
               pairs=frozenset({"block_mapping_pair", "flow_pair"}),
               sequences=frozenset({"block_sequence", "flow_sequence"}),
               documents=frozenset({"document"}), indented=True)
TOML = Grammar("toml", "tree_sitter_toml",
               pairs=frozenset({"pair"}), sequences=frozenset({"array"}),
               tables=frozenset({"table", "table_array_element"}),
               array_tables=frozenset({"table_array_element"}))


@lru_cache(maxsize=None)
def _parser(module: str) -> Any:
    """A tree-sitter parser for the grammar in `module`; None when it is not installed."""
    try:
        grammar = importlib.import_module(module)
        from tree_sitter import Language, Parser
    except ImportError:
        return None
    return Parser(Language(grammar.language()))


def parse_tree(data: bytes, *, source: str, grammar: Grammar,
               invalid: str | None = None) -> ParsedDocument:
    """Parse a YAML or TOML file (see the module docstring). `invalid`: why the file is known
    not to be valid (a `tomllib` error), so it is chunked as text without a parse."""
    text, warnings = decode(data, source)
    name = file_label(source)
    builder = Builder(source, text, name)
    parser = _parser(grammar.module)
    if not text.strip():
        return builder.document(grammar.format, warnings, json_cuts=False)
    why = invalid
    if why is None and parser is None:
        why = (f"the {grammar.format.upper()} grammar is not installed "
               f"(pip install {grammar.module.replace('_', '-')})")
    if why is None and len(text) > _MAX_TREE:
        why = f"longer than {_MAX_TREE} characters"
    if why is None and grammar.indented and _DEEP_INDENT.search(text):
        why = f"indented deeper than {_MAX_INDENT} columns"
    if why is None:
        src = text.encode("utf-8", "surrogatepass")
        root = parser.parse(src).root_node
        if root.has_error:
            why = _first_error(root, src)
        else:
            _Walk(builder, grammar, ByteOffsets(text), src).run(root)
    if why is not None:
        warnings.append(f"{why}: chunked as text, by lines")
        builder.sections.clear()
        builder.add(0, len(text), LEVEL_DOCUMENT, "document", (name,))
    return builder.document(grammar.format, warnings, json_cuts=False)


def _first_error(root: Any, src: bytes) -> str:
    """`not valid <lang> at line L, column C` for the first ERROR or MISSING node."""
    node = root
    while True:
        for child in node.children:
            if child.has_error or child.is_missing:
                node = child
                break
        else:
            break
        if node.type == "ERROR" or node.is_missing:
            break
    row, col = node.start_point
    return f"a syntax error at line {row + 1}, column {col + 1}"


class _Walk:
    """One walk over a tree, adding sections to the builder."""

    def __init__(self, builder: Builder, grammar: Grammar, offsets: ByteOffsets,
                 src: bytes) -> None:
        self.b, self.g, self.to_str, self.src = builder, grammar, offsets.to_str, src
        self.array_counts: dict[tuple[str, ...], int] = {}

    def run(self, root: Any) -> None:
        g, name = self.g, self.b.name
        docs = [c for c in root.named_children if c.type in g.documents]
        many = len(docs) > 1
        # (node, path, label of the node's value in the path, depth)
        todo: list[tuple[Any, tuple[str, ...], str, int]] = []
        if docs:
            for k, doc in enumerate(docs, 1):
                path = (name, f"document {k}") if many else (name,)
                self._add(doc, LEVEL_DOCUMENT, "document", path)
                todo.append((doc, path, "", 0))
        else:
            self._add(root, LEVEL_DOCUMENT, "document", (name,))
            todo.append((root, (name,), "", 0))
        todo.reverse()
        while todo:
            node, path, label, depth = todo.pop()
            todo.extend(reversed(self._children(node, path, label, depth)))

    def _children(self, node: Any, path: tuple[str, ...], label: str, depth: int
                  ) -> list[tuple[Any, tuple[str, ...], str, int]]:
        """Add the sections directly under `node`; return the nodes to walk next."""
        g, out = self.g, []
        t = node.type
        if t in g.sequences:
            items = [c for c in node.named_children if c.type != "comment"]
            for i, item in enumerate(items):
                value = _value(item)
                if value is not None and value.type in _CONTAINERS \
                        and self.b.wants(depth + 1):
                    sub = (*path, item_label(label, i))
                    self._add(item, LEVEL_ENTRY, "entry", sub)
                    out.append((value, sub, sub[-1], depth + 1))
            return out
        for child in node.named_children:
            ct = child.type
            if ct in g.pairs:
                parts = self._key_parts(child)
                if not self.b.wants(depth + 1):
                    continue
                sub = (*path, *parts) if parts else path
                self._add(child, LEVEL_ENTRY, "entry", sub)
                value = child.child_by_field_name("value")
                if value is None and child.named_child_count > 1:
                    value = child.named_children[-1]
                if value is not None:
                    out.append((value, sub, sub[-1] if parts else label, depth + 1))
            elif ct in g.tables:
                parts = self._key_parts(child)
                sub = (*path, *parts)
                if ct in g.array_tables and parts:
                    n = self.array_counts.get(sub, 0)
                    self.array_counts[sub] = n + 1
                    sub = (*sub, item_label(parts[-1], n))
                if self.b.wants(1):
                    self._add(child, LEVEL_TABLE, "table", sub)
                    out.append((child, sub, sub[-1], 1))
            elif ct in _WRAPPERS or ct in _CONTAINERS or ct in g.sequences:
                out.append((child, path, label, depth))
        return out

    def _add(self, node: Any, level: int, kind: str, path: tuple[str, ...]) -> None:
        to_str = self.to_str
        self.b.add(to_str(node.start_byte), to_str(node.end_byte), level, kind, path)

    def _key_parts(self, node: Any) -> tuple[str, ...]:
        """The key of a pair, or the header of a table, as path elements (a dotted key
        split at its dots)."""
        key = node.child_by_field_name("key")
        if key is None:
            key = next((c for c in node.named_children if c.type != "comment"), None)
        if key is None or key.type in _CONTAINERS:
            return ()
        if key.type == "dotted_key":
            parts: list[str] = []
            todo = [key]
            while todo:  # a dotted key nests: ((a . b) . c)
                k = todo.pop()
                if k.type == "dotted_key":
                    todo.extend(reversed(k.named_children))
                else:
                    parts.append(self._key_text(k))
            return tuple(parts)
        return (self._key_text(key),)

    def _key_text(self, key: Any) -> str:
        raw = self.src[key.start_byte:min(key.end_byte, key.start_byte + 1024)]
        text = raw.decode("utf-8", "replace").strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]
        return key_label(text)


def _value(item: Any) -> Any:
    """The value a sequence item holds (through `- `, wrappers, anchors and tags)."""
    node = item
    for _ in range(8):
        if node.type in _CONTAINERS:
            return node
        kids = [c for c in node.named_children if c.type not in _NOT_VALUES]
        if len(kids) != 1 or node.type not in _WRAPPERS | {"block_sequence_item"}:
            return node
        node = kids[0]
    return node
